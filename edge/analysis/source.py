"""The port between the pure analysis engine and whatever holds the events.

The engine never touches SQL, files or the network. It asks an :class:`AggregateSource` for
aggregated *components* grouped by *keys*, for representative evidence, for coverage and for the
memory's vocabulary. ``edge.memory`` implements it over SQLite (aggregation pushed down into SQL
over indexed columns); the hub implements it over its own store. Everything crossing this port is
a plain frozen dataclass or tuple so both sides can be tested on their own.

Capabilities: every source implements :class:`AggregateSource` and declares in its
``capabilities`` frozenset which optional ports it also offers (:data:`BILL_STATS`,
:data:`SAMPLE_MANY`, :data:`RETRIEVAL`); the engine and operators ask :func:`has_capability` (or
the typed ``*_of`` helpers) and answer honestly without a capability the source lacks.

Keys (what rows are grouped by, and what :attr:`EventFilter.key_equals` can test):

- every plan dimension of ``plan.schema.json`` except ``period``: ``weather``, ``hour``,
  ``day_of_week`` (0 = Monday, store-local), ``is_weekend`` (bool), ``date`` (store-local
  ``YYYY-MM-DD``), ``week`` (store-local ISO week start date ``YYYY-MM-DD``, a Monday), ``month``
  (``YYYY-MM``), ``store_id``, ``product_category``, ``product_id``, ``zone``, ``source``,
  ``staff_id``, ``promotion``, ``event_type``, ``speech_emotion``;
- ``date_hour``: store-local ``YYYY-MM-DDTHH`` (the ``hour`` time bucket of a trend);
- ``bill``: ``COALESCE(stats.bill_id, event_id)`` (the unit of order value);
- ``event_id``: one row per event (use only with a narrow filter);
- ``period``: the label of the first of the query's ``periods`` whose window holds the event
  (events in none of them are left out);
- ``attr:<stats key>``: any stats key, well known or not (e.g. ``attr:topic``).

Time windows and time zones: ``EventFilter.since``/``until`` and the bounds of a query's
:class:`Period` s are timezone-aware instants. With ``EventFilter.wall_clock_zone`` unset they are
the same instants for every store (a memory, or a plan, whose stores share one zone). Set to an
IANA zone (the engine sets it to the zone it resolved the plan's times in, when the plan's stores
are in several zones), they are *wall-clock times*: each bound means the time of day that instant
reads in ``wall_clock_zone``, and each store applies it in its own zone (:func:`store_instant`),
so "October" or "上周" selects each store's own local days, and "the last 7 days" the same span of
each store's clock (its end, ``now`` read in ``wall_clock_zone``, included). Every source
implements it per store (:class:`StoreZones` gives a store's zone; :func:`zone_groups` the stores
by zone, for one SQL condition per zone), and :meth:`AggregateSource.coverage` of such a filter
reports its earliest/latest in that frame (:func:`frame_instant`: an event's local time as read in
``wall_clock_zone``), so coverage checks and bucket spans computed in that zone mean each store's
own local days. ``first_ts``/``last_ts`` stay UTC instants.

``weather`` and ``promotion`` are day attributes: an event without its own value takes the value
of its store-local day (the most frequent value among that store's events of that day; for
``promotion``, a day with a ``promotion_broadcast`` event or any truthy ``stats.promotion`` is a
promotion day, ``"true"``, else ``"false"``). Promotion values are normalised to the strings
``"true"`` / ``"false"`` unless the data names promotions (then the name is kept).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, Protocol, runtime_checkable
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from edge.errors import UnknownKeyError

Scalar = str | int | float | bool

#: The named aggregates an EventSource must compute per group. Each restricts itself to the
#: event types it is about, so one grouped query serves every metric.
COMPONENTS: dict[str, str] = {
    "events": "number of events",
    "footfall": "sum of stats.person_count over customer_enter events (1 where absent)",
    "enter_events": "number of customer_enter events",
    "bills": "number of distinct COALESCE(stats.bill_id, event_id) over purchase events",
    "purchase_events": "number of purchase events",
    "revenue": "sum of stats.order_amount over purchase events (0 when none)",
    "revenue_sq": "sum of squared stats.order_amount over purchase events",
    "dwell_sum": "sum of stats.dwell_seconds over dwell events",
    "dwell_sq": "sum of squared stats.dwell_seconds over dwell events",
    "dwell_n": "number of dwell events with stats.dwell_seconds",
    "queue_sum": "sum of stats.queue_length over checkout_queue events",
    "queue_sq": "sum of squared stats.queue_length over checkout_queue events",
    "queue_n": "number of checkout_queue events with stats.queue_length",
    "complaints": "number of complaint events",
    "emotion_n": "number of events with a stats.speech_emotion",
    "negative_n": "number of events whose stats.speech_emotion is negative or angry",
    "staff_error_n": "number of staff_error events",
    "staff_op_n": "number of staff_operation events",
    "days": "number of distinct (store_id, store-local date) pairs",
    "hour_sum": "sum of the store-local hour over the events",
    "hour_sq": "sum of the squared store-local hour over the events",
    "first_ts": "earliest timestamp (UTC ISO string)",
    "last_ts": "latest timestamp (UTC ISO string)",
}

#: component -> the event types it is about (None: every event)
COMPONENT_EVENT_TYPES: dict[str, tuple[str, ...] | None] = {
    "events": None,
    "footfall": ("customer_enter",),
    "enter_events": ("customer_enter",),
    "bills": ("purchase",),
    "purchase_events": ("purchase",),
    "revenue": ("purchase",),
    "revenue_sq": ("purchase",),
    "dwell_sum": ("dwell",),
    "dwell_sq": ("dwell",),
    "dwell_n": ("dwell",),
    "queue_sum": ("checkout_queue",),
    "queue_sq": ("checkout_queue",),
    "queue_n": ("checkout_queue",),
    "complaints": ("complaint",),
    "emotion_n": None,
    "negative_n": None,
    "staff_error_n": ("staff_error",),
    "staff_op_n": ("staff_operation",),
    "days": None,
    "hour_sum": None,
    "hour_sq": None,
    "first_ts": None,
    "last_ts": None,
}
assert set(COMPONENT_EVENT_TYPES) == set(COMPONENTS), "every component of the port has its meaning here"

KEYS: tuple[str, ...] = (
    "weather",
    "hour",
    "day_of_week",
    "is_weekend",
    "date",
    "week",
    "month",
    "store_id",
    "product_category",
    "product_id",
    "zone",
    "source",
    "staff_id",
    "promotion",
    "event_type",
    "speech_emotion",
    "date_hour",
    "bill",
    "event_id",
    "period",
)


def is_valid_key(key: str) -> bool:
    """True for a key of :data:`KEYS` or ``attr:<identifier>``."""
    if key in KEYS:
        return True
    if key.startswith("attr:"):
        name = key[5:]
        return name.isidentifier() and name.isascii()
    return False


@dataclass(frozen=True)
class Period:
    """A labelled half-open UTC window ``[since, until)``; ``None`` means unbounded."""

    label: str
    since: datetime | None
    until: datetime | None


@dataclass(frozen=True)
class EventFilter:
    """Hard filters; every field narrows (AND). Times are timezone-aware UTC.

    ``attributes`` and ``key_equals`` hold ``(key, values)`` pairs: the event matches when its
    value for that key is any of ``values``. ``attributes`` keys are stats keys (``weather``,
    ``zone``, ``topic`` ...; weather/promotion with the day fallback described above);
    ``key_equals`` keys are the grouping keys of this module (used to fetch evidence for one group
    or bucket).

    ``wall_clock_zone``: ``None`` (the bounds are instants, the same for every store) or the IANA
    zone whose wall clock ``since``/``until`` and the query's periods are read in, each store
    applying them in its own zone (module docstring). Narrowed copies keep it.
    """

    store_ids: tuple[str, ...] = ()
    event_types: tuple[str, ...] = ()
    since: datetime | None = None
    until: datetime | None = None
    hours: tuple[int, ...] = ()
    days_of_week: tuple[int, ...] = ()
    attributes: tuple[tuple[str, tuple[Scalar, ...]], ...] = ()
    entities: tuple[str, ...] = ()
    key_equals: tuple[tuple[str, tuple[Scalar, ...]], ...] = ()
    event_ids: tuple[str, ...] | None = None
    wall_clock_zone: str | None = None

    def narrowed(self, **changes: Any) -> EventFilter:
        """A copy with some fields replaced (``dataclasses.replace`` with a shorter name)."""
        from dataclasses import replace

        return replace(self, **changes)


def filter_conditions(flt: EventFilter) -> tuple[str, ...]:
    """The conditions ``flt`` sets, named as the plan's filters (``plan.schema.json``):
    ``store_id``, ``event_type``, ``time_range``, ``hours``, ``days_of_week``,
    ``attributes.<key>`` (one per attribute key) and ``entities``. What
    :meth:`AggregateSource.applied` reports on (``key_equals`` and ``event_ids`` are the operators'
    own narrowing, not the plan's)."""
    out: list[str] = []
    if flt.store_ids:
        out.append("store_id")
    if flt.event_types:
        out.append("event_type")
    if flt.since is not None or flt.until is not None:
        out.append("time_range")
    if flt.hours:
        out.append("hours")
    if flt.days_of_week:
        out.append("days_of_week")
    out.extend(f"attributes.{k}" for k, _ in flt.attributes)
    if flt.entities:
        out.append("entities")
    return tuple(dict.fromkeys(out))


@dataclass(frozen=True)
class AggResult:
    """Rows of a grouped aggregation: ``columns`` = keys then components, in request order."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]

    def column(self, name: str) -> list[Any]:
        i = self.columns.index(name)
        return [r[i] for r in self.rows]


@dataclass(frozen=True)
class EventRow:
    """One event as evidence or a retrieval hit."""

    event_id: str
    timestamp: str
    event_type: str
    store_id: str
    raw_ref: tuple[str, ...] = ()
    text: str | None = None
    score: float | None = None
    cosine: float | None = None
    attr_match: float | None = None
    stats: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Coverage:
    """What span of time the memory holds for a filter (ignoring its time window)."""

    earliest: datetime | None
    latest: datetime | None
    count: int


@dataclass(frozen=True)
class Vocabulary:
    """The memory's own words, so a new store's vocabulary works without code changes.

    ``timezone`` is the source's default zone (a single store's own; the zone the parser writes
    calendar ranges in); ``timezones`` maps store ids to their IANA zones where they differ or
    where the source holds several stores (a hub). A plan about one store resolves its windows in
    :meth:`zone_of` that store; a plan over stores in several zones (:meth:`is_multi_zone`) reads
    them on the default zone's wall clock, each store applying them in its own zone
    (``EventFilter.wall_clock_zone``, module docstring)."""

    timezone: str
    store_ids: tuple[str, ...] = ()
    event_types: tuple[str, ...] = ()
    #: stats key -> its most frequent distinct string values (capped per key)
    attributes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    entities: tuple[str, ...] = ()
    earliest: datetime | None = None
    latest: datetime | None = None
    #: store id -> IANA zone (stores not listed are in :attr:`timezone`)
    timezones: dict[str, str] = field(default_factory=dict)
    #: event type -> the stats keys its events carry (a value in some event of that type); empty
    #: when the source does not know (the parser then reads no value by which events carry it)
    keys_by_type: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def carried_by(self, key: str, event_types: Sequence[str]) -> bool | None:
        """True when events of some of ``event_types`` carry stats key ``key``; None when the
        source does not know which keys its event types carry."""
        if not self.keys_by_type:
            return None
        return any(key in self.keys_by_type.get(t, ()) for t in event_types)

    def zone_of(self, store_id: str | None) -> str:
        """The zone of one store (the default zone for ``None`` or an unlisted store)."""
        if store_id is None:
            return self.timezone
        return self.timezones.get(store_id, self.timezone)

    def zones(self, store_ids: Sequence[str] = ()) -> dict[str, str]:
        """store id -> zone for ``store_ids`` (every known store when empty)."""
        ids = store_ids or self.store_ids or tuple(self.timezones)
        return {s: self.zone_of(s) for s in ids}

    def is_multi_zone(self, store_ids: Sequence[str] = ()) -> bool:
        """True when the stores in question are in more than one zone."""
        return len(set(self.zones(store_ids).values())) > 1


# -- per-store local windows -----------------------------------------------------------------------


@lru_cache(maxsize=256)
def zone(name: str) -> ZoneInfo:
    """The IANA zone ``name`` (UTC when it is not one: never an error while answering)."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


