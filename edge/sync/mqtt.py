"""The MQTT client shared by the edge (``adamm sync``, the daemon's sync worker), the hub and staff
devices: a small wrapper over paho-mqtt 2.x (``CallbackAPIVersion.VERSION2``), MQTT 5 where the
broker speaks it, MQTT 3.1.1 otherwise (CONTRACT.md section 5).

Imports only paho, ssl, :mod:`edge.config`, :mod:`edge.errors` and :mod:`edge.sync.messages`
(the hub imports it; nothing here knows a store's insides). Nothing is Mosquitto-specific.

API:

- :func:`parse_broker_url` ``mqtt://host:port`` / ``mqtts://host:port`` -> :class:`BrokerAddress`
  (a bad URL is a :class:`~edge.errors.UsageError`, exit 2).
- :func:`credentials` the user name, password and CA file of this machine: ``ADAMM_MQTT_USERNAME``
  / ``ADAMM_MQTT_PASSWORD`` / ``ADAMM_MQTT_CA`` where set (they win), else the config's ``[mqtt]``
  (:class:`~edge.config.MqttConfig`); never from the command line. The one place edge, hub and
  staff devices resolve them; :func:`link_settings` builds a :class:`LinkSettings` from a URL and
  ``[mqtt]``.
- :class:`Link` one MQTT connection: persistent session (``clean_start=False``, Session Expiry
  Interval), optional last will, TLS for ``mqtts``, reconnect with exponential backoff and
  jitter (:class:`Backoff`), subscriptions renewed on every connect, every reason code checked
  (CONNACK, SUBACK, PUBACK). Bad credentials ("Bad user name or password", "Not authorized")
  stop it at once with :class:`~edge.errors.BrokerAuthError`. Callbacks run on paho's network
  thread: keep them short (put what arrives on a queue). :meth:`Link.publish` queues a message
  (the PUBACK comes to ``on_puback``); :meth:`Link.publish_wait` waits for its PUBACK and raises
  :class:`~edge.errors.BrokerError` on a failure reason code; both take an MQTT 5 Message Expiry
  Interval (``expiry_s``) and user properties (neither is sent over 3.1.1). With ``manual_ack=True`` a received message is
  acknowledged when ``on_message`` returns True, or later with :meth:`Link.ack` (after the
  receiver committed it); one never acknowledged is delivered again on the next connection.
- **MQTT 3.1.1 fallback** (``[mqtt] protocol = "auto"``, the default): a Link connects with MQTT 5;
  when the broker answers that it does not speak it (a 3.1.1 broker's CONNACK return code 1, which
  paho reports to an MQTT 5 client as reason code 132 "Unsupported protocol version"), the Link
  rebuilds its paho client for MQTT 3.1.1 (``clean_session=False``; the same will, credentials,
  TLS, callbacks and in-flight window), logs once at WARNING what that loses, and speaks 3.1.1
  from then on (:attr:`Link.protocol`). A broker that accepts the TCP connection but stays silent
  to an MQTT 5 CONNECT (a 3.1.1-only broker that ignores it, such as amqtt) gets the same fallback
  once :attr:`LinkSettings.silent_fallback_s` pass without a CONNACK, as long as this link has
  never connected over MQTT 5 (a broker that spoke 5 once and is slow now is not downgraded). What each MQTT 5 feature becomes: the Session Expiry
  Interval -> the broker's own limit for persistent sessions (Mosquitto's
  ``persistent_client_expiration``); the Message Expiry Interval and user properties are not sent
  (the payloads carry what receivers need: an action's ``params.expires_at``, receipts by
  ``msg_id``); CONNACK return codes 4/5 are paho's reason codes 134/135 ("Bad user name or
  password", "Not authorized": still :class:`~edge.errors.BrokerAuthError`); a SUBACK 0x80 is a
  failure as before; a 3.1.1 PUBACK carries no reason code (always success); shared
  subscriptions (``$share/...``) are sent as they are (Mosquitto takes them from 3.1.1 clients
  too). ``"5"`` or ``"3.1.1"`` speaks only that version; a broker that does not speak it stops the
  Link at once with :class:`~edge.errors.BrokerProtocolError` (exit 3).
- :func:`connect` builds a :class:`Link`, starts it and waits for the first CONNACK (raises
  :class:`~edge.errors.BrokerUnreachable` after ``timeout`` seconds or ``attempts`` failed
  attempts).
"""

from __future__ import annotations

import collections
import logging
import os
import random
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion, MQTTErrorCode, MQTTProtocolVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode
from paho.mqtt.subscribeoptions import SubscribeOptions

from edge.config import MqttConfig
from edge.errors import (
    AdammError,
    BrokerAuthError,
    BrokerError,
    BrokerProtocolError,
    BrokerSessionTakenOver,
    BrokerUnreachable,
    UsageError,
)

