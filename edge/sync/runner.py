"""Publishing the outbox: one MQTT connection per store, receipts close rows.

:class:`StoreSync` publishes one store's pending outbox rows in ``seq`` order at QoS 1 on
``adamm/v1/{store_id}/summary`` (a window of ``window`` messages awaiting the broker's PUBACK; the
row's ``seq`` rides along as the MQTT 5 user property ``seq``, for hubs that answer
``{"up_to_seq": N}``; over MQTT 3.1.1 it cannot, and the receipts name msg_ids), subscribes to
its ``receipt`` topic and marks a row ``done`` only when a receipt names it (``stored``, or ``up_to_seq`` covering a seq it sent) and ``parked`` (logged with
the hub's reason) when the receipt parks it. The PUBACK is transport, not storage: a row the hub has
not confirmed is published again after every reconnect and ``resend_after_s`` after it was sent,
once the hub has also confirmed nothing for ``resend_after_s`` (a hub still catching up is not
flooded with copies; the hub stores each ``msg_id`` once). Status: retained ``online`` on every connect, a retained
``offline`` last will, and ``offline`` published on a clean stop.

The same connection carries the store's actions (:mod:`edge.sync.actions`; the caller holds the
store's connection lock): it subscribes to ``adamm/v1/{store_id}/ack/+`` on the persistent
session, records each ack (:func:`~edge.sync.actions.record_ack`) and acknowledges it to the
broker only once recorded (``manual_ack``: an ack not yet recorded when the process dies is
delivered again), and about every second (at once after an ack that ended an action) marks
expired actions, clears the retained message of those that ended and (re-)sends the due ones
(:func:`~edge.sync.actions.resend_due`, QoS 1, retained, message expiry = the time left). A re-send the
broker does not take is logged and tried again on the next pass.

:class:`SyncRun` drives the stores of one memory: :meth:`SyncRun.once` (``adamm sync --once``:
derive, then drain until the receipts confirm every row that was pending at the start, reconnecting
through broker restarts) and :meth:`SyncRun.forever` (the daemon's worker and ``adamm sync`` without
``--once``: derive every ``interval_s``, publish as rows appear).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from edge.config import ActionsConfig
from edge.errors import BrokerAuthError, BrokerError, BrokerUnreachable
from edge.sync import actions as act
from edge.sync import messages as m
from edge.sync.mqtt import Link, LinkSettings, Message, Will, tls_context
from edge.sync.outbox import Outbox

logger = logging.getLogger(__name__)

#: see :attr:`StoreSync.window`
HANDOFF_FACTOR = 10
#: seconds between two passes over the action outbox (expire, re-send what is due)
ACTIONS_EVERY_S = 1.0


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


@dataclass
class SyncCounts:
    """``adamm sync --json``: summaries published (PUBACKed) and confirmed / parked by the hub in
    this run, and those still pending."""

    published: int = 0
    confirmed: int = 0
    parked: int = 0
    pending: int = 0

    def as_dict(self) -> dict[str, int]:
        return {
            "published": self.published,
            "confirmed": self.confirmed,
            "parked": self.parked,
            "pending": self.pending,
        }


class StoreSync:
    """One store's session: its own :class:`Link` (client id ``adamm-edge-{store_id}``).

    :meth:`pump` never waits on the store's writer: publish attempts and receipts are written by
    the writer thread in the background (their futures are collected by later pumps), and rows whose
    receipt is being written are not published again meanwhile."""

    def __init__(
        self,
        outbox: Outbox,
        store_id: str,
        settings: LinkSettings,
        *,
        window: int = 100,
        resend_after_s: float = 30.0,
        wake: threading.Event | None = None,
        actions: ActionsConfig | None = None,
    ) -> None:
        self.outbox = outbox
        #: the action settings; None: this connection does not carry actions
        self.actions = actions
        #: actions (re-)sent and acks received in this run (logged, not in ``adamm sync --json``)
        self.actions_sent = 0
        self.acks_recorded = 0
        self._acks: queue.SimpleQueue[Message] = queue.SimpleQueue()
        self._next_actions = 0.0
        self.store_id = store_id
        #: summaries handed to the client awaiting PUBACK: a few times the client's on-the-wire
        #: window (``window``), so the client always has the next ones queued
        self.window = max(1, window) * HANDOFF_FACTOR
        self._batch = max(1, min(100, self.window // 4))
        self.resend_after_s = resend_after_s
        #: when the hub last confirmed something: a summary is sent again only once the hub has
        #: been quiet for ``resend_after_s`` too (a hub catching up after an outage is not flooded
        #: with copies of what it is about to confirm)
        self._last_receipt = float("-inf")
        self.counts = SyncCounts()
        #: set by the network thread when something arrives (receipt, PUBACK, connect)
        self.wake = wake or threading.Event()
        self._receipts: queue.SimpleQueue[bytes] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._inflight: dict[int, int] = {}  # mid -> seq, PUBACK pending
        self._acked: list[int] = []  # PUBACKed since the last pump
        self._early: dict[int, tuple[bool, str]] = {}  # PUBACKs of mids not recorded yet
        self._sent: dict[int, tuple[str, float]] = {}  # seq -> (msg_id, when), not yet confirmed
        self._by_msg: dict[str, int] = {}
        #: background writes: (future, kind, seqs it closes)
        self._writes: list[tuple[Future[Any], str, tuple[int, ...]]] = []
        self._closing: set[int] = set()  # seqs whose receipt is being written
        self._cursor = 0
        self._connects = 0
        self._handled_connects = 0
        self.status_topic = m.status_topic(store_id)
        self._ack_prefix = m.ack_topic(store_id, "")
        subs = [(m.receipt_topic(store_id), 1)]
        if actions is not None:
            subs.append((m.ack_topic(store_id, "+"), 1))
        self.link = Link(
            settings,
            act.store_client_id(store_id),
            will=Will(self.status_topic, lambda: m.status_payload("offline", _now())),
            subscriptions=subs,
            on_message=self._on_message,
            on_connected=self._on_connected,
            on_puback=self._on_puback,
            manual_ack=True,
        )

    # -- network thread ------------------------------------------------------------------------

    def _on_connected(self, session_present: bool) -> None:
        with self._lock:
            self._connects += 1
        self.wake.set()

    def _on_message(self, msg: Message) -> bool:
        self.wake.set()
        if msg.topic.startswith(self._ack_prefix):
            self._acks.put(msg)  # acknowledged once recorded
            return False
        self._receipts.put(msg.payload)
        return True

    def _on_puback(self, mid: int, ok: bool, reason: str) -> None:
        with self._lock:
            seq = self._inflight.pop(mid, None)
            if seq is None:  # came back before publish() returned its mid to us (or paho's own
                # re-send of a message from before a reconnect): kept until that mid is recorded
                if len(self._early) > 4 * self.window:
                    self._early.clear()
                self._early[mid] = (ok, reason)
                return
            if ok:
                self._acked.append(seq)
            else:  # kept in _sent: sent again after resend_after_s, not at once
                logger.warning(
                    "the broker did not take summary seq %d: %s; it is sent again in %.0f s",
                    seq,
                    reason,
                    self.resend_after_s,
                )
            # wake the publisher once a batch has room, not at every PUBACK
            room = self.window - len(self._inflight)
        if (room >= self._batch or not ok) and not self.wake.is_set():
            self.wake.set()  # Event.set notifies under a lock: not again while it is set

    # -- the caller's thread --------------------------------------------------------------------

    def start(self) -> None:
        self.link.start()

    def close(self) -> None:
        self.flush()
        self.link.close(final=(self.status_topic, m.status_payload("offline", _now()), True))

    @property
    def has_connected(self) -> bool:
        """The broker accepted this session at least once in this run."""
        with self._lock:
            return self._connects > 0

    @property
    def quiet(self) -> bool:
        """Nothing published is waiting for a PUBACK or a receipt."""
        with self._lock:
            return not self._inflight and not self._sent

    @property
    def busy(self) -> bool:
        """Background writes not finished yet (the outbox's counts may be behind)."""
        return bool(self._writes)

    def flush(self) -> None:
        """Wait for the background writes."""
        for fut, _kind, _seqs in list(self._writes):
            fut.exception()
        self._collect()

    def _collect(self) -> None:
        keep = []
        for fut, kind, seqs in self._writes:
            if not fut.done():
                keep.append((fut, kind, seqs))
                continue
            n = fut.result()  # a failed write raises here (StoreError: exit 3)
            if kind == "kept_newer":  # (rows done, seqs versioned above the hub's: send them again)
                done, again = n
                self.counts.confirmed += int(done)
                if again:
                    self._cursor = min(self._cursor, min(again) - 1)
            elif kind == "done":
                self.counts.confirmed += int(n)
            elif kind == "parked":
                self.counts.parked += int(n)
            self._closing.difference_update(seqs)
        self._writes = keep

    def pump(self) -> bool:
        """Handle receipts and reconnects, publish what the window allows. True when it did work."""
        worked = False
        self._collect()
        with self._lock:
            reconnected = self._connects != self._handled_connects
            self._handled_connects = self._connects
            acked, self._acked = self._acked, []
        if reconnected:
            worked = True
            with self._lock:  # everything unconfirmed goes out again on the new connection
                self._inflight.clear()
                self._early.clear()
                self._sent.clear()
                self._by_msg.clear()
                self._cursor = 0
            self.link.publish(self.status_topic, m.status_payload("online", _now()), qos=1, retain=True)
        self.counts.published += len(acked)
        worked |= self._handle_receipts()
        worked |= self._publish_more()
        worked |= self.pump_actions()
        return worked

    def pump_actions(self, force: bool = False) -> bool:
        """Record the acks that arrived; about every :data:`ACTIONS_EVERY_S` (or when ``force``)
        mark expired actions and (re-)send the due ones. True when it did work."""
        if self.actions is None:
            return False
        store = self.outbox.store
        worked = False
        while True:
            try:
                msg = self._acks.get_nowait()
            except queue.Empty:
                break
            outcome = act.record_ack(store, msg.topic, msg.payload)
            self.link.ack(msg)
            if outcome == "recorded":
                self.acks_recorded += 1
                force = True  # an action that ended has its retained message cleared at once
            worked = True
        now = time.monotonic()
        if not self.link.connected.is_set() or (now < self._next_actions and not force):
            return worked
        self._next_actions = now + ACTIONS_EVERY_S
        try:
            report = act.resend_due(
                store,
                self._publish_action,
                store_id=self.store_id,
                resend_base_s=self.actions.resend_base_s,
                resend_max_s=self.actions.resend_max_s,
            )
        except BrokerError as exc:  # stays due: tried again on the next pass
            logger.warning("actions of %s not sent: %s", self.store_id, exc)
            return worked
        if report.sent or report.expired or report.cleared:
            self.actions_sent += len(report.sent)
            logger.info(
                "actions of %s: %d sent, %d expired, %d cleared",
                self.store_id,
                len(report.sent),
                len(report.expired),
                len(report.cleared),
            )
            worked = True
        return worked

    def _publish_action(
        self, topic: str, payload: bytes, expiry: int | None, props: Sequence[tuple[str, str]]
    ) -> None:
        mid = self.link.publish_wait(
            topic, payload, retain=True, expiry_s=expiry, user_properties=dict(props)
        )
        with self._lock:  # its PUBACK is not a summary's
            self._early.pop(mid, None)

    def _handle_receipts(self) -> bool:
        stored: list[str] = []
        parked: list[tuple[str, str]] = []
        kept: list[m.KeptNewer] = []
        up_to: int | None = None
        while True:
            try:
                payload = self._receipts.get_nowait()
            except queue.Empty:
                break
            try:
                r = m.parse_receipt(payload)
            except m.MessageError as exc:
                logger.warning("ignoring a receipt that is not one (%s)", exc)
                continue
            stored.extend(r.stored)
            parked.extend(r.parked)
            kept.extend(r.kept_newer)
            if r.up_to_seq is not None:
                up_to = max(up_to or 0, r.up_to_seq)
        if not stored and not parked and not kept and up_to is None:
            return False
        self._last_receipt = time.monotonic()
        with self._lock:
            if up_to is not None:  # every summary sent with a seq up to N is stored
                stored.extend(mid for q, (mid, _t) in self._sent.items() if q <= up_to)

            def close(ids: list[str]) -> tuple[int, ...]:
                seqs = []
                for mid in ids:
                    q = self._by_msg.pop(mid, None)
                    if q is not None:
                        self._sent.pop(q, None)
                        seqs.append(q)
                return tuple(seqs)

            stored_seqs = close(stored)
            parked_seqs = close([p[0] for p in parked])
            kept_seqs = close([k.msg_id for k in kept])
        self._closing.update(stored_seqs, parked_seqs, kept_seqs)
        if kept:
            self._writes.append((self.outbox.submit_kept_newer(self.store_id, kept), "kept_newer", kept_seqs))
        if stored:
            self._writes.append((self.outbox.submit_done(self.store_id, stored), "done", stored_seqs))
        if parked:
            self._writes.append((self.outbox.submit_parked(self.store_id, parked), "parked", parked_seqs))
        return True

    def _publish_more(self) -> bool:
        if not self.link.connected.is_set():
            return False
        with self._lock:
            inflight = len(self._inflight)
        room = self.window - inflight
        if room <= 0 or (inflight and room < self._batch):
            return False  # publish in batches: one read and one write per batch
        rows = self.outbox.pending(self.store_id, self._cursor, limit=max(room, 1))
        now = time.monotonic()
        hub_quiet = now - self._last_receipt >= self.resend_after_s
        if not rows:
            with self._lock:
                stale = hub_quiet and any(now - t >= self.resend_after_s for _, t in self._sent.values())
            if stale and self._cursor:
                self._cursor = 0  # rescan: re-send what the hub has not confirmed in time
            return False
        published: list[int] = []
        stamp = b',"sent_at":"' + _now().encode() + b'"}'
        topic = m.summary_topic(self.store_id)
        for row in rows:
            if row.seq in self._closing:
                self._cursor = row.seq
                continue
            with self._lock:
                entry = self._sent.get(row.seq)
                if (
                    entry is not None
                    and entry[0] == row.msg_id
                    and (now - entry[1] < self.resend_after_s or not hub_quiet)
                ):
                    self._cursor = row.seq
                    continue
                if len(self._inflight) >= self.window:
                    break
            sent = row.payload[:-1] + stamp
            if len(sent) > m.MAX_MESSAGE_BYTES:  # queued by an earlier release, measured unstamped
                self._cursor = row.seq
                reason = f"too_large: {len(sent)} bytes as sent (limit {m.MAX_MESSAGE_BYTES})"
                self._writes.append(
                    (self.outbox.submit_parked(self.store_id, [(row.msg_id, reason)]), "parked", ())
                )
                continue
            mid = self.link.publish(topic, sent, qos=1, user_properties={"seq": str(row.seq)})
            if mid is None:
                break
            self._cursor = row.seq
            with self._lock:
                self._sent[row.seq] = (row.msg_id, now)
                self._by_msg[row.msg_id] = row.seq
                early = self._early.pop(mid, None)
                if early is None:
                    self._inflight[mid] = row.seq
                elif early[0]:
                    self._acked.append(row.seq)
            published.append(row.seq)
        fut = self.outbox.submit_sent(published)
        if fut is not None:
            self._writes.append((fut, "sent", ()))
        return bool(published)


def check_store_user(user: str | None, store_ids: Sequence[str]) -> None:
    """Raise :class:`BrokerAuthError` (exit 3), naming both, when the MQTT ``user`` is not one of
    the memory's ``store_ids`` (a store's user is its store id: ``adamm-hub broker-setup``)."""
    if user is None or not store_ids or user in store_ids:
        return
    raise BrokerAuthError(
        f"the MQTT user {user!r} is not this memory's store {' or '.join(repr(i) for i in store_ids)}",
        hint=f"load the store's own credentials: broker-setup's credentials/{store_ids[0]}.env",
    )


class SyncRun:
    """The stores of one memory, each with its own :class:`StoreSync`."""

    def __init__(
        self,
        store: Any,
        settings: LinkSettings,
        *,
        max_pending: int = 20000,
        window: int = 100,
        resend_after_s: float = 30.0,
        progress: Callable[[str], None] | None = None,
        actions: ActionsConfig | None = None,
    ) -> None:
        """``actions``: carry the store's actions too (the caller holds its connection lock)."""
        if settings.address.tls:
            tls_context(settings.credentials)  # a CA file that cannot be read fails here, not later
        self.store = store
        self.outbox = Outbox(store, max_pending)
        self.settings = settings
        self.window = window
        self.resend_after_s = resend_after_s
        self.progress = progress
        self.actions = actions
        self.syncs: dict[str, StoreSync] = {}
        self._deferred = 0
        self.wake = threading.Event()

    def _say(self, text: str) -> None:
        if self.progress is not None:
            self.progress(text)

    def _ensure_syncs(self) -> None:
        for sid in self.outbox.store_ids():
            if sid not in self.syncs:
                if not m.valid_store_id(sid):
                    logger.error("store id %r cannot be an MQTT topic level: it is not synced", sid)
                    continue
                s = StoreSync(
                    self.outbox,
                    sid,
                    self.settings,
                    window=self.window,
                    resend_after_s=self.resend_after_s,
                    wake=self.wake,
                    actions=self.actions,
                )
                s.start()
                self.syncs[sid] = s

    def counts(self) -> SyncCounts:
        total = SyncCounts()
        for s in self.syncs.values():
            s.flush()
            total.published += s.counts.published
            total.confirmed += s.counts.confirmed
            total.parked += s.counts.parked
        total.pending = self.outbox.counts()["pending"]
        return total

    def derive(self, wait: Callable[[str, str], bool] | None = None) -> None:
        rep = self.outbox.derive(wait)
        self._deferred = rep.deferred
        if rep.facts_new:
            self._say(f"summarised {rep.facts_new} new or changed facts")
        if rep.days:
            self._say(
                f"summarised {rep.days} days: {rep.new} new, {rep.replaced} newer versions, "
                f"{rep.unchanged} unchanged summaries"
                + (f"; {rep.deferred} days wait (outbox full)" if rep.deferred else "")
            )

    def check_user(self) -> None:
        """Refuse, before connecting, credentials that are not the memory's store's: a store's
        MQTT user is named after its store id (``adamm-hub broker-setup``, CONTRACT.md section 5),
        and the broker's ACL would refuse every summary of another store one by one."""
        check_store_user(self.settings.credentials.username, self.outbox.store_ids())

    def nothing_to_send(self) -> bool:
        """No summary pending, no action due and none to clear: ``--once`` has nothing to do on the
        broker."""
        if self.outbox.counts()["pending"]:
            return False
        if self.actions is None:
            return True
        from edge.memory.semantic import actions as action_rows

        now = datetime.now(UTC)
        with self.store.read() as conn:
            return not action_rows.due_actions(conn, now) and not action_rows.clear_due_actions(conn, now)

    def _check_fatal(self) -> None:
        for s in self.syncs.values():
            if s.link.fatal is not None:
                raise s.link.fatal

    def once(self, timeout: float) -> SyncCounts:
        """Derive, then drain until every row pending now is confirmed or parked (raises
        :class:`~edge.errors.BrokerUnreachable` after ``timeout`` seconds, BrokerAuthError at once)."""
        started = time.monotonic()
        deadline = started + timeout
        try:
            self.derive()
            if not self.outbox.store_ids():
                self._say("nothing to sync: the memory holds no store's events yet")
                return self.counts()
            if self.nothing_to_send():
                done = self.outbox.counts()["done"]
                self._say(f"nothing to send: all {done} summaries are confirmed by the hub")
                return self.counts()
            self._ensure_syncs()
            targets = {sid: self.outbox.max_pending_seq(sid) for sid in self.syncs}
            total = sum(self.outbox.open_below(sid, q) for sid, q in targets.items())
            if not self.syncs:
                self._say("nothing to sync: the memory holds no store's events yet")
            else:
                self._say(f"{total} summaries to send for {len(self.syncs)} store(s)")
            last_report = last_check = started
            changed = False  # something happened since the outbox was last counted
            left = dict.fromkeys(targets, 1)
            while True:
                self._check_fatal()
                self.wake.clear()
                worked = False
                for s in self.syncs.values():
                    worked |= s.pump()
                now = time.monotonic()
                idle = not any(s.busy for s in self.syncs.values())
                quiet = all(s.quiet for s in self.syncs.values())
                if worked:
                    changed = True
                if idle and (now - last_check >= 0.2 or (changed and quiet)):
                    last_check, changed = now, False
                    left = {sid: self.outbox.open_below(sid, q) for sid, q in targets.items()}
                connected = all(s.has_connected for s in self.syncs.values())
                if idle and sum(left.values()) == 0 and connected:
                    if self._deferred:  # the outbox was full: summarise the days that waited
                        self.derive()
                        self._ensure_syncs()
                        targets = {sid: self.outbox.max_pending_seq(sid) for sid in self.syncs}
                        more = sum(self.outbox.open_below(sid, q) for sid, q in targets.items())
                        if more:
                            total += more
                            left = dict.fromkeys(targets, 1)
                            self._say(f"{more} more summaries to send")
                            continue
                        logger.warning(
                            "the outbox stays full (other summaries are pending): %d days wait for the next run",
                            self._deferred,
                        )
                    self._say(f"all {total} summaries confirmed by the hub")
                    for s in self.syncs.values():  # the acks that came, the actions due
                        s.pump_actions(force=True)
                    return self.counts()
                if now >= deadline:
                    down = [s for s in self.syncs.values() if not s.link.connected.is_set()]
                    if down:  # never connected, or lost and not back within the time
                        raise down[0].link.unreachable(timeout)
                    raise BrokerUnreachable(
                        f"the hub has not confirmed {sum(left.values())} of {total} summaries within {timeout:g} s",
                        hint="they stay pending and are sent again next time; check that adamm-hub serve "
                        "is running against the same broker",
                    )
                if now - last_report >= 5:
                    last_report = now
                    self._say(f"{total - sum(left.values())} of {total} confirmed")
                if not worked:
                    self.wake.wait(0.05)
        finally:
            self.close()

    def forever(
        self, stop: threading.Event, interval_s: float, open_day_interval_s: float | None = None
    ) -> None:
        """Derive every ``interval_s`` and keep publishing until ``stop`` is set. A store's current
        store-local day (still filling) is summarised at most every ``open_day_interval_s`` (default:
        ``interval_s``): each summary of it is a full new version on the wire."""
        next_derive = 0.0
        open_every = interval_s if open_day_interval_s is None else open_day_interval_s
        last_today: dict[tuple[str, str], float] = {}

        def wait(store_id: str, day: str) -> bool:
            if day != datetime.now(ZoneInfo(self.store.timezone(store_id))).date().isoformat():
                return False
            last = last_today.get((store_id, day))
            now = time.monotonic()
            if last is not None and now - last < open_every:
                return True
            last_today[(store_id, day)] = now
            return False

        try:
            while not stop.is_set():
                now = time.monotonic()
                if now >= next_derive:
                    self.derive(wait)
                    self._ensure_syncs()
                    next_derive = now + interval_s
                self._check_fatal()
                self.wake.clear()
                worked = False
                for s in self.syncs.values():
                    worked |= s.pump()
                if not worked:
                    self.wake.wait(0.1)
        finally:
            self.close()

    def close(self) -> None:
        for s in self.syncs.values():
            s.close()
