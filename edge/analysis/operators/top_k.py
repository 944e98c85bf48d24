"""``top_k``: the k groups with the highest metric value. Registered in the registry."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from edge.analysis import metrics as M
from edge.analysis.honesty import say
from edge.analysis.operators import _words as W
from edge.analysis.operators._grouped import evidence_for, grouped, public
from edge.analysis.operators.base import Context, Operator, Outcome, fmt, insufficient

logger = logging.getLogger(__name__)


class TopKOperator(Operator):
    name = "top_k"
    intent = "top_k"
    version = "1.0"
    description = (
        "rank groups of one dimension by a metric and keep the first k (ratios need enough events per group)"
    )
    output_keys = ("items",)
    min_evidence = {"events_per_group": "min_events_per_group for ratios and means"}
    default_params = {"top_k": 5, "group_by": ["product_id"], "target_metric": "order_count"}
    confidence_method = "n/(n+decay_base), n = smallest n among the listed items"
    templates = {
        "zh": "按{metric}排名靠前的{dims}：{items}。",
        "en": "Top {dims} by {metric}: {items}.",
    }

    def compute(self, ctx: Context) -> Outcome:
        metric = ctx.metric or "order_count"
        k = int(ctx.plan.get("top_k") or self.default_params["top_k"])
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
        return Outcome(
            status="ok",
            result={"items": public(items, ("key", "value", "n"))},
            n=min(p["n"] for p in items),
            evidence=evidence_for(ctx, metric, keys, items),
            evidence_count=total_n,
        )

    def summarize(self, ctx: Context, result: Mapping[str, Any]) -> str:
        metric = ctx.metric or "order_count"
        lang = "zh" if ctx.language == "zh" else "en"
        items = result["items"]
        dims = [str(d) for d in ctx.plan.get("group_by") or [] if d != "period"][:3] or ["product_category"]
        if lang == "zh":
            text = "，".join(f"{W.keys_label(dims, i['key'], lang)}（{fmt(i['value'])}）" for i in items)
        else:
            text = ", ".join(f"{W.keys_label(dims, i['key'], lang)} ({fmt(i['value'])})" for i in items)
        return self.templates[lang].format(
            dims=W.dimensions_label(dims, lang), metric=M.label(metric, lang), items=text
        )
