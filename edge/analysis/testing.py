"""A pure-Python source for tests and for checking other sources: :class:`InMemorySource`.

It implements :class:`~edge.analysis.source.AggregateSource` over a list of events held in memory
(no I/O), computing every key, filter and component from its definition in
:mod:`edge.analysis.source` independently of any SQL. The store's sources and the hub's are
checked against it (``tests/test_source_contract.py``): the same questions, the same answers.

Each store may be in its own time zone (``timezones``); store-local keys (hour, date, week, ...)
use the event's store's zone, and the vocabulary reports every store's zone. A filter with
``wall_clock_zone`` applies its window and periods per store (:func:`~edge.analysis.source.store_window`),
and its coverage is placed in that frame (:func:`~edge.analysis.source.frame_instant`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol
from zoneinfo import ZoneInfo

from edge.analysis.source import (
    AGGREGATE,
    BILL_STATS,
    COMPONENT_EVENT_TYPES,
    AggResult,
    Coverage,
    EventFilter,
    EventRow,
    Period,
    Vocabulary,
    check_aggregate_args,
    filter_conditions,
    frame_instant,
    store_window,
)

#: stats keys with their own typed column in the store (CONTRACT.md; mev.schema.json): a boolean
#: of any other key is the text "true"/"false"
WELL_KNOWN_STATS = frozenset(
    {
        "person_count",
        "dwell_seconds",
        "queue_length",
        "order_amount",
        "bill_id",
        "product_id",
        "product_category",
        "gross_margin",
        "weather",
        "speech_emotion",
        "staff_id",
        "zone",
        "promotion",
        "quality",
    }
)
TRUTHY = ("true", "1", "yes", "y", "on", "t")
FALSY = ("false", "0", "no", "n", "off", "f", "", "none", "null")
#: well-known TEXT stats listed in the vocabulary (bill ids are not vocabulary)
_VOCAB_KEYS = ("product_id", "product_category", "weather", "speech_emotion", "staff_id", "zone", "promotion")
VOCAB_VALUES_PER_KEY = 50

#: component -> the event types it is about (None: every event)
ABOUT = COMPONENT_EVENT_TYPES


class EventLike(Protocol):
    """What :class:`InMemorySource` reads of an event."""

    event_id: str
    store_id: str
    ts: datetime
    event_type: str
    stats: dict[str, Any]
    entities: tuple[str, ...]
    source: str | None


@dataclass
class MemEvent:
    """One event held in memory (``ts`` timezone-aware)."""

    event_id: str
    store_id: str
    ts: datetime
    event_type: str
    stats: dict[str, Any] = field(default_factory=dict)
    entities: tuple[str, ...] = ()
    source: str | None = None
    text: str | None = None
    raw_ref: tuple[str, ...] = ()


def norm_promotion(v: Any) -> str | None:
    """A promotion value as the port reports it: "true"/"false", or the promotion's name."""
    if v is None:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    low = str(v).strip().lower()
    if low in TRUTHY:
        return "true"
    if low in FALSY:
        return "false"
    return str(v)


