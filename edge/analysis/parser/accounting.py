"""Every word of a question accounted for: what no extractor claimed and is not a function word.

After the extractors (:mod:`.slots`), :func:`residual` claims the intent cue words that shaped the
plan, function words and punctuation; anything else comes back as ``not_understood`` (CONTRACT.md
section 4). A condition ("after the training", 促销期间) is claimed only with the pivot it stands for.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import Any

from edge.analysis.parser import lexicon as lx
from edge.analysis.parser.text import CJK, MaskedText, gapped, has_cjk, overlaps, word

#: a pivot's condition nouns: claimed only when the plan compares periods around a date
CONDITION = re.compile(lx.CONDITION_ZH + "|" + word(lx.CONDITION_EN))
#: an act and its object, up to the date or a masked word (加了一个收银员, "since we moved the bakery
#: shelves"): in English told by who did it at a clause's start, never a clause of a noun ("the
#: staff we hired": who, not when)
ACT_CLAUSE = re.compile(
    rf"(?:{lx.ACTS_ZH})[\u3400-\u9fff]{{0,6}}"
    rf"|(?:^|(?<=since )|(?<=after )|(?<=before )|(?<=when )|(?<=once )|(?<=so )|(?<=then )|(?<=, ))"
    rf"(?:we|they|i|you|he|she)(?: just| finally| also)? {word(lx.ACTS_EN)}"
    rf"(?: (?!(?:on|from|since|in|at|did|does|has|is|was)(?![a-z]))[a-z0-9'\-\u0000]+){{0,4}}"
)
#: the name of a pivot's event: its condition noun with the few words before it that name it
#: ("the new cashier training", 收银员培训), or the act that started it
CONDITION_NAME = re.compile(
    rf"[\u3400-\u9fff\u0000]{{0,6}}?(?:{lx.CONDITION_ZH})"
    rf"|(?:[a-z0-9'\-\u0000]+ ){{0,3}}{word(lx.CONDITION_EN)}|{ACT_CLAUSE.pattern}"
)
_PUNCT = re.compile(r"[\s\u0000?？!！。.,，、;；:：'\"“”‘’()（）\[\]【】《》<>/\\|~`@#$%^&*+=_-]+")
#: a negation is never the rest of a word (没 of 没有 when 有 was a function word): it is named
_NEGATION = frozenset("不没无未非")
_CJK_RUN = re.compile(CJK + "+")
#: a run of two or more compound characters (``\u0001``: a noun of them, :func:`compounds`)
_COMPOUND_CHARS = "".join(sorted(c for c in lx.ZH_COMPOUND if len(c) == 1))
_COMPOUND_RUN = re.compile(f"[{_COMPOUND_CHARS}\u0001]{{2,}}")
#: a measure whose events are told apart by one field of their own: its name holds the field's
#: word (店员差错率 is not a grouping by staff), and its events' words describe that field's values
OWN_DIMENSION = {"staff_error_rate": "staff_id", "negative_emotion_rate": "speech_emotion"}


def _negates(text: str, k: int) -> bool:
    """``text[k]`` is a negation, not the middle of a question's A-not-A (多不多, 涨没涨)."""
    return text[k] in _NEGATION and not (0 < k < len(text) - 1 and text[k - 1] == text[k + 1])


def _blank(mt: MaskedText, patterns: Iterable[re.Pattern[str]]) -> None:
    """Claim every match of every pattern, all read on the same view (cues may overlap), less
    the wildcard stretches inside a match (按年龄段拆分: 按 and 拆分 are the cue, 年龄段 is not)."""
    view = mt.view
    for p in patterns:
        if not p.search(view):  # the gapped pattern is compiled only for a cue in the question
            continue
        gapped_p = gapped(p)
        gap_names = [g for g in gapped_p.groupindex if g.startswith("_gap")]
        for m in gapped_p.finditer(view):
            pos = m.start()
            for a, b in sorted(m.span(g) for g in gap_names if m.start(g) >= 0):
                mt.consume(pos, a)
                pos = max(pos, b)
            mt.consume(pos, m.end())


