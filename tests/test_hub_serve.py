"""``adamm-hub serve`` against a real Mosquitto (started by the test on a free port with the
project's config), fed by a test publisher built on edge.sync.messages: receipts only after the
hub's commit, bad messages parked while it keeps serving, a worker SIGKILLed mid-ingest loses
nothing, two PostgreSQL workers share one MQTT 5 shared subscription."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from brokers import free_port, mosquitto_available, running_mosquitto
from hub_data import Publisher, day_summaries, fresh_pg_dsn, pg_dsn, rollup, row  # noqa: F401

from edge.sync import messages as m
from hub.db import open_hub

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(not mosquitto_available(), reason="mosquitto is not installed")


class Hub:
    """One ``adamm-hub serve`` process; its stderr goes to a file (read by :meth:`log`)."""

    def __init__(self, tmp: Path, *args: str) -> None:
        self.err = tmp / f"hub-{time.monotonic_ns()}.log"
        with self.err.open("wb") as f:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "hub", "-v", "serve", *args],
                cwd=ROOT,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
                stdout=subprocess.DEVNULL,
                stderr=f,
            )

    def log(self) -> str:
        return self.err.read_text(errors="replace")

    def wait_subscribed(self) -> None:
        """Until the hub says it subscribed (after the broker's SUBACK)."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.log()
            if "subscribed to" in self.log():
                return
            time.sleep(0.05)
        raise AssertionError(f"the hub did not subscribe: {self.log()}")

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(30)

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)


def hub_run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hub", *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[object]:
    with running_mosquitto(tmp_path / "mq") as b:
        yield b


def _totals(target: str) -> tuple[dict[str, float], int]:
    db = open_hub(target)
    try:
        got = {
            s: float(t) for s, t in db.query("SELECT store_id, sum(events) FROM hub_rollup GROUP BY store_id")
        }
        (n,) = db.one("SELECT count(*) FROM hub_messages") or (0,)
        return got, int(n)
    finally:
        db.close()


def test_serve_stores_receipts_and_parks_while_it_keeps_serving(tmp_path: Path, broker: object) -> None:
    db = str(tmp_path / "hub.db")
    hub = Hub(tmp_path, "--db", db, "--broker", broker.url)  # type: ignore[attr-defined]
    pub = Publisher(broker.port)  # type: ignore[attr-defined]
    try:
        hub.wait_subscribed()
        msgs, totals = day_summaries(["sh_01", "bj_02"], 10)
        pub.publish(
            m.status_topic("sh_01"), m.status_payload("online", "2025-10-11T08:00:00+00:00"), retain=True
        )
        bad = rollup("sh_01", "2025-10-01", "hour", [row(14)])
        pub.publish(m.summary_topic("bj_02"), bad.encode())  # wrong store for its topic
        pub.publish(m.summary_topic("sh_01"), b"\xff not json")
        for s in msgs + msgs[:5]:  # five re-sent
            pub.send(s)
        assert pub.wait_stored({s.msg_id for s in msgs})
        deadline = time.monotonic() + 30
        while bad.msg_id not in pub.parked and time.monotonic() < deadline:
            time.sleep(0.05)
        assert pub.parked.get(bad.msg_id) == "wrong_store"
        got, n = _totals(db)
        assert got == totals and n == len(msgs)
        st = hub_run("status", "--db", db, "--json")
        assert st.returncode == 0, st.stderr
        status = json.loads(st.stdout)
        by = {s["store_id"]: s for s in status["stores"]}
        assert set(by) == {"sh_01", "bj_02"}
        assert by["sh_01"]["state"] == "online" and by["sh_01"]["counts"] == {"rollup": 10, "fact": 0}
        assert by["sh_01"]["at"] == "2025-10-11T08:00:00+00:00"
        assert by["bj_02"]["days"] == {"first": "2025-10-01", "last": "2025-10-10", "count": 10}
        assert [(p["msg_id"], p["reason"]) for p in by["bj_02"]["parked"]] == [(bad.msg_id, "wrong_store")]
        assert by["bj_02"]["diverged"] == []
        assert set(by["bj_02"]) >= {"store_id", "state", "at", "last_summary_at", "days", "counts", "parked"}
        assert status["parked"]["count"] == 2
        assert status["parked"]["by_reason"] == {"not_json": 1, "wrong_store": 1}
        text = hub_run("status", "--db", db)
        assert text.returncode == 0 and "sh_01" in text.stdout and "wrong_store" in text.stdout
    finally:
        pub.close()
        rc = hub.stop()
    assert rc == 0, hub.log()
    assert "parked a message" in hub.log()


