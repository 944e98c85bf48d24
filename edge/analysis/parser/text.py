"""Question text helpers for the rule parser: normalisation, numerals, masked matching.

Every parser module reads the question through a :class:`MaskedText`, so a span one stage has
understood (a date, a metric word, an id) is not read again by a later stage.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

CJK = r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]"
_CJK = re.compile(CJK)

#: Written-out numbers that count things (前五, 三个月, two weeks).
CN_NUM = r"[0-9]+|[零〇一二两俩三四五六七八九十百千万]+"
EN_NUM = (
    r"[0-9]+|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
    r"thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|fifty|hundred"
)
#: EN_NUM's words: one to twenty in order, then the others
_EN_WORDS = dict(zip(EN_NUM.split("|")[2:22], range(1, 21), strict=True))
_EN_WORDS |= {"a": 1, "an": 1, "thirty": 30, "fifty": 50, "hundred": 100}
_CN_DIGITS = {c: n for n, c in enumerate("零一二三四五六七八九")} | {"〇": 0, "两": 2, "俩": 2}
_CN_UNITS = {"十": 10, "百": 100, "千": 1000}
#: German letters as a keyboard without them writes them (Getränke, getraenke: one word)
FOLD = str.maketrans({"ä": "ae", "ö": "oe", "ü": "ue", "ß": "ss"})


def normalize(question: str) -> str:
    """NFKC (full-width digits and punctuation become ASCII), lower case (ä folded: ae), single spaces."""
    text = unicodedata.normalize("NFKC", question)
    text = "".join(c.lower() if len(c.lower()) == 1 else c for c in text).translate(FOLD)
    return re.sub(r"\s+", " ", text).strip()


def has_cjk(text: str) -> bool:
    return bool(_CJK.search(text))


def parse_number(token: str) -> int | None:
    """``"5"``, ``"五"``, ``"十二"``, ``"二十"``, ``"一百"``, ``"two"`` -> int; None if unreadable."""
    t = token.strip().lower()
    if t.isdigit():
        return int(t)
    if t in _EN_WORDS or not t:
        return _EN_WORDS.get(t)
    total = section = current = 0  # the sections above 万, the part below 万, the last digit
    for ch in t:
        if ch in _CN_DIGITS:
            current = _CN_DIGITS[ch]
        elif ch in _CN_UNITS:
            section += (current or 1) * _CN_UNITS[ch]
            current = 0
        elif ch == "万":
            total += (section + current or 1) * 10000
            section = current = 0
        else:
            return None
    return total + section + current


def overlaps(text: str, w: str, start: int, end: int) -> Iterator[int]:
    """Where ``w`` occurs in ``text`` overlapping ``text[start:end]``."""
    i = text.find(w, max(0, start - len(w) + 1))
    while 0 <= i < end:
        yield i
        i = text.find(w, i + 1)


_WORD_HEAD = r"(?<![a-z0-9_])(?:"
_WORD_TAIL = r")(?![a-z0-9_])"


def word(pattern: str) -> str:
    """``pattern`` bounded so that it does not match inside a longer Latin word or id."""
    return _WORD_HEAD + pattern + _WORD_TAIL


@dataclass
class Hit:
    """One understood span of the normalised question."""

    start: int
    end: int
    value: object
    text: str


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
        other = MaskedText(self.text)
        other._chars = list(self._chars)
        return other

    def consume(self, start: int, end: int) -> None:
        self._chars[start:end] = self.BLANK * len(self._chars[start:end])  # never past the text's end

    def free(self, start: int, end: int) -> bool:
        return self.BLANK not in self._chars[start:end]

    def find(self, table: Iterable[tuple[Matcher, object]], *, consume: bool = True) -> list[Hit]:
        """Longest-first, non-overlapping matches of every ``(pattern, value)`` of ``table``, in
        question order (a dict ``value`` maps the matched text to the hit's value); each is claimed
        less its wildcard stretches (:func:`gaps`: "spend on toys per basket" claims "spend" and
        "per basket", never "toys")."""
        view = self.view
        found: list[tuple[Hit, re.Pattern[str]]] = []
        for p, value in table:
            regex = p.regex if isinstance(p, Words) else p
            spans = p.spans(view) if isinstance(p, Words) else (m.span() for m in p.finditer(view))
            for start, end in spans:
                if end > start:
                    text = view[start:end]
                    v = value.get(text) if isinstance(value, dict) else value
                    if v is not None:
                        found.append((Hit(start, end, v, text), regex))
        found.sort(key=lambda hp: (hp[0].start - hp[0].end, hp[0].start))
        taken: list[Hit] = []
        for h, regex in found:
            if all(h.end <= t.start or h.start >= t.end for t in taken):
                taken.append(h)
                if consume:
                    self.consume(h.start, h.end)
                    for a, b in gaps(regex, view, h.start, h.end):
                        self._chars[a:b] = view[a:b]
        return sorted(taken, key=lambda h: h.start)


def alternatives(pattern: str) -> list[str]:
    """The top-level alternatives of ``pattern`` (a :func:`word`-bounded group's, each bounded
    again), so that a table finds the longest at a place: 平均停留多长时间, not 平均停留."""
    out: list[str] = []
    for part in _scan(pattern)[0]:
        inner = part[len(_WORD_HEAD) : -len(_WORD_TAIL)]
        if part.startswith(_WORD_HEAD) and part.endswith(_WORD_TAIL) and _scan(inner)[1]:
            out += [word(a) for a in alternatives(inner)]
        else:
            out.append(part)
    return out


#: a pattern's pieces: an escape, a class (a "]" first in it is one of its characters; one left
#: open runs to the end), a group's opening, its closing, a bar, a repeat, plain characters, other
_TOKEN = re.compile(
    r"(?P<esc>\\.)|(?P<cls>\[\^?\]?(?:\\.|[^\]\\])*\])|(?P<open>\[.*)"
    r"|(?P<group>\((?:\?(?::|=|!|<=|<!))?)|(?P<close>\))|(?P<bar>\|)"
    r"|(?P<repeat>(?:[?*+]|\{(?:[0-9]+|[0-9]*,[0-9]*)\})[?+]?)|(?P<plain>[^\\\[\](){}|?*+.^$]+)|(?P<other>.)",
    re.S,
)
Token = tuple[str, str, int]


def _tokens(pattern: str) -> list[Token]:
    """``(kind, text, start)`` of each piece of ``pattern`` (kinds: the groups of :data:`_TOKEN`)."""
    return [(str(m.lastgroup), m.group(), m.start()) for m in _TOKEN.finditer(pattern)]


def _scan(pattern: str) -> tuple[list[str], bool]:
    """``pattern`` cut at its top-level ``|``, and whether its groups and classes all close inside
    it (read, not compiled: compiling was a sixth of the lexicon's load)."""
    parts: list[str] = []
    depth = lowest = start = 0
    for kind, _, at in _tokens(pattern):
        if kind == "group":
            depth += 1
        elif kind == "close":
            depth -= 1
            lowest = min(lowest, depth)
        elif kind == "bar" and depth == 0:
            parts.append(pattern[start:at])
            start = at + 1
        elif kind == "open":
            lowest = -1  # a class never closed
    parts.append(pattern[start:])
    return parts, depth == lowest == 0


class Words:
    """One alternative of a word table, matched as its regex ``pattern`` would be, faster: it is
    compiled and searched only when the text holds one of its :func:`needs` (searching the lexicon's
    500 alternatives with :mod:`re` was most of the time a question took to parse)."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._needs = needs(pattern)

    @functools.cached_property
    def regex(self) -> re.Pattern[str]:
        """``pattern`` compiled (on first use)."""
        return re.compile(self.pattern)

    def held(self, text: str) -> bool:
        """Whether ``text`` holds one of :func:`needs` of the pattern (or it needs none known)."""
        return not self._needs or any(n in text for n in self._needs)

    def cut(self, text: str) -> str:
        """``text`` less every match (``pattern.sub("", text)``)."""
        return self.regex.sub("", text) if self.held(text) else text

    def spans(self, text: str) -> list[tuple[int, int]]:
        """The ``(start, end)`` of each match of ``pattern.finditer(text)``."""
        return [m.span() for m in self.regex.finditer(text)] if self.held(text) else []


#: what finds a table row's words: a compiled regex (the vocabulary's tables) or a word-table alternative
Matcher = re.Pattern[str] | Words

#: a pattern's wildcard stretch (比.{0,12}高, [^?.]{1,40}?, "spend(?: \w+){0,3} per"): what it spans
#: is not the pattern's word, so it is not claimed with it
GAP = re.compile(r"(?:\.|\[\^[^\]]*\])(?:\{\d*,\d*\}|[*+])\??|\(\?: ?\\w\+ ?\)(?:\{\d*,\d*\}|[*+?])\??")


@functools.lru_cache(maxsize=1024)
def gapped(pattern: re.Pattern[str]) -> re.Pattern[str]:
    """``pattern`` with each wildcard stretch (:data:`GAP`) in a group named ``_gapN``."""
    if not GAP.search(pattern.pattern):
        return pattern
    count = iter(range(1, 1000))
    return re.compile(
        GAP.sub(lambda m: f"(?P<_gap{next(count)}>{m.group(0)})", pattern.pattern), pattern.flags
    )


def gaps(pattern: re.Pattern[str], text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The spans of ``pattern``'s wildcard stretches in its match ``text[start:end]``."""
    g = gapped(pattern)
    if g is pattern or not (m := g.match(text, start)) or m.end() != end:
        return []
    return [m.span(k) for k in g.groupindex if k.startswith("_gap") and start <= m.start(k) < m.end(k) <= end]


class _Unread(Exception):
    """A pattern :func:`needs` does not follow (a flag, a back-reference, an odd escape)."""


def needs(pattern: str) -> tuple[str, ...]:
    """Strings of which every match of ``pattern`` holds one (empty: none known): a run of plain
    characters each match takes whole, or one of each alternative of a group (the rarer kept)."""
    tokens = _tokens(pattern)
    try:
        need, i = _alternation(tokens, 0)
    except _Unread:
        return ()
    return need if i == len(tokens) else ()


def _alternation(tokens: list[Token], i: int) -> tuple[tuple[str, ...], int]:
    """What every match of the alternation from ``tokens[i]`` holds (the rarest candidate of each
    branch; none if a branch has none), and the index of the token that ends it (a ``)`` or the end)."""
    branches: list[tuple[str, ...]] = [()]  # each branch's rarest candidate so far
    run = ""  # the plain characters read so far that a match takes one after the other
    while i < len(tokens) and tokens[i][0] != "close":
        kind, text, _ = tokens[i]
        i += 1
        if kind == "bar":
            branches[-1:] = [_better(branches[-1], (run,)), ()]
            run = ""
            continue
        chars = ""  # what this item matches, one character each
        need: tuple[str, ...] = ()  # or what each match of it holds
        if kind == "plain":
            chars = text
        elif kind == "esc":
            if not (text[1].isascii() and text[1].isalnum()):
                chars = text[1]
            elif text[1] not in "dwsDWSbBAZ":
                raise _Unread
        elif kind == "group":
            if text == "(" and i < len(tokens) and tokens[i][1].startswith("?"):
                raise _Unread  # a flag, a named group, a comment, a condition
            need, i = _alternation(tokens, i)
            if i == len(tokens):
                raise _Unread
            i += 1
            if text not in ("(", "(?:"):  # a look-around takes nothing
                need = ()
        elif kind != "cls" and text not in ".^$":
            raise _Unread
        repeat = tokens[i][1] if i < len(tokens) and tokens[i][0] == "repeat" else ""
        if repeat:
            i += 1
            if i < len(tokens) and tokens[i][0] == "repeat":
                raise _Unread
            required = repeat.startswith("+")  # the last character (or item) taken once or more
            run += chars[:-1] + (chars[-1:] if required else "")
            need = need if required else ()
        else:
            run += chars
            if chars:
                continue
        branches[-1] = _better(branches[-1], (run,), need)
        run = ""
    branches[-1] = _better(branches[-1], (run,))
    return (tuple(dict.fromkeys(n for b in branches for n in b)) if all(branches) else ()), i


def _better(*options: tuple[str, ...]) -> tuple[str, ...]:
    """The rarest requirement (its shortest string longer, then fewer strings; the first on a tie;
    an empty string is none)."""
    return max(options, key=lambda n: (min(map(len, n)), -len(n)) if n else (0, 0))
