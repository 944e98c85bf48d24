"""What the question parser returns (re-exported by :mod:`edge.analysis.parser`): the plan, its
status and how stored values were matched; also produced by :class:`edge.llm.LLMPlanParser`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class AttributeMatch:
    """A question word mapped to a stored attribute value: ``method`` ``"exact"`` (the value itself),
    ``"synonym"`` (an everyday word for it: 收银台 -> checkout) or ``"similarity"`` (text-encoder
    cosine ``score``). A phrase naming values of several keys (a zone and a category both "premium")
    keeps the others in ``set_aside``, and in ``by_events`` the measure's event types that carry
    ``key`` and not them: how the word was resolved, said in the answer's ``interpretation``."""

    phrase: str
    key: str
    value: str
    method: str
    score: float
    set_aside: tuple[str, ...] = ()
    by_events: tuple[str, ...] = ()


@dataclass(frozen=True)
class ParseResult:
    """``plan`` is valid under plan.schema.json (``{}`` when ``status`` is ``"unsupported"``)."""

    plan: dict[str, Any]
    status: str  # "ok" | "unsupported"
    explanation: str | None  # for unsupported: short reason in the question's language
    language: str  # "zh" | "en"
    matches: tuple[AttributeMatch, ...] = ()
    backend: str = "rules"  # "rules" | "llm"
    #: words of the question the plan does not use (never empty with ``status == "ok"``); the
    #: ``plan`` is then the reading that was not answered, kept so the answer can say what it read
    not_understood: tuple[str, ...] = ()
    #: words read as others, (as typed, as read), said with the answer: slips of typing
    #: (:mod:`.spelling`) and a word of recent time read as the default span (最近: the last 4 weeks)
    read_as: tuple[tuple[str, str], ...] = ()
    #: clauses about the asking, not the data ("my boss wants to know"): not computed, said with
    #: the answer (:func:`.accounting.residual`)
    set_aside: tuple[str, ...] = ()
