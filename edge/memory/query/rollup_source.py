"""The hourly rollup as an analysis source: the store's default answer to the engine.

Owns :class:`RollupSource`, which implements :class:`edge.analysis.source.AggregateSource` and
declares every optional capability (bill statistics, batch evidence, retrieval). Aggregations,
coverage, bill statistics and batch evidence are read from the rollup (:mod:`edge.memory.rollup.build`,
brought up to date first; compiled by :mod:`edge.memory.rollup.query`) whenever the filter and
keys are expressible on it; otherwise, and for a store that cannot write the rollup, the
:class:`~edge.memory.query.events_source.EventsSource` it wraps answers from the events (the answers
are the same either way while the events are there). Retrieval, plain evidence sampling and the
vocabulary are the events source's. Evidence cites the rollup rows' event ids.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

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
from edge.errors import AdammError
from edge.memory.query.events_source import EventsSource, check_aggregate, parse_ts, pushdown_types, row_of
from edge.memory.query.filters import QueryBuilder, Sql
from edge.memory.query.rows import rows_by_event_id
from edge.memory.rollup import build as rollup
from edge.memory.rollup import query as rollup_query

logger = logging.getLogger(__name__)


class RollupSource:
    """:class:`~edge.analysis.source.AggregateSource` over a store's hourly rollup, with the
    store's events behind it for what the rollup cannot express."""

    capabilities: frozenset[str] = frozenset({AGGREGATE, BILL_STATS, SAMPLE_MANY, RETRIEVAL})

    def __init__(self, store: Any, events: EventsSource | None = None) -> None:
        self.store = store
        self.events = events if events is not None else EventsSource(store)

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
        writer = getattr(self.store, "writer", None)
        if writer is threading.current_thread():
            return False  # asked from a task on the writer itself: waiting on it would deadlock
        try:
            if writer is not None and hasattr(writer, "submit"):
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
        where = rollup_query.compile_where(conn, flt, periods, st, keys)
        if where is None:
            return None
        select: list[Sql] = []
        for k in keys:
            got = rollup_query.key_sql(k, periods)
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
            # split bills are not in the rollup's bill columns: count them from their events
            j = len(keys) + list(components).index("bills")
            extra = self._split_bill_counts(conn, flt, keys, periods)
            at = {tuple(r[: len(keys)]): r for r in rows}
            for key, count in extra.items():
                row = at.get(key)
                if row is None:
                    return None  # cannot happen: their events are in the rollup's counts
                row[j] = (row[j] or 0) + count
        return rows

    def _split_bill_counts(
        self, conn: Any, flt: EventFilter, keys: Sequence[str], periods: Sequence[Period]
    ) -> dict[tuple[Any, ...], int]:
        qb = QueryBuilder(flt, periods)
        select = [qb.key(k) for k in keys]
        stmt = qb.build(
            [*select, Sql("count(DISTINCT e.bill_id)")],
            extra_where=[Sql("e.event_type = 'purchase'")],
            tail=f"GROUP BY {', '.join(str(i + 1) for i in range(len(keys)))}" if keys else "",
            from_sql=_SPLIT_BILL_EVENTS,
        )
        out: dict[tuple[Any, ...], int] = {}
        for r in conn.execute(stmt.sql, stmt.params):
            if r[-1]:
                out[tuple(r[:-1])] = int(r[-1])
        return out

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
        return self.events.bill_stats(flt, key, periods)

    def _bill_stats_rollup(
        self, conn: Any, st: rollup.State, flt: EventFilter, key: str, periods: Sequence[Period]
    ) -> dict[Any, tuple[int, float, float]] | None:
        if key in rollup_query.CATEGORY_KEYS:
            return None  # bills split by category: their per-category totals are not stored
        flt = flt.narrowed(event_types=("purchase",))
        where = rollup_query.compile_where(conn, flt, periods, st, [key])
        key_sql = rollup_query.key_sql(key, periods)
        if where is None or key_sql is None or where.categories:
            return None
        sql = (
            f"SELECT {key_sql.sql}, sum(r.bills_one), total(r.amount_sum), total(r.bill_sq_one) "
            f"FROM {where.table} AS r WHERE {where.sql} GROUP BY 1"
        )
        out: dict[Any, tuple[int, float, float]] = {}
        for g, n, s_, q in conn.execute(sql, (*key_sql.params, *where.params)):
            out[g] = (int(n or 0), float(s_ or 0.0), float(q or 0.0))
        if st.split_bills:
            qb = QueryBuilder(flt, periods)
            stmt = qb.build(
                [qb.key(key), Sql("total(e.order_amount)")],
                tail="GROUP BY 1, e.bill_id",
                from_sql=_SPLIT_BILL_EVENTS,
            )
            for g, t in conn.execute(stmt.sql, stmt.params):
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
                    where = rollup_query.compile_where(conn, flt, periods, st)
                    if where is None:
                        continue
                    out[i] = []
                    parts.append(
                        f"SELECT {i} AS s, {int(limit)} AS lim, r.ts_epoch AS t, r.first_event_id AS first_id, "
                        "r.last_event_id AS last_id "
                        f"FROM {where.table} AS r WHERE {where.sql}"
                    )
                    params.extend(where.params)
                picked: dict[int, list[str]] = {}
                if parts:
                    # per request: rows numbered in time, the evenly spaced row numbers kept (all
                    # rows when there are no more than the limit: then first and last events)
                    sql = (
                        "SELECT s, lim, rn, cnt, first_id, last_id FROM (SELECT s, lim, first_id, last_id, "
                        "row_number() OVER (PARTITION BY s ORDER BY t, first_id) AS rn, "
                        "count(*) OVER (PARTITION BY s) AS cnt FROM (" + " UNION ALL ".join(parts) + ")) "
                        "WHERE cnt <= lim OR (lim = 1 AND rn = cnt) OR (lim > 1 AND "
                        "((((rn - 1) * (lim - 1) + cnt - 2) / (cnt - 1)) * (cnt - 1)) / (lim - 1) = rn - 1) "
                        "ORDER BY s, rn"
                    )
                    for i, lim, rn, cnt, lo, hi in conn.execute(sql, params):
                        ids = picked.setdefault(int(i), [])
                        cite = (lo, hi) if cnt < lim else ((lo,) if rn == 1 else (hi,))
                        ids.extend(x for x in cite if x not in ids)
                picked = {i: _spread(ids, requests[i][2]) for i, ids in picked.items()}
                rows_of = rows_by_event_id(conn, [x for ids in picked.values() for x in ids])
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
            else:
                row = conn.execute(
                    f"SELECT min(r.first_ts), max(r.last_ts), sum(r.n) FROM {where.table} AS r "
                    f"WHERE {where.sql}",
                    where.params,
                ).fetchone()
        if row is None:
            return self.events.coverage(flt)
        lo, hi, n = row
        return Coverage(earliest=parse_ts(lo), latest=parse_ts(hi), count=int(n or 0))

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


#: an event-level statement restricted to the split bills' lines, read through the bill index
#: (CROSS JOIN fixes the loop order: the few split bills outside, their events inside)
_SPLIT_BILL_EVENTS = (
    "rollup_split_bills AS sb CROSS JOIN events AS e INDEXED BY events_bill "
    "ON e.bill_id = sb.bill_id AND e.bill_id IS NOT NULL"
)


def _spread(ids: Sequence[str], limit: int) -> list[str]:
    """At most ``limit`` of ``ids`` (in time order), evenly spaced, the first and last kept."""
    if len(ids) <= limit:
        return list(ids)
    if limit == 1:
        return [ids[-1]]
    return [ids[(i * (len(ids) - 1)) // (limit - 1)] for i in range(limit)]
