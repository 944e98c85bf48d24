"""Question text helpers for the rule parser: normalisation, masked matching, numerals.

Owned by :mod:`edge.analysis.parser`; every other parser module reads the question through a
:class:`MaskedText`, so a span one stage has understood (a date, a metric word, an id) is not read
again by a later stage.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")

#: Written-out numbers that count things (前五, 三个月, two weeks).
CN_NUM = r"[0-9]+|[零〇一二两三四五六七八九十百千万]+"
EN_NUM = (
    r"[0-9]+|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
    r"thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|fifty|hundred"
)
_EN_WORDS = dict(
    zip(
        "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen twenty".split(),
        range(1, 21),
        strict=True,
    )
) | {"a": 1, "an": 1, "thirty": 30, "fifty": 50, "hundred": 100}
_CN_DIGITS = {c: n for n, c in enumerate("零一二三四五六七八九")} | {"〇": 0, "两": 2}
_CN_UNITS = {"十": 10, "百": 100, "千": 1000}


def normalize(question: str) -> str:
    """NFKC (full-width digits and punctuation become ASCII), lower case, single spaces."""
    text = unicodedata.normalize("NFKC", question)
    text = "".join(c.lower() if len(c.lower()) == 1 else c for c in text)
    return re.sub(r"\s+", " ", text).strip()


def has_cjk(text: str) -> bool:
    return bool(_CJK.search(text))


def parse_number(token: str) -> int | None:
    """``"5"``, ``"五"``, ``"十二"``, ``"二十"``, ``"一百"``, ``"two"`` -> int; None if unreadable."""
    t = token.strip().lower()
    if t.isdigit():
        return int(t)
    if t in _EN_WORDS:
        return _EN_WORDS[t]
    total = 0  # what the finished sections (above 万) add up to
    section = 0  # the part below 万 read so far
    current = 0
    seen = False
    for ch in t:
        if ch in _CN_DIGITS:
            current = _CN_DIGITS[ch]
            seen = True
        elif ch in _CN_UNITS:
            section += (current or 1) * _CN_UNITS[ch]
            current = 0
            seen = True
        elif ch == "万":
            total += (section + current or 1) * 10000
            section = current = 0
            seen = True
        else:
            return None
    return total + section + current if seen else None


def word(pattern: str) -> str:
    """``pattern`` bounded so that it does not match inside a longer Latin word or id."""
    return rf"(?<![a-z0-9_])(?:{pattern})(?![a-z0-9_])"


@dataclass
class Hit:
    """One understood span of the normalised question."""

    start: int
    end: int
    value: object
    text: str

    @property
    def length(self) -> int:
        return self.end - self.start


class MaskedText:
    """The normalised question with the spans already understood blanked out."""

    BLANK = "\u0000"

    def __init__(self, text: str) -> None:
        self.text = text
        self._chars = list(text)

    @property
    def view(self) -> str:
        """The text with consumed characters replaced by NUL (no pattern matches across them)."""
        return "".join(self._chars)

    def copy(self) -> MaskedText:
        """An independent copy with the same spans consumed."""
        other = MaskedText(self.text)
        other._chars = list(self._chars)
        return other

    def consume(self, start: int, end: int) -> None:
        for i in range(start, end):
            self._chars[i] = self.BLANK

    def free(self, start: int, end: int) -> bool:
        return all(c != self.BLANK for c in self._chars[start:end])

    def find(self, table: Iterable[tuple[re.Pattern[str], object]], *, consume: bool = True) -> list[Hit]:
        """Longest-first, non-overlapping matches of every ``(pattern, value)`` of ``table``,
        returned in question order. A dict ``value`` maps the matched text to the hit's value."""
        view = self.view
        found: list[Hit] = []
        for pattern, value in table:
            for m in pattern.finditer(view):
                if m.end() > m.start():
                    v = value.get(m.group(0)) if isinstance(value, dict) else value
                    if v is not None:
                        found.append(Hit(m.start(), m.end(), v, m.group(0)))
        found.sort(key=lambda h: (-h.length, h.start))
        taken: list[Hit] = []
        for h in found:
            if all(h.end <= t.start or h.start >= t.end for t in taken):
                taken.append(h)
        if consume:
            for h in taken:
                self.consume(h.start, h.end)
        return sorted(taken, key=lambda h: h.start)

    def runs(self) -> list[tuple[int, str]]:
        """The unconsumed stretches of text as ``(start, text)``."""
        out = []
        for m in re.finditer(r"[^\u0000]+", self.view):
            out.append((m.start(), m.group(0)))
        return out


_WORD_HEAD = r"(?<![a-z0-9_])(?:"
_WORD_TAIL = r")(?![a-z0-9_])"


def alternatives(pattern: str) -> list[str]:
    """The top-level alternatives of ``pattern`` (a :func:`word`-bounded group's own
    alternatives, each bounded again), so that a table finds the longest of them at a place,
    not the first one written: 平均停留多长时间 is read whole, not as 平均停留."""
    out: list[str] = []
    for part in _scan(pattern)[0]:
        inner = part[len(_WORD_HEAD) : -len(_WORD_TAIL)]
        if part.startswith(_WORD_HEAD) and part.endswith(_WORD_TAIL) and _scan(inner)[1]:
            out += [word(a) for a in alternatives(inner)]
        else:
            out.append(part)
    return out


def _scan(pattern: str) -> tuple[list[str], bool]:
    """``pattern`` cut at its top-level ``|``, and whether its groups and classes all close inside
    it (read, not compiled: compiling each word group to check it was a sixth of the lexicon's load)."""
    parts: list[str] = []
    depth = lowest = 0
    in_class = False
    start = 0
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":  # a "]" first in a class ("[]x]", "[^]x]") is one of its characters
            in_class = True
            i += 2 if pattern.startswith("^]", i + 1) else 1 if pattern.startswith("]", i + 1) else 0
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            lowest = min(lowest, depth)
        elif c == "|" and depth == 0:
            parts.append(pattern[start:i])
            start = i + 1
        i += 1
    parts.append(pattern[start:])
    return parts, depth == lowest == 0 and not in_class


def compile_table(rows: Iterable[tuple[str, object]]) -> list[tuple[re.Pattern[str], object]]:
    """``(pattern, value)`` rows compiled, one row per alternative (see :func:`alternatives`)."""
    return [(re.compile(a), v) for p, v in rows for a in alternatives(p) if a]
