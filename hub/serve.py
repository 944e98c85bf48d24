"""``adamm-hub serve``: receive store summaries over MQTT and store them.

Subscribes (QoS 1, persistent session, MQTT 5 or 3.1.1 where the broker speaks only that; client
id ``adamm-hub-{worker}``) to every store's
``summary`` topic (with PostgreSQL through the shared subscription
``$share/adamm-hub/adamm/v1/+/summary``, so several workers split the stream) and ``status``
topic, through the shared client :mod:`edge.sync.mqtt` (``[mqtt]`` of ``--config``). Per message,
in the worker's main thread (the network thread only queues what arrives):
:func:`hub.ingest.ingest` commits it (or parks it), then the receipt is published on
``adamm/v1/{store}/receipt`` (QoS 1; always ``{"stored": [msg_id]}``, ``parked`` or
``kept_newer``, never ``up_to_seq``: it needs no ``seq`` user property, so it works over MQTT
3.1.1), then the message is acknowledged (PUBACK, ``manual_ack``;
a message of an earlier connection is not acknowledged: the broker delivers it again). A worker killed before its commit has not acknowledged: the
broker redelivers the message on the session's next connection; killed after the commit, the
redelivery is recognised by its ``msg_id`` and receipted again. SIGINT/SIGTERM stop it cleanly.

A fault of the hub's own is never the store's (:meth:`Server._store`): a transient database
error (PostgreSQL restarting, a dropped connection or terminated backend, a deadlock, a
serialization failure; :func:`hub.db.is_transient`) is rolled back and retried on a new
connection with backoff while the message waits unacknowledged and unreceipted; any other
exception is logged and the message acknowledged without a receipt (the store sends it again);
only content judged bad is parked. A database error no retry can fix is exit 3. A worker that
starts (or is restarted by its supervisor) while PostgreSQL starts or restarts waits for it, with the
same backoff, for up to :data:`DB_WAIT_S` before it exits 3 (:func:`_open_waiting`): a worker
that stays down stalls its share of the stream, which Mosquitto keeps queueing in the worker's
persistent session (its shared-subscription share) until it is back.

Hub-issued actions (:mod:`hub.actions`): the worker also subscribes to every store's
``ack/+`` (shared on PostgreSQL) and records the acks of the actions the hub issued (then
acknowledges the message); its :class:`hub.actions.Sender` thread publishes the due actions of
the ``hub_actions`` outbox through the same connection; its health is in ``hub_components``
(``adamm-hub status``), and when it fails on every round for ``[actions] sender_give_up_s`` the
worker stops with exit 3 naming it (a part that keeps failing is not only a log line a second).
"""

from __future__ import annotations

import dataclasses
import logging
import queue
import signal
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg

from edge.config.hub import HubConfig
from edge.errors import AdammError
from edge.sync import messages as m
from edge.sync.mqtt import Link, Message, link_settings, parse_broker_url
from hub import actions as hub_actions
from hub.db import HubDB, HubStoreError, HubStoreUnreachable, is_transient, open_hub
from hub.ingest import ingest

logger = logging.getLogger(__name__)

SHARE_GROUP = "adamm-hub"
#: seconds before the first retry after a transient database error, and the most between two
RETRY_FIRST_S = 0.5
RETRY_MAX_S = 30.0
#: seconds a starting worker keeps trying a PostgreSQL that does not answer (starting, restarting)
#: before it exits 3
DB_WAIT_S = 60.0
T = TypeVar("T")


class Stopping(Exception):
    """The worker was asked to stop while it waited to retry (the message stays unacknowledged)."""


def subscriptions(db: HubDB) -> list[tuple[str, int]]:
    """What a worker subscribes to: shared summaries on PostgreSQL, plain on SQLite."""
    summary = f"{m.TOPIC_ROOT}/+/summary"
    if db.dialect == "postgresql":
        summary = f"$share/{SHARE_GROUP}/{summary}"
    ack = f"{m.TOPIC_ROOT}/+/ack/+"
    if db.dialect == "postgresql":
        ack = f"$share/{SHARE_GROUP}/{ack}"
    return [(summary, 1), (f"{m.TOPIC_ROOT}/+/status", 1), (ack, 1)]


