"""``top_k``: the k groups with the highest metric value. Registered in the registry."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from edge.analysis import metrics as M
from edge.analysis.honesty import say
from edge.analysis.operators import _words as W
from edge.analysis.operators._grouped import (
    DEFAULT_DIMENSION,
    evidence_for,
    group_keys,
    grouped,
    peak_hour_per_hour,
    pinned_group,
    public,
)
from edge.analysis.operators.base import Context, Operator, Outcome, fmt, fmt_p, insufficient
from edge.analysis.stats_fast import binom_equal_counts

logger = logging.getLogger(__name__)


class TopKOperator(Operator):
    name = "top_k"
    intent = "top_k"
    version = "1.0"
    description = (
        "rank groups of one dimension by a metric and keep the first k (ratios need enough events per group)"
    )
    output_keys = ("items",)
    group_keys = None
    min_evidence = {"events_per_group": "min_events_per_group for ratios and means"}
    default_params = {"top_k": 5, "group_by": [DEFAULT_DIMENSION], "target_metric": "order_count"}
    confidence_method = "n/(n+decay_base), n = smallest n among the listed items"
    templates = {
        "zh": "按{metric}排名靠前的{dims}：{items}。",
        "en": "Top {dims} by {metric}: {items}.",
    }

    def compute(self, ctx: Context) -> Outcome:
        metric = ctx.metric or "order_count"
        k = int(ctx.plan.get("top_k") or self.default_params["top_k"])
        refused = peak_hour_per_hour(ctx, metric, group_keys(ctx)) or pinned_group(ctx, group_keys(ctx))
        if refused is not None:
            return refused
        keys, parts = grouped(ctx, metric)
        if metric not in M.ADDITIVE:
            parts = [p for p in parts if p["n"] >= ctx.config.min_events_per_group]
        if not parts:
            return insufficient(
                [
                    say(
                        ctx.language,
                        f"groups with at least {ctx.config.min_events_per_group} events behind {metric}",
                        f"至少有 {ctx.config.min_events_per_group} 条{M.label(metric, 'zh')}相关事件的分组",
                    )
                ]
            )
        items = parts[:k]
        total_n = sum(p["n"] for p in parts)
        result: dict[str, Any] = {"items": public(items, ("key", "value", "n"))}
        p_value = None
        if metric in M.COUNTS and len(parts) >= 2:
            # is the first really first? two counts over one span: the exact binomial test
            p_value = binom_equal_counts(round(parts[0]["value"]), round(parts[1]["value"]))
            result["p_value"] = round(p_value, 4)
            result["runner_up"] = parts[1]["key"]
        return Outcome(
            status="ok",
            result=result,
            n=min(p["n"] for p in items),
            # a ranking asked for its first: not significant when the first is within noise
            p_value=p_value if int(ctx.plan.get("top_k") or 1) == 1 else None,
            evidence=evidence_for(ctx, metric, keys, items),
            evidence_count=total_n,
        )

    def summarize(self, ctx: Context, result: Mapping[str, Any]) -> str:
        metric = ctx.metric or "order_count"
        lang = "zh" if ctx.language == "zh" else "en"
        items = result["items"]
        dims = group_keys(ctx)
        if lang == "zh":
            text = "，".join(f"{W.keys_label(dims, i['key'], lang)}（{fmt(i['value'])}）" for i in items)
        else:
            text = ", ".join(f"{W.keys_label(dims, i['key'], lang)} ({fmt(i['value'])})" for i in items)
        out = self.templates[lang].format(
            dims=W.dimensions_label(dims, lang), metric=M.label(metric, lang), items=text
        )
        p = result.get("p_value")
        if p is not None and p >= 0.05 and items and "runner_up" in result:
            first = W.keys_label(dims, items[0]["key"], lang)
            second = W.keys_label(dims, result["runner_up"], lang)
            out += say(
                lang,
                f" {first} and {second} are within noise of each other (p={fmt_p(p)}): a tie, no clear first.",
                f"{first}与{second}相差在随机波动之内（p={fmt_p(p)}），并列，没有明确的第一。",
            )
        return out
