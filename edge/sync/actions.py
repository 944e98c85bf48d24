"""The store side of actions: send what the outbox holds, re-send until acknowledged or expired,
record acks; and who owns the store's MQTT connection.

Plain functions over a :class:`~edge.memory.store.Store` with the transport passed in, so the
store's sync worker (``adamm sync``, the daemon) and ``adamm action send`` / ``adamm action
sync`` run the same code:

- :func:`resend_due` marks the open actions past their expiry ``expired``, clears the retained
  message of every action that ended (an empty retained message on its topic), then publishes
  every open action whose (re-)send is due (QoS 1, retained on
  ``adamm/v1/{store}/action/{role}/{action_id}`` so a device that connects later, even for the
  first time, gets it at once; MQTT 5 Message Expiry Interval = the time left to its expiry; the
  expiry also in ``params.expires_at`` of the payload, for MQTT 3.1.1) through ``publish`` and,
  once the broker has acknowledged it, marks it ``sent`` and schedules the next re-send (the gap
  doubles from ``[actions] resend_base_s`` up to ``resend_max_s``). Devices de-duplicate by
  ``action_id``, so a re-send is harmless. Which rows are due is the contract's rule
  (:func:`edge.contract.send_blocker`, :func:`edge.contract.clear_due`), the hub's too.
- :func:`record_ack` parses an ack (``adamm/v1/{store}/ack/{action_id}``) and applies it in the
  order of :mod:`edge.memory.semantic.actions` (idempotent; never backwards).

**One process owns a store's MQTT identity** (its client id and persistent session): the one
holding the store's connection lock, an OS lock (``flock``) on ``{db}.mqtt.lock`` beside the
memory (:class:`ConnectionLock`). The sync worker holds it for as long as it runs; the kernel
drops it when the process dies, even by SIGKILL, so a stale lock cannot exist. ``adamm action
send`` and the TUI only queue the action in the outbox; the command publishes directly only when
it can take the lock itself (no worker is running), and holds it while it does.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edge.config import AdammConfig
from edge.contract import parse_iso, send_blocker
from edge.errors import EnvironmentProblem
from edge.memory.semantic import actions as rows
from edge.sync import messages
from edge.sync.mqtt import Message, connect, link_settings

if TYPE_CHECKING:
    from edge.memory.store import Store

logger = logging.getLogger(__name__)

#: publish(topic, payload, expiry_s, user_properties), QoS 1 and retained (every action message is:
#: an action while it is open, the empty clearing once it ended): returns once the broker has the
#: message (PUBACK), raises :class:`~edge.errors.BrokerError` when it does not
Publish = Callable[[str, bytes, int | None, Sequence[tuple[str, str]]], object]

LOCK_SUFFIX = ".mqtt.lock"


def store_client_id(store_id: str) -> str:
    """The MQTT client id of a store's one connection."""
    return f"adamm-edge-{store_id}"


# -- who owns the connection ---------------------------------------------------------------------


def lock_path(db: str | Path) -> Path:
    """The store's connection lock file: ``{db}.mqtt.lock`` beside the memory."""
    return Path(str(db) + LOCK_SUFFIX)


class ConnectionLock:
    """The OS lock that makes a process the owner of its store's MQTT identity."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    @classmethod
    def try_acquire(cls, db: str | Path) -> ConnectionLock | None:
        """The lock, or None when another process (a running sync worker) holds it."""
        path = lock_path(db)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        return cls(path, fd)

    @classmethod
    def acquire(cls, db: str | Path, timeout: float, stop: threading.Event | None = None) -> ConnectionLock:
        """The lock, waiting up to ``timeout`` seconds for another holder to let go (an ``adamm
        action send`` publishing directly holds it for a moment); an
        :class:`~edge.errors.EnvironmentProblem` (exit 3) when it does not."""
        deadline = time.monotonic() + max(0.0, timeout)
        while True:
            lock = cls.try_acquire(db)
            if lock is not None:
                return lock
            if time.monotonic() >= deadline or (stop is not None and stop.is_set()):
                raise EnvironmentProblem(
                    f"another process holds the store's MQTT connection ({lock_path(db)})",
                    hint="a sync worker (adamm sync, adamm run) is already running for this memory; "
                    "stop it or let it sync",
                )
            (stop or threading.Event()).wait(0.2)

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def __enter__(self) -> ConnectionLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def worker_running(db: str | Path) -> bool:
    """True when another process holds the store's connection lock."""
    lock = ConnectionLock.try_acquire(db)
    if lock is None:
        return True
    lock.release()
    return False


# -- sending -------------------------------------------------------------------------------------


@dataclass
class SendReport:
    sent: list[str] = field(default_factory=list)
    expired: list[str] = field(default_factory=list)
    cleared: list[str] = field(default_factory=list)
    acks: dict[str, int] = field(default_factory=dict)


def resend_due(
    store: Store,
    publish: Publish,
    *,
    now: datetime | None = None,
    resend_base_s: float = 60.0,
    resend_max_s: float = 3600.0,
    store_id: str | None = None,
) -> SendReport:
    """Expire what is past its expiry, then (re-)send every open action that is due (module
    docstring); ``store_id``: only that store's (a connection publishes under its own store
    only). A publish that fails raises; what was sent before stays recorded."""
    t = now or datetime.now(UTC)
    report = SendReport(expired=rows.expire_due(store, t))
    with store.read() as conn:
        ended = rows.clear_due_actions(conn, t)
        due = rows.due_actions(conn, t)
    for row in ended:
        if store_id is not None and row["store_id"] != store_id:
            continue
        if int(row["attempts"] or 0) > 0:  # never published: nothing retained to clear
            publish(*messages.action_clear(row))
        rows.mark_cleared(store, row["action_id"], now=t)
        report.cleared.append(row["action_id"])
    for row in due:
        if store_id is not None and row["store_id"] != store_id:
            continue
        why = send_blocker(row, t)
        if why is not None:
            if "topic" in why:
                logger.warning("action %s not sent: %s", row["action_id"], why)
            continue
        topic, payload, expiry, props = messages.action_message(row, t)
        publish(topic, payload, expiry, props)
        gap = messages.resend_gap(int(row["attempts"]), resend_base_s, resend_max_s)
        rows.mark_sent(store, row["action_id"], t + gap, now=t)
        report.sent.append(row["action_id"])
    return report


