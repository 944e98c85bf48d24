"""The question parser: a Chinese or English question becomes an analysis plan.

Public API used by ``adamm ask``, the hub and :mod:`edge.llm`: :func:`parse_question`,
:class:`ParseResult`, :class:`AttributeMatch`. Modules: :mod:`.text` (normalisation, numerals,
masked matching), :mod:`.spelling` (English slips of typing), :mod:`.lexicon` (the word tables of
``lexicon.toml``: metric / dimension / value words, intent cues, function words), :mod:`.timekinds` (time expressions, kind by
kind, on the calendar of :mod:`.timecal`), :mod:`.intents`
(intent cues, top-k), :mod:`.vocabmatch` (the store's own vocabulary, text-encoder similarity),
:mod:`.extractors` (the slot extractors, behind the contract of :mod:`.extraction`), :mod:`.slots`
(what the question says), the plan's stages :mod:`.stage_intent`, :mod:`.stage_measure`,
:mod:`.stage_fields`, :mod:`.stage_filters`, :mod:`.stage_words` (with :mod:`.pairs`,
:mod:`.valuekeys`, :mod:`.accounting`, :mod:`.refusal`), :mod:`.exemplars` (the intent
classifier) and :mod:`.core` (the rules and the classifier combined). Pure: no I/O but
reading its own package data at import.
"""

from edge.analysis.parser.core import parse_question
from edge.analysis.parser.result import AttributeMatch, ParseResult

__all__ = ["AttributeMatch", "ParseResult", "parse_question"]
