"""The hub's MQTT connection (paho-mqtt 2.x, MQTT 5), kept in one small module so that it can be
folded into the shared ``edge.sync.mqtt`` client later: nothing here is hub-specific or
Mosquitto-specific.

:class:`MqttLink` connects with a persistent session (``clean_start=False``, a Session Expiry
Interval), a unique client id, credentials from the config or ``ADAMM_MQTT_USERNAME`` /
``ADAMM_MQTT_PASSWORD`` (TLS with ``mqtts://``, CA from the config or ``ADAMM_MQTT_CA``),
(re)subscribes on every connection, checks every reason code (CONNACK, SUBACK, PUBACK) and
reconnects with exponential back-off and jitter. Bad credentials stop it at once
(:class:`BrokerAuthError`, exit 3); a broker never reached within the connect timeout is
:class:`BrokerUnreachableError` (exit 3). Messages are delivered with ``manual_ack=True``: the
handler acknowledges (:meth:`MqttLink.ack`) only once what it received is committed.
"""

from __future__ import annotations

import logging
import os
import random
import ssl
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import paho.mqtt.client as mqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from edge.errors import EnvironmentProblem, UsageError

logger = logging.getLogger(__name__)

#: CONNACK reason codes that no retry can fix
AUTH_FAILURES = {134: "Bad user name or password", 135: "Not authorized"}


class BrokerError(EnvironmentProblem):
    """The broker cannot be used (exit 3)."""


class BrokerAuthError(BrokerError):
    """The broker refused the credentials."""


class BrokerUnreachableError(BrokerError):
    """The broker could not be reached within the connect timeout."""


@dataclass(frozen=True)
class BrokerURL:
    host: str
    port: int
    tls: bool

    def __str__(self) -> str:
        return f"{'mqtts' if self.tls else 'mqtt'}://{self.host}:{self.port}"


def parse_broker_url(url: str) -> BrokerURL:
    """``mqtt://host:port`` or ``mqtts://host:port`` (default ports 1883 / 8883); no credentials."""
    parts = urlsplit(url)
    if parts.scheme not in ("mqtt", "mqtts") or not parts.hostname:
        raise UsageError(f"--broker {url!r}: use mqtt://HOST:PORT or mqtts://HOST:PORT")
    if parts.username or parts.password:
        raise UsageError(
            "--broker must not carry credentials: set ADAMM_MQTT_USERNAME / ADAMM_MQTT_PASSWORD "
            "or [mqtt] in the config file"
        )
    try:
        port = parts.port or (8883 if parts.scheme == "mqtts" else 1883)
    except ValueError:
        raise UsageError(f"--broker {url!r}: the port is not a number from 1 to 65535") from None
    return BrokerURL(parts.hostname, port, parts.scheme == "mqtts")


@dataclass(frozen=True)
class Credentials:
    username: str | None = None
    password: str | None = None
    ca: str | None = None

    @classmethod
    def resolve(cls, username: str | None, password: str | None, ca: str | None) -> Credentials:
        """The environment's values where set, else the config's."""
        return cls(
            os.environ.get("ADAMM_MQTT_USERNAME") or username,
            os.environ.get("ADAMM_MQTT_PASSWORD") or password,
            os.environ.get("ADAMM_MQTT_CA") or ca,
        )


Handler = Callable[["MqttLink", mqtt.MQTTMessage], None]


