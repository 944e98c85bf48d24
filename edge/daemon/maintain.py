"""The daemon's maintain schedule: :func:`edge.services.maintain.maintain` nightly (``[tiers]``).

:class:`MaintainScheduler` is a thread that sleeps until the next run time (``maintain_at``,
store-local, then every ``maintain_every_hours``), runs the maintain use case on the daemon's
store and keeps what the last run did. Its :meth:`~MaintainScheduler.status` is the ``maintain``
component row the heartbeat writes (the TUI's Status tab and ``components`` show it): state
(``waiting``, ``running``, ``failed``, ``stopped``), the last run (when, how long, what moved), the
next run, and the events and bytes of each tier. A failed run is logged and retried at the next
scheduled time; a run interrupted by a stop is finished by the next one (the steps are resumable).

Started and stopped by :class:`edge.daemon.app.AdammDaemon`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from edge.config import AdammConfig

logger = logging.getLogger(__name__)


def next_run(after: datetime, at: str, every_hours: float, tz: str) -> datetime:
    """The first scheduled time strictly after ``after``: ``at`` (HH:MM, local to ``tz``) on
    ``after``'s local day, then every ``every_hours`` hours."""
    zone = ZoneInfo(tz)
    local = after.astimezone(zone)
    hh, mm = (int(x) for x in at.split(":"))
    t = datetime(local.year, local.month, local.day, hh, mm, tzinfo=zone) - timedelta(days=1)
    step = timedelta(hours=every_hours)
    while t <= after:
        t += step
    return t.astimezone(UTC)


class MaintainScheduler(threading.Thread):
    """Runs maintain on ``store`` at the scheduled times until ``stop`` is set."""

    def __init__(
        self,
        store: Any,
        config: AdammConfig,
        stop: threading.Event,
        *,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        super().__init__(name="maintain", daemon=True)
        self.store = store
        self.config = config
        self.stop_event = stop
        self.clock = clock or (lambda: datetime.now(UTC))
        self.state = "waiting"
        self.runs = 0
        self.failures = 0
        self.last: dict[str, Any] | None = None
        self.last_error: str | None = None
        self._lock = threading.Lock()
        self.next_at = self._next(self.clock())

    def _next(self, after: datetime) -> datetime:
        cfg = self.config.tiers
        return next_run(after, cfg.maintain_at, cfg.maintain_every_hours, self.store.timezone())

    def run(self) -> None:
        while not self.stop_event.is_set():
            wait = (self.next_at - self.clock()).total_seconds()
            if wait > 0 and self.stop_event.wait(min(wait, 60.0)):
                break
            if self.clock() >= self.next_at:
                self.run_once()
                self.next_at = self._next(self.clock())
        with self._lock:
            self.state = "stopped"

    def run_once(self) -> dict[str, Any] | None:
        """One maintain run now (also what the schedule calls); None when it failed."""
        from edge.services.maintain import maintain

        with self._lock:
            self.state = "running"
        try:
            report = maintain(self.store, self.config, self.clock())
        except Exception as exc:  # a failed run must not stop the daemon: retried next time
            logger.exception("maintain failed; it runs again at the next scheduled time")
            with self._lock:
                self.failures += 1
                self.last_error = f"{type(exc).__name__}: {exc}"
                self.state = "failed"
            return None
        with self._lock:
            self.runs += 1
            self.last = report
            self.last_error = None
            self.state = "waiting"
        return report

    def status(self) -> dict[str, Any]:
        """The ``maintain`` component's state and detail."""
        with self._lock:
            out: dict[str, Any] = {
                "state": self.state,
                "runs": self.runs,
                "failures": self.failures,
                "next_run": self.next_at.isoformat(),
            }
            if self.last_error:
                out["last_error"] = self.last_error
            last = self.last
        if last is not None:
            tiers = last.get("tiers", {})
            out["last_run"] = {
                "started_at": last.get("started_at"),
                "finished_at": last.get("finished_at"),
                "elapsed_s": last.get("elapsed_s"),
                "to_warm": tiers.get("warm", {}).get("events", 0),
                "to_cold": tiers.get("cold", {}).get("events", 0),
                "media_missing": tiers.get("warm", {}).get("media_missing", 0),
            }
        out["tiers"] = self.tier_sizes()
        return out

    def tier_sizes(self) -> dict[str, Any]:
        """Events per tier and bytes of the database and the archive (read now)."""
        from edge.memory.tiers import tier_sizes
        from edge.memory.tiers.steps import Places

        places = Places.of(self.store.path, self.config.tiers)
        try:
            with self.store.read() as conn:
                sizes = tier_sizes(conn, places.db, places.archive)
        except Exception as exc:  # the status must not fail the heartbeat
            logger.debug("tier sizes unavailable: %s", exc)
            return {}
        return {
            "events": sizes.events,
            "db_bytes": sizes.db_bytes,
            "archive_bytes": sizes.archive_bytes,
            "archive_files": sizes.archive_files,
            "last_run": sizes.last_run,
        }