logger = logging.getLogger(__name__)

#: default Session Expiry Interval: the broker keeps the session (subscriptions, queued QoS 1
#: receipts) this long while the client is away; at least the outage budget
DEFAULT_SESSION_EXPIRY_S = 7 * 24 * 3600
DEFAULT_KEEPALIVE_S = 30
#: CONNACK reason codes that retrying cannot fix: bad user name or password, not authorized,
#: banned, bad authentication method
_AUTH_FAILURES = {134, 135, 138, 140}
#: CONNACK reason code "Unsupported protocol version" (paho's name for a 3.1.1 broker's return code 1)
_UNSUPPORTED_PROTOCOL = 132
#: DISCONNECT reason codes (MQTT 5) the client acts on: not authorized, session taken over, packet
#: too large
_NOT_AUTHORIZED = 135
_SESSION_TAKEN_OVER = 142
_PACKET_TOO_LARGE = 149
#: ``[mqtt] protocol`` values: try 5 then fall back to 3.1.1, or only one version
PROTOCOLS = ("auto", "5", "3.1.1")
#: what a connection that fell back to MQTT 3.1.1 does without (the one WARNING says it)
LOST_UNDER_311 = (
    "the Session Expiry Interval (the broker keeps the session for its own limit, Mosquitto's "
    "persistent_client_expiration), the Message Expiry Interval (staff devices drop an expired action "
    "by its params.expires_at) and user properties (the hub's receipts name msg_ids)"
)
#: seconds a :meth:`Link.publish_wait` waits for its PUBACK
PUBACK_TIMEOUT_S = 15.0
#: seconds without a CONNACK to an MQTT 5 CONNECT before ``protocol = "auto"`` tries MQTT 3.1.1
SILENT_FALLBACK_S = 5.0
#: what an "unreachable" error says about ``[mqtt] protocol``
PROTOCOL_HINT = (
    'a broker that ignores one MQTT version needs [mqtt] protocol = "3.1.1" (or "5"); "auto" tries 5, '
    "then 3.1.1"
)
_ENV_USER, _ENV_PASSWORD, _ENV_CA = "ADAMM_MQTT_USERNAME", "ADAMM_MQTT_PASSWORD", "ADAMM_MQTT_CA"


@dataclass(frozen=True)
class BrokerAddress:
    host: str
    port: int
    tls: bool

    @property
    def url(self) -> str:
        return f"{'mqtts' if self.tls else 'mqtt'}://{self.host}:{self.port}"


def parse_broker_url(url: str) -> BrokerAddress:
    """``mqtt://host:port`` (plain) or ``mqtts://host:port`` (TLS); the port defaults to 1883 /
    8883. Anything else (another scheme, user info, a path, a bad port) is a UsageError."""
    text = (url or "").strip()
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        raise UsageError(
            f"--broker {url!r}: the port is not a number from 1 to 65535", hint="e.g. mqtt://hub:1883"
        ) from None
    if parts.scheme not in ("mqtt", "mqtts") or not parts.hostname:
        raise UsageError(
            f"--broker {url!r} is not an MQTT URL", hint="use mqtt://HOST:PORT or mqtts://HOST:PORT (TLS)"
        )
    if parts.username is not None or parts.password is not None:
        raise UsageError(
            f"--broker {url!r} carries credentials",
            hint="put them in the config file's [mqtt] section or ADAMM_MQTT_USERNAME / ADAMM_MQTT_PASSWORD",
        )
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise UsageError(f"--broker {url!r}: an MQTT URL has no path or query", hint="mqtt://HOST:PORT")
    tls = parts.scheme == "mqtts"
    return BrokerAddress(parts.hostname, port or (8883 if tls else 1883), tls)


@dataclass(frozen=True)
class Credentials:
    username: str | None = None
    password: str | None = None
    ca_file: str | None = None

    def __repr__(self) -> str:  # never log a password
        return f"Credentials(username={self.username!r}, password={'***' if self.password else None}, ca_file={self.ca_file!r})"


def credentials(config: MqttConfig | None = None, env: Mapping[str, str] | None = None) -> Credentials:
    """This machine's broker credentials: ``ADAMM_MQTT_USERNAME`` / ``ADAMM_MQTT_PASSWORD`` /
    ``ADAMM_MQTT_CA`` where set (the ``credentials/NAME.env`` files that ``adamm-hub
    broker-setup`` writes set exactly these), else the config's ``[mqtt]`` values."""
    e = os.environ if env is None else env
    cfg = config or MqttConfig()
    return Credentials(
        e.get(_ENV_USER) or cfg.username or None,
        e.get(_ENV_PASSWORD) or cfg.password or None,
        e.get(_ENV_CA) or cfg.ca or None,
    )


