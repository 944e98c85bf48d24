"""The whole sync path with the real processes together (issue 15's tests): two edge memories of
different stores (simulated, different time zones, nine weeks at a small rate, facts distilled by
maintenance), each synced by a real ``adamm sync`` process, through a real Mosquitto
(tests/brokers.py) into a real ``adamm-hub serve`` (SQLite, or PostgreSQL with two workers).

After every run, for every metric and day, the hub's rows equal each edge's own totals (the
store's rollup source per store-local day and event type, every component; and the raw
simulated events for events, footfall, revenue, bills and bill_sq), every slice partitions its
day, the hub holds each edge's facts as the edge lists them, and nothing is doubled: each key
the edge sent is one ``hub_messages`` row at version 1 (the memories do not change while they
sync). Faults: the broker SIGKILLed mid-drain and restarted without persistence, ``adamm sync``
SIGKILLed mid-drain and rerun, the hub worker SIGKILLed mid-ingest and restarted, a long outage
with a small ``[sync] max_pending``, garbage on a store's summary topic, and two PostgreSQL
workers on the shared subscription with one killed.

Every edge runs with ``[sync] resend_after_s`` = 3 (:data:`RESEND_AFTER_S`): Mosquitto 2.0.11 (Debian 12) can stall the
redelivery to a resumed session after a SIGKILL, and then the edge's re-send of what stays
unreceipted is what completes the drain (the tests wait for the receipts, never for a time)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from brokers import mosquitto_available, running_mosquitto
from hub_data import Publisher, fresh_pg_dsn, pg_dsn  # noqa: F401  (fixture)
from test_hub_serve import Hub, hub_run

from edge.analysis.source import EventFilter
from edge.config import AdammConfig
from edge.memory.semantic import facts as repo
from edge.memory.store import Store
from edge.services.maintain import maintain
from edge.sim import SimConfig, simulate
from edge.sync import messages as m
from edge.sync.outbox import Outbox, fact_body
from hub.db import open_hub

pytestmark = pytest.mark.skipif(not mosquitto_available(), reason="mosquitto is not installed")

ROOT = Path(__file__).resolve().parents[1]
DAYS = 63
SIMS = {
    "sh_xuhui_01": SimConfig(store_id="sh_xuhui_01", timezone="Asia/Shanghai", days=DAYS, seed=7,
                             customers_per_day=20, with_text=False),
    "ny_soho_02": SimConfig(store_id="ny_soho_02", timezone="America/New_York", days=DAYS, seed=8,
                            customers_per_day=20, with_text=False),
}  # fmt: skip
#: ``[sync] resend_after_s`` of every edge here (default 30): small, so that the re-send of what
#: stays unreceipted completes the drains; not below the few seconds a hub needs to work through a
#: stalled backlog, since each row unreceipted that long is sent again (a 1 s value multiplied the
#: duplicates the hub had to read sixtyfold after a hub kill)
RESEND_AFTER_S = 3.0
#: the rollup components the hub sums (bill_sq is checked against the raw events)
COMPONENTS = tuple(f for f in m.ROLLUP_FIELDS if f != "bill_sq")


def _end(sim: SimConfig) -> datetime:
    start = datetime.combine(
        sim.start + timedelta(days=sim.days), datetime.min.time(), ZoneInfo(sim.timezone)
    )
    return start + timedelta(hours=2)


@dataclass
class Edge:
    """One store's base memory (copied by each test), its events and its expected totals."""

    store_id: str
    tz: str
    base: Path
    events: list[dict[str, Any]]
    own: dict[tuple[str, str], dict[str, float]]  # (day, event type) -> component -> value (store source)
    raw: dict[tuple[str, str], dict[str, float]]  # (day, event type) -> events/footfall/revenue/bills/bill_sq
    facts: list[dict[str, Any]]


