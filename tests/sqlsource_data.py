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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import apsw
import pytest

from edge.analysis import testing
from edge.analysis.source import EventFilter, Period
from edge.analysis.testing import ABOUT, norm_promotion  # noqa: F401  (re-exported for the tests)
from edge.config import AdammConfig
from edge.memory.db.migrations import WELL_KNOWN_STATS

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
#: every synthetic store's zone: STORES, and the Shanghai/London pair of the two-zone tests
ZONES = {**STORES, "sh": "Asia/Shanghai", "ld": "Europe/London"}
T0 = datetime(2025, 11, 1, tzinfo=UTC)
TRUTHY = ("true", "1", "yes", "y", "on", "t")
FALSY = ("false", "0", "no", "n", "off", "f", "", "none", "null")


@dataclass
class Ev(testing.MemEvent):
    """One synthetic event (an :class:`edge.analysis.testing.MemEvent`, so the in-memory source
    reads it as it is) with its database rowid and derived store-local fields."""

    rowid: int = 0

    @property
    def local(self) -> datetime:
        return self.ts.astimezone(ZoneInfo(ZONES[self.store_id]))

    @property
    def date(self) -> str:
        return self.local.date().isoformat()

    @property
    def ts_text(self) -> str:
        return self.ts.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def random_events(
    seed: int, n: int, *, days: int = 6, stores: Sequence[str] = tuple(STORES), start: datetime = T0
) -> list[Ev]:
    """Events over ``days`` days from ``start``, two stores in different zones (``stores``, of
    ZONES), every stats shape exercised."""
    rng = random.Random(seed)
    out: list[Ev] = []
    for i in range(n):
        store = rng.choice(tuple(stores))
        ts = start + timedelta(seconds=rng.randrange(days * 86400))
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


def insert(conn: apsw.Connection, events: Sequence[Ev], stores: dict[str, str] | None = None) -> None:
    """Write events as the import lays them out (rowids in list order); ``stores`` (default
    STORES): the stores table's rows."""
    cols = list(WELL_KNOWN_STATS)
    with conn:
        for sid, tz in (STORES if stores is None else stores).items():
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

    def __init__(self, conn: apsw.Connection, zones: dict[str, str] | None = None) -> None:
        self.conn = conn
        self.zones = STORES if zones is None else zones
        self.config = AdammConfig()  # defaults: retrieval weights read by hybrid search

    @contextlib.contextmanager
    def read(self) -> Iterator[apsw.Connection]:
        yield self.conn

    def timezone(self, store_id: str | None = None) -> str:
        """A store's zone; without one, the first store's (the memory's default zone)."""
        return self.zones.get(store_id or next(iter(self.zones)), "UTC")

    def embed_texts(self, texts: Sequence[str]) -> None:
        return None


# -- the reference ---------------------------------------------------------------------------------
# (the plain-Python meaning lives in edge.analysis.testing, the InMemorySource's core)


class Reference(testing.Reference):
    """The reference over these stores' zones."""

    def __init__(self, events: Sequence[Ev]) -> None:
        super().__init__(events, STORES)


def component(evs: Sequence[Ev], name: str) -> Any:
    return Reference(evs).component(evs, name)


def aggregate(
    ref: Reference,
    flt: EventFilter,
    keys: Sequence[str],
    components: Sequence[str],
    periods: Sequence[Period] = (),
) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    """group key tuple -> component values (:meth:`edge.analysis.testing.Reference.aggregate`)."""
    return ref.aggregate(flt, keys, components, periods)


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
