"""`adamm-hub broker-setup`: a real Mosquitto runs the written set-up; TLS only, no anonymous
users, the contract's ACL, no session takeover, reruns keep credentials."""

from __future__ import annotations

import contextlib
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest
from brokers import _wait_port, free_port, reachable_by_others
from hub_data import fact_body
from paho.mqtt.enums import CallbackAPIVersion

from hub.broker_setup import _read_env, broker_setup, hash_password

STORES = ["sh_01", "sh_02"]


@contextlib.contextmanager
def broker(dir: Path) -> Iterator[int]:
    port = int(
        next(
            line.split()[1]
            for line in (dir / "mosquitto.conf").read_text().splitlines()
            if line.startswith("listener ")
        )
    )
    reachable_by_others(dir / "passwd")
    proc = subprocess.Popen(
        ["mosquitto", "-c", str(dir / "mosquitto.conf")], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        _wait_port(port, proc, "mosquitto")
        yield port
    finally:
        proc.terminate()
        proc.wait(10)


class Peer:
    """A real MQTT 5 client over TLS with a user's credentials file."""

    def __init__(
        self, dir: Path, port: int, user: str, *, password: str | None = None, client_id: str | None = None
    ) -> None:
        env = _read_env(dir / "credentials" / f"{user}.env")
        self.got: list[tuple[str, bytes]] = []
        self.connack = threading.Event()
        self.reason: int | None = None
        self.disconnected = threading.Event()
        self.subacks: list[list[int]] = []
        self.c = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id or user, protocol=mqtt.MQTTv5)
        self.c.username_pw_set(
            env["ADAMM_MQTT_USERNAME"], password if password is not None else env["ADAMM_MQTT_PASSWORD"]
        )
        self.c.tls_set(ca_certs=env["ADAMM_MQTT_CA"], tls_version=ssl.PROTOCOL_TLS_CLIENT)
        self.c.on_connect = self._on_connect
        self.c.on_message = lambda _c, _u, m: self.got.append((m.topic, m.payload))
        self.c.on_disconnect = lambda *_a: self.disconnected.set()
        self.c.on_subscribe = lambda _c, _u, _mid, codes, _p: self.subacks.append(
            [int(getattr(x, "value", x)) for x in codes]
        )
        self.c.connect("localhost", port)
        self.c.loop_start()
        assert self.connack.wait(10)

    def _on_connect(self, _c: object, _u: object, _f: object, reason: object, _p: object) -> None:
        self.reason = int(getattr(reason, "value", reason))  # type: ignore[call-overload]
        self.connack.set()

    def sub(self, topic: str) -> int:
        self.c.subscribe(topic, qos=1)
        deadline = time.monotonic() + 10
        while not self.subacks and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.subacks.pop()[0]

    def pub(self, topic: str, payload: bytes, retain: bool = False) -> None:
        self.c.publish(topic, payload, qos=1, retain=retain).wait_for_publish(10)

    def close(self) -> None:
        self.c.loop_stop()
        self.c.disconnect()


