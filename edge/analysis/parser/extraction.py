"""The contract of the parser's slot extractors (:mod:`.slots`, :mod:`.timekinds`), checked by
``tests/test_parser_extractors.py``: an extractor only blanks free characters of the question, claims
nothing (an empty slot) of a question claimed whole, and gives the same slot for the same question.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, is_dataclass
from datetime import datetime
from typing import Any

from edge.analysis.parser.text import MaskedText
from edge.analysis.parser.vocabmatch import Embed
from edge.analysis.source import Vocabulary


@dataclass(frozen=True)
class Context:
    """What an extractor may know besides the question: the memory's words, the clock, the text
    encoder (None: the rules alone) and its similarity threshold."""

    vocab: Vocabulary
    now: datetime
    embed: Embed | None = None
    similarity_threshold: float = 0.55


@dataclass(frozen=True)
class Extractor:
    """One kind of slot (``slot`` says what it holds), which ``read(mt, ctx)`` claims and returns."""

    name: str
    slot: str
    read: Callable[[MaskedText, Context], Any]

    def extract(self, mt: MaskedText, ctx: Context) -> Any:
        """Claim this kind's spans of ``mt`` (consume them) and return the slot."""
        return self.read(mt, ctx)

    @staticmethod
    def is_empty(slot: Any) -> bool:
        """True when the slot holds nothing (the contract test's "claims nothing")."""
        if isinstance(slot, tuple):
            return all(Extractor.is_empty(s) for s in slot)
        if is_dataclass(slot) and not isinstance(slot, type):
            return all(Extractor.is_empty(getattr(slot, f.name)) for f in fields(slot))
        return not isinstance(slot, (int, float, str, bool)) and not slot  # a number, text or flag is a slot


#: the name the extractors are built by (:mod:`.slots`, :mod:`.timekinds`)
Reader = Extractor