class MqttLink:
    """One MQTT 5 client with a persistent session, run by :meth:`run` until ``stop`` is set."""

    def __init__(
        self,
        url: BrokerURL,
        client_id: str,
        subscriptions: Sequence[tuple[str, int]],
        on_message: Handler,
        *,
        credentials: Credentials | None = None,
        session_expiry_s: int = 7 * 86400,
        keepalive_s: int = 30,
        connect_timeout_s: float = 60.0,
        backoff_max_s: float = 30.0,
    ) -> None:
        self.url = url
        self.client_id = client_id
        self.subscriptions = list(subscriptions)
        self.handler = on_message
        self.session_expiry_s = session_expiry_s
        self.keepalive_s = keepalive_s
        self.connect_timeout_s = connect_timeout_s
        self.backoff_max_s = backoff_max_s
        self.connected = threading.Event()
        self.ever_connected = False
        self.fatal: BrokerError | None = None
        self._pending_sub: dict[int, list[str]] = {}
        self.client = mqtt.Client(
            mqtt.CallbackAPIVersion.VERSION2,
            client_id=client_id,
            protocol=mqtt.MQTTv5,
            manual_ack=True,
        )
        if logger.isEnabledFor(logging.DEBUG):
            self.client.enable_logger(logging.getLogger("paho"))
        creds = credentials or Credentials()
        if creds.username:
            self.client.username_pw_set(creds.username, creds.password)
        if url.tls:
            ctx = ssl.create_default_context(cafile=creds.ca) if creds.ca else ssl.create_default_context()
            self.client.tls_set_context(ctx)
        self.client.on_connect = self._on_connect
        self.client.on_disconnect = self._on_disconnect
        self.client.on_subscribe = self._on_subscribe
        self.client.on_publish = self._on_publish
        self.client.on_message = self._on_message

    # -- callbacks -------------------------------------------------------------------------------

    def _on_connect(self, client: mqtt.Client, _ud: Any, flags: Any, rc: Any, _props: Any) -> None:
        if rc.is_failure:
            code = int(rc.value)
            if code in AUTH_FAILURES:
                self.fatal = BrokerAuthError(
                    f"the broker {self.url} refused the hub's credentials ({AUTH_FAILURES[code]})",
                    hint="check ADAMM_MQTT_USERNAME / ADAMM_MQTT_PASSWORD or [mqtt] in the config",
                )
            else:
                logger.warning("broker %s refused the connection: %s", self.url, rc)
            return
        self.ever_connected = True
        logger.info(
            "connected to %s as %s (session %s)",
            self.url,
            self.client_id,
            "resumed" if flags.session_present else "new",
        )
        topics = [t for t, _ in self.subscriptions]
        result, mid = client.subscribe([(t, mqtt.SubscribeOptions(qos=q)) for t, q in self.subscriptions])
        if result != mqtt.MQTT_ERR_SUCCESS:
            logger.warning("subscribe to %s not sent (%s)", topics, mqtt.error_string(result))
            return
        self._pending_sub[int(mid or 0)] = topics

    def _on_subscribe(self, _c: mqtt.Client, _ud: Any, mid: int, codes: Any, _props: Any) -> None:
        topics = self._pending_sub.pop(mid, [])
        bad = [f"{t}: {c}" for t, c in zip(topics, codes, strict=False) if c.is_failure]
        if bad:
            self.fatal = BrokerError(
                f"the broker {self.url} refused the hub's subscriptions ({'; '.join(bad)})",
                hint="check the broker's ACL for the hub user (and that it supports MQTT 5 shared subscriptions)",
            )
            return
        logger.info("subscribed to %s", ", ".join(topics))
        self.connected.set()

    def _on_disconnect(self, _c: mqtt.Client, _ud: Any, _flags: Any, rc: Any, _props: Any) -> None:
        self.connected.clear()
        if rc.value != 0:
            logger.warning("disconnected from %s: %s", self.url, rc)

    def _on_publish(self, _c: mqtt.Client, _ud: Any, mid: int, rc: Any, _props: Any) -> None:
        if rc.is_failure:
            logger.warning("the broker refused publication %d: %s", mid, rc)

    def _on_message(self, _c: mqtt.Client, _ud: Any, msg: mqtt.MQTTMessage) -> None:
        try:
            self.handler(self, msg)
        except BrokerError as exc:
            self.fatal = exc
        except EnvironmentProblem as exc:  # e.g. the database: not acknowledged, so redelivered
            self.fatal = BrokerError(str(exc))

    # -- use -------------------------------------------------------------------------------------

    def ack(self, msg: mqtt.MQTTMessage) -> None:
        """Acknowledge a received message (PUBACK for QoS 1): call only after committing it."""
        if msg.qos > 0:
            self.client.ack(msg.mid, msg.qos)

    def publish(
        self,
        topic: str,
        payload: bytes,
        qos: int = 1,
        retain: bool = False,
        *,
        expiry_s: int | None = None,
        user_properties: Sequence[tuple[str, str]] = (),
    ) -> mqtt.MQTTMessageInfo:
        """Publish (thread-safe; the returned info's ``wait_for_publish`` waits for the PUBACK from
        another thread); ``expiry_s``: the MQTT 5 Message Expiry Interval (as
        :meth:`edge.sync.action_transport.MqttLink.publish`)."""
        props = None
        if expiry_s is not None or user_properties:
            props = Properties(PacketTypes.PUBLISH)
            if expiry_s is not None:
                props.MessageExpiryInterval = max(1, int(expiry_s))
            if user_properties:
                props.UserProperty = list(user_properties)
        info = self.client.publish(topic, payload, qos=qos, retain=retain, properties=props)
        if info.rc not in (mqtt.MQTT_ERR_SUCCESS, mqtt.MQTT_ERR_NO_CONN, mqtt.MQTT_ERR_QUEUE_SIZE):
            logger.warning("publish to %s failed: %s", topic, mqtt.error_string(info.rc))
        return info

    def _connect_once(self) -> bool:
        props = Properties(PacketTypes.CONNECT)
        props.SessionExpiryInterval = self.session_expiry_s
        try:
            self.client.connect(
                self.url.host,
                self.url.port,
                keepalive=self.keepalive_s,
                clean_start=False,
                properties=props,
            )
        except (OSError, ssl.SSLError) as exc:
            logger.info("broker %s not reachable: %s", self.url, exc)
            return False
        return True

    def run(self, stop: threading.Event) -> None:
        """Connect, serve messages and reconnect (back-off with jitter) until ``stop`` is set."""
        delay = 0.5
        started = time.monotonic()
        socket_open = False
        while not stop.is_set():
            if self.fatal is not None:
                raise self.fatal
            if not socket_open:
                socket_open = self._connect_once()
                if not socket_open:
                    if not self.ever_connected and time.monotonic() - started > self.connect_timeout_s:
                        raise BrokerUnreachableError(
                            f"the broker {self.url} is unreachable after {self.connect_timeout_s:.0f} s of retries",
                            hint="check that it runs and the --broker URL",
                        )
                    stop.wait(delay * random.uniform(0.5, 1.5))
                    delay = min(self.backoff_max_s, delay * 2)
                    continue
            rc = self.client.loop(timeout=0.2)
            if self.connected.is_set():
                delay = 0.5
            if rc != mqtt.MQTT_ERR_SUCCESS:
                socket_open = False
                if self.fatal is not None:
                    raise self.fatal
                stop.wait(delay * random.uniform(0.5, 1.5))
                delay = min(self.backoff_max_s, delay * 2)
        if self.fatal is not None:
            raise self.fatal
        self.client.disconnect()
        for _ in range(10):  # flush the DISCONNECT
            if self.client.loop(timeout=0.05) != mqtt.MQTT_ERR_SUCCESS:
                break
