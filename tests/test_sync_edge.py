"""The edge side of sync against a real Mosquitto (tests/brokers.py) and a test responder in
place of the hub (tests/sync_responder.py): drain and confirm, duplicates never double counted,
broker and ``adamm sync`` SIGKILLed mid-drain, a long outage with a small outbox bound, bad
credentials and an unreachable broker.

Expected totals are recomputed here from the simulated events themselves (not through the
store), per store-local day and event type."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from brokers import free_port, make_certificates, mosquitto_available, running_mosquitto
from sync_responder import Responder

from edge.memory.store import Store
from edge.sim import SimConfig, simulate
from edge.sync import messages as m
from edge.sync.outbox import Outbox, enqueue_fact

pytestmark = pytest.mark.skipif(not mosquitto_available(), reason="mosquitto is not installed")

ROOT = Path(__file__).resolve().parents[1]
TZ = "Asia/Shanghai"
STORE = "sh_xuhui_01"
DAYS = 6


def _events(days: int, seed: int = 11) -> list[dict[str, Any]]:
    return list(simulate(SimConfig(days=days, seed=seed)))


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    """A closed memory of DAYS simulated days (copied by each test) and its events."""
    d = tmp_path_factory.mktemp("sync-base")
    events = _events(DAYS)
    with Store.open(d / "base.db", timezone=TZ) as store:
        assert store.import_events(events).rejected == 0
    return d / "base.db", events


@pytest.fixture
def db(base: tuple[Path, list[dict[str, Any]]], tmp_path: Path) -> Path:
    path = tmp_path / "store.db"
    shutil.copy(base[0], path)
    return path


def sync(db: Path, url: str, *args: str, env: dict[str, str] | None = None, timeout: float = 120) -> Any:
    cmd = [sys.executable, "-m", "edge", "sync", "--db", str(db), "--broker", url, "--json", *args]
    full = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run(cmd, capture_output=True, text=True, env=full, timeout=timeout, cwd=ROOT)


def sync_popen(db: Path, url: str, *args: str) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "edge", "sync", "--db", str(db), "--broker", url, "--json", *args]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Any]:
    with running_mosquitto(tmp_path / "mq") as mq:
        yield mq


@pytest.fixture
def hub(broker: Any) -> Iterator[Responder]:
    r = Responder(broker.port).start()
    yield r
    r.stop()


# -- expectations from the raw events ---------------------------------------------------------------


def expected(events: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, float]]:
    """(store-local day, event type) -> events, footfall, revenue, bills and bill_sq."""
    zone = ZoneInfo(TZ)
    out: dict[tuple[str, str], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    bills: dict[tuple[str, str], float] = defaultdict(float)
    for e in events:
        ts = datetime.fromisoformat(e["timestamp"].replace("Z", "+00:00"))
        day = ts.astimezone(zone).date().isoformat()
        k = (day, e["event_type"])
        st = e.get("stats") or {}
        out[k]["events"] += 1
        if e["event_type"] == "customer_enter":
            out[k]["footfall"] += st.get("person_count", 1)
        if e["event_type"] == "purchase":
            out[k]["revenue"] += st.get("order_amount", 0.0)
            bills[(day, str(st.get("bill_id") or e["event_id"]))] += st.get("order_amount", 0.0)
    for (day, _bill), total in bills.items():
        out[(day, "purchase")]["bills"] += 1
        out[(day, "purchase")]["bill_sq"] += total * total
    return out


def assert_totals(hub: Responder, events: list[dict[str, Any]]) -> None:
    """The hub's latest rows equal the events' totals per day and event type, and every slice
    partitions the day's events (so every slice's sums equal the total slice's)."""
    want = expected(events)
    got = hub.rows(STORE, "total")
    assert {(d, t) for d, _v, t in got} == set(want)
    for (day, _v, et), row in got.items():
        w = want[(day, et)]
        assert row["events"] == w["events"], (day, et)
        assert row["footfall"] == w.get("footfall", 0), (day, et)
        assert row["revenue"] == pytest.approx(w.get("revenue", 0.0), rel=1e-9, abs=1e-9), (day, et)
        assert row["bills"] == w.get("bills", 0), (day, et)
        assert row["bill_sq"] == pytest.approx(w.get("bill_sq", 0.0), rel=1e-9, abs=1e-9), (day, et)
    for slice_ in m.ROLLUP_SLICES[1:]:
        per: dict[tuple[str, str], float] = defaultdict(float)
        rev: dict[tuple[str, str], float] = defaultdict(float)
        for (day, _v, et), row in hub.rows(STORE, slice_).items():
            per[(day, et)] += row["events"]
            rev[(day, et)] += row["revenue"]
        assert dict(per) == {k: v["events"] for k, v in want.items()}, slice_
        for k, v in want.items():
            if slice_ != "product_category":  # a bill's lines may span categories: revenue still adds up
                assert rev[k] == pytest.approx(v.get("revenue", 0.0), rel=1e-9, abs=1e-9), slice_