def _blanked(pieces: str, words: Iterable[str], mark: str = "\u0000") -> str:
    """``pieces`` with every one of ``words`` (of CJK characters, longest first) replaced by ``mark``."""
    for w in sorted(words, key=len, reverse=True):
        if _CJK_RUN.fullmatch(w):
            pieces = pieces.replace(w, mark * len(w))
    return pieces


def zh_taken(pieces: str, measure_words: Iterable[str] = ()) -> list[bool]:
    """Per character of ``pieces``: blank (claimed, punctuation) or inside a function word or one of
    ``measure_words`` (longest first; only words of CJK characters, never found across a run's end)."""
    return [c == "\u0000" for c in _blanked(pieces, {*lx.ZH_FUNCTION, *measure_words})]


def compounds(pieces: str, measure_words: Iterable[str] = ()) -> list[tuple[int, int]]:
    """The spans of ``pieces`` where function characters side by side make a content word (店长,
    总店, 中位数, 大客户 of 大 and the noun 客户: ``lx.ZH_COMPOUND``): a run of two or more that is
    no function word (多少), no character repeated (慢慢) and not of nouns alone."""
    nouns = {w for w in lx.ZH_COMPOUND if len(w) > 1}
    words = {w for w in {*lx.ZH_FUNCTION, *measure_words} if len(w) > 1} - nouns
    view = _blanked(_blanked(pieces, words), nouns, "\u0001")
    return [
        m.span()
        for m in _COMPOUND_RUN.finditer(view)
        if pieces[m.start() : m.end()] not in lx.ZH_FUNCTION
        and len(set(pieces[m.start() : m.end()])) > 1
        and set(m.group(0)) != {"\u0001"}
    ]


def _zh_rest(
    text: str, start: int, end: int, taken: list[bool], known: Iterable[str], words: list[tuple[int, int]]
) -> list[str]:
    """The content left of the CJK run ``text[start:end]``: its characters not taken, less those
    that finish a ``known`` word in the question whose other characters were taken (客 of 客人 when
    人最多 was claimed, 间 of 时间 when 时 was a function word), never a negation; each of ``words``
    (compounds) a word of its own."""
    if all(taken[start:end]):
        return []
    done: set[int] = set()
    whole = {k for a, b in words for k in range(a, b)}  # a word of its own is never finished
    for w in (w for w in known if len(w) > 1):
        for i in overlaps(text, w, start, end):
            span = range(i, i + len(w))
            inside = [k for k in span if start <= k < end and not taken[k]]
            outside = [k for k in span if k not in inside]
            if inside and outside and all(taken[k] for k in outside):
                done.update(k for k in inside if not _negates(text, k) and k not in whole)
    asks = {i for i in range(start, end) if text[i] in _NEGATION and not _negates(text, i)}  # 高不高
    cuts = {i for span in words for i in span}
    rest = "".join(
        ("\u0000" if i in cuts else "") + ("\u0000" if taken[i] or i in done or i in asks else text[i])
        for i in range(start, end)
    )
    return [part for part in rest.split("\u0000") if part]


def literal(pattern: str) -> str:
    """``pattern`` less its lookarounds and character classes: what it spells, not what it
    only looks at ((?<!不下)雨 spells 雨, not 不下)."""
    out, i, depth = [], 0, 0
    while i < len(pattern):
        if pattern[i] in "\\[":  # an escape (\s, \x00) or a character class: no letter of a word
            i = i + 2 if pattern[i] == "\\" else pattern.index("]", i + 2) + 1
            out.append(" ")
        elif depth or pattern.startswith(("(?=", "(?!", "(?<=", "(?<!"), i):
            depth += (pattern[i] == "(") - (pattern[i] == ")")
            i += 1
            out.append(" ")
        else:
            out.append(pattern[i])
            i += 1
    return "".join(out)


@functools.lru_cache(maxsize=1)
def known_zh() -> frozenset[str]:
    """Every Chinese word (two or more characters) of the function words, the lexicon's tables and
    the intent cues."""
    return _table_words() | frozenset(w for p in lx.CUES.values() for w in _words_of(p))


