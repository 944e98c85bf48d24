"""edge.sync.mqtt without a broker: broker URLs, credentials from config and environment, the
backoff's bounds; and the edge's sync command on files that are not memories."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from edge.errors import UsageError
from edge.sync.mqtt import Backoff, BrokerAddress, credentials, parse_broker_url

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("url", "want"),
    [
        ("mqtt://hub:1883", BrokerAddress("hub", 1883, False)),
        ("mqtts://hub.example.com:8883", BrokerAddress("hub.example.com", 8883, True)),
        ("mqtt://127.0.0.1", BrokerAddress("127.0.0.1", 1883, False)),
        ("mqtts://hub", BrokerAddress("hub", 8883, True)),
        ("  mqtt://[::1]:1884/ ", BrokerAddress("::1", 1884, False)),
    ],
)
def test_broker_urls(url: str, want: BrokerAddress) -> None:
    assert parse_broker_url(url) == want


@pytest.mark.parametrize(
    "url",
    ["", "hub:1883", "http://hub:1883", "tcp://hub:1883", "mqtt://", "mqtt://hub:0x", "mqtt://hub:70000",
     "mqtt://user:pw@hub:1883", "mqtt://hub:1883/topic", "mqtt://hub:1883?x=1"],
)  # fmt: skip
def test_bad_broker_urls_are_usage_errors(url: str) -> None:
    with pytest.raises(UsageError) as e:
        parse_broker_url(url)
    assert e.value.exit_code == 2 and "mqtt://" in str(e.value)


def test_credentials_come_from_the_config_then_the_environment() -> None:
    env = {"ADAMM_MQTT_USERNAME": "envuser", "ADAMM_MQTT_PASSWORD": "envpw", "ADAMM_MQTT_CA": "/ca.pem"}
    assert credentials(env=env) == credentials("envuser", "envpw", "/ca.pem", env={})
    c = credentials("cfguser", None, None, env=env)
    assert (c.username, c.password, c.ca_file) == ("cfguser", "envpw", "/ca.pem")
    assert credentials(env={}).username is None
    assert "envpw" not in repr(credentials(env=env))


def test_backoff_doubles_with_jitter_up_to_the_cap_and_resets() -> None:
    b = Backoff(0.5, 8.0, rng=random.Random(1))
    waits = [b.next() for _ in range(12)]
    caps = [min(8.0, 0.5 * 2**n) for n in range(12)]
    assert all(0.25 <= w <= c for w, c in zip(waits, caps, strict=True)), waits
    assert max(waits[6:]) > 4.0  # it does grow towards the cap
    assert len(set(waits)) == len(waits)  # jittered, not a fixed ladder
    b.reset()
    assert b.next() <= 0.5


@pytest.mark.parametrize("content", [b"", b"not sqlite at all\n" * 10])
def test_sync_on_a_file_that_is_not_a_memory_exits_3_and_leaves_it(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "other.db"
    path.write_bytes(content)
    out = subprocess.run(
        [sys.executable, "-m", "edge", "sync", "--db", str(path), "--broker", "mqtt://127.0.0.1:1", "--once"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert out.returncode == 3, out.stderr
    assert path.read_bytes() == content and out.stdout == ""


def test_sync_needs_a_broker(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "edge", "sync", "--db", str(tmp_path / "x.db"), "--once"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert out.returncode == 2 and "--broker" in out.stderr


def test_a_missing_ca_file_is_an_environment_error(tmp_path: Path) -> None:
    from edge.memory.store import Store

    db = tmp_path / "m.db"
    Store.open(db, timezone="Asia/Shanghai").close()
    out = subprocess.run(
        [sys.executable, "-m", "edge", "sync", "--db", str(db), "--broker", "mqtts://127.0.0.1:1", "--once"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "ADAMM_MQTT_CA": str(tmp_path / "missing.pem")},
    )
    assert out.returncode == 3
    assert "CA certificate" in out.stderr and "missing.pem" in out.stderr