def _raw_totals(events: list[dict[str, Any]], tz: str) -> dict[tuple[str, str], dict[str, float]]:
    zone = ZoneInfo(tz)
    out: dict[tuple[str, str], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    bills: dict[tuple[str, str], float] = defaultdict(float)
    for e in events:
        day = (
            datetime.fromisoformat(e["timestamp"].replace("Z", "+00:00")).astimezone(zone).date().isoformat()
        )
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
    return {k: dict(v) for k, v in out.items()}


def _own_totals(store: Store, store_id: str) -> dict[tuple[str, str], dict[str, float]]:
    agg = store.event_source().aggregate(
        EventFilter(store_ids=(store_id,)), ("date", "event_type"), COMPONENTS
    )
    out = {}
    for raw in agg.rows:
        d = dict(zip(agg.columns, raw, strict=True))
        out[(str(d["date"]), str(d["event_type"]))] = {c: float(d[c] or 0) for c in COMPONENTS}
    return out


@pytest.fixture(scope="module")
def edges(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Edge]:
    out = {}
    for sid, sim in SIMS.items():
        path = tmp_path_factory.mktemp(f"edge-{sid}") / "store.db"
        events = list(simulate(sim))
        with Store.open(path, timezone=sim.timezone) as store:
            assert store.import_events(events).rejected == 0
            report = maintain(store, AdammConfig(), _end(sim))
            assert report["facts"]["opened"] > 0, report["facts"]
            own = _own_totals(store, sid)
            with store.read() as conn:
                facts = repo.list_facts(conn)
        out[sid] = Edge(sid, sim.timezone, path, events, own, _raw_totals(events, sim.timezone), facts)
    return out


@dataclass
class World:
    """A test's copies of the edge memories, its broker, its hub target and the edges' config."""

    tmp: Path
    dbs: dict[str, Path]
    broker: Any
    hub_db: str
    config: Path

    def sync_cmd(self, sid: str, *args: str, config: Path | None = None) -> list[str]:
        return [sys.executable, "-m", "edge", "sync", "--db", str(self.dbs[sid]), "--broker", self.broker.url,
                "--once", "--json", "--config", str(config or self.config), *args]  # fmt: skip

    def sync(self, sid: str, *args: str, config: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.sync_cmd(sid, *args, config=config),
            capture_output=True,
            text=True,
            env=_env(),
            cwd=ROOT,
            timeout=300,
        )

    def sync_popen(self, sid: str, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.sync_cmd(sid, *args),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(),
            cwd=ROOT,
        )

    def hub(self, *args: str) -> Hub:
        h = Hub(self.tmp, "--db", self.hub_db, "--broker", self.broker.url, *args)
        h.wait_subscribed()
        return h


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def _config(path: Path, **sync: object) -> Path:
    lines = ["[sync]", f"resend_after_s = {RESEND_AFTER_S}", *(f"{k} = {v}" for k, v in sync.items())]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Any]:
    with running_mosquitto(tmp_path / "mq") as b:
        yield b


def _world(tmp_path: Path, edges: dict[str, Edge], broker: Any, hub_db: str | None = None) -> World:
    dbs = {}
    for sid, e in edges.items():
        dbs[sid] = tmp_path / f"{sid}.db"
        shutil.copy(e.base, dbs[sid])
    return World(tmp_path, dbs, broker, hub_db or str(tmp_path / "hub.db"), _config(tmp_path / "edge.toml"))


@pytest.fixture
def world(tmp_path: Path, edges: dict[str, Edge], broker: Any) -> World:
    return _world(tmp_path, edges, broker)


def _ok(out: subprocess.CompletedProcess[str]) -> dict[str, int]:
    assert out.returncode == 0, out.stderr[-3000:]
    return dict(json.loads(out.stdout))


def _received(hub_db: str) -> int:
    db = open_hub(hub_db)
    try:
        (n,) = db.one("SELECT count(*) FROM hub_messages") or (0,)
        return int(n)
    finally:
        db.close()