def record_ack(store: Store, topic: str, payload: bytes, *, now: datetime | None = None) -> str:
    """Apply one received ack; the outcome (``recorded``, ``unchanged``, ``unknown``, ``late``)
    or the :class:`~edge.sync.messages.MessageError` reason of a message that is not one."""
    try:
        ack = messages.parse_ack(topic, payload)
    except messages.MessageError as exc:
        logger.warning("ignoring a message on %s: %s", topic, exc)
        return exc.reason
    outcome = rows.apply_ack(store, ack.action_id, ack.state, ack.by, parse_iso(ack.at), now=now)
    if outcome == rows.UNKNOWN:
        logger.info("ack for an action this store did not issue: %s", ack.action_id)
    return outcome


def peek_acks(
    store_id: str, url: str, config: AdammConfig, *, listen_s: float = 3.0, quiet_s: float = 1.0
) -> list[messages.Ack]:
    """The acks waiting in the store's session, read without recording or acknowledging them
    (``adamm actions --broker``, which never writes to the memory). Connects as the store (the
    caller holds its :class:`ConnectionLock`), keeps what arrives for up to ``listen_s`` seconds
    (until ``quiet_s`` pass without a message) and leaves every message unacknowledged
    (``manual_ack``): the broker delivers it again to the store's next connection, whose sync
    worker or ``adamm action sync`` records it. In the order they came; unreadable ones left out."""
    got: list[messages.Ack] = []
    lock = threading.Lock()
    last = [time.monotonic()]
    ack_prefix = messages.ack_topic(store_id, "")

    def on_message(msg: Message) -> bool:
        with lock:
            last[0] = time.monotonic()
            if msg.topic.startswith(ack_prefix):
                try:
                    got.append(messages.parse_ack(msg.topic, msg.payload))
                except messages.MessageError as exc:
                    logger.info("not an ack on %s: %s", msg.topic, exc)
        return False  # never acknowledged: the store's connection reads it again

    link = connect(
        link_settings(url, config.mqtt),
        store_client_id(store_id),
        subscriptions=[(messages.ack_topic(store_id, "+"), 1)],
        on_message=on_message,
        manual_ack=True,
    )
    try:
        link.wait_subscribed(15.0)
        _listen_until_quiet(lock, last, listen_s, quiet_s)
    finally:
        with contextlib.suppress(Exception):
            link.close()
    with lock:
        return list(got)


# -- one connection, used by `adamm action send` and `adamm action sync` ------------------------------


def sync_actions(
    store: Store,
    store_id: str,
    url: str,
    config: AdammConfig,
    *,
    listen_s: float = 0.0,
    quiet_s: float = 1.0,
) -> SendReport:
    """Connect as the store (the caller holds its :class:`ConnectionLock`), collect the acks the
    session holds, (re-)send what is due, and listen for acks up to ``listen_s`` seconds (until
    ``quiet_s`` pass without one), then clear the retained messages of the actions those acks
    ended. Messages that are not acks (receipts) are left unacknowledged
    in the session for the sync worker (``manual_ack``)."""
    report = SendReport()
    lock = threading.Lock()
    last = [time.monotonic()]
    ack_prefix = messages.ack_topic(store_id, "")

    def on_message(msg: Message) -> bool:
        if not msg.topic.startswith(ack_prefix):
            return False
        outcome = record_ack(store, msg.topic, msg.payload)
        with lock:
            report.acks[outcome] = report.acks.get(outcome, 0) + 1
            last[0] = time.monotonic()
        return True

    settings = link_settings(url, config.mqtt)
    link = connect(
        settings,
        store_client_id(store_id),
        subscriptions=[(messages.ack_topic(store_id, "+"), 1)],
        on_message=on_message,
        manual_ack=True,
    )

    def round() -> None:
        got = resend_due(
            store,
            lambda topic, payload, expiry, props: link.publish_wait(
                topic, payload, retain=True, expiry_s=expiry, user_properties=dict(props)
            ),
            resend_base_s=config.actions.resend_base_s,
            resend_max_s=config.actions.resend_max_s,
            store_id=store_id,
        )
        report.sent += got.sent
        report.expired += got.expired
        report.cleared += got.cleared

    try:
        link.wait_subscribed(15.0)
        round()
        with lock:
            last[0] = max(last[0], time.monotonic())  # the quiet period counts from now
        _listen_until_quiet(lock, last, listen_s, quiet_s)
        if report.acks.get(rows.RECORDED):
            round()  # the actions those acks ended: clear their retained messages now
    finally:
        with contextlib.suppress(Exception):
            link.close()
    return report


def _listen_until_quiet(lock: Any, last: list[float], listen_s: float, quiet_s: float) -> None:
    """Wait up to ``listen_s`` seconds, returning once nothing has arrived for ``quiet_s`` (``last[0]``:
    when the last message came, guarded by ``lock``)."""
    deadline = time.monotonic() + listen_s
    while time.monotonic() < deadline:
        with lock:
            idle = time.monotonic() - last[0]
        if idle >= quiet_s:
            break
        time.sleep(0.05)
