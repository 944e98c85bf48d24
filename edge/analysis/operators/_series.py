"""Shared series helpers of the series operators (trend, anomaly, periodicity, correlation)."""

from __future__ import annotations

import logging
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from edge.analysis import metrics as M
from edge.analysis.honesty import zone_of
from edge.analysis.operators.base import Context, metric_types_filter
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


def _local_midnight(d: date, zone: ZoneInfo) -> datetime:
    return datetime(d.year, d.month, d.day, tzinfo=zone).astimezone(UTC)


def full_window(ctx: Context, metric: str | None) -> tuple[datetime, datetime] | None:
    """The UTC window a bucket must lie in to be whole: the asked range, cut to the whole
    store-local days the memory holds for ``metric`` and to ``now`` (today is not over yet).
    None when the memory holds nothing for it."""
    cov = ctx.source.coverage(metric_types_filter(ctx.flt, None if metric == "mean_hour" else metric))
    if cov.earliest is None:
        return None
    zone = zone_of(ctx.timezone)
    lo = _local_midnight(cov.earliest.astimezone(zone).date(), zone)
    hi = _local_midnight((cov.latest or cov.earliest).astimezone(zone).date() + timedelta(days=1), zone)
    now = ctx.now if ctx.now.tzinfo is not None else ctx.now.replace(tzinfo=zone)
    hi = min(hi, now.astimezone(UTC))
    if ctx.flt.since is not None:
        lo = max(lo, ctx.flt.since)
    if ctx.flt.until is not None:
        hi = min(hi, ctx.flt.until)
    return lo, hi


def bucket_span(bucket_key: str, bucket: str, tz: str) -> tuple[datetime, datetime] | None:
    """The UTC span of one store-local bucket (``date``, ``week``, ``month`` or ``date_hour``)."""
    zone = zone_of(tz)
    try:
        if bucket_key == "date_hour":
            start = datetime.strptime(bucket, "%Y-%m-%dT%H").replace(tzinfo=zone)
            return start.astimezone(UTC), (start + timedelta(hours=1)).astimezone(UTC)
        if bucket_key == "month":
            first = datetime.strptime(bucket, "%Y-%m").date()
            nxt = date(first.year + (first.month == 12), first.month % 12 + 1, 1)
            return _local_midnight(first, zone), _local_midnight(nxt, zone)
        day = date.fromisoformat(bucket)
    except (ValueError, OverflowError):
        return None
    length = 7 if bucket_key == "week" else 1
    return _local_midnight(day, zone), _local_midnight(day + timedelta(days=length), zone)


def partial_buckets(ctx: Context, metric: str | None, bucket_key: str, buckets: list[str]) -> set[str]:
    """The buckets cut short by the asked range, by the memory's first or last day, or by ``now``
    (a week that starts before the data does, today's unfinished day): they hold fewer days than a
    whole bucket, so a series must not compare them as if they were full."""
    window = full_window(ctx, metric)
    if window is None:
        return set(buckets)
    lo, hi = window
    out: set[str] = set()
    for b in buckets:
        span = bucket_span(bucket_key, b, ctx.timezone)
        if span is None or span[0] < lo or span[1] > hi:
            out.add(b)
    return out


def whole_days(ctx: Context, metric: str | None, by_day: dict[str, Any]) -> dict[str, Any]:
    """``by_day`` without the days after the last whole one (today's unfinished day, a day the
    asked range or the memory's end cuts short): a day that is not over is no anomaly."""
    window = full_window(ctx, metric)
    if window is None:
        return by_day
    hi = window[1]
    out = {}
    for d, v in by_day.items():
        span = bucket_span("date", d, ctx.timezone)
        if span is not None and span[1] <= hi:
            out[d] = v
    return out
