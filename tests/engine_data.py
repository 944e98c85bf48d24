"""Simulated memories shared by the engine, operator, payload-contract, action and ask-CLI tests.

Built once per test process (in a temporary folder removed when the process exits) (the simulator is seeded, so the planted truths of
:func:`edge.sim.expected` are known): a 75-day store with every effect, and a thin 5-day store
with a handful of customers a day. Each is imported through the real import path into a real
SQLite + sqlite-vec memory; the raw simulated events are kept for direct recomputation.
"""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from edge.memory.store import Store
from edge.sim import SimConfig, expected, simulate

FULL_DAYS = 75


@dataclass(frozen=True)
class Memory:
    path: Path
    config: SimConfig
    events: tuple[dict[str, Any], ...]
    truth: dict[str, Any]
    now: datetime


def _build(config: SimConfig, name: str) -> Memory:
    root = Path(tempfile.mkdtemp(prefix=f"adamm-engine-{name}-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)  # the memory lives as long as the process
    path = root / f"{name}.db"
    events = tuple(simulate(config))
    store = Store.open(path, timezone=config.timezone)
    try:
        report = store.import_events(events)
        assert report.rejected == 0, report
    finally:
        store.close()
    end = config.start + timedelta(days=config.days)
    now = datetime(end.year, end.month, end.day, tzinfo=ZoneInfo(config.timezone))
    return Memory(path, config, events, expected(config), now)


@functools.cache
def full_memory() -> Memory:
    """75 days of the default store (seed 7) with every planted effect."""
    return _build(SimConfig(days=FULL_DAYS, seed=7), "full")


@functools.cache
def thin_memory() -> Memory:
    """Five days of a store with about six customers a day."""
    return _build(SimConfig(days=5, seed=3, customers_per_day=6), "thin")
