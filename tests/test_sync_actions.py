"""``adamm sync`` carries the store's actions (CONTRACT.md section 1; issue 16: a store's MQTT
connection belongs to one process): while it runs it holds the store's connection lock, so
``adamm action send`` only queues; the worker sends, a staff device acknowledges, the worker
records the ack (``adamm actions`` shows ``done``); an ack made while no worker runs waits in the
store's persistent session; an expiry with no device is marked ``expired`` by the worker. Real
Mosquitto, every command a real process."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from actions_helpers import (
    ROOT,
    STORE,
    Peer,
    Staff,
    actions,
    adamm,
    adamm_json,
    env,
    eventually,
    make_memory,
    register_device,
)
from brokers import Mosquitto, mosquitto_available, running_mosquitto

from edge.memory.store import Store
from edge.sync import messages
from edge.sync.actions import worker_running

pytestmark = pytest.mark.skipif(not mosquitto_available(), reason="mosquitto is not installed")


@pytest.fixture()
def broker(tmp_path: Path) -> Iterator[Mosquitto]:
    with running_mosquitto(tmp_path / "broker") as b:
        yield b


class SyncProcess:
    """``adamm sync`` without ``--once`` (no hub: its summaries stay pending, which is fine)."""

    def __init__(self, db: Path, broker: str, environ: dict[str, str]) -> None:
        self.log = db.parent / f"sync-{id(self)}.log"
        with self.log.open("w") as f:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "edge", "-v", "sync", "--db", str(db), "--broker", broker, "--json"],
                stdout=subprocess.PIPE,
                stderr=f,
                text=True,
                env=environ,
                cwd=ROOT,
            )
        self.db = db

    def wait_owner(self) -> SyncProcess:
        """Until it holds the store's connection lock and the broker granted its subscriptions."""
        assert eventually(lambda: worker_running(self.db) or self.proc.poll() is not None, 60)
        assert self.proc.poll() is None, self.log.read_text()
        assert eventually(lambda: "subscribed to" in self.log.read_text(), 60), self.log.read_text()
        return self

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        out, _ = self.proc.communicate(timeout=60)
        return self.proc.returncode

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(10)


def _states(db: Path) -> dict[str, tuple[str, int, str | None]]:
    """The stored state (not the read-time one), attempts and who acknowledged, per action."""
    with Store.open(db, readonly=True) as store, store.read() as conn:
        return {
            str(a): (str(s), int(n), b)
            for a, s, n, b in conn.execute("SELECT action_id, state, attempts, acked_by FROM actions")
        }


def _send(db: Path, broker: str, e: dict[str, str], title: str, *extra: str) -> dict:
    return adamm_json(
        "action", "send", "--db", str(db), "--broker", broker, "--role", "cashier",
        "--type", "work_order", "--title", title, *extra, environ=e,
    )  # fmt: skip


def test_adamm_sync_sends_the_queued_action_and_records_the_ack(tmp_path: Path, broker: Mosquitto) -> None:
    db = make_memory(tmp_path / "m.db")
    e = env(tmp_path)
    register_device(broker.url, e)  # the device's session exists; it is offline now
    sync = SyncProcess(db, broker.url, e).wait_owner()
    try:
        # a second sync worker cannot take the store's connection
        other = adamm("sync", "--db", str(db), "--broker", broker.url, "--once", "--timeout", "1", environ=e)
        assert other.returncode == 3 and "another process holds" in other.stderr, other.stderr
        queued = _send(db, broker.url, e, "Open checkout 3")
        # the worker may already have published it by the time the command reads the row back
        assert queued["via"] == "worker" and queued["state"] in ("pending", "sent"), queued
        aid = queued["action_id"]
        # the worker publishes it; the device (offline when it was sent, or not) gets it and acks
        rc, shown, err = Staff(broker.url, e, "--json", "--ack", "done", "--once").finish()
        assert rc == 0, err
        assert [a["action_id"] for a in shown] == [aid]
        assert eventually(lambda: actions(db, e)[aid]["state"] == "done", 60), sync.log.read_text()
        got = actions(db, e)[aid]
        assert got["acked_by"].startswith("cashier@")  # ROLE@HOST: the device has no MQTT user
        assert _states(db)[aid][0] == "done" and _states(db)[aid][1] >= 1
        # the worker cleared the ended action's retained message: a device new to the store gets nothing
        time.sleep(1.0)
        fresh = Peer(broker.port, "a-new-handheld", subscribe=messages.action_filter(STORE, "cashier"))
        try:
            time.sleep(1.0)
            assert [p for _t, p in fresh.got if p] == []
        finally:
            fresh.close()
        # `adamm action sync` beside a running worker leaves the connection to it
        assert adamm_json("action", "sync", "--db", str(db), "--broker", broker.url, environ=e) == {
            "via": "worker"
        }
    finally:
        assert sync.stop() == 0, sync.log.read_text()
    assert not worker_running(db)  # the lock is released on exit
    assert len(actions(db, e)) == 1


