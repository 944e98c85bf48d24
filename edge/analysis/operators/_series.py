"""Shared series helpers of the series operators (trend, anomaly, periodicity, correlation)."""

from __future__ import annotations

import logging
from typing import Any

from edge.analysis import metrics as M
from edge.analysis.operators.base import Context
from edge.analysis.source import EventFilter

logger = logging.getLogger(__name__)

BUCKET_KEYS = {"hour": "date_hour", "day": "date", "week": "week", "month": "month"}


def series(
    ctx: Context, metric: str, bucket_key: str, flt: EventFilter | None = None
) -> tuple[list[str], dict[str, dict[str, float]], dict[str, dict[int, float]]]:
    """(sorted buckets, components per bucket, footfall per hour per bucket for peak_hour)."""
    comps: dict[str, dict[str, float]] = {}
    hours: dict[str, dict[int, float]] = {}
    if metric == "peak_hour":
        for r in ctx.rows([bucket_key, "hour"], M.components(metric), flt):
            b = r[bucket_key]
            if b is None:
                continue
            M.add(comps.setdefault(str(b), {}), r)
            if r["hour"] is not None:
                hours.setdefault(str(b), {})[int(r["hour"])] = float(r["footfall"])
    else:
        for r in ctx.rows([bucket_key], M.components(metric), flt):
            if r[bucket_key] is not None:
                M.add(comps.setdefault(str(r[bucket_key]), {}), r)
    return sorted(comps), comps, hours


def bucket_value(metric: str, c: dict[str, float], by_hour: dict[int, float] | None) -> float | None:
    """The metric of one bucket."""
    if metric == "peak_hour":
        v = M.peak_hour_of(by_hour or {})
        return float(v) if v is not None else None
    return M.value(metric, c)


def merged(
    metric: str, buckets: list[str], comps: dict[str, dict[str, float]], hours: dict[str, dict[int, float]]
) -> float | None:
    """The metric recomputed from the summed components of several buckets."""
    total: dict[str, float] = {}
    by_hour: dict[int, float] = {}
    for b in buckets:
        M.add(total, comps[b])
        for h, v in hours.get(b, {}).items():
            by_hour[h] = by_hour.get(h, 0.0) + v
    if metric in M.ADDITIVE:
        total_v = M.value(metric, total)
        return total_v / len(buckets) if total_v is not None and buckets else None  # mean per bucket
    return bucket_value(metric, total, by_hour)


def daily_values(ctx: Context, metric: str, flt: EventFilter | None = None) -> dict[str, tuple[float, int]]:
    """date -> (metric value, n) for each store-local day with a defined value."""
    days, comps, hours = series(ctx, metric, "date", flt)
    out: dict[str, tuple[float, int]] = {}
    for d in days:
        v = bucket_value(metric, comps[d], hours.get(d))
        if v is not None:
            out[d] = (v, M.n_of(metric, comps[d]))
    return out


def describe(values: list[Any]) -> str:
    return ", ".join(str(v) for v in values)
