"""The hourly rollup: the events pre-aggregated per store-local hour, so ``adamm ask`` reads
thousands of rollup rows instead of millions of events; for closed days, the record itself.

Owns the tables of migrations ``0005_hourly_rollup``, ``0007_rollup_days`` and
``0008_rollup_bill_parts`` (``rollup_hourly``, ``rollup_hourly_coarse``, ``rollup_split_bills``,
``rollup_bill_parts``, ``rollup_state``, ``rollup_days``) and their maintenance (:func:`refresh`, :func:`close_days`). The compiler from
an :class:`~edge.analysis.source.EventFilter` to SQL over these tables is
:mod:`edge.memory.rollup.query`; :mod:`edge.memory.query.rollup_source` answers the engine from them.

Layout: one row per (store, local date, local hour, event type, effective weather, effective
promotion, zone, product category) holding the count, the min/max time, the first and last
event (``first_event_id``/``last_event_id``: representative evidence, portable off the box; the
local rowids ``first_id``/``last_id`` are kept for ordering) and the sums / sums of squares /
counts of the well-known metrics.
Weather and promotion are stored as the day attributes :mod:`edge.memory.query.filters` defines (an
event without its own value takes its day's), computed by that module's own SQL.

Bills: a bill whose purchase lines fall into more than one row *other than by product category*
(e.g. lines either side of an hour boundary or of a local midnight; decided on the raw
weather/promotion values, which may list a few more) is "split"; split bills are listed in
``rollup_split_bills``, left out of the rows' bill columns and kept in ``rollup_bill_parts``
instead: one row per (bill, fine row) with that row's dimensions, the bill's lines and amount
there. A query counts a split bill once per group it has a part in and sums its parts for its
total within a group, so distinct-bill counts and bill totals are exact from the rollup alone,
for open and closed days. ``bills_row`` counts a row's other bills (exact per product category);
``bills_one`` counts each of them once, in the row of its first line (exact when rows of several
categories are summed); ``bill_sq_one`` is the squared bill total of those same bills
(order-value variance) and ``bill_sq_row`` the squared totals of a row's bills within that row
(order-value variance per product category). A bill with a part in a closed day stays split
(its lines in open days become parts too), so it is counted once even after the closed day's
events are gone.

``rollup_hourly_coarse`` holds the same rows summed over product categories (about a sixth as
many rows on a supermarket's data); questions that neither group nor filter by product category
read it.

Freshness: ``rollup_state.high_water`` is the largest ``events.id`` aggregated. New events are
folded in lazily (:func:`refresh`, at ask time): only the store-local days they touch (and the
days of bills they extend) are re-aggregated. Triggers set ``stale`` on a DELETE or UPDATE of an
aggregated column of an event of an *open* day (``adamm import --replace``), which makes the next
refresh rebuild every open day.

Day states (``rollup_days``; a day without a row is open): :func:`close_days` closes the days
before a local date. A closed day's rows are the record: they are never rebuilt nor erased, and
deleting or archiving its events changes nothing (tiering does exactly that). An event imported
later into a closed day is handled at the next refresh: when every event the day was closed with
is still there, the day is reopened and rebuilt from its events (nothing is lost); otherwise the
day stays closed as it was and the event is counted in ``rollup_days.late_events`` with a
warning (its own row is in ``events``, the day's figures are not changed). A closed day's split
bills are in ``rollup_bill_parts``, so once its events are gone every measure of it stays exact;
days closed before migration ``0008_rollup_bill_parts`` are rebuilt in place from their events at
the next refresh (while every event they were closed with is there) to get their parts.

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

from edge.analysis.source import EventFilter
from edge.errors import StoreError
from edge.memory.query.filters import (
    QueryBuilder,
    Sql,
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

#: the rollup's dimension columns that are stats values (listed in the vocabulary)
ATTRIBUTE_COLUMNS: tuple[str, ...] = ("weather", "promotion", "zone", "product_category")

#: a rollup row (``AS r``) of a closed day
CLOSED_ROW = (
    "EXISTS (SELECT 1 FROM rollup_days AS d WHERE d.store_id = r.store_id "
    "AND d.local_date = r.local_date AND d.state = 'closed')"
)
#: an event (``AS e``) of a day that is not closed
_OPEN_EVENT = (
    "NOT EXISTS (SELECT 1 FROM rollup_days AS d WHERE d.store_id = e.store_id "
    "AND d.local_date = e.local_date AND d.state = 'closed')"
)
#: an unaliased row of a rollup table or of ``events`` of a day that is not closed
_OPEN_ROW = (
    "NOT EXISTS (SELECT 1 FROM rollup_days AS d WHERE d.store_id = {t}.store_id "
    "AND d.local_date = {t}.local_date AND d.state = 'closed')"
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
    "bill_sq_row",
)

#: columns of the rollup tables that are neither dimensions nor measures: the event ids of a row's
#: first and last events (migration ``0007_rollup_days``), filled after the row is written
EVENT_ID_COLUMNS: tuple[str, ...] = ("first_event_id", "last_event_id")

#: the split bills' table (migration ``0008_rollup_bill_parts``): one row per (bill, fine row)
PARTS = "rollup_bill_parts"
#: its columns: the bill, the fine row's dimensions, then the part's lines, time span and amount
PART_COLUMNS: tuple[str, ...] = ("bill_id", *DIMENSIONS, "n", "ts_epoch", "max_epoch", "amount_sum")

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
        if top > st.high_water:
            _admit_late(conn, st.high_water)
        if not st.stale and top > st.high_water:
            closed = _closed(conn)
            days = [d for d in _touched_days(conn, st.high_water) if d not in closed]
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
        _backfill_closed(conn)
        (span,) = conn.execute(f"SELECT coalesce(max(max_epoch - ts_epoch), 0) FROM {COARSE}").fetchone() or (
            0,
        )
        (splits,) = conn.execute(f"SELECT count(DISTINCT bill_id) FROM {PARTS}").fetchone() or (0,)
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


def _closed(conn: Any) -> set[tuple[str, str]]:
    return {
        (str(s), str(d))
        for s, d in conn.execute("SELECT store_id, local_date FROM rollup_days WHERE state = 'closed'")
    }


def _admit_late(conn: Any, high_water: int) -> None:
    """Events after ``high_water`` in closed days: reopen a day whose events are all still there
    (it is then rebuilt from them), else keep it closed and count the late events."""
    late = conn.execute(
        "SELECT e.store_id, e.local_date, count(*) FROM events AS e JOIN rollup_days AS d "
        "ON d.store_id = e.store_id AND d.local_date = e.local_date AND d.state = 'closed' "
        "WHERE e.id > ? GROUP BY 1, 2",
        (high_water,),
    ).fetchall()
    now = datetime.now(UTC).isoformat()
    for store, day, n in late:
        (held,) = conn.execute(
            "SELECT count(*) FROM events WHERE store_id = ? AND local_date = ? AND id <= ?",
            (store, day, high_water),
        ).fetchone() or (0,)
        (closed_with,) = conn.execute(
            "SELECT events FROM rollup_days WHERE store_id = ? AND local_date = ?", (store, day)
        ).fetchone() or (0,)
        if int(held) == int(closed_with):
            conn.execute(
                "UPDATE rollup_days SET state = 'open', changed_at = ? WHERE store_id = ? AND local_date = ?",
                (now, store, day),
            )
            logger.info("closed day %s of store %s reopened: %d events arrived late", day, store, n)
        else:
            conn.execute(
                "UPDATE rollup_days SET late_events = late_events + ? WHERE store_id = ? AND local_date = ?",
                (int(n), store, day),
            )
            logger.warning(
                "%d events arrived for closed day %s of store %s whose events are archived: "
                "they are kept but not counted in that day's figures",
                n,
                day,
                store,
            )


def close_days(conn: Any, before_local_date: str, store_id: str | None = None) -> int:
    """Close every rolled-up day before ``before_local_date`` (``YYYY-MM-DD``, store-local) of
    ``store_id`` (every store when ``None``) on a writable connection: from then on the rollup is
    those days' record (see the module docstring). Brings the rollup up to date first. Returns the
    number of days closed now."""
    refresh(conn)
    with conn:
        scope = "r.local_date < ?" + (" AND r.store_id = ?" if store_id is not None else "")
        params: tuple[Any, ...] = (before_local_date,) + ((store_id,) if store_id is not None else ())
        rows = conn.execute(
            f"SELECT r.store_id, r.local_date, sum(r.n) FROM {COARSE} AS r WHERE {scope} "
            f"AND NOT {CLOSED_ROW} GROUP BY 1, 2",
            params,
        ).fetchall()
        now = datetime.now(UTC).isoformat()
        for store, day, n in rows:
            conn.execute(
                "INSERT INTO rollup_days(store_id, local_date, state, events, changed_at, bill_parts) "
                "VALUES (?, ?, 'closed', ?, ?, 1) ON CONFLICT(store_id, local_date) "
                "DO UPDATE SET state = 'closed', events = excluded.events, changed_at = excluded.changed_at, "
                "bill_parts = 1",
                (store, day, int(n), now),
            )
    logger.info("closed %d rollup days before %s", len(rows), before_local_date)
    return len(rows)


def _rebuild_all(conn: Any) -> None:
    """Rebuild every open day from its events (closed days are kept as they are)."""
    for table in (TABLE, COARSE, PARTS):
        conn.execute(f"DELETE FROM {table} WHERE {_OPEN_ROW.format(t=table)}")
    conn.execute("DELETE FROM rollup_split_bills")
    _insert_split_bills(conn, EventFilter())
    open_days = Sql(_OPEN_ROW.format(t="events"))
    _insert_rows(conn, EventFilter(), open_days)
    _insert_parts(conn, EventFilter())
    _insert_coarse(conn, Sql(_OPEN_ROW.format(t=TABLE)))


def _rebuild_days(conn: Any, days: Sequence[tuple[str, str]], *, closed: bool = False) -> None:
    """Rebuild these (open) days from their events; ``closed``: days that are closed (only the
    backfill of :func:`_backfill_closed` rebuilds those, while all their events are there)."""
    by_store: dict[str, list[str]] = {}
    for s, d in days:
        by_store.setdefault(s, []).append(d)
    for store, dates in by_store.items():
        scope = Sql(
            "store_id = ? AND local_date IN (SELECT value FROM json_each(?))", (store, json.dumps(dates))
        )
        for table in (TABLE, COARSE, PARTS):
            conn.execute(f"DELETE FROM {table} WHERE {scope.sql}", scope.params)
        flt = _days_filter(store, dates)
        # bills of these days: their split status is decided again over all their lines
        conn.execute(
            "DELETE FROM rollup_split_bills WHERE bill_id IN (SELECT bill_id FROM events "
            f"WHERE {scope.sql} AND bill_id IS NOT NULL)",
            scope.params,
        )
        _insert_split_bills(conn, flt)
        _insert_rows(conn, flt, scope, open_only=not closed)
        _insert_parts(conn, flt, open_only=not closed)
        _insert_coarse(conn, scope)


def _backfill_closed(conn: Any) -> None:
    """Closed days without their split bills' parts (closed before migration
    ``0008_rollup_bill_parts``): rebuilt in place from their events while every event they were
    closed with is there, so their rollup alone is their record; else left as they are, with a
    warning (their split bills are then missing from their distinct-bill counts)."""
    rows = conn.execute(
        "SELECT d.store_id, d.local_date, d.events, (SELECT count(*) FROM events AS e "
        "WHERE e.store_id = d.store_id AND e.local_date = d.local_date) "
        "FROM rollup_days AS d WHERE d.state = 'closed' AND d.bill_parts = 0"
    ).fetchall()
    whole = [(str(s), str(d)) for s, d, n, held in rows if int(held) == int(n)]
    for s, d, n, held in rows:
        if int(held) != int(n):
            logger.warning(
                "closed day %s of store %s was closed before split bills were kept in the rollup and "
                "%d of its %d events are gone: its order counts lack the bills split across hours",
                d,
                s,
                int(n) - int(held),
                n,
            )
    if whole:
        _rebuild_days(conn, whole, closed=True)
    conn.execute("UPDATE rollup_days SET bill_parts = 1 WHERE state = 'closed' AND bill_parts = 0")


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
    """Bills among ``flt``'s purchase events whose lines (all of them) span several coarse rows,
    and every bill that still has a part recorded (a closed day's part of a bill whose lines in that
    day may be archived: its lines elsewhere stay parts too, so the bill is counted once)."""
    conn.execute(f"INSERT OR IGNORE INTO rollup_split_bills(bill_id) SELECT DISTINCT bill_id FROM {PARTS}")
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


def _insert_rows(conn: Any, flt: EventFilter, scope: Sql = _ALL, *, open_only: bool = True) -> None:
    """Aggregate ``flt``'s events into rows; ``scope`` (over ``events`` unaliased) is the same set
    of days, narrowing the bill anchors; ``open_only``: only the events of days that are not closed."""
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
        Sql(
            f"total(CASE WHEN {purchase} AND e.bill_id IS NULL THEN e.order_amount * e.order_amount "
            "WHEN c.t IS NOT NULL THEN c.t * c.t END)"
        ),
    ]
    stmt = qb.build(
        select,
        extra_where=[Sql(_OPEN_EVENT)] if open_only else [],
        tail=f"GROUP BY {', '.join(str(i + 1) for i in range(len(DIMENSIONS)))}",
        from_sql=(
            "events AS e LEFT JOIN temp._rollup_anchor AS a ON a.id = e.id "
            "LEFT JOIN temp._rollup_piece AS c ON c.id = e.id"
        ),
    )
    # the anchor (first line) and total of every non-split bill, joined onto its first line; and
    # per product category, its first line there and its total there (a non-split bill lies in one
    # coarse row, so that is its total within one fine row: ``bill_sq_row``)
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS _rollup_anchor(id INTEGER PRIMARY KEY, t REAL NOT NULL)")
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS _rollup_piece(id INTEGER PRIMARY KEY, t REAL NOT NULL)")
    whole_bills = (
        "WHERE event_type = 'purchase' AND bill_id IS NOT NULL "
        f"AND bill_id NOT IN (SELECT bill_id FROM rollup_split_bills) AND ({scope.sql})"
    )
    conn.execute(
        f"INSERT INTO temp._rollup_anchor(id, t) SELECT min(id), total(order_amount) FROM events "
        f"{whole_bills} GROUP BY bill_id",
        scope.params,
    )
    conn.execute(
        f"INSERT INTO temp._rollup_piece(id, t) SELECT min(id), total(order_amount) FROM events "
        f"{whole_bills} GROUP BY bill_id, product_category",
        scope.params,
    )
    cols = ", ".join((*DIMENSIONS, *MEASURES))
    conn.execute(f"INSERT INTO {TABLE}({cols}) {stmt.sql}", stmt.params)
    conn.execute("DELETE FROM temp._rollup_anchor")  # empty for the next call
    conn.execute("DELETE FROM temp._rollup_piece")
    _fill_event_ids(conn, TABLE)


def _insert_parts(conn: Any, flt: EventFilter, *, open_only: bool = True) -> None:
    """The split bills' parts among ``flt``'s purchase events: per bill and fine row, its lines,
    time span and amount (weather and promotion the day attributes, as in the rows)."""
    qb = QueryBuilder(flt, alias="e")
    select = [
        Sql("e.bill_id"),
        *(Sql(f"e.{d}") for d in DIMENSIONS[:7]),
        qb.key("weather"),
        qb.key("promotion"),
        Sql("e.zone"),
        Sql("e.product_category"),
        Sql("count(*)"),
        Sql("min(e.ts_epoch)"),
        Sql("max(e.ts_epoch)"),
        Sql("total(e.order_amount)"),
    ]
    where = [Sql("e.event_type = 'purchase' AND e.bill_id IN (SELECT bill_id FROM rollup_split_bills)")]
    stmt = qb.build(
        select,
        extra_where=[*where, Sql(_OPEN_EVENT)] if open_only else where,
        tail=f"GROUP BY {', '.join(str(i + 1) for i in range(len(DIMENSIONS) + 1))}",
    )
    conn.execute(f"INSERT INTO {PARTS}({', '.join(PART_COLUMNS)}) {stmt.sql}", stmt.params)


def _fill_event_ids(conn: Any, table: str) -> None:
    """The event ids of the rows just written (their first and last events, by rowid)."""
    conn.execute(
        f"UPDATE {table} SET first_event_id = (SELECT event_id FROM events WHERE id = {table}.first_id), "
        f"last_event_id = (SELECT event_id FROM events WHERE id = {table}.last_id) WHERE first_event_id IS NULL"
    )


def _insert_coarse(conn: Any, scope: Sql) -> None:
    """The coarse rows of ``scope``'s days, summed from the fine ones (a non-split bill lies in
    one coarse row, so its ``bills_one`` is also the coarse row's distinct count)."""
    dims = ", ".join(d for d in DIMENSIONS if d != "product_category")
    sums = (
        "sum(n), min(ts_epoch), max(max_epoch), min(first_ts), max(last_ts), min(first_id), max(last_id), "
        "sum(person_sum), total(amount_sum), total(amount_sq), total(dwell_sum), total(dwell_sq), sum(dwell_n), "
        "total(queue_sum), total(queue_sq), sum(queue_n), sum(emotion_n), sum(negative_n), sum(bills_one), "
        "sum(bills_one), total(bill_sq_one), total(bill_sq_one)"
    )
    cols = ", ".join((*DIMENSIONS, *MEASURES))
    conn.execute(
        f"INSERT INTO {COARSE}({cols}) SELECT {dims}, NULL, {sums} FROM {TABLE} WHERE {scope.sql} GROUP BY {dims}",
        scope.params,
    )
    _fill_event_ids(conn, COARSE)
