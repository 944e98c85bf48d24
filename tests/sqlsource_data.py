"""Seeded synthetic events for the filter-compiler and SQL EventSource tests, with a plain-Python
reference of what every key, filter and component means (source.py's docstrings, computed here
independently of the SQL under test).

Rows are written straight into a migrated database (``edge.memory.db.connect`` +
``migrations.migrate``) the way the import lays them out: well-known stats in typed columns,
other stats in ``event_attrs`` (numbers in ``value_num``, booleans as 'true'/'false'), entities
and raw refs as child rows.
"""

from __future__ import annotations

import contextlib
import json
import random
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import apsw
import pytest

from edge.analysis.source import EventFilter, Period
from edge.memory.migrations import WELL_KNOWN_STATS

TYPES = (
    "customer_enter",
    "purchase",
    "dwell",
    "checkout_queue",
    "complaint",
    "staff_error",
    "staff_operation",
    "promotion_broadcast",
    "speech",
)
STORES = {"s1": "Asia/Shanghai", "s2": "America/New_York"}
T0 = datetime(2025, 11, 1, tzinfo=UTC)
TRUTHY = ("true", "1", "yes", "y", "on", "t")
FALSY = ("false", "0", "no", "n", "off", "f", "", "none", "null")


@dataclass
class Ev:
    """One synthetic event with its derived store-local fields."""

    event_id: str
    store_id: str
    ts: datetime
    event_type: str
    stats: dict[str, Any] = field(default_factory=dict)
    entities: tuple[str, ...] = ()
    source: str | None = None
    rowid: int = 0

    @property
    def local(self) -> datetime:
        return self.ts.astimezone(ZoneInfo(STORES[self.store_id]))

    @property
    def date(self) -> str:
        return self.local.date().isoformat()

    @property
    def ts_text(self) -> str:
        return self.ts.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def norm_promotion(v: Any) -> str | None:
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


def random_events(seed: int, n: int, *, days: int = 6) -> list[Ev]:
    """Events over ``days`` days, two stores in different zones, every stats shape exercised."""
    rng = random.Random(seed)
    out: list[Ev] = []
    for i in range(n):
        store = rng.choice(tuple(STORES))
        ts = T0 + timedelta(seconds=rng.randrange(days * 86400))
        et = rng.choice(TYPES)
        stats: dict[str, Any] = {}
        if rng.random() < 0.6:
            stats["weather"] = rng.choice(("rain", "sunny", "cloudy"))
        r = rng.random()
        if r < 0.15:
            stats["promotion"] = rng.choice((True, False, "member_day", "yes"))
        if et == "customer_enter" and rng.random() < 0.7:
            stats["person_count"] = rng.randint(1, 4)
        if et == "purchase":
            if rng.random() < 0.7:
                stats["bill_id"] = f"B{rng.randrange(n // 4 + 1)}"
            if rng.random() < 0.9:
                stats["order_amount"] = round(rng.uniform(1, 200), 2)
            stats["product_category"] = rng.choice(("drinks", "snacks"))
            stats["product_id"] = rng.choice(("p1", "p2", "p3"))
        if et == "dwell" and rng.random() < 0.8:
            stats["dwell_seconds"] = round(rng.uniform(1, 900), 1)
        if et == "checkout_queue" and rng.random() < 0.8:
            stats["queue_length"] = rng.randint(0, 9)
        if rng.random() < 0.3:
            stats["speech_emotion"] = rng.choice(("negative", "angry", "neutral", "positive"))
        if rng.random() < 0.4:
            stats["zone"] = rng.choice(("entrance", "shelf_a", "checkout"))
        if rng.random() < 0.2:
            stats["staff_id"] = rng.choice(("w1", "w2"))
        if rng.random() < 0.3:
            stats["topic"] = rng.choice(("returns", "price", "退货"))
        if rng.random() < 0.3:
            stats["lane"] = rng.randint(1, 3)
        if rng.random() < 0.2:
            stats["vip"] = rng.random() < 0.5
        ents = tuple(sorted(rng.sample(("milk", "bread", "staff:w1", "aisle 3"), rng.randint(0, 2))))
        src = rng.choice((None, "cam1", "pos1"))
        out.append(Ev(f"ev{seed}-{i:05d}", store, ts, et, stats, ents, src))
    return out