def outbox_counts(db: Path) -> dict[str, int]:
    with Store.open(db, readonly=True) as store:
        return Outbox(store).counts()


def dirty_days(db: Path) -> int:
    with Store.open(db, readonly=True) as store:
        return len(Outbox(store).dirty_days())


def result(out: Any) -> dict[str, int]:
    assert out.returncode == 0, out.stderr
    got: dict[str, int] = json.loads(out.stdout)
    return got


# -- tests -----------------------------------------------------------------------------------------


def test_drain_confirms_everything_and_the_hub_totals_equal_the_events(
    db: Path, base: Any, broker: Any, hub: Responder
) -> None:
    got = result(sync(db, broker.url, "--once"))
    keys = DAYS * len(m.ROLLUP_SLICES)
    assert got == {"published": keys, "confirmed": keys, "parked": 0, "pending": 0}
    assert outbox_counts(db) == {"pending": 0, "done": keys, "parked": 0}
    assert dirty_days(db) == 0
    assert len(hub.latest) == keys and hub.duplicates == 0 and hub.bad == []
    assert all(s.version == 1 for s in hub.latest.values())
    assert_totals(hub, base[1])
    assert hub.wait(lambda: hub.statuses.get(STORE, {}).get("state") == "offline")
    # nothing new: a second run publishes nothing and exits 0
    assert result(sync(db, broker.url, "--once")) == {
        "published": 0,
        "confirmed": 0,
        "parked": 0,
        "pending": 0,
    }


def test_changed_days_get_a_new_version_and_totals_still_equal(
    db: Path, base: Any, broker: Any, hub: Responder
) -> None:
    result(sync(db, broker.url, "--once"))
    more = [e for e in _events(DAYS + 2, seed=12) if e["timestamp"] > base[1][-1]["timestamp"]]
    late = dict(base[1][0], event_id="late-1")  # one more event on the first day
    with Store.open(db) as store:
        assert store.import_events([*more, late]).rejected == 0
        assert store.import_events(base[1][:50]).duplicates == 50  # duplicates mark nothing
    got = result(sync(db, broker.url, "--once"))
    new_days = {m.rollup_key(k[0], s) for k in expected(more) for s in m.ROLLUP_SLICES}
    assert got["confirmed"] >= len(new_days) and got["pending"] == 0
    first_day = expected([late]).popitem()[0][0]
    assert hub.latest[(STORE, m.rollup_key(first_day, "total"))].version == 2
    assert_totals(hub, [*base[1], *more, late])


def test_resent_summaries_are_stored_once(db: Path, base: Any, broker: Any) -> None:
    silent = Responder(broker.port, client_id="silent-hub", receipt=False).start()
    out = sync(db, broker.url, "--once", "--timeout", "6")
    assert out.returncode == 3, out.stderr
    assert "has not confirmed" in out.stderr
    keys = DAYS * len(m.ROLLUP_SLICES)
    assert outbox_counts(db)["pending"] == keys  # unconfirmed stays pending
    assert silent.wait(lambda: silent.received == keys)
    silent.stop()
    hub = Responder(broker.port, client_id="silent-hub").start()  # the same hub, now answering
    hub.msg_ids, hub.latest, hub.received = silent.msg_ids, silent.latest, silent.received
    try:
        got = result(sync(db, broker.url, "--once"))
        assert got["confirmed"] == keys and got["pending"] == 0
        assert hub.duplicates >= keys  # every summary came again, none was stored twice
        assert len(hub.latest) == keys
        assert_totals(hub, base[1])
    finally:
        hub.stop()


