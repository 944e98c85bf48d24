"""Matching the question against the memory's own vocabulary (store ids, entities, event types,
stats values): named literally, by a synonym (:data:`~.lexicon.VALUE_WORDS`), by a phrase whose
text-encoder vector is close to theirs, or (stores, zones, products) by a place or a code.
"""

from __future__ import annotations

import functools
import itertools
import logging
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import cast

import numpy as np
from pypinyin import Style, pinyin

from edge.analysis.parser import lexicon as lx
from edge.analysis.parser.text import FOLD, MaskedText, Matcher, has_cjk, parse_number, word
from edge.analysis.source import Vocabulary

logger = logging.getLogger(__name__)

#: text -> unit-norm vectors; may return None when the store has no text encoder installed
Embed = Callable[[Sequence[str]], np.ndarray | None]


def vectors(embed: Embed, texts: Sequence[str], use: str) -> np.ndarray | None:
    """``embed(texts)``, one float32 row per text; None (logged) when the encoder gives none, fails
    or gives another shape: the encoder is never a reason to fail a parse."""
    try:
        raw = embed(texts)
        vecs = None if raw is None else np.asarray(raw, dtype=np.float32)
        if vecs is not None and (vecs.ndim != 2 or len(vecs) != len(texts)):
            raise ValueError(f"unexpected vector shape {vecs.shape}")
    except Exception as exc:
        logger.warning("%s skipped: %s", use, exc)
        return None
    return vecs


@dataclass(frozen=True)
class ValueHit:
    """A phrase of the question read as one or more stored values of a stats key."""

    phrase: str
    key: str
    values: tuple[str, ...]
    method: str  # "exact" | "synonym" | "similarity" | "named"
    score: float = 1.0
    start: int = 0
    end: int = 0
    #: other (key, value) pairs the same phrase names (a zone and a category both "premium")
    alternatives: tuple[tuple[str, str], ...] = ()
    #: once such a phrase is resolved (:mod:`.valuekeys`): the keys set aside, and the measure's
    #: event types that carry :attr:`key` (none when the question names the field)
    set_aside: tuple[str, ...] = ()
    by_events: tuple[str, ...] = ()


@dataclass(frozen=True)
class TypeHit:
    """An event type named in the question, at ``start:end``."""

    event_type: str
    start: int
    end: int


def _usable(value: str) -> bool:
    v = value.strip().lower()
    short = len(v) < (2 if has_cjk(v) else 3)
    return not (short or v in lx.NAMING_WORDS["skip_values"] or re.fullmatch(r"[0-9.\-:]+", v))


def _variants(value: str) -> list[str]:
    """How a stored value may be written in a (normalised) question: as is, ``_``/``-`` as spaces,
    and a value of two words joined (wine_spirits: "wine and spirits", "wine & spirits")."""
    v = value.lower().translate(FOLD)
    spaced = re.sub(r"[_-]+", " ", v)
    if spaced == v:
        return [v]
    joined = [f"{spaced.replace(' ', j)}" for j in (" and ", " & ", " n ")] if spaced.count(" ") == 1 else []
    return [v, spaced, spaced + "s", *joined]


#: ``(pattern, value)`` rows for :meth:`~.text.MaskedText.find`
_Table = list[tuple[re.Pattern[str], object]]


def _literal_table(names: dict[str, object]) -> _Table:
    """One alternation per script (Latin words bounded, CJK not) and its dict: written form -> value."""
    table: _Table = []
    for latin in (True, False):
        if forms := {w: v for w, v in names.items() if has_cjk(w) != latin}:
            alt = "|".join(re.escape(f) for f in sorted(forms, key=len, reverse=True))
            table.append((re.compile(word(alt) if latin else alt), forms))
    return table