def _wait_for(cond: Callable[[], bool], what: str, proc: subprocess.Popen[str] | None = None) -> None:
    deadline = time.monotonic() + 120
    while not cond():
        assert proc is None or proc.poll() is None, f"{what}: the process ended first: {proc.stderr}"
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def _sent_keys(db: Path) -> dict[str, int]:
    """key -> version of every summary the edge's outbox holds, all done."""
    with Store.open(db, readonly=True, create=False) as store, store.read() as conn:
        rows = conn.execute("SELECT key, version, state FROM outbox").fetchall()
    assert {str(s) for _k, _v, s in rows} == {"done"}, "every summary is confirmed by the hub"
    return {str(k): int(v) for k, v, _s in rows}


def assert_hub_equals_edges(w: World, edges: dict[str, Edge]) -> None:
    db = open_hub(w.hub_db)
    try:
        cols = ", ".join(COMPONENTS + ("bill_sq",))
        for sid, e in edges.items():
            got: dict[tuple[str, str], dict[str, float]] = {}
            for row in db.query(
                f"SELECT local_date, event_type, {cols} FROM hub_rollup WHERE store_id = ? AND slice = 'total'",
                (sid,),
            ):
                got[(str(row[0]), str(row[1]))] = dict(
                    zip((*COMPONENTS, "bill_sq"), map(float, row[2:]), strict=True)
                )
            assert set(got) == set(e.own) == set(e.raw), sid
            for k, own in e.own.items():
                for c in COMPONENTS:
                    assert got[k][c] == pytest.approx(own[c], rel=1e-9, abs=1e-9), (sid, k, c)
                for c in ("events", "footfall", "revenue", "bills", "bill_sq"):
                    assert got[k][c] == pytest.approx(e.raw[k].get(c, 0.0), rel=1e-9, abs=1e-9), (sid, k, c)
            for slice_ in m.ROLLUP_SLICES[1:]:  # every slice partitions its day's events
                per: dict[tuple[str, str], float] = defaultdict(float)
                for day, et, n in db.query(
                    "SELECT local_date, event_type, events FROM hub_rollup WHERE store_id = ? AND slice = ?",
                    (sid, slice_),
                ):
                    per[(str(day), str(et))] += float(n)
                assert dict(per) == {k: v["events"] for k, v in e.raw.items()}, (sid, slice_)
            facts = {
                str(fid): json.loads(str(body))
                for fid, body in db.query("SELECT fact_id, body FROM hub_facts WHERE store_id = ?", (sid,))
            }
            assert facts == {f["fact_id"]: fact_body(f) for f in e.facts}, sid
            # nothing doubled: one message per key the edge sent, at its version
            sent = _sent_keys(w.dbs[sid])
            held = {
                str(k): int(v)
                for k, v in db.query("SELECT key, version FROM hub_summaries WHERE store_id = ?", (sid,))
            }
            assert held == sent and set(sent.values()) == {1}, sid
            (n,) = db.one("SELECT count(*) FROM hub_messages WHERE store_id = ?", (sid,)) or (0,)
            assert int(n) == len(sent), sid
    finally:
        db.close()


def _status(w: World) -> dict[str, Any]:
    out = hub_run("status", "--db", w.hub_db, "--json")
    assert out.returncode == 0, out.stderr
    return dict(json.loads(out.stdout))


# -- the path without faults ------------------------------------------------------------------------


def test_two_edges_and_a_hub_hold_the_same_totals_facts_and_answers(
    world: World, edges: dict[str, Edge]
) -> None:
    hub = world.hub()
    try:
        # garbage on a store's summary topic: parked with its reason, the hub keeps serving
        raw = Publisher(world.broker.port, client_id="test-garbage")
        try:
            raw.publish(m.summary_topic("sh_xuhui_01"), b"\xff not json {")
        finally:
            raw.close()
        for sid in edges:
            counts = _ok(world.sync(sid))
            # published counts re-sends too (after resend_after_s without a receipt)
            assert counts["pending"] == 0 and counts["published"] >= counts["confirmed"] > 0
        assert_hub_equals_edges(world, edges)
        # a second run has nothing to send
        assert _ok(world.sync("sh_xuhui_01"))["published"] == 0
        status = {s["store_id"]: s for s in _status(world)["stores"]}
        for sid, e in edges.items():
            assert status[sid]["counts"] == {
                "rollup": len({d for d, _ in e.own}) * len(m.ROLLUP_SLICES),
                "fact": len(e.facts),
            }
            assert status[sid]["tz"] == e.tz
        assert len(status["sh_xuhui_01"]["parked"]) == 1 and status["ny_soho_02"]["parked"] == []
        assert _status(world)["parked"]["by_reason"] == {"not_json": 1}
        _cross_store_answers(world, edges)
    finally:
        assert hub.stop() == 0, hub.log()