def tls_context(creds: Credentials) -> ssl.SSLContext:
    """The TLS context of an ``mqtts://`` connection: the CA file when given, else the system's
    CAs; the broker's host name is checked. A CA file that cannot be read is a BrokerError (exit 3)."""
    try:
        if creds.ca_file:
            return ssl.create_default_context(cafile=creds.ca_file)
        return ssl.create_default_context()
    except (OSError, ssl.SSLError) as exc:
        raise BrokerError(
            f"cannot read the CA certificate {creds.ca_file}: {exc}",
            hint="point [mqtt] ca or ADAMM_MQTT_CA at the broker's CA file (PEM)",
        ) from None


class Backoff:
    """Exponential backoff with jitter: the n-th wait is uniform in
    ``[initial / 2, min(maximum, initial * 2**n)]`` (so a fleet of stores reconnecting after a
    broker restart spreads out); :meth:`reset` after a successful connect."""

    def __init__(self, initial_s: float = 0.5, maximum_s: float = 30.0, rng: random.Random | None = None):
        self.initial_s = max(0.01, float(initial_s))
        self.maximum_s = max(self.initial_s, float(maximum_s))
        self._n = 0
        self._rng = rng or random.Random()

    def next(self) -> float:
        cap = min(self.maximum_s, self.initial_s * (2 ** min(self._n, 30)))
        self._n += 1
        return self._rng.uniform(self.initial_s / 2, cap) if cap > self.initial_s / 2 else cap

    def reset(self) -> None:
        self._n = 0


@dataclass(frozen=True)
class LinkSettings:
    """How to reach the broker: address, credentials, session expiry, keepalive, backoff."""

    address: BrokerAddress
    credentials: Credentials = Credentials()
    session_expiry_s: int = DEFAULT_SESSION_EXPIRY_S
    keepalive_s: int = DEFAULT_KEEPALIVE_S
    backoff_initial_s: float = 0.5
    backoff_max_s: float = 30.0
    #: QoS 1 messages in flight (sent, PUBACK not yet received)
    max_inflight: int = 100
    #: failed connection attempts before :func:`connect` gives up (None: only its timeout)
    connect_attempts: int | None = None
    #: ``[mqtt] protocol``: "auto" (MQTT 5, falling back to 3.1.1), "5" or "3.1.1" (:data:`PROTOCOLS`)
    protocol: str = "auto"
    #: "auto": seconds a broker may stay silent to an MQTT 5 CONNECT before 3.1.1 is tried
    silent_fallback_s: float = SILENT_FALLBACK_S

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOLS:
            raise UsageError(
                f"MQTT protocol {self.protocol!r} is not one of {', '.join(PROTOCOLS)}",
                hint='set [mqtt] protocol = "auto", "5" or "3.1.1"',
            )


def link_settings(
    url: str | BrokerAddress,
    config: MqttConfig | None = None,
    *,
    max_inflight: int = 100,
    env: Mapping[str, str] | None = None,
) -> LinkSettings:
    """The settings of a connection to ``url`` from the config's ``[mqtt]`` section (credentials
    through :func:`credentials`)."""
    cfg = config or MqttConfig()
    return LinkSettings(
        address=url if isinstance(url, BrokerAddress) else parse_broker_url(url),
        credentials=credentials(cfg, env),
        session_expiry_s=cfg.session_expiry_s,
        keepalive_s=cfg.keepalive_s,
        backoff_initial_s=cfg.backoff_initial_s,
        backoff_max_s=cfg.backoff_max_s,
        max_inflight=max_inflight,
        connect_attempts=cfg.connect_attempts,
        protocol=cfg.protocol,
    )


@dataclass(frozen=True)
class Message:
    """A received message: ``generation`` counts the connections of its :class:`Link` (an ack
    for a message of an earlier connection is not sent: the broker delivers it again)."""

    topic: str
    payload: bytes
    properties: Any
    mid: int
    qos: int
    generation: int

    @property
    def user_properties(self) -> dict[str, str]:
        return dict(getattr(self.properties, "UserProperty", None) or [])


@dataclass(frozen=True)
class Will:
    """A last will: ``payload()`` is called before every connect attempt (so an ``at`` is fresh)."""

    topic: str
    payload: Callable[[], bytes]
    qos: int = 1
    retain: bool = True


def _utf8(text: str) -> bytes:
    raw = text.encode("utf-8")
    if len(raw) > 0xFFFF:
        raise BrokerError(f"an MQTT property is longer than 65,535 bytes ({len(raw):,})")
    return len(raw).to_bytes(2, "big") + raw


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        digit, n = n % 128, n // 128
        out.append(digit | (0x80 if n else 0))
        if not n:
            return bytes(out)


