"""The hourly rollup: the events pre-aggregated per store-local hour, so ``adamm ask`` reads
thousands of rollup rows instead of millions of events.

Owns the tables of migration ``0005_hourly_rollup`` (``rollup_hourly``, ``rollup_split_bills``,
``rollup_state``), their maintenance (:func:`refresh`) and the compiler from an
:class:`~edge.analysis.source.EventFilter` and grouping keys to SQL over ``rollup_hourly``
(:func:`plan_query`). Called by :mod:`edge.memory.source_sql`, which answers aggregations,
coverage, bill statistics and evidence from the rollup when the question is expressible on it
and falls back to its event-level SQL otherwise (the answers are the same either way).

Layout: one row per (store, local date, local hour, event type, effective weather, effective
promotion, zone, product category) holding the count, the min/max time, the min/max event rowid
(representative evidence) and the sums / sums of squares / counts of the well-known metrics.
Weather and promotion are stored as the day attributes :mod:`edge.memory.filters` defines (an
event without its own value takes its day's), computed by that module's own SQL.

Bills: a bill whose purchase lines fall into more than one row *other than by product category*
(e.g. lines either side of an hour boundary; decided on the raw weather/promotion values, which
may list a few more) is "split"; split bills are listed in
``rollup_split_bills``, left out of the rollup's bill columns and counted from the events at
query time (through the ``events_bill`` index), so distinct-bill counts stay exact.
``bills_row`` counts a row's other bills (exact per product category); ``bills_one`` counts each
of them once, in the row of its first line (exact when rows of several categories are summed);
``bill_sq_one`` is the squared bill total of those same bills (order-value variance).

``rollup_hourly_coarse`` holds the same rows summed over product categories (about a sixth as
many rows on a supermarket's data); questions that neither group nor filter by product category
read it.

Freshness: ``rollup_state.high_water`` is the largest ``events.id`` aggregated. New events are
folded in lazily (:func:`refresh`, at ask time): only the store-local days they touch (and the
days of bills they extend) are re-aggregated. Triggers set ``stale`` on any DELETE or UPDATE of an
aggregated column of ``events`` (``adamm import --replace``), which makes the next refresh a full
rebuild.

Time windows: a row's ``ts_epoch`` is its earliest event's. A window bound that falls strictly
inside some row's time span cannot be answered from the rollup (:func:`plan_query` returns
``None``); boundaries on the hour, which is what plans resolve to, always can.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from edge.analysis.source import EventFilter, Period
from edge.errors import StoreError
from edge.memory.filters import (
    QueryBuilder,
    Sql,
    _epoch,
    _int,
    _text,
    key_equals,
    key_expr,
    normalise_promotion,
)

logger = logging.getLogger(__name__)

#: an event whose speech emotion counts as negative (the ``negative_share`` component)
NEGATIVE_EMOTION = "lower(e.speech_emotion) IN ('negative', 'angry')"

TABLE = "rollup_hourly"
#: the same rows summed over product categories (a sixth of the rows): every question that neither
#: groups nor filters by product category reads this one
COARSE = "rollup_hourly_coarse"

#: the rollup's grouping columns, in key order (names as in ``events``)
DIMENSIONS: tuple[str, ...] = (
    "store_id",
    "local_date",
    "local_hour",
    "local_weekday",
    "local_week",
    "local_month",
    "event_type",
    "weather",
    "promotion",
    "zone",
    "product_category",
)

#: the rollup's measure columns
MEASURES: tuple[str, ...] = (
    "n",
    "ts_epoch",
    "max_epoch",
    "first_ts",
    "last_ts",
    "first_id",
    "last_id",
    "person_sum",
    "amount_sum",
    "amount_sq",
    "dwell_sum",
    "dwell_sq",
    "dwell_n",
    "queue_sum",
    "queue_sq",
    "queue_n",
    "emotion_n",
    "negative_n",
    "bills_row",
    "bills_one",
    "bill_sq_one",
)

#: a refresh that would re-aggregate more days than this share of the rollup rebuilds it whole
_FULL_REBUILD_SHARE = 0.5


@dataclass(frozen=True)
class State:
    """``rollup_state``: the largest aggregated event rowid, the stale flag, the longest time span
    of one row (seconds) and the number of split bills."""

    high_water: int
    stale: bool
    max_span: float
    split_bills: int


def state(conn: Any) -> State | None:
    """The rollup's state (``None`` when the memory predates migration ``0005_hourly_rollup``)."""
    try:
        row = conn.execute(
            "SELECT high_water, stale, max_span, split_bills FROM rollup_state WHERE id = 1"
        ).fetchone()
    except Exception as exc:  # apsw.SQLError: no such table (an old memory opened read-only)
        if "no such table" in str(exc):
            return None
        raise
    if row is None:
        return None
    return State(int(row[0]), bool(row[1]), float(row[2]), int(row[3]))