def _ask(cmd: list[str]) -> dict[str, Any]:
    out = subprocess.run(cmd, capture_output=True, text=True, env=_env(), cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    return dict(json.loads(out.stdout))


def _cross_store_answers(w: World, edges: dict[str, Edge]) -> None:
    """``adamm-hub ask --json`` across the stores equals each edge's own ``adamm ask --json``."""
    now = "2025-10-15T12:00:00+00:00"
    hub_ask = [sys.executable, "-m", "hub", "ask", "--db", w.hub_db, "--now", now, "--json"]
    top = _ask([*hub_ask, "2025年9月哪个门店的销售额最高？"])
    assert top["status"] == "ok", top
    items = top["result"]["items"]
    assert {i["key"] for i in items} == set(edges)
    for item in items:
        own = _ask([sys.executable, "-m", "edge", "ask", "--db", str(w.dbs[item["key"]]), "--now", now, "--json",
                    "2025年9月的销售额是多少？"])  # fmt: skip
        assert own["status"] == "ok" and own["result"]["value"] == pytest.approx(item["value"], rel=1e-9)
    footfall = _ask([*hub_ask, "Compare footfall across stores in September 2025"])
    assert footfall["status"] == "ok", footfall
    for g in footfall["result"]["groups"]:
        own = _ask([sys.executable, "-m", "edge", "ask", "--db", str(w.dbs[g["key"]]), "--now", now, "--json",
                    "total footfall in September 2025"])  # fmt: skip
        assert own["status"] == "ok"
        # compared as the mean per store-local day (30 in September); payload numbers are rounded
        assert g["value"] == pytest.approx(own["result"]["value"] / 30, abs=1e-3)


# -- faults, each followed by the same equality -------------------------------------------------------


def _sync_all(w: World, edges: dict[str, Edge]) -> None:
    for sid in edges:
        assert _ok(w.sync(sid))["pending"] == 0


def _total_keys(edges: dict[str, Edge]) -> int:
    return sum(len({d for d, _ in e.own}) * len(m.ROLLUP_SLICES) + len(e.facts) for e in edges.values())


def test_the_broker_sigkilled_mid_drain_and_restarted_without_persistence(
    world: World, edges: dict[str, Edge]
) -> None:
    hub = world.hub()
    try:
        proc = world.sync_popen("sh_xuhui_01")
        _wait_for(lambda: _received(world.hub_db) >= 60, "the hub receives the first summaries", proc)
        world.broker.kill()  # SIGKILL: sessions, queued and in-flight messages gone
        assert proc.poll() is None, "killed mid-drain"
        world.broker.start()  # same port, no persistence
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-3000:]
        assert json.loads(out)["pending"] == 0
        _sync_all(world, edges)
        assert_hub_equals_edges(world, edges)
    finally:
        assert hub.stop() == 0, hub.log()


def test_adamm_sync_sigkilled_mid_drain_then_rerun(world: World, edges: dict[str, Edge]) -> None:
    hub = world.hub()
    try:
        proc = world.sync_popen("ny_soho_02")
        _wait_for(lambda: _received(world.hub_db) >= 60, "the hub receives the first summaries", proc)
        proc.kill()
        proc.communicate(timeout=30)
        with Store.open(world.dbs["ny_soho_02"], readonly=True, create=False) as store:
            left = Outbox(store).counts()
        assert left["pending"] > 0, "killed mid-drain"
        _sync_all(world, edges)
        assert_hub_equals_edges(world, edges)
    finally:
        assert hub.stop() == 0, hub.log()