def insert(conn: apsw.Connection, events: Sequence[Ev]) -> None:
    """Write events as the import lays them out (rowids in list order)."""
    cols = list(WELL_KNOWN_STATS)
    with conn:
        for sid, tz in STORES.items():
            conn.execute("INSERT OR IGNORE INTO stores VALUES (?, ?, 'now')", (sid, tz))
        (start,) = conn.execute("SELECT coalesce(max(id), 0) FROM events").fetchone()  # type: ignore[misc]
        for k, ev in enumerate(events):
            ev.rowid = int(start) + k + 1
            loc = ev.local
            d = loc.date()
            typed = []
            for c in cols:
                v = ev.stats.get(c)
                if c == "promotion":
                    v = None if v is None else ("true" if v is True else "false" if v is False else str(v))
                typed.append(v)
            conn.execute(
                "INSERT INTO events(id, event_id, store_id, ts, ts_epoch, local_date, local_hour, "
                "local_weekday, local_week, local_month, source, event_type, modality, text, "
                f"{', '.join(cols)}, stats_json, content_hash, imported_at) VALUES "
                f"({', '.join('?' * (14 + len(cols) + 2))}, 'now')",
                (
                    ev.rowid,
                    ev.event_id,
                    ev.store_id,
                    ev.ts_text,
                    ev.ts.timestamp(),
                    d.isoformat(),
                    loc.hour,
                    d.weekday(),
                    (d - timedelta(days=d.weekday())).isoformat(),
                    d.isoformat()[:7],
                    ev.source,
                    ev.event_type,
                    '["pos"]',
                    f"text of {ev.event_id}",
                    *typed,
                    json.dumps(ev.stats),
                    ev.event_id,
                ),
            )
            for key, v in ev.stats.items():
                if key in WELL_KNOWN_STATS:
                    continue
                if isinstance(v, bool):
                    row: tuple[Any, Any] = ("true" if v else "false", None)
                elif isinstance(v, int | float):
                    row = (None, float(v))
                else:
                    row = (str(v), None)
                conn.execute("INSERT INTO event_attrs VALUES (?, ?, ?, ?)", (ev.rowid, key, *row))
            for e in ev.entities:
                conn.execute("INSERT INTO entities VALUES (?, ?)", (ev.rowid, e))
            conn.execute("INSERT INTO raw_refs VALUES (?, 0, ?)", (ev.rowid, f"pos://{ev.event_id}"))


class DbStore:
    """The slice of ``Store`` that SqlEventSource uses, over one real connection."""

    def __init__(self, conn: apsw.Connection) -> None:
        self.conn = conn

    @contextlib.contextmanager
    def read(self) -> Iterator[apsw.Connection]:
        yield self.conn

    def timezone(self, store_id: str | None = None) -> str:
        return STORES.get(store_id or "s1", "UTC")

    def embed_texts(self, texts: Sequence[str]) -> None:
        return None


# -- the reference ---------------------------------------------------------------------------------


class Reference:
    """Plain-Python meaning of keys, filters and components over a list of events."""

    def __init__(self, events: Sequence[Ev]) -> None:
        self.events = list(events)
        by_day: dict[tuple[str, str], list[Ev]] = {}
        for ev in self.events:
            by_day.setdefault((ev.store_id, ev.date), []).append(ev)
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

    def weather(self, ev: Ev) -> str | None:
        own = ev.stats.get("weather")
        return own if own is not None else self.day_weather[(ev.store_id, ev.date)]

    def promotion(self, ev: Ev) -> str:
        own = norm_promotion(ev.stats.get("promotion"))
        return own if own is not None else self.day_promotion[(ev.store_id, ev.date)]

    def key(self, ev: Ev, key: str, periods: Sequence[Period] = ()) -> Any:
        loc = ev.local
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
            for p in periods:
                if (p.since is None or ev.ts >= p.since) and (p.until is None or ev.ts < p.until):
                    return p.label
            return None
        name = key[5:] if key.startswith("attr:") else key
        v = ev.stats.get(name)
        if name not in WELL_KNOWN_STATS and isinstance(v, bool):
            return "true" if v else "false"
        return v

    def matches(self, ev: Ev, flt: EventFilter, periods: Sequence[Period] = ()) -> bool:
        if flt.store_ids and ev.store_id not in flt.store_ids:
            return False
        if flt.event_types and ev.event_type not in flt.event_types:
            return False
        if flt.since is not None and ev.ts < flt.since:
            return False
        if flt.until is not None and ev.ts >= flt.until:
            return False
        if flt.hours and ev.local.hour not in flt.hours:
            return False
        if flt.days_of_week and ev.local.weekday() not in flt.days_of_week:
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
            if self.key(ev, key, periods) not in values:
                return False
        if flt.event_ids is not None and ev.event_id not in flt.event_ids:
            return False
        if periods and self.key(ev, "period", periods) is None:
            return False
        return True

    def select(self, flt: EventFilter, periods: Sequence[Period] = ()) -> list[Ev]:
        return [ev for ev in self.events if self.matches(ev, flt, periods)]