def is_fresh(conn: Any, st: State | None = None) -> bool:
    """True when the rollup (whose state ``st`` the caller may already have read) holds every
    event (nothing to refresh)."""
    st = state(conn) if st is None else st
    if st is None or st.stale:
        return False
    (top,) = conn.execute("SELECT coalesce(max(id), 0) FROM events").fetchone() or (0,)
    return int(top) == st.high_water


# -- maintenance ---------------------------------------------------------------------------------


def refresh(conn: Any) -> str:
    """Bring the rollup up to date on a writable connection: ``"fresh"``, ``"incremental"`` or
    ``"rebuilt"``. Runs in one transaction."""
    started = time.perf_counter()
    with conn:
        st = state(conn)
        if st is None:
            raise StoreError(
                "the memory has no rollup tables",
                hint="open it writable once so migration 0005_hourly_rollup applies",
            )
        (top,) = conn.execute("SELECT coalesce(max(id), 0) FROM events").fetchone() or (0,)
        top = int(top)
        if not st.stale and top == st.high_water:
            return "fresh"
        how = "rebuilt"
        if not st.stale and top > st.high_water:
            days = _touched_days(conn, st.high_water)
            (total_days,) = conn.execute(
                f"SELECT count(*) FROM (SELECT DISTINCT store_id, local_date FROM {COARSE})"
            ).fetchone() or (0,)
            if len(days) <= max(1, int(total_days) * _FULL_REBUILD_SHARE):
                _rebuild_days(conn, days)
                how = "incremental"
            else:
                _rebuild_all(conn)
        else:
            _rebuild_all(conn)
        (span,) = conn.execute(f"SELECT coalesce(max(max_epoch - ts_epoch), 0) FROM {COARSE}").fetchone() or (
            0,
        )
        (splits,) = conn.execute("SELECT count(*) FROM rollup_split_bills").fetchone() or (0,)
        conn.execute(
            "UPDATE rollup_state SET high_water = ?, stale = 0, max_span = ?, split_bills = ? WHERE id = 1",
            (top, float(span), int(splits)),
        )
    logger.info("rollup %s up to event %s in %.3f s", how, top, time.perf_counter() - started)
    return how


def _touched_days(conn: Any, high_water: int) -> list[tuple[str, str]]:
    """(store, local date) of the events after ``high_water`` and of every line of the bills they
    add to (a bill that becomes split changes the bill columns of its other days)."""
    rows = conn.execute(
        "SELECT DISTINCT store_id, local_date FROM events WHERE id > ? "
        "UNION SELECT DISTINCT o.store_id, o.local_date FROM (SELECT DISTINCT bill_id FROM events "
        "WHERE id > ? AND event_type = 'purchase' AND bill_id IS NOT NULL) AS nb "
        "CROSS JOIN events AS o INDEXED BY events_bill ON o.bill_id = nb.bill_id AND o.bill_id IS NOT NULL "
        "WHERE o.event_type = 'purchase'",
        (high_water, high_water),
    ).fetchall()
    return sorted((str(s), str(d)) for s, d in rows)


def _rebuild_all(conn: Any) -> None:
    conn.execute(f"DELETE FROM {TABLE}")
    conn.execute(f"DELETE FROM {COARSE}")
    conn.execute("DELETE FROM rollup_split_bills")
    _insert_split_bills(conn, EventFilter())
    _insert_rows(conn, EventFilter())
    _insert_coarse(conn, _ALL)


def _rebuild_days(conn: Any, days: Sequence[tuple[str, str]]) -> None:
    by_store: dict[str, list[str]] = {}
    for s, d in days:
        by_store.setdefault(s, []).append(d)
    for store, dates in by_store.items():
        scope = Sql(
            "store_id = ? AND local_date IN (SELECT value FROM json_each(?))", (store, json.dumps(dates))
        )
        for table in (TABLE, COARSE):
            conn.execute(f"DELETE FROM {table} WHERE {scope.sql}", scope.params)
        flt = _days_filter(store, dates)
        # bills of these days: their split status is decided again over all their lines
        conn.execute(
            "DELETE FROM rollup_split_bills WHERE bill_id IN (SELECT bill_id FROM events "
            f"WHERE {scope.sql} AND bill_id IS NOT NULL)",
            scope.params,
        )
        _insert_split_bills(conn, flt)
        _insert_rows(conn, flt, scope)
        _insert_coarse(conn, scope)


