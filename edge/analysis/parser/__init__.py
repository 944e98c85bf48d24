"""The question parser: a Chinese or English question becomes an analysis plan.

Public API (``adamm ask``, the hub, :mod:`edge.llm`): :func:`parse_question`, :class:`ParseResult`,
:class:`AttributeMatch`. The rules (:mod:`.core`) read the slots (:mod:`.slots`) and build the plan
in stages (``stage_*``), combined with the exemplar classifier (:mod:`.exemplars`). Pure: no I/O but
reading its own package data (``lexicon.toml``, ``timekinds.toml``, ``stages.toml``, the
exemplars) at import.
"""

from edge.analysis.parser.core import parse_question
from edge.analysis.parser.result import AttributeMatch, ParseResult

__all__ = ["AttributeMatch", "ParseResult", "parse_question"]