@functools.lru_cache(maxsize=1)
def _table_words() -> frozenset[str]:
    """The Chinese words of the function words and the lexicon's tables."""
    sources: list[str] = [*lx.ZH_FUNCTION]
    for table in (lx.METRICS, lx.DIMENSIONS, lx.EVENT_TYPE_WORDS, lx.PROMOTION_VALUES):
        sources += [p.pattern for p, _ in table]
    sources += [p for groups in lx.VALUE_WORDS.values() for p, _ in groups]
    return frozenset(w for src in sources for w in re.findall(r"[\u3400-\u9fff]{2,}", literal(src)))


@functools.lru_cache(maxsize=512)
def _words_of(pattern: re.Pattern[str]) -> frozenset[str]:
    """The Chinese words (two or more characters) ``pattern`` spells."""
    return frozenset(re.findall(r"[\u3400-\u9fff]{2,}", literal(pattern.pattern)))


def stem(token: str) -> str:
    """A crude English stem: enough to tell "visit" and "visited" from "visitors"."""
    for suffix in ("ings", "ing", "ers", "ors", "ed", "es", "er", "or", "s"):
        if token.endswith(suffix) and len(token) - len(suffix) >= 3:
            return token[: -len(suffix)]
    return token


def fields_split(plan: dict[str, Any]) -> set[str]:
    """The fields a plan answers group by group: those it groups or compares by."""
    dimension = (plan.get("compare") or {}).get("dimension")
    return set(plan.get("group_by") or ()) | ({str(dimension)} if dimension else set())


def fields_used(plan: dict[str, Any]) -> set[str]:
    """The stats keys a plan filters, pairs, compares or groups by."""
    f, pair = plan.get("filters") or {}, plan.get("pair") or {}
    used = set(f.get("attributes") or {}) | fields_split(plan)
    return used | {str(pair.get(s)).split("=", 1)[0] for s in ("a", "b") if "=" in str(pair.get(s))}


def _measure_words(plan: dict[str, Any]) -> tuple[frozenset[str], tuple[str, ...]]:
    """The words of the plan's measures (English stems: "people visit" is visitors', Chinese words),
    with the words describing a measure's events (``MEASURE_CONTEXT``) when the plan uses the field
    they carry ("angry voices" paired with complaints: speech emotions)."""
    wanted = {plan.get("target_metric"), plan.get("second_metric")} - {None}
    en: set[str] = set()
    zh: set[str] = set()
    for pattern, metric in lx.METRICS:
        if metric in wanted:
            spelt = literal(pattern.pattern)
            en |= {stem(w) for w in re.findall(r"[a-z]{3,}", spelt)}
            zh |= set(re.findall(r"[\u3400-\u9fff]{2,}", spelt))
    used = fields_used(plan)
    wanted |= {m for m, key in OWN_DIMENSION.items() if key in used}
    for metric in wanted:
        zh_words, en_words = lx.MEASURE_CONTEXT.get(str(metric), ((), ()))
        zh |= set(zh_words)
        en |= {stem(w) for w in en_words} | set(en_words)
    return frozenset(en), tuple(zh)


_BEFORE_DATE = re.compile(r"\s*(?:on|from|at)\s+(?:the\s+)?")
_AFTER_DATE = re.compile(r"[\s的]*")
#: a clause told as the time of what follows ("since the training", "after we moved")
_TOLD = re.compile(
    r"(?<![a-z])(?:ever since|since|after|before|following|until|till|once)\s+(?:[a-z'\-\u0000]+\s+){0,5}[a-z'\-]+$"
)


#: the words before an event's name that readers took (and a possessive of theirs: staff_07's)
_LEAD = re.compile(r"(?:[\u0000 ]|'s(?= ))*")


def _names(view: str, m: re.Match[str], spans: Iterable[tuple[int, int, str]]) -> bool:
    """Whether ``m`` (a condition's or an act's words) names one of the dates a range opens or ends
    at: ``spans`` are those dates ("open"; "closed" when a word such as 以来 ends one) and the names
    already found ("name"). It is told right before one ("since the training on 10 November", the
    campaign launch) or right after one (十一月十号培训, 新陈列上线; not 12月1日以来会员活动), and holds
    no word another reader claimed."""
    lead = _LEAD.match(m.group(0)).end()  # type: ignore[union-attr]  # the words before it, already read
    start = m.start() + lead
    for a, b, kind in spans:
        if "\u0000" in view[max(start, b) if start >= a else start : m.end()]:
            continue
        told = has_cjk(m.group(0)) or _TOLD.search(view[max(0, m.start() - 40) : m.end()])
        gap = _AFTER_DATE if kind == "name" else _BEFORE_DATE
        if m.end() <= a and gap.fullmatch(view, m.end(), a) and (told or kind == "name"):
            return True
        if kind != "closed" and a <= start and b <= m.end() and _AFTER_DATE.fullmatch(view, b, max(b, start)):
            return True
    return False