def _days_filter(store: str, dates: Sequence[str]) -> EventFilter:
    """The events of some local days of one store (the time bounds only narrow the day CTEs)."""
    lo = datetime.fromisoformat(min(dates)).replace(tzinfo=UTC) - timedelta(days=2)
    hi = datetime.fromisoformat(max(dates)).replace(tzinfo=UTC) + timedelta(days=3)
    return EventFilter(store_ids=(store,), since=lo, until=hi, key_equals=(("date", tuple(dates)),))


#: a bill is split when its lines differ in any of these (raw values: equal raw values give equal
#: day attributes, so this finds every bill whose lines fall into different coarse rows, and
#: perhaps a few more, which are merely counted from the events)
_SPLIT_WHEN = " OR ".join(
    [f"min(e.{c}) <> max(e.{c})" for c in ("store_id", "local_date", "local_hour")]
    + [
        f"min(e.{c}) IS NOT max(e.{c}) OR count(e.{c}) NOT IN (0, count(*))"
        for c in ("weather", "promotion", "zone")
    ]
)


def _insert_split_bills(conn: Any, flt: EventFilter) -> None:
    """Bills among ``flt``'s purchase events whose lines (all of them) span several coarse rows."""
    if flt == EventFilter():
        conn.execute(
            "INSERT OR IGNORE INTO rollup_split_bills(bill_id) SELECT e.bill_id FROM events AS e "
            f"WHERE e.event_type = 'purchase' AND e.bill_id IS NOT NULL GROUP BY e.bill_id HAVING {_SPLIT_WHEN}"
        )
        return
    # ``flt`` is a store/days scope (no day-attribute CTEs): its bills, then all their lines
    sub = QueryBuilder(flt, alias="s").build(
        [Sql("DISTINCT s.bill_id")], extra_where=[Sql("s.event_type = 'purchase' AND s.bill_id IS NOT NULL")]
    )
    if sub.sql.startswith("WITH"):
        raise StoreError("internal: a rollup day scope must not need CTEs")
    conn.execute(
        f"INSERT OR IGNORE INTO rollup_split_bills(bill_id) SELECT e.bill_id FROM ({sub.sql}) AS nb "
        "CROSS JOIN events AS e INDEXED BY events_bill ON e.bill_id = nb.bill_id AND e.bill_id IS NOT NULL "
        f"WHERE e.event_type = 'purchase' GROUP BY e.bill_id HAVING {_SPLIT_WHEN}",
        sub.params,
    )


_ALL = Sql("1")


def _insert_rows(conn: Any, flt: EventFilter, scope: Sql = _ALL) -> None:
    """Aggregate ``flt``'s events into rows; ``scope`` (over ``events`` unaliased) is the same set
    of days, narrowing the bill anchors."""
    qb = QueryBuilder(flt, alias="e")
    weather = qb.key("weather")
    promotion = qb.key("promotion")
    purchase = "e.event_type = 'purchase'"
    split = "e.bill_id IN (SELECT bill_id FROM rollup_split_bills)"
    select = [
        Sql("e.store_id"),
        Sql("e.local_date"),
        Sql("e.local_hour"),
        Sql("e.local_weekday"),
        Sql("e.local_week"),
        Sql("e.local_month"),
        Sql("e.event_type"),
        weather,
        promotion,
        Sql("e.zone"),
        Sql("e.product_category"),
        Sql("count(*)"),
        Sql("min(e.ts_epoch)"),
        Sql("max(e.ts_epoch)"),
        Sql("min(e.ts)"),
        Sql("max(e.ts)"),
        Sql("min(e.id)"),
        Sql("max(e.id)"),
        Sql("sum(coalesce(e.person_count, 1))"),
        Sql("total(e.order_amount)"),
        Sql("total(e.order_amount * e.order_amount)"),
        Sql("total(e.dwell_seconds)"),
        Sql("total(e.dwell_seconds * e.dwell_seconds)"),
        Sql("count(e.dwell_seconds)"),
        Sql("total(e.queue_length)"),
        Sql("total(e.queue_length * e.queue_length)"),
        Sql("count(e.queue_length)"),
        Sql("count(e.speech_emotion)"),
        Sql(f"sum(CASE WHEN {NEGATIVE_EMOTION} THEN 1 ELSE 0 END)"),
        Sql(
            f"count(DISTINCT CASE WHEN {purchase} AND NOT {split} THEN e.bill_id END)"
            f" + sum({purchase} AND e.bill_id IS NULL)"
        ),
        Sql(f"sum({purchase} AND (e.bill_id IS NULL OR a.t IS NOT NULL))"),
        Sql(
            f"total(CASE WHEN {purchase} AND e.bill_id IS NULL THEN e.order_amount * e.order_amount "
            "WHEN a.t IS NOT NULL THEN a.t * a.t END)"
        ),
    ]
    stmt = qb.build(
        select,
        tail=f"GROUP BY {', '.join(str(i + 1) for i in range(len(DIMENSIONS)))}",
        from_sql="events AS e LEFT JOIN temp._rollup_anchor AS a ON a.id = e.id",
    )
    # the anchor (first line) and total of every non-split bill, joined onto its first line
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS _rollup_anchor(id INTEGER PRIMARY KEY, t REAL NOT NULL)")
    conn.execute(
        "INSERT INTO temp._rollup_anchor(id, t) SELECT min(id), total(order_amount) FROM events "
        "WHERE event_type = 'purchase' AND bill_id IS NOT NULL "
        f"AND bill_id NOT IN (SELECT bill_id FROM rollup_split_bills) AND ({scope.sql}) GROUP BY bill_id",
        scope.params,
    )
    cols = ", ".join((*DIMENSIONS, *MEASURES))
    conn.execute(f"INSERT INTO {TABLE}({cols}) {stmt.sql}", stmt.params)
    conn.execute("DELETE FROM temp._rollup_anchor")  # empty for the next call


