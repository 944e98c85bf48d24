"""What the question parser returns: the plan, its status and how stored values were matched.

Owned by :mod:`edge.analysis.parser`; re-exported there. Produced by the rule parser
(:func:`edge.analysis.parser.parse_question`) and by :class:`edge.llm.LLMPlanParser`; read by
``adamm ask``, the engine and the hub.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class AttributeMatch:
    """A question word mapped to a stored attribute value.

    ``method`` is ``"exact"`` (the stored value itself), ``"synonym"`` (an everyday word for it,
    e.g. 收银台 -> checkout) or ``"similarity"`` (text-encoder cosine ``score``).
    """

    phrase: str
    key: str
    value: str
    method: str
    score: float


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
