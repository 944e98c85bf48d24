"""The store's side of the EventSource port: the analysis engine's questions answered in SQL.

Owns :class:`SqlEventSource`, which implements :class:`edge.analysis.source.EventSource` over a
:class:`edge.memory.store.Store` (anything with ``read()`` yielding a reader connection,
``timezone(store_id=None)`` and ``embed_texts(texts)``). Every filter and key is compiled by
:mod:`edge.memory.filters`, so aggregation, evidence, coverage and retrieval agree on what a
filter means. Called by the analysis engine through the port (``adamm ask``, the demo, the
daemon's answers).

Aggregation is one grouped query: each component is a conditional aggregate restricted to the
event types it is about (e.g. footfall sums ``person_count`` over ``customer_enter`` rows), so
one pass serves every metric. A group is reported when it holds at least one event that a
requested component is about (every event, for ``events``/``days``/``first_ts``/...); when every
requested component is about known event types, ``event_type IN (...)`` is added to the WHERE so
the ``(event_type, ts_epoch)`` index drives the scan (the same rule, computed faster).
"""

from __future__ import annotations

import json
import logging
import threading
import weakref
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import apsw
import orjson

from edge.analysis.source import (
    COMPONENTS,
    AggResult,
    Coverage,
    EventFilter,
    EventRow,
    Period,
    Vocabulary,
)
from edge.errors import AdammError, UnknownKeyError, UsageError
from edge.memory import rollup
from edge.memory.filters import QueryBuilder, Sql, normalise_promotion
from edge.memory.migrations import WELL_KNOWN_STATS

logger = logging.getLogger(__name__)


#: component -> (SQL aggregate over ``events AS e``, the event types it is about or None for all)
COMPONENT_SQL: dict[str, tuple[str, tuple[str, ...] | None]] = {
    "events": ("count(*)", None),
    "footfall": (
        "sum(CASE WHEN e.event_type = 'customer_enter' THEN coalesce(e.person_count, 1) ELSE 0 END)",
        ("customer_enter",),
    ),
    "enter_events": ("sum(e.event_type = 'customer_enter')", ("customer_enter",)),
    # distinct bill ids plus one bill per purchase event without one: COALESCE(bill_id, event_id)
    # without reading event_id (which keeps covering indexes usable)
    "bills": (
        "(count(DISTINCT CASE WHEN e.event_type = 'purchase' THEN e.bill_id END)"
        " + sum(e.event_type = 'purchase' AND e.bill_id IS NULL))",
        ("purchase",),
    ),
    "purchase_events": ("sum(e.event_type = 'purchase')", ("purchase",)),
    "revenue": ("total(CASE WHEN e.event_type = 'purchase' THEN e.order_amount END)", ("purchase",)),
    "revenue_sq": (
        "total(CASE WHEN e.event_type = 'purchase' THEN e.order_amount * e.order_amount END)",
        ("purchase",),
    ),
    "dwell_sum": ("total(CASE WHEN e.event_type = 'dwell' THEN e.dwell_seconds END)", ("dwell",)),
    "dwell_sq": (
        "total(CASE WHEN e.event_type = 'dwell' THEN e.dwell_seconds * e.dwell_seconds END)",
        ("dwell",),
    ),
    "dwell_n": ("count(CASE WHEN e.event_type = 'dwell' THEN e.dwell_seconds END)", ("dwell",)),
    "queue_sum": (
        "total(CASE WHEN e.event_type = 'checkout_queue' THEN e.queue_length END)",
        ("checkout_queue",),
    ),
    "queue_sq": (
        "total(CASE WHEN e.event_type = 'checkout_queue' THEN e.queue_length * e.queue_length END)",
        ("checkout_queue",),
    ),
    "queue_n": (
        "count(CASE WHEN e.event_type = 'checkout_queue' THEN e.queue_length END)",
        ("checkout_queue",),
    ),
    "complaints": ("sum(e.event_type = 'complaint')", ("complaint",)),
    "emotion_n": ("count(e.speech_emotion)", None),
    "negative_n": (f"sum(CASE WHEN {rollup.NEGATIVE_EMOTION} THEN 1 ELSE 0 END)", None),
    "staff_error_n": ("sum(e.event_type = 'staff_error')", ("staff_error",)),
    "staff_op_n": ("sum(e.event_type = 'staff_operation')", ("staff_operation",)),
    "days": ("count(DISTINCT e.store_id || '|' || e.local_date)", None),
    "hour_sum": ("sum(e.local_hour)", None),
    "hour_sq": ("sum(e.local_hour * e.local_hour)", None),
    "first_ts": ("min(e.ts)", None),
    "last_ts": ("max(e.ts)", None),
}
assert set(COMPONENT_SQL) == set(COMPONENTS), "every component of the port has its SQL"

