"""``aggregate``: one metric over the filtered events (``value``, ``n``). Registered in the registry."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from edge.analysis import metrics as M
from edge.analysis.honesty import say
from edge.analysis.operators.base import (
    Context,
    EvidenceSpec,
    Operator,
    Outcome,
    fmt,
    insufficient,
    metric_types_filter,
)

logger = logging.getLogger(__name__)


class AggregateOperator(Operator):
    name = "aggregate"
    intent = "aggregate"
    version = "1.0"
    description = "one metric over every event passing the filters (SQL pushdown, no grouping)"
    output_keys = ("value", "n")
    min_evidence = {"events": "1 (counts) / min_events_per_group (ratios and means)"}
    default_params = {"target_metric": "event_count"}
    templates = {
        "zh": "{metric}为 {value}（基于 {n} 条事件）。",
        "en": "{metric} is {value} (from {n} events).",
    }

    def compute(self, ctx: Context) -> Outcome:
        metric = ctx.metric or "event_count"
        if metric == "peak_hour":
            rows = ctx.rows(["hour"], M.components(metric))
            by_hour = {int(r["hour"]): float(r["footfall"]) for r in rows if r["hour"] is not None}
            n = sum(M.n_of(metric, r) for r in rows)
            val: float | None = M.peak_hour_of(by_hour)
        else:
            rows = ctx.rows([], M.components(metric))
            if not rows:
                n, val = 0, None
            else:
                n, val = M.n_of(metric, rows[0]), M.value(metric, rows[0])
        need = 1 if metric in M.ADDITIVE else ctx.config.min_events_per_group
        if n < need or val is None:
            return insufficient(
                [
                    say(
                        ctx.language,
                        f"at least {need} events behind {metric} matching the filters (found {n})",
                        f"至少 {need} 条与{M.label(metric, 'zh')}相关且符合条件的事件（现有 {n} 条）",
                    )
                ]
            )
        result = {"value": round(float(val), 4) if metric != "peak_hour" else int(val), "n": n}
        flt = metric_types_filter(ctx.flt, metric)
        return Outcome(
            status="ok", result=result, n=n, evidence=[EvidenceSpec("matched", flt, 1.0)], evidence_count=n
        )

    def summarize(self, ctx: Context, result: Mapping[str, Any]) -> str:
        metric = ctx.metric or "event_count"
        return self.templates[ctx.language].format(
            metric=M.label(metric, ctx.language), value=fmt(result["value"]), n=result["n"]
        )
