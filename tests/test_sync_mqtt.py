"""edge.sync.mqtt without a broker: broker URLs, credentials from the environment and ``[mqtt]``
(the environment wins), the backoff's bounds, action durations, PUBLISH properties packed the way
paho packs them; and the edge's sync command on files that are not memories."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from edge.config import MqttConfig, parse_duration
from edge.errors import UsageError
from edge.sync.mqtt import (
    Backoff,
    BrokerAddress,
    PackedPublishProperties,
    credentials,
    link_settings,
    parse_broker_url,
)

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


def test_the_environment_wins_over_the_config_file() -> None:
    cfg = MqttConfig(username="file-user", password="file-pw", ca="/file/ca.crt")
    c = credentials(cfg, {})
    assert (c.username, c.password, c.ca_file) == ("file-user", "file-pw", "/file/ca.crt")
    env = {"ADAMM_MQTT_USERNAME": "env-user", "ADAMM_MQTT_PASSWORD": "env-pw", "ADAMM_MQTT_CA": "/env/ca"}
    c = credentials(cfg, env)
    assert (c.username, c.password, c.ca_file) == ("env-user", "env-pw", "/env/ca")
    c = credentials(cfg, {"ADAMM_MQTT_PASSWORD": "env-pw"})  # each value on its own
    assert (c.username, c.password, c.ca_file) == ("file-user", "env-pw", "/file/ca.crt")
    assert credentials(None, {}).username is None
    assert "env-pw" not in repr(credentials(cfg, env))


def test_link_settings_come_from_the_mqtt_section() -> None:
    cfg = MqttConfig(
        username="u", session_expiry_s=3600, keepalive_s=10, backoff_initial_s=0.2, backoff_max_s=2.0,
        connect_attempts=3,
    )  # fmt: skip
    s = link_settings("mqtts://hub:8883", cfg, max_inflight=7, env={})
    assert s.address == BrokerAddress("hub", 8883, True)
    assert (s.credentials.username, s.session_expiry_s, s.keepalive_s) == ("u", 3600, 10)
    assert (s.backoff_initial_s, s.backoff_max_s, s.max_inflight, s.connect_attempts) == (0.2, 2.0, 7, 3)


def test_credentials_in_the_broker_url_are_refused() -> None:
    with pytest.raises(UsageError, match="carries credentials") as e:
        parse_broker_url("mqtt://sh_01:secret@h:1883")
    assert "ADAMM_MQTT_USERNAME" in (e.value.hint or "")


def test_durations() -> None:
    assert parse_duration("PT2H").total_seconds() == 7200
    assert parse_duration("P1DT30M").total_seconds() == 86400 + 1800
    assert parse_duration("2h").total_seconds() == 7200
    assert parse_duration("45").total_seconds() == 45
    assert parse_duration("1w").total_seconds() == 7 * 86400
    for bad in ("", "P", "PT", "soon", "0s", "P2Y", "-1h", "400d"):
        with pytest.raises(ValueError):
            parse_duration(bad)


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


# MQTT strings are UTF-8 without U+0000 or surrogates (MQTT 5, 1.5.4); paho's reader also refuses
# U+FEFF (its reading of MQTT-1.5.4-3), so a property holding one would not read back
_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\ufeff"), max_size=40)


@given(
    user=st.dictionaries(_text, _text, max_size=4),
    expiry=st.one_of(st.none(), st.integers(min_value=1, max_value=2**32 - 1)),
)
def test_packed_publish_properties_are_what_paho_packs(user: dict[str, str], expiry: int | None) -> None:
    """The drain's pre-packed properties: byte for byte paho's own packing, and paho reads them back."""
    want = Properties(PacketTypes.PUBLISH)
    if expiry is not None:
        want.MessageExpiryInterval = expiry
    if user:
        want.UserProperty = list(user.items())
    got = PackedPublishProperties(user, expiry)
    assert got.pack() == want.pack()
    back = Properties(PacketTypes.PUBLISH)
    back.unpack(got.pack())
    assert getattr(back, "UserProperty", []) == list(user.items())
    assert getattr(back, "MessageExpiryInterval", None) == expiry
    assert str(got) == str(want)
