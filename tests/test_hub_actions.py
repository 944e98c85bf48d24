"""Actions issued by the hub (hub.actions): the ``hub_actions`` outbox on real SQLite and real
PostgreSQL (ids, the state order, expiry, re-sends), and end to end over a real Mosquitto: the
library queues an action, ``adamm-hub serve`` publishes it with the MQTT 5 message expiry,
``adamm-staff --ack done --once --json`` receives it and acknowledges, the hub records ``done``.
Every command runs as a real process."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
import pytest
from actions_helpers import STORE, Staff, env, eventually
from brokers import mosquitto_available, running_mosquitto
from hub_data import hub_factory, pg_dsn  # noqa: F401  (fixture)
from test_hub_serve import Hub

from edge.errors import BrokerError, UsageError
from edge.sync import messages as m
from hub import actions as ha
from hub.db import HubDB, open_hub
from hub.status import hub_status, render

T0 = datetime(2025, 12, 1, 9, 0, tzinfo=UTC)


@pytest.fixture(params=["sqlite", "postgresql"])
def make_db(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], HubDB]:
    dsn = request.getfixturevalue("pg_dsn") if request.param == "postgresql" else None
    return hub_factory(request.param, tmp_path, dsn)


def _issue(db: HubDB, title: str = "Open checkout 3", **over: Any) -> str:
    kw: dict[str, Any] = {
        "store_id": STORE,
        "role": "cashier",
        "type": "work_order",
        "params": {"title": title},
        "summary": "s2 rainy-day order value +12%",
        "confidence": 0.8,
        "evidence": ["e1", "e2"],
        "expires_at": T0 + timedelta(hours=2),
        "now": T0,
    }
    kw.update(over)
    return ha.issue_action(db, **kw)


def _ack(db: HubDB, aid: str, state: str, at: datetime, now: datetime, store: str = STORE) -> str:
    body = json.dumps({"by": "ann", "at": at.isoformat(), "state": state}).encode()
    return ha.record_ack(db, m.ack_topic(store, aid), body, now=now)


def test_issue_is_idempotent_while_open_and_acks_only_move_forward(make_db: Callable[[], HubDB]) -> None:
    db = make_db()
    aid = _issue(db)
    assert _issue(db) == aid  # the same open action is queued once
    assert len(ha.list_actions(db)) == 1
    t = T0 + timedelta(minutes=5)
    assert _ack(db, aid, "accepted", t, t, store="sh_99") == ha.UNKNOWN  # another store's topic
    assert _ack(db, "f" * 64, "done", t, t) == ha.UNKNOWN  # not the hub's
    assert _ack(db, aid, "accepted", t, t) == ha.RECORDED
    assert _ack(db, aid, "accepted", t, t) == ha.UNCHANGED  # repeated
    assert _ack(db, aid, "done", t, t) == ha.RECORDED
    assert _ack(db, aid, "rejected", t, t) == ha.UNCHANGED  # final stays
    assert _ack(db, aid, "accepted", t, t) == ha.UNCHANGED  # never backwards
    row = ha.get_action(db, aid, t)
    assert row is not None
    assert (row["state"], row["acked_by"], row["acked_at"]) == ("done", "ann", ha.iso(t))
    again = _issue(db, now=t)  # closed: the same action again is a new one
    assert again != aid
    assert [r["state"] for r in ha.list_actions(db, now=t)] == ["pending", "done"]
    assert ha.record_ack(db, m.ack_topic(STORE, aid), b"not json", now=t) == "not_json"
    db.close()


def test_resend_publishes_with_the_time_left_and_expiry_is_never_pending(
    make_db: Callable[[], HubDB],
) -> None:
    db = make_db()
    aid = _issue(db)
    sent: list[tuple[str, dict[str, Any], int | None, list[tuple[str, str]]]] = []

    def publish(topic: str, payload: bytes, expiry: int | None, props: Any) -> None:
        sent.append((topic, json.loads(payload) if payload else {}, expiry, list(props)))

    got = ha.resend_due(db, publish, now=T0, resend_base_s=60, resend_max_s=600)
    assert got.sent == [aid]
    topic, body, expiry, props = sent[0]
    assert topic == f"adamm/v1/{STORE}/action/cashier/{aid}"  # retained per action
    assert set(body) == set(m.ACTION_FIELDS)
    assert (body["action_id"], body["type"], body["params"], body["evidence"], body["confidence"]) == (
        aid,
        "work_order",
        {"title": "Open checkout 3", "expires_at": ha.iso(T0 + timedelta(hours=2))},  # for MQTT 3.1.1
        ["e1", "e2"],
        0.8,
    )
    assert expiry == 7200
    assert props == [(m.EXPIRES_AT_PROPERTY, ha.iso(T0 + timedelta(hours=2)))]
    assert ha.resend_due(db, publish, now=T0 + timedelta(seconds=59)).sent == []  # not due yet
    later = T0 + timedelta(seconds=60)
    assert ha.resend_due(db, publish, now=later, resend_base_s=60).sent == [aid]
    assert sent[-1][2] == 7200 - 60
    row = ha.get_action(db, aid, later)
    assert row is not None and (row["state"], row["attempts"]) == ("sent", 2)
    assert row["next_send_at"] == ha.iso(later + timedelta(seconds=120))  # the gap doubles
    gone = T0 + timedelta(hours=2)
    assert [r["state"] for r in ha.list_actions(db, now=gone)] == ["expired"]  # before any writer
    ended = ha.resend_due(db, publish, now=gone + timedelta(hours=1))
    assert ended.expired == [aid] and ended.cleared == [aid] and ended.sent == []
    assert sent[-1] == (f"adamm/v1/{STORE}/action/cashier/{aid}", {}, None, [])  # the retained one cleared
    assert ha.resend_due(db, publish, now=gone + timedelta(hours=2)).cleared == []
    assert len(sent) == 3  # never re-sent once expired
    assert ha.list_actions(db, state="pending") == []
    # an ack made before the expiry counts (late in arriving); one made after it does not
    assert _ack(db, aid, "done", gone + timedelta(minutes=1), gone + timedelta(hours=2)) == ha.LATE
    assert _ack(db, aid, "done", gone - timedelta(minutes=1), gone + timedelta(hours=2)) == ha.RECORDED
    db.close()


def test_answers_become_actions_only_when_ok_and_confident(tmp_path: Path) -> None:
    db = open_hub(str(tmp_path / "hub.db"), create=True)
    payload = {
        "status": "ok",
        "summary": "s2 has the highest revenue",
        "confidence": 0.9,
        "low_confidence": False,
        "plan": {"target_metric": "revenue"},
        "result": {"items": [{"key": "s2", "value": 3.0, "n": 40}, {"key": "s1", "value": 2.0, "n": 40}]},
        "evidence": [{"event_id": "e7", "role": "item"}],
    }
    assert ha.finding_store(payload, ["s1", "s2"]) == "s2"
    aid = ha.send_answer_action(db, payload, store_id="s2", question="which store sold most?", now=T0)
    row = ha.get_action(db, aid, T0)
    assert row is not None
    assert (row["store_id"], row["role"], row["type"], row["evidence_json"]) == (
        "s2",
        "store_manager",
        "recommendation",
        '["e7"]',
    )
    assert json.loads(row["params_json"]) == {
        "title": "which store sold most?",
        "subject": "revenue",
        "question": "which store sold most?",
    }
    weak = {**payload, "confidence": 0.3, "low_confidence": True}
    with pytest.raises(UsageError):
        ha.send_answer_action(db, weak, store_id="s2", question="q", now=T0)
    assert len(ha.list_actions(db)) == 1
    confirmed = ha.send_answer_action(db, weak, store_id="s1", question="q", confirm=True, now=T0)
    assert json.loads((ha.get_action(db, confirmed, T0) or {})["params_json"])["confirmed_weak"] is True
    db.close()


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Any]:
    if not mosquitto_available():
        pytest.skip("mosquitto is not installed")
    with running_mosquitto(tmp_path / "mq") as b:
        yield b


def _state(target: str, aid: str) -> dict[str, Any]:
    db = open_hub(target)
    try:
        return ha.get_action(db, aid) or {}
    finally:
        db.close()


def test_serve_publishes_staff_acknowledges_the_hub_records_done(tmp_path: Path, broker: Any) -> None:
    target = str(tmp_path / "hub.db")
    db = open_hub(target, create=True)
    aid = ha.issue_action(
        db,
        store_id=STORE,
        role="cashier",
        type="work_order",
        params={"title": "Open checkout 3"},
        summary="queues are long at sh_01",
        confidence=0.8,
        evidence=["e1"],
        expires_at=datetime.now(UTC) + timedelta(hours=2),
    )
    db.close()
    # a raw subscriber sees the MQTT 5 message expiry the hub publishes with
    seen: list[tuple[bytes, int | None]] = []
    peer = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="peer", protocol=mqtt.MQTTv5)
    peer.on_message = lambda _c, _u, msg: seen.append(
        (msg.payload, getattr(msg.properties, "MessageExpiryInterval", None))
    )
    peer.connect("127.0.0.1", broker.port)
    peer.loop_start()
    peer.subscribe(m.action_filter(STORE, "cashier"), qos=1)
    device = Staff(
        broker.url, env(tmp_path), "--json", "--ack", "done", "--once", "--by", "ann"
    ).wait_listening()
    hub = Hub(tmp_path, "--db", target, "--broker", broker.url)
    try:
        hub.wait_subscribed()
        rc, shown, err = device.finish()
        assert rc == 0, err
        assert [a["action_id"] for a in shown] == [aid]
        assert shown[0]["summary"] == "queues are long at sh_01"
        assert eventually(lambda: _state(target, aid).get("state") == "done"), hub.log()
        row = _state(target, aid)
        assert row["acked_by"] == "ann" and row["attempts"] >= 1
        assert eventually(lambda: bool(seen))
        assert json.loads(seen[0][0])["action_id"] == aid
        assert eventually(lambda: seen[-1][0] == b""), hub.log()  # done: the hub cleared it
        assert seen[0][1] is not None and 0 < seen[0][1] <= 7200
    finally:
        peer.loop_stop()
        peer.disconnect()
        assert hub.stop() == 0, hub.log()
    assert "ack_recorded" in hub.log()


def test_an_offline_device_gets_the_action_when_it_connects_and_an_unacked_one_expires(
    tmp_path: Path, broker: Any
) -> None:
    from actions_helpers import register_device

    e = env(tmp_path)
    register_device(broker.url, e)  # the device's session and subscription wait at the broker
    target = str(tmp_path / "hub.db")
    db = open_hub(target, create=True)
    now = datetime.now(UTC)
    kept = _issue(db, now=now, expires_at=now + timedelta(hours=2))
    lapsing = _issue(db, "Count the till", role="nobody", now=now, expires_at=now + timedelta(seconds=3))
    db.close()
    hub = Hub(tmp_path, "--db", target, "--broker", broker.url)
    try:
        hub.wait_subscribed()
        assert eventually(lambda: _state(target, kept).get("state") == "sent"), hub.log()
        device = Staff(broker.url, e, "--json", "--ack", "done", "--once", "--by", "bo").wait_listening()
        rc, shown, err = device.finish()  # offline when it was sent: delivered now
        assert rc == 0, err
        assert [a["action_id"] for a in shown] == [kept]
        assert eventually(lambda: _state(target, kept).get("state") == "done"), hub.log()

        def marked_expired() -> bool:  # the stored state, as the sender wrote it
            d = open_hub(target)
            try:
                return d.one("SELECT state FROM hub_actions WHERE action_id = ?", (lapsing,)) == ("expired",)
            finally:
                d.close()

        assert eventually(marked_expired), hub.log()
    finally:
        assert hub.stop() == 0, hub.log()
    row = _state(target, kept)
    assert (row["acked_by"], row["state"]) == ("bo", "done")


def test_broker_killed_between_send_and_ack_the_action_still_arrives_once(
    tmp_path: Path, broker: Any
) -> None:
    """The broker is SIGKILLed after the hub sent (and restarted without persistence: what it held
    is gone); the hub reconnects and re-sends until the device acknowledges; the device shows the
    action once."""
    config = tmp_path / "hub.toml"
    config.write_text("[actions]\nresend_base_s = 1\nresend_max_s = 2\n\n[mqtt]\nbackoff_max_s = 1\n")
    target = str(tmp_path / "hub.db")
    db = open_hub(target, create=True)
    now = datetime.now(UTC)
    aid = _issue(db, now=now, expires_at=now + timedelta(hours=2))
    db.close()
    hub = Hub(tmp_path, "--db", target, "--broker", broker.url, "--config", str(config))
    try:
        hub.wait_subscribed()
        assert eventually(lambda: _state(target, aid).get("state") == "sent"), hub.log()
        broker.kill()  # SIGKILL
        broker.start()  # same port, no persistence
        device = Staff(broker.url, env(tmp_path), "--json", "--ack", "done", "--by", "cy").wait_listening()
        try:
            assert eventually(lambda: _state(target, aid).get("state") == "done", timeout=60), hub.log()
        finally:
            device.proc.kill()
            _rc, shown, err = device.finish()
        assert [a["action_id"] for a in shown] == [aid], err
        row = _state(target, aid)
        assert (row["state"], row["acked_by"]) == ("done", "cy") and row["attempts"] >= 2
    finally:
        assert hub.stop() == 0, hub.log()


def test_a_sender_that_keeps_failing_shows_in_status_and_recovers(tmp_path: Path) -> None:
    """The sender's health is in ``hub_components`` (``adamm-hub status``): failing with the count,
    since when and the last error while its rounds fail; ok once a round works again."""
    target = str(tmp_path / "hub.db")
    db = open_hub(target, create=True)
    _issue(db, now=datetime.now(UTC), expires_at=datetime.now(UTC) + timedelta(hours=2))
    broken = [True]

    def publish(topic: str, payload: bytes, expiry: int | None, props: Any) -> None:
        if broken[0]:
            raise BrokerError("the broker did not acknowledge the publish")

    sender = ha.Sender(
        db, publish, lambda: True, resend_base_s=60, resend_max_s=600, period_s=0.02, name="actions/worker-1"
    )
    sender.start()
    try:
        assert eventually(lambda: hub_status(db)["components"] != [], 10)
        c = hub_status(db)["components"][0]
        assert (c["name"], c["state"]) == ("actions/worker-1", "failing")
        assert c["failures"] >= 1 and c["since"] and "did not acknowledge" in c["last_error"]
        assert "actions/worker-1: FAILING since" in render(hub_status(db))
        broken[0] = False
        assert eventually(lambda: hub_status(db)["components"][0]["state"] == "ok", 10)
        assert sender.fatal is None
    finally:
        sender.stop()
        db.close()


def test_a_sender_failing_past_its_give_up_ends_serve_with_exit_3_naming_it(
    tmp_path: Path, broker: Any
) -> None:
    """A hub action whose row cannot be read fails every round: after ``[actions]
    sender_give_up_s`` the worker exits 3 naming the sender, and ``adamm-hub status`` says it
    stopped (was: one log line a second, for ever)."""
    target = str(tmp_path / "hub.db")
    db = open_hub(target, create=True)
    aid = _issue(db, now=datetime.now(UTC), expires_at=datetime.now(UTC) + timedelta(hours=2))
    with db.transaction():
        db.execute("UPDATE hub_actions SET params_json = ? WHERE action_id = ?", ("{not json", aid))
    db.close()
    cfg = tmp_path / "hub.toml"
    cfg.write_text("[actions]\nsender_give_up_s = 2\n")
    hub = Hub(tmp_path, "--db", target, "--broker", broker.url, "--config", str(cfg))
    assert hub.proc.wait(60) == 3, hub.log()
    assert "the hub's action sender (actions/worker-1) failed on every round" in hub.log()
    st = subprocess.run(
        [sys.executable, "-m", "hub", "status", "--db", target, "--json"],
        capture_output=True, text=True, env=env(tmp_path), timeout=60,
    )  # fmt: skip
    assert st.returncode == 0, st.stderr
    [c] = json.loads(st.stdout)["components"]
    assert (c["name"], c["state"]) == ("actions/worker-1", "stopped") and "JSONDecodeError" in c["last_error"]