def _unread(view: str, m: re.Match[str]) -> bool:
    """Whether an act that names a pivot's event holds no word another reader claimed (they would
    be filters: "we moved the bakery shelves" is no day of the shelves)."""
    act = ACT_CLAUSE.match(view, m.start())
    return not (act and "\u0000" in act.group(0))


def residual(
    mt: MaskedText,
    cue_patterns: Iterable[re.Pattern[str]],
    plan: dict[str, Any],
    *,
    claimed: Iterable[tuple[int, int]] = (),
    unclaimed: Iterable[tuple[int, int]] = (),
    asked: Iterable[tuple[int, int]] = (),
    asides: list[str] | None = None,
    whole: Iterable[tuple[int, int]] = (),
    dated: Iterable[tuple[int, int, str]] = (),
) -> list[str]:
    """The question's content words nothing claimed (``mt`` is left as it is), in question order,
    as typed (normalised). ``claimed``: spans the plan uses that no extractor consumed (event-type
    words); ``unclaimed``: spans consumed that the plan does not use (a dimension it does not group
    by); ``asked``: such spans the answer is to be given by ("which store"), named even when a
    function word; ``cue_patterns``: the intent cues; ``asides``: when given, the clauses about the
    asking, not the data, are set aside (their words not named) and appended to it; ``whole``:
    unclaimed spans that are words of their own unless function words spell them (店员); ``dated``:
    the spans of the named dates a plan's range opens or ends at (what happened on one names it:
    "since the training on 10 November")."""
    work = mt.copy()
    for start, end in unclaimed:  # read by an extractor, but the plan does not use it
        work._chars[start:end] = mt.text[start:end]
    for start, end in claimed:
        work.consume(start, end)
    # a condition the plan has no pivot for is content it does not use; with a pivot (its date is
    # what is computed) the words naming its event are its label
    pivot = bool((plan.get("compare") or {}).get("periods"))
    named: list[tuple[int, int]] = []
    edges = list(dated)
    found = list(CONDITION_NAME.finditer(work.view))
    for _ in range(2):  # nearest the date first: "the campaign launch on", 新陈列上线
        for m in found:
            if m.span() not in named and (pivot and _unread(work.view, m) or _names(work.view, m, edges)):
                named.append(m.span())
                edges.append((*m.span(), "name"))
    kept = [m.span() for p in (CONDITION, ACT_CLAUSE) for m in p.finditer(work.view)]
    kept = [(s, e) for s, e in kept if not any(a <= s and e <= b for a, b in named)]
    for span in named:
        work.consume(*span)
    cue_patterns = list(cue_patterns)
    _blank(work, cue_patterns)
    for s, e in kept:  # un-claim the condition nouns a cue pattern swallowed
        work._chars[s:e] = mt.text[s:e]
    view = work.view
    en_known, zh_measure = _measure_words(plan)
    pieces = _PUNCT.sub(lambda p: "\u0000" * len(p.group(0)), view)
    taken = zh_taken(pieces, zh_measure)
    joined = compounds(pieces, zh_measure)  # 店长: content, though 店 and 长 are function words
    # a field's word the plan does not use is a word of its own, unless function words spell it
    # whole (门店): 店员 of 店员被投诉 is not 员 finishing 店员 after the function character 店
    multi = {w for w in (*lx.ZH_FUNCTION, *zh_measure) if len(w) > 1}
    joined += [
        (a, b) for a, b in whole if has_cjk(mt.text[a:b]) and _blanked(mt.text[a:b], multi).strip("\u0000")
    ]
    for a, b in joined:
        taken[a:b] = [False] * (b - a)
    # the words a character may finish: the tables' and the cues the plan uses (提 of 提高 under a
    # value, which uses no word of change, is named, not finished by the function word 高)
    known = _table_words().union(zh_measure, *(_words_of(p) for p in cue_patterns))
    words: list[tuple[int, str]] = []
    for m in re.finditer(r"[a-z0-9][a-z0-9'\-.]*|[\u3400-\u9fff]+", pieces):
        token = m.group(0).strip(".'-")
        if _CJK_RUN.fullmatch(token):
            words += [(m.start(), w) for w in _zh_rest(mt.text, m.start(), m.end(), taken, known, joined)]
        elif (
            token not in lx.EN_FUNCTION
            and not (token.endswith("s") and token[:-1] in lx.EN_FUNCTION)
            and stem(token) not in en_known
        ):
            words.append((m.start(), token))
    spans = list(asked)
    words = [(p, w) for p, w in words if not any(a <= p < b for a, b in spans)]  # named with its span
    if asides is not None:
        words, aside = _without_asides(mt, words, asides)
        spans = [(s, e) for s, e in spans if not any(a <= s < b for a, b in aside)]
    return list(dict.fromkeys([mt.text[s:e].strip() for s, e in spans] + [w for _, w in words]))