class PackedPublishProperties(Properties):
    """PUBLISH properties (Message Expiry Interval, user properties) packed once, in paho's
    order. paho only calls :meth:`pack` on them (when it sends the message, and again when it
    re-sends it after a reconnect); building them through paho's validating ``__setattr__`` and
    packing them there cost ~30 us a message, a fifth of the outbox drain's CPU. The attributes are
    set too (``str()`` in paho's debug log shows them)."""

    def __init__(self, user_properties: Mapping[str, str] | None = None, expiry_s: int | None = None):
        vars(self).update(vars(_PUBLISH_TEMPLATE))  # packetType, names, types, properties
        body = b""
        if expiry_s is not None:
            expiry = max(1, min(0xFFFFFFFF, int(expiry_s)))
            object.__setattr__(self, "MessageExpiryInterval", expiry)
            body += b"\x02" + expiry.to_bytes(4, "big")
        if user_properties:
            pairs = [(str(k), str(v)) for k, v in user_properties.items()]
            object.__setattr__(self, "UserProperty", pairs)
            body += b"".join(b"\x26" + _utf8(k) + _utf8(v) for k, v in pairs)
        object.__setattr__(self, "_adamm_packed", _varint(len(body)) + body)

    def pack(self) -> bytes:
        packed: bytes = vars(self)["_adamm_packed"]
        return packed


_PUBLISH_TEMPLATE = Properties(PacketTypes.PUBLISH)


class _Client(paho.Client):
    """paho's client with our backoff (with jitter) between reconnect attempts."""

    adamm_backoff: Backoff
    adamm_stop: threading.Event

    def _reconnect_wait(self) -> None:  # paho's hook between attempts (loop_forever)
        self.adamm_stop.wait(self.adamm_backoff.next())


