"""The MQTT 3.1.1 fallback (CONTRACT.md section 5: "MQTT 5 where the broker speaks it, 3.1.1
otherwise") against a real MQTT 3.1.1-only broker: :class:`brokers.Mqtt311Proxy`, a TCP proxy in
front of a real Mosquitto that answers an MQTT 5 CONNECT with CONNACK return code 1 and forwards
3.1.1 clients untouched (it also records which protocol level each client id connected with).

A :class:`~edge.sync.mqtt.Link` falls back and keeps a persistent 3.1.1 session (QoS 1 both ways,
a message published while the subscriber is away delivered when it returns, ``manual_ack``
redelivery); ``adamm sync --once`` -> proxy -> Mosquitto -> ``adamm-hub serve`` (both sides on
3.1.1) leaves the hub with the edge's totals; bad credentials over 3.1.1 stop at once (exit 3), a
SUBACK 0x80 is a refused subscription; an action over 3.1.1 reaches ``adamm-staff`` and its ack
comes back, an expired one (which the broker cannot drop under 3.1.1) is not shown; forcing
``[mqtt] protocol = "5"`` against the proxy fails at once, naming the protocol. A broker that stays
silent to an MQTT 5 CONNECT (the proxy with ``silent=True``) gets a 3.1.1 attempt after
``silent_fallback_s``; a port that answers nothing is "unreachable" naming ``[mqtt] protocol``;
amqtt (a real 3.1.1-only broker from PyPI) is spoken to over 3.1.1. Every command runs as a real
process."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import queue
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
from actions_helpers import STORE, Staff, actions, adamm, adamm_json, env, make_memory, register_device
from brokers import (
    Mosquitto,
    Mqtt311Proxy,
    SilentServer,
    connect_fields,
    free_port,
    mosquitto_available,
    read_packet,
    running_amqtt,
    running_mosquitto,
    running_mqtt311,
)
from pydantic import ValidationError
from test_sync_e2e import Edge, World, _config, _ok, _own_totals, _raw_totals, assert_hub_equals_edges

from edge.config import MqttConfig
from edge.errors import BrokerAuthError, BrokerProtocolError, BrokerUnreachable
from edge.memory.semantic import facts as repo
from edge.memory.store import Store
from edge.sim import SimConfig, simulate
from edge.sync.mqtt import Credentials, Link, LinkSettings, Message, connect, link_settings, parse_broker_url

pytestmark = pytest.mark.skipif(not mosquitto_available(), reason="mosquitto is not installed")

TOPIC = "adamm/v1/t311/summary"


@pytest.fixture
def mqtt311(tmp_path: Path) -> Iterator[tuple[Mqtt311Proxy, Mosquitto]]:
    with running_mqtt311(tmp_path / "mq") as pair:
        yield pair


def test_the_protocol_setting_is_typed_and_reaches_the_link() -> None:
    assert MqttConfig().protocol == "auto"
    assert link_settings("mqtt://h:1883", MqttConfig(protocol="3.1.1"), env={}).protocol == "3.1.1"
    for bad in ("4", "3", "mqtt5", 5):
        with pytest.raises(ValidationError):
            MqttConfig(protocol=bad)  # type: ignore[arg-type]


def test_a_link_falls_back_to_311_and_its_persistent_session_works(
    mqtt311: tuple[Mqtt311Proxy, Mosquitto], caplog: pytest.LogCaptureFixture
) -> None:
    proxy, broker = mqtt311
    settings = LinkSettings(parse_broker_url(proxy.url))
    got: queue.Queue[Message] = queue.Queue()
    sessions: list[bool] = []

    def subscriber(take: bool) -> Link:
        link = connect(
            settings,
            "sub-311",
            subscriptions=[(TOPIC, 1)],
            on_message=lambda msg: got.put(msg) or take,
            on_connected=sessions.append,
            manual_ack=True,
        )
        assert link.wait_subscribed(30)
        return link

    with caplog.at_level(logging.INFO, logger="edge.sync.mqtt"):
        sub = subscriber(True)
    assert sub.protocol == "3.1.1"
    assert proxy.levels("sub-311") == [5, 4]  # tried MQTT 5 once, then 3.1.1
    fell_back = [r for r in caplog.records if "does not speak MQTT 5" in r.getMessage()]
    assert len(fell_back) == 1 and fell_back[0].levelno == logging.WARNING
    assert "persistent_client_expiration" in fell_back[0].getMessage()
    assert any("over MQTT 3.1.1" in r.getMessage() for r in caplog.records)
    pub = connect(settings, "pub-311")
    try:
        assert pub.protocol == "3.1.1"
        # QoS 1 out (the PUBACK comes back, publish_wait returns) and in; the MQTT 5 extras are
        # not sent (a 3.1.1 PUBLISH has no properties) and nothing fails because of them
        pub.publish_wait(TOPIC, b"one", user_properties={"seq": "1"}, expiry_s=60)
        first = got.get(timeout=30)
        assert (first.payload, first.qos, first.user_properties) == (b"one", 1, {})
        sub.close()
        pub.publish_wait(TOPIC, b"while away")
        # back: the broker kept the session (clean_session=False) and queued what came meanwhile;
        # this connection does not acknowledge it (manual_ack), so the next one gets it again
        sub = subscriber(False)
        assert got.get(timeout=30).payload == b"while away"
        assert sessions == [False, True]
        sub.close()
        sub = subscriber(True)
        assert got.get(timeout=30).payload == b"while away"
        sub.close()
        pub.publish_wait(TOPIC, b"after")
        sub = subscriber(True)  # acknowledged above: the next delivery is the newer message
        assert got.get(timeout=30).payload == b"after"
        assert proxy.levels("sub-311") == [5, 4] * 4  # each new link tries MQTT 5 first, once
        # a link that fell back reconnects with 3.1.1 only (the broker restarted behind the proxy)
        broker.kill()
        broker.start()
        pub.publish_wait(TOPIC, b"after the restart", timeout=60)  # waits for its reconnect
        assert sub.wait_connected(60) and sub.wait_subscribed(60)
        pub.publish_wait(TOPIC, b"resubscribed", timeout=60)
        # the first one arrives too when the subscriber was back in time (no session survived)
        seen = [got.get(timeout=30).payload]
        if seen[0] != b"resubscribed":
            seen.append(got.get(timeout=30).payload)
        assert seen in ([b"resubscribed"], [b"after the restart", b"resubscribed"]), seen
        assert proxy.levels("sub-311")[8:] and set(proxy.levels("sub-311")[8:]) == {4}
    finally:
        sub.close()
        pub.close()


def test_forcing_a_protocol(mqtt311: tuple[Mqtt311Proxy, Mosquitto]) -> None:
    proxy, _broker = mqtt311
    address = parse_broker_url(proxy.url)
    # "5" against a 3.1.1-only broker: stops at once, naming the protocol (not after the retries)
    with pytest.raises(BrokerProtocolError) as e:
        connect(LinkSettings(address, protocol="5", connect_attempts=100), "forced-5", timeout=300)
    assert "does not speak MQTT 5" in str(e.value) and 'protocol = "5"' in str(e.value)
    assert e.value.exit_code == 3 and "auto" in (e.value.hint or "")
    assert proxy.levels("forced-5") == [5]
    # "3.1.1": never tries MQTT 5
    link = connect(LinkSettings(address, protocol="3.1.1"), "forced-311")
    try:
        assert link.protocol == "3.1.1" and proxy.levels("forced-311") == [4]
    finally:
        link.close()


def test_sync_forced_to_mqtt5_against_a_311_broker_exits_3_naming_the_protocol(
    tmp_path: Path, mqtt311: tuple[Mqtt311Proxy, Mosquitto]
) -> None:
    proxy, _broker = mqtt311
    db = make_memory(tmp_path / "m.db")
    cfg = tmp_path / "edge.toml"
    cfg.write_text('[mqtt]\nprotocol = "5"\nconnect_attempts = 100\n')
    out = adamm("sync", "--db", str(db), "--broker", proxy.url, "--once", "--timeout", "300",
                "--config", str(cfg), environ=env(tmp_path))  # fmt: skip
    assert out.returncode == 3, out.stderr
    assert "does not speak MQTT 5" in out.stderr and out.stdout == ""
    assert set(proxy.levels(f"adamm-edge-{STORE}")) == {5}


def test_bad_credentials_over_311_stop_at_once(tmp_path: Path) -> None:
    with running_mqtt311(tmp_path / "mq", users={STORE: "right-password"}) as (proxy, _broker):
        address = parse_broker_url(proxy.url)
        # in process: paho reports 3.1.1's CONNACK "not authorized" / "bad user name or password"
        # as reason codes 135 / 134, which stop the link
        bad = LinkSettings(address, Credentials(STORE, "wrong"), connect_attempts=100)
        link = Link(bad, "bad-311").start()
        try:
            with pytest.raises(BrokerAuthError, match="refused the credentials of sh_01"):
                link.wait_connected(300, 100)
            assert link.protocol == "3.1.1" and proxy.levels("bad-311") == [5, 4]
        finally:
            link.close()
        # the command: exit 3 at once, though it may retry 100 times for 300 s
        db = make_memory(tmp_path / "m.db")
        cfg = tmp_path / "edge.toml"
        cfg.write_text("[mqtt]\nconnect_attempts = 100\n")
        creds = {"ADAMM_MQTT_USERNAME": STORE, "ADAMM_MQTT_PASSWORD": "wrong"}
        out = adamm("sync", "--db", str(db), "--broker", proxy.url, "--once", "--timeout", "300",
                    "--config", str(cfg), environ=env(tmp_path, creds))  # fmt: skip
        assert out.returncode == 3, out.stderr
        assert "refused" in out.stderr and "ADAMM_MQTT_PASSWORD" in out.stderr
        assert proxy.levels(f"adamm-edge-{STORE}")[-1] == 4


def test_a_suback_0x80_over_311_is_a_refused_subscription(tmp_path: Path) -> None:
    """Mosquitto 2.0 grants every subscription (its ACL applies per message), so a minimal 3.1.1
    broker on a socket answers: CONNACK accepted, then SUBACK with return code 0x80 (failure)."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = int(listener.getsockname()[1])
    seen: list[int] = []

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            seen.append(connect_fields(read_packet(conn))[0])
            conn.sendall(bytes([0x20, 0x02, 0x00, 0x00]))  # CONNACK: no session, accepted
            sub = read_packet(conn)
            assert sub[0] == 0x82, sub  # SUBSCRIBE; its packet id follows the remaining length
            conn.sendall(bytes([0x90, 0x03, sub[2], sub[3], 0x80]))
            with contextlib.suppress(OSError):
                while conn.recv(1024):
                    pass

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    settings = LinkSettings(parse_broker_url(f"mqtt://127.0.0.1:{port}"), protocol="3.1.1")
    links = []
    try:
        # the SUBACK may come before connect() returns (it then raises there): either way refused
        with pytest.raises(BrokerAuthError, match="refused the subscription") as e:
            links.append(connect(settings, "sub-refused", subscriptions=[("adamm/v1/other/receipt", 1)]))
            links[0].wait_subscribed(30)
        assert "adamm/v1/other/receipt" in str(e.value) and e.value.exit_code == 3
        assert seen == [4]
    finally:
        for link in links:
            link.close()
        listener.close()
        t.join(10)


