"""``adamm-hub serve``: receive store summaries over MQTT and store them.

Subscribes (QoS 1, persistent MQTT 5 session, client id ``adamm-hub-{worker}``) to every store's
``summary`` topic (with PostgreSQL through the shared subscription
``$share/adamm-hub/adamm/v1/+/summary``, so several workers split the stream) and ``status``
topic. Per message, in the client's thread: :func:`hub.ingest.ingest` commits it (or parks it),
then the receipt is published on ``adamm/v1/{store}/receipt`` (QoS 1), then the message is
acknowledged (PUBACK, ``manual_ack``). A worker killed before its commit has not acknowledged: the
broker redelivers the message on the session's next connection; killed after the commit, the
redelivery is recognised by its ``msg_id`` and receipted again. SIGINT/SIGTERM stop it cleanly.

Hub-issued actions (:mod:`hub.actions`): the worker also subscribes to every store's
``ack/+`` (shared on PostgreSQL) and records the acks of the actions the hub issued (then
acknowledges the message); its :class:`hub.actions.Sender` thread publishes the due actions of
the ``hub_actions`` outbox through the same connection.
"""

from __future__ import annotations

import logging
import signal
import sqlite3
import threading
import time
from collections import Counter
from typing import Any

import psycopg

from edge.config.hub import HubConfig
from edge.errors import AdammError
from edge.sync import messages as m
from hub import actions as hub_actions
from hub.db import HubDB, HubStoreError, open_hub
from hub.ingest import ingest, park
from hub.transport import Credentials, MqttLink, parse_broker_url

logger = logging.getLogger(__name__)

SHARE_GROUP = "adamm-hub"


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
        mq = config.mqtt
        self.link = MqttLink(
            parse_broker_url(broker),
            f"adamm-hub-{worker}",
            subscriptions(db),
            self.handle,
            credentials=Credentials.resolve(mq.username, mq.password, mq.ca),
            session_expiry_s=mq.session_expiry_s,
            keepalive_s=mq.keepalive_s,
            connect_timeout_s=mq.connect_timeout_s,
            backoff_max_s=mq.backoff_max_s,
        )
        self.actions = hub_actions.Sender(
            db,
            lambda topic, payload, expiry, props: hub_actions.published(
                self.link.publish(topic, payload, qos=1, expiry_s=expiry, user_properties=props)
            ),
            self.link.connected.is_set,
            resend_base_s=config.actions.resend_base_s,
            resend_max_s=config.actions.resend_max_s,
        )

    def handle(self, link: MqttLink, msg: Any) -> None:
        if hub_actions.is_ack_topic(msg.topic):  # an ack of an action (the hub's or a store's)
            try:
                outcome = hub_actions.record_ack(self.db, msg.topic, bytes(msg.payload))
            except (sqlite3.Error, psycopg.Error) as exc:
                raise HubStoreError(
                    f"the hub store failed while recording an ack from {msg.topic} ({type(exc).__name__}); "
                    "it was not acknowledged, so the broker delivers it again",
                    hint="check the database, then start adamm-hub serve again",
                ) from None
            self.counts[f"ack_{outcome}"] += 1
            link.ack(msg)
            return
        try:
            got = ingest(self.db, msg.topic, bytes(msg.payload))
        except (sqlite3.Error, psycopg.Error) as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise HubStoreError(
                f"the hub store failed while storing a message from {msg.topic} ({first}); "
                "it was not acknowledged, so the broker delivers it again",
                hint="check the database, then start adamm-hub serve again",
            ) from None
        except AdammError:
            raise
        except Exception as exc:  # a hub bug must not wedge the stream on one message: park it
            logger.exception("could not store a message from %s", msg.topic)
            got = park(self.db, msg.topic, bytes(msg.payload), "hub_error", f"{type(exc).__name__}: {exc}")
        if got.receipt is not None and got.store_id is not None:
            link.publish(m.receipt_topic(got.store_id), got.receipt.encode(), qos=1)
        link.ack(msg)
        self.counts[got.outcome] += 1
        if time.monotonic() - self._last_log > 10:
            self._last_log = time.monotonic()
            logger.info("received so far: %s", dict(self.counts))

    def run(self, stop: threading.Event) -> None:
        self.actions.start()
        try:
            self.link.run(stop)
        finally:
            self.actions.stop()
            logger.info("stopped; received %s", dict(self.counts) or "nothing")


def serve(target: str, broker: str, *, worker: int = 1, config: HubConfig | None = None) -> int:
    """Run one worker until SIGINT/SIGTERM (exit 0) or an environment error (raised, exit 3)."""
    cfg = config or HubConfig()
    parse_broker_url(broker)  # a usage error before anything is opened
    db = open_hub(target, create=True)
    stop = threading.Event()

    def on_signal(signum: int, _frame: Any) -> None:
        logger.info("signal %d: stopping", signum)
        stop.set()

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        logger.info("adamm-hub serve: %s <- %s (worker %d)", db.target, broker, worker)
        Server(db, broker, worker, cfg).run(stop)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        db.close()
    return 0