class Link:
    """One MQTT connection (5, or 3.1.1 after the fallback) with a persistent session (see the
    module docstring).

    ``on_message(message) -> bool | None``, ``on_connected(session_present)`` and
    ``on_puback(mid, ok, reason)`` run on the network thread. With ``manual_ack`` a message is
    acknowledged when ``on_message`` returns True, else only by :meth:`ack`. A handler that
    raises an :class:`~edge.errors.AdammError` (the receiver's database failed) stops the link
    with it as :attr:`fatal`, the message unacknowledged."""

    def __init__(
        self,
        settings: LinkSettings,
        client_id: str,
        *,
        will: Will | None = None,
        subscriptions: Iterable[tuple[str, int]] = (),
        on_message: Callable[[Message], bool | None] | None = None,
        on_connected: Callable[[bool], None] | None = None,
        on_puback: Callable[[int, bool, str], None] | None = None,
        manual_ack: bool = False,
        credentials_label: str | None = None,
    ) -> None:
        self.settings = settings
        self.client_id = client_id
        self.will = will
        self.subscriptions = list(subscriptions)
        self._on_message = on_message
        self._on_connected = on_connected
        self._on_puback = on_puback
        self.connected = threading.Event()
        self.fatal: AdammError | None = None
        self.last_error: str | None = None
        self.manual_ack = manual_ack
        user = settings.credentials.username
        #: how errors name the credentials ("the credentials of sh_01")
        self.credentials_label = credentials_label or (
            f"the credentials of {user}" if user else "an anonymous client"
        )
        self._subscribed = threading.Event()  # every subscription of this connection SUBACKed
        #: connections made so far (see :class:`Message`)
        self.generation = 0
        #: failed connection attempts since the last successful one
        self.failed_attempts = 0
        #: failed PUBACKs by mid, recent ones (read by :meth:`publish_wait`; absent: success)
        self._pubacks: collections.OrderedDict[int, tuple[bool, str]] = collections.OrderedDict()
        self._pubacks_lock = threading.Lock()
        self._stop = threading.Event()
        self._settled = threading.Event()  # first CONNACK seen, or a fatal error
        self._sub_mids: dict[int, list[str]] = {}
        self._started = False
        #: the version spoken now: "5", or "3.1.1" (forced, or after the fallback)
        self._protocol = "3.1.1" if settings.protocol == "3.1.1" else "5"
        #: guards swapping the paho client (the fallback) against :meth:`close`
        self._client_lock = threading.Lock()
        self._retired: list[_Client] = []  # clients replaced by the fallback (their threads end)
        #: CONNECTs the broker took (TCP) but never answered, by protocol ("5", "3.1.1")
        self.silent: dict[str, int] = {}
        self._sockets = 0  # TCP connections opened (each one's CONNECT is watched)
        self._client = self._build_client()

    @property
    def protocol(self) -> str:
        """The MQTT version this link speaks (or tries first): ``"5"`` or ``"3.1.1"``."""
        return self._protocol

    def _build_client(self) -> _Client:
        """A paho client for the version spoken now (:attr:`protocol`) with this link's credentials, TLS, window and callbacks."""
        # MQTT 5's session is asked for at connect (clean_start=False, Session Expiry Interval);
        # 3.1.1's persistent session is clean_session=False, kept until the broker's own expiry
        version: dict[str, Any] = (
            {"protocol": MQTTProtocolVersion.MQTTv5}
            if self._protocol == "5"
            else {"protocol": MQTTProtocolVersion.MQTTv311, "clean_session": False}
        )
        c = _Client(
            CallbackAPIVersion.VERSION2,
            client_id=self.client_id,
            reconnect_on_failure=True,
            manual_ack=self.manual_ack,
            **version,
        )
        settings = self.settings
        c.adamm_backoff = Backoff(settings.backoff_initial_s, settings.backoff_max_s)
        c.adamm_stop = self._stop
        c.max_inflight_messages_set(max(1, settings.max_inflight))
        c.max_queued_messages_set(0)
        creds = settings.credentials
        if creds.username is not None:
            c.username_pw_set(creds.username, creds.password)
        if settings.address.tls:
            c.tls_set_context(tls_context(creds))
        c.on_connect = self._handle_connect
        c.on_socket_open = self._handle_socket_open
        c.on_connect_fail = self._handle_connect_fail
        c.on_disconnect = self._handle_disconnect
        c.on_subscribe = self._handle_subscribe
        c.on_publish = self._handle_publish
        c.on_message = self._handle_message
        return c

    def _launch(self) -> None:
        """Arm the will, connect the client in the background (the version spoken now), start its
        network thread."""
        c = self._client
        self._arm_will(c)
        a = self.settings.address
        if self._protocol == "5":
            props = Properties(PacketTypes.CONNECT)
            props.SessionExpiryInterval = int(self.settings.session_expiry_s)
            c.connect_async(
                a.host, a.port, keepalive=self.settings.keepalive_s, clean_start=False, properties=props
            )
        else:
            c.connect_async(a.host, a.port, keepalive=self.settings.keepalive_s)
        c.loop_start()

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> Link:
        """Connect in the background (retrying with backoff until :meth:`close`)."""
        self._launch()
        self._started = True
        return self

    def wait_connected(self, timeout: float, attempts: int | None = None) -> bool:
        """True once connected; False after ``timeout`` seconds or ``attempts`` failed attempts;
        raises the fatal error (bad credentials) if there is one."""
        deadline = time.monotonic() + max(0.0, timeout)
        while True:
            if self.fatal is not None:
                raise self.fatal
            if self.connected.is_set():
                return True
            left = deadline - time.monotonic()
            if left <= 0 or (attempts is not None and self.failed_attempts >= attempts):
                return False
            self._settled.wait(min(left, 0.1))

    def wait_subscribed(self, timeout: float) -> bool:
        """True once the broker granted every subscription of the current connection; raises the
        fatal error (a refused subscription) if there is one."""
        deadline = time.monotonic() + max(0.0, timeout)
        while True:
            if self.fatal is not None:
                raise self.fatal
            if self._subscribed.is_set():
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self._subscribed.wait(min(left, 0.1))

    def unreachable(self, waited_s: float) -> BrokerUnreachable:
        """The error to raise after waiting ``waited_s`` for a connection in vain."""
        why = f": {self.last_error}" if self.last_error else ""
        attempts = self.settings.connect_attempts
        after = (
            f"{self.failed_attempts} attempts ({waited_s:.0f} s)"
            if attempts is not None and self.failed_attempts >= attempts
            else f"{waited_s:.0f} s"
        )
        if self.silent:  # something took the connection but answered no CONNECT
            versions = " nor ".join(f"MQTT {v}" for v in sorted(self.silent, reverse=True))
            return BrokerUnreachable(
                f"broker {self.settings.address.url} unreachable after {after}: it accepted the connection "
                f'but answered no {versions} CONNECT ([mqtt] protocol = "{self.settings.protocol}")',
                hint=f"check that the URL is an MQTT broker's port and its TLS setting; {PROTOCOL_HINT}; "
                "nothing was lost, what is pending stays in the outbox",
            )
        return BrokerUnreachable(
            f"broker {self.settings.address.url} unreachable after {after}{why}",
            hint="check that the broker runs and the URL, port and TLS setting are right "
            f'([mqtt] protocol = "{self.settings.protocol}"; {PROTOCOL_HINT}); nothing was lost, '
            "what is pending stays in the outbox",
        )

    def close(self, final: tuple[str, bytes, bool] | None = None, timeout: float = 5.0) -> None:
        """Stop: publish ``final`` = (topic, payload, retain) at QoS 1 first when connected (the
        offline status; a clean disconnect does not fire the will), then disconnect."""
        if not self._started:
            return
        if final is not None and self.connected.is_set():
            try:
                info = self._client.publish(final[0], final[1], qos=1, retain=final[2])
                info.wait_for_publish(timeout)
            except (RuntimeError, ValueError, OSError) as exc:
                logger.debug("final message not published: %s", exc)
        with self._client_lock:  # no fallback starts a new client after this
            self._stop.set()
            c = self._client
            retired, self._retired = self._retired, []
        try:
            c.disconnect()
        except OSError:
            pass
        c.loop_stop()
        for old in retired:  # their network threads end on their own; wait for them
            old.loop_stop()
        self.connected.clear()
        self._started = False

    # -- messages ------------------------------------------------------------------------------

    def publish(
        self,
        topic: str,
        payload: bytes,
        qos: int = 1,
        retain: bool = False,
        user_properties: Mapping[str, str] | None = None,
        expiry_s: int | None = None,
    ) -> int | None:
        """Queue a message; returns its mid (PUBACK comes to ``on_puback``), None when not connected
        (the caller keeps it and sends it again after the reconnect). ``expiry_s``: the MQTT 5
        Message Expiry Interval (the broker drops the message once it passes); over MQTT 3.1.1
        neither it nor ``user_properties`` is sent (the payload must carry what the receiver needs)."""
        info = self._publish(topic, payload, qos, retain, user_properties, expiry_s)
        return None if info is None else int(info.mid)

    def publish_wait(
        self,
        topic: str,
        payload: bytes,
        *,
        qos: int = 1,
        retain: bool = False,
        user_properties: Mapping[str, str] | None = None,
        expiry_s: int | None = None,
        timeout: float = PUBACK_TIMEOUT_S,
    ) -> int:
        """Publish and wait for the broker's PUBACK; returns the mid. A
        :class:`~edge.errors.BrokerError` when not connected within ``timeout``, when no PUBACK
        comes within ``timeout`` or when its reason code is a failure."""
        if not self.connected.is_set():
            self.connected.wait(timeout)
        info = self._publish(topic, payload, qos, retain, user_properties, expiry_s)
        if info is None:
            raise BrokerError(f"not connected to {self.settings.address.url}: {topic} not published")
        if qos == 0:
            return int(info.mid)
        try:
            info.wait_for_publish(timeout)
            done = info.is_published()
        except (RuntimeError, ValueError) as exc:
            raise BrokerError(f"publishing to {topic} failed: {exc}") from None
        if not done:
            raise BrokerError(
                f"the broker {self.settings.address.url} did not acknowledge the publish to {topic}"
            )
        with self._pubacks_lock:
            ok, reason = self._pubacks.pop(int(info.mid), (True, "Success"))
        if not ok:
            raise BrokerError(
                f"the broker {self.settings.address.url} refused the publish to {topic}: {reason}",
                hint="check the broker's ACL for this user (adamm-hub broker-setup)",
            )
        return int(info.mid)

    def _publish(
        self,
        topic: str,
        payload: bytes,
        qos: int,
        retain: bool,
        user_properties: Mapping[str, str] | None,
        expiry_s: int | None,
    ) -> paho.MQTTMessageInfo | None:
        if not self.connected.is_set():
            return None
        props = None
        if self._protocol == "5" and (user_properties or expiry_s is not None):
            props = PackedPublishProperties(user_properties, expiry_s)
        info = self._client.publish(topic, payload, qos=qos, retain=retain, properties=props)  # 3.1.1: none
        if info.rc not in (MQTTErrorCode.MQTT_ERR_SUCCESS, MQTTErrorCode.MQTT_ERR_QUEUE_SIZE):
            if info.rc == MQTTErrorCode.MQTT_ERR_NO_CONN:
                return None
            raise BrokerError(f"publishing to {topic} failed: {paho.error_string(info.rc)}")
        return info

    def ack(self, message: Message) -> None:
        """Acknowledge a received message (``manual_ack``): call once it is committed. A message of
        an earlier connection is not acknowledged (the broker delivers it again, with the same
        content: the receiver is idempotent)."""
        if not self.manual_ack or message.qos == 0:
            return
        if message.generation != self.generation or not self.connected.is_set():
            return
        self._client.ack(message.mid, message.qos)

    # -- paho callbacks (network thread) -------------------------------------------------------------

    def _arm_will(self, client: _Client) -> None:
        if self.will is not None:
            client.will_set(self.will.topic, self.will.payload(), qos=self.will.qos, retain=self.will.retain)

    def _fall_back(self, old: _Client) -> None:
        """The broker does not speak MQTT 5: go on with a new paho client for MQTT 3.1.1 (on the
        old client's network thread, which ends once this callback returns)."""
        logger.warning(
            "the broker %s does not speak MQTT 5: client %s uses MQTT 3.1.1 from now on, without %s",
            self.settings.address.url,
            self.client_id,
            LOST_UNDER_311,
        )
        for name in (
            "on_connect",
            "on_connect_fail",
            "on_disconnect",
            "on_subscribe",
            "on_publish",
            "on_message",
        ):
            setattr(old, name, None)  # nothing more from the old client reaches this link
        old.disconnect()  # its loop stops after this CONNACK instead of reconnecting
        with self._client_lock:
            if self._stop.is_set():  # closed meanwhile: nothing to start
                return
            self._protocol = "3.1.1"
            self._retired.append(old)
            self._client = self._build_client()
            self._launch()

    def _handle_connect(self, client: Any, userdata: Any, flags: Any, rc: ReasonCode, props: Any) -> None:
        if rc.is_failure:
            self.last_error = f"the broker refused the connection: {rc}"
            if (
                rc.value == _UNSUPPORTED_PROTOCOL
                and self._protocol == "5"
                and self.settings.protocol == "auto"
            ):
                self._fall_back(client)
                return
            if rc.value == _UNSUPPORTED_PROTOCOL:
                forced = self.settings.protocol != "auto"
                wanted = f"MQTT {self._protocol}" if forced else "MQTT 5 nor MQTT 3.1.1"
                self.fatal = BrokerProtocolError(
                    f"the broker {self.settings.address.url} does not speak {wanted} "
                    f'([mqtt] protocol = "{self.settings.protocol}"; client {self.client_id}: {rc})',
                    hint='set [mqtt] protocol = "auto" (MQTT 5, else 3.1.1)'
                    if forced
                    else "use an MQTT 5 or 3.1.1 broker",
                )
                self._stop.set()
                client.disconnect()
                self._settled.set()
                return
            if rc.value in _AUTH_FAILURES:
                self.fatal = BrokerAuthError(
                    f"the broker {self.settings.address.url} refused {self.credentials_label} "
                    f"(client {self.client_id}: {rc})",
                    hint="check ADAMM_MQTT_USERNAME / ADAMM_MQTT_PASSWORD or the user name and password "
                    "in the config file's [mqtt] section",
                )
                self._stop.set()
                client.disconnect()
            else:
                self.failed_attempts += 1
                logger.warning("%s; retrying", self.last_error)
            self._settled.set()
            return
        client.adamm_backoff.reset()
        self.last_error = None
        self.failed_attempts = 0
        self.generation += 1
        self._subscribed.clear()
        self._sub_mids.clear()
        if not self.subscriptions:
            self._subscribed.set()
        if self.subscriptions:  # one SUBSCRIBE for all of them, one SUBACK
            if self._protocol == "5":
                res, mid = client.subscribe([(t, SubscribeOptions(qos=q)) for t, q in self.subscriptions])
            else:  # 3.1.1 has no subscription options, only the QoS
                res, mid = client.subscribe(list(self.subscriptions))
            if res == MQTTErrorCode.MQTT_ERR_SUCCESS and mid is not None:
                self._sub_mids[int(mid)] = [t for t, _ in self.subscriptions]
            else:
                logger.warning("subscribing to %s not sent (%s)", self.subscriptions, paho.error_string(res))
        logger.info(
            "connected to %s as %s over MQTT %s (session %s)",
            self.settings.address.url,
            self.client_id,
            self._protocol,
            "resumed" if getattr(flags, "session_present", False) else "new",
        )
        self.connected.set()
        self._settled.set()
        if self._on_connected is not None:
            self._on_connected(bool(getattr(flags, "session_present", False)))

    def _handle_socket_open(self, client: Any, userdata: Any, sock: Any) -> None:
        """The TCP (TLS) connection is up and the CONNECT goes out: watch for a broker that never
        answers it (:meth:`_silent_check`)."""
        self._sockets += 1
        timer = threading.Timer(
            max(0.1, self.settings.silent_fallback_s), self._silent_check, args=(client, self._sockets)
        )
        timer.daemon = True
        timer.start()

    def _silent_check(self, client: _Client, socket_no: int) -> None:
        """No CONNACK came for ``client``'s CONNECT within the wait: count it; with ``protocol =
        "auto"`` and no MQTT 5 connection ever made, go on over MQTT 3.1.1 (a timer thread)."""
        if self._stop.is_set() or client is not self._client or self._sockets != socket_no:
            return  # closed, fallen back already, or another attempt's socket since
        if self.connected.is_set():
            return
        version = self._protocol
        self.silent[version] = self.silent.get(version, 0) + 1
        self.last_error = (
            f"the broker accepted the connection but did not answer an MQTT {version} CONNECT "
            f"within {self.settings.silent_fallback_s:g} s"
        )
        if version == "5" and self.settings.protocol == "auto" and self.generation == 0:
            logger.warning("%s; trying MQTT 3.1.1", self.last_error)
            self._fall_back(client)
            return
        self.failed_attempts += 1  # paho gives this attempt up after the keepalive and retries
        logger.warning("%s; still waiting", self.last_error)

    def _handle_connect_fail(self, client: Any, userdata: Any) -> None:
        self.last_error = f"cannot connect to {self.settings.address.url}"
        self.failed_attempts += 1
        logger.info("%s; retrying", self.last_error)
        self._arm_will(client)

    def _handle_disconnect(self, client: Any, userdata: Any, flags: Any, rc: ReasonCode, props: Any) -> None:
        was = self.connected.is_set()
        self.connected.clear()
        self._arm_will(client)
        code = getattr(rc, "value", None)
        if code in (_SESSION_TAKEN_OVER, _NOT_AUTHORIZED) and not self._stop.is_set():
            if code == _SESSION_TAKEN_OVER:
                self.fatal = BrokerSessionTakenOver(
                    f"the broker {self.settings.address.url} disconnected client {self.client_id}: "
                    f"another client connected with the same client id ({rc})",
                    hint="run each adamm-hub serve worker with its own --worker N, and each store's "
                    "sync on one box only; then start this one again",
                )
            else:
                self.fatal = BrokerAuthError(
                    f"the broker {self.settings.address.url} disconnected {self.client_id}: {rc}",
                    hint="check the broker's ACL for this user",
                )
            logger.error("%s", self.fatal)
            self._stop.set()  # no reconnect: it would only take the session back, or be refused
            self._settled.set()
            client.disconnect()
            return
        if code == _PACKET_TOO_LARGE:
            logger.error(
                "the broker %s disconnected %s: a packet was over its max_packet_size (%s)",
                self.settings.address.url,
                self.client_id,
                rc,
            )
        if was and not self._stop.is_set():
            self.last_error = f"connection to {self.settings.address.url} lost ({rc})"
            logger.warning("%s; reconnecting", self.last_error)

    def _handle_subscribe(
        self, client: Any, userdata: Any, mid: int, rcs: list[ReasonCode], props: Any
    ) -> None:
        topics = self._sub_mids.pop(int(mid), ["?"])
        bad = [f"{t}: {rc}" for t, rc in zip(topics, rcs, strict=False) if rc.is_failure]
        if bad:
            self.fatal = BrokerAuthError(
                f"broker {self.settings.address.url} refused the subscription ({'; '.join(bad)})",
                hint="check the broker's ACL for this user (and, for a shared subscription, that the "
                "broker supports $share subscriptions)",
            )
            self._stop.set()
            self._settled.set()
            client.disconnect()
            return
        logger.info("subscribed to %s", ", ".join(topics))
        if not self._sub_mids:
            self._subscribed.set()

    def _handle_publish(self, client: Any, userdata: Any, mid: int, rc: ReasonCode, props: Any) -> None:
        ok = not rc.is_failure
        reason = "Success" if ok else str(rc)
        # recorded before paho marks the message published (publish_wait reads it); only failures
        # are kept (a missing entry is a success), and a success clears what an earlier message of
        # the same (reused) mid left
        if not ok:
            with self._pubacks_lock:
                self._pubacks[int(mid)] = (ok, reason)
                while len(self._pubacks) > 4096:
                    self._pubacks.popitem(last=False)
        elif self._pubacks:
            with self._pubacks_lock:
                self._pubacks.pop(int(mid), None)
        if not ok and rc.value == 135:  # Not authorized: the ACL forbids this topic
            self.fatal = BrokerAuthError(
                f"broker {self.settings.address.url} does not let {self.client_id} publish: {rc}",
                hint="check the broker's ACL for this user",
            )
            self._stop.set()
            self._settled.set()
        if self._on_puback is not None:
            self._on_puback(int(mid), ok, reason)

    def _handle_message(self, client: Any, userdata: Any, msg: paho.MQTTMessage) -> None:
        message = Message(
            msg.topic, bytes(msg.payload), msg.properties, int(msg.mid), int(msg.qos), self.generation
        )
        taken: bool | None = None
        if self._on_message is not None:
            try:
                taken = self._on_message(message)
            except AdammError as exc:  # the receiver cannot store it: stop, unacknowledged
                self.fatal = exc
                self._stop.set()
                self._settled.set()
                client.disconnect()
                return
            except Exception:  # a bad message must not kill the network thread
                logger.exception("handling a message on %s failed", msg.topic)
        if taken and self.manual_ack and message.qos > 0:
            client.ack(message.mid, message.qos)


def connect(settings: LinkSettings, client_id: str, *, timeout: float = 30.0, **kwargs: Any) -> Link:
    """A started :class:`Link`, connected (raises BrokerUnreachable after ``timeout`` s of retries
    or ``settings.connect_attempts`` failed attempts, BrokerAuthError at once on bad credentials)."""
    link = Link(settings, client_id, **kwargs).start()
    started = time.monotonic()
    try:
        if not link.wait_connected(timeout, settings.connect_attempts):
            raise link.unreachable(time.monotonic() - started)
    except BaseException:
        link.close()
        raise
    return link