def test_an_action_over_311_reaches_the_device_its_ack_comes_back_and_an_expired_one_is_not_shown(
    tmp_path: Path, mqtt311: tuple[Mqtt311Proxy, Mosquitto]
) -> None:
    proxy, _broker = mqtt311
    e = env(tmp_path)
    db = make_memory(tmp_path / "m.db")
    register_device(proxy.url, e)  # its persistent 3.1.1 session keeps what comes while it is away

    def send(title: str, expires_in: str) -> dict:
        return adamm_json("action", "send", "--db", str(db), "--broker", proxy.url, "--role", "cashier",
                          "--type", "work_order", "--title", title, "--expires-in", expires_in, environ=e)  # fmt: skip

    short = send("mop aisle 2", "2s")
    assert short["state"] == "sent"
    expires = datetime.fromisoformat(short["expires_at"])
    while datetime.now(expires.tzinfo) <= expires:  # under 3.1.1 the broker keeps it past its expiry
        time.sleep(0.2)
    marker = send("restock shelf 4", "PT2H")
    rc, shown, err = Staff(proxy.url, e, "--json", "--ack", "done", "--once", "--by", "ann").finish()
    assert rc == 0, err
    assert [s["action_id"] for s in shown] == [marker["action_id"]]
    # the broker delivered the expired one (no message expiry in 3.1.1); the device dropped it
    assert f"action {short['action_id']} expired before it arrived" in err
    assert "does not speak MQTT 5" in err
    got = shown[0]
    assert got["params"]["title"] == "restock shelf 4"
    assert got["expires_at"] == got["params"]["expires_at"] == marker["expires_at"]
    report = adamm_json("action", "sync", "--db", str(db), "--broker", proxy.url, environ=e)
    assert report["acks"] == {"recorded": 1}
    row = actions(db, e)[marker["action_id"]]
    assert (row["state"], row["acked_by"]) == ("done", "ann")
    assert actions(db, e)[short["action_id"]]["state"] == "expired"
    for client in (f"adamm-edge-{STORE}", f"adamm-staff-{STORE}-cashier"):
        levels = proxy.levels(client)
        assert levels and set(levels) == {5, 4}, (client, levels)  # every process fell back


