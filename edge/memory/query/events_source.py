"""The store's events as an analysis source: the engine's questions answered in SQL over
``events``.

Owns :class:`EventsSource`, which implements :class:`edge.analysis.source.AggregateSource` (and
the bill-statistics and retrieval capabilities) over a :class:`edge.memory.store.Store`
(anything with ``read()`` yielding a reader connection, ``timezone(store_id=None)`` and
``embed_texts(texts)``), and the memory's vocabulary (built from the events and from the rollup's
dimensions, so values that only closed days still hold are not lost). Every filter and key is
compiled by :mod:`edge.memory.query.filters`, so aggregation, evidence, coverage and retrieval agree on
what a filter means. The store's default source is :class:`edge.memory.query.rollup_source.RollupSource`,
which reads the rollup and comes here for what the rollup cannot express.

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
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from edge.analysis.source import (
    AGGREGATE,
    BILL_STATS,
    COMPONENTS,
    RETRIEVAL,
    AggResult,
    Coverage,
    EventFilter,
    EventRow,
    Period,
    StoreZones,
    Vocabulary,
    check_aggregate_args,
    filter_conditions,
    frame_instant,
)
from edge.errors import UsageError
from edge.memory.db.migrations import WELL_KNOWN_STATS
from edge.memory.query.filters import QueryBuilder, Sql, normalise_promotion
from edge.memory.query.rows import fetch_rows
from edge.memory.rollup import build as rollup
from edge.memory.rollup.build import NEGATIVE_EMOTION

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
    "negative_n": (f"sum(CASE WHEN {NEGATIVE_EMOTION} THEN 1 ELSE 0 END)", None),
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


def parse_ts(ts: str | None) -> datetime | None:
    if ts is None:
        return None
    return datetime.fromisoformat(ts).astimezone(UTC)


class EventsSource:
    """:class:`~edge.analysis.source.AggregateSource` over a store's ``events`` table."""

    capabilities: frozenset[str] = frozenset({AGGREGATE, BILL_STATS, RETRIEVAL})

    def __init__(self, store: Any) -> None:
        self.store = store

    def zones(self, flt: EventFilter | None = None) -> StoreZones | None:
        """The stores' zones (``stores``; the store's default zone for any other), read only for
        a filter with a per-store local window (``None`` otherwise: nothing to apply)."""
        if flt is not None and flt.wall_clock_zone is None:
            return None
        with self.store.read() as conn:
            return StoreZones(str(self.store.timezone()), _store_zones(conn))

    # -- aggregation -----------------------------------------------------------------------------

    def aggregate_sql(
        self,
        flt: EventFilter,
        keys: Sequence[str],
        components: Sequence[str],
        periods: Sequence[Period] = (),
    ) -> Sql:
        """The one grouped statement :meth:`aggregate` runs over events (for EXPLAIN and benchmarks)."""
        check_aggregate(keys, components, periods)
        qb = QueryBuilder(flt, periods, zones=self.zones(flt))
        key_sql = [qb.key(k) for k in keys]
        select = [*key_sql, *(Sql(self._component_sql(c, flt)) for c in components)]
        extra: list[Sql] = []
        types = pushdown_types(components)
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
        stmt = self.aggregate_sql(flt, keys, components, periods)
        with self.store.read() as conn, conn:
            raw = conn.execute(stmt.sql, stmt.params).fetchall()
        return AggResult(columns=(*keys, *components), rows=tuple(row_of(r, keys, components) for r in raw))

    def bill_stats(
        self, flt: EventFilter, key: str, periods: Sequence[Period] = ()
    ) -> dict[Any, tuple[int, float, float]]:
        """Per group of ``key``: ``(bills, sum, sum of squares)`` of the bill totals of the
        purchase events matching ``flt`` (a bill's total within the group; a purchase without a
        bill id is its own bill). The moments of ``avg_order_value``'s unit samples."""
        res = self.aggregate(flt.narrowed(event_types=("purchase",)), [key, "bill"], ["revenue"], periods)
        out: dict[Any, tuple[int, float, float]] = {}
        for g, _bill, revenue in res.rows:
            n, s_, q = out.get(g, (0, 0.0, 0.0))
            t = float(revenue or 0.0)
            out[g] = (n + 1, s_ + t, q + t * t)
        return out

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

    # -- evidence and coverage -------------------------------------------------------------------

    def sample_events(
        self, flt: EventFilter, limit: int, periods: Sequence[Period] = ()
    ) -> tuple[list[EventRow], int]:
        """Up to ``limit`` events spread evenly (by rank in time) over the matching set, the
        earliest and latest included, most recent first; and the number that match."""
        if limit < 0:
            raise UsageError(f"limit must not be negative, got {limit}")
        zones = self.zones(flt)
        qb = QueryBuilder(flt, periods, zones=zones)
        count = qb.build([Sql("count(*)")])
        with self.store.read() as conn, conn:
            (total,) = conn.execute(count.sql, count.params).fetchone() or (0,)
            total = int(total)
            if total == 0 or limit == 0:
                return [], total
            if total <= limit:
                stmt = QueryBuilder(flt, periods, zones=zones).build(
                    [Sql("e.id")], tail="ORDER BY e.ts_epoch DESC, e.id DESC"
                )
                ids = [int(r[0]) for r in conn.execute(stmt.sql, stmt.params)]
            else:
                if limit == 1:
                    wanted = [total]
                else:
                    wanted = sorted({1 + (i * (total - 1)) // (limit - 1) for i in range(limit)})
                inner = QueryBuilder(flt, periods, zones=zones).build(
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

    def newest_events(self, flt: EventFilter, limit: int) -> tuple[list[EventRow], int]:
        """The ``limit`` most recent events matching ``flt``, newest first; and the number that
        match (the manager's Events list: what happened last, not a sample over the months)."""
        if limit < 0:
            raise UsageError(f"limit must not be negative, got {limit}")
        zones = self.zones(flt)
        count = QueryBuilder(flt, zones=zones).build([Sql("count(*)")])
        stmt = QueryBuilder(flt, zones=zones).build(
            [Sql("e.id")], tail=f"ORDER BY e.ts_epoch DESC, e.id DESC LIMIT {int(limit)}"
        )
        with self.store.read() as conn, conn:
            (total,) = conn.execute(count.sql, count.params).fetchone() or (0,)
            if not total or limit == 0:
                return [], int(total or 0)
            ids = [int(r[0]) for r in conn.execute(stmt.sql, stmt.params)]
            return fetch_rows(conn, ids), int(total)

    def applied(self, flt: EventFilter) -> frozenset[str]:
        """Every condition of ``flt``: each is a condition of the events' SQL (any stats key as an
        attribute, entities through their table, windows to the second)."""
        return frozenset(filter_conditions(flt))

    def coverage(self, flt: EventFilter) -> Coverage:
        """Earliest/latest timestamp and count matching ``flt`` without its time window."""
        whole = flt.narrowed(since=None, until=None)
        select = [Sql("min(e.ts)"), Sql("max(e.ts)"), Sql("count(*)")]
        if flt.wall_clock_zone is not None:  # per store, placed in the window's frame
            stmt = QueryBuilder(whole).build([Sql("e.store_id"), *select], tail="GROUP BY 1")
            with self.store.read() as conn, conn:
                rows = conn.execute(stmt.sql, stmt.params).fetchall()
            return framed_coverage(rows, self.zones(), flt.wall_clock_zone)
        stmt = QueryBuilder(whole).build(select)
        with self.store.read() as conn, conn:
            row = conn.execute(stmt.sql, stmt.params).fetchone()
        lo, hi, n = row if row is not None else (None, None, 0)
        return Coverage(earliest=parse_ts(lo), latest=parse_ts(hi), count=int(n or 0))

    # -- vocabulary ------------------------------------------------------------------------------

    def vocabulary(self) -> Vocabulary:
        """The memory's words; cached per store until events are added or removed, and persisted
        with its change marker (:mod:`edge.memory.caches`) so a new process reads it back."""
        from edge.memory import caches as startup_cache

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
                if stored is not None:
                    stored = replace(stored, timezones=_store_zones(conn))
            vocab = stored if stored is not None else self._build_vocabulary(conn)
        if marker is not None and stored is None:
            startup_cache.save_vocabulary(self.store, marker, vocab)
        with _vocab_lock:
            _store_cache(self.store, (version, vocab))
        return vocab

    def _build_vocabulary(self, conn: Any) -> Vocabulary:
        held = _closed_days_held(conn)
        store_ids = tuple(
            str(r[0])
            for r in conn.execute(
                "SELECT store_id FROM stores UNION SELECT DISTINCT store_id FROM events "
                + ("UNION SELECT DISTINCT store_id FROM rollup_days WHERE state = 'closed' " if held else "")
                + "ORDER BY 1"
            )
        )
        event_types = tuple(
            str(r[0])
            for r in conn.execute(
                "SELECT event_type FROM events GROUP BY event_type ORDER BY count(*) DESC, event_type"
            )
        )
        if held:  # types seen only in closed days' rollups come after the events' own
            event_types = _extend(event_types, conn, "event_type", rollup.COARSE, cap=None)
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
            got = tuple(str(v) for v in values)
            if held and col in rollup.ATTRIBUTE_COLUMNS:  # values only closed days still hold
                got = _extend(got, conn, col, rollup.TABLE, cap=VOCAB_VALUES_PER_KEY)
            if got:
                attributes[col] = got
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
        if held:  # the span of the memory includes closed days whose events are gone
            rlo, rhi = conn.execute(
                f"SELECT min(r.first_ts), max(r.last_ts) FROM {rollup.COARSE} AS r WHERE {rollup.CLOSED_ROW}"
            ).fetchone() or (
                None,
                None,
            )
            lo = min((t for t in (lo, rlo) if t is not None), default=None)
            hi = max((t for t in (hi, rhi) if t is not None), default=None)
        return Vocabulary(
            timezone=str(self.store.timezone()),
            timezones=_store_zones(conn),
            store_ids=store_ids,
            event_types=event_types,
            attributes=attributes,
            entities=entities,
            earliest=parse_ts(lo),
            latest=parse_ts(hi),
            keys_by_type=_keys_by_type(conn, held),
        )

    # -- retrieval and encoders ------------------------------------------------------------------

    def retrieve(self, text: str | None, flt: EventFilter, k: int) -> list[EventRow]:
        """Hybrid retrieval (hard filters first, then vector ranking of the survivors)."""
        from edge.memory.search.retrieval import hybrid_search

        return hybrid_search(self.store, text, flt, k)

    def embed_texts(self, texts: Sequence[str]) -> Any:
        """Unit-norm text vectors from the store's text encoder (None when it has none)."""
        return self.store.embed_texts(texts)


def framed_coverage(rows: Sequence[Sequence[Any]], zones: StoreZones | None, frame: str) -> Coverage:
    """Coverage from per-store ``(store_id, min ts, max ts, count)`` rows, each store's times
    placed in ``frame`` (:func:`~edge.analysis.source.frame_instant`)."""
    lo: datetime | None = None
    hi: datetime | None = None
    n = 0
    for sid, a, b, c in rows:
        z = zones.of(str(sid)) if zones is not None else frame
        ta, tb = parse_ts(a), parse_ts(b)
        if ta is not None:
            fa = frame_instant(ta, z, frame)
            lo = fa if lo is None else min(lo, fa)
        if tb is not None:
            fb = frame_instant(tb, z, frame)
            hi = fb if hi is None else max(hi, fb)
        n += int(c or 0)
    return Coverage(earliest=lo, latest=hi, count=n)


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


def check_aggregate(keys: Sequence[str], components: Sequence[str], periods: Sequence[Period]) -> None:
    check_aggregate_args(keys, components, periods, known=COMPONENT_SQL.keys(), check_keys=False)


def pushdown_types(components: Sequence[str]) -> tuple[str, ...] | None:
    """The event types every requested component is about (``None``: some is about every event)."""
    types: set[str] = set()
    for c in components:
        about = COMPONENT_SQL[c][1]
        if about is None:
            return None
        types.update(about)
    return tuple(sorted(types)) if types else None


def _store_zones(conn: Any) -> dict[str, str]:
    """store id -> IANA zone from the ``stores`` table."""
    return {str(s): str(z) for s, z in conn.execute("SELECT store_id, timezone FROM stores ORDER BY 1")}


def _closed_days_held(conn: Any) -> bool:
    """True when the rollup holds closed days (whose events may be gone); a memory from before
    migration 0007 opened read-only has none."""
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'rollup_days'").fetchone()
    if row is None:
        return False
    return conn.execute("SELECT 1 FROM rollup_days WHERE state = 'closed' LIMIT 1").fetchone() is not None


def _keys_by_type(conn: Any, held: bool) -> dict[str, tuple[str, ...]]:
    """Event type -> the stats keys some event of that type carries: one grouped pass over the
    well-known columns, one over ``event_attrs``, and (``held``) one over closed days' rollup rows,
    whose events may be gone."""
    found: dict[str, set[str]] = {}
    cols = tuple(WELL_KNOWN_STATS)  # names from the schema's own list, never from input
    counts = ", ".join(f"count({c})" for c in cols)
    for row in conn.execute(f"SELECT event_type, {counts} FROM events GROUP BY event_type"):
        found.setdefault(str(row[0]), set()).update(c for c, n in zip(cols, row[1:], strict=True) if n)
    for t, k in conn.execute(
        "SELECT e.event_type, x.key FROM event_attrs AS x JOIN events AS e ON e.id = x.event_rowid "
        "GROUP BY e.event_type, x.key"
    ):
        found.setdefault(str(t), set()).add(str(k))
    if held:
        cols = rollup.ATTRIBUTE_COLUMNS  # the rollup's own column list
        counts = ", ".join(f"count(r.{c})" for c in cols)
        for row in conn.execute(
            f"SELECT r.event_type, {counts} FROM {rollup.TABLE} AS r WHERE {rollup.CLOSED_ROW} GROUP BY r.event_type"
        ):
            found.setdefault(str(row[0]), set()).update(c for c, n in zip(cols, row[1:], strict=True) if n)
    return {t: tuple(sorted(keys)) for t, keys in sorted(found.items())}


def _extend(have: tuple[str, ...], conn: Any, col: str, table: str, *, cap: int | None) -> tuple[str, ...]:
    """``have`` followed by the other values of ``col`` in closed days' rollup rows (most events
    first), up to ``cap``."""
    if cap is not None and len(have) >= cap:
        return have
    out = list(have)
    seen = set(have)
    # names from the rollup's own column list, never from input
    for (v,) in conn.execute(
        f"SELECT r.{col} FROM {table} AS r WHERE r.{col} IS NOT NULL AND {rollup.CLOSED_ROW} "
        f"GROUP BY r.{col} ORDER BY sum(r.n) DESC, r.{col}"
    ):
        v = str(v)
        if v not in seen:
            seen.add(v)
            out.append(v)
            if cap is not None and len(out) >= cap:
                break
    return tuple(out)


def row_of(r: Sequence[Any], keys: Sequence[str], components: Sequence[str]) -> tuple[Any, ...]:
    """An aggregation row as the port reports it (booleans, integers, 0 for an empty sum)."""
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