def _insert_coarse(conn: Any, scope: Sql) -> None:
    """The coarse rows of ``scope``'s days, summed from the fine ones (a non-split bill lies in
    one coarse row, so its ``bills_one`` is also the coarse row's distinct count)."""
    dims = ", ".join(d for d in DIMENSIONS if d != "product_category")
    sums = (
        "sum(n), min(ts_epoch), max(max_epoch), min(first_ts), max(last_ts), min(first_id), max(last_id), "
        "sum(person_sum), total(amount_sum), total(amount_sq), total(dwell_sum), total(dwell_sq), sum(dwell_n), "
        "total(queue_sum), total(queue_sq), sum(queue_n), sum(emotion_n), sum(negative_n), sum(bills_one), "
        "sum(bills_one), total(bill_sq_one)"
    )
    cols = ", ".join((*DIMENSIONS, *MEASURES))
    conn.execute(
        f"INSERT INTO {COARSE}({cols}) SELECT {dims}, NULL, {sums} FROM {TABLE} WHERE {scope.sql} GROUP BY {dims}",
        scope.params,
    )


# -- queries -------------------------------------------------------------------------------------

#: grouping keys of the port that are a function of the rollup's dimensions -> their SQL
_KEY_SQL: dict[str, str] = {
    "store_id": "r.store_id",
    "date": "r.local_date",
    "week": "r.local_week",
    "month": "r.local_month",
    "hour": "r.local_hour",
    "day_of_week": "r.local_weekday",
    "is_weekend": "(r.local_weekday >= 5)",
    "date_hour": "(r.local_date || 'T' || printf('%02d', r.local_hour))",
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
_ATTRIBUTES = ("weather", "promotion", "zone", "product_category")

#: component -> SQL over ``rollup_hourly AS r`` (bills are added by :func:`plan_query`)
COMPONENT_SQL: dict[str, str] = {
    "events": "sum(r.n)",
    "footfall": "sum(CASE WHEN r.event_type = 'customer_enter' THEN r.person_sum ELSE 0 END)",
    "enter_events": "sum(CASE WHEN r.event_type = 'customer_enter' THEN r.n ELSE 0 END)",
    "purchase_events": "sum(CASE WHEN r.event_type = 'purchase' THEN r.n ELSE 0 END)",
    "revenue": "total(CASE WHEN r.event_type = 'purchase' THEN r.amount_sum END)",
    "revenue_sq": "total(CASE WHEN r.event_type = 'purchase' THEN r.amount_sq END)",
    "dwell_sum": "total(CASE WHEN r.event_type = 'dwell' THEN r.dwell_sum END)",
    "dwell_sq": "total(CASE WHEN r.event_type = 'dwell' THEN r.dwell_sq END)",
    "dwell_n": "sum(CASE WHEN r.event_type = 'dwell' THEN r.dwell_n ELSE 0 END)",
    "queue_sum": "total(CASE WHEN r.event_type = 'checkout_queue' THEN r.queue_sum END)",
    "queue_sq": "total(CASE WHEN r.event_type = 'checkout_queue' THEN r.queue_sq END)",
    "queue_n": "sum(CASE WHEN r.event_type = 'checkout_queue' THEN r.queue_n ELSE 0 END)",
    "complaints": "sum(CASE WHEN r.event_type = 'complaint' THEN r.n ELSE 0 END)",
    "emotion_n": "sum(r.emotion_n)",
    "negative_n": "sum(r.negative_n)",
    "staff_error_n": "sum(CASE WHEN r.event_type = 'staff_error' THEN r.n ELSE 0 END)",
    "staff_op_n": "sum(CASE WHEN r.event_type = 'staff_operation' THEN r.n ELSE 0 END)",
    "days": "count(DISTINCT r.store_id || '|' || r.local_date)",
    "hour_sum": "sum(r.local_hour * r.n)",
    "hour_sq": "sum(r.local_hour * r.local_hour * r.n)",
    "first_ts": "min(r.first_ts)",
    "last_ts": "max(r.last_ts)",
}


@dataclass(frozen=True)
class RollupWhere:
    """A filter compiled over ``rollup_hourly AS r``; ``per_category`` when it pins one product
    category (bill counts then come from ``bills_row``), ``categories`` when it tests several."""

    sql: str
    params: tuple[Any, ...]
    categories: int
    table: str = TABLE


def bills_column(keys: Sequence[str], where: RollupWhere) -> str | None:
    """Which bill column sums exactly for these keys and filter (``None``: none does)."""
    by_category = any(k in CATEGORY_KEYS for k in keys)
    if by_category or where.categories == 1:
        return "bills_row"
    if where.categories > 1:
        return None
    return "bills_one"


def key_sql(key: str, periods: Sequence[Period]) -> Sql | None:
    """A grouping key over the rollup, or ``None`` when the rollup cannot group by it."""
    if key == "period":
        return period_sql(periods) if periods else None
    got = _KEY_SQL.get(key)
    return Sql(got) if got is not None else None


def period_sql(periods: Sequence[Period]) -> Sql:
    """The label of the period a rollup row lies in (the filter compiler's, over ``r.ts_epoch``)."""
    k = key_expr("period", periods, alias="r")
    return Sql(k.sql, tuple(k.params))


def compile_where(
    conn: Any, flt: EventFilter, periods: Sequence[Period], st: State, keys: Sequence[str] = ()
) -> RollupWhere | None:
    """``flt`` (and "in one of ``periods``") over the rollup table that serves it and ``keys``
    (:data:`COARSE` unless product category is involved), or ``None`` when not expressible."""
    if flt.entities or flt.event_ids is not None:
        return None
    fine = any(k in CATEGORY_KEYS for k in keys)
    fine = fine or any(k == "product_category" for k, _ in flt.attributes)
    fine = fine or any(k in CATEGORY_KEYS for k, _ in flt.key_equals)
    table = TABLE if fine else COARSE
    bounds = [t for t in (flt.since, flt.until) if t is not None]
    for p in periods:
        bounds.extend(t for t in (p.since, p.until) if t is not None)
    if bounds and _straddled(conn, table, [_epoch(t) for t in bounds], st.max_span):
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
        if key not in _ATTRIBUTES:
            return None
        if key == "product_category":
            categories = max(categories, 1) if len(set(values)) == 1 else 2
        bound = [normalise_promotion(v) if key == "promotion" else _text(v) for v in values]
        add_in(f"r.{key}", bound)
    for key, values in flt.key_equals:
        expr = key_sql(key, periods)
        if expr is None or key == "period":
            return None
        if key in CATEGORY_KEYS:
            categories = max(categories, 1) if len(set(values)) == 1 and None not in values else 2
        piece = key_equals(key, Sql(expr.sql), tuple(values))
        parts.append(piece.sql)
        params.extend(piece.params)
    if periods:
        window = period_sql(periods)
        parts.append(f"{window.sql} IS NOT NULL")
        params.extend(window.params)
    return RollupWhere(
        " AND ".join(f"({p})" for p in parts) if parts else "1", tuple(params), categories, table
    )


def _straddled(conn: Any, table: str, bounds: Sequence[float], max_span: float) -> bool:
    """True when some row of ``table`` holds events on both sides of one of ``bounds``."""
    for b in bounds:
        row = conn.execute(
            f"SELECT 1 FROM {table} WHERE ts_epoch < ? AND ts_epoch >= ? AND max_epoch >= ? LIMIT 1",
            (b, b - max_span - 1.0, b),
        ).fetchone()
        if row is not None:
            return True
    return False