def _killed_mid_ingest(tmp_path: Path, broker: object, target: str, workers: int) -> None:
    msgs, totals = day_summaries(["sh_01", "bj_02", "gz_03"], 120, seed=5)
    url = broker.url  # type: ignore[attr-defined]
    hubs = {
        w: Hub(tmp_path, "--db", target, "--broker", url, "--worker", str(w)) for w in range(1, workers + 1)
    }
    pub = Publisher(broker.port)  # type: ignore[attr-defined]
    try:
        for h in hubs.values():
            h.wait_subscribed()
        for s in msgs:
            pub.send(s)
        deadline = time.monotonic() + 60
        while len(pub.stored) < len(msgs) // 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(pub.stored) < len(msgs), "the hub finished before it could be killed: send more"
        hubs[1].kill()  # mid-stream: some stored, some in flight, most not yet received
        hubs[1] = Hub(tmp_path, "--db", target, "--broker", url, "--worker", "1")
        ids = {s.msg_id for s in msgs}
        # the broker redelivers what the killed worker had not acknowledged; Mosquitto 2.0.11
        # sometimes stalls a resumed session that had messages in flight (its inflight quota,
        # fixed in 2.0.13), and then the edge's re-send (here the publisher's) is what delivers
        assert pub.wait_stored(ids, timeout=90, resend=msgs), (
            len(ids - pub.stored),
            [h.log()[-2000:] for h in hubs.values()],
        )
        got, n = _totals(target)
        assert got == totals
        assert n == len(msgs)
        if workers > 1:  # the shared subscription split the stream: the other worker stored some
            assert hubs[2].stop() == 0
            assert "'stored':" in hubs[2].log(), hubs[2].log()
    finally:
        pub.close()
        for h in hubs.values():
            if h.proc.poll() is None:
                assert h.stop() == 0, h.log()


def test_a_sqlite_hub_killed_mid_ingest_loses_nothing_and_doubles_nothing(
    tmp_path: Path, broker: object
) -> None:
    _killed_mid_ingest(tmp_path, broker, str(tmp_path / "hub.db"), 1)


def test_two_postgres_workers_share_the_stream_one_killed(
    tmp_path: Path, broker: object, request: pytest.FixtureRequest
) -> None:
    _killed_mid_ingest(tmp_path, broker, fresh_pg_dsn(request.getfixturevalue("pg_dsn")), 2)


def test_an_unreachable_broker_is_exit_3_with_what_to_do(tmp_path: Path) -> None:
    cfg = tmp_path / "hub.toml"
    cfg.write_text("[mqtt]\nconnect_timeout_s = 1.0\n")
    r = hub_run(
        "serve",
        "--db",
        str(tmp_path / "h.db"),
        "--broker",
        f"mqtt://127.0.0.1:{free_port()}",
        "--config",
        str(cfg),
    )
    assert r.returncode == 3, r.stderr
    assert "unreachable" in r.stderr and r.stdout == ""


def test_usage_errors_are_exit_2(tmp_path: Path) -> None:
    r = hub_run("serve", "--db", str(tmp_path / "h.db"), "--broker", "http://x:1")
    assert r.returncode == 2 and "mqtt://" in r.stderr
    r = hub_run("serve", "--db", str(tmp_path / "h.db"), "--broker", "mqtt://user:pw@x:1")
    assert r.returncode == 2 and "ADAMM_MQTT_USERNAME" in r.stderr
    assert not (tmp_path / "h.db").exists()


@pytest.mark.skipif(shutil.which("mosquitto_passwd") is None, reason="mosquitto_passwd is not installed")
def test_bad_credentials_stop_at_once_with_exit_3(tmp_path: Path) -> None:
    pw = tmp_path / "passwd"
    subprocess.run(["mosquitto_passwd", "-b", "-c", str(pw), "hub", "right"], check=True, capture_output=True)
    pw.chmod(0o644)
    for d in (tmp_path, *tmp_path.parents):  # the broker reads it as its own user (mosquitto, when root)
        if str(d) in ("/", "/tmp"):
            break
        d.chmod(d.stat().st_mode | 0o755)
    with running_mosquitto(tmp_path / "mq", extra=f"allow_anonymous false\npassword_file {pw}") as b:
        for env in ({"ADAMM_MQTT_USERNAME": "hub", "ADAMM_MQTT_PASSWORD": "wrong"}, {}):
            r = subprocess.run(
                [sys.executable, "-m", "hub", "serve", "--db", str(tmp_path / "h.db"), "--broker", b.url],
                cwd=ROOT,
                env={**os.environ, "PYTHONPATH": str(ROOT), **env},
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert r.returncode == 3, r.stderr
            assert "refused the hub's credentials" in r.stderr and "ADAMM_MQTT_PASSWORD" in r.stderr
            assert r.stdout == ""


def test_the_broker_killed_and_restarted_without_persistence(tmp_path: Path, broker: object) -> None:
    """The hub reconnects (back-off), subscribes again on the new broker and keeps storing;
    what the dead broker held is re-sent by the store's side: exact totals, nothing doubled."""
    msgs, totals = day_summaries(["sh_01", "bj_02"], 100, seed=13)
    db = str(tmp_path / "hub.db")
    hub = Hub(tmp_path, "--db", db, "--broker", broker.url)  # type: ignore[attr-defined]
    pub = Publisher(broker.port)  # type: ignore[attr-defined]
    try:
        hub.wait_subscribed()
        half = len(msgs) // 2
        for s in msgs[:half]:
            pub.send(s)
        broker.kill()  # type: ignore[attr-defined]  # SIGKILL, whatever was in flight
        broker.start()  # type: ignore[attr-defined]  # same port, no persistence: sessions gone
        deadline = time.monotonic() + 60
        while hub.log().count("subscribed to") < 2 and time.monotonic() < deadline:
            assert hub.proc.poll() is None, hub.log()
            time.sleep(0.05)
        assert hub.log().count("subscribed to") >= 2, hub.log()
        for s in msgs[half:]:
            pub.send(s)
        ids = {s.msg_id for s in msgs}
        assert pub.wait_stored(ids, timeout=90, resend=msgs), (len(ids - pub.stored), hub.log()[-2000:])
        got, n = _totals(db)
        assert got == totals and n == len(msgs)
    finally:
        pub.close()
        assert hub.stop() == 0, hub.log()