def test_parked_summaries_are_marked_with_the_reason(db: Path, broker: Any) -> None:
    hub = Responder(broker.port, park=lambda s: "test_reason" if s.key.endswith("/zone") else None).start()
    try:
        got = result(sync(db, broker.url, "--once"))
    finally:
        hub.stop()
    assert got["parked"] == DAYS and got["confirmed"] == DAYS * (len(m.ROLLUP_SLICES) - 1)
    with Store.open(db, readonly=True) as store, store.read() as conn:
        rows = list(conn.execute("SELECT key, reason FROM outbox WHERE state = 'parked'"))
    assert len(rows) == DAYS and all(k.endswith("/zone") and r == "test_reason" for k, r in rows)


def test_broker_killed_mid_drain_and_restarted_without_persistence(
    db: Path, base: Any, broker: Any, hub: Responder
) -> None:
    keys = DAYS * len(m.ROLLUP_SLICES)
    fired = threading.Event()

    def kill_and_restart() -> None:
        broker.kill()
        time.sleep(1.0)
        broker.start()

    orig = hub.park

    def on_summary(s: m.Summary) -> str | None:
        if hub.received == keys // 3 and not fired.is_set():
            fired.set()
            threading.Thread(target=kill_and_restart).start()
        return orig(s) if orig else None

    hub.park = on_summary
    # what went out while the hub had not re-subscribed yet is re-sent after resend_after_s
    cfg = db.parent / "edge.toml"
    cfg.write_text("[sync]\nresend_after_s = 2.0\n[mqtt]\nbackoff_max_s = 1.0\n")
    got = result(sync(db, broker.url, "--once", "--timeout", "60", "--config", str(cfg)))
    assert fired.is_set()
    assert got["pending"] == 0 and got["confirmed"] == keys
    assert outbox_counts(db) == {"pending": 0, "done": keys, "parked": 0}
    assert len(hub.latest) == keys and all(s.version == 1 for s in hub.latest.values())
    assert_totals(hub, base[1])


def test_sync_killed_mid_drain_resumes(db: Path, base: Any, broker: Any, hub: Responder) -> None:
    keys = DAYS * len(m.ROLLUP_SLICES)
    proc = sync_popen(db, broker.url, "--once")
    killed = threading.Event()

    def on_summary(s: m.Summary) -> str | None:
        if hub.received == keys // 2 and not killed.is_set():
            killed.set()
            os.kill(proc.pid, signal.SIGKILL)
        return None

    hub.park = on_summary
    proc.communicate(timeout=60)
    assert killed.is_set() and proc.returncode == -signal.SIGKILL
    hub.park = None
    assert outbox_counts(db)["pending"] > 0  # killed before everything was confirmed
    got = result(sync(db, broker.url, "--once"))
    assert got["pending"] == 0
    assert outbox_counts(db) == {"pending": 0, "done": keys, "parked": 0}
    assert len(hub.latest) == keys and all(s.version == 1 for s in hub.latest.values())
    assert_totals(hub, base[1])


def test_long_outage_with_a_small_outbox_loses_nothing(tmp_path: Path) -> None:
    days, bound = 20, 40
    events = _events(days, seed=13)
    db = tmp_path / "outage.db"
    cfg = tmp_path / "edge.toml"
    cfg.write_text(f"[sync]\nmax_pending = {bound}\n")
    half = len(events) // 2
    with Store.open(db, timezone=TZ) as store:
        store.import_events(events[:half])
    dead = f"mqtt://127.0.0.1:{free_port()}"
    out = sync(db, dead, "--once", "--timeout", "2", "--config", str(cfg))
    assert out.returncode == 3 and "unreachable" in out.stderr
    assert "outbox full" in out.stderr
    # the outage goes on: more days arrive, and a day already pending changes again
    first_day_event = dict(events[0], event_id="outage-late")
    with Store.open(db) as store:
        store.import_events([*events[half:], first_day_event])
    out = sync(db, dead, "--once", "--timeout", "1", "--config", str(cfg))
    assert out.returncode == 3
    counts = outbox_counts(db)
    assert counts["pending"] <= bound and counts["done"] == 0
    assert dirty_days(db) > 0  # what does not fit waits as dirty days, not lost
    with Store.open(db, readonly=True) as store, store.read() as conn:
        (v,) = conn.execute("SELECT max(version) FROM outbox").fetchone()
    assert v == 2  # the first day changed while pending: its newer version replaced the pending one
    with running_mosquitto(tmp_path / "mq") as mq:
        hub = Responder(mq.port).start()
        try:
            got = result(sync(db, mq.url, "--once", "--config", str(cfg)))
            assert got["pending"] == 0
            n_days = len({d for d, _ in expected([*events, first_day_event])})
            assert len(hub.latest) == n_days * len(m.ROLLUP_SLICES)
            assert hub.received == len(hub.latest)  # latest version per key only: nothing superseded was sent
            assert dirty_days(db) == 0
            assert_totals(hub, [*events, first_day_event])
        finally:
            hub.stop()