def ts_text(ts: datetime) -> str:
    """The store's UTC timestamp text (``YYYY-MM-DDTHH:MM:SS.ffffffZ``)."""
    return ts.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Reference:
    """Plain-Python meaning of keys, filters and components over a list of events."""

    def __init__(
        self, events: Iterable[EventLike], timezones: Mapping[str, str], default: str = "UTC"
    ) -> None:
        self.events = list(events)
        self.timezones = dict(timezones)
        self.default = default
        self._zones: dict[str, ZoneInfo] = {}
        by_day: dict[tuple[str, str], list[EventLike]] = {}
        for ev in self.events:
            by_day.setdefault((ev.store_id, self.date(ev)), []).append(ev)
        self.day_weather: dict[tuple[str, str], str | None] = {}
        self.day_promotion: dict[tuple[str, str], str] = {}
        for day, evs in by_day.items():
            w = Counter(e.stats["weather"] for e in evs if e.stats.get("weather") is not None)
            self.day_weather[day] = min(w, key=lambda v: (-w[v], v)) if w else None
            vals = [norm_promotion(e.stats.get("promotion")) for e in evs]
            names = Counter(v for v in vals if v not in (None, "true", "false"))
            if names:
                self.day_promotion[day] = min(names, key=lambda v: (-names[v], v))
            elif "true" in vals or any(e.event_type == "promotion_broadcast" for e in evs):
                self.day_promotion[day] = "true"
            else:
                self.day_promotion[day] = "false"

    def zone(self, store_id: str) -> ZoneInfo:
        z = self._zones.get(store_id)
        if z is None:
            z = self._zones[store_id] = ZoneInfo(self.timezones.get(store_id, self.default))
        return z

    def local(self, ev: EventLike) -> datetime:
        return ev.ts.astimezone(self.zone(ev.store_id))

    def date(self, ev: EventLike) -> str:
        return self.local(ev).date().isoformat()

    def weather(self, ev: EventLike) -> str | None:
        own = ev.stats.get("weather")
        return own if own is not None else self.day_weather[(ev.store_id, self.date(ev))]

    def promotion(self, ev: EventLike) -> str:
        own = norm_promotion(ev.stats.get("promotion"))
        return own if own is not None else self.day_promotion[(ev.store_id, self.date(ev))]

    def key(self, ev: EventLike, key: str, periods: Sequence[Period] = ()) -> Any:
        loc = self.local(ev)
        d = loc.date()
        simple = {
            "hour": loc.hour,
            "day_of_week": d.weekday(),
            "is_weekend": d.weekday() >= 5,
            "date": d.isoformat(),
            "week": (d - timedelta(days=d.weekday())).isoformat(),
            "month": d.isoformat()[:7],
            "store_id": ev.store_id,
            "source": ev.source,
            "event_type": ev.event_type,
            "date_hour": f"{d.isoformat()}T{loc.hour:02d}",
            "bill": ev.stats.get("bill_id") or ev.event_id,
            "event_id": ev.event_id,
        }
        if key in simple:
            return simple[key]
        if key in ("weather", "attr:weather"):
            return self.weather(ev)
        if key in ("promotion", "attr:promotion"):
            return self.promotion(ev)
        if key == "period":
            return self.period(ev, periods)
        name = key[5:] if key.startswith("attr:") else key
        v = ev.stats.get(name)
        if name not in WELL_KNOWN_STATS and isinstance(v, bool):
            return "true" if v else "false"
        return v

    def zone_name(self, store_id: str) -> str:
        return self.timezones.get(store_id, self.default)

    def period(self, ev: EventLike, periods: Sequence[Period], frame: str | None = None) -> str | None:
        """The label of the first period holding the event (per store with a ``frame``)."""
        for p in periods:
            lo, hi = store_window(p.since, p.until, frame, self.zone_name(ev.store_id))
            if (lo is None or ev.ts >= lo) and (hi is None or ev.ts < hi):
                return p.label
        return None

    def matches(self, ev: EventLike, flt: EventFilter, periods: Sequence[Period] = ()) -> bool:
        if flt.store_ids and ev.store_id not in flt.store_ids:
            return False
        if flt.event_types and ev.event_type not in flt.event_types:
            return False
        since, until = store_window(flt.since, flt.until, flt.wall_clock_zone, self.zone_name(ev.store_id))
        if since is not None and ev.ts < since:
            return False
        if until is not None and ev.ts >= until:
            return False
        if flt.hours and self.local(ev).hour not in flt.hours:
            return False
        if flt.days_of_week and self.local(ev).weekday() not in flt.days_of_week:
            return False
        for key, values in flt.attributes:
            if key == "weather":
                got: Any = self.weather(ev)
                want: list[Any] = list(values)
            elif key == "promotion":
                got = self.promotion(ev)
                want = [norm_promotion(v) for v in values]
            else:
                got = ev.stats.get(key)
                if isinstance(got, bool):
                    got = "true" if got else "false"
                want = ["true" if v is True else "false" if v is False else v for v in values]
            if got is None or not any(got == w and type(got) is not bool for w in want):
                return False
        if any(e not in ev.entities for e in flt.entities):
            return False
        for key, values in flt.key_equals:
            got = (
                self.period(ev, periods, flt.wall_clock_zone)
                if key == "period"
                else self.key(ev, key, periods)
            )
            if got not in values:
                return False
        if flt.event_ids is not None and ev.event_id not in flt.event_ids:
            return False
        return not (periods and self.period(ev, periods, flt.wall_clock_zone) is None)

    def _key(self, ev: EventLike, key: str, flt: EventFilter, periods: Sequence[Period]) -> Any:
        """A key of the event under ``flt`` (the period per store with its ``wall_clock_zone``)."""
        if key == "period":
            return self.period(ev, periods, flt.wall_clock_zone)
        return self.key(ev, key, periods)

    def select(self, flt: EventFilter, periods: Sequence[Period] = ()) -> list[EventLike]:
        return [ev for ev in self.events if self.matches(ev, flt, periods)]

    def component(self, evs: Sequence[EventLike], name: str) -> Any:
        def of(t: str) -> list[EventLike]:
            return [e for e in evs if e.event_type == t]

        def vals(t: str, k: str) -> list[float]:
            return [e.stats[k] for e in of(t) if e.stats.get(k) is not None]

        if name == "events":
            return len(evs)
        if name == "footfall":
            return sum(
                1 if e.stats.get("person_count") is None else e.stats["person_count"]
                for e in of("customer_enter")
            )
        if name == "enter_events":
            return len(of("customer_enter"))
        if name == "bills":
            return len({e.stats.get("bill_id") or e.event_id for e in of("purchase")})
        if name == "purchase_events":
            return len(of("purchase"))
        if name == "revenue":
            return float(sum(vals("purchase", "order_amount")))
        if name == "revenue_sq":
            return float(sum(v * v for v in vals("purchase", "order_amount")))
        if name in ("dwell_sum", "dwell_sq", "dwell_n", "queue_sum", "queue_sq", "queue_n"):
            t, k = (
                ("dwell", "dwell_seconds") if name.startswith("dwell") else ("checkout_queue", "queue_length")
            )
            v = vals(t, k)
            part = name.split("_")[1]
            if part == "n":
                return len(v)
            return float(sum(v) if part == "sum" else sum(x * x for x in v))
        if name == "complaints":
            return len(of("complaint"))
        if name == "emotion_n":
            return sum(1 for e in evs if e.stats.get("speech_emotion") is not None)
        if name == "negative_n":
            return sum(1 for e in evs if str(e.stats.get("speech_emotion")).lower() in ("negative", "angry"))
        if name == "staff_error_n":
            return len(of("staff_error"))
        if name == "staff_op_n":
            return len(of("staff_operation"))
        if name == "days":
            return len({(e.store_id, self.date(e)) for e in evs})
        if name == "hour_sum":
            return sum(self.local(e).hour for e in evs)
        if name == "hour_sq":
            return sum(self.local(e).hour ** 2 for e in evs)
        if name == "first_ts":
            return min(ts_text(e.ts) for e in evs)
        if name == "last_ts":
            return max(ts_text(e.ts) for e in evs)
        raise KeyError(name)

    def aggregate(
        self,
        flt: EventFilter,
        keys: Sequence[str],
        components: Sequence[str],
        periods: Sequence[Period] = (),
    ) -> dict[tuple[Any, ...], tuple[Any, ...]]:
        """group key tuple -> component values; a group is reported when it holds an event that a
        requested component is about."""
        evs = self.select(flt, periods)
        abouts = [ABOUT[c] for c in components]
        if components and all(a is not None for a in abouts):
            types = {t for a in abouts if a is not None for t in a}
            evs = [e for e in evs if e.event_type in types]
        groups: dict[tuple[Any, ...], list[EventLike]] = {}
        for e in evs:
            k = tuple(self._key(e, key, flt, periods) for key in keys)
            if "period" in keys and k[list(keys).index("period")] is None:
                continue
            groups.setdefault(k, []).append(e)
        return {k: tuple(self.component(g, c) for c in components) for k, g in groups.items()}


