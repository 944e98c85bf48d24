"""The test servers themselves: Mosquitto with the project's configuration, PostgreSQL in a temp dir."""

from __future__ import annotations

import threading
from pathlib import Path

import paho.mqtt.client as mqtt
from brokers import running_mosquitto, running_postgres
from paho.mqtt.enums import CallbackAPIVersion


def test_mosquitto_with_the_project_config_delivers_qos1(tmp_path: Path) -> None:
    with running_mosquitto(tmp_path / "mq") as broker:
        got: list[bytes] = []
        done = threading.Event()
        c = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="t", protocol=mqtt.MQTTv5)
        c.on_message = lambda _c, _u, msg: (got.append(msg.payload), done.set())
        c.connect("127.0.0.1", broker.port)
        c.loop_start()
        c.subscribe("adamm/v1/+/summary", qos=1)[0]
        c.publish("adamm/v1/s1/summary", b"x", qos=1).wait_for_publish(10)
        assert done.wait(10)
        c.loop_stop()
        c.disconnect()
        assert got == [b"x"]


def test_postgres_starts_in_a_temp_dir(tmp_path: Path) -> None:
    import psycopg

    with running_postgres(tmp_path / "pg") as pg, psycopg.connect(pg.dsn) as conn:
        assert conn.execute("SELECT 1 + 1").fetchone() == (2,)
