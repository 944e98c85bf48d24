"""Metric definitions (CONTRACT.md section 2) over the EventSource's aggregated components.

Owns, per metric of ``plan.schema.json``: which components it needs, how its value is computed
from component sums of one group or bucket, how many events stand behind it (the ``n`` of the
honesty rules), which event types it is about, and how per-unit samples for significance tests
are fetched (bill totals, daily values, per-event moments). Every aggregation is one grouped
query through :meth:`EventSource.aggregate`; nothing here loops over events.

Called by the operators in :mod:`edge.analysis.operators` and by the tests.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from edge.analysis.source import EventFilter, EventSource, Period, bill_stats_of

logger = logging.getLogger(__name__)

Row = Mapping[str, Any]


def _ratio(num: float, den: float) -> float | None:
    return float(num) / float(den) if den else None


@dataclass(frozen=True)
class Metric:
    """One metric: ``kind`` is additive (sums add up over days), ratio, mean, proportion or peak;
    ``better`` the direction a store wants it to go ("higher", "lower", or "" for none: the dwell
    time, the event count, the peak hour have no best or worst; "the worst staff error rate" is the
    highest)."""

    name: str
    kind: str
    components: tuple[str, ...]
    event_types: tuple[str, ...]
    value: Callable[[Row], float | None]
    evidence: Callable[[Row], int]
    label_en: str
    label_zh: str
    better: str

    def __post_init__(self) -> None:
        if self.better not in ("higher", "lower", ""):
            raise ValueError(
                f"metric {self.name}: better must be 'higher', 'lower' or '', not {self.better!r}"
            )


METRICS: dict[str, Metric] = {
    m.name: m
    for m in (
        Metric("event_count", "additive", ("events",), (), lambda r: float(r["events"]),
               lambda r: int(r["events"]), "event count", "事件数", ""),
        Metric("footfall", "additive", ("footfall", "enter_events"), ("customer_enter",),
               lambda r: float(r["footfall"]), lambda r: int(r["enter_events"]), "footfall", "客流", "higher"),
        Metric("order_count", "additive", ("bills", "purchase_events"), ("purchase",),
               lambda r: float(r["bills"]), lambda r: int(r["purchase_events"]), "order count", "订单数", "higher"),
        Metric("revenue", "additive", ("revenue", "purchase_events"), ("purchase",),
               lambda r: float(r["revenue"] or 0.0), lambda r: int(r["purchase_events"]), "revenue", "销售额", "higher"),
        Metric("avg_order_value", "ratio", ("revenue", "bills", "purchase_events"), ("purchase",),
               lambda r: _ratio(r["revenue"] or 0.0, r["bills"]), lambda r: int(r["bills"]),
               "average order value", "客单价", "higher"),
        Metric("conversion_rate", "ratio", ("bills", "footfall", "enter_events", "purchase_events"),
               ("customer_enter", "purchase"), lambda r: _ratio(r["bills"], r["footfall"]),
               lambda r: min(int(r["enter_events"]), int(r["purchase_events"])), "conversion rate", "转化率", "higher"),
        Metric("dwell_time", "mean", ("dwell_sum", "dwell_sq", "dwell_n"), ("dwell",),
               lambda r: _ratio(r["dwell_sum"], r["dwell_n"]), lambda r: int(r["dwell_n"]),
               "dwell time (s)", "停留时长(秒)", ""),
        Metric("queue_length", "mean", ("queue_sum", "queue_sq", "queue_n"), ("checkout_queue",),
               lambda r: _ratio(r["queue_sum"], r["queue_n"]), lambda r: int(r["queue_n"]),
               "queue length", "排队长度", "lower"),
        Metric("complaint_count", "additive", ("complaints",), ("complaint",),
               lambda r: float(r["complaints"]), lambda r: int(r["complaints"]), "complaints", "投诉数", "lower"),
        Metric("negative_emotion_rate", "proportion", ("negative_n", "emotion_n"), (),
               lambda r: _ratio(r["negative_n"], r["emotion_n"]), lambda r: int(r["emotion_n"]),
               "negative emotion rate", "负面情绪占比", "lower"),
        Metric("staff_error_rate", "proportion", ("staff_error_n", "staff_op_n"),
               ("staff_error", "staff_operation"),
               lambda r: _ratio(r["staff_error_n"], r["staff_error_n"] + r["staff_op_n"]),
               lambda r: int(r["staff_error_n"]) + int(r["staff_op_n"]), "staff error rate", "员工操作失误率", "lower"),
        Metric("peak_hour", "peak", ("footfall", "enter_events"), ("customer_enter",),
               lambda r: None, lambda r: int(r["enter_events"]), "peak hour", "高峰时段", ""),
    )
}  # fmt: skip

#: Additive metrics are compared as the mean per store-local day (CONTRACT section 3, compare).
ADDITIVE = frozenset(name for name, m in METRICS.items() if m.kind == "additive")


#: the mean store-local hour of the events (an entity's visit-time trend); not a plan metric
MEAN_HOUR = Metric(
    "mean_hour",
    "mean",
    ("hour_sum", "events"),
    (),
    lambda r: _ratio(r["hour_sum"], r["events"]),
    lambda r: int(r["events"]),
    "mean visit hour",
    "平均到店时刻",
    "",
)


def get_metric(name: str | None, default: str = "event_count") -> Metric:
    """The metric named ``name`` (``default`` when the plan names none)."""
    if name == "mean_hour":
        return MEAN_HOUR
    return METRICS[name or default]


@dataclass(frozen=True)
class GroupValue:
    """The metric over one group (``key`` = the values of the grouping keys, in order)."""

    key: tuple[Any, ...]
    value: float | None
    n: int
    row: Mapping[str, Any]


def grouped(
    source: EventSource,
    flt: EventFilter,
    metric: Metric,
    keys: Sequence[str],
    periods: Sequence[Period] = (),
    extra_components: Sequence[str] = (),
) -> list[GroupValue]:
    """The metric per group of ``keys`` (one grouped query; ``peak_hour`` adds the hour key)."""
    comps = list(dict.fromkeys([*metric.components, *extra_components]))
    if metric.kind == "peak":
        res = source.aggregate(flt, [*keys, "hour"], comps, periods)
        nk = len(keys)
        best: dict[tuple[Any, ...], tuple[float, int]] = {}
        totals: dict[tuple[Any, ...], dict[str, float]] = {}
        for r in res.rows:
            key = tuple(r[:nk])
            row = dict(zip(res.columns, r, strict=True))
            if row["hour"] is None:
                continue
            tot = totals.setdefault(key, dict.fromkeys(comps, 0.0))
            for c in comps:
                tot[c] += float(row[c] or 0)
            ff = float(row["footfall"] or 0)
            hour = int(row["hour"])
            cur = best.get(key)
            if cur is None or ff > cur[0] or (ff == cur[0] and hour < cur[1]):
                best[key] = (ff, hour)
        return [
            GroupValue(key, float(best[key][1]), metric.evidence(totals[key]), totals[key]) for key in best
        ]
    res = source.aggregate(flt, list(keys), comps, periods)
    out = []
    nk = len(keys)
    for r in res.rows:
        row = dict(zip(res.columns, r, strict=True))
        out.append(GroupValue(tuple(r[:nk]), metric.value(row), metric.evidence(row), row))
    return out


def overall(
    source: EventSource, flt: EventFilter, metric: Metric, periods: Sequence[Period] = ()
) -> GroupValue | None:
    """The metric over every filtered event (``None`` when no event matches)."""
    rows = grouped(source, flt, metric, [], periods)
    return rows[0] if rows else None


def open_dates(source: EventSource, flt: EventFilter, keys: Sequence[str] = ()) -> list[tuple[Any, ...]]:
    """Distinct ``(*keys, date)`` on which the store has any event under ``flt`` (ignoring its type
    filter), so days with none of an additive metric's events count as zero."""
    res = source.aggregate(flt.narrowed(event_types=()), [*keys, "date"], ["events"])
    return sorted({tuple(r[: len(keys) + 1]) for r in res.rows if r[len(keys)] is not None}, key=str)