#: well-known TEXT stats columns listed in the vocabulary (bill ids are not vocabulary)
_VOCAB_COLUMNS = tuple(k for k, t in WELL_KNOWN_STATS.items() if t == "TEXT" and k != "bill_id")
VOCAB_VALUES_PER_KEY = 50
VOCAB_ENTITIES = 200

_vocab_cache: weakref.WeakKeyDictionary[Any, tuple[Any, Vocabulary]] = weakref.WeakKeyDictionary()
_vocab_lock = threading.Lock()


def _parse_ts(ts: str | None) -> datetime | None:
    if ts is None:
        return None
    return datetime.fromisoformat(ts).astimezone(UTC)


class SqlEventSource:
    """:class:`~edge.analysis.source.EventSource` over a store's SQLite memory.

    With ``use_rollup`` (the default) aggregations, coverage, bill statistics and evidence are
    read from the hourly rollup (:mod:`edge.memory.rollup`, brought up to date first) whenever the
    filter and keys are expressible on it; otherwise, and for a store that cannot write the
    rollup, from the events. Both paths give the same answers.
    """

    def __init__(self, store: Any, *, use_rollup: bool = True) -> None:
        self.store = store
        self.use_rollup = use_rollup

    # -- the rollup ------------------------------------------------------------------------------

    def rollup_state(self) -> rollup.State | None:
        """The rollup's state once it holds every event; ``None`` when it cannot be used."""
        if not self.use_rollup:
            return None
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
        """The one grouped statement :meth:`aggregate` runs over events (for EXPLAIN and benchmarks)."""
        _check_aggregate(keys, components, periods)
        qb = QueryBuilder(flt, periods)
        key_sql = [qb.key(k) for k in keys]
        select = [*key_sql, *(Sql(self._component_sql(c, flt)) for c in components)]
        extra: list[Sql] = []
        types = self._pushdown_types(components)
        if types is not None:
            extra.append(Sql(f"e.event_type IN ({', '.join('?' * len(types))})", tuple(types)))
        # without keys SQL returns one row even over nothing: report it only when it holds events
        tail = (
            f"GROUP BY {', '.join(str(i + 1) for i in range(len(keys)))}" if keys else "HAVING count(*) > 0"
        )
        return qb.build(select, extra_where=extra, tail=tail)

    def aggregate(
        self,
        flt: EventFilter,
        keys: Sequence[str],
        components: Sequence[str],
        periods: Sequence[Period] = (),
    ) -> AggResult:
        """One grouped query; see the module docstring for which groups are reported."""
        _check_aggregate(keys, components, periods)
        st = self.rollup_state()
        with self.store.read() as conn, conn:
            raw = self._aggregate_rollup(conn, st, flt, keys, components, periods) if st else None
            if raw is None:  # the event-level statement, built only when the rollup cannot answer
                stmt = self.aggregate_sql(flt, keys, components, periods)
                raw = conn.execute(stmt.sql, stmt.params).fetchall()
        rows = tuple(self._row(r, keys, components) for r in raw)
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
        where = rollup.compile_where(conn, flt, periods, st, keys)
        if where is None:
            return None
        select: list[Sql] = []
        for k in keys:
            got = rollup.key_sql(k, periods)
            if got is None:
                return None
            select.append(got)
        for c in components:
            if c == "bills":
                col = rollup.bills_column(keys, where)
                if col is None:
                    return None
                select.append(Sql(f"sum(CASE WHEN r.event_type = 'purchase' THEN r.{col} ELSE 0 END)"))
            else:
                select.append(Sql(rollup.COMPONENT_SQL[c]))
        conds = [where.sql]
        params: list[Any] = [p for s_ in select for p in s_.params]
        params.extend(where.params)
        types = self._pushdown_types(components)
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
        with self.store.read() as conn, conn:
            got = self._bill_stats_rollup(conn, st, flt, key, periods) if st else None
            if got is not None:
                return got
        res = self.aggregate(flt.narrowed(event_types=("purchase",)), [key, "bill"], ["revenue"], periods)
        out: dict[Any, tuple[int, float, float]] = {}
        for g, _bill, revenue in res.rows:
            n, s_, q = out.get(g, (0, 0.0, 0.0))
            t = float(revenue or 0.0)
            out[g] = (n + 1, s_ + t, q + t * t)
        return out

    def _bill_stats_rollup(
        self, conn: Any, st: rollup.State, flt: EventFilter, key: str, periods: Sequence[Period]
    ) -> dict[Any, tuple[int, float, float]] | None:
        if key in rollup.CATEGORY_KEYS:
            return None  # bills split by category: their per-category totals are not stored
        flt = flt.narrowed(event_types=("purchase",))
        where = rollup.compile_where(conn, flt, periods, st, [key])
        key_sql = rollup.key_sql(key, periods)
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

    def _component_sql(self, name: str, flt: EventFilter) -> str:
        if name == "days" and self._single_store(flt):
            return "count(DISTINCT e.local_date)"  # one store: skip building store|date strings
        return COMPONENT_SQL[name][0]

    def _single_store(self, flt: EventFilter) -> bool:
        if len(set(flt.store_ids)) == 1:
            return True
        with self.store.read() as conn:
            (n,) = conn.execute("SELECT count(*) FROM stores").fetchone() or (0,)
        return int(n) <= 1

    @staticmethod
    def _pushdown_types(components: Sequence[str]) -> tuple[str, ...] | None:
        types: set[str] = set()
        for c in components:
            about = COMPONENT_SQL[c][1]
            if about is None:
                return None
            types.update(about)
        return tuple(sorted(types)) if types else None

    @staticmethod
    def _row(r: Sequence[Any], keys: Sequence[str], components: Sequence[str]) -> tuple[Any, ...]:
        out: list[Any] = []
        for i, k in enumerate(keys):
            v = r[i]
            if k == "is_weekend" and v is not None:
                v = bool(v)
            elif k.startswith("attr:") and k[5:] not in WELL_KNOWN_STATS and isinstance(v, float):
                v = int(v) if v.is_integer() else v
            out.append(v)
        for j, c in enumerate(components):
            v = r[len(keys) + j]
            if v is None and c not in ("first_ts", "last_ts"):
                v = 0
            out.append(v)
        return tuple(out)

    # -- evidence and coverage -------------------------------------------------------------------

    def sample_events(
        self, flt: EventFilter, limit: int, periods: Sequence[Period] = ()
    ) -> tuple[list[EventRow], int]:
        """Up to ``limit`` events spread evenly (by rank in time) over the matching set, the
        earliest and latest included, most recent first; and the number that match."""
        if limit < 0:
            raise UsageError(f"limit must not be negative, got {limit}")
        qb = QueryBuilder(flt, periods)
        count = qb.build([Sql("count(*)")])
        with self.store.read() as conn, conn:
            (total,) = conn.execute(count.sql, count.params).fetchone() or (0,)
            total = int(total)
            if total == 0 or limit == 0:
                return [], total
            if total <= limit:
                stmt = QueryBuilder(flt, periods).build(
                    [Sql("e.id")], tail="ORDER BY e.ts_epoch DESC, e.id DESC"
                )
                ids = [int(r[0]) for r in conn.execute(stmt.sql, stmt.params)]
            else:
                if limit == 1:
                    wanted = [total]
                else:
                    wanted = sorted({1 + (i * (total - 1)) // (limit - 1) for i in range(limit)})
                inner = QueryBuilder(flt, periods).build(
                    [
                        Sql("e.id AS id"),
                        Sql("e.ts_epoch AS t"),
                        Sql("row_number() OVER (ORDER BY e.ts_epoch, e.id) AS rn"),
                    ]
                )
                sql = (
                    f"SELECT id FROM ({inner.sql}) WHERE rn IN (SELECT value FROM json_each(?)) "
                    "ORDER BY t DESC, id DESC"
                )
                ids = [int(r[0]) for r in conn.execute(sql, (*inner.params, json.dumps(wanted)))]
            return fetch_rows(conn, ids), total

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
                    where = rollup.compile_where(conn, flt, periods, st)
                    if where is None:
                        continue
                    out[i] = []
                    parts.append(
                        f"SELECT {i} AS s, {int(limit)} AS lim, r.ts_epoch AS t, r.first_id, r.last_id "
                        f"FROM {where.table} AS r WHERE {where.sql}"
                    )
                    params.extend(where.params)
                picked: dict[int, list[int]] = {}
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
                rows_of = rows_by_id(conn, [x for ids in picked.values() for x in ids])
                for i, ids in picked.items():
                    evs = [rows_of[x] for x in ids if x in rows_of]
                    out[i] = sorted(evs, key=lambda e: e.timestamp, reverse=True)
        return [
            got if got is not None else self.sample_events(flt, limit, periods)[0]
            for got, (flt, periods, limit) in zip(out, requests, strict=True)
        ]

    def coverage(self, flt: EventFilter) -> Coverage:
        """Earliest/latest timestamp and count matching ``flt`` without its time window."""
        whole = flt.narrowed(since=None, until=None)
        st = self.rollup_state()
        with self.store.read() as conn, conn:
            where = rollup.compile_where(conn, whole, (), st) if st else None
            if where is not None:
                row = conn.execute(
                    f"SELECT min(r.first_ts), max(r.last_ts), sum(r.n) FROM {where.table} AS r "
                    f"WHERE {where.sql}",
                    where.params,
                ).fetchone()
            else:
                stmt = QueryBuilder(whole).build([Sql("min(e.ts)"), Sql("max(e.ts)"), Sql("count(*)")])
                row = conn.execute(stmt.sql, stmt.params).fetchone()
        lo, hi, n = row if row is not None else (None, None, 0)
        return Coverage(earliest=_parse_ts(lo), latest=_parse_ts(hi), count=int(n or 0))

    # -- vocabulary ------------------------------------------------------------------------------

    def vocabulary(self) -> Vocabulary:
        """The memory's words; cached per store until events are added or removed, and persisted
        with its change marker (:mod:`edge.memory.startup_cache`) so a new process reads it back."""
        from edge.memory import startup_cache

        marker: str | None = None
        with self.store.read() as conn, conn:
            marker = startup_cache.change_marker(conn)
            if marker is not None:
                version: Any = marker
            else:  # not migrated: max(id) and count(*), two statements (max() keeps its index lookup)
                (top,) = conn.execute("SELECT coalesce(max(id), 0) FROM events").fetchone() or (0,)
                (n,) = conn.execute("SELECT count(*) FROM events").fetchone() or (0,)
                version = (int(top), int(n))
            with _vocab_lock:
                hit = _cached(self.store)
            if hit is not None and hit[0] == version:
                return hit[1]
            stored = None
            if marker is not None:
                stored = startup_cache.load_vocabulary(conn, marker, str(self.store.timezone()))
            vocab = stored if stored is not None else self._build_vocabulary(conn)
        if marker is not None and stored is None:
            startup_cache.save_vocabulary(self.store, marker, vocab)
        with _vocab_lock:
            _store_cache(self.store, (version, vocab))
        return vocab

    def _build_vocabulary(self, conn: Any) -> Vocabulary:
        store_ids = tuple(
            str(r[0])
            for r in conn.execute(
                "SELECT store_id FROM stores UNION SELECT DISTINCT store_id FROM events ORDER BY 1"
            )
        )
        event_types = tuple(
            str(r[0])
            for r in conn.execute(
                "SELECT event_type FROM events GROUP BY event_type ORDER BY count(*) DESC, event_type"
            )
        )
        attributes: dict[str, tuple[str, ...]] = {}
        for col in _VOCAB_COLUMNS:  # names from the schema's own list, never from input
            values = [
                r[0]
                for r in conn.execute(
                    f"SELECT {col} FROM events WHERE {col} IS NOT NULL GROUP BY {col} "
                    f"ORDER BY count(*) DESC, {col} LIMIT ?",
                    (VOCAB_VALUES_PER_KEY,),
                )
            ]
            if col == "promotion":
                values = list(
                    dict.fromkeys(v for v in (normalise_promotion(x) for x in values) if v is not None)
                )
            if values:
                attributes[col] = tuple(str(v) for v in values)
        for key, value in conn.execute(
            "SELECT key, value_text FROM ("
            "SELECT key, value_text, row_number() OVER (PARTITION BY key ORDER BY n DESC, value_text) AS rn "
            "FROM (SELECT key, value_text, count(*) AS n FROM event_attrs GROUP BY key, value_text)) "
            "WHERE rn <= ? ORDER BY key, rn",
            (VOCAB_VALUES_PER_KEY + 1,),
        ):
            vals = attributes.setdefault(str(key), ())
            if value is not None and len(vals) < VOCAB_VALUES_PER_KEY:
                attributes[str(key)] = (*vals, str(value))
        entities = tuple(
            str(r[0])
            for r in conn.execute(
                "SELECT entity FROM entities GROUP BY entity ORDER BY count(*) DESC, entity LIMIT ?",
                (VOCAB_ENTITIES,),
            )
        )
        lo, hi = conn.execute("SELECT min(ts), max(ts) FROM events").fetchone() or (None, None)
        return Vocabulary(
            timezone=str(self.store.timezone()),
            store_ids=store_ids,
            event_types=event_types,
            attributes=attributes,
            entities=entities,
            earliest=_parse_ts(lo),
            latest=_parse_ts(hi),
        )

    # -- retrieval and encoders ------------------------------------------------------------------

    def retrieve(self, text: str | None, flt: EventFilter, k: int) -> list[EventRow]:
        """Hybrid retrieval (hard filters first, then vector ranking of the survivors)."""
        from edge.memory.retrieval import hybrid_search

        return hybrid_search(self.store, text, flt, k)

    def embed_texts(self, texts: Sequence[str]) -> Any:
        """Unit-norm text vectors from the store's text encoder (None when it has none)."""
        return self.store.embed_texts(texts)


def _cached(store: Any) -> tuple[Any, Vocabulary] | None:
    try:
        return _vocab_cache.get(store)
    except TypeError:  # not weak-referenceable: keep it on the instance
        got: tuple[Any, Vocabulary] | None = getattr(store, "_adamm_vocab_cache", None)
        return got


def _store_cache(store: Any, value: tuple[Any, Vocabulary]) -> None:
    try:
        _vocab_cache[store] = value
    except TypeError:
        store._adamm_vocab_cache = value


#: an event-level statement restricted to the split bills' lines, read through the bill index
#: (CROSS JOIN fixes the loop order: the few split bills outside, their events inside)
_SPLIT_BILL_EVENTS = (
    "rollup_split_bills AS sb CROSS JOIN events AS e INDEXED BY events_bill "
    "ON e.bill_id = sb.bill_id AND e.bill_id IS NOT NULL"
)


def _check_aggregate(keys: Sequence[str], components: Sequence[str], periods: Sequence[Period]) -> None:
    unknown = [c for c in components if c not in COMPONENT_SQL]
    if unknown:
        raise UnknownKeyError(
            f"unknown component(s) {', '.join(map(repr, unknown))}: use {', '.join(COMPONENT_SQL)}"
        )
    if not components and not keys:
        raise UnknownKeyError("aggregate needs at least one key or component")
    if len(set(keys)) != len(keys):
        raise UnknownKeyError(f"keys repeat: {list(keys)}")
    if "period" in keys and not periods:
        raise UnknownKeyError("the key 'period' needs the query's periods")


def _spread(ids: Sequence[int], limit: int) -> list[int]:
    """At most ``limit`` of ``ids`` (in time order), evenly spaced, the first and last kept."""
    if len(ids) <= limit:
        return list(ids)
    if limit == 1:
        return [ids[-1]]
    return [ids[(i * (len(ids) - 1)) // (limit - 1)] for i in range(limit)]


#: the result events, a row each: rowid, event_id, ts, type, store, text, stats JSON and the raw_refs
#: as a JSON array in ``seq`` order (the ordered subquery reads the primary key in order, so no
#: sort is needed); ``{}``: the id placeholders
_FETCH_SQL = (
    "SELECT e.id, e.event_id, e.ts, e.event_type, e.store_id, e.text, e.stats_json, "
    "(SELECT json_group_array(s.ref) FROM "
    "(SELECT r.ref FROM raw_refs AS r WHERE r.event_rowid = e.id ORDER BY r.seq) AS s) "
    "FROM events AS e WHERE e.id IN ({})"
)
#: ids bound per statement (SQLite's default limit on host parameters is far above)
_FETCH_CHUNK = 500


def rows_by_id(
    conn: Any, ids: Sequence[int], scores: Mapping[int, tuple[float, float, float]] | None = None
) -> dict[int, EventRow]:
    """EventRows (without scores) of the events with these ``events.id`` values, by id (ids no
    longer present are missing): one statement per 500 ids, ids bound, JSON parsed by orjson.
    ``scores``: id -> (score, cosine, attr_match) of search hits, rounded into the rows."""
    found: dict[int, EventRow] = {}
    wanted = [int(i) for i in ids]
    loads = orjson.loads  # exact here: import keeps integers within 64 bits
    for at in range(0, len(wanted), _FETCH_CHUNK):
        part = wanted[at : at + _FETCH_CHUNK]
        for rowid, event_id, ts, event_type, store_id, text, stats_json, refs in conn.execute(
            _FETCH_SQL.format(",".join("?" * len(part))), part
        ):
            stats = loads(stats_json) if stats_json else None
            sc = scores.get(rowid) if scores else None
            found[rowid] = EventRow(
                event_id=event_id,
                timestamp=ts,
                event_type=event_type,
                store_id=store_id,
                raw_ref=tuple(loads(refs)),
                text=text,
                stats=stats if isinstance(stats, dict) else {},
                score=round(sc[0], 6) if sc else None,
                cosine=round(sc[1], 6) if sc else None,
                attr_match=round(sc[2], 6) if sc else None,
            )
    return found


def fetch_rows(
    conn: Any, ids: Sequence[int], scores: Mapping[int, tuple[float, float, float]] | None = None
) -> list[EventRow]:
    """EventRows for events.id values, in the order given (missing ids are skipped); ``scores`` as
    :func:`rows_by_id` takes them."""
    wanted = [int(i) for i in ids]
    rows = rows_by_id(conn, wanted, scores)
    return [rows[i] for i in wanted if i in rows]
