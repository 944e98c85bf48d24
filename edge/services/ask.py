"""The ask use case: a question (or a plan) into a payload (payload.schema.json).

One place wires the parser and the engine, so ``adamm ask``, the TUI, ``adamm demo`` and (later)
standing questions and the hub get the same answer to the same question:

- the parser: the rule parser with the memory's embedding matcher
  (:meth:`edge.memory.store.Store.embed_texts_cached`) at ``[analysis] similarity_threshold``, or,
  when ``[llm] enabled``, :class:`edge.llm.LLMPlanParser` with every ``[llm]`` setting, which falls
  back to that same rule parser on any failure;
- the source: the memory's event source; the engine: :mod:`edge.analysis.engine` with
  ``[analysis]``.

Asking changes nothing the memory knows (CONTRACT.md section 1: no facts, actions, procedures or
outcomes); only derived caches (hourly rollup, parser vocabulary, text vectors) are brought up to
date, and only when the memory is writable. Recording an answer's action is a separate, explicit
use case (:func:`edge.services.actions.propose_action`).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from edge.analysis import engine
from edge.analysis.parser import ParseResult
from edge.config import AdammConfig

if TYPE_CHECKING:
    from edge.memory.store import Store

Parser = Callable[..., ParseResult]


def build_parser(config: AdammConfig) -> Parser | None:
    """The question parser of ``config``: the LLM parser (all ``[llm]`` settings) when enabled,
    else None (the engine's rule parser). Both use the embedding matcher the engine passes in."""
    if not config.llm.enabled:
        return None
    from edge.llm import LLMPlanParser

    parse: Parser = LLMPlanParser(config.llm).parse
    return parse


class AskService:
    """Answers questions and plans from one open memory with one loaded config.

    ``config`` is the caller's loaded config (the edge config or the daemon's, which extends it);
    ``now`` anchors relative times (None: the clock at each ask)."""

    def __init__(self, store: Store, config: AdammConfig, *, now: datetime | None = None) -> None:
        self.store = store
        self.config = config
        self.now = now
        self.parser = build_parser(config)

    def ask(self, question: str) -> dict[str, Any]:
        """The payload answering ``question`` (zh or en)."""
        return engine.answer(
            question,
            self.store.event_source(),
            now=self.now,
            config=self.config.analysis,
            embed=self.store.embed_texts_cached,
            parser=self.parser,
        )

    def run_plan(self, plan: dict[str, Any], *, question: str = "") -> dict[str, Any]:
        """The payload of a plan (plan.schema.json) without parsing: standing questions, the hub.

        ``question`` is the text the payload reports (default: none)."""
        return engine.run_plan(
            plan,
            self.store.event_source(),
            question=question,
            now=self.now or datetime.now(UTC),
            config=self.config.analysis,
            language=str(plan.get("language") or "en"),
        )
