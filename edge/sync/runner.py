"""Publishing the outbox: one MQTT connection per store, receipts close rows.

:class:`StoreSync` publishes one store's pending outbox rows in ``seq`` order at QoS 1 on
``adamm/v1/{store_id}/summary`` (a window of ``window`` messages awaiting the broker's PUBACK; the
row's ``seq`` rides along as the MQTT 5 user property ``seq``, for hubs that answer
``{"up_to_seq": N}``), subscribes to its ``receipt`` topic and marks a row ``done`` only when a
receipt names it (``stored``, or ``up_to_seq`` covering a seq it sent) and ``parked`` (logged with
the hub's reason) when the receipt parks it. The PUBACK is transport, not storage: a row the hub has
not confirmed is published again after every reconnect and ``resend_after_s`` after it was sent
(the hub stores each ``msg_id`` once). Status: retained ``online`` on every connect, a retained
``offline`` last will, and ``offline`` published on a clean stop.

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
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from edge.errors import BrokerUnreachable
from edge.sync import messages as m
from edge.sync.mqtt import Link, LinkSettings, Will
from edge.sync.outbox import Outbox

logger = logging.getLogger(__name__)


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
    """One store's session: its own :class:`Link` (client id ``adamm-edge-{store_id}``)."""

    def __init__(
        self,
        outbox: Outbox,
        store_id: str,
        settings: LinkSettings,
        *,
        window: int = 100,
        resend_after_s: float = 30.0,
    ) -> None:
        self.outbox = outbox
        self.store_id = store_id
        self.window = max(1, window)
        self.resend_after_s = resend_after_s
        self.counts = SyncCounts()
        self._receipts: queue.SimpleQueue[bytes] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._inflight: dict[int, int] = {}  # mid -> seq, PUBACK pending
        self._acked: list[int] = []  # PUBACKed since the last pump
        self._early: dict[int, tuple[bool, str]] = {}  # PUBACKs of mids not recorded yet
        self._sent: dict[int, tuple[str, float]] = {}  # seq -> (msg_id, when), not yet confirmed
        self._by_msg: dict[str, int] = {}
        self._cursor = 0
        self._connects = 0
        self._handled_connects = 0
        self.status_topic = m.status_topic(store_id)
        self.link = Link(
            settings,
            f"adamm-edge-{store_id}",
            will=Will(self.status_topic, lambda: m.status_payload("offline", _now())),
            subscriptions=[(m.receipt_topic(store_id), 1)],
            on_message=self._on_message,
            on_connected=self._on_connected,
            on_puback=self._on_puback,
        )

    # -- network thread ------------------------------------------------------------------------

    def _on_connected(self, session_present: bool) -> None:
        with self._lock:
            self._connects += 1

    def _on_message(self, topic: str, payload: bytes, props: Any) -> None:
        self._receipts.put(payload)

    def _on_puback(self, mid: int, ok: bool, reason: str) -> None:
        with self._lock:
            seq = self._inflight.pop(mid, None)
            if seq is None:  # came back before publish() returned its mid to us
                self._early[mid] = (ok, reason)
                return
            if ok:
                self._acked.append(seq)
            else:
                logger.warning("the broker did not take summary seq %d: %s; it is sent again", seq, reason)
                entry = self._sent.pop(seq, None)
                if entry is not None:
                    self._by_msg.pop(entry[0], None)

    # -- the caller's thread --------------------------------------------------------------------

    def start(self) -> None:
        self.link.start()

    def close(self) -> None:
        self.link.close(final=(self.status_topic, m.status_payload("offline", _now()), True))

    def pump(self) -> bool:
        """Handle receipts and reconnects, publish what the window allows. True when it did work."""
        worked = False
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
        return worked

    def _handle_receipts(self) -> bool:
        stored: list[str] = []
        parked: list[tuple[str, str]] = []
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
            if r.up_to_seq is not None:
                up_to = max(up_to or 0, r.up_to_seq)
        if not stored and not parked and up_to is None:
            return False
        if up_to is not None:
            with self._lock:
                covered = [q for q in self._sent if q <= up_to]
            self.counts.confirmed += self.outbox.mark_done_up_to(self.store_id, up_to, covered)
            with self._lock:
                for q in covered:
                    entry = self._sent.pop(q, None)
                    if entry is not None:
                        self._by_msg.pop(entry[0], None)
        if stored:
            self.counts.confirmed += self.outbox.mark_done(self.store_id, stored)
        if parked:
            self.counts.parked += self.outbox.mark_parked(self.store_id, parked)
        with self._lock:
            for mid in [*stored, *(p[0] for p in parked)]:
                seq = self._by_msg.pop(mid, None)
                if seq is not None:
                    self._sent.pop(seq, None)
        return True

    def _publish_more(self) -> bool:
        if not self.link.connected.is_set():
            return False
        with self._lock:
            room = self.window - len(self._inflight)
        if room <= 0:
            return False
        rows = self.outbox.pending(self.store_id, self._cursor, limit=max(room, 1) * 2)
        now = time.monotonic()
        if not rows:
            with self._lock:
                stale = any(now - t >= self.resend_after_s for _, t in self._sent.values())
            if stale and self._cursor:
                self._cursor = 0  # rescan: re-send what the hub has not confirmed in time
            return False
        published: list[int] = []
        for row in rows:
            self._cursor = row.seq
            with self._lock:
                entry = self._sent.get(row.seq)
                if entry is not None and entry[0] == row.msg_id and now - entry[1] < self.resend_after_s:
                    continue
                if len(self._inflight) >= self.window:
                    self._cursor = row.seq - 1
                    break
            payload = row.payload[:-1] + b',"sent_at":"' + _now().encode() + b'"}'
            mid = self.link.publish(
                m.summary_topic(self.store_id), payload, qos=1, user_properties={"seq": str(row.seq)}
            )
            if mid is None:
                break
            with self._lock:
                self._sent[row.seq] = (row.msg_id, now)
                self._by_msg[row.msg_id] = row.seq
                early = self._early.pop(mid, None)
                if early is None:
                    self._inflight[mid] = row.seq
                elif early[0]:
                    self._acked.append(row.seq)
                else:
                    self._sent.pop(row.seq, None)
                    self._by_msg.pop(row.msg_id, None)
            published.append(row.seq)
        self.outbox.mark_sent(published)
        return bool(published)


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
    ) -> None:
        self.store = store
        self.outbox = Outbox(store, max_pending)
        self.settings = settings
        self.window = window
        self.resend_after_s = resend_after_s
        self.progress = progress
        self.syncs: dict[str, StoreSync] = {}
        self._deferred = 0

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
                    self.outbox, sid, self.settings, window=self.window, resend_after_s=self.resend_after_s
                )
                s.start()
                self.syncs[sid] = s

    def counts(self) -> SyncCounts:
        total = SyncCounts()
        for s in self.syncs.values():
            total.published += s.counts.published
            total.confirmed += s.counts.confirmed
            total.parked += s.counts.parked
        total.pending = self.outbox.counts()["pending"]
        return total

    def derive(self) -> None:
        rep = self.outbox.derive()
        self._deferred = rep.deferred
        if rep.days:
            self._say(
                f"summarised {rep.days} days: {rep.new} new, {rep.replaced} newer versions, "
                f"{rep.unchanged} unchanged summaries"
                + (f"; {rep.deferred} days wait (outbox full)" if rep.deferred else "")
            )

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
            self._ensure_syncs()
            targets = {sid: self.outbox.max_pending_seq(sid) for sid in self.syncs}
            total = sum(self.outbox.open_below(sid, q) for sid, q in targets.items())
            self._say(f"{total} summaries to send for {len(self.syncs)} store(s)")
            last_report = started
            while True:
                self._check_fatal()
                worked = False
                for s in self.syncs.values():
                    worked |= s.pump()
                left = {sid: self.outbox.open_below(sid, q) for sid, q in targets.items()}
                connected = all(s.link.connected.is_set() for s in self.syncs.values())
                if sum(left.values()) == 0 and connected:
                    if self._deferred:  # the outbox was full: summarise the days that waited
                        self.derive()
                        self._ensure_syncs()
                        targets = {sid: self.outbox.max_pending_seq(sid) for sid in self.syncs}
                        more = sum(self.outbox.open_below(sid, q) for sid, q in targets.items())
                        total += more
                        self._say(f"{more} more summaries to send")
                        continue
                    self._say(f"all {total} summaries confirmed by the hub")
                    return self.counts()
                now = time.monotonic()
                if now >= deadline:
                    never = [s for s in self.syncs.values() if not s.link.connected.is_set()]
                    if never:
                        raise never[0].link.unreachable(timeout)
                    raise BrokerUnreachable(
                        f"the hub has not confirmed {sum(left.values())} of {total} summaries within {timeout:g} s",
                        hint="they stay pending and are sent again next time; check that adamm-hub serve "
                        "is running against the same broker",
                    )
                if now - last_report >= 5:
                    last_report = now
                    self._say(f"{total - sum(left.values())} of {total} confirmed")
                if not worked:
                    time.sleep(0.02)
        finally:
            self.close()

    def forever(self, stop: threading.Event, interval_s: float) -> None:
        """Derive every ``interval_s`` and keep publishing until ``stop`` is set."""
        next_derive = 0.0
        try:
            while not stop.is_set():
                now = time.monotonic()
                if now >= next_derive:
                    self.derive()
                    self._ensure_syncs()
                    next_derive = now + interval_s
                self._check_fatal()
                worked = False
                for s in self.syncs.values():
                    worked |= s.pump()
                if not worked:
                    stop.wait(0.05)
        finally:
            self.close()

    def close(self) -> None:
        for s in self.syncs.values():
            s.close()