def test_an_ack_made_while_no_worker_runs_is_recorded_when_it_comes_back(
    tmp_path: Path, broker: Mosquitto
) -> None:
    db = make_memory(tmp_path / "m.db")
    e = env(tmp_path)
    register_device(broker.url, e)
    sync = SyncProcess(db, broker.url, e).wait_owner()
    try:
        aid = _send(db, broker.url, e, "Restock aisle 2")["action_id"]
        assert eventually(lambda: _states(db)[aid][0] == "sent", 60), sync.log.read_text()
    finally:
        sync.kill()  # SIGKILL: the store's session (its ack/+ subscription) stays on the broker
    assert not worker_running(db)  # the kernel dropped the lock
    rc, shown, err = Staff(broker.url, e, "--json", "--ack", "done", "--once").finish()
    assert rc == 0 and [a["action_id"] for a in shown] == [aid], err
    assert _states(db)[aid][0] == "sent"  # nobody has read the ack yet: it waits in the session
    sync = SyncProcess(db, broker.url, e).wait_owner()
    try:
        assert eventually(lambda: _states(db)[aid][0] == "done", 60), sync.log.read_text()
    finally:
        assert sync.stop() == 0, sync.log.read_text()
    assert [(s, b is not None) for s, _n, b in _states(db).values()] == [("done", True)]


def test_the_worker_marks_an_action_nobody_acknowledged_expired(tmp_path: Path, broker: Mosquitto) -> None:
    db = make_memory(tmp_path / "m.db")
    e = env(tmp_path)
    sync = SyncProcess(db, broker.url, e).wait_owner()
    try:
        aid = _send(db, broker.url, e, "Mop the entrance", "--expires-in", "2s")["action_id"]
        assert eventually(lambda: _states(db)[aid][0] == "expired", 60), sync.log.read_text()
    finally:
        assert sync.stop() == 0, sync.log.read_text()
    assert actions(db, e)[aid]["state"] == "expired"


def test_the_daemons_sync_worker_owns_the_connection_and_carries_the_actions(
    tmp_path: Path, broker: Mosquitto
) -> None:
    """The daemon's worker (:class:`edge.daemon.sync.SyncWorker`, as ``adamm run`` starts it):
    it holds the lock while it runs, so `adamm action send` queues; it sends, records the ack."""
    from edge.config import ActionsConfig, MqttConfig, SyncConfig
    from edge.daemon.sync import SyncWorker

    db = make_memory(tmp_path / "m.db")
    e = env(tmp_path)
    register_device(broker.url, e)
    with Store.open(db) as store:
        worker = SyncWorker(
            store, SyncConfig(broker=broker.url, interval_s=0.2), MqttConfig(), ActionsConfig(), drain_s=0.0
        )
        worker.start()
        try:
            assert eventually(lambda: worker_running(db) and bool(worker.run_.syncs), 60)
            assert eventually(lambda: worker.run_.syncs["sh_01"].link.connected.is_set(), 60)
            queued = _send(db, broker.url, e, "Check the fitting rooms")
            assert queued["via"] == "worker" and queued["state"] in ("pending", "sent"), queued
            rc, shown, err = Staff(broker.url, e, "--json", "--ack", "accepted", "--once").finish()
            assert rc == 0 and [a["action_id"] for a in shown] == [queued["action_id"]], err
            assert eventually(lambda: actions(db, e)[queued["action_id"]]["state"] == "accepted", 60)
        finally:
            worker.stop()
        assert worker.state == "stopped" and not worker.is_alive()
    assert not worker_running(db)
    assert [s for s, _n, _b in _states(db).values()] == ["accepted"]
