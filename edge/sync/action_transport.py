"""A small MQTT 5 link for actions: connect, subscribe, publish with PUBACK (paho-mqtt 2.x).

The whole MQTT surface the action path needs, behind one class (:class:`MqttLink`), written to
the shared sync design so it can be folded into :mod:`edge.sync.mqtt`:

- ``URL`` is ``mqtt://host:port`` or ``mqtts://host:port`` (TLS; the CA from the config's
  ``[mqtt] ca`` or ``$ADAMM_MQTT_CA``, else the system's CAs); credentials from
  ``$ADAMM_MQTT_USERNAME`` / ``$ADAMM_MQTT_PASSWORD`` (these win) or the config's ``[mqtt]``,
  never from the command line (:func:`credentials_from`);
- MQTT 5, a persistent session (``clean_start=False``, Session Expiry Interval = the config's
  outage budget, 7 days by default) under a stable client id, so what arrives while the client
  is away waits for it;
- every reason code is checked (CONNACK, SUBACK, PUBACK); bad credentials ("Bad user name or
  password", "Not authorized") stop at once (:class:`~edge.errors.BrokerAuthError`, exit 3);
  an unreachable broker is retried with exponential backoff and jitter, then
  :class:`~edge.errors.BrokerError` (exit 3);
- incoming messages are acknowledged only when the handler says it took them (``manual_ack``):
  a message meant for another part of the same identity (a receipt the sync worker reads) stays
  unacknowledged in the session and the broker delivers it again on the next connection.

Nothing in it is Mosquitto-specific.
"""

from __future__ import annotations

import logging
import os
import random
import ssl
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

from edge.config import MqttConfig
from edge.errors import BrokerAuthError, BrokerError, UsageError

logger = logging.getLogger(__name__)

#: CONNACK reason codes that retrying cannot fix: bad credentials, not authorized, banned
AUTH_CODES = frozenset({134, 135, 138, 140})
#: seconds: first retry gap, the longest one, a CONNACK / SUBACK / PUBACK wait
BACKOFF_FIRST, BACKOFF_MAX, REPLY_TIMEOUT = 0.5, 30.0, 15.0

#: (topic, payload, user properties) -> True when the message was taken (acknowledge it)
T = TypeVar("T")

Handler = Callable[[str, bytes, dict[str, str]], bool]


@dataclass(frozen=True)
class Credentials:
    username: str | None = None
    password: str | None = None
    ca: str | None = None


def credentials_from(config: MqttConfig | None = None, env: Mapping[str, str] | None = None) -> Credentials:
    """This machine's broker credentials: the environment variables, else the config's ``[mqtt]``."""
    e = os.environ if env is None else env
    cfg = config or MqttConfig()
    return Credentials(
        username=e.get("ADAMM_MQTT_USERNAME") or cfg.username,
        password=e.get("ADAMM_MQTT_PASSWORD") or cfg.password,
        ca=e.get("ADAMM_MQTT_CA") or cfg.ca,
    )