def test_the_hub_sigkilled_mid_ingest_and_restarted(world: World, edges: dict[str, Edge]) -> None:
    hub = world.hub()
    procs = {sid: world.sync_popen(sid) for sid in edges}
    try:
        _wait_for(lambda: _received(world.hub_db) >= 100, "the hub ingests the first summaries")
        hub.kill()
        assert _received(world.hub_db) < _total_keys(edges), "killed mid-ingest"
        hub = world.hub()
        for sid, proc in procs.items():
            out, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, (sid, err[-3000:])
        assert_hub_equals_edges(world, edges)
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
        if hub.proc.poll() is None:
            assert hub.stop() == 0, hub.log()


@pytest.mark.slow
def test_a_long_outage_with_a_small_outbox_bound_then_catch_up(
    tmp_path: Path, edges: dict[str, Edge], broker: Any
) -> None:
    """Two weeks synced, then the broker is gone while seven more weeks of days (and the facts
    maintenance distils from them) accumulate; a sync during the outage fills the outbox to its
    bound (40) and leaves the other days marked; once the broker is back, one run catches up."""
    w = _world(tmp_path, edges, broker)
    sh = edges["sh_xuhui_01"]
    sim = SIMS["sh_xuhui_01"]
    zone = ZoneInfo(sh.tz)
    cut = (sim.start + timedelta(days=14)).isoformat()

    def local_day(e: dict[str, Any]) -> str:
        return (
            datetime.fromisoformat(e["timestamp"].replace("Z", "+00:00")).astimezone(zone).date().isoformat()
        )

    db = w.dbs["sh_xuhui_01"]
    db.unlink()
    with Store.open(db, timezone=sh.tz) as store:
        assert store.import_events([e for e in sh.events if local_day(e) < cut]).rejected == 0
    bounded = _config(tmp_path / "bounded.toml", max_pending=40)
    hub = w.hub()
    try:
        _sync_all(w, edges)
        broker.kill()  # the outage
        with Store.open(db, create=False) as store:
            assert store.import_events([e for e in sh.events if local_day(e) >= cut]).rejected == 0
            maintain(store, AdammConfig(), _end(sim))
        during = w.sync("sh_xuhui_01", "--timeout", "3", config=bounded)
        assert during.returncode == 3, during.stderr
        with Store.open(db, readonly=True, create=False) as store:
            box = Outbox(store)
            pending, dirty = box.counts()["pending"], len(box.dirty_days())
        assert pending <= 40 + len(sh.facts) and dirty > 0, (pending, dirty)
        broker.start()  # back, empty (no persistence)
        assert _ok(w.sync("sh_xuhui_01", config=bounded))["pending"] == 0
        with Store.open(db, readonly=True, create=False) as store:
            assert Outbox(store).dirty_days() == []
        assert_hub_equals_edges(w, edges)
    finally:
        assert hub.stop() == 0, hub.log()


@pytest.mark.slow
def test_two_postgres_workers_on_the_shared_subscription_one_killed(
    tmp_path: Path, edges: dict[str, Edge], broker: Any, request: pytest.FixtureRequest
) -> None:
    w = _world(tmp_path, edges, broker, fresh_pg_dsn(request.getfixturevalue("pg_dsn")))
    workers = {n: w.hub("--worker", str(n)) for n in (1, 2)}
    procs = {sid: w.sync_popen(sid) for sid in edges}
    try:
        _wait_for(lambda: _received(w.hub_db) >= 100, "the workers ingest the first summaries")
        workers[1].kill()
        assert _received(w.hub_db) < _total_keys(edges), "killed mid-ingest"
        for sid, proc in procs.items():  # worker 2 alone takes what worker 1 never receipted
            out, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, (sid, err[-3000:])
        assert_hub_equals_edges(w, edges)
        assert workers[2].stop() == 0, workers[2].log()
        assert "'stored':" in workers[2].log(), workers[2].log()  # its totals, logged as it stops
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
        if workers[2].proc.poll() is None:
            assert workers[2].stop() == 0, workers[2].log()