def test_bad_credentials_exit_3_at_once_and_good_ones_sync(db: Path, tmp_path: Path) -> None:
    with running_mosquitto(tmp_path / "mq", users={STORE: "right", "hub": "hubpw"}) as mq:
        out = sync(
            db,
            mq.url,
            "--once",
            "--timeout",
            "600",
            env={"ADAMM_MQTT_USERNAME": STORE, "ADAMM_MQTT_PASSWORD": "wrong"},
            timeout=60,
        )
        assert out.returncode == 3, out.stderr
        assert "refused" in out.stderr and ("password" in out.stderr.lower() or "authorized" in out.stderr)
        assert outbox_counts(db)["pending"] == DAYS * len(m.ROLLUP_SLICES)
        cfg = tmp_path / "edge.toml"
        cfg.write_text(f'[mqtt]\nusername = "{STORE}"\npassword = "right"\n')
        hub = Responder(mq.port, username="hub", password="hubpw").start()
        try:
            got = result(sync(db, mq.url, "--once", "--config", str(cfg)))
        finally:
            hub.stop()
        assert got["pending"] == 0 and got["confirmed"] == DAYS * len(m.ROLLUP_SLICES)


def test_unreachable_broker_exits_3_within_the_timeout(db: Path) -> None:
    out = sync(db, f"mqtt://127.0.0.1:{free_port()}", "--once", "--timeout", "2", timeout=60)
    assert out.returncode == 3
    assert "unreachable" in out.stderr
    # --json: the summary on every exit, with why it stopped
    summary = json.loads(out.stdout)
    assert summary["pending"] == DAYS * len(m.ROLLUP_SLICES) and "unreachable" in summary["error"]
    assert outbox_counts(db)["pending"] == DAYS * len(m.ROLLUP_SLICES)


@pytest.mark.parametrize(
    "url", ["http://x:1", "mqtt://", "mqtt://h:99999", "mqtt://u:p@h:1", "mqtt://h:1/path"]
)
def test_a_bad_broker_url_is_a_usage_error(db: Path, url: str) -> None:
    out = sync(db, url, "--once")
    assert out.returncode == 2, out.stderr


def test_enqueued_facts_sync_scrubbed_and_versioned(db: Path, broker: Any, hub: Responder) -> None:
    fact = {
        "fact_id": "f-rain-aov",
        "statement": {"zh": "雨天客单价更高，联系 13812345678", "en": "Rainy days have higher order value"},
        "metric": "avg_order_value",
        "dimension": "weather",
        "value": "rain",
        "effect": 0.12,
        "n": 140,
        "p_value": 0.01,
        "confidence": 0.74,
        "evidence": ["e1", "e2"],
        "evidence_count": 140,
        "valid_from": "2025-09-01",
        "valid_to": None,
    }
    with Store.open(db) as store:

        def write(conn: Any, f: dict[str, Any]) -> str:
            with conn:
                return enqueue_fact(conn, f)

        assert store.writer.submit(lambda c: write(c, fact)).result() == "new"
        assert store.writer.submit(lambda c: write(c, fact)).result() == "unchanged"
        closed = dict(fact, valid_to="2025-10-01")
        assert store.writer.submit(lambda c: write(c, closed)).result() == "replaced"
    result(sync(db, broker.url, "--once"))
    s = hub.latest[(STORE, "fact/f-rain-aov")]
    assert s.kind == "fact" and s.version == 2 and s.body["valid_to"] == "2025-10-01"
    assert "13812345678" not in s.body["statement"]["zh"] and "***" in s.body["statement"]["zh"]
    assert hub.received == DAYS * len(m.ROLLUP_SLICES) + 1  # version 1 was replaced before it went out