#: where a clause ends: a comma, a colon, a semicolon, a dash, a sentence's end
_CLAUSE_END = re.compile(r"[,，:：;；!！?？。—–]+|\s-+\s|\.(?:\s|$)")
_ASIDE_NEVER = re.compile(lx.ASIDE_NEVER)
_ASIDE_FRAME = re.compile(lx.ASIDE_FRAME)
_ASIDE_LEAD = re.compile(lx.ASIDE_LEAD)
#: the Chinese words of an aside, longest first (:func:`_aside_zh`)
_ASIDE_ZH = sorted({*lx.ASIDE_ZH, *lx.ZH_FUNCTION}, key=len, reverse=True)


def _aside_zh(text: str, view: str, a: int, b: int) -> bool:
    """Whether every Chinese character of ``text[a:b]`` nothing read is inside an aside or a
    function word of the clause (老板让我问一下: 老板, 让, 我, 问一下)."""
    raw = _blanked(text[a:b], _ASIDE_ZH)
    return all(raw[i - a] == "\u0000" for i in range(a, b) if _CJK_RUN.match(text[i]) and view[i] != "\u0000")


def _is_aside_word(word: str) -> bool:
    """An English word of an aside, or its plural."""
    return word in lx.ASIDE_EN or (word.endswith("s") and word[:-1] in lx.ASIDE_EN)


def _without_asides(
    mt: MaskedText, words: list[tuple[int, str]], asides: list[str]
) -> tuple[list[tuple[int, str]], list[tuple[int, int]]]:
    """``words`` less those of the question's aside clauses (``lx.ASIDE_*``), and those clauses'
    spans, each clause's text appended to ``asides``: a clause in which no extractor read anything
    while another clause was read, which holds a frame of asking, whose every word left is an
    aside word, and which names no time, condition or narrowing word."""
    text, view = mt.text, mt.view
    bounds = [0, *(i for m in _CLAUSE_END.finditer(text) for i in m.span()), len(text)]
    if lead := _ASIDE_LEAD.match(text):  # "my boss wants to know the …": who asks is a clause
        bounds = sorted([*bounds, lead.end(), lead.end()])
    clauses = [(a, b) for a, b in zip(bounds[::2], bounds[1::2], strict=True) if text[a:b].strip()]
    read = [any(view[i] == "\u0000" and not text[i].isspace() for i in range(a, b)) for a, b in clauses]
    out, spans = list(words), []
    for (a, b), was_read in zip(clauses, read, strict=True):
        inside = [(p, w) for p, w in words if a <= p < b]
        if (
            was_read
            or not inside
            or not any(read)
            or _ASIDE_NEVER.search(text[a:b])
            or not _ASIDE_FRAME.search(text[a:b])
            or not all(_is_aside_word(w) for _, w in inside if not _CJK_RUN.fullmatch(w))
            or not _aside_zh(text, view, a, b)
        ):
            continue
        asides.append(text[a:b].strip())
        spans.append((a, b))
        out = [pw for pw in out if pw not in inside]
    return out, spans
