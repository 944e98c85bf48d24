"""A second test world: MEV JSON Lines of a store the simulator (edge.sim) knows nothing of.

It differs from the simulator's on purpose, so that tests built on it catch code that assumes
the simulator's data: opaque hex event ids and ``R/...`` bill ids, weather labels ``clear``,
``rainy``, ``overcast`` and ``snow``, German zones (``eingang``, ``kasse``, ``obst``...), a store in
Europe/Berlin across the end of summer time (2025-10-26, a 25-hour day), timestamps written in
UTC (``Z``) and with offsets, a gap of several days with no events (the store closed), a
promotion flag ``aktion``, and lines repeated in the file (duplicates the import stores once).
Late lines (:func:`late_lines`) belong to days that a test has closed before importing them.

Effects of known direction are planted: rainy days bring fewer visitors and larger bills, long
queues bring complaints. Deterministic for a seed. Used by ``tests/test_tiers_worlds.py``.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from edge.analysis.source import Vocabulary

STORE = "de-ber-0042"
TZ = "Europe/Berlin"
START = date(2025, 8, 4)
DAYS = 119  # to 2025-11-30, across the end of summer time
#: the store was closed these days (inclusive): no events at all
GAP = (date(2025, 9, 15), date(2025, 9, 20))
WEATHERS = ("clear", "rainy", "overcast")
CATEGORIES = ("backwaren", "getraenke", "molkerei", "obst_gemuese", "drogerie")
ZONES = ("eingang", "kasse", "obst", "kuehlregal", "getraenkemarkt")


def vocabulary() -> Vocabulary:
    """The vocabulary a memory of this world reports (its own words), for parser tests without one."""
    return Vocabulary(
        timezone=TZ,
        store_ids=(STORE,),
        event_types=("customer_enter", "dwell", "purchase", "checkout_queue", "complaint"),
        attributes={
            "weather": WEATHERS,
            "zone": ZONES,
            "product_category": CATEGORIES,
            "speech_emotion": ("negative",),
            "promotion": ("aktion", "none"),
        },
        keys_by_type={
            "customer_enter": ("person_count", "promotion", "weather", "zone"),
            "dwell": ("dwell_seconds", "promotion", "weather", "zone"),
            "purchase": ("bill_id", "order_amount", "product_category", "promotion", "weather"),
            "checkout_queue": ("promotion", "queue_length", "weather", "zone"),
            "complaint": ("promotion", "speech_emotion", "weather", "zone"),
        },
    )


@dataclass(frozen=True)
class World:
    lines: list[str]  # the file's lines, duplicates included
    events: dict[str, dict[str, Any]]  # event_id -> the event (each once)
    weather: dict[date, str]


def _hexid(rng: random.Random) -> str:
    return f"{rng.getrandbits(128):032x}"


def _stamp(rng: random.Random, local: datetime) -> str:
    """The instant, written in UTC or with the store's offset (both kinds in one file)."""
    if rng.random() < 0.6:
        return local.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    return local.isoformat()


def _weather(rng: random.Random, day: date) -> str:
    if day.month == 11 and rng.random() < 0.15:
        return "snow"
    return rng.choices(WEATHERS, weights=(4, 3, 3))[0]


def days() -> Iterator[date]:
    for i in range(DAYS):
        d = START + timedelta(days=i)
        if not GAP[0] <= d <= GAP[1]:
            yield d


