"""The rollup's query compiler: an :class:`~edge.analysis.source.EventFilter`, grouping keys and
components compiled to SQL over a rollup table (``AS r``), whatever database holds it.

Table-agnostic: it reads only the rollup's own columns (``r.store_id``, ``r.local_date``, ...,
the measures of :mod:`edge.memory.rollup.build`), takes the table names as arguments and keeps the
few dialect-specific spellings in a :class:`Dialect` (SQLite's ``total()`` and ``printf``;
PostgreSQL's ``coalesce(sum(x), 0.0)`` and ``lpad``), so the hub's rollup source can run the
same compiler over PostgreSQL. Used by :mod:`edge.memory.query.rollup_source` on the edge.

Per-store local windows (``EventFilter.wall_clock_zone``): the window and the periods become one
condition per zone of the stores (:func:`edge.memory.query.filters.window_sql` over ``r.store_id``
and ``r.ts_epoch``), so :func:`compile_where` and :func:`key_sql` then take the stores' zones
(``zones``); the check that no row straddles a bound is made per zone, on that zone's stores.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from edge.analysis.source import EventFilter, Period, StoreZones, store_window, zone_groups
from edge.memory.query.filters import (
    Sql,
    _epoch,
    _int,
    _text,
    key_equals,
    key_expr,
    normalise_promotion,
    window_sql,
)

#: the fine table (one row per product category) and the coarse one (summed over categories)
FINE = "rollup_hourly"
COARSE = "rollup_hourly_coarse"


@dataclass(frozen=True)
class Dialect:
    """The spellings that differ between SQL databases."""

    name: str
    #: a float sum that is 0.0 over no rows (or only NULLs), ``{}`` the argument
    total_sql: str
    #: ``YYYY-MM-DDTHH`` from a date text and an hour integer, ``{date}``/``{hour}`` the columns
    date_hour_sql: str

    def total(self, expr: str) -> str:
        return self.total_sql.format(expr)

    def date_hour(self, date: str, hour: str) -> str:
        return self.date_hour_sql.format(date=date, hour=hour)


SQLITE = Dialect("sqlite", "total({})", "({date} || 'T' || printf('%02d', {hour}))")
POSTGRES = Dialect(
    "postgresql", "coalesce(sum({}), 0.0)", "({date} || 'T' || lpad(CAST({hour} AS text), 2, '0'))"
)

#: grouping keys of the port that are a function of the rollup's dimensions -> their SQL
#: (``date_hour`` is the dialect's: see :func:`key_sql`)
_KEY_SQL: dict[str, str] = {
    "store_id": "r.store_id",
    "date": "r.local_date",
    "week": "r.local_week",
    "month": "r.local_month",
    "hour": "r.local_hour",
    "day_of_week": "r.local_weekday",
    "is_weekend": "(r.local_weekday >= 5)",
    "event_type": "r.event_type",
    "weather": "r.weather",
    "promotion": "r.promotion",
    "zone": "r.zone",
    "product_category": "r.product_category",
    "attr:weather": "r.weather",
    "attr:promotion": "r.promotion",
    "attr:zone": "r.zone",
    "attr:product_category": "r.product_category",
}

#: grouping keys of product category: only the fine table has it
CATEGORY_KEYS = ("product_category", "attr:product_category")

#: stats keys an attribute filter may test on the rollup
ATTRIBUTES = ("weather", "promotion", "zone", "product_category")


def _typed(t: str) -> str:
    return f"sum(CASE WHEN r.event_type = '{t}' THEN r.n ELSE 0 END)"


def component_sql(dialect: Dialect = SQLITE) -> dict[str, str]:
    """component -> SQL over a rollup table ``AS r`` (``bills`` is not here: it depends on the
    keys and filter, see :func:`bills_column`)."""
    t = dialect.total
    return {
        "events": "sum(r.n)",
        "footfall": "sum(CASE WHEN r.event_type = 'customer_enter' THEN r.person_sum ELSE 0 END)",
        "enter_events": _typed("customer_enter"),
        "purchase_events": _typed("purchase"),
        "revenue": t("CASE WHEN r.event_type = 'purchase' THEN r.amount_sum END"),
        "revenue_sq": t("CASE WHEN r.event_type = 'purchase' THEN r.amount_sq END"),
        "dwell_sum": t("CASE WHEN r.event_type = 'dwell' THEN r.dwell_sum END"),
        "dwell_sq": t("CASE WHEN r.event_type = 'dwell' THEN r.dwell_sq END"),
        "dwell_n": "sum(CASE WHEN r.event_type = 'dwell' THEN r.dwell_n ELSE 0 END)",
        "queue_sum": t("CASE WHEN r.event_type = 'checkout_queue' THEN r.queue_sum END"),
        "queue_sq": t("CASE WHEN r.event_type = 'checkout_queue' THEN r.queue_sq END"),
        "queue_n": "sum(CASE WHEN r.event_type = 'checkout_queue' THEN r.queue_n ELSE 0 END)",
        "complaints": _typed("complaint"),
        "emotion_n": "sum(r.emotion_n)",
        "negative_n": "sum(r.negative_n)",
        "staff_error_n": _typed("staff_error"),
        "staff_op_n": _typed("staff_operation"),
        "days": "count(DISTINCT r.store_id || '|' || r.local_date)",
        "hour_sum": "sum(r.local_hour * r.n)",
        "hour_sq": "sum(r.local_hour * r.local_hour * r.n)",
        "first_ts": "min(r.first_ts)",
        "last_ts": "max(r.last_ts)",
    }


#: the components in SQLite (what the edge runs)
COMPONENT_SQL: dict[str, str] = component_sql(SQLITE)


@dataclass(frozen=True)
class RollupWhere:
    """A filter compiled over ``rollup_hourly AS r``; ``per_category`` when it pins one product
    category (bill counts then come from ``bills_row``), ``categories`` when it tests several."""

    sql: str
    params: tuple[Any, ...]
    categories: int
    table: str = FINE


def bills_column(keys: Sequence[str], where: RollupWhere) -> str | None:
    """Which bill column sums exactly for these keys and filter (``None``: none does)."""
    by_category = any(k in CATEGORY_KEYS for k in keys)
    if by_category or where.categories == 1:
        return "bills_row"
    if where.categories > 1:
        return None
    return "bills_one"


def key_sql(
    key: str,
    periods: Sequence[Period],
    dialect: Dialect = SQLITE,
    *,
    wall_clock_zone: str | None = None,
    zones: StoreZones | None = None,
) -> Sql | None:
    """A grouping key over the rollup, or ``None`` when the rollup cannot group by it
    (``wall_clock_zone``/``zones``: the periods are per-store local windows)."""
    if key == "period":
        return period_sql(periods, wall_clock_zone=wall_clock_zone, zones=zones) if periods else None
    if key == "date_hour":
        return Sql(dialect.date_hour("r.local_date", "r.local_hour"))
    got = _KEY_SQL.get(key)
    return Sql(got) if got is not None else None


def period_sql(
    periods: Sequence[Period], *, wall_clock_zone: str | None = None, zones: StoreZones | None = None
) -> Sql:
    """The label of the period a rollup row lies in (the filter compiler's, over ``r.ts_epoch``)."""
    k = key_expr("period", periods, alias="r", wall_clock_zone=wall_clock_zone, zones=zones)
    return Sql(k.sql, tuple(k.params))


def compile_where(
    conn: Any,
    flt: EventFilter,
    periods: Sequence[Period],
    st: Any,
    keys: Sequence[str] = (),
    *,
    tables: tuple[str, str] = (FINE, COARSE),
    dialect: Dialect = SQLITE,
    zones: StoreZones | None = None,
) -> RollupWhere | None:
    """``flt`` (and "in one of ``periods``") over the rollup table that serves it and ``keys``
    (``tables`` = (fine, coarse): the coarse one unless product category is involved), or
    ``None`` when not expressible. ``st`` is anything with ``max_span`` (the longest time span of
    one row, seconds: a window bound inside a row cannot be answered); ``conn`` runs that check
    (any DB-API connection whose placeholders are ``?``)."""
    if flt.entities or flt.event_ids is not None:
        return None
    fine = any(k in CATEGORY_KEYS for k in keys)
    fine = fine or any(k == "product_category" for k, _ in flt.attributes)
    fine = fine or any(k in CATEGORY_KEYS for k, _ in flt.key_equals)
    table = tables[0] if fine else tables[1]
    bounds = [t for t in (flt.since, flt.until) if t is not None]
    for p in periods:
        bounds.extend(t for t in (p.since, p.until) if t is not None)
    frame = flt.wall_clock_zone
    if bounds and frame is None and _straddled(conn, table, [_epoch(t) for t in bounds], st.max_span):
        return None
    if bounds and frame is not None:
        if zones is None:
            raise ValueError("internal: a per-store local window needs the stores' time zones")
        for zone, stores, others in zone_groups(zones, flt.store_ids):
            local = [b for t in bounds for b in store_window(t, None, frame, zone) if b is not None]
            scope = Sql(
                f"store_id {'NOT IN' if others else 'IN'} ({', '.join('?' * len(stores))})"
                if stores
                else "1",
                tuple(stores),
            )
            if _straddled(conn, table, [_epoch(t) for t in local], st.max_span, scope):
                return None
    parts: list[str] = []
    params: list[Any] = []
    categories = 0

    def add_in(expr: str, values: Sequence[Any]) -> None:
        parts.append(f"{expr} IN ({', '.join('?' * len(values))})" if values else "0")
        params.extend(values)

    if flt.store_ids:
        add_in("r.store_id", [str(s) for s in flt.store_ids])
    if flt.event_types:
        add_in("r.event_type", [str(t) for t in flt.event_types])
    if frame is not None and (flt.since is not None or flt.until is not None):
        w = window_sql("r", flt.since, flt.until, flt, zones)
        parts.append(w.sql)
        params.extend(w.params)
    else:
        if flt.since is not None:
            parts.append("r.ts_epoch >= ?")
            params.append(_epoch(flt.since))
        if flt.until is not None:
            parts.append("r.ts_epoch < ?")
            params.append(_epoch(flt.until))
    if flt.hours:
        add_in("r.local_hour", [_int(h, "hour", 0, 23) for h in flt.hours])
    if flt.days_of_week:
        add_in("r.local_weekday", [_int(d, "day of week", 0, 6) for d in flt.days_of_week])
    for key, values in flt.attributes:
        if key not in ATTRIBUTES:
            return None
        if key == "product_category":
            categories = max(categories, 1) if len(set(values)) == 1 else 2
        bound = [normalise_promotion(v) if key == "promotion" else _text(v) for v in values]
        add_in(f"r.{key}", bound)
    for key, values in flt.key_equals:
        expr = key_sql(key, periods, dialect, wall_clock_zone=frame, zones=zones)
        if expr is None or key == "period":
            return None
        if key in CATEGORY_KEYS:
            categories = max(categories, 1) if len(set(values)) == 1 and None not in values else 2
        piece = key_equals(key, Sql(expr.sql), tuple(values))
        parts.append(piece.sql)
        params.extend(piece.params)
    if periods:
        window = period_sql(periods, wall_clock_zone=frame, zones=zones)
        parts.append(f"{window.sql} IS NOT NULL")
        params.extend(window.params)
    return RollupWhere(
        " AND ".join(f"({p})" for p in parts) if parts else "1", tuple(params), categories, table
    )


_EVERY_ROW = Sql("1")


def _straddled(
    conn: Any, table: str, bounds: Sequence[float], max_span: float, scope: Sql = _EVERY_ROW
) -> bool:
    """True when some row of ``table`` (within ``scope``, e.g. some stores) holds events on both
    sides of one of ``bounds``."""
    for b in bounds:
        row = conn.execute(
            f"SELECT 1 FROM {table} WHERE ts_epoch < ? AND ts_epoch >= ? AND max_epoch >= ? "
            f"AND ({scope.sql}) LIMIT 1",
            (b, b - max_span - 1.0, b, *scope.params),
        ).fetchone()
        if row is not None:
            return True
    return False
