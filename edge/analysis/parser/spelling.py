"""Slips of typing in English words (revnue, Octobr): a word no word table and no stored value
knows, one edit from exactly one word they do know, is read as that word (and said, in
:attr:`~.result.ParseResult.read_as`). Short words are never guessed (sale and sales), but the
short forms of ``ABBREVIATIONS`` are read as theirs (rev, yday, 30d), and a day of a month said
in words as its number (the tenth of november).
"""

from __future__ import annotations

import functools
import re
import string

from edge.analysis.parser import lexicon as lx
from edge.analysis.parser.accounting import literal, stem
from edge.analysis.parser.text import FOLD
from edge.analysis.parser.timecal import MONTH_NAMES
from edge.analysis.parser.timekinds import WEEKDAYS_EN
from edge.analysis.source import Vocabulary

#: the shortest word read as a slip of another
MIN_LENGTH = 6
_WORD = re.compile(rf"(?<![a-z0-9_'\-])[a-z]{{{MIN_LENGTH},}}(?![a-z0-9_'\-])")
_ENDINGS = ("s", "es", "d", "ed", "ing", "ly")


@functools.lru_cache(maxsize=1)
def _table_words() -> tuple[frozenset[str], tuple[str, ...]]:
    """Every English word the word tables and the question shapes spell (their patterns less
    lookarounds), the function words, the measures' context words, months and weekdays; and the tables' word beginnings
    (correlat\\w*: every word they begin is known)."""
    tables = (lx.METRICS, lx.DIMENSIONS, lx.TIME_BUCKETS, lx.EVENT_TYPE_WORDS, lx.PROMOTION_VALUES)
    sources = [p.pattern for t in tables for p, _ in t]
    sources += [p for groups in lx.VALUE_WORDS.values() for p, _ in groups]
    sources += [
        p.pattern
        for p in (*lx.CUES.values(), *lx.FORMS.values(), *lx.SHAPES.values(), *lx.INTENT_CONTEXT.values())
    ]
    sources.append(lx.CONDITION_EN)
    words: set[str] = set()
    for w in (w for src in sources for w in re.findall(r"[a-z]{2,}\??", literal(src))):
        words |= {w[:-1], w[:-2]} if w.endswith("?") else {w}  # revenues? spells revenue(s)
    words |= lx.EN_FUNCTION | lx.EN_STOPWORDS | {w for _, en in lx.MEASURE_CONTEXT.values() for w in en}
    words |= {m.lower() for m in MONTH_NAMES} | set(WEEKDAYS_EN.split("|"))
    return frozenset(words), tuple({m for src in sources for m in re.findall(r"[a-z]{3,}(?=\\w)", src)})


def _vocab_words(vocab: Vocabulary) -> frozenset[str]:
    """The words of the memory's own ids and values (``fresh_meat``: fresh, meat)."""
    names = [*vocab.store_ids, *vocab.event_types, *(str(v) for vs in vocab.attributes.values() for v in vs)]
    return frozenset(w for n in names for w in re.findall(r"[a-z]{2,}", n.lower().translate(FOLD)))


def _one_edit(word: str) -> set[str]:
    letters = string.ascii_lowercase
    cuts = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    return (
        {a + b[1:] for a, b in cuts if b}
        | {a + b[1] + b[0] + b[2:] for a, b in cuts if len(b) > 1}
        | {a + c + b[1:] for a, b in cuts if b for c in letters}
        | {a + c + b for a, b in cuts for c in letters}
    )


#: a short form (rev, yday), and a number with a unit letter (30d, 6wks)
_SHORT = re.compile(
    rf"(?<![a-z0-9_'\-])(?:{'|'.join(sorted(lx.ABBREVIATIONS, key=len, reverse=True))})(?=$|[^a-z0-9_'\-]|'s(?![a-z]))"
)
_UNIT = re.compile(
    rf"(?<![a-z0-9_'\-])([0-9]+) ?({'|'.join(sorted(lx.ABBREVIATED_UNITS, key=len, reverse=True))})(?![a-z0-9_'\-])"
)