SIM = SimConfig(
    store_id="sh_311", timezone="Asia/Shanghai", days=4, seed=11, customers_per_day=15, with_text=False
)


def test_sync_through_a_311_broker_to_a_311_hub_holds_the_edges_totals(
    tmp_path: Path, mqtt311: tuple[Mqtt311Proxy, Mosquitto]
) -> None:
    proxy, _broker = mqtt311
    base = tmp_path / "base.db"
    events = list(simulate(SIM))
    with Store.open(base, timezone=SIM.timezone) as store:
        assert store.import_events(events).rejected == 0
        own = _own_totals(store, SIM.store_id)
        with store.read() as conn:
            facts = repo.list_facts(conn)
    edges = {SIM.store_id: Edge(SIM.store_id, SIM.timezone, base, events, own,
                                _raw_totals(events, SIM.timezone), facts)}  # fmt: skip
    db = tmp_path / f"{SIM.store_id}.db"
    shutil.copy(base, db)
    world = World(
        tmp_path, {SIM.store_id: db}, proxy, str(tmp_path / "hub.db"), _config(tmp_path / "edge.toml")
    )
    hub = world.hub()  # adamm-hub serve through the proxy too
    try:
        counts = _ok(world.sync(SIM.store_id))
        assert counts["pending"] == 0 and counts["confirmed"] > 0
        assert_hub_equals_edges(world, edges)
    finally:
        assert hub.stop() == 0, hub.log()
    assert "does not speak MQTT 5: client adamm-hub-1 uses MQTT 3.1.1" in hub.log()
    for client in (f"adamm-edge-{SIM.store_id}", "adamm-hub-1"):
        levels = proxy.levels(client)
        assert levels[:2] == [5, 4] and set(levels[2:]) <= {4}, (client, levels)


