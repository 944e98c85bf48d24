"""The memory's own labels for the kinds of value the engine reasons about (rain, clear skies...).

A store names its weather, zones and flags as it likes (``rain``, ``rainy``, ``雨``, ``clear``,
``晴``...). Code that needs a kind of value (the facts step's standing questions, the parser's
baseline weather, an action rule about rainy days) asks here for the values of a kind that the
memory's vocabulary holds, instead of writing one store's label. The kinds and their words are
:data:`~edge.analysis.parser.lexicon.VALUE_WORDS` (a kind is named by the first token of its
group: ``rain``, ``sunny``, ``cloudy``, ``snow``...), matched as the parser matches a question's
words to stored values: a stored value is of a kind when it, or one of its ``_``/``-``/space
separated parts, is one of the kind's tokens.

Pure: no I/O. Used by :mod:`edge.services.facts`, :mod:`edge.analysis.parser.stage_fields` and
:mod:`edge.analysis.actions`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from edge.analysis.parser.lexicon import VALUE_WORDS

#: the kind of weather a comparison of "rainy days" is about, and its usual baseline
RAIN = "rain"
CLEAR = "sunny"


def _tokens(key: str, kind: str) -> tuple[str, ...]:
    for _pattern, tokens in VALUE_WORDS.get(key, ()):
        if tokens and tokens[0] == kind:
            return tokens
    return ()


def is_kind(key: str, kind: str, value: object) -> bool:
    """True when the stored ``value`` of stats key ``key`` is of ``kind`` (module docstring)."""
    if not isinstance(value, str) or not value:
        return False
    tokens = _tokens(key, kind)
    low = value.lower()
    return low in tokens or any(p in tokens for p in re.split(r"[_\- ]", low))


def values_of(key: str, kind: str, known: Iterable[object]) -> list[str]:
    """The values of ``known`` (a vocabulary's values of ``key``, most frequent first) that are of
    ``kind``, in that order."""
    return [str(v) for v in known if is_kind(key, kind, v)]


def kind_of(key: str, value: object) -> str | None:
    """The kind of a stored value (``None`` when no kind's words name it)."""
    for _pattern, tokens in VALUE_WORDS.get(key, ()):
        if tokens and is_kind(key, tokens[0], value):
            return tokens[0]
    return None


def baseline(key: str, subject: str, known: Iterable[object], kind: str = CLEAR) -> str | None:
    """The value to compare ``subject`` against: the most frequent known value of ``kind`` (not
    of the subject's own kind), else the most frequent value of another kind than the subject's,
    else ``None``."""
    others = [str(v) for v in known if isinstance(v, str) and v and v != subject]
    own = kind_of(key, subject)
    if own is not None:
        others = [v for v in others if kind_of(key, v) != own]
    if own != kind:
        preferred = values_of(key, kind, others)
        if preferred:
            return preferred[0]
    return others[0] if others else None
