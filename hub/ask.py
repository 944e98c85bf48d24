"""``adamm-hub ask``: a cross-store question answered by the pure engine over the hub's rollups.

:func:`ask` opens the hub store (reading only), builds a :class:`hub.source.HubSource` and calls
:func:`edge.analysis.engine.answer`, the same engine, operators and honesty rules as ``adamm ask``
on a store; the payload is the same (payload.schema.json).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from edge.analysis.engine import answer
from edge.config.hub import HubConfig
from edge.errors import UsageError
from hub.db import open_hub
from hub.source import HubSource


def parse_now(text: str | None) -> datetime | None:
    """``--now`` as a datetime (naive: the wall clock of the stores' default zone)."""
    if text is None:
        return None
    t = text.strip()
    if t.endswith(("Z", "z")):
        t = t[:-1] + "+00:00"
    try:
        now = datetime.fromisoformat(t)
    except ValueError:
        raise UsageError(
            f"--now {text!r} is not an ISO 8601 time", hint="e.g. 2025-12-01T09:00:00+08:00"
        ) from None
    if not 1900 <= now.year <= 9000:
        raise UsageError(f"--now {text!r}: give a year between 1900 and 9000")
    return now


def ask(
    target: str, question: str, *, now: datetime | None = None, config: HubConfig | None = None
) -> dict[str, Any]:
    """The payload answering ``question`` from the hub store at ``target``."""
    if not question.strip():
        raise UsageError("the question is empty")
    cfg = config or HubConfig()
    db = open_hub(target)
    try:
        return answer(question, HubSource(db), now=now, config=cfg.analysis)
    finally:
        db.close()