def store_instant(t: datetime, frame: str, store_zone: str) -> datetime:
    """The UTC instant at which a store in ``store_zone`` reads the wall-clock time that instant
    ``t`` reads in ``frame`` (Python's ``fold=0``: the first of a repeated hour; a time a DST gap
    skips reads as the clock before the change would). ``t`` itself when the zones are one."""
    if store_zone == frame:
        return t.astimezone(UTC)
    wall = t.astimezone(zone(frame)).replace(tzinfo=None)
    return wall.replace(tzinfo=zone(store_zone)).astimezone(UTC)


def frame_instant(t: datetime, store_zone: str, frame: str) -> datetime:
    """The instant of zone ``frame`` that reads the wall-clock time instant ``t`` reads in
    ``store_zone`` (a store's event time placed in a per-store window's frame)."""
    return store_instant(t, store_zone, frame)


def store_window(
    since: datetime | None, until: datetime | None, frame: str | None, store_zone: str
) -> tuple[datetime | None, datetime | None]:
    """One store's window ``[since, until)`` as instants: the bounds as they are without a
    ``frame``, else read in ``frame`` and applied in ``store_zone``."""
    if frame is None:
        return since, until
    return (
        store_instant(since, frame, store_zone) if since is not None else None,
        store_instant(until, frame, store_zone) if until is not None else None,
    )