def test_tls_with_the_ca_from_the_environment(db: Path, tmp_path: Path) -> None:
    ca, cert, key = make_certificates(tmp_path / "pki")
    with running_mosquitto(tmp_path / "mq", tls=(cert, key)) as mq:
        url = f"mqtts://127.0.0.1:{mq.port}"
        # without the CA the broker's certificate is not trusted: unreachable, exit 3
        out = sync(db, url, "--once", "--timeout", "2", timeout=60)
        assert out.returncode == 3 and "unreachable" in out.stderr
        hub = Responder(mq.port, tls_ca=str(ca)).start()
        try:
            got = result(sync(db, url, "--once", env={"ADAMM_MQTT_CA": str(ca)}))
        finally:
            hub.stop()
        assert got["confirmed"] == DAYS * len(m.ROLLUP_SLICES) and got["pending"] == 0


def test_closed_days_sync_as_closed_and_deleting_their_events_changes_nothing(
    db: Path, base: Any, broker: Any, hub: Responder
) -> None:
    from edge.memory.db.connect import connect
    from edge.memory.rollup import build as rollup

    result(sync(db, broker.url, "--once"))
    days = sorted({d for d, _ in expected(base[1])})
    conn = connect(db)
    try:
        assert rollup.close_days(conn, days[3]) == 3
    finally:
        conn.close()
    result(sync(db, broker.url, "--once"))
    for d in days[:3]:
        s = hub.latest[(STORE, m.rollup_key(d, "total"))]
        assert s.version == 2 and s.body["closed"] is True
    conn = connect(db)
    try:  # the closed days' events archived (the rollup is their record), an open day emptied
        conn.execute("DELETE FROM events WHERE local_date < ?", (days[3],))
        conn.execute("DELETE FROM events WHERE local_date = ?", (days[-1],))
    finally:
        conn.close()
    got = result(sync(db, broker.url, "--once"))
    assert got["confirmed"] == len(m.ROLLUP_SLICES)  # only the emptied day's summaries changed
    for d in days[:3]:
        assert hub.latest[(STORE, m.rollup_key(d, "total"))].version == 2
        cats = hub.latest[(STORE, m.rollup_key(d, "product_category"))].body["rows"]
        assert all(r["bill_sq"] > 0 for r in cats if r["event_type"] == "purchase")
    assert hub.latest[(STORE, m.rollup_key(days[-1], "total"))].body["rows"] == []
    assert hub.latest[(STORE, m.rollup_key(days[3], "total"))].version == 1  # untouched
    zone = ZoneInfo(TZ)
    kept = [
        e
        for e in base[1]
        if datetime.fromisoformat(e["timestamp"].replace("Z", "+00:00")).astimezone(zone).date().isoformat()
        != days[-1]
    ]
    assert_totals(hub, kept)


def test_sync_without_once_runs_until_sigterm_and_says_offline(db: Path, broker: Any, hub: Responder) -> None:
    keys = DAYS * len(m.ROLLUP_SLICES)
    proc = sync_popen(db, broker.url)
    try:
        assert hub.wait(lambda: len(hub.latest) == keys, timeout=60)
        assert hub.wait(lambda: hub.statuses.get(STORE, {}).get("state") == "online")
        # confirmed rows are marked done in the background; wait for the outbox to say so
        deadline = time.monotonic() + 60
        while outbox_counts(db)["pending"] and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert json.loads(out) == {"published": keys, "confirmed": keys, "parked": 0, "pending": 0}
    assert hub.wait(lambda: hub.statuses.get(STORE, {}).get("state") == "offline")


def test_a_memory_with_two_stores_syncs_each_under_its_own_id(
    tmp_path: Path, broker: Any, hub: Responder
) -> None:
    a = list(simulate(SimConfig(days=3, seed=31, store_id="sh_a_01")))
    b = list(simulate(SimConfig(days=2, seed=32, store_id="bj_b_02", timezone="Asia/Shanghai")))
    db = tmp_path / "two.db"
    with Store.open(db, timezone=TZ) as store:
        assert store.import_events([*a, *b]).rejected == 0
    got = result(sync(db, broker.url, "--once"))
    assert got["confirmed"] == 5 * len(m.ROLLUP_SLICES) and got["pending"] == 0
    assert {sid for sid, _k in hub.latest} == {"sh_a_01", "bj_b_02"}
    for sid, evs in (("sh_a_01", a), ("bj_b_02", b)):
        per_day = defaultdict(int)
        for (day, _v, _t), row in hub.rows(sid, "total").items():
            per_day[day] += row["events"]
        want = defaultdict(int)
        for (day, _t), w in expected(evs).items():
            want[day] += int(w["events"])
        assert dict(per_day) == dict(want), sid
    assert hub.wait(
        lambda: (
            {s: v["state"] for s, v in hub.statuses.items()} == {"sh_a_01": "offline", "bj_b_02": "offline"}
        )
    )


