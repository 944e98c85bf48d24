"""The contract of the parser's slot extractors: what one may know besides the question
(:class:`Context`) and what it does (:class:`Extractor`).

Owned by :mod:`edge.analysis.parser`; the question's extractors (:mod:`.extractors`) and the kinds
of time mention (:mod:`.timekinds`) are built on it, each family in its own ordered registry. The
contract, checked for each of them by ``tests/test_parser_extractors.py``:

- it only claims: characters it consumes become blank, none comes back, nothing else changes;
- it claims only text that was free when it ran, inside the question;
- on a question with everything already claimed it claims nothing and returns an empty slot;
- the same question gives the same slot.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar

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


class Extractor(ABC):
    """One kind of slot: claims its spans of ``mt`` and returns them as its slot value."""

    name: ClassVar[str]
    #: what the slot holds (for the docs and the contract test's empty check)
    slot: ClassVar[str]

    @abstractmethod
    def extract(self, mt: MaskedText, ctx: Context) -> Any:
        """Claim this kind's spans of ``mt`` (consume them) and return the slot."""

    @staticmethod
    def is_empty(slot: Any) -> bool:
        """True when the slot holds nothing (the contract test's "claims nothing")."""
        if isinstance(slot, tuple):
            return all(Extractor.is_empty(s) for s in slot)
        if dataclasses.is_dataclass(slot) and not isinstance(slot, type):
            return all(Extractor.is_empty(getattr(slot, f.name)) for f in dataclasses.fields(slot))
        return not isinstance(slot, (int, float, str, bool)) and not slot  # a number, text or flag is a slot