def daily_values(
    source: EventSource, flt: EventFilter, metric: Metric, keys: Sequence[str] = ()
) -> dict[tuple[Any, ...], GroupValue]:
    """The metric per ``(*keys, date)``; additive metrics get 0 on open days without their events."""
    values = {g.key: g for g in grouped(source, flt, metric, [*keys, "date"]) if g.key[-1] is not None}
    if metric.kind == "additive":
        zero = {c: 0 for c in metric.components}
        for key in open_dates(source, flt, keys):
            if key not in values:
                values[key] = GroupValue(key, 0.0, 0, zero)
    return values


def bill_totals(
    source: EventSource, flt: EventFilter, key: str, periods: Sequence[Period] = ()
) -> dict[Any, list[float]]:
    """Per group of ``key``: every bill's total (the unit samples of ``avg_order_value``)."""
    res = source.aggregate(flt.narrowed(event_types=("purchase",)), [key, "bill"], ["revenue"], periods)
    out: dict[Any, list[float]] = {}
    for g, _bill, revenue in res.rows:
        out.setdefault(g, []).append(float(revenue or 0.0))
    return out


def bill_moments(
    source: EventSource, flt: EventFilter, key: str, periods: Sequence[Period] = ()
) -> dict[Any, tuple[int, float, float]]:
    """Per group of ``key``: ``(bills, sum, sum of squares)`` of the bill totals (the unit samples
    of ``avg_order_value``) from the source's ``bill_stats`` when it declares :data:`~edge.analysis.source.BILL_STATS`
    (the rollup source reads them from its rollup), else from :func:`bill_totals`."""
    stats = bill_stats_of(source)
    if stats is not None:
        return stats.bill_stats(flt, key, periods)
    out: dict[Any, tuple[int, float, float]] = {}
    for g, totals in bill_totals(source, flt, key, periods).items():
        out[g] = (len(totals), float(sum(totals)), float(sum(t * t for t in totals)))
    return out


