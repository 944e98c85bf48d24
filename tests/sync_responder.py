"""A stand-in for the hub in the edge's sync tests: a real MQTT client in the test process that
subscribes to every store's summaries, records each (the highest version per key, as the hub
does), and answers with receipts after recording them. Not the hub: that is ``adamm-hub serve``."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from edge.sync import messages as m


@dataclass
class Responder:
    port: int
    client_id: str = "adamm-test-hub"
    username: str | None = None
    password: str | None = None
    tls_ca: str | None = None
    #: receipt only every n-th message (0: never receipt); a callable may park some
    receipt: bool = True
    park: Callable[[m.Summary], str | None] | None = None
    received: int = 0
    duplicates: int = 0
    older: int = 0
    parked: list[tuple[str, str]] = field(default_factory=list)
    latest: dict[tuple[str, str], m.Summary] = field(default_factory=dict)
    msg_ids: set[str] = field(default_factory=set)
    statuses: dict[str, dict[str, str]] = field(default_factory=dict)
    bad: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._connected = threading.Event()
        c = paho.Client(
            CallbackAPIVersion.VERSION2, client_id=self.client_id, protocol=MQTTProtocolVersion.MQTTv5
        )
        if self.tls_ca is not None:
            c.tls_set(ca_certs=self.tls_ca)
        if self.username is not None:
            c.username_pw_set(self.username, self.password)
        c.on_connect = self._on_connect
        c.on_message = self._on_message
        self.client = c

    def start(self) -> Responder:
        props = Properties(PacketTypes.CONNECT)
        props.SessionExpiryInterval = 3600
        self.client.connect("127.0.0.1", self.port, clean_start=False, properties=props)
        self.client.loop_start()
        assert self._connected.wait(10), "responder did not connect"
        return self

    def stop(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()

    def _on_connect(self, client: Any, userdata: Any, flags: Any, rc: Any, props: Any) -> None:
        assert not rc.is_failure, rc
        client.subscribe([(f"{m.TOPIC_ROOT}/+/summary", 1), (f"{m.TOPIC_ROOT}/+/status", 1)])
        self._connected.set()

    def _on_message(self, client: Any, userdata: Any, msg: Any) -> None:
        store = m.topic_store(msg.topic)
        if msg.topic.endswith("/status"):
            with self._lock:
                self.statuses[str(store)] = m.parse_status(msg.payload)
            return
        try:
            s = m.parse_summary(msg.topic, msg.payload)
        except m.MessageError as exc:
            with self._lock:
                self.bad.append(exc.reason)
            return
        reason = self.park(s) if self.park is not None else None
        with self._lock:
            self.received += 1
            if reason is not None:
                self.parked.append((s.msg_id, reason))
            elif s.msg_id in self.msg_ids:
                self.duplicates += 1
            else:
                self.msg_ids.add(s.msg_id)
                k = (s.store_id, s.key)
                have = self.latest.get(k)
                if have is None or s.version > have.version:
                    self.latest[k] = s
                else:
                    self.older += 1
        if self.receipt:
            r = m.Receipt(
                stored=() if reason else (s.msg_id,), parked=((s.msg_id, reason),) if reason else ()
            )
            client.publish(m.receipt_topic(s.store_id), r.encode(), qos=1)

    def rows(self, store_id: str, slice_: str) -> dict[tuple[str, Any, str], dict[str, Any]]:
        """(day, value, event_type) -> the latest row of that slice."""
        out: dict[tuple[str, Any, str], dict[str, Any]] = {}
        with self._lock:
            for (sid, _key), s in self.latest.items():
                if sid == store_id and s.kind == "rollup" and s.body["slice"] == slice_:
                    for r in s.body["rows"]:
                        out[(s.body["day"], r["value"], r["event_type"])] = r
        return out

    def wait(self, pred: Callable[[], bool], timeout: float = 30.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if pred():
                    return True
            time.sleep(0.05)
        return False


def dump(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, default=str)
