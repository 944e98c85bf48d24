"""The hourly rollup as an analysis source: the store's default answer to the engine.

Owns :class:`RollupSource`, which implements :class:`edge.analysis.source.AggregateSource` and
declares every optional capability (bill statistics, batch evidence, retrieval). Aggregations,
coverage, bill statistics and batch evidence are read from the rollup (:mod:`edge.memory.rollup.build`,
brought up to date first; compiled by :mod:`edge.memory.rollup.query`), split bills included
(``rollup_bill_parts``), whenever the filter and keys are expressible on it; otherwise, and for a
store that cannot write the rollup, the :class:`~edge.memory.query.events_source.EventsSource` it
wraps answers from the events (the answers are the same either way while the events are there).
Retrieval, plain evidence sampling and the vocabulary are the events source's. Evidence cites the
rollup rows' event ids.

Strict mode (``strict=True``, what the tiers rely on once closed days' events are archived): the
source never reads events for a question that reaches a closed day; what the rollup cannot express
there raises :class:`~edge.errors.NotInRecordError` (the engine answers ``insufficient_data`` with
its reasons) instead of silently reading events that may be gone. Open days still fall back.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from contextlib import AbstractContextManager
from datetime import timedelta
from typing import Any, Protocol, TypeVar

import apsw

from edge.analysis.source import (
    AGGREGATE,
    BILL_STATS,
    RETRIEVAL,
    SAMPLE_MANY,
    AggResult,
    Coverage,
    EventFilter,
    EventRow,
    Period,
    Vocabulary,
)
from edge.errors import AdammError, NotInRecordError
from edge.memory.query.events_source import (
    EventsSource,
    check_aggregate,
    framed_coverage,
    parse_ts,
    pushdown_types,
    row_of,
)
from edge.memory.query.filters import Sql
from edge.memory.query.rows import archived_event_ids, rows_by_event_id
from edge.memory.rollup import build as rollup
from edge.memory.rollup import query as rollup_query

T = TypeVar("T")


class RollupWriter(Protocol):
    """The store's one writer (:class:`edge.memory.db.writer.Writer`): runs a task on the
    writable connection."""

    def submit(self, fn: Callable[[apsw.Connection], T]) -> Future[T]: ...


class SourceStore(Protocol):
    """What the sources read of a store (:class:`edge.memory.store.Store`, or a bare connection
    holder in tests and tools)."""

    def read(self) -> AbstractContextManager[apsw.Connection]: ...

    def timezone(self, store_id: str | None = None) -> str: ...

    def embed_texts(self, texts: Sequence[str]) -> Any: ...


logger = logging.getLogger(__name__)


class RollupSource:
    """:class:`~edge.analysis.source.AggregateSource` over a store's hourly rollup, with the
    store's events behind it for what the rollup cannot express."""

    capabilities: frozenset[str] = frozenset({AGGREGATE, BILL_STATS, SAMPLE_MANY, RETRIEVAL})

    def __init__(
        self,
        store: SourceStore,
        events: EventsSource | None = None,
        *,
        writer: RollupWriter | None = None,
        strict: bool = False,
    ) -> None:
        """``writer``: the store's writer, which brings the rollup up to date (without one the
        rollup is refreshed on a read connection, which must then be writable); ``strict``: never
        read events for a question that reaches a closed day (module docstring)."""
        self.store = store
        self.events = events if events is not None else EventsSource(store)
        self.writer = writer
        self.strict = strict

    # -- the rollup ------------------------------------------------------------------------------

    def rollup_state(self) -> rollup.State | None:
        """The rollup's state once it holds every event; ``None`` when it cannot be used."""
        with self.store.read() as conn:
            st = rollup.state(conn)
            if st is None:
                return None  # a memory from before migration 0005 opened read-only
            if rollup.is_fresh(conn, st):
                return st
        if not self._refresh():
            return None
        with self.store.read() as conn:
            st = rollup.state(conn)
            return st if st is not None and rollup.is_fresh(conn, st) else None

    def _refresh(self) -> bool:
        writer = self.writer
        if writer is not None and writer is threading.current_thread():
            return False  # asked from a task on the writer itself: waiting on it would deadlock
        try:
            if writer is not None:
                writer.submit(rollup.refresh).result()
            else:  # a bare connection holder (tests, tools): refresh on its own connection
                with self.store.read() as conn:
                    rollup.refresh(conn)
        except (AdammError, apsw.Error) as exc:
            logger.info("hourly rollup not refreshed (%s); answering from the events", exc)
            return False
        return True

    # -- aggregation -----------------------------------------------------------------------------

    def aggregate_sql(
        self,
        flt: EventFilter,
        keys: Sequence[str],
        components: Sequence[str],
        periods: Sequence[Period] = (),
    ) -> Sql:
        """The event-level statement of the events source (for EXPLAIN and benchmarks)."""
        return self.events.aggregate_sql(flt, keys, components, periods)

    def aggregate(
        self,
        flt: EventFilter,
        keys: Sequence[str],
        components: Sequence[str],
        periods: Sequence[Period] = (),
    ) -> AggResult:
        """One grouped query over the rollup, or the events source's when not expressible."""
        check_aggregate(keys, components, periods)
        st = self.rollup_state()
        raw = None
        if st is not None:
            with self.store.read() as conn, conn:
                raw = self._aggregate_rollup(conn, st, flt, keys, components, periods)
        if raw is None:
            self._may_read_events(flt, periods, st, _what(flt, keys))
            return self.events.aggregate(flt, keys, components, periods)
        rows = tuple(row_of(r, keys, components) for r in raw)
        return AggResult(columns=(*keys, *components), rows=rows)

    def _aggregate_rollup(
        self,
        conn: Any,
        st: rollup.State,
        flt: EventFilter,
        keys: Sequence[str],
        components: Sequence[str],
        periods: Sequence[Period],
    ) -> list[Any] | None:
        """The rows of :meth:`aggregate` read from the rollup (``None``: not expressible)."""
        zones = self.events.zones(flt)
        where = rollup_query.compile_where(conn, flt, periods, st, keys, zones=zones)
        if where is None:
            return None
        select: list[Sql] = []
        for k in keys:
            got = rollup_query.key_sql(k, periods, wall_clock_zone=flt.wall_clock_zone, zones=zones)
            if got is None:
                return None
            select.append(got)
        for c in components:
            if c == "bills":
                col = rollup_query.bills_column(keys, where)
                if col is None:
                    return None
                select.append(Sql(f"sum(CASE WHEN r.event_type = 'purchase' THEN r.{col} ELSE 0 END)"))
            else:
                select.append(Sql(rollup_query.COMPONENT_SQL[c]))
        conds = [where.sql]
        params: list[Any] = [p for s_ in select for p in s_.params]
        params.extend(where.params)
        types = pushdown_types(components)
        if types is not None:
            conds.append(f"r.event_type IN ({', '.join('?' * len(types))})")
            params.extend(types)
        tail = (
            f"GROUP BY {', '.join(str(i + 1) for i in range(len(keys)))}" if keys else "HAVING count(*) > 0"
        )
        sql = (
            f"SELECT {', '.join(x.sql for x in select)} FROM {where.table} AS r "
            f"WHERE {' AND '.join(conds)} {tail}"
        )
        rows = [list(r) for r in conn.execute(sql, params)]
        if "bills" in components and st.split_bills:
            # split bills are not in the rows' bill columns: each counts once per group it has a
            # part in (``rollup_bill_parts``, same dimensions, same filter)
            j = len(keys) + list(components).index("bills")
            at = {tuple(r[: len(keys)]): r for r in rows}
            for key, count in _split_bill_counts(conn, where, select[: len(keys)]).items():
                row = at.get(key)
                if row is None:
                    return None  # cannot happen: a part's lines are in the rows' counts
                row[j] = (row[j] or 0) + count
        return rows

    def bill_stats(
        self, flt: EventFilter, key: str, periods: Sequence[Period] = ()
    ) -> dict[Any, tuple[int, float, float]]:
        """Per group of ``key``: ``(bills, sum, sum of squares)`` of the bill totals of the
        purchase events matching ``flt`` (a bill's total within the group; a purchase without a
        bill id is its own bill). The moments of ``avg_order_value``'s unit samples."""
        st = self.rollup_state()
        if st is not None:
            with self.store.read() as conn, conn:
                got = self._bill_stats_rollup(conn, st, flt, key, periods)
            if got is not None:
                return got
        self._may_read_events(flt, periods, st, _what(flt, [key]))
        return self.events.bill_stats(flt, key, periods)

    def _bill_stats_rollup(
        self, conn: Any, st: rollup.State, flt: EventFilter, key: str, periods: Sequence[Period]
    ) -> dict[Any, tuple[int, float, float]] | None:
        flt = flt.narrowed(event_types=("purchase",))
        zones = self.events.zones(flt)
        where = rollup_query.compile_where(conn, flt, periods, st, [key], zones=zones)
        key_sql = rollup_query.key_sql(key, periods, wall_clock_zone=flt.wall_clock_zone, zones=zones)
        if where is None or key_sql is None:
            return None
        by_category = key in rollup_query.CATEGORY_KEYS
        if where.categories > 1 and not by_category:
            return None  # a bill with lines in two of the categories would count twice
        # one bill per row it lies in: per product category (``bills_row``/``bill_sq_row``: a
        # bill's lines within one category) when the key or the filter is one, else whole bills
        n_col, q_col = (
            ("bills_row", "bill_sq_row") if by_category or where.categories else ("bills_one", "bill_sq_one")
        )
        sql = (
            f"SELECT {key_sql.sql}, sum(r.{n_col}), total(r.amount_sum), total(r.{q_col}) "
            f"FROM {where.table} AS r WHERE {where.sql} GROUP BY 1"
        )
        out: dict[Any, tuple[int, float, float]] = {}
        for g, n, s_, q in conn.execute(sql, (*key_sql.params, *where.params)):
            out[g] = (int(n or 0), float(s_ or 0.0), float(q or 0.0))
        if st.split_bills:
            # a split bill's total within a group: the sum of its parts there
            stmt = (
                f"SELECT {key_sql.sql}, total(r.amount_sum) FROM {rollup.PARTS} AS r "
                f"WHERE {where.sql} GROUP BY 1, r.bill_id"
            )
            for g, t in conn.execute(stmt, (*key_sql.params, *where.params)):
                n, s_, q = out.get(g, (0, 0.0, 0.0))
                out[g] = (n + 1, s_, q + float(t) * float(t))
        if key == "is_weekend":
            out = {None if g is None else bool(g): v for g, v in out.items()}
        return {g: v for g, v in out.items() if v[0] > 0 and not (key == "period" and g is None)}

    # -- evidence and coverage -------------------------------------------------------------------

    def sample_many(
        self, requests: Sequence[tuple[EventFilter, Sequence[Period], int]]
    ) -> list[list[EventRow]]:
        """Representative events for several ``(filter, periods, limit)`` at once (the evidence of
        several groups): one query over the rollup picks, per request, rows evenly spaced in time
        (the first and last kept) and cites one event of each (the first row's first event, the
        others' last); a request the rollup cannot express is answered by :meth:`sample_events`.
        Each list is most recent first."""
        out: list[list[EventRow] | None] = [None] * len(requests)
        st = self.rollup_state()
        if st is not None:
            with self.store.read() as conn, conn:
                parts: list[str] = []
                params: list[Any] = []
                for i, (flt, periods, limit) in enumerate(requests):
                    if limit <= 0:
                        out[i] = []
                        continue
                    zones = self.events.zones(flt)
                    where = rollup_query.compile_where(conn, flt, periods, st, zones=zones)
                    if where is None:
                        continue
                    out[i] = []
                    parts.append(
                        f"SELECT {i} AS s, {int(limit)} AS lim, r.ts_epoch AS t, r.first_event_id AS first_id, "
                        "r.last_event_id AS last_id, r.first_ts AS first_ts, r.last_ts AS last_ts, "
                        "r.event_type AS event_type, r.store_id AS store_id "
                        f"FROM {where.table} AS r WHERE {where.sql}"
                    )
                    params.extend(where.params)
                picked: dict[int, list[str]] = {}
                # what the rollup row says of each cited event: an archived event's record
                cited: dict[str, EventRow] = {}
                if parts:
                    # per request: rows numbered in time, the evenly spaced row numbers kept (all
                    # rows when there are no more than the limit: then first and last events)
                    sql = (
                        "SELECT s, lim, rn, cnt, first_id, last_id, first_ts, last_ts, event_type, store_id "
                        "FROM (SELECT s, lim, first_id, last_id, first_ts, last_ts, event_type, store_id, "
                        "row_number() OVER (PARTITION BY s ORDER BY t, first_id) AS rn, "
                        "count(*) OVER (PARTITION BY s) AS cnt FROM (" + " UNION ALL ".join(parts) + ")) "
                        "WHERE cnt <= lim OR (lim = 1 AND rn = cnt) OR (lim > 1 AND "
                        "((((rn - 1) * (lim - 1) + cnt - 2) / (cnt - 1)) * (cnt - 1)) / (lim - 1) = rn - 1) "
                        "ORDER BY s, rn"
                    )
                    for i, lim, rn, cnt, lo, hi, lo_ts, hi_ts, etype, sid in conn.execute(sql, params):
                        ids = picked.setdefault(int(i), [])
                        cite = (lo, hi) if cnt < lim else ((lo,) if rn == 1 else (hi,))
                        ids.extend(x for x in cite if x is not None and x not in ids)
                        for x, ts in ((lo, lo_ts), (hi, hi_ts)):
                            if x is not None and x not in cited:
                                cited[x] = EventRow(
                                    event_id=str(x),
                                    timestamp=str(ts),
                                    event_type=str(etype),
                                    store_id=str(sid),
                                )
                picked = {i: _spread(ids, requests[i][2]) for i, ids in picked.items()}
                wanted = [x for ids in picked.values() for x in ids]
                rows_of = rows_by_event_id(conn, wanted)
                # a closed day's events may be archived: the rollup is their record, and an
                # archived event is cited as the rollup row names it (``adamm restore`` brings it
                # back); an id neither held nor archived is never cited
                for x in archived_event_ids(conn, [x for x in wanted if x not in rows_of]):
                    rows_of[x] = cited[x]
                for i, ids in picked.items():
                    evs = [rows_of[x] for x in ids if x in rows_of]
                    out[i] = sorted(evs, key=lambda e: e.timestamp, reverse=True)
        return [
            got if got is not None else self.events.sample_events(flt, limit, periods)[0]
            for got, (flt, periods, limit) in zip(out, requests, strict=True)
        ]

    def coverage(self, flt: EventFilter) -> Coverage:
        """Earliest/latest timestamp and count matching ``flt`` without its time window."""
        whole = flt.narrowed(since=None, until=None)
        st = self.rollup_state()
        with self.store.read() as conn, conn:
            where = rollup_query.compile_where(conn, whole, (), st) if st else None
            if where is None:
                row = None
            elif flt.wall_clock_zone is not None:  # per store, placed in the window's frame
                rows = conn.execute(
                    f"SELECT r.store_id, min(r.first_ts), max(r.last_ts), sum(r.n) FROM {where.table} AS r "
                    f"WHERE {where.sql} GROUP BY 1",
                    where.params,
                ).fetchall()
                return framed_coverage(rows, self.events.zones(), flt.wall_clock_zone)
            else:
                row = conn.execute(
                    f"SELECT min(r.first_ts), max(r.last_ts), sum(r.n) FROM {where.table} AS r "
                    f"WHERE {where.sql}",
                    where.params,
                ).fetchone()
        if row is None:
            self._may_read_events(whole, (), st, _what(flt, ()))
            return self.events.coverage(flt)
        lo, hi, n = row
        return Coverage(earliest=parse_ts(lo), latest=parse_ts(hi), count=int(n or 0))

    def applied(self, flt: EventFilter) -> frozenset[str]:
        """Every condition of ``flt``: what the rollup cannot express is read from the events
        (or, in strict mode, refused with :class:`NotInRecordError`), never left out."""
        return self.events.applied(flt)

    def sample_events(
        self, flt: EventFilter, limit: int, periods: Sequence[Period] = ()
    ) -> tuple[list[EventRow], int]:
        """Representative events and their number: the events source's."""
        return self.events.sample_events(flt, limit, periods)

    def vocabulary(self) -> Vocabulary:
        """The memory's words (events and closed days' rollup rows): the events source's."""
        return self.events.vocabulary()

    def retrieve(self, text: str | None, flt: EventFilter, k: int) -> list[EventRow]:
        """Hybrid retrieval over the events."""
        return self.events.retrieve(text, flt, k)

    def embed_texts(self, texts: Sequence[str]) -> Any:
        """Unit-norm text vectors from the store's text encoder (None when it has none)."""
        return self.events.embed_texts(texts)

    # -- strict mode -----------------------------------------------------------------------------

    def _may_read_events(
        self, flt: EventFilter, periods: Sequence[Period], st: rollup.State | None, what: tuple[str, str]
    ) -> None:
        """Raise :class:`NotInRecordError` when this source is strict and ``flt`` (with
        ``periods``) reaches a closed day: its events may be archived, the rollup is its record."""
        if not self.strict:
            return
        with self.store.read() as conn, conn:
            if not _reaches_closed_day(conn, flt, periods):
                return
        en, zh = what
        if st is None:
            en, zh = "the hourly rollup (it is not up to date)", "小时汇总（尚未更新）"
        raise NotInRecordError(
            f"{en} of closed days: their record is the hourly rollup, which does not hold it, and their "
            f"events may be archived ({RESTORE_HINT['en']})",
            f"已结账日期的{zh}：这些日期的记录是小时汇总，其中没有这项内容，原始事件可能已归档"
            f"（{RESTORE_HINT['zh']}）",
        )