class Server:
    """One serve worker: a hub store and an MQTT link."""

    def __init__(self, db: HubDB, broker: str, worker: int, config: HubConfig) -> None:
        self.db = db
        self.counts: Counter[str] = Counter()
        self._last_log = time.monotonic()
        self.connect_timeout_s = config.mqtt.connect_timeout_s
        # a long-running worker retries until connect_timeout_s, not a number of attempts
        settings = dataclasses.replace(link_settings(broker, config.mqtt), connect_attempts=None)
        self._inbox: queue.SimpleQueue[Message] = queue.SimpleQueue()
        self._stop = threading.Event()
        self.link = Link(
            settings,
            f"adamm-hub-{worker}",
            subscriptions=subscriptions(db),
            on_message=self._receive,
            manual_ack=True,
            credentials_label="the hub's credentials",
        )
        self.actions = hub_actions.Sender(
            db,
            lambda topic, payload, expiry, props: self.link.publish_wait(
                topic, payload, qos=1, retain=True, expiry_s=expiry, user_properties=dict(props)
            ),  # every action message is retained: the open action, or the empty clearing
            self.link.connected.is_set,
            resend_base_s=config.actions.resend_base_s,
            resend_max_s=config.actions.resend_max_s,
            name=f"actions/worker-{worker}",
            give_up_s=config.actions.sender_give_up_s,
        )

    def _receive(self, msg: Message) -> bool:  # the network thread: queue it, acknowledge later
        self._inbox.put(msg)
        return False

    def handle(self, msg: Message) -> None:
        if hub_actions.is_ack_topic(msg.topic):  # an ack of an action (the hub's or a store's)
            outcome = self._store(lambda: hub_actions.record_ack(self.db, msg.topic, bytes(msg.payload)), msg)
            self.counts[f"ack_{outcome or 'hub_fault'}"] += 1
            self.link.ack(msg)
            return
        got = self._store(lambda: ingest(self.db, msg.topic, msg.payload), msg)
        if got is None:  # a fault of the hub's own: no receipt, so the store sends it again
            self.counts["hub_fault"] += 1
        else:
            if got.receipt is not None and got.store_id is not None:
                self.link.publish(m.receipt_topic(got.store_id), got.receipt.encode(), qos=1)
            self.counts[got.outcome] += 1
        self.link.ack(msg)
        if time.monotonic() - self._last_log > 10:
            self._last_log = time.monotonic()
            logger.info("received so far: %s", dict(self.counts))

    def _store(self, work: Callable[[], T], msg: Message) -> T | None:
        """``work()`` (one transaction), retried through the database's transient errors: rolled
        back, a new connection after a backoff (:data:`RETRY_FIRST_S` doubling to
        :data:`RETRY_MAX_S`) while the message waits unacknowledged, until it commits or the worker
        stops. ``None`` for a fault of the hub's own (a bug): logged, never parked, no receipt.
        Raises :class:`HubStoreError` for a database error no retry can fix (exit 3)."""
        delay = RETRY_FIRST_S
        while True:
            try:
                return work()
            except AdammError:
                raise
            except (sqlite3.Error, psycopg.Error) as exc:
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                if not is_transient(exc):
                    raise HubStoreError(
                        f"the hub store failed while storing a message from {msg.topic} ({first}); "
                        "it was not acknowledged, so the broker delivers it again",
                        hint="check the database, then start adamm-hub serve again",
                    ) from None
                logger.warning(
                    "the hub's database failed while storing a message from %s (%s); retrying in %.1f s, "
                    "no receipt meanwhile",
                    msg.topic,
                    first,
                    delay,
                )
                delay = self._recover(delay)
            except Exception:
                logger.exception(
                    "a fault of the hub's own while storing a message from %s: not parked, no receipt "
                    "(the store sends it again)",
                    msg.topic,
                )
                return None

    def _recover(self, delay: float) -> float:
        """Wait ``delay``, then get a working connection (a new one when the old is lost), waiting
        longer each time the server does not answer; the next delay."""
        while True:
            if self._stop.wait(delay):
                raise Stopping()
            delay = min(delay * 2, RETRY_MAX_S)
            conn = self.db.conn
            if self.db.dialect != "postgresql" or not (conn.closed or conn.broken):
                return delay
            try:
                self.db.reconnect()
            except HubStoreError as exc:
                logger.warning("%s; trying again in %.1f s", exc, delay)
                continue
            logger.info("reconnected to the hub's database")
            return delay

    def run(self, stop: threading.Event) -> None:
        """Serve until ``stop`` is set; raises the link's fatal error (refused credentials or
        subscriptions), BrokerUnreachable when the broker is never reached within
        ``[mqtt] connect_timeout_s``, HubStoreError when the store fails, SenderFailing when the
        action sender failed on every round for ``[actions] sender_give_up_s``."""
        self._stop = stop
        started = time.monotonic()
        reached = False
        self.link.start()
        self.actions.start()
        try:
            while not stop.is_set():
                if self.link.fatal is not None:
                    raise self.link.fatal
                if self.actions.fatal is not None:  # a part that kept failing: say so, exit 3
                    raise self.actions.fatal
                if not reached:
                    reached = self.link.connected.is_set()
                    waited = time.monotonic() - started
                    if not reached and waited > self.connect_timeout_s:
                        raise self.link.unreachable(waited)
                try:
                    msg = self._inbox.get(timeout=0.2)
                except queue.Empty:
                    continue
                try:
                    self.handle(msg)
                except Stopping:
                    break
        finally:
            self.actions.stop()
            self.link.close()
            logger.info("stopped; received %s", dict(self.counts) or "nothing")


