"""Actions over a real Mosquitto (the project's configuration, tests/brokers.py): the store sends,
a staff device receives and acknowledges, the store records who and when; offline devices,
expiry, re-sends and duplicates, a running sync worker, weak answers, and a SIGKILL mid-publish.
Every command runs as a real process."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
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
from engine_data import full_memory

from edge.memory.semantic import actions as rows
from edge.memory.store import Store
from edge.presentation.format import zoned_time
from edge.services.action_rules import action_summary
from edge.sync import messages

pytestmark = pytest.mark.skipif(not mosquitto_available(), reason="mosquitto is not installed")

RAIN = "下雨天和晴天相比，哪种天气客单价更高？"


@pytest.fixture()
def broker(tmp_path: Path) -> Iterator[Mosquitto]:
    with running_mosquitto(tmp_path / "broker") as b:
        yield b


@pytest.fixture()
def db(tmp_path: Path) -> Path:
    return make_memory(tmp_path / "m.db")


def send(db: Path, broker: str, environ: dict[str, str], *extra: str, title: str = "Open checkout 3") -> dict:
    return adamm_json(
        "action", "send", "--db", str(db), "--broker", broker, "--role", "cashier",
        "--type", "work_order", "--title", title, *extra, environ=environ,
    )  # fmt: skip


def sync(db: Path, broker: str, environ: dict[str, str]) -> dict:
    return adamm_json("action", "sync", "--db", str(db), "--broker", broker, environ=environ)


def test_send_receive_ack_and_the_store_shows_done_with_who_and_when(
    tmp_path: Path, broker: Mosquitto, db: Path
) -> None:
    e = env(tmp_path)
    device = Staff(broker.url, e, "--json", "--ack", "done", "--once", "--by", "ann").wait_listening()
    sent = send(db, broker.url, e, "--expires-in", "PT2H")
    assert (sent["state"], sent["via"], sent["role"], sent["type"]) == (
        "sent",
        "direct",
        "cashier",
        "work_order",
    )
    rc, shown, err = device.finish()
    assert rc == 0, err
    assert len(shown) == 1
    got = shown[0]
    assert set(messages.ACTION_FIELDS) <= set(got)
    assert (got["action_id"], got["type"], got["params"]["title"], got["store_id"], got["role"]) == (
        sent["action_id"],
        "work_order",
        "Open checkout 3",
        STORE,
        "cashier",
    )
    assert got["expires_at"] == sent["expires_at"]
    before = actions(db, e)[sent["action_id"]]
    assert (before["state"], before["acked_by"]) == ("sent", None)  # the ack waits in the store's session
    # `adamm actions` never writes to the memory: it says where the ack waits and what records it
    told = adamm("actions", "--db", str(db), environ=e)
    assert told.returncode == 0 and "1 action(s) wait for an ack" in told.stderr
    assert f"adamm action sync --db {db} --broker URL" in told.stderr
    # --broker: the ack waiting in the store's session is shown, neither recorded nor consumed
    peek = adamm("actions", "--db", str(db), "--broker", broker.url, "--json", environ=e)
    assert peek.returncode == 0, peek.stderr
    peeked = {a["action_id"]: a for a in json.loads(peek.stdout)["actions"]}[sent["action_id"]]
    assert peeked["state"] == "sent" and peeked["acked_by"] is None
    assert {k: peeked["waiting_ack"][k] for k in ("state", "by", "would_be")} == {
        "state": "done",
        "by": "ann",
        "would_be": "done",
    }
    assert "1 ack(s) wait on the broker, not recorded" in peek.stderr
    shown_text = adamm("actions", "--db", str(db), "--broker", broker.url, environ=e).stdout
    assert "ack waiting on the broker, not recorded: done by ann" in shown_text
    report = sync(db, broker.url, e)
    assert report["acks"] == {"recorded": 1} and report["sent"] == []
    row = actions(db, e)[sent["action_id"]]
    assert (row["state"], row["acked_by"]) == ("done", "ann")
    acked = datetime.fromisoformat(row["acked_at"])
    assert datetime.fromisoformat(row["sent_at"]) <= acked <= datetime.fromisoformat(row["expires_at"])
    text = adamm("actions", "--db", str(db), environ=e)
    assert text.returncode == 0 and text.stderr == ""
    head, summary, effect = text.stdout.splitlines()
    # a done action says what became of it: this one names no metric to measure (section 7)
    assert effect.strip().startswith("effect: no measurable target")
    assert head.split()[:4] == [sent["action_id"][:12], "done", "cashier", "work_order"]
    # the table shows the store's local time with its zone (the JSON keeps ISO)
    local = {k: zoned_time(row[k], "Asia/Shanghai") for k in ("acked_at", "expires_at")}
    assert f"by ann at {local['acked_at']}" in head and f"expires {local['expires_at']}" in head
    assert summary.strip() == "Open checkout 3  (confidence 1.00)"


def test_a_device_offline_when_it_was_sent_gets_it_when_it_connects(
    tmp_path: Path, broker: Mosquitto, db: Path
) -> None:
    e = env(tmp_path)
    register_device(broker.url, e)
    sent = send(db, broker.url, e)
    assert sent["state"] == "sent"
    rc, shown, err = Staff(broker.url, e, "--json", "--ack", "accepted", "--once").finish()
    assert rc == 0, err
    assert [s["action_id"] for s in shown] == [sent["action_id"]]
    assert sync(db, broker.url, e)["acks"] == {"recorded": 1}
    assert actions(db, e)[sent["action_id"]]["state"] == "accepted"


def test_an_action_that_expires_before_a_device_connects_is_never_delivered_and_becomes_expired(
    tmp_path: Path, broker: Mosquitto, db: Path
) -> None:
    e = env(tmp_path)
    register_device(broker.url, e)
    short = send(db, broker.url, e, "--expires-in", "2s", title="mop aisle 2")
    assert short["state"] == "sent"
    expires = datetime.fromisoformat(short["expires_at"])
    while datetime.now(expires.tzinfo) <= expires:
        time.sleep(0.2)
    time.sleep(1.0)  # the broker counts the expiry interval from when it received the message
    # read-only: shown expired before any writer marked it, never pending or sent; the file unchanged
    files = [Path(f"{db}{x}") for x in ("", "-wal") if Path(f"{db}{x}").exists()]
    before = [f.read_bytes() for f in files]
    assert actions(db, e)[short["action_id"]]["state"] == "expired"
    assert [f.read_bytes() for f in files] == before
    with Store.open(db, readonly=True) as s, s.read() as conn:
        assert conn.execute("SELECT state FROM actions").fetchall() == [("sent",)]
    marker = send(db, broker.url, e, title="restock shelf 4")
    rc, shown, err = Staff(broker.url, e, "--json", "--ack", "done", "--once").finish()
    assert rc == 0, err
    assert [s["action_id"] for s in shown] == [marker["action_id"]]  # the expired one never came first
    assert "expired before it arrived" not in err  # the broker dropped it (MQTT 5 message expiry)
    # the writer that connected next (the marker's send) marked it expired, and nothing re-sends it
    with Store.open(db, readonly=True) as s, s.read() as conn:
        states = dict(conn.execute("SELECT action_id, state FROM actions").fetchall())
    assert states[short["action_id"]] == "expired"
    report = sync(db, broker.url, e)
    assert report["expired"] == [] and report["sent"] == []
    assert actions(db, e)[short["action_id"]]["state"] == "expired"


def test_a_resent_action_is_shown_once_and_its_ack_is_idempotent(
    tmp_path: Path, broker: Mosquitto, db: Path
) -> None:
    e = env(tmp_path)
    observer = Peer(broker.port, "observer", messages.ack_topic(STORE, "+"))
    device = Staff(broker.url, e, "--json", "--ack", "accepted").wait_listening()
    try:
        sent = send(db, broker.url, e)
        assert eventually(lambda: len(observer.got) == 1)
        with Store.open(db, readonly=True) as s, s.read() as conn:
            row = rows.get_action(conn, sent["action_id"])
        assert row is not None
        from edge.sync.messages import action_message

        topic, payload, _, _ = action_message(row, datetime.now().astimezone())
        issuer = Peer(broker.port, "re-sender")
        issuer.publish(topic, payload)  # the same action twice more on the wire
        issuer.publish(topic, payload)
        issuer.close()
        assert eventually(lambda: len(observer.got) == 3)  # the device re-acks a duplicate ...
    finally:
        device.proc.send_signal(signal.SIGINT)
        rc, shown, err = device.finish()
        observer.close()
    assert [s["action_id"] for s in shown] == [sent["action_id"]]  # ... but shows it once
    first = json.loads(observer.got[0][1])
    assert all(json.loads(p) == first for _, p in observer.got)  # the same ack each time
    report = sync(db, broker.url, e)
    assert report["acks"] == {"recorded": 1, "unchanged": 2}
    row2 = actions(db, e)[sent["action_id"]]
    assert (row2["state"], row2["acked_at"]) == ("accepted", rows.iso(datetime.fromisoformat(first["at"])))
    state = json.loads((tmp_path / "xdg" / "adamm" / f"staff-{STORE}-cashier.json").read_text())
    assert (
        list(state["actions"]) == [sent["action_id"]]
        and state["actions"][sent["action_id"]]["ack"] == "accepted"
    )


def test_with_a_sync_worker_running_send_only_queues_and_the_worker_sends(
    tmp_path: Path, broker: Mosquitto, db: Path
) -> None:
    e = env(tmp_path)
    register_device(broker.url, e)
    worker = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from edge.sync.actions import ConnectionLock\n"
            f"lock = ConnectionLock.try_acquire({str(db)!r}); print(bool(lock), flush=True); sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=e,
        cwd=ROOT,
    )
    try:
        assert worker.stdout is not None and worker.stdout.readline().strip() == "True"
        out = adamm(
            "action", "send", "--db", str(db), "--broker", broker.url, "--role", "cashier",
            "--type", "alert", "--title", "spill at the entrance", "--json", environ=e,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        queued = json.loads(out.stdout)
        assert (queued["state"], queued["via"]) == ("pending", "worker")
        assert "sync worker is running" in out.stderr
        assert sync(db, broker.url, e) == {"via": "worker"}  # nor does sync take the connection
    finally:
        worker.kill()  # the kernel drops the lock of a killed worker
        worker.wait(10)
    report = sync(db, broker.url, e)
    assert report["sent"] == [queued["action_id"]]
    rc, shown, err = Staff(broker.url, e, "--json", "--ack", "done", "--once").finish()
    assert rc == 0, err
    assert [s["action_id"] for s in shown] == [queued["action_id"]]


def test_a_not_ok_answer_is_refused_without_confirm(tmp_path: Path, broker: Mosquitto, db: Path) -> None:
    e = env(tmp_path)
    args = (
        "action",
        "send",
        "--db",
        str(db),
        "--broker",
        broker.url,
        "--role",
        "cashier",
        "--question",
        RAIN,
    )
    ask = adamm("ask", "--db", str(db), "--json", RAIN, environ=e)
    payload = json.loads(ask.stdout)
    assert payload["status"] != "ok"
    refused = adamm(*args, environ=e)
    assert refused.returncode == 2
    assert "not sent" in refused.stderr and "--confirm" in refused.stderr
    assert actions(db, e) == {}
    confirmed = adamm_json(*args, "--confirm", environ=e)
    row = actions(db, e)[confirmed["action_id"]]
    assert (row["type"], row["summary"], row["confidence"]) == (
        "recommendation",
        action_summary(payload),  # how the question was read, then the answer
        payload["confidence"],
    )
    assert row["params"]["question"] == RAIN and row["state"] == "sent"


def test_an_ok_answer_keeps_its_summary_evidence_and_confidence(tmp_path: Path, broker: Mosquitto) -> None:
    mem = full_memory()
    db = tmp_path / "full.db"
    for suffix in ("", "-wal", "-shm"):
        if Path(f"{mem.path}{suffix}").exists():
            shutil.copy(f"{mem.path}{suffix}", f"{db}{suffix}")
    e = env(tmp_path)
    now = mem.now.isoformat()
    payload = json.loads(adamm("ask", "--db", str(db), "--now", now, "--json", RAIN, environ=e).stdout)
    assert payload["status"] == "ok" and not payload["low_confidence"] and payload["action"]
    sent = adamm_json(
        "action", "send", "--db", str(db), "--broker", broker.url, "--role", "shift_lead",
        "--question", RAIN, "--now", now, environ=e,
    )  # fmt: skip
    row = actions(db, e)[sent["action_id"]]
    assert (row["summary"], row["confidence"], row["type"], row["role"]) == (
        action_summary(payload),
        payload["confidence"],
        payload["action"]["type"],
        "shift_lead",
    )
    assert row["evidence"] == [ev["event_id"] for ev in payload["evidence"]]
    assert row["params"]["rule"] == payload["action"]["params"]["rule"]


def test_sigkill_of_send_mid_publish_then_rerun_gives_exactly_one_action_delivered(
    tmp_path: Path, broker: Mosquitto, db: Path
) -> None:
    e = env(tmp_path)
    register_device(broker.url, e)
    assert broker.proc is not None
    args = [
        sys.executable, "-m", "edge", "action", "send", "--db", str(db), "--broker", broker.url,
        "--role", "cashier", "--type", "work_order", "--title", "count the till", "--json",
    ]  # fmt: skip
    os.kill(broker.proc.pid, signal.SIGSTOP)  # the broker takes the connection but answers nothing
    try:
        first = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e, cwd=ROOT)

        def queued() -> bool:
            with Store.open(db, readonly=True) as s, s.read() as conn:
                return len(rows.list_actions(conn)) == 1

        assert eventually(queued)
        time.sleep(0.5)  # let it reach the broker's socket
        first.send_signal(signal.SIGKILL)
        first.wait(10)
    finally:
        os.kill(broker.proc.pid, signal.SIGCONT)
    with Store.open(db, readonly=True) as s, s.read() as conn:
        (only,) = rows.list_actions(conn)
    assert only["state"] == "pending"
    rerun = subprocess.run(args, capture_output=True, text=True, env=e, cwd=ROOT, timeout=120)
    assert rerun.returncode == 0, rerun.stderr
    again = json.loads(rerun.stdout)
    assert again["action_id"] == only["action_id"] and again["state"] == "sent"
    assert list(actions(db, e)) == [only["action_id"]]
    rc, shown, err = Staff(broker.url, e, "--json", "--ack", "done", "--once").finish()
    assert rc == 0, err
    assert [s["action_id"] for s in shown] == [only["action_id"]]
    marker = send(db, broker.url, e, title="marker")
    rc, shown, err = Staff(broker.url, e, "--json", "--ack", "done", "--once").finish()
    assert [s["action_id"] for s in shown] == [marker["action_id"]]  # no second copy of the first
    sync(db, broker.url, e)  # (the marker's send may have collected the first ack already)
    assert {a["state"] for a in actions(db, e).values()} == {"done"}
    assert len(actions(db, e)) == 2


def test_an_unreachable_broker_exits_3_and_the_action_stays_queued(tmp_path: Path, db: Path) -> None:
    e = env(tmp_path)
    cfg = tmp_path / "c.toml"
    cfg.write_text("[mqtt]\nconnect_attempts = 2\n")
    from brokers import free_port

    out = adamm(
        "action", "send", "--db", str(db), "--broker", f"mqtt://127.0.0.1:{free_port()}", "--config", str(cfg),
        "--role", "cashier", "--type", "alert", "--title", "x", environ=e,
    )  # fmt: skip
    assert out.returncode == 3
    last = out.stderr.strip().splitlines()[-1]
    assert "unreachable after 2 attempts" in last and "queued in the outbox" in last
    assert [a["state"] for a in actions(db, e).values()] == ["pending"]
    bad = adamm("action", "send", "--db", str(db), "--broker", "http://x", "--role", "r", "--type", "alert",
                "--title", "x", environ=e)  # fmt: skip
    assert bad.returncode == 2 and "mqtt://" in bad.stderr
    bad = adamm("action", "send", "--db", str(db), "--broker", "mqtt://h:1", "--role", "r", "--type", "alert",
                "--title", "x", "--expires-in", "soon", environ=e)  # fmt: skip
    assert bad.returncode == 2 and "PT2H" in bad.stderr


def test_a_broker_killed_between_send_and_ack_loses_its_queue_and_the_resend_delivers_it_once(
    tmp_path: Path, broker: Mosquitto, db: Path
) -> None:
    e = env(tmp_path)
    cfg = tmp_path / "fast.toml"
    cfg.write_text("[actions]\nresend_base_s = 1.0\n")
    register_device(broker.url, e)
    sent = send(db, broker.url, e, "--config", str(cfg))
    assert sent["state"] == "sent"
    broker.kill()  # SIGKILL, no persistence: the device's session and the queued action are gone
    broker.start()
    device = Staff(broker.url, e, "--json", "--ack", "done", "--once").wait_listening()
    time.sleep(1.5)  # the re-send falls due (resend_base_s = 1)
    report = adamm_json(
        "action", "sync", "--db", str(db), "--broker", broker.url, "--config", str(cfg), environ=e
    )
    assert report["sent"] == [sent["action_id"]]
    rc, shown, err = device.finish()
    assert rc == 0, err
    assert [s["action_id"] for s in shown] == [sent["action_id"]]

    def recorded() -> bool:  # the device's ack reaches the store's session: collect it
        sync(db, broker.url, e)
        return bool(actions(db, e)[sent["action_id"]]["state"] == "done")

    assert eventually(recorded)
    row = actions(db, e)[sent["action_id"]]
    assert (row["state"], row["attempts"]) == ("done", 2)


def test_a_device_that_never_connected_gets_every_open_action_of_its_role_at_once(
    tmp_path: Path, broker: Mosquitto, db: Path
) -> None:
    """Open actions are retained per action (CONTRACT.md section 5): a first-time subscriber (a
    new handheld, a plain MQTT client) gets every open one within 2 s; one that ended was cleared
    by the store and is not delivered."""
    e = env(tmp_path)
    closed = send(db, broker.url, e, title="Mop aisle 2")
    kept = send(db, broker.url, e, title="Open checkout 3")
    other = adamm_json(
        "action", "send", "--db", str(db), "--broker", broker.url, "--role", "cleaner",
        "--type", "work_order", "--title", "Wipe the doors", environ=e,
    )  # fmt: skip
    acker = Peer(broker.port, "an-old-device")
    acker.publish(messages.ack_topic(STORE, closed["action_id"]), messages.ack_payload("ann", _now(), "done"))
    acker.close()
    report = sync(db, broker.url, e)  # records the ack and clears the ended action's retained message
    assert report["acks"] == {"recorded": 1}
    assert actions(db, e)[closed["action_id"]]["state"] == "done"
    started = time.monotonic()
    peer = Peer(broker.port, "a-new-handheld", subscribe=messages.action_filter(STORE, "cashier"))
    try:
        assert eventually(lambda: len(peer.got) >= 1, 2.0 - (time.monotonic() - started) + 0.05)
        time.sleep(0.5)  # anything else retained would have come with it
        got = [(t, json.loads(p)["action_id"]) for t, p in peer.got]
        assert got == [(messages.action_topic(STORE, "cashier", kept["action_id"]), kept["action_id"])]
        assert other["action_id"] not in {a for _, a in got}  # another role's
    finally:
        peer.close()
    rc, shown, err = Staff(
        broker.url, env(tmp_path / "new"), "--json", "--ack", "accepted", "--once"
    ).finish()
    assert rc == 0, err
    assert [s["action_id"] for s in shown] == [kept["action_id"]]


def _now() -> str:
    from datetime import UTC

    return datetime.now(UTC).isoformat(timespec="seconds")


def test_send_keeps_the_metric_and_scope_to_measure_and_now_sets_issued_at(
    tmp_path: Path, broker: Mosquitto, db: Path
) -> None:
    """CONTRACT.md section 1: --metric and --where are kept as params.target_metric and scope (what
    adamm maintain measures once the action is done); --now sets issued_at (back-filling)."""
    e = env(tmp_path)
    issued = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1)
    sent = send(db, broker.url, e, "--metric", "queue_length", "--where", "zone=checkout", "--where", "hours=18,19",
                "--now", issued.isoformat(), "--expires-in", "PT4H", title="Open a second checkout")  # fmt: skip
    row = actions(db, e)[sent["action_id"]]
    assert row["params"]["target_metric"] == "queue_length"
    assert row["params"]["scope"] == {"zone": "checkout", "hours": [18, 19]}
    assert datetime.fromisoformat(row["issued_at"]) == issued
    # recorded late, it is still sent now: open for its span from now, not from issued_at
    assert datetime.fromisoformat(row["expires_at"]) > issued + timedelta(hours=4)
    bad = adamm("action", "send", "--db", str(db), "--broker", broker.url, "--role", "cashier", "--type", "alert",
                "--title", "x", "--metric", "shrinkage", environ=e)  # fmt: skip
    assert bad.returncode == 2 and "--metric 'shrinkage' is not a metric" in bad.stderr
