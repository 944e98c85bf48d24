"""The capture thread base: a named thread with a stop event and a bounded output queue.

Live sources never block on a full queue: the item is dropped and counted (capture must keep up
with the sensor). File sources (replay) wait for room instead, so a replay never loses data.
The end of a source is signalled downstream with :class:`EndOfStream`. Subclassed by
:mod:`edge.capture.video` and :mod:`edge.capture.audio`.
"""

from __future__ import annotations

import logging
import queue
import threading
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Checkpoint:
    """A position to save once the events queued before it are written (e.g. the POS tail offset):
    the writer flushes, then calls the sink's ``save_setting(key, value)`` if it has one."""

    key: str
    value: str


@dataclass(frozen=True)
class EndOfStream:
    """Put on the output queue once when a source ends (file EOF, stop, fatal error)."""

    source: str
    reason: str


class CaptureSource(threading.Thread):
    """Base of every capture thread. Subclasses implement :meth:`capture`."""

    kind = "capture"

    def __init__(self, source_id: str, out: queue.Queue[Any], stop: threading.Event, *, live: bool) -> None:
        super().__init__(name=f"capture:{source_id}", daemon=True)
        self.source_id = source_id
        self.out = out
        self.stop_event = stop
        self.live = live
        self.state = "starting"
        self.last_error: str | None = None
        self.emitted = 0
        self.dropped = 0
        self.reconnects = 0

    def run(self) -> None:
        reason = "stopped"
        try:
            reason = self.capture()
        except Exception as exc:  # a source failing must not take the daemon down
            self.state = "error"
            self.last_error = str(exc)
            reason = "error"
            logger.exception("capture %s failed", self.source_id)
        finally:
            if self.state != "error":
                self.state = "ended"
            self._put_final(EndOfStream(self.source_id, reason))

    def capture(self) -> str:
        """Produce items with :meth:`emit` until the source ends or stop is set; return why it ended."""
        raise NotImplementedError

    def emit(self, item: Any) -> bool:
        """Hand ``item`` downstream. Live: drop and count when the queue is full. File: wait."""
        if self.live:
            try:
                self.out.put_nowait(item)
            except queue.Full:
                self.dropped += 1
                if self.dropped == 1 or self.dropped % 100 == 0:
                    logger.warning(
                        "%s: downstream is behind, %d items dropped so far", self.source_id, self.dropped
                    )
                return False
            self.emitted += 1
            return True
        while not self.stop_event.is_set():
            try:
                self.out.put(item, timeout=0.2)
            except queue.Full:
                continue
            self.emitted += 1
            return True
        self.dropped += 1
        return False

    def _put_final(self, item: EndOfStream) -> None:
        # the end marker must arrive even when the queue is full: wait a little, then make room
        try:
            self.out.put(item, timeout=2.0)
            return
        except queue.Full:
            pass
        try:
            self.out.get_nowait()
            self.dropped += 1
        except queue.Empty:
            pass
        try:
            self.out.put_nowait(item)
        except queue.Full:
            logger.error("%s: could not deliver the end-of-stream marker", self.source_id)

    def status(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "emitted": self.emitted,
            "dropped": self.dropped,
            "reconnects": self.reconnects,
            "last_error": self.last_error,
            "queue": self.out.qsize(),
        }
