"""Near-duplicate merging: repeated events of one source within a time window become one.

Two events merge when they come from the same source and have the same event_type, start within
``window_seconds`` of each other and their signature vectors have a cosine of at least
``cosine_threshold``. The more informative one is kept; the other's ``raw_ref`` entries are appended
to it (raw refs are never dropped), its time span widens to cover both, and
``stats.merged_events`` counts what it absorbed. Pure; called by the daemon's event writer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class Candidate:
    """An MEV dict waiting in the merge window, with its signature and informativeness."""

    event: dict[str, Any]
    ts: float
    end_ts: float
    vector: np.ndarray | None
    informativeness: float
    absorbed: list[dict[str, Any]] = field(default_factory=list)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0 or nb == 0 or a.shape != b.shape:
        return 0.0
    return float(np.dot(a, b) / (na * nb))


class Merger:
    """Holds each event until ``window_seconds`` of stream time after its end, merging duplicates
    (which start within the window) into it. Call :meth:`tick` as stream time advances."""

    def __init__(self, *, window_seconds: float, cosine_threshold: float, enabled: bool = True) -> None:
        self.window = window_seconds
        self.threshold = cosine_threshold
        self.enabled = enabled
        self.merges = 0
        self._pending: list[Candidate] = []

    def push(self, cand: Candidate) -> list[Candidate]:
        """Add one event; returns the events whose window has passed (ready to write)."""
        if not self.enabled or cand.vector is None:
            return [*self._release(cand.ts), cand] if self.enabled else [cand]
        for held in self._pending:
            if self._duplicate(held, cand):
                self._merge(held, cand)
                return self._release(cand.ts)
        self._pending.append(cand)
        return self._release(cand.ts)

    def tick(self, now: float) -> list[Candidate]:
        """Stream time moved on (a frame arrived): release what has waited long enough."""
        return self._release(now)

    def flush(self) -> list[Candidate]:
        out, self._pending = self._pending, []
        return out

    def _duplicate(self, a: Candidate, b: Candidate) -> bool:
        ea, eb = a.event, b.event
        return (
            ea.get("source") == eb.get("source")
            and ea.get("event_type") == eb.get("event_type")
            and abs(b.ts - a.ts) <= self.window
            and a.vector is not None
            and b.vector is not None
            and cosine(a.vector, b.vector) >= self.threshold
        )

    def _merge(self, held: Candidate, new: Candidate) -> None:
        keep, other = (held, new) if held.informativeness >= new.informativeness else (new, held)
        refs = list(keep.event["raw_ref"])
        refs += [r for r in other.event["raw_ref"] if r not in refs]
        ev = dict(keep.event)
        ev["raw_ref"] = refs
        stats = dict(ev.get("stats", {}))
        other_merged = other.event.get("stats", {}).get("merged_events", 0)
        stats["merged_events"] = int(stats.get("merged_events", 0)) + 1 + int(other_merged or 0)
        ev["stats"] = stats
        first = held if held.ts <= new.ts else new
        last = held if held.end_ts >= new.end_ts else new
        ev["timestamp"] = first.event["timestamp"]
        if last.event.get("end_timestamp"):
            ev["end_timestamp"] = last.event["end_timestamp"]
        start, end = first.ts, last.end_ts
        held.event = ev
        held.vector = keep.vector
        held.informativeness = keep.informativeness
        held.ts, held.end_ts = start, end
        held.absorbed.append(other.event)
        self.merges += 1

    def _release(self, now: float) -> list[Candidate]:
        # held until ``window`` stream seconds after its end: a duplicate can only start before that
        ready = [c for c in self._pending if now - c.end_ts > self.window]
        self._pending = [c for c in self._pending if now - c.end_ts <= self.window]
        return ready