def _auto(url: str, silent_s: float = 1.0, **over: object) -> LinkSettings:
    return dataclasses.replace(link_settings(url, MqttConfig(), env={}), silent_fallback_s=silent_s, **over)


def test_a_broker_silent_to_mqtt5_gets_a_311_attempt_after_a_short_wait(tmp_path: Path) -> None:
    """A 3.1.1 broker that ignores an MQTT 5 CONNECT (no CONNACK at all): "auto" tries 3.1.1 once
    ``silent_fallback_s`` pass (was: "unreachable, check the URL" after the connect timeout)."""
    with running_mosquitto(tmp_path / "mq") as broker:
        proxy = Mqtt311Proxy(broker.port, silent=True)
        try:
            started = time.monotonic()
            link = connect(_auto(proxy.url), "silent-5", timeout=20)
            try:
                assert link.protocol == "3.1.1" and link.silent == {"5": 1}
                assert time.monotonic() - started < 10
                assert proxy.levels("silent-5") == [5, 4]
                link.publish_wait("adamm/v1/t311/x", b"hello")
            finally:
                link.close()
        finally:
            proxy.close()


def test_nothing_answering_names_the_protocol_setting(tmp_path: Path) -> None:
    server = SilentServer()
    try:
        with pytest.raises(BrokerUnreachable) as got:
            connect(_auto(server.url, 0.5), "nobody-home", timeout=2)
        text = f"{got.value} {got.value.hint}"
        assert "answered no MQTT 5 nor MQTT 3.1.1 CONNECT" in text and "[mqtt] protocol" in text
        with pytest.raises(BrokerUnreachable) as forced:  # forced to 5: no fallback, still named
            connect(_auto(server.url, 0.5, protocol="5"), "nobody-home-5", timeout=1.5)
        assert "answered no MQTT 5 CONNECT" in str(forced.value) and "[mqtt] protocol" in str(
            forced.value.hint
        )
    finally:
        server.close()
    refused = free_port()  # nothing listens: the hint still names the setting
    with pytest.raises(BrokerUnreachable) as down:
        connect(_auto(f"mqtt://127.0.0.1:{refused}", 0.5), "nobody-at-all", timeout=1)
    assert "[mqtt] protocol" in str(down.value.hint)


def test_amqtt_a_real_311_only_broker_is_spoken_to_over_311(tmp_path: Path) -> None:
    """amqtt (PyPI, in the dev extras) speaks only MQTT 3.1.1: with "auto" a Link falls back
    (whether amqtt refuses MQTT 5 or ignores it) and QoS 1 flows both ways."""
    with running_amqtt(tmp_path / "amqtt") as url:
        got: queue.SimpleQueue[Message] = queue.SimpleQueue()
        sub = connect(
            _auto(url, 2.0), "amqtt-sub", timeout=20, subscriptions=[(TOPIC, 1)], on_message=got.put
        )
        pub = connect(_auto(url, 2.0), "amqtt-pub", timeout=20)
        try:
            assert sub.wait_subscribed(10) and (sub.protocol, pub.protocol) == ("3.1.1", "3.1.1")
            pub.publish_wait(TOPIC, b"over 3.1.1")
            assert got.get(timeout=10).payload == b"over 3.1.1"
        finally:
            pub.close()
            sub.close()