def test_the_worker_summarises_the_current_day_less_often(
    tmp_path: Path, broker: Any, hub: Responder
) -> None:
    from edge.sync.mqtt import LinkSettings, parse_broker_url
    from edge.sync.runner import SyncRun

    zone = ZoneInfo(TZ)
    today = datetime.now(zone).replace(hour=12, minute=0, second=0, microsecond=0)
    # another day of the store (not today): its summaries go at every interval
    other = today.replace(day=1) if today.day > 1 else today.replace(day=2)

    def ev(i: int, when: datetime) -> dict[str, Any]:
        return {
            "event_id": f"t{i}",
            "store_id": STORE,
            "timestamp": when.isoformat(),
            "event_type": "complaint",
            "modality": ["text"],
            "raw_ref": [f"text://{i}"],
        }

    db = tmp_path / "today.db"
    stop = threading.Event()
    with Store.open(db, timezone=TZ) as store:
        store.import_events([ev(1, today), ev(2, other)])
        run = SyncRun(store, LinkSettings(parse_broker_url(broker.url)))
        worker = threading.Thread(target=run.forever, args=(stop, 0.1, 3600.0))
        worker.start()
        try:
            assert hub.wait(lambda: len(hub.latest) == 2 * len(m.ROLLUP_SLICES))
            store.import_events([ev(3, today), ev(4, other.replace(hour=13))])
            # the other day is summarised again within an interval; today waits for its hour
            key_today = (STORE, m.rollup_key(today.date().isoformat(), "total"))
            key_other = (STORE, m.rollup_key(other.date().isoformat(), "total"))
            assert hub.wait(lambda: hub.latest[key_other].version == 2)
            assert hub.latest[key_today].version == 1
        finally:
            stop.set()
            worker.join(30)
        assert [d for _s, d, _g in Outbox(store).dirty_days()] == [today.date().isoformat()]


def test_a_queued_summary_over_the_limit_as_sent_is_parked_not_sent(
    db: Path, broker: Any, hub: Responder
) -> None:
    """A summary queued by an earlier release, measured before ``sent_at`` was stamped, just under
    the limit: stamped it would go out over it (and be parked by the hub for good), so the store
    parks it itself with the reason and sends the rest."""
    fact = {
        "fact_id": "f-big",
        "statement": {"zh": "雨天客单价更高", "en": "Rainy days have higher order value"},
        "metric": "avg_order_value",
        "dimension": "weather",
        "value": "rain",
        "effect": 0.12,
        "n": 140,
        "p_value": 0.01,
        "confidence": 0.74,
        "evidence": [],
        "evidence_count": 140,
        "valid_from": "2025-09-01",
        "valid_to": None,
    }
    with Store.open(db) as store:

        def write(conn: Any) -> None:
            with conn:
                enqueue_fact(conn, fact)
                (seq, mid) = conn.execute(
                    "SELECT seq, msg_id FROM outbox WHERE key = 'fact/f-big'"
                ).fetchone()
                s = m.Summary(mid, STORE, "fact", "fact/f-big", 1, fact)
                pad = m.MAX_MESSAGE_BYTES - 5 - len(s.encode())
                big = dict(fact, evidence=["x" * pad])
                payload = m.Summary(mid, STORE, "fact", "fact/f-big", 1, big).encode()
                assert m.MAX_MESSAGE_BYTES - 10 < len(payload) <= m.MAX_MESSAGE_BYTES
                conn.execute("UPDATE outbox_payloads SET payload = ? WHERE seq = ?", (payload, seq))

        store.writer.submit(write).result()
    result(sync(db, broker.url, "--once"))
    assert (STORE, "fact/f-big") not in hub.latest
    assert hub.received == DAYS * len(m.ROLLUP_SLICES)
    with Store.open(db, readonly=True) as store, store.read() as conn:
        state, reason = conn.execute("SELECT state, reason FROM outbox WHERE key = 'fact/f-big'").fetchone()
    assert state == "parked" and reason.startswith("too_large") and "as sent" in reason