def mean_std(n: int, total: float, sq: float) -> tuple[float, float]:
    """``(mean, sample std)`` from a count, a sum and a sum of squares (``n >= 2``)."""
    mean = total / n
    var = max(0.0, (sq - total * mean) / (n - 1))
    return mean, math.sqrt(var)


def moments(row: Mapping[str, Any], metric: str) -> tuple[float, float, int] | None:
    """``(mean, sample std, n)`` of ``dwell_time`` / ``queue_length`` from an aggregation row's
    sum / sum of squares / count; None below two values."""
    prefix = "dwell" if metric == "dwell_time" else "queue"
    n = int(row.get(f"{prefix}_n", 0))
    if n < 2:
        return None
    mean, std = mean_std(n, float(row[f"{prefix}_sum"]), float(row[f"{prefix}_sq"]))
    return mean, std, n


def label(metric: Metric | str | None, language: str) -> str:
    """The metric's everyday name in the answer's language (a :class:`Metric` or its name)."""
    m = metric if isinstance(metric, Metric) else get_metric(metric)
    return m.label_zh if language == "zh" else m.label_en


# -- name-keyed helpers (the operators' calling convention: metrics by plan name) -------------

#: metric name -> the event types it is about (empty: every event type).
METRIC_EVENT_TYPES: dict[str, tuple[str, ...]] = {name: m.event_types for name, m in METRICS.items()}


def components(metric: str | None) -> list[str]:
    """The components the metric named ``metric`` needs (``event_count`` when ``None``)."""
    return list(get_metric(metric).components)


def value(metric: str | None, row: Row) -> float | None:
    """The metric's value from one aggregated row (``None`` where undefined, e.g. 0 bills)."""
    return get_metric(metric).value(row)


def n_of(metric: str | None, row: Row) -> int:
    """How many events stand behind the metric in one aggregated row."""
    return get_metric(metric).evidence(row)


def peak_hour_of(by_hour: Mapping[int, float]) -> float | None:
    """The hour with the highest footfall (earliest hour on ties); ``None`` without footfall."""
    best = [(-float(v), int(h)) for h, v in by_hour.items() if v and float(v) > 0]
    return float(min(best)[1]) if best else None


#: Metrics that count events or people over the same span (two of them compare as counts)
COUNTS = frozenset({"event_count", "footfall", "order_count", "complaint_count"})


#: Metrics that are shares of events (tested as proportions, e.g. chi-squared on counts).
PROPORTIONS = frozenset(name for name, m in METRICS.items() if m.kind == "proportion")


def add(total: dict[str, Any], row: Row) -> dict[str, Any]:
    """Add a row's numeric component values into ``total`` (keys are left out; in place)."""
    for k, v in row.items():
        if k in COMPONENT_NAMES and isinstance(v, int | float) and not isinstance(v, bool):
            total[k] = total.get(k, 0) + v
    return total


#: Every component name of the EventSource port that sums across groups.
COMPONENT_NAMES = frozenset(c for m in METRICS.values() for c in m.components) | {
    "events",
    "hour_sum",
    "hour_sq",
    "revenue_sq",
}