def _eventually(cond: object, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():  # type: ignore[operator]
            return True
        time.sleep(0.02)
    return False


@pytest.fixture(scope="module")
def setup_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("broker")
    broker_setup(d, STORES, port=free_port(), staff_devices=1, hostnames=["localhost"])
    return d


def test_password_hash_is_mosquittos_format() -> None:
    h = hash_password("secret", salt=b"0123456789ab")
    assert h.startswith("$7$101$MDEyMzQ1Njc4OWFi$") and len(h.split("$")[-1]) == 88


def test_files_and_modes(setup_dir: Path) -> None:
    for name in ("mosquitto.conf", "ca.crt", "server.crt", "server.key", "passwd", "acl"):
        assert (setup_dir / name).is_file()
    for user in ("hub", "sh_01", "sh_02", "staff-sh_01", "staff-sh_01-1", "staff-sh_02", "staff-sh_02-1"):
        p = setup_dir / "credentials" / f"{user}.env"
        assert p.stat().st_mode & 0o077 == 0
        assert set(_read_env(p)) == {"ADAMM_MQTT_USERNAME", "ADAMM_MQTT_PASSWORD", "ADAMM_MQTT_CA"}
    conf = (setup_dir / "mosquitto.conf").read_text()
    assert "allow_anonymous false" in conf and conf.count("listener ") == 1 and "tls_version tlsv1.2" in conf


def test_the_acl_and_tls_hold_on_a_real_broker(setup_dir: Path) -> None:
    with broker(setup_dir) as port:
        # plain MQTT on the TLS port: no session
        plain = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="plain", protocol=mqtt.MQTTv5)
        with pytest.raises((OSError, ssl.SSLError, ConnectionError)):
            plain.connect("localhost", port)
            plain.loop_start()
            time.sleep(1)
            assert not plain.is_connected()
            raise ConnectionError("refused")
        plain.loop_stop()
        # wrong password: CONNACK "bad user name or password" (134) or "not authorized" (135)
        bad = Peer(setup_dir, port, "sh_01", password="wrong")
        assert bad.reason in (134, 135)
        bad.close()

        hub = Peer(setup_dir, port, "hub")
        s1 = Peer(setup_dir, port, "sh_01")
        s2 = Peer(setup_dir, port, "sh_02")
        staff1 = Peer(setup_dir, port, "staff-sh_01")
        assert (hub.reason, s1.reason, s2.reason, staff1.reason) == (0, 0, 0, 0)
        for t in ("adamm/v1/+/summary", "adamm/v1/+/status", "adamm/v1/+/ack/#"):
            assert hub.sub(t) == 1
        # a store reads only its own receipts and acks
        assert s1.sub("adamm/v1/sh_01/receipt") == 1
        assert s1.sub("adamm/v1/sh_01/ack/#") == 1
        # Mosquitto grants a subscription it may not deliver on; the ACL is applied per message
        s1.sub("adamm/v1/sh_02/receipt")
        s1.sub("adamm/v1/+/summary")
        assert staff1.sub("adamm/v1/sh_01/action/#") == 1
        staff1.sub("adamm/v1/sh_02/action/#")

        s1.pub("adamm/v1/sh_01/summary", b"own")
        s1.pub("adamm/v1/sh_02/summary", b"forged")  # denied by the ACL: never delivered
        s1.pub("adamm/v1/sh_01/action/cashier/a1", b"act")
        staff1.pub("adamm/v1/sh_01/ack/a1", b"ack")
        staff1.pub("adamm/v1/sh_02/ack/a1", b"forged-ack")
        hub.pub("adamm/v1/sh_01/receipt", b"r1")
        hub.pub("adamm/v1/sh_02/receipt", b"r2")
        hub.pub("adamm/v1/sh_02/action/cashier/a9", b"other-store-action")
        assert _eventually(
            lambda: (
                ("adamm/v1/sh_01/ack/a1", b"ack") in hub.got and ("adamm/v1/sh_01/receipt", b"r1") in s1.got
            )
        )
        assert _eventually(lambda: ("adamm/v1/sh_01/action/cashier/a1", b"act") in staff1.got)
        time.sleep(0.5)
        assert ("adamm/v1/sh_01/summary", b"own") in hub.got
        assert all(p not in (b"forged", b"forged-ack") for _t, p in hub.got)
        assert sorted(t for t, _p in s1.got) == ["adamm/v1/sh_01/ack/a1", "adamm/v1/sh_01/receipt"]
        assert [p for _t, p in staff1.got] == [b"act"]
        # open actions are retained per action (the store's and the hub's), cleared when they end:
        # a device that connects later gets the open ones only, through its read ACL
        s1.pub("adamm/v1/sh_01/action/cashier/open1", b"store-open", retain=True)
        hub.pub("adamm/v1/sh_01/action/cashier/open2", b"hub-open", retain=True)
        s1.pub("adamm/v1/sh_01/action/cashier/ended", b"ended", retain=True)
        s1.pub("adamm/v1/sh_01/action/cashier/ended", b"", retain=True)
        later = Peer(setup_dir, port, "staff-sh_01-1")
        later.sub("adamm/v1/sh_01/action/cashier/#")
        assert _eventually(lambda: len(later.got) >= 2)
        time.sleep(0.3)
        assert sorted(p for _t, p in later.got) == [b"hub-open", b"store-open"]
        later.c.disconnect()

        # no session takeover: sh_01 asking for sh_02's client id gets its own session
        thief = Peer(setup_dir, port, "sh_01", client_id="sh_02")
        assert thief.reason == 0
        time.sleep(0.5)
        assert not s2.disconnected.is_set()
        assert s2.sub("adamm/v1/sh_02/receipt") == 1
        hub.pub("adamm/v1/sh_02/receipt", b"r3")
        assert _eventually(lambda: ("adamm/v1/sh_02/receipt", b"r3") in s2.got)
        assert ("adamm/v1/sh_02/receipt", b"r3") not in thief.got
        for p in (thief, staff1, s2, s1, hub):
            p.close()


def test_rerun_adds_stores_and_keeps_credentials(tmp_path: Path) -> None:
    d = tmp_path / "b"
    broker_setup(d, ["sh_01"], port=free_port(), hostnames=["localhost"])
    before = {p.name: p.read_text() for p in (d / "credentials").glob("*.env")}
    ca = (d / "ca.crt").read_bytes()
    result = broker_setup(d, ["sh_02"], port=free_port(), hostnames=["localhost"])
    after = {p.name: p.read_text() for p in (d / "credentials").glob("*.env")}
    assert set(result.added) == {"sh_02", "staff-sh_02"}
    assert {k: after[k] for k in before} == before
    assert (d / "ca.crt").read_bytes() == ca
    assert "user sh_01" in (d / "acl").read_text() and "user sh_02" in (d / "acl").read_text()
    with broker(d) as port:
        for user in ("sh_01", "sh_02", "hub"):
            p = Peer(d, port, user)
            assert p.reason == 0
            p.close()