@dataclass(frozen=True)
class StoreZones:
    """Which zone each store is in: ``by_store`` (store id -> IANA zone), ``default`` for the
    stores not listed. What a source needs to apply a per-store window."""

    default: str
    by_store: Mapping[str, str] = field(default_factory=dict)

    def of(self, store_id: str) -> str:
        return self.by_store.get(store_id, self.default)


def zone_groups(zones: StoreZones, store_ids: Sequence[str] = ()) -> list[tuple[str, tuple[str, ...], bool]]:
    """The stores by zone, for one condition per zone: ``(zone, stores, others)`` where
    ``others`` is False for "the store is one of ``stores``" and True (the last group, the
    default zone) for "the store is none of ``stores``" (every store not in another group).
    ``store_ids`` (a filter's stores) narrows the listed groups."""
    wanted = set(store_ids)
    by_zone: dict[str, list[str]] = {}
    for sid, z in sorted(zones.by_store.items()):
        if z != zones.default and (not wanted or sid in wanted):
            by_zone.setdefault(z, []).append(sid)
    listed = tuple(s for stores in by_zone.values() for s in stores)
    out: list[tuple[str, tuple[str, ...], bool]] = [
        (z, tuple(ss), False) for z, ss in sorted(by_zone.items())
    ]
    if not wanted or any(zones.of(s) == zones.default for s in wanted):
        out.append((zones.default, listed, True))
    return out


