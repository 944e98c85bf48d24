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
    fmt_p,
    insufficient,
    metric_types_filter,
)
from edge.analysis.stats_fast import binom_equal_counts

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
        result: dict[str, Any] = {
            "value": round(float(val), 4) if metric != "peak_hour" else int(val),
            "n": n,
        }
        p_value = None
        if metric == "peak_hour":
            # the peak is named only when it stands out of the noise of the runner-up hour
            ranked = sorted(((v, h) for h, v in by_hour.items() if v > 0), reverse=True)
            if len(ranked) >= 2:
                p_value = binom_equal_counts(round(ranked[0][0]), round(ranked[1][0]))
                result["runner_up"] = int(ranked[1][1])
                result["p_value"] = round(p_value, 4)
        flt = metric_types_filter(ctx.flt, metric)
        return Outcome(
            status="ok",
            result=result,
            n=n,
            p_value=p_value,
            evidence=[EvidenceSpec("matched", flt, 1.0)],
            evidence_count=n,
        )

    def summarize(self, ctx: Context, result: Mapping[str, Any]) -> str:
        metric = ctx.metric or "event_count"
        text = self.templates[ctx.language].format(
            metric=M.label(metric, ctx.language), value=fmt(result["value"]), n=result["n"]
        )
        p = result.get("p_value")
        if metric == "peak_hour" and p is not None and p >= 0.05:
            other = result["runner_up"]
            text += say(
                ctx.language,
                f" It is a tie: {other}:00 is within noise of it (p={fmt_p(p)}), so there is no clear peak.",
                f"与 {other} 点的客流相差在随机波动之内（p={fmt_p(p)}），不能确定哪个是高峰。",
            )
        return text