#: component -> the event types it is about (None: every event)
ABOUT: dict[str, tuple[str, ...] | None] = {
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


def component(evs: Sequence[Ev], name: str) -> Any:
    def of(t: str) -> list[Ev]:
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
        return sum(vals("purchase", "order_amount"))
    if name == "revenue_sq":
        return sum(v * v for v in vals("purchase", "order_amount"))
    if name in ("dwell_sum", "dwell_sq", "dwell_n", "queue_sum", "queue_sq", "queue_n"):
        t, k = ("dwell", "dwell_seconds") if name.startswith("dwell") else ("checkout_queue", "queue_length")
        v = vals(t, k)
        return {"sum": sum(v), "sq": sum(x * x for x in v), "n": len(v)}[name.split("_")[1]]
    if name == "complaints":
        return len(of("complaint"))
    if name == "emotion_n":
        return sum(1 for e in evs if e.stats.get("speech_emotion") is not None)
    if name == "negative_n":
        return sum(1 for e in evs if e.stats.get("speech_emotion") in ("negative", "angry"))
    if name == "staff_error_n":
        return len(of("staff_error"))
    if name == "staff_op_n":
        return len(of("staff_operation"))
    if name == "days":
        return len({(e.store_id, e.date) for e in evs})
    if name == "hour_sum":
        return sum(e.local.hour for e in evs)
    if name == "hour_sq":
        return sum(e.local.hour**2 for e in evs)
    if name == "first_ts":
        return min(e.ts_text for e in evs)
    if name == "last_ts":
        return max(e.ts_text for e in evs)
    raise KeyError(name)


def aggregate(
    ref: Reference,
    flt: EventFilter,
    keys: Sequence[str],
    components: Sequence[str],
    periods: Sequence[Period] = (),
) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    """group key tuple -> component values; a group is reported when it holds an event that a
    requested component is about."""
    evs = ref.select(flt, periods)
    abouts = [ABOUT[c] for c in components]
    if components and all(a is not None for a in abouts):
        types = {t for a in abouts if a is not None for t in a}
        evs = [e for e in evs if e.event_type in types]
    groups: dict[tuple[Any, ...], list[Ev]] = {}
    for e in evs:
        k = tuple(ref.key(e, key, periods) for key in keys)
        if "period" in keys and k[list(keys).index("period")] is None:
            continue
        groups.setdefault(k, []).append(e)
    return {k: tuple(component(g, c) for c in components) for k, g in groups.items()}


def as_dict(result: Any, keys: Sequence[Any]) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    """An AggResult's rows by group (the first ``len(keys)`` values); no group may come twice."""
    n = len(keys)
    out: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    for row in result.rows:
        k = tuple(row[:n])
        assert k not in out, f"group {k} reported twice"
        out[k] = tuple(row[n:])
    return out


def same(got: dict[Any, tuple[Any, ...]], want: dict[Any, tuple[Any, ...]]) -> None:
    """The same groups with the same values: floats within 1e-9, the rest equal and of one type."""
    assert set(got) == set(want)
    for k, values in want.items():
        for g, w in zip(got[k], values, strict=True):
            if isinstance(w, float) or isinstance(g, float):
                assert g == pytest.approx(w, rel=1e-9, abs=1e-9), k
            else:
                assert g == w and type(g) is type(w), k