class _Tables:
    """The match tables of one vocabulary (a value's table holds its hit, placed when found)."""

    def __init__(
        self,
        store_ids: tuple[str, ...],
        entities: tuple[str, ...],
        event_types: tuple[str, ...],
        attributes: tuple[tuple[str, tuple[str, ...]], ...],
    ) -> None:
        self.stores = _literal_table({s.lower(): s for s in store_ids if len(s) >= 3})
        self.entities = _literal_table({e.lower(): e for e in entities if len(e) >= 3})
        self.known = {v.lower() for _, vals in attributes for v in vals} | {t.lower() for t in event_types}
        self.types: list[tuple[Matcher, object]] = [*lx.EVENT_TYPE_WORDS]  # the well-known event types
        self.types += _literal_table({w: t for t in event_types if _usable(t) for w in _variants(t)})

        # a written form naming values of several keys is the first one's hit, the others its alternatives
        self.targets = tuple((k, v) for k, vals in attributes for v in vals if _usable(v))
        by_form: dict[str, dict[str, str]] = {}
        for attr_key, v in self.targets:
            for w in _variants(v):
                by_form.setdefault(w, {}).setdefault(attr_key, v)
        literal: dict[str, object] = {}
        for w, named in by_form.items():
            (k0, v0), *others = named.items()
            literal[w] = ValueHit("", k0, (v0,), "exact", alternatives=tuple(others))
        self.values = _literal_table(literal)
        for attr_key, groups in lx.VALUE_WORDS.items():
            stored = dict(attributes).get(attr_key, ())
            for pattern, tokens in groups:
                # a stored value is named when it, or one of its parts, is one of the tokens; a weather
                # the memory has never seen is still asked: its canonical value (no events)
                hits = [v for v in stored if {v.lower(), *re.split(r"[_\- ]", v.lower())} & set(tokens)]
                if chosen := tuple(hits) or ((tokens[0],) if attr_key == "weather" else ()):
                    self.values.append((re.compile(pattern), ValueHit("", attr_key, chosen, "synonym")))


_tables = functools.lru_cache(maxsize=16)(_Tables)


def compiled(vocab: Vocabulary) -> _Tables:
    """The vocabulary's match tables, compiled once per distinct vocabulary."""
    attributes = tuple((k, tuple(v)) for k, v in vocab.attributes.items())
    return _tables(vocab.store_ids, vocab.entities, vocab.event_types, attributes)


def match_ids(mt: MaskedText, vocab: Vocabulary) -> tuple[list[str], list[str]]:
    """Store ids and entities named in the question (consumed), in question order; an unknown id
    with a digit is an entity when it looks like a person (customer_123), else a store id."""
    c = compiled(vocab)
    stores, entities = ([(h.start, str(h.value)) for h in mt.find(t)] for t in (c.stores, c.entities))
    for m in lx.NAMING["id"].finditer(mt.view):
        if (token := m.group(0)) not in c.known and re.search(r"[0-9]", token):
            (entities if lx.NAMING["person"].match(token) else stores).append((m.start(), token))
            mt.consume(m.start(), m.end())
    return [*dict.fromkeys(n for _, n in sorted(stores))], [*dict.fromkeys(n for _, n in sorted(entities))]


def match_event_types(mt: MaskedText, vocab: Vocabulary) -> list[TypeHit]:
    """Event types named in the question (literal names, or the everyday words of well-known
    types). Does not consume: metric words (投诉, 排队) may name an event type too."""
    return [TypeHit(str(h.value), h.start, h.end) for h in mt.find(compiled(vocab).types, consume=False)]


#: a negation just before a value: "no rain", 不下雨, "non-promotion" name the other values
NEGATED = lx.NAMING["negated"]


