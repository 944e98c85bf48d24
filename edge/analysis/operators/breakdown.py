"""``breakdown``: the metric split by ``group_by`` with each part's share. Registered in the registry."""

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
from edge.analysis.operators.base import Context, Operator, Outcome, fmt, insufficient, key_text

logger = logging.getLogger(__name__)


class BreakdownOperator(Operator):
    name = "breakdown"
    intent = "breakdown"
    version = "1.0"
    description = "split a metric by one to three dimensions; share = part / total (of n for ratios)"
    output_keys = ("parts", "top_contributor")
    group_keys = None
    min_evidence = {"events": "min_events_per_group in total"}
    default_params = {"group_by": [DEFAULT_DIMENSION], "target_metric": "revenue"}
    confidence_method = "n/(n+decay_base), n = smaller n of the top two parts"
    templates = {
        "zh": "按{dims}拆解{metric}：贡献最大的是 {top}，为 {value}，占 {share}。",
        "en": "{metric} by {dims}: the top contributor is {top} with {value}, {share} of the total.",
    }

    #: a ratio (an average, a rate) has no share of a total: its parts' shares are of the events
    #: behind it, and the summary says so
    ratio_templates = {
        "zh": "按{dims}看{metric}：权重最大的是 {top}，为 {value}（占相关事件的 {share}）。",
        "en": "{metric} by {dims}: the largest part is {top} with {value} ({share} of the events behind it).",
    }

    def compute(self, ctx: Context) -> Outcome:
        metric = ctx.metric or "revenue"
        refused = peak_hour_per_hour(ctx, metric, group_keys(ctx)) or pinned_group(ctx, group_keys(ctx))
        if refused is not None:
            return refused
        keys, parts = grouped(ctx, metric)
        total_n = sum(p["n"] for p in parts)
        if total_n < ctx.config.min_events_per_group or not parts:
            return insufficient(
                [
                    say(
                        ctx.language,
                        f"at least {ctx.config.min_events_per_group} events behind {metric} to split (found {total_n})",
                        f"至少 {ctx.config.min_events_per_group} 条与{M.label(metric, 'zh')}相关的事件才能拆解（现有 {total_n} 条）",
                    )
                ]
            )
        if metric in M.ADDITIVE:
            parts.sort(key=lambda p: (-p["value"], key_text(p["key"])))
            total = sum(p["value"] for p in parts)
            for p in parts:
                p["share"] = round(p["value"] / total, 4) if total else 0.0
        else:
            parts.sort(key=lambda p: (-p["n"] * p["value"], key_text(p["key"])))
            for p in parts:
                p["share"] = round(p["n"] / total_n, 4)
        n = min(p["n"] for p in parts[:2])
        result = {"parts": public(parts, ("key", "value", "n", "share")), "top_contributor": parts[0]["key"]}
        cap = ctx.config.evidence_cap
        return Outcome(
            status="ok",
            result=result,
            n=n,
            evidence=evidence_for(ctx, metric, keys, parts[: max(1, min(len(parts), cap))]),
            evidence_count=total_n,
        )

    def summarize(self, ctx: Context, result: Mapping[str, Any]) -> str:
        metric = ctx.metric or "revenue"
        top = result["parts"][0]
        lang = "zh" if ctx.language == "zh" else "en"
        dims = group_keys(ctx)
        template = self.templates[lang] if metric in M.ADDITIVE else self.ratio_templates[lang]
        return template.format(
            dims=W.dimensions_label(dims, lang),
            metric=M.label(metric, lang),
            top=W.keys_label(dims, top["key"], lang),
            value=fmt(top["value"]),
            share=f"{fmt(top['share'] * 100, 1)}%",
        )