@pytest.mark.parametrize("bad", [["hub"], ["a/b"], ["staff-x"], ["+"], []])
def test_bad_store_ids_are_usage_errors(tmp_path: Path, bad: list[str]) -> None:
    from edge.errors import UsageError

    with pytest.raises(UsageError):
        broker_setup(tmp_path / "x", bad)
    assert not (tmp_path / "x" / "passwd").exists()


def test_server_certificate_names(setup_dir: Path) -> None:
    ctx = ssl.create_default_context(cafile=str(setup_dir / "ca.crt"))
    with broker(setup_dir) as port, socket.create_connection(("127.0.0.1", port)) as raw:
        with ctx.wrap_socket(raw, server_hostname="localhost") as tls:
            assert tls.version() in ("TLSv1.2", "TLSv1.3")


def test_the_command_writes_the_setup_and_reruns_keep_it(tmp_path: Path) -> None:
    d = tmp_path / "cmd"
    args = [
        "adamm-hub",
        "broker-setup",
        "--dir",
        str(d),
        "--stores",
        "sh_01,sh_02",
        "--port",
        "18883",
        "--json",
    ]
    first = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert first.returncode == 0, first.stderr
    import json

    out = json.loads(first.stdout)
    assert out["port"] == 18883 and set(out["added"]) == {
        "hub",
        "sh_01",
        "staff-sh_01",
        "sh_02",
        "staff-sh_02",
    }
    again = subprocess.run([*args[:5], "sh_03", "--json"], capture_output=True, text=True, timeout=60)
    assert again.returncode == 0, again.stderr
    assert set(json.loads(again.stdout)["added"]) == {"sh_03", "staff-sh_03"}
    assert "listener 18883" in (d / "mosquitto.conf").read_text()  # a rerun keeps the port
    bad = subprocess.run([*args[:5], "a/b"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "store ids" in bad.stderr


def test_store_ids_ending_in_a_number_do_not_read_as_staff_devices(tmp_path: Path) -> None:
    d = tmp_path / "n"
    broker_setup(d, ["store-12"], port=free_port(), hostnames=["localhost"])
    again = broker_setup(d, ["store-13"], hostnames=["localhost"])
    assert set(again.users) == {"hub", "store-12", "staff-store-12", "store-13", "staff-store-13"}
    grown = broker_setup(d, ["store-12"], staff_devices=2, hostnames=["localhost"])
    assert set(grown.added) == {
        "staff-store-12-1",
        "staff-store-12-2",
        "staff-store-13-1",
        "staff-store-13-2",
    }
    assert set(broker_setup(d, ["store-12"], hostnames=["localhost"]).users) == set(grown.users)  # kept


# -- the wire's limits and the attacker (issue 25) ------------------------------------------------


def test_bind_and_max_packet_size_are_written_and_kept_on_a_rerun(tmp_path: Path) -> None:
    from hub.broker_setup import MAX_PACKET_BYTES

    port = free_port()
    broker_setup(tmp_path, ["sh_01"], port=port, hostnames=["localhost"], bind="127.0.0.1")
    conf = (tmp_path / "mosquitto.conf").read_text()
    assert f"listener {port} 127.0.0.1" in conf.splitlines()
    assert f"max_packet_size {MAX_PACKET_BYTES}" in conf.splitlines()
    broker_setup(tmp_path, ["sh_02"], hostnames=["localhost"])  # a rerun keeps port and address
    assert f"listener {port} 127.0.0.1" in (tmp_path / "mosquitto.conf").read_text().splitlines()
    from edge.errors import UsageError

    with pytest.raises(UsageError, match="--bind"):
        broker_setup(tmp_path, ["sh_01"], bind="not an address")


def test_the_cli_takes_bind(tmp_path: Path) -> None:
    import os
    import sys

    root = Path(__file__).resolve().parents[1]
    r = subprocess.run(
        [sys.executable, "-m", "hub", "broker-setup", "--dir", str(tmp_path), "--stores", "sh_01"]
        + ["--port", "18883", "--bind", "127.0.0.1", "--hostname", "localhost"],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert "listener 18883 127.0.0.1" in (tmp_path / "mosquitto.conf").read_text()


def test_the_broker_refuses_a_packet_over_the_limit_and_passes_one_at_it(tmp_path: Path) -> None:
    from edge.sync import messages as m

    broker_setup(tmp_path, ["sh_01"], port=free_port(), hostnames=["localhost"], bind="127.0.0.1")
    with broker(tmp_path) as port:
        hub = Peer(tmp_path, port, "hub")
        store = Peer(tmp_path, port, "sh_01")
        try:
            assert hub.sub("adamm/v1/+/summary") == 1
            at_limit = b"x" * m.MAX_MESSAGE_BYTES
            store.pub("adamm/v1/sh_01/summary", at_limit)
            assert _eventually(lambda: len(hub.got) == 1)
            store.c.publish("adamm/v1/sh_01/summary", b"x" * (m.MAX_MESSAGE_BYTES + 16 * 1024), qos=1)
            assert store.disconnected.wait(10)  # the broker's DISCONNECT: packet too large
            time.sleep(0.5)
            assert len(hub.got) == 1
        finally:
            hub.close()
            store.close()


def _forged(kind: str, body: dict[str, object], version: int = 1) -> bytes:
    import json

    from edge.sync import messages as m

    key = (
        m.rollup_key(str(body["day"]), str(body["slice"]))
        if kind == "rollup"
        else m.fact_key(str(body["fact_id"]))
    )
    try:
        mid = m.message_id("sh_01", kind, key, version, body)
    except ValueError:
        mid = "f" * 32
    env = {"msg_id": mid, "schema_version": 1, "store_id": "sh_01", "kind": kind, "key": key}
    return json.dumps({**env, "version": version, "body": body}).encode()


def test_an_outside_client_with_a_stores_credentials_cannot_make_the_hub_believe_it(tmp_path: Path) -> None:
    """The issue's probes, sent by plain paho as store sh_01 through the locked-down broker to a
    serving hub: nothing stored, each parked with its reason, the status shows no day in 2099."""
    import json
    import os
    import sys

    from edge.sync import messages as m

    root = Path(__file__).resolve().parents[1]
    broker_setup(tmp_path, ["sh_01"], port=free_port(), hostnames=["localhost"], bind="127.0.0.1")
    zero = {f: 0 for f in m.ROLLUP_FIELDS}
    base_row = {
        **zero,
        "value": None,
        "event_type": "purchase",
        "first_event_id": "e1",
        "last_event_id": "e2",
    }
    fact = fact_body(statement={"zh": "雨天客单价高", "en": "rainy-day order value up"}, evidence=["e1"])
    probes = {
        "day_ahead": _forged(
            "rollup",
            {
                "day": "2099-01-15",
                "slice": "total",
                "tz": "Asia/Shanghai",
                "closed": True,
                "rows": [{**base_row, "revenue": 5_000_000.0, "events": 1}],
            },
        ),
        "bad_count": _forged("fact", {**fact, "n": -5}),
        "not_probability": _forged("fact", {**fact, "fact_id": "f2", "confidence": 7.5}),
        "non_finite": _forged("fact", {**fact, "fact_id": "f3", "effect": float("nan")}),
    }
    env = {**os.environ, "PYTHONPATH": str(root), **_read_env(tmp_path / "credentials" / "hub.env")}
    db = tmp_path / "hub.db"
    with broker(tmp_path) as port:
        err = (tmp_path / "hub.log").open("wb")
        hub = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "hub",
                "-v",
                "serve",
                "--db",
                str(db),
                "--broker",
                f"mqtts://localhost:{port}",
            ],
            cwd=root,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
        attacker = Peer(tmp_path, port, "sh_01")
        try:
            assert _eventually(lambda: "subscribed to" in (tmp_path / "hub.log").read_text(), 30)
            assert attacker.sub("adamm/v1/sh_01/receipt") == 1
            for payload in probes.values():
                attacker.pub("adamm/v1/sh_01/summary", payload)
            assert _eventually(lambda: len(attacker.got) == len(probes), 30), (
                tmp_path / "hub.log"
            ).read_text()
            parked = {p["reason"] for _t, r in attacker.got for p in json.loads(r).get("parked", [])}
            assert parked == set(probes)
            assert all(not json.loads(r)["stored"] for _t, r in attacker.got)
        finally:
            attacker.close()
            hub.terminate()
            assert hub.wait(30) == 0, (tmp_path / "hub.log").read_text()
            err.close()
    st = subprocess.run(
        [sys.executable, "-m", "hub", "status", "--db", str(db), "--json"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    status = json.loads(st.stdout)
    assert status["parked"]["by_reason"] == dict.fromkeys(probes, 1)
    assert all(
        s["days"]["last"] is None and s["counts"] == {"rollup": 0, "fact": 0} for s in status["stores"]
    )
    assert [s["store_id"] for s in status["stores"]] == ["sh_01"]
    assert sorted(p["reason"] for s in status["stores"] for p in s["parked"]) == sorted(probes)
    assert "Traceback" not in (tmp_path / "hub.log").read_text()