def match_values(mt: MaskedText, vocab: Vocabulary) -> list[ValueHit]:
    """Stored stats values named literally or by a synonym (consumed), in question order; never
    one a negation stands before (left for the words that name the rest)."""
    out = []
    for h in mt.find(compiled(vocab).values, consume=False):
        v, end = cast(ValueHit, h.value), h.end
        if NEGATED.search(mt.text[: h.start]):
            continue
        # "overcast days", 促销的日子: the days of a weather or a promotion (a whole day's) are its words
        if v.key in ("weather", "promotion") and (m := _DAYS_OF.match(mt.view, end)):
            end = m.end()
        mt.consume(h.start, end)
        out.append(replace(v, phrase=mt.text[h.start : end], start=h.start, end=end))
    return out


#: what may stand around a place named alone: in Chinese what may follow a name (北京和上海, not
#: 北京时间 or 晚上海鲜), nor "time" after it (Beijing time); another store's mention beside it
#: (上海的北京店, "the Chaoyang store in Shanghai") is checked apart (``_BESIDE``)
_BARE_ZH = ("", r"(?=店|门店|分店|那|这|的|和|与|跟|、|比|[，,。？?！!\s\x00]|$)")
_BARE_EN = (r"(?<![a-z0-9_'-])", r"(?![a-z0-9_-])(?! time)(?!'s? time)")
_BESIDE = re.compile(r"\s?(?:的|in|at|of)?\s?")
#: a word of "combined" later in the question than the stores counted
_TOGETHER = re.compile(
    r"(?<![a-z])(?:together|combined|altogether|in total)(?![a-z])|加起来|合起来|一共|总共"
)
#: two things named between them (complaints and queues together): a pairing, not a total
_PAIRED = re.compile(r"(?<![a-z])(?:and|&|with)(?![a-z])|和|与|跟")
_DAYS_OF = re.compile(r"\s?(?:days?(?![a-z])|的?日子)")
#: a word that says what something is about, just before a stored value (关于排队, "about the queue"),
#: not "what about" / "tell me about" (the question's subject); and the events that are about it
_ABOUT = re.compile(
    r"(?:(?<![a-z])(?<!what )(?<!how )(?<!me )(?<!curious )(?<!talk )(?:about|regarding|concerning|related to|relating to)(?: the| our)?\s?|关于|有关|嫌|抱怨)$"
)
#: a question whether something holds (are, is, do, does ...): "related to" there asks a link
_ASKS_IF = re.compile(r"\s*(?:are|is|were|was|do|does|did|has|have)(?![a-z])")
#: the same word right after the value ("queue-related complaints", 排队相关的投诉), consumed with it
_ABOUT_AFTER = re.compile(
    r"(?:-|\s)related(?= (?:complaints?|inquir|enquir|questions?|calls?|issues?|problems?))"
    r"|\s?(?:相关|有关)的?(?=投诉|咨询|抱怨|询问|提问|问题)"
)
_ABOUT_EVENTS = re.compile(r"complain|inquir|enquir|question|ask|calls?(?![a-z])|投诉|咨询|抱怨|询问|提问|问")


