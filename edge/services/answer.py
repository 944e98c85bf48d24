"""The ask use case's core, over any source: a question or a plan into a payload.

:class:`SourceAsk` wires the parser (the rule parser with an optional embedding matcher, or the
LLM parser with every ``[llm]`` setting: :func:`build_parser`) and the engine
(:mod:`edge.analysis.engine` with ``[analysis]``) over one :class:`~edge.analysis.source.EventSource`.
It knows no store: the store's :class:`edge.services.ask.AskService` builds on it (with the
memory's embedding matcher and its tiers), and the hub uses it over its rollups
(``hub.ask``), so both answer the same question the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np

from edge.analysis import engine
from edge.analysis.parser import ParseResult
from edge.analysis.source import EventSource
from edge.config import AdammConfig

Parser = Callable[..., ParseResult]
Embed = Callable[[Sequence[str]], "np.ndarray | None"]


def build_parser(config: AdammConfig) -> Parser | None:
    """The question parser of ``config``: the LLM parser (all ``[llm]`` settings) when enabled,
    else None (the engine's rule parser). Both use the embedding matcher the engine passes in."""
    if not config.llm.enabled:
        return None
    from edge.llm import LLMPlanParser

    parse: Parser = LLMPlanParser(config.llm).parse
    return parse


class SourceAsk:
    """Answers questions and plans from ``source()`` (called at each ask: a source may hold a
    connection) with one loaded config; ``now`` anchors relative times (None: the clock)."""

    def __init__(
        self,
        source: Callable[[], EventSource],
        config: AdammConfig,
        *,
        now: datetime | None = None,
        embed: Embed | None = None,
    ) -> None:
        self.source = source
        self.config = config
        self.now = now
        self.embed = embed
        self.parser = build_parser(config)

    def ask(self, question: str, language: str | None = None) -> dict[str, Any]:
        """The payload answering ``question`` (zh or en), in ``language`` (None: the question's)."""
        now = self.now or datetime.now(UTC)
        payload = engine.answer(
            question,
            self.source(),
            now=now,
            config=self.config.analysis,
            embed=self.embed,
            parser=self.parser,
            language=language,
        )
        return self.finish(payload, now)

    def run_plan(self, plan: dict[str, Any], *, question: str = "", cite: bool = True) -> dict[str, Any]:
        """The payload of a plan (plan.schema.json) without parsing: standing questions, the hub.

        ``question`` is the text the payload reports (default: none); ``cite`` False: no evidence
        sampled (:func:`edge.analysis.engine.run_plan`)."""
        now = self.now or datetime.now(UTC)
        payload = engine.run_plan(
            plan,
            self.source(),
            question=question,
            now=now,
            config=self.config.analysis,
            language=str(plan.get("language") or "en"),
            cite=cite,
        )
        return self.finish(payload, now)

    def finish(self, payload: dict[str, Any], now: datetime) -> dict[str, Any]:
        """What a subclass adds to every payload (nothing here)."""
        return payload
