"""Matching the question against the memory's own vocabulary (store ids, entities, event types,
stats values): named literally, by a synonym (:data:`~.lexicon.VALUE_WORDS`), by a phrase whose
text-encoder vector is close to theirs, or (stores, zones, products) by a place or a code.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import NamedTuple, cast

import numpy as np

from edge.analysis.parser.lexicon import (
    DIMENSIONS,
    EN_STOPWORDS,
    EVENT_TYPE_WORDS,
    METRICS,
    STOP_SPLIT,
    VALUE_WORDS,
)
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


_SKIP_VALUES = frozenset({"true", "false", "none", "null", "unknown", "yes", "no", "n/a", "other"})
_ID = re.compile(r"(?<![a-z0-9_])[a-z][a-z0-9]*(?:[_-][a-z0-9]+)+(?![a-z0-9_])")
_ENTITY_PREFIX = re.compile(r"^(?:customer|cust|staff|emp|employee|member|user|person|visitor|guest|vip)[_-]")


@dataclass(frozen=True)
class ValueHit:
    """A phrase of the question read as one or more stored values of a stats key."""

    phrase: str
    key: str
    values: tuple[str, ...]
    method: str  # "exact" | "synonym" | "similarity"
    score: float
    start: int
    end: int
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
    return v not in _SKIP_VALUES and not re.fullmatch(r"[0-9.\-:]+", v) and len(v) >= (2 if has_cjk(v) else 3)


def _variants(value: str) -> list[str]:
    """How a stored value may be written in a (normalised) question: as is, ``_``/``-`` as spaces."""
    v = value.lower().translate(FOLD)
    spaced = re.sub(r"[_-]+", " ", v)
    return [v, spaced, spaced + "s"] if spaced != v else [v]


def _literal_table(names: dict[str, object]) -> list[tuple[re.Pattern[str], object]]:
    """One alternation per script (Latin words bounded, CJK not) and its dict: written form -> value."""
    table: list[tuple[re.Pattern[str], object]] = []
    for latin in (True, False):
        if forms := {w: v for w, v in names.items() if has_cjk(w) != latin}:
            alt = "|".join(re.escape(f) for f in sorted(forms, key=len, reverse=True))
            table.append((re.compile(word(alt) if latin else alt), forms))
    return table


class _Compiled(NamedTuple):
    """The match tables of one vocabulary (a value's table holds its hit, placed when found)."""

    stores: list[tuple[re.Pattern[str], object]]
    entities: list[tuple[re.Pattern[str], object]]
    known: frozenset[str]
    types: list[tuple[Matcher, object]]
    values: list[tuple[re.Pattern[str], object]]
    targets: tuple[tuple[str, str], ...]


@functools.lru_cache(maxsize=16)
def _compile(
    store_ids: tuple[str, ...],
    entities: tuple[str, ...],
    event_types: tuple[str, ...],
    attributes: tuple[tuple[str, tuple[str, ...]], ...],
) -> _Compiled:
    stores = _literal_table({s.lower(): s for s in store_ids if len(s) >= 3})
    ents = _literal_table({e.lower(): e for e in entities if len(e) >= 3})
    known = frozenset({v.lower() for _, vals in attributes for v in vals} | {t.lower() for t in event_types})
    types: list[tuple[Matcher, object]] = [*EVENT_TYPE_WORDS]  # the well-known event types
    types += _literal_table({w: t for t in event_types if _usable(t) for w in _variants(t)})

    # a written form naming values of several keys is the first one's hit, the others its alternatives
    targets = tuple((k, v) for k, vals in attributes for v in vals if _usable(v))
    by_form: dict[str, dict[str, str]] = {}
    for attr_key, v in targets:
        for w in _variants(v):
            by_form.setdefault(w, {}).setdefault(attr_key, v)
    literal: dict[str, object] = {}
    for w, named in by_form.items():
        (k0, v0), *others = named.items()
        literal[w] = ValueHit("", k0, (v0,), "exact", 1.0, 0, 0, tuple(others))
    values = _literal_table(literal)
    for attr_key, groups in VALUE_WORDS.items():
        stored = dict(attributes).get(attr_key, ())
        for pattern, tokens in groups:
            # a stored value is named when it, or one of its parts, is one of the tokens
            chosen = tuple(
                v for v in stored if any(p in tokens for p in (v.lower(), *re.split(r"[_\- ]", v.lower())))
            )
            if not chosen and attr_key == "weather":
                # a weather the memory has never seen is still asked: its canonical value (no events)
                chosen = (tokens[0],)
            if chosen:
                values.append((re.compile(pattern), ValueHit("", attr_key, chosen, "synonym", 1.0, 0, 0)))
    return _Compiled(stores, ents, known, types, values, targets)


def compiled(vocab: Vocabulary) -> _Compiled:
    """The vocabulary's match tables, compiled once per distinct vocabulary."""
    attributes = tuple((k, tuple(v)) for k, v in vocab.attributes.items())
    return _compile(vocab.store_ids, vocab.entities, vocab.event_types, attributes)


def match_ids(mt: MaskedText, vocab: Vocabulary) -> tuple[list[str], list[str]]:
    """Store ids and entities named in the question (consumed), in question order; an unknown id
    with a digit is an entity when it looks like a person (customer_123), else a store id."""
    c = compiled(vocab)
    stores, entities = ([(h.start, str(h.value)) for h in mt.find(t)] for t in (c.stores, c.entities))
    for m in _ID.finditer(mt.view):
        if (token := m.group(0)) not in c.known and re.search(r"[0-9]", token):
            (entities if _ENTITY_PREFIX.match(token) else stores).append((m.start(), token))
            mt.consume(m.start(), m.end())
    return [*dict.fromkeys(n for _, n in sorted(stores))], [*dict.fromkeys(n for _, n in sorted(entities))]


def match_event_types(mt: MaskedText, vocab: Vocabulary) -> list[TypeHit]:
    """Event types named in the question (literal names, or the everyday words of well-known
    types). Does not consume: metric words (投诉, 排队) may name an event type too."""
    return [TypeHit(str(h.value), h.start, h.end) for h in mt.find(compiled(vocab).types, consume=False)]


#: a negation just before a value: "no rain", 不下雨, "non-promotion" name the other values
NEGATED = re.compile(r"(?:(?<![a-z])(?:no|not|without|non)[ -]|不|没有?|非)$")


def match_values(mt: MaskedText, vocab: Vocabulary) -> list[ValueHit]:
    """Stored stats values named literally or by a synonym (consumed), in question order; never
    one a negation stands before (left for the words that name the rest)."""
    hits = mt.find(compiled(vocab).values, consume=False)
    kept = [h for h in hits if not NEGATED.search(mt.text[: h.start])]
    for h in kept:
        mt.consume(h.start, h.end)
    return [replace(cast(ValueHit, h.value), phrase=h.text, start=h.start, end=h.end) for h in kept]


def _is_lexical(text: str) -> bool:
    """True when a phrase is (almost) only metric/dimension words: not a candidate value."""
    rest = text
    for pattern, _ in (*DIMENSIONS, *METRICS):
        rest = pattern.cut(rest)
    return len(re.sub(r"\s+", "", rest)) < 2


_LATIN_WORD = re.compile(r"[a-z][a-z\-]+")


def _candidates(mt: MaskedText) -> list[tuple[int, int, str]]:
    """The longest phrases of the free text that may name a stored value: ``(start, end, text)``
    of runs of two to eight Chinese characters and of one or two adjacent English words."""
    out: list[tuple[int, int, str]] = []
    for start, run in mt.runs():
        # the run's pieces between stop words: (0, start1), (end1, start2) ... (endN, len)
        bounds = [0, *(i for m in re.finditer(STOP_SPLIT, run) for i in m.span()), len(run)]
        for a0, b0 in zip(bounds[::2], bounds[1::2], strict=True):
            piece, at = run[a0:b0], start + a0
            if has_cjk(piece):
                n = len(piece)
                spans = [(a, b) for a in range(n) for b in range(a + 2, min(n, a + 8) + 1)]
            else:
                words = [m.span() for m in _LATIN_WORD.finditer(piece) if m.group(0) not in EN_STOPWORDS]
                # each word, then it and the next one when only a space parts them
                spans = sorted(words + [(a, e) for (a, b), (s, e) in pairwise(words) if s - b <= 1])
            out += [(at + a, at + b, piece[a:b]) for a, b in spans]
    out = [c for c in out if not _is_lexical(c[2]) and (has_cjk(c[2]) or len(c[2]) >= 4)]
    out.sort(key=lambda c: -(c[1] - c[0]))
    return out[:96]


def similar_values(mt: MaskedText, vocab: Vocabulary, embed: Embed, threshold: float) -> list[ValueHit]:
    """Phrases of the question whose text vector is within ``threshold`` cosine of a stored value
    (rendered as text, ``high_margin_product`` -> ``high margin product``). Consumes the phrases."""
    targets = compiled(vocab).targets
    cands = _candidates(mt)
    if not targets or not cands:
        return []
    texts = [re.sub(r"[_\-]+", " ", v) for _, v in targets]
    tv = vectors(embed, texts, "text-encoder similarity")
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
        if (key, value) in used or any(not (e <= t.start or s >= t.end) for t in taken):
            continue
        # the same text stored under other keys scores the same: those keys are alternatives
        alts = tuple(
            t
            for t, w in zip(targets, texts, strict=True)
            if key != "event_type" and t[0] not in (key, "event_type") and w.lower() == written
        )
        used.update({(key, value), *alts})
        taken.append(ValueHit(text, key, (value,), "similarity", round(score, 4), s, e, alts))
        mt.consume(s, e)
    return sorted(taken, key=lambda h: h.start)


_ZONE_NAMED = (
    re.compile(word(r"(?:zone|area|aisle|section)\s?(?:#|no\.?\s?)?(?P<v>[a-z]?[0-9]+[a-z]?)")),
    re.compile(r"(?<![a-z0-9_前第])(?P<v>[a-z]{0,2}[0-9]+[a-z]?|[a-z])\s?(?:号)?(?:区域|区)"),
    re.compile(r"(?:区域|分区)\s?(?P<v>[a-z]{0,2}[0-9]+[a-z]?|[a-z])(?![a-z0-9_])"),
)
_STORE_NAMED = (
    re.compile(word(r"(?:store|shop|branch|outlet)\s?(?:#|no\.?\s?)?(?P<v>[a-z]{0,3}[0-9]+[a-z0-9]*)")),
    re.compile(r"(?<![a-z0-9_前第])(?P<v>[a-z]{0,3}[0-9]+[a-z0-9]*|[a-z])\s?(?:号)?(?:门店|分店|店)"),
    # "门店7" is store 7, "门店10月" is October ("哪个门店10月的客流最多"): a number followed by a
    # calendar or clock unit is a time, not a store
    re.compile(
        r"(?:门店|分店)\s?(?P<v>[a-z]{0,3}[0-9]+[a-z0-9]*|[a-z])(?![a-z0-9_]|\s?(?:月|日|号|点|时|年|周|天|个|小时|分钟))"
    ),
)
_PRODUCT_NAMED = (
    re.compile(
        word(r"(?:product|item|sku|article)\s?(?:#|no\.?\s?|id\s?)?(?P<v>[a-z]{0,4}-?[0-9]+[a-z0-9-]*)")
    ),
    re.compile(
        r"(?:商品|产品|单品|货号|sku)\s?(?:编号|号)?\s?(?P<v>[a-z]{0,4}-?[0-9]+[a-z0-9-]*)(?![a-z0-9_])"
    ),
)

#: a store named by its place ("the Xuhui store", "徐汇店"): a known store id by one of its parts
#: (sh_xuhui_01 <- "xuhui"), else kept as asked (an unknown store is answered as such)
_STORE_PLACE_EN = re.compile(
    r"(?<![a-z0-9_'-])(?P<v>[a-z][a-z'-]{2,}) (?:store|shop|branch|outlet)s?(?![a-z0-9_])"
)
#: two places before one plural noun ("the Xuhui and Chaoyang stores")
_STORE_PAIR_EN = re.compile(
    r"(?<![a-z0-9_'-])(?P<v>[a-z][a-z'-]{2,}) (?:and|&|or|vs\.?|versus) (?P<w>[a-z][a-z'-]{2,}) "
    r"(?:stores|shops|branches|outlets)(?![a-z0-9_])"
)
_STORE_PLACE_ZH = re.compile(r"(?P<v>[\u4e00-\u9fff]{2,5})(?:门店|分店|店)(?![员长铺内面里主庆家堂])")
#: a word that may stand right before a place name ("在南京路店", "和静安店比")
_PLACE_BOUNDARY_ZH = frozenset("在的和与跟比是看对了问把从")
_NOT_A_PLACE_EN = frozenset(
    """the this that these those our my your their its his her each every which what whose all any
    other same per one two three both whole entire single given particular main flagship new old
    different another either neither some many most few one's a an in at of for to from by with and
    or vs versus than across between among around coffee grocery retail convenience online physical
    local department chain pop-up popup busiest best worst top bottom biggest smallest largest
    highest lowest average typical whole-store in-store instore own home
    rank ranks ranked ranking sort sorted order list show compare compared name find tell give""".split()
)
#: characters that make a run before 店 a word, not a place (哪个店, 每家店, 到店, 进店, 便利店)
_NOT_A_PLACE_ZH = frozenset(
    "哪每各这那本全该此其所个家两一二三几多少些的了在和与跟比门分总到进离出入回开关闭来去逛近远旗舰便利专卖连锁实体线上下网商书饭酒花药新老大小前后看按以"
)


def _place_store(name: str, store_ids: Sequence[str]) -> str:
    """The known store whose id has ``name`` as one of its parts, else ``name`` as asked."""
    key = re.sub(r"['-]", "", name.lower())
    hits = [s for s in store_ids if key == s.lower() or key in re.split(r"[_\-.\s0-9]+", s.lower())]
    return hits[0] if len(hits) == 1 else name


def _place_name_zh(run: str) -> str | None:
    """The place name at the end of a run of Chinese characters before 店: the longest tail of
    three or four characters that starts the run or follows a boundary word, else the last two."""
    for n in (4, 3, 2):
        tail, before = run[-n:], run[-n - 1 : -n]
        bounded = n == 2 or not before or before in _PLACE_BOUNDARY_ZH
        if len(run) >= n and bounded and not _NOT_A_PLACE_ZH & set(tail):
            return tail
    return None


#: every store counted ("both stores", 两家店加起来, "all our stores"): the count (``n``, none for
#: "all"), the store noun (``s``) and a "combined" after it (``x``)
_STORE_COUNT_EN = re.compile(
    r"(?<![a-z])(?:(?P<all>all(?: (?:of )?(?:the|our))?|every one of (?:the|our))|(?P<both>both(?: (?:the|our))?)"
    r"|(?:the |our )?(?P<n>two|three|four|five|six|[2-9]))"
    r" (?P<s>stores|shops|branches|outlets|locations)(?P<x> (?:combined|together|in total|altogether))?(?![a-z])"
)
_STORE_COUNT_ZH = re.compile(
    r"(?:(?P<all>所有|全部|全体)的?|(?P<n>[两二三四五六七八九2-9])(?:家|个))(?P<s>门店|分店|店铺|店)"
    r"(?P<x>加起来|合起来|合计|一起|总共)?"
)


def _every_store(mt: MaskedText, vocab: Vocabulary) -> list[tuple[int, str]]:
    """Words that count every store of the memory ("both stores" where it holds two, 所有门店), read
    as all its stores: the count consumed, the store noun too when "combined" follows (else it is
    the dimension word's: 两个店的客流分别怎样). Another count (三家店 of two) is left unclaimed."""
    found: list[tuple[int, str]] = []
    held = len(vocab.store_ids)
    for pattern in (_STORE_COUNT_EN, _STORE_COUNT_ZH):
        for m in pattern.finditer(mt.view):
            count = 2 if m.groupdict().get("both") else parse_number(m["n"]) if m["n"] else held
            if count != held or held < 2 or not mt.free(m.start(), m.end()):
                continue
            # "combined" / 加起来: the stores as one, so the noun is no grouping either
            mt.consume(m.start(), m.end() if m.group("x") else m.start("s"))
            found += [(m.start(), s) for s in vocab.store_ids]
    return found


def match_place_stores(mt: MaskedText, vocab: Vocabulary) -> list[str]:
    """Stores named by a place rather than an id, or every store counted ("both stores"); consumed."""
    found: list[tuple[int, str]] = _every_store(mt, vocab)
    for pattern, groups in ((_STORE_PAIR_EN, ("v", "w")), (_STORE_PLACE_EN, ("v",))):
        for m in pattern.finditer(mt.view):
            if not {m[g] for g in groups} & _NOT_A_PLACE_EN and mt.free(m.start(), m.end()):
                found += [(m.start(g), _place_store(m[g], vocab.store_ids)) for g in groups]
                mt.consume(m.start(), m.end())
    for m in _STORE_PLACE_ZH.finditer(mt.view):
        run = m["v"][:-1] if m["v"][-1] in "分门" else m["v"]  # 静安分店, 南京路门店
        name = _place_name_zh(run)
        at = m.start("v") + len(run) - len(name or "")
        if name and mt.free(at, m.end()):
            found.append((at, _place_store(name, vocab.store_ids)))
            mt.consume(at, m.end())
    return list(dict.fromkeys(s for _, s in sorted(found)))


def _known(value: str, known: Sequence[str]) -> str:
    """The stored spelling of a value named in the question (case-insensitive), else as asked."""
    asked = value.upper() if re.fullmatch(r"[a-z]{1,2}[0-9]+[a-z]?|[a-z]", value) else value
    return next((k for k in known if k.lower() == value.lower()), asked)


def match_named(mt: MaskedText, vocab: Vocabulary) -> tuple[list[ValueHit], list[str]]:
    """Zone and product hits and store ids named by a code ("zone Z9", "7号店", "商品P123"),
    consumed; an unknown one stays in the plan (and finds no events) rather than being dropped."""
    hits: list[ValueHit] = []
    stores: list[str] = []
    for patterns, kind in ((_STORE_NAMED, "store"), (_PRODUCT_NAMED, "product_id"), (_ZONE_NAMED, "zone")):
        for pattern in patterns:
            for m in pattern.finditer(mt.view):
                if not mt.free(m.start(), m.end()):
                    continue
                raw = m.group("v")
                if kind == "store":
                    known = [s for s in vocab.store_ids if s.lower() == raw or s.lower().endswith("_" + raw)]
                    stores.append(known[0] if len(known) == 1 else _known(raw, vocab.store_ids))
                else:
                    value = _known(raw, vocab.attributes.get(kind, ()))
                    hits.append(ValueHit(m.group(0), kind, (value,), "named", 1.0, m.start(), m.end()))
                mt.consume(m.start(), m.end())
    return sorted(hits, key=lambda h: h.start), stores