def serve(target: str, broker: str, *, worker: int = 1, config: HubConfig | None = None) -> int:
    """Run one worker until SIGINT/SIGTERM (exit 0) or an environment error (raised, exit 3)."""
    cfg = config or HubConfig()
    parse_broker_url(broker)  # a usage error before anything is opened
    stop = threading.Event()

    def on_signal(signum: int, _frame: Any) -> None:
        logger.info("signal %d: stopping", signum)
        stop.set()

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    db: HubDB | None = None
    try:
        db = _open_waiting(target, stop)
        if db is not None:  # None: stopped while it waited for the database
            logger.info("adamm-hub serve: %s <- %s (worker %d)", db.target, broker, worker)
            Server(db, broker, worker, cfg).run(stop)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        if db is not None:
            db.close()
    return 0


def _open_waiting(target: str, stop: threading.Event, wait_s: float | None = None) -> HubDB | None:
    """The hub store, waiting through a PostgreSQL that does not answer yet (a worker started, or
    restarted by its supervisor, while the server starts or restarts: :class:`HubStoreUnreachable`),
    retried with backoff (:data:`RETRY_FIRST_S` doubling to :data:`RETRY_MAX_S`) for up to
    ``wait_s`` (:data:`DB_WAIT_S`), then raised (exit 3). Any other failure is raised at once.
    ``None`` when ``stop`` is set meanwhile."""
    limit = DB_WAIT_S if wait_s is None else wait_s
    started = time.monotonic()
    delay = RETRY_FIRST_S
    while True:
        try:
            return open_hub(target, create=True)
        except HubStoreUnreachable as exc:
            left = limit - (time.monotonic() - started)
            if left <= 0:
                raise HubStoreUnreachable(
                    f"{exc.message}; gave up after {limit:.0f} s", hint=exc.hint or ""
                ) from None
            logger.warning("%s; trying again in %.1f s (waiting up to %.0f s)", exc, min(delay, left), limit)
            if stop.wait(min(delay, left)):
                return None
            delay = min(delay * 2, RETRY_MAX_S)
