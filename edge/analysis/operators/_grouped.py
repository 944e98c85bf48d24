"""Shared computation of ``breakdown`` and ``top_k``: the metric per group of ``group_by``."""

from __future__ import annotations

import logging
from typing import Any

from edge.analysis import metrics as M
from edge.analysis.honesty import say
from edge.analysis.operators import _words as W
from edge.analysis.operators.base import (
    Context,
    EvidenceSpec,
    Outcome,
    insufficient,
    key_text,
    metric_types_filter,
)

logger = logging.getLogger(__name__)

DEFAULT_DIMENSION = "product_category"


def group_keys(ctx: Context) -> list[str]:
    """The plan's ``group_by`` (each key once, ``period`` left out), else the default dimension."""
    keys = list(
        dict.fromkeys(str(k) for k in ctx.plan.get("group_by") or [DEFAULT_DIMENSION] if k != "period")
    )
    return keys[:3] or [DEFAULT_DIMENSION]


def peak_hour_per_hour(ctx: Context, metric: str, keys: list[str]) -> Outcome | None:
    """The peak hour of each hour is that hour: not an answer (what to ask instead), else None."""
    if metric != "peak_hour" or "hour" not in keys:
        return None
    return insufficient(
        [
            say(
                ctx.language,
                "a grouping other than hour for the peak hour (the peak hour of one hour is that hour); "
                "ask for footfall by hour",
                "按小时以外的维度分组的高峰时段（某一小时的高峰时段就是它自己）；可以改问按小时的客流",
            )
        ]
    )


#: the filter that holds each groupable field that is not a stats key
_FILTER_OF = {
    "hour": "hours",
    "day_of_week": "days_of_week",
    "store_id": "store_id",
    "event_type": "event_type",
}


def pinned_group(ctx: Context, keys: list[str]) -> Outcome | None:
    """Grouping by a field the plan's filters hold to one value: its one part would be all of
    what is left ("the share of revenue from the bakery", filtered to the bakery, is 100%). What to
    ask instead, else None."""
    flt = ctx.plan.get("filters") or {}
    for key in keys:
        held = flt.get(_FILTER_OF[key]) if key in _FILTER_OF else (flt.get("attributes") or {}).get(key)
        if held is None or (isinstance(held, list) and len(held) != 1):
            continue
        value = held[0] if isinstance(held, list) else held
        dim_en, dim_zh = W.dimension_label(key, "en"), W.dimension_label(key, "zh")
        return insufficient(
            [
                say(
                    ctx.language,
                    f"every {dim_en} to split by, not the one the question keeps ({dim_en} = {value}: its "
                    f"share of itself is the whole); ask for the {dim_en}s without keeping one",
                    f"拆分用的全部{dim_zh}，而不是问题限定的那一个（{dim_zh} = {value}，它占自己的全部）；"
                    f"可以不限定{dim_zh}再问",
                )
            ]
        )
    return None


def grouped(ctx: Context, metric: str) -> tuple[list[str], list[dict[str, Any]]]:
    """(keys, parts) with parts ``{key, value, n, _raw}`` for every group with a defined value."""
    keys = group_keys(ctx)
    parts: list[dict[str, Any]] = []
    if metric == "peak_hour":
        rows = ctx.rows([*keys, "hour"], M.components(metric))
        acc: dict[tuple[Any, ...], dict[int, float]] = {}
        ns: dict[tuple[Any, ...], int] = {}
        for r in rows:
            k = tuple(r[x] for x in keys)
            if r["hour"] is not None:
                acc.setdefault(k, {})[int(r["hour"])] = float(r["footfall"])
            ns[k] = ns.get(k, 0) + M.n_of(metric, r)
        for k, by_hour in acc.items():
            v = M.peak_hour_of(by_hour)
            if v is not None and None not in k:
                parts.append({"_raw": k, "value": float(v), "n": ns[k]})
    else:
        for r in ctx.rows(keys, M.components(metric)):
            k = tuple(r[x] for x in keys)
            v = M.value(metric, r)
            n = M.n_of(metric, r)
            if v is None or n == 0 or None in k:
                continue
            parts.append({"_raw": k, "value": float(v), "n": n})
    for p in parts:
        raw = p["_raw"]
        p["key"] = raw[0] if len(raw) == 1 else "|".join(key_text(x) for x in raw)
        p["value"] = round(p["value"], 4)
    parts.sort(key=lambda p: (-p["value"], key_text(p["key"])))
    return keys, parts


def evidence_for(
    ctx: Context, metric: str, keys: list[str], parts: list[dict[str, Any]]
) -> list[EvidenceSpec]:
    """One evidence group per listed part (weights relative to the largest n)."""
    base = metric_types_filter(ctx.flt, metric)
    top_n = max((p["n"] for p in parts), default=1) or 1
    specs = []
    for p in parts:
        eq = tuple((k, (v,)) for k, v in zip(keys, p["_raw"], strict=True))
        specs.append(
            EvidenceSpec(
                role=f"group:{key_text(p['key'])}",
                flt=base.narrowed(key_equals=base.key_equals + eq),
                weight=round(p["n"] / top_n, 4),
            )
        )
    return specs


def public(parts: list[dict[str, Any]], fields: tuple[str, ...]) -> list[dict[str, Any]]:
    """Parts without internal fields."""
    return [{f: p[f] for f in fields} for p in parts]
