"""``co_occurrence``: how often two things happen in the same time window, and the lift.

A side is an event type, an entity, or ``key=value`` on a stats key. Windows are store-local hours
(a day attribute such as ``weather=rain`` holds in every hour of its day); store-local days when
both sides are day attributes or the plan asks for ``window_seconds`` >= 86400. ``lift = P(a and b) / (P(a) P(b))`` over the windows
that hold any event; Fisher's exact test on the 2x2 window table caps the confidence.
Registered in the registry.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from edge.analysis.honesty import say
from edge.analysis.operators import _words as W
from edge.analysis.operators.base import (
    Context,
    EvidenceSpec,
    Operator,
    Outcome,
    fmt,
    insufficient,
    safe_float,
)
from edge.analysis.source import EventFilter

logger = logging.getLogger(__name__)

DAY_ATTRIBUTES = ("weather", "promotion")


def _coerce(v: str) -> str | int | float | bool:
    low = v.lower()
    if low in ("true", "false"):
        return low == "true"
    try:
        return int(v)
    except ValueError:
        pass
    try:
        return float(v)
    except ValueError:
        return v


def side_filter(ctx: Context, side: str) -> tuple[EventFilter, bool]:
    """(filter of the events that are ``side``, whether it is a day attribute)."""
    if "=" in side:
        k, v = side.split("=", 1)
        k = k.strip()
        val: Any = v.strip() if k in DAY_ATTRIBUTES else _coerce(v.strip())
        return ctx.flt.narrowed(attributes=(*ctx.flt.attributes, (k, (val,)))), k in DAY_ATTRIBUTES
    vocab = ctx.source.vocabulary()
    if side in vocab.event_types or not vocab.entities or side not in vocab.entities:
        return ctx.flt.narrowed(event_types=(side,)), False
    return ctx.flt.narrowed(entities=(*ctx.flt.entities, side)), False


class CoOccurrenceOperator(Operator):
    name = "co_occurrence"
    intent = "co_occurrence"
    version = "1.0"
    description = "count windows (store-local hours; days when both sides are day attributes) holding a, b and both; lift"
    output_keys = ("pairs", "window_seconds")
    min_evidence = {"windows": "min_buckets windows, min_events_per_group events of each side"}
    default_params = {"window_seconds": 3600}
    confidence_method = "n/(n+decay_base), n = windows holding both; capped at 0.5 when Fisher p >= 0.05"
    templates = {
        "zh": "{a}与{b}在 {count} 个时间窗口同时出现（占 {support}），提升度 {lift}{sig}。",
        "en": "{a} and {b} occur together in {count} windows (support {support}), lift {lift}{sig}.",
    }

    def compute(self, ctx: Context) -> Outcome:
        pair = ctx.plan.get("pair") or {}
        a, b = str(pair.get("a", "")), str(pair.get("b", ""))
        if not a or not b:
            return insufficient(
                [say(ctx.language, "two things to pair (a and b)", "两个要配对的对象（a 和 b）")]
            )
        fa, day_a = side_filter(ctx, a)
        fb, day_b = side_filter(ctx, b)
        asked = pair.get("window_seconds")
        if asked is not None:
            daily = int(asked) >= 86400
        else:
            # a day attribute (rain) holds in every hour of its day, so hourly windows still measure
            # whether b is likelier under it; only two day attributes need whole days
            daily = day_a and day_b
        key = "date" if daily else "date_hour"
        window = 86400 if daily else 3600
        universe = {r[key] for r in ctx.rows([key], ["events"]) if r[key] is not None}
        wa = {r[key]: int(r["events"]) for r in ctx.rows([key], ["events"], fa) if r[key] is not None}
        wb = {r[key]: int(r["events"]) for r in ctx.rows([key], ["events"], fb) if r[key] is not None}
        na_ev, nb_ev = sum(wa.values()), sum(wb.values())
        need = ctx.config.min_events_per_group
        if len(universe) < ctx.config.min_buckets or na_ev < need or nb_ev < need:
            return insufficient(
                [
                    say(
                        ctx.language,
                        f"at least {ctx.config.min_buckets} windows and {need} events of each side "
                        f"(found {len(universe)} windows, {na_ev} of {a}, {nb_ev} of {b})",
                        f"至少 {ctx.config.min_buckets} 个时间窗口、每一方至少 {need} 条事件"
                        f"（现有 {len(universe)} 个窗口，{a} {na_ev} 条，{b} {nb_ev} 条）",
                    )
                ]
            )
        total = len(universe)
        sa, sb = set(wa) & universe, set(wb) & universe
        both = sa & sb
        pa, pb, pab = len(sa) / total, len(sb) / total, len(both) / total
        lift = pab / (pa * pb) if pa > 0 and pb > 0 else None
        table = [[len(both), len(sa - sb)], [len(sb - sa), total - len(sa | sb)]]
        from scipy import stats  # imported here: only co-occurrence questions pay for scipy.stats

        p = safe_float(stats.fisher_exact(table)[1])
        result = {
            "pairs": [
                {
                    "a": a,
                    "b": b,
                    "count": len(both),
                    "support": round(pab, 4),
                    "lift": None if lift is None else round(lift, 4),
                }
            ],
            "window_seconds": window,
            "p_value": None if p is None else float(f"{p:.6g}"),  # Fisher's exact test on the windows
        }
        picks = sorted(both)[-max(1, ctx.config.evidence_cap // 2) :]
        specs = []
        for w in picks:
            specs.append(
                EvidenceSpec(f"a:{a}@{w}", fa.narrowed(key_equals=(*fa.key_equals, (key, (w,)))), 1.0)
            )
            specs.append(
                EvidenceSpec(f"b:{b}@{w}", fb.narrowed(key_equals=(*fb.key_equals, (key, (w,)))), 1.0)
            )
        return Outcome(
            status="ok",
            result=result,
            n=len(both),
            p_value=p,
            evidence=specs,
            evidence_count=sum(wa[w] + wb[w] for w in both),
        )

    def summarize(self, ctx: Context, result: Mapping[str, Any]) -> str:
        lang = "zh" if ctx.language == "zh" else "en"
        pr = result["pairs"][0]
        lift = pr["lift"]
        if lift is None:
            sig = ""
        elif lift > 1:
            sig = "，同时出现比随机更频繁" if lang == "zh" else ": together more often than by chance"
        else:
            sig = "，并不比随机更频繁" if lang == "zh" else ": not more often than by chance"
        return self.templates[lang].format(
            a=W.side_label(str(pr["a"]), lang),
            b=W.side_label(str(pr["b"]), lang),
            count=pr["count"],
            support=fmt(pr["support"], 3),
            lift=fmt(lift, 3),
            sig=sig,
        )
