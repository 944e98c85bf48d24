"""The daemon's maintain schedule (edge.daemon.maintain) on a real memory: when it runs, what its
component row says (the last run and each tier's size), and that a failed run keeps the daemon up."""

from __future__ import annotations

import threading
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from edge.config import AdammConfig, TiersConfig
from edge.daemon.maintain import MaintainScheduler, next_run
from edge.memory.store import Store
from edge.sim.simulator import SimConfig, simulate


def test_next_run_is_the_local_time_then_every_interval() -> None:
    tz = "Asia/Shanghai"  # UTC+8: 03:00 local is 19:00 UTC the day before
    after = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)  # 20:00 local
    assert next_run(after, "03:00", 24, tz) == datetime(2025, 6, 1, 19, 0, tzinfo=UTC)
    assert next_run(datetime(2025, 6, 1, 19, 0, tzinfo=UTC), "03:00", 24, tz) == datetime(
        2025, 6, 2, 19, 0, tzinfo=UTC
    )
    assert next_run(after, "03:00", 6, tz) == datetime(2025, 6, 1, 13, 0, tzinfo=UTC)  # 03, 09, 15, 21 local


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store.open(tmp_path / "store.db", timezone="Asia/Shanghai")
    sim = SimConfig(start=date(2025, 1, 1), days=60, customers_per_day=10, with_text=False, seed=2)
    events = list(simulate(sim))
    assert s.import_events(events).accepted == len(events)
    return s


def test_the_schedule_runs_maintain_and_its_status_shows_the_tiers(store: Store) -> None:
    now = datetime(2025, 3, 15, 20, 0, tzinfo=UTC)  # past 03:00 local of the 16th
    clock = [now - timedelta(hours=2)]
    cfg = AdammConfig(tiers=TiersConfig(warm_after_days=10, cold_after_days=40))
    stop = threading.Event()
    sched = MaintainScheduler(store, cfg, stop, clock=lambda: clock[0])
    assert sched.next_at == datetime(2025, 3, 15, 19, 0, tzinfo=UTC)
    before = sched.status()
    assert before["state"] == "waiting" and "last_run" not in before
    assert before["tiers"]["events"]["warm"] == 0 and before["tiers"]["events"]["hot"] > 0
    clock[0] = now  # the scheduled time has passed
    sched.start()
    for _ in range(600):
        if sched.runs:
            break
        stop.wait(0.05)
    stop.set()
    sched.join(timeout=120)
    assert not sched.is_alive() and sched.runs == 1 and sched.failures == 0
    st = sched.status()
    assert st["state"] == "stopped" and st["next_run"] == datetime(2025, 3, 16, 19, 0, tzinfo=UTC).isoformat()
    assert st["last_run"]["to_warm"] > 0 and st["last_run"]["to_cold"] > 0
    events = st["tiers"]["events"]
    with store.read() as conn:
        (hot,) = conn.execute("SELECT count(*) FROM events WHERE tier = 'hot'").fetchone()
        (warm,) = conn.execute("SELECT count(*) FROM events WHERE tier = 'warm'").fetchone()
    assert events["hot"] == hot and events["warm"] == warm and events["cold"] == st["last_run"]["to_cold"]
    assert st["tiers"]["archive_bytes"] > 0 and st["tiers"]["last_run"]["ok"] is True
    store.close()


def test_a_failed_run_is_reported_and_the_schedule_goes_on(store: Store, tmp_path: Path) -> None:
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the archive folder should be", encoding="utf-8")
    cfg = AdammConfig(tiers=TiersConfig(warm_after_days=10, cold_after_days=40, archive_dir=str(blocked)))
    sched = MaintainScheduler(store, cfg, threading.Event(), clock=lambda: datetime(2025, 3, 15, tzinfo=UTC))
    assert sched.run_once() is None
    st = sched.status()
    assert st["state"] == "failed" and st["failures"] == 1 and "archive" in st["last_error"]
    with store.read() as conn:
        (warm,) = conn.execute("SELECT count(*) FROM events WHERE tier <> 'hot'").fetchone()
    assert warm == 0  # the failed batch was rolled back
    store.close()


def test_the_status_tab_counts_cold_events_too(store: Store) -> None:
    from edge.memory.semantic import status
    from edge.services.maintain import maintain

    cfg = AdammConfig(tiers=TiersConfig(warm_after_days=10, cold_after_days=40))
    report = maintain(store, cfg, datetime(2025, 3, 15, tzinfo=UTC))["tiers"]
    with store.read() as conn:
        counts = status.tier_counts(conn)
    assert counts == {k: v for k, v in report["events"].items() if v}
    assert counts["cold"] == report["cold"]["events"] > 0
    store.close()
