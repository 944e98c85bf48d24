"""The question parser: a Chinese or English question becomes an analysis plan.

Public API used by ``adamm ask``, the hub and :mod:`edge.llm`: :func:`parse_question`,
:class:`ParseResult`, :class:`AttributeMatch`. Modules: :mod:`.text` (normalisation, numerals,
masked matching), :mod:`.lexicon` (metric / dimension / value words), :mod:`.timeexpr` (time
expressions), :mod:`.intents` (intent cues, top-k), :mod:`.vocabmatch` (the store's own
vocabulary, text-encoder similarity), :mod:`.core` (assembly). Pure: no I/O.
"""

from edge.analysis.parser.core import parse_question
from edge.analysis.parser.result import AttributeMatch, ParseResult

__all__ = ["AttributeMatch", "ParseResult", "parse_question"]