def parse_broker_url(url: str) -> tuple[str, int, bool]:
    """``mqtt://host:port`` / ``mqtts://host:port`` as (host, port, tls); a usage error else."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("mqtt", "mqtts") or not parts.hostname:
        raise UsageError(f"--broker {url!r}: expected mqtt://HOST:PORT or mqtts://HOST:PORT")
    if parts.username or parts.password:
        raise UsageError(
            "--broker must not carry credentials",
            hint="set ADAMM_MQTT_USERNAME / ADAMM_MQTT_PASSWORD or [mqtt] in the config file",
        )
    try:
        port = parts.port or (8883 if parts.scheme == "mqtts" else 1883)
    except ValueError:
        raise UsageError(f"--broker {url!r}: the port is not a number from 1 to 65535") from None
    return parts.hostname, port, parts.scheme == "mqtts"


def backoff_delays(attempts: int, first: float = BACKOFF_FIRST, cap: float = BACKOFF_MAX) -> list[float]:
    """The gaps between ``attempts`` connection attempts: doubling, capped, with full jitter in
    the upper half (so a fleet coming back does not reconnect in step)."""
    return [min(cap, first * 2**i) * random.uniform(0.5, 1.0) for i in range(max(0, attempts - 1))]


def _code(rc: object) -> int:
    value = getattr(rc, "value", rc)
    return int(value) if isinstance(value, int) else 0


class MqttLink:
    """One MQTT 5 connection of one identity (client id) with a persistent session."""

    def __init__(
        self,
        url: str,
        client_id: str,
        credentials: Credentials,
        *,
        session_expiry_s: int = 7 * 86400,
        connect_attempts: int = 6,
        subscriptions: Sequence[str] = (),
        on_message: Handler | None = None,
    ) -> None:
        self.host, self.port, self.tls = parse_broker_url(url)
        self.url = url
        self.client_id = client_id
        self.credentials = credentials
        self.session_expiry_s = session_expiry_s
        self.connect_attempts = connect_attempts
        self.subscriptions = tuple(subscriptions)
        self.on_message = on_message
        self.session_present = False
        self._connack = threading.Event()
        self._connack_code: int | None = None
        self._subacks: dict[int, list[int]] = {}
        self._pubacks: dict[int, int] = {}
        self._replies = threading.Condition()
        self._client: Any = None

    # -- connection ------------------------------------------------------------------------------

    def _new_client(self) -> Any:
        import paho.mqtt.client as mqtt
        from paho.mqtt.enums import CallbackAPIVersion

        c = mqtt.Client(
            CallbackAPIVersion.VERSION2, client_id=self.client_id, protocol=mqtt.MQTTv5, manual_ack=True
        )
        if self.credentials.username:
            c.username_pw_set(self.credentials.username, self.credentials.password)
        if self.tls:
            ca = self.credentials.ca
            if ca and not os.path.isfile(ca):
                raise BrokerError(
                    f"the CA certificate {ca} does not exist", hint="set ADAMM_MQTT_CA or [mqtt] ca"
                )
            c.tls_set(ca_certs=ca or None, tls_version=ssl.PROTOCOL_TLS_CLIENT)
        c.on_connect = self._on_connect
        c.on_subscribe = self._on_subscribe
        c.on_publish = self._on_publish
        c.on_message = self._on_message
        c.reconnect_delay_set(min_delay=1, max_delay=int(BACKOFF_MAX))
        return c

    def connect(self) -> bool:
        """Connect (retrying with backoff), subscribe; True when the broker kept a session."""
        from paho.mqtt.packettypes import PacketTypes
        from paho.mqtt.properties import Properties

        delays = backoff_delays(self.connect_attempts)
        last = ""
        for attempt in range(self.connect_attempts):
            client = self._new_client()
            props = Properties(PacketTypes.CONNECT)
            props.SessionExpiryInterval = self.session_expiry_s
            self._connack.clear()
            self._connack_code = None
            try:
                client.connect(self.host, self.port, keepalive=30, clean_start=False, properties=props)
                client.loop_start()
            except (OSError, ssl.SSLError) as exc:
                last = f"{type(exc).__name__}: {exc}"
            else:
                if self._connack.wait(REPLY_TIMEOUT) and self._connack_code == 0:
                    self._client = client
                    self._subscribe()
                    return self.session_present
                code = self._connack_code
                self._stop(client)
                if code in AUTH_CODES:
                    raise BrokerAuthError(
                        f"the broker {self.url} refused the credentials of "
                        f"{self.credentials.username or 'an anonymous client'} (reason code {code})",
                        hint="check ADAMM_MQTT_USERNAME / ADAMM_MQTT_PASSWORD (or [mqtt] in the config)",
                    )
                last = f"CONNACK reason code {code}" if code is not None else "no CONNACK"
            if attempt < len(delays):
                logger.warning("broker %s: %s; retrying in %.1f s", self.url, last, delays[attempt])
                time.sleep(delays[attempt])
        raise BrokerError(
            f"the broker {self.url} is unreachable after {self.connect_attempts} attempts ({last})",
            hint="check that the broker runs and the URL, then run the command again",
        )

    def _subscribe(self) -> None:
        if not self.subscriptions:
            return
        from paho.mqtt.subscribeoptions import SubscribeOptions

        client = self._client
        rc, mid = client.subscribe([(t, SubscribeOptions(qos=1)) for t in self.subscriptions])
        codes = self._wait(self._subacks, mid) if rc == 0 else None
        if codes is None or any(c >= 128 for c in codes):
            raise BrokerError(
                f"the broker {self.url} refused the subscription to {', '.join(self.subscriptions)} "
                f"(reason codes {codes})",
                hint="check the user's ACL (adamm-hub broker-setup)",
            )

    def _stop(self, client: Any) -> None:
        try:
            client.loop_stop()
            client.disconnect()
        except Exception:  # closing a half-open connection
            logger.debug("closing the MQTT client", exc_info=True)

    def close(self) -> None:
        """Disconnect cleanly (the session stays on the broker for ``session_expiry_s``)."""
        if self._client is not None:
            client, self._client = self._client, None
            try:
                client.disconnect()
            finally:
                client.loop_stop()

    def __enter__(self) -> MqttLink:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- publishing ------------------------------------------------------------------------------

    def publish(
        self,
        topic: str,
        payload: bytes,
        *,
        expiry_s: int | None = None,
        user_properties: Sequence[tuple[str, str]] = (),
    ) -> None:
        """Publish QoS 1 and wait for the broker's PUBACK (a failure reason code raises
        :class:`~edge.errors.BrokerError`); ``expiry_s``: the MQTT 5 Message Expiry Interval."""
        from paho.mqtt.packettypes import PacketTypes
        from paho.mqtt.properties import Properties

        if self._client is None:
            raise BrokerError(f"not connected to {self.url}")
        props = Properties(PacketTypes.PUBLISH)
        if expiry_s is not None:
            props.MessageExpiryInterval = max(1, int(expiry_s))
        if user_properties:
            props.UserProperty = list(user_properties)
        info = self._client.publish(topic, payload, qos=1, properties=props)
        code = self._wait(self._pubacks, info.mid)
        if code is None:
            raise BrokerError(f"the broker {self.url} did not acknowledge the publish to {topic}")
        if code >= 128:
            raise BrokerError(
                f"the broker {self.url} refused the publish to {topic} (reason code {code})",
                hint="check the user's ACL (adamm-hub broker-setup)",
            )

    def _wait(self, replies: dict[int, T], mid: int) -> T | None:
        deadline = time.monotonic() + REPLY_TIMEOUT
        with self._replies:
            while mid not in replies:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._replies.wait(left)
            return replies.pop(mid)

    # -- paho callbacks (its network thread) -----------------------------------------------------

    def _on_connect(self, client: Any, _u: object, flags: object, reason: object, _p: object) -> None:
        self._connack_code = _code(reason)
        self.session_present = bool(getattr(flags, "session_present", False))
        self._connack.set()
        if self._client is not None and self._connack_code == 0 and self.subscriptions:
            # paho reconnected by itself (same client id, clean_start=False): a broker that lost
            # the session (restarted without persistence) needs the subscriptions again
            from paho.mqtt.subscribeoptions import SubscribeOptions

            logger.info("reconnected to %s (session kept: %s)", self.url, self.session_present)
            if not self.session_present:
                client.subscribe([(t, SubscribeOptions(qos=1)) for t in self.subscriptions])

    def _on_subscribe(self, _c: object, _u: object, mid: int, codes: Any, _p: object) -> None:
        with self._replies:
            self._subacks[mid] = [_code(x) for x in codes]
            self._replies.notify_all()

    def _on_publish(self, _c: object, _u: object, mid: int, reason: object, _p: object) -> None:
        with self._replies:
            self._pubacks[mid] = _code(reason)
            self._replies.notify_all()

    def _on_message(self, client: Any, _u: object, msg: Any) -> None:
        props = getattr(msg, "properties", None)
        user = dict(getattr(props, "UserProperty", None) or [])
        taken = False
        try:
            if self.on_message is not None:
                taken = self.on_message(msg.topic, msg.payload, user)
        except Exception:
            logger.exception("handling a message on %s", getattr(msg, "topic", "?"))
        if taken:
            client.ack(msg.mid, msg.qos)