# -- capabilities ----------------------------------------------------------------------------------

#: aggregate over buckets/groups of named additive components, coverage, vocabulary and plain
#: evidence sampling: what every source offers (the :class:`AggregateSource` port)
AGGREGATE = "aggregate"
#: per-group bill moments without per-bill rows (:class:`BillStatsSource`)
BILL_STATS = "bill_stats"
#: evidence for several groups in one call (:class:`BatchSampleSource`)
SAMPLE_MANY = "sample_many"
#: hybrid retrieval over events and their vectors, and the text encoder (:class:`RetrievalSource`)
RETRIEVAL = "retrieval"
CAPABILITIES: frozenset[str] = frozenset({AGGREGATE, BILL_STATS, SAMPLE_MANY, RETRIEVAL})


@runtime_checkable
class AggregateSource(Protocol):
    """What the engine needs from any memory (the edge's events, its rollup, a hub's rollups).

    ``capabilities`` declares which optional ports below the source also implements; an operator
    asks :func:`has_capability` instead of probing for methods."""

    capabilities: frozenset[str]

    def aggregate(
        self,
        flt: EventFilter,
        keys: Sequence[str],
        components: Sequence[str],
        periods: Sequence[Period] = (),
    ) -> AggResult:
        """Group the filtered events by ``keys`` and compute ``components`` per group.

        Rows whose key is NULL are kept (value ``None``) except for ``period``. No ordering is
        promised. Unknown keys or components raise ``ValueError``.
        """
        ...

    def sample_events(
        self, flt: EventFilter, limit: int, periods: Sequence[Period] = ()
    ) -> tuple[list[EventRow], int]:
        """Up to ``limit`` representative events matching ``flt`` (spread over the time range,
        most recent first within it) and the total number that match."""
        ...

    def coverage(self, flt: EventFilter) -> Coverage:
        """Earliest/latest timestamp and count of events matching ``flt`` without its time window."""
        ...

    def vocabulary(self) -> Vocabulary:
        """Event types, stats keys and values, store ids, entities and the time zone(s)."""
        ...

    def applied(self, flt: EventFilter) -> frozenset[str]:
        """Which of ``flt``'s conditions (:func:`filter_conditions`) this source applies, exactly,
        when it aggregates or samples with ``flt``. A condition it cannot apply (a key it holds no
        column for, a window finer than what it holds) is left out: the engine never answers
        ``ok`` on a plan filter the source did not apply (:func:`edge.analysis.honesty.unapplied`)."""
        ...