def left_out(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The spans of the words that leave out what ``text[start:end]`` names (excluding weekends,
    除了徐汇店…外, "weekends excluded", "leaving Xuhui aside"), else none: the others are meant."""
    at = max(0, start - 20)
    before = _LEFT_OUT.search(text[at:start])
    close = _LEFT_OUT_CLOSE.match(text, end) if before and "除" in before.group(0) else None
    after = _LEFT_OUT_AFTER.match(text, end)
    if _LEFT_OUT_MORE.match(text, close.end() if close else end):
        return []  # "excluding weekends and promotion days", "weekend mornings": not only these
    if after and not before and after.group(0).strip() == "aside":  # "leaving Xuhui aside"
        before = _SET_ASIDE.search(text[at:start])
    spans = [(at + before.start(), start)] if before else []
    return spans + [m.span() for m in (close, after) if m]


_LEFT_OUT = lx.SHAPES["left_out"]
_LEFT_OUT_AFTER = lx.SHAPES["left_out_after"]
_LEFT_OUT_CLOSE = lx.SHAPES["left_out_close"]
_LEFT_OUT_MORE = lx.SHAPES["left_out_more"]
_SET_ASIDE = re.compile(r"(?<![a-z])(?:leaving|leave|setting|set|putting|put)\s(?:the\s)?$")


def match_about(mt: MaskedText, vocab: Vocabulary) -> list[ValueHit]:
    """Stored values named just after a word of "about" (complaints about the queue, 嫌排队): what
    the events are about, read before any measure or event type takes the word (consumed)."""
    out: list[ValueHit] = []
    if not _ABOUT_EVENTS.search(mt.text):
        return out
    for h in mt.find(compiled(vocab).values, consume=False):
        v = cast(ValueHit, h.value)
        after = _ABOUT_AFTER.match(mt.view, h.end)
        before = _ABOUT.search(mt.view[: h.start])
        if before and "relat" in before.group(0) and _ASKS_IF.match(mt.text):
            before = None  # "are complaints related to queues": whether they go together, not a topic
        if (before or after) and mt.free(h.start, h.end):
            # "related to" is consumed with the value: no word of a correlation
            first = before.start() if before and "relat" in before.group(0) else h.start
            mt.consume(first, after.end() if after else h.end)
            out.append(replace(v, phrase=mt.text[h.start : h.end], start=h.start, end=h.end))
    return out


def _is_lexical(text: str) -> bool:
    """True when a phrase is (almost) only metric/dimension words: not a candidate value."""
    rest = text
    for pattern, _ in (*lx.DIMENSIONS, *lx.METRICS):
        rest = pattern.cut(rest)
    return len(re.sub(r"\s+", "", rest)) < 2


def _candidates(mt: MaskedText) -> list[tuple[int, int, str]]:
    """The longest phrases of the free text that may name a stored value: ``(start, end, text)``
    of runs of two to eight Chinese characters and of one or two adjacent English words."""
    out: list[tuple[int, int, str]] = []
    view = mt.view  # its pieces between consumed text and stop words: (0, s1), (e1, s2) ... (eN, len)
    cuts = [0, *(i for m in re.finditer(r"\x00+|" + lx.STOP_SPLIT, view) for i in m.span()), len(view)]
    for at, end in zip(cuts[::2], cuts[1::2], strict=True):
        piece = view[at:end]
        if has_cjk(piece):
            spans = [(a, b) for a in range(len(piece)) for b in range(a + 2, min(len(piece), a + 8) + 1)]
        else:
            words = [m.span() for m in re.finditer(r"[a-z][a-z\-]+", piece) if m[0] not in lx.EN_STOPWORDS]
            # each word, then it and the next one when only a space parts them
            spans = sorted(words + [(a, e) for (a, b), (s, e) in pairwise(words) if s - b <= 1])
        out += [(at + a, at + b, piece[a:b]) for a, b in spans]
    out = [c for c in out if not _is_lexical(c[2]) and (has_cjk(c[2]) or len(c[2]) >= 4)]
    out.sort(key=lambda c: -(c[1] - c[0]))
    return out[:96]


def similar_values(mt: MaskedText, vocab: Vocabulary, embed: Embed, threshold: float) -> list[ValueHit]:
    """Phrases of the question whose text vector is within ``threshold`` cosine of a stored value
    (rendered as text, ``high_margin_product`` -> ``high margin product``). Consumes the phrases."""
    targets, cands = compiled(vocab).targets, _candidates(mt)
    texts = [re.sub(r"[_\-]+", " ", v) for _, v in targets]
    tv = vectors(embed, texts, "text-encoder similarity") if targets and cands else None
    cv = None if tv is None else vectors(embed, [c[2] for c in cands], "text-encoder similarity")
    if tv is None or cv is None or tv.shape[1] != cv.shape[1]:
        return []
    sims = cv @ tv.T
    scored = []
    for (s, e, text), row in zip(cands, sims, strict=True):
        j = int(np.argmax(row))
        # short phrases (two CJK characters, one Latin word) match by chance more easily
        short = len(text) <= 2 if has_cjk(text) else " " not in text.strip()
        if float(row[j]) >= (threshold + 0.1 if short else threshold):
            scored.append((float(row[j]), s, e, text, j))
    scored.sort(key=lambda x: (-x[0], -(x[2] - x[1])))
    taken: list[ValueHit] = []
    used: set[tuple[str, str]] = set()
    for score, s, e, text, j in scored:
        (key, value), written = targets[j], texts[j].lower()
        if (key, value) in used or not mt.free(s, e):  # the candidates were all free
            continue
        # the same text stored under other keys scores the same: those keys are alternatives
        same = [t for t, w in zip(targets, texts, strict=True) if w.lower() == written]
        alts = tuple(t for t in same if t[0] not in (key, "event_type")) if key != "event_type" else ()
        used.update({(key, value), *alts})
        taken.append(ValueHit(text, key, (value,), "similarity", round(score, 4), s, e, alts))
        mt.consume(s, e)
    return sorted(taken, key=lambda h: h.start)


def _place_store(name: str, store_ids: Sequence[str]) -> str:
    """The known store whose id has ``name`` as one of its parts, else ``name`` as asked; a Chinese
    name by its pinyin (徐汇: sh_xuhui_01); a city by the initials of its syllables, when one id alone
    has them as a part (北京, "Beijing": bj_chaoyang_02)."""
    key = re.sub(r"['-]", "", name.lower())
    hits = [s for s in store_ids if key == s.lower() or key in _parts(s)]
    if not hits and has_cjk(name):
        spelt, initials = _spellings(name)
        score = {}
        for s in store_ids:
            full = {p for p in _parts(s) if len(p) >= 4} & spelt  # a place's whole spelling, never by chance
            score[s] = (len(full), len(_parts(s) & initials)) if full else (0, 0)
        best = max(score.values(), default=(0, 0))
        hits = [s for s, n in score.items() if n == best] if best[0] else []
    if not hits:
        hits = [s for s in store_ids if _parts(s) & _city_initials(name)]
    return hits[0] if len(hits) == 1 else name


def _parts(store_id: str) -> set[str]:
    """The parts of a store id (sh, xuhui and 01 of sh_xuhui_01)."""
    return set(re.split(r"[_\-.\s0-9]+", store_id.lower()))


def _city_initials(name: str) -> set[str]:
    """The initials of a city's syllables (北京 or "Beijing": bj) when ``name`` is one of the
    cities ``NAMING_WORDS.cities`` names, in characters or in pinyin; else none."""
    return _cities().get(re.sub(r"[\s'-]", "", name.lower()), set())


@functools.lru_cache(maxsize=1)
def _cities() -> dict[str, set[str]]:
    """Each city, in characters and in its pinyin (its usual reading: 深圳 is shenzhen, never the
    sh of 圳's rare huai), -> its initials."""
    out: dict[str, set[str]] = {}
    for city in lx.NAMING_WORDS["cities"]:
        syllables = [r[0] for r in pinyin(city, style=Style.NORMAL)]
        initials = {"".join(x[:1] for x in syllables)}
        out.setdefault(city, set()).update(initials)
        out.setdefault("".join(syllables), set()).update(initials)
    return out


def _spellings(name: str) -> tuple[set[str], set[str]]:
    """The pinyin (every reading of a character with several: 朝 zhao, chao) and the initials of each
    run of two or more characters of ``name``."""
    spelt: set[str] = set()
    initials: set[str] = set()
    for a in range(len(name)):
        for b in range(a + 2, len(name) + 1):
            readings = pinyin(name[a:b], style=Style.NORMAL, heteronym=True)
            if math.prod(len(r) for r in readings) <= 64:
                for syllables in itertools.product(*readings):
                    spelt.add("".join(syllables))
                    initials.add("".join(x[:1] for x in syllables))
    return spelt, initials


def _places(m: re.Match[str]) -> list[tuple[int, str]]:
    """The ``(start, name)`` of the places a store-by-place match names: its English words unless
    one is no place; in Chinese the longest bounded tail of three or four characters, else two."""
    if not has_cjk(m["v"]):
        found = [(m.start(g), m[g]) for g in m.re.groupindex]
        return [] if {n for _, n in found} & lx.NAMING_WORDS["not_a_place_en"] else found
    run = m["v"][:-1] if m["v"][-1] in "分门" else m["v"]  # 静安分店, 南京路门店
    if city := next((c for c in lx.NAMING_WORDS["cities"] if run.endswith(c)), None):
        return [(m.start("v") + len(run) - len(city), city)]  # 上海店: 上 begins no other place
    for n in (4, 3, 2):
        tail, before = run[-n:], run[-n - 1 : -n]
        bounded = n == 2 or not before or before in lx.NAMING_WORDS["place_boundary_zh"]
        if len(run) >= n and bounded and not lx.NAMING_WORDS["not_a_place_zh"] & set(tail):
            return [(m.start("v") + len(run) - n, tail)]
    return []


def match_place_stores(mt: MaskedText, vocab: Vocabulary) -> list[str]:
    """Stores named by a place rather than an id, or every store counted ("both stores" of two,
    所有门店; its store noun is consumed only when "combined", 加起来, follows: 两个店的客流分别怎样
    groups by store; another count, 三家店 of two, is left unclaimed); consumed."""
    counted: list[tuple[int, str]] = []
    placed: list[tuple[int, int, str]] = []  # (start, end, store) of the stores named by a place
    held = len(vocab.store_ids)
    for kind in ("count_en", "count_zh", "place_pair_en", "place_en", "place_zh"):
        for m in lx.NAMING[kind].finditer(mt.view):
            if kind.startswith("count"):
                count = 2 if m.groupdict().get("both") else parse_number(m["n"]) if m["n"] else held
                if count == held >= 2 and mt.free(m.start(), m.end()):
                    # "across both stores": their total, as "both stores combined"
                    whole = m["x"] or re.search(r"(?<![a-z])(?:across|over)\s$", mt.view[: m.start()])
                    mt.consume(m.start(), m.end() if whole else m.start("s"))
                    later = _TOGETHER.search(mt.view, m.end(), m.end() + 40) if not m["x"] else None
                    if later and not _PAIRED.search(mt.view, m.end(), later.start()):
                        mt.consume(*later.span())  # "did both stores take in together": their total
                    counted += [(m.start(), s) for s in vocab.store_ids]
            elif (places := _places(m)) and mt.free(places[0][0], m.end()):
                for i, (at, place) in enumerate(places):
                    end = m.end() if i == len(places) - 1 else at + len(place)
                    placed.append((at, end, _place_store(place, vocab.store_ids)))
                mt.consume(places[0][0], m.end())
    named = _id_parts(tuple(vocab.store_ids)) | _city_stores(tuple(vocab.store_ids))
    bare: list[tuple[int, int, str]] = []  # of the stores named by an id part or a city alone
    for part, store in named.items():  # "Xuhui or Chaoyang?", "Shanghai vs Beijing", 北京和上海
        bounds = _BARE_ZH if has_cjk(part) else _BARE_EN
        for m in re.finditer(bounds[0] + re.escape(part) + bounds[1], mt.view):
            # beside another store's mention (上海朝阳店, "the Chaoyang store in Shanghai"): which?
            if any(
                s != store
                and _BESIDE.fullmatch(mt.text[m.end() : a] if a >= m.end() else mt.text[b : m.start()])
                for a, b, s in placed
            ):
                continue
            bare.append((m.start(), m.end(), store))
            mt.consume(m.start(), m.end())
    # a store left out (除了徐汇店, "leaving Xuhui aside"): the other stores held; none left, or a
    # store named beside it, and the words that leave it out are named
    words = [(left_out(mt.text, a, b), s) for a, b, s in placed + bare]
    found = sorted(counted + [(a, s) for a, _, s in placed + bare])
    out = {s for spans, s in words if spans}
    others = [s for s in vocab.store_ids if s not in out]
    if out and others and all(s in out for _, s in found):
        for spans, _ in words:
            for x, y in spans:
                mt.consume(x, y)
        return others
    return list(dict.fromkeys(s for _, s in found))


@functools.lru_cache(maxsize=8)
def _id_parts(store_ids: tuple[str, ...]) -> dict[str, str]:
    """The parts of the store ids that name one store alone (xuhui of sh_xuhui_01): four letters
    or more, of one id only, and no word a question uses otherwise (main, city, store)."""
    parts: dict[str, list[str]] = {}
    for store in store_ids:
        for part in _parts(store):
            parts.setdefault(part, []).append(store)
    common = lx.EN_FUNCTION | lx.NAMING_WORDS["not_a_place_en"]
    return {
        p: s[0]
        for p, s in parts.items()
        if len(s) == 1 and re.fullmatch(r"[a-z]{4,}", p) and p not in common and not _a_word_of_the_lexicon(p)
    }


@functools.lru_cache(maxsize=8)
def _city_stores(store_ids: tuple[str, ...]) -> dict[str, str]:
    """The cities (in characters and pinyin) whose initials are a part of one store id alone, and
    those initials themselves ("bj vs sh"), unless a word of questions."""
    out = {}
    for city, initials in _cities().items():
        stores = [s for s in store_ids if _parts(s) & initials]
        if len(stores) == 1:
            out[city] = stores[0]
            out |= {
                i: stores[0] for i in initials if i not in lx.EN_FUNCTION and not _a_word_of_the_lexicon(i)
            }
    return out


def _a_word_of_the_lexicon(word_: str) -> bool:
    """Whether a measure, dimension, event type or cue pattern reads ``word_`` whole."""
    tables = [*lx.METRICS, *lx.DIMENSIONS, *lx.EVENT_TYPE_WORDS, *lx.TIME_BUCKETS]
    spans = [span for p, _ in tables for span in p.spans(word_)]
    spans += [m.span() for p in lx.CUES.values() for m in p.finditer(word_)]
    return (0, len(word_)) in spans


def _stored(raw: str, known: Sequence[str], seps: str) -> str:
    """The one known value that is the code ``raw`` or ends in it after one of ``seps`` ("aisle b":
    shelf_b), else the known value of its spelling in any case, else the code as asked (z9: Z9)."""
    ends = [k for k in known if re.fullmatch(rf"(?:.*[{seps}])?{re.escape(raw)}", k.lower())]
    if len(ends) == 1:
        return ends[0]
    asked = raw.upper() if re.fullmatch(r"[a-z]{1,2}[0-9]+[a-z]?|[a-z]", raw) else raw
    return next((k for k in known if k.lower() == raw.lower()), asked)


def match_named(mt: MaskedText, vocab: Vocabulary) -> tuple[list[ValueHit], list[str]]:
    """Zone and product hits and store ids named by a code ("zone Z9", "7号店", "商品P123"),
    consumed; an unknown one stays in the plan (and finds no events) rather than being dropped."""
    hits: list[ValueHit] = []
    stores: list[str] = []
    for kind, patterns in lx.NAMED_BY_CODE.items():
        for pattern in patterns:
            for m in pattern.finditer(mt.view):
                if not mt.free(m.start(), m.end()):
                    continue
                if kind == "store":
                    stores.append(_stored(m["v"], vocab.store_ids, "_"))
                else:
                    value = _stored(m["v"], vocab.attributes.get(kind, ()), r"_\-")
                    hits.append(ValueHit(m[0], kind, (value,), "named", 1.0, m.start(), m.end()))
                mt.consume(m.start(), m.end())
    return sorted(hits, key=lambda h: h.start), stores