class InMemorySource:
    """:class:`~edge.analysis.source.AggregateSource` (and bill statistics) over events in memory.

    ``timezones``: store id -> IANA zone; ``timezone``: the default zone (stores not listed, and
    the vocabulary's single zone). Pure: no files, no database, no network."""

    capabilities: frozenset[str] = frozenset({AGGREGATE, BILL_STATS})

    def __init__(
        self, events: Iterable[EventLike], timezones: Mapping[str, str] | None = None, timezone: str = "UTC"
    ) -> None:
        self.timezones = dict(timezones or {})
        self.timezone = timezone
        self.ref = Reference(events, self.timezones, timezone)

    def aggregate(
        self,
        flt: EventFilter,
        keys: Sequence[str],
        components: Sequence[str],
        periods: Sequence[Period] = (),
    ) -> AggResult:
        check_aggregate_args(keys, components, periods)
        got = self.ref.aggregate(flt, keys, components, periods)
        rows = tuple((*k, *self._values(v, components)) for k, v in got.items())
        return AggResult(columns=(*keys, *components), rows=rows)

    @staticmethod
    def _values(values: Sequence[Any], components: Sequence[str]) -> tuple[Any, ...]:
        return tuple(values)

    def bill_stats(
        self, flt: EventFilter, key: str, periods: Sequence[Period] = ()
    ) -> dict[Any, tuple[int, float, float]]:
        """Per group of ``key``: ``(bills, sum, sum of squares)`` of the bill totals within it."""
        totals: dict[Any, dict[Any, float]] = {}
        for ev in self.ref.select(flt.narrowed(event_types=("purchase",)), periods):
            g = self.ref._key(ev, key, flt, periods)
            if key == "period" and g is None:
                continue
            bill = self.ref.key(ev, "bill")
            amount = ev.stats.get("order_amount")
            per = totals.setdefault(g, {})
            per[bill] = per.get(bill, 0.0) + (float(amount) if amount is not None else 0.0)
        return {
            g: (len(b), float(sum(b.values())), float(sum(t * t for t in b.values())))
            for g, b in totals.items()
        }

    def sample_events(
        self, flt: EventFilter, limit: int, periods: Sequence[Period] = ()
    ) -> tuple[list[EventRow], int]:
        """Up to ``limit`` events spread evenly by rank in time (first and last kept), most recent
        first, and the number that match."""
        if limit < 0:
            raise ValueError(f"limit must not be negative, got {limit}")
        evs = sorted(self.ref.select(flt, periods), key=lambda e: (e.ts, e.event_id))
        total = len(evs)
        if total == 0 or limit == 0:
            return [], total
        if total <= limit:
            picked = evs
        elif limit == 1:
            picked = [evs[-1]]
        else:
            picked = [evs[i] for i in sorted({(i * (total - 1)) // (limit - 1) for i in range(limit)})]
        return [self._row(e) for e in reversed(picked)], total

    @staticmethod
    def _row(ev: EventLike) -> EventRow:
        return EventRow(
            event_id=ev.event_id,
            timestamp=ts_text(ev.ts),
            event_type=ev.event_type,
            store_id=ev.store_id,
            raw_ref=tuple(getattr(ev, "raw_ref", ()) or ()),
            text=getattr(ev, "text", None),
            stats=dict(ev.stats),
        )

    def applied(self, flt: EventFilter) -> frozenset[str]:
        """Every condition of ``flt`` (:meth:`Reference.matches` tests each)."""
        return frozenset(filter_conditions(flt))

    def coverage(self, flt: EventFilter) -> Coverage:
        evs = self.ref.select(flt.narrowed(since=None, until=None))
        if not evs:
            return Coverage(None, None, 0)
        frame = flt.wall_clock_zone
        ts = [
            e.ts.astimezone(UTC)
            if frame is None
            else frame_instant(e.ts, self.ref.zone_name(e.store_id), frame)
            for e in evs
        ]
        return Coverage(min(ts), max(ts), len(evs))

    def vocabulary(self) -> Vocabulary:
        evs = self.ref.events
        types = Counter(e.event_type for e in evs)
        attributes: dict[str, tuple[str, ...]] = {}
        keys = list(_VOCAB_KEYS) + sorted({k for e in evs for k in e.stats if k not in WELL_KNOWN_STATS})
        for k in keys:
            c: Counter[str] = Counter()
            for e in evs:
                v = e.stats.get(k)
                if v is None or isinstance(v, int | float) and not isinstance(v, bool):
                    continue
                v = (
                    norm_promotion(v)
                    if k == "promotion"
                    else ("true" if v else "false")
                    if isinstance(v, bool)
                    else v
                )
                c[str(v)] += 1
            if c:
                attributes[k] = tuple(sorted(c, key=lambda v: (-c[v], v))[:VOCAB_VALUES_PER_KEY])
        ents = Counter(x for e in evs for x in e.entities)
        stores = sorted({e.store_id for e in evs} | set(self.timezones))
        ts = [e.ts.astimezone(UTC) for e in evs]
        carried: dict[str, set[str]] = {}
        for e in evs:
            carried.setdefault(e.event_type, set()).update(k for k, v in e.stats.items() if v is not None)
        return Vocabulary(
            timezone=self.timezone,
            timezones=dict(self.timezones),
            store_ids=tuple(stores),
            event_types=tuple(sorted(types, key=lambda t: (-types[t], t))),
            attributes=attributes,
            entities=tuple(sorted(ents, key=lambda x: (-ents[x], x))),
            earliest=min(ts) if ts else None,
            latest=max(ts) if ts else None,
            keys_by_type={t: tuple(sorted(k)) for t, k in sorted(carried.items())},
        )