#: the engine's port (the name the engine and operators use)
EventSource = AggregateSource


@runtime_checkable
class BillStatsSource(Protocol):
    """Capability :data:`BILL_STATS`: the moments of order value without per-bill rows."""

    def bill_stats(
        self, flt: EventFilter, key: str, periods: Sequence[Period] = ()
    ) -> dict[Any, tuple[int, float, float]]:
        """Per group of ``key``: ``(bills, sum, sum of squares)`` of the bill totals."""
        ...


@runtime_checkable
class BatchSampleSource(Protocol):
    """Capability :data:`SAMPLE_MANY`: evidence of several groups in one call."""

    def sample_many(
        self, requests: Sequence[tuple[EventFilter, Sequence[Period], int]]
    ) -> list[list[EventRow]]:
        """Per ``(filter, periods, limit)``: representative events, most recent first."""
        ...


@runtime_checkable
class RetrievalSource(Protocol):
    """Capability :data:`RETRIEVAL`: events and vectors (not held by a rollup-only hub)."""

    def retrieve(self, text: str | None, flt: EventFilter, k: int) -> list[EventRow]:
        """Hybrid retrieval: hard filters first, then vector ranking of the survivors."""
        ...

    def embed_texts(self, texts: Sequence[str]) -> Any:
        """Unit-norm text vectors (numpy array n x d) from the store's text encoder, or None."""
        ...


def has_capability(source: Any, capability: str) -> bool:
    """True when ``source`` declares ``capability`` in its ``capabilities``."""
    if capability not in CAPABILITIES:
        raise ValueError(f"unknown capability {capability!r}: use {', '.join(sorted(CAPABILITIES))}")
    declared: frozenset[str] = source.capabilities
    return capability in declared


def bill_stats_of(source: Any) -> BillStatsSource | None:
    """The source as a :class:`BillStatsSource` when it declares :data:`BILL_STATS`."""
    return source if has_capability(source, BILL_STATS) else None


def sample_many_of(source: Any) -> BatchSampleSource | None:
    """The source as a :class:`BatchSampleSource` when it declares :data:`SAMPLE_MANY`."""
    return source if has_capability(source, SAMPLE_MANY) else None


def retrieval_of(source: Any) -> RetrievalSource | None:
    """The source as a :class:`RetrievalSource` when it declares :data:`RETRIEVAL`."""
    return source if has_capability(source, RETRIEVAL) else None


def check_aggregate_args(
    keys: Sequence[str],
    components: Sequence[str],
    periods: Sequence[Period],
    *,
    known: Collection[str] = COMPONENTS.keys(),
    check_keys: bool = True,
) -> None:
    """The port's rules for :meth:`AggregateSource.aggregate`'s arguments, for every source:
    known components (``known``) and keys, at least one of either, no key twice, ``period`` only
    with periods. Raises :class:`~edge.errors.UnknownKeyError` (a ``ValueError``)."""
    unknown = [c for c in components if c not in known]
    if unknown:
        raise UnknownKeyError(f"unknown component(s) {', '.join(map(repr, unknown))}: use {', '.join(known)}")
    bad = [k for k in keys if not is_valid_key(k)] if check_keys else []
    if bad:
        raise UnknownKeyError(f"unknown key(s) {bad}")
    if not components and not keys:
        raise UnknownKeyError("aggregate needs at least one key or component")
    if len(set(keys)) != len(keys):
        raise UnknownKeyError(f"keys repeat: {list(keys)}")
    if "period" in keys and not periods:
        raise UnknownKeyError("the key 'period' needs the query's periods")