def _day_events(rng: random.Random, day: date, weather: str, bill_no: list[int]) -> list[dict[str, Any]]:
    tz = ZoneInfo(TZ)
    out: list[dict[str, Any]] = []
    aktion = day.weekday() == 4  # Fridays
    visitors = int(rng.gauss(70 if weather != "rainy" else 55, 6)) + (10 if day.weekday() >= 5 else 0)

    def at(hour: int) -> datetime:
        return datetime(day.year, day.month, day.day, hour, rng.randrange(60), rng.randrange(60), tzinfo=tz)

    def ev(etype: str, when: datetime, stats: dict[str, Any], **extra: Any) -> dict[str, Any]:
        base_stats = {"weather": weather, "promotion": "aktion" if aktion else "none", **stats}
        eid = _hexid(rng)
        extra.setdefault("raw_ref", [f"nvr://{STORE}/{extra.get('source', 'sensor')}/{eid[:12]}"])
        e = {
            "event_id": eid,
            "timestamp": _stamp(rng, when),
            "store_id": STORE,
            "source": extra.pop("source", "sensor"),
            "event_type": etype,
            "modality": extra.pop("modality", ["image"]),
            "stats": base_stats,
            **extra,
        }
        out.append(e)
        return e

    for _ in range(max(visitors, 5)):
        hour = rng.choices(range(8, 21), weights=(2, 3, 4, 4, 6, 5, 4, 4, 5, 7, 8, 6, 3))[0]
        when = at(hour)
        ev(
            "customer_enter",
            when,
            {"person_count": rng.choice((1, 1, 1, 2)), "zone": "eingang"},
            source="cam-1",
        )
        if rng.random() < 0.5:
            ev(
                "dwell",
                when + timedelta(minutes=3),
                {"dwell_seconds": round(rng.uniform(20, 200), 1), "zone": rng.choice(ZONES[2:])},
                source="cam-2",
                modality=["video"],
            )
        if rng.random() < 0.55:
            bill_no[0] += 1
            bill = f"R/{day.year}/{bill_no[0]:07d}"
            for line in range(rng.choice((1, 1, 2, 3))):
                amount = round(rng.uniform(3, 40) * (1.3 if weather == "rainy" else 1.0), 2)
                ev(
                    "purchase",
                    when + timedelta(minutes=12, seconds=line),
                    {"bill_id": bill, "order_amount": amount, "product_category": rng.choice(CATEGORIES)},
                    source="kasse-2",
                    modality=["pos"],
                    raw_ref=[f"pos:{bill}:{line}"],
                )
    for hour in range(8, 21):
        q = max(0, int(rng.gauss(2 + (3 if hour in (17, 18) else 0), 1.5)))
        ev("checkout_queue", at(hour), {"queue_length": q, "zone": "kasse"}, source="cam-3")
        if q >= 5 and rng.random() < 0.6:
            ev(
                "complaint",
                at(hour),
                {"zone": "kasse", "speech_emotion": "negative"},
                source="mic-1",
                modality=["audio", "text"],
                text="Die Schlange an der Kasse ist viel zu lang",
            )
    return out


def generate(seed: int = 3) -> World:
    """The world's lines: every day's events in time order, some lines written twice."""
    rng = random.Random(seed)
    weather: dict[date, str] = {}
    events: dict[str, dict[str, Any]] = {}
    lines: list[str] = []
    bill_no = [0]
    for d in days():
        weather[d] = _weather(rng, d)
        for e in _day_events(rng, d, weather[d], bill_no):
            events[e["event_id"]] = e
            line = json.dumps(e, ensure_ascii=False, separators=(",", ":"))
            lines.append(line)
            if rng.random() < 0.01:
                lines.append(line)  # a duplicate line: stored once
    return World(lines, events, weather)


def late_lines(world: World, day: date, n: int = 5, seed: int = 9) -> list[dict[str, Any]]:
    """``n`` new events of ``day`` (which a test has closed before importing them)."""
    rng = random.Random(seed)
    tz = ZoneInfo(TZ)
    out = []
    for i in range(n):
        when = datetime(day.year, day.month, day.day, 19, i, 0, tzinfo=tz)
        out.append(
            {
                "event_id": _hexid(rng),
                "timestamp": when.astimezone(UTC).isoformat().replace("+00:00", "Z"),
                "store_id": STORE,
                "source": "cam-1",
                "event_type": "customer_enter",
                "modality": ["image"],
                "stats": {"weather": world.weather[day], "person_count": 1, "zone": "eingang"},
                "raw_ref": [f"nvr://{STORE}/cam-1/late-{i}"],
            }
        )
    return out


def write(world: World, path: Path) -> Path:
    path.write_text("\n".join(world.lines) + "\n", encoding="utf-8")
    return path