_ORDINALS = (
    "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth "
    "fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth twentieth"
).split()
#: a day of the month said in words: its number (twenty fourth: 24)
_DAY_WORDS = {w: i for i, w in enumerate(_ORDINALS, 1)}
_DAY_WORDS |= {
    f"{tens}{sep}{w}": n + i
    for tens, n in (("twenty", 20), ("thirty", 30))
    for sep in " -"
    for i, w in enumerate(_ORDINALS[:9], 1)
}
_DAY_WORDS |= {"thirtieth": 30}
_MONTH = r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
_DAY = "|".join(sorted(map(re.escape, _DAY_WORDS), key=len, reverse=True))
#: a date said aloud (the tenth of november, december the first, first december): the day in words
_NOT_A_DAY = (
    r"(?! (?:weeks?|weekends?|half|quarter|months?|promotions?|sales?|shifts?|time|days?|busiest|best"
    r"|worst|highest|lowest|most|least|biggest|largest)(?![a-z]))"
)
#: a date said aloud: "the tenth of november", "november the tenth" (not an ordinal of a noun: "the
#: december first weekend"; "may" only as "the first of may"), "first december" ending a clause
_SPOKEN_DATE = re.compile(
    rf"(?<![a-z])(?:(?P<d>{_DAY})(?= of {_MONTH}(?![a-z]))"
    rf"|(?P<m>(?!may){_MONTH}) (?:the )?(?P<d2>{_DAY})(?![a-z]){_NOT_A_DAY}"
    rf"|(?P<d3>{_DAY})(?= {_MONTH}(?:,? [0-9]{{4}})?\s*(?:[,.?!;]|$)))(?![a-z])"
)


def spoken_dates(text: str) -> tuple[str, list[tuple[str, str]]]:
    """``text`` with each day of a month said in words written as its number (the tenth of
    november: the 10 of november), and the (words, number) pairs read."""
    read: list[tuple[str, str]] = []

    def number(m: re.Match[str]) -> str:
        words = m.group("d") or m.group("d2") or m.group("d3")
        read.append((words, str(_DAY_WORDS[words])))
        return f"{m.group('m')} {_DAY_WORDS[words]}" if m.group("m") else str(_DAY_WORDS[words])

    return _SPOKEN_DATE.sub(number, text), read


def expand(text: str) -> tuple[str, list[tuple[str, str]]]:
    """``text`` with its short forms read as their words (rev: revenue; 30d: 30 days; not 30 days
    itself), and the (short form, words) pairs read."""
    read: list[tuple[str, str]] = []

    def words(m: re.Match[str]) -> str:
        if m.lastindex:  # a number and a unit letter
            full = f"{m.group(1)} {lx.ABBREVIATED_UNITS[m.group(2)]}"
        else:
            full = lx.ABBREVIATIONS[m.group(0)]
        if full != m.group(0):
            read.append((m.group(0), full))
        return full

    return _SHORT.sub(words, _UNIT.sub(words, text)), read


def correct(text: str, vocab: Vocabulary) -> tuple[str, tuple[tuple[str, str], ...]]:
    """``text`` with each short form and slip read as its word, and the (as typed, word) pairs read."""
    table_words, stems = _table_words()
    known = table_words | _vocab_words(vocab)
    text, said = spoken_dates(text)
    text, read = expand(text)
    read[:0] = said

    def fix(m: re.Match[str]) -> str:
        token = m.group(0)
        inflected = {token[: -len(x)] for x in _ENDINGS if token.endswith(x)}
        if token in known or stem(token) in known or inflected & known or token.startswith(stems):
            return token
        # a slip keeps the first letter (braised is not raised)
        near = {w for w in _one_edit(token) if w in known and len(w) >= MIN_LENGTH and w[0] == token[0]}
        if len(near) != 1:
            return token  # none, or several: not guessed
        word = near.pop()
        read.append((token, word))
        return word

    return _WORD.sub(fix, text), tuple(read)