#: how archived days come back, in the words of the answers that need their events
RESTORE_HINT = {
    "en": "adamm restore --db PATH --day YYYY-MM-DD brings a day's archived events back",
    "zh": "adamm restore --db PATH --day YYYY-MM-DD 可取回某天已归档的事件",
}


def _what(flt: EventFilter, keys: Sequence[str]) -> tuple[str, str]:
    """What of a question the rollup cannot express, in words (en, zh)."""
    names: list[str] = []
    names.extend(k for k in keys if rollup_query.key_sql(k, (Period("p", None, None),)) is None)
    names.extend(k for k, _ in flt.attributes if k not in rollup_query.ATTRIBUTES)
    names.extend(k for k, _ in flt.key_equals if rollup_query.key_sql(k, ()) is None)
    if flt.entities:
        names.append("entities")
    if flt.event_ids is not None:
        names.append("single events")
    shown = ", ".join(dict.fromkeys(names))
    if shown:
        return f"per-event detail ({shown})", f"逐条事件的细节（{shown}）"
    return "this combination of filters", "这种筛选组合"


def _reaches_closed_day(conn: Any, flt: EventFilter, periods: Sequence[Period]) -> bool:
    """True when some closed day of ``flt``'s stores lies within a day of its time window (and of
    its periods' span): conservative, a day's margin either side."""
    if conn.execute("SELECT 1 FROM rollup_days WHERE state = 'closed' LIMIT 1").fetchone() is None:
        return False
    parts = ["state = 'closed'"]
    params: list[Any] = []
    if flt.store_ids:
        parts.append(f"store_id IN ({', '.join('?' * len(flt.store_ids))})")
        params.extend(str(s) for s in flt.store_ids)
    lo = flt.since
    if periods and all(p.since is not None for p in periods):
        plo = min(p.since for p in periods if p.since is not None)
        lo = plo if lo is None else max(lo, plo)
    hi = flt.until
    if periods and all(p.until is not None for p in periods):
        phi = max(p.until for p in periods if p.until is not None)
        hi = phi if hi is None else min(hi, phi)
    # a store-local date is within a day of the UTC date (per-store windows: within two)
    if lo is not None:
        parts.append("local_date >= ?")
        params.append((lo - timedelta(days=2)).strftime("%Y-%m-%d"))
    if hi is not None:
        parts.append("local_date <= ?")
        params.append((hi + timedelta(days=2)).strftime("%Y-%m-%d"))
    sql = f"SELECT 1 FROM rollup_days WHERE {' AND '.join(parts)} LIMIT 1"
    return conn.execute(sql, params).fetchone() is not None


def _split_bill_counts(
    conn: Any, where: rollup_query.RollupWhere, keys: Sequence[Sql]
) -> dict[tuple[Any, ...], int]:
    """Per group of the keys (their SQL over the rollup): the split bills with a part matching
    ``where`` (each once)."""
    params: list[Any] = [p for x in keys for p in x.params]
    cols = ", ".join([*(x.sql for x in keys), "count(DISTINCT r.bill_id)"])
    tail = f" GROUP BY {', '.join(str(i + 1) for i in range(len(keys)))}" if keys else ""
    sql = f"SELECT {cols} FROM {rollup.PARTS} AS r WHERE {where.sql}{tail}"
    out: dict[tuple[Any, ...], int] = {}
    for r in conn.execute(sql, (*params, *where.params)):
        if r[-1]:
            out[tuple(r[:-1])] = int(r[-1])
    return out


def _spread(ids: Sequence[str], limit: int) -> list[str]:
    """At most ``limit`` of ``ids`` (in time order), evenly spaced, the first and last kept."""
    if len(ids) <= limit:
        return list(ids)
    if limit == 1:
        return [ids[-1]]
    return [ids[(i * (len(ids) - 1)) // (limit - 1)] for i in range(limit)]
