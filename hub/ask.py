"""``adamm-hub ask``: a cross-store question answered by the pure engine over the hub's rollups.

:func:`ask` opens the hub store (reading only), builds a :class:`hub.source.HubSource` and calls
:class:`edge.services.answer.SourceAsk` (the ask use case's core: parser with every ``[llm]`` setting, engine with ``[analysis]``), the same engine, operators and honesty rules as ``adamm ask``
on a store; the payload is the same (payload.schema.json).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from edge.config.hub import HubConfig
from edge.errors import UsageError
from edge.services.answer import SourceAsk
from hub.db import open_hub
from hub.source import HubSource


def ask(
    target: str,
    question: str,
    *,
    now: datetime | None = None,
    config: HubConfig | None = None,
    language: str | None = None,
) -> dict[str, Any]:
    """The payload answering ``question`` from the hub store at ``target``, in ``language``
    (None: the question's)."""
    if not question.strip():
        raise UsageError("the question is empty")
    cfg = config or HubConfig()
    db = open_hub(target)
    try:
        source = HubSource(db)
        return SourceAsk(lambda: source, cfg, now=now).ask(question, language)
    finally:
        db.close()
