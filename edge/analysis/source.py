"""The port between the pure analysis engine and whatever holds the events.

The engine never touches SQL, files or the network. It asks an :class:`EventSource` for
aggregated *components* grouped by *keys*, for representative evidence, for coverage and for the
memory's vocabulary. ``edge.memory`` implements it over SQLite (aggregation pushed down into SQL
over indexed columns); the hub implements it over its own store. Everything crossing this port is
a plain frozen dataclass or tuple so both sides can be tested on their own.

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

``weather`` and ``promotion`` are day attributes: an event without its own value takes the value
of its store-local day (the most frequent value among that store's events of that day; for
``promotion``, a day with a ``promotion_broadcast`` event or any truthy ``stats.promotion`` is a
promotion day, ``"true"``, else ``"false"``). Promotion values are normalised to the strings
``"true"`` / ``"false"`` unless the data names promotions (then the name is kept).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

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

    def narrowed(self, **changes: Any) -> EventFilter:
        """A copy with some fields replaced (``dataclasses.replace`` with a shorter name)."""
        from dataclasses import replace

        return replace(self, **changes)


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
    """The memory's own words, so a new store's vocabulary works without code changes."""

    timezone: str
    store_ids: tuple[str, ...] = ()
    event_types: tuple[str, ...] = ()
    #: stats key -> its most frequent distinct string values (capped per key)
    attributes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    entities: tuple[str, ...] = ()
    earliest: datetime | None = None
    latest: datetime | None = None


@runtime_checkable
class EventSource(Protocol):
    """What the engine needs from a memory. Implemented by ``edge.memory`` and by the hub."""

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
        """Event types, stats keys and values, store ids, entities and the time zone."""
        ...

    def retrieve(self, text: str | None, flt: EventFilter, k: int) -> list[EventRow]:
        """Hybrid retrieval: hard filters first, then vector ranking of the survivors."""
        ...

    def embed_texts(self, texts: Sequence[str]) -> Any:
        """Unit-norm text vectors (numpy array n x d) from the store's text encoder, or None."""
        ...
