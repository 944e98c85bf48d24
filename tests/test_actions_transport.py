"""The action MQTT link's pure parts: broker URLs, where credentials come from, the backoff."""

from __future__ import annotations

import pytest

from edge.config import MqttConfig, parse_duration
from edge.errors import UsageError
from edge.sync.action_transport import backoff_delays, credentials_from, parse_broker_url


def test_broker_urls() -> None:
    assert parse_broker_url("mqtt://127.0.0.1:1884") == ("127.0.0.1", 1884, False)
    assert parse_broker_url("mqtts://broker.example:8883") == ("broker.example", 8883, True)
    assert parse_broker_url("mqtts://broker.example") == ("broker.example", 8883, True)
    assert parse_broker_url("mqtt://h") == ("h", 1883, False)
    for bad in ("http://h:1", "h:1883", "mqtt://:1883", "mqtt://h:99999"):
        with pytest.raises(UsageError):
            parse_broker_url(bad)
    with pytest.raises(UsageError, match="must not carry credentials"):
        parse_broker_url("mqtt://sh_01:secret@h:1883")


def test_the_environment_wins_over_the_config_file() -> None:
    cfg = MqttConfig(username="file-user", password="file-pw", ca="/file/ca.crt")
    assert credentials_from(cfg, {}).username == "file-user"
    env = {"ADAMM_MQTT_USERNAME": "env-user", "ADAMM_MQTT_PASSWORD": "env-pw", "ADAMM_MQTT_CA": "/env/ca"}
    c = credentials_from(cfg, env)
    assert (c.username, c.password, c.ca) == ("env-user", "env-pw", "/env/ca")
    assert credentials_from(None, {}).username is None


def test_backoff_doubles_up_to_the_cap_with_jitter() -> None:
    delays = backoff_delays(8, first=0.5, cap=4.0)
    assert len(delays) == 7
    for i, d in enumerate(delays):
        top = min(4.0, 0.5 * 2**i)
        assert top / 2 <= d <= top


def test_durations() -> None:
    assert parse_duration("PT2H").total_seconds() == 7200
    assert parse_duration("P1DT30M").total_seconds() == 86400 + 1800
    assert parse_duration("2h").total_seconds() == 7200
    assert parse_duration("45").total_seconds() == 45
    assert parse_duration("1w").total_seconds() == 7 * 86400
    for bad in ("", "P", "PT", "soon", "0s", "P2Y", "-1h", "400d"):
        with pytest.raises(ValueError):
            parse_duration(bad)
