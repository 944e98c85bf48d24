"""The last stage of the rule parser's plan: every word of the question is used, or no answer.

Owned by :mod:`edge.analysis.parser`; called by :mod:`.core` on a valid plan. The question's
words no extractor claimed are read by :mod:`.accounting` with the cue words this plan uses
(:func:`cues_for`); words claimed but left out of the plan (a dimension it does not group by, a
measure it does not compute, a second period) count as not understood too. A reading with such
words is ``unsupported`` (CONTRACT.md section 4), never answered with another measure, period or
value in their place. A retrieval's free words are its query; a forecast, of the whole store, names
the stored values it cannot keep.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

from edge.analysis.metrics import METRIC_EVENT_TYPES
from edge.analysis.parser.accounting import OWN_DIMENSION, fields_used, residual
from edge.analysis.parser.lexicon import CUES, INTENT_CONTEXT
from edge.analysis.parser.pairs import CO_WINDOW, CONJ, METRIC_ITEM
from edge.analysis.parser.result import AttributeMatch, ParseResult
from edge.analysis.parser.slots import (
    CORRELATION_FORM,
    MORE_LESS,
    PEAK_SHIFT,
    QUESTION_TAG,
    SELLERS,
    WILL_IT,
    Draft,
    Slots,
)
from edge.analysis.parser.stage_fields import BUCKET_DIM
from edge.analysis.parser.stage_intent import FORECAST_SUBJECT, WHICH_DAYS
from edge.analysis.parser.stage_measure import TENDENCY
from edge.analysis.parser.text import Hit
from edge.analysis.parser.timecal import TimeInfo
from edge.analysis.parser.timekinds import WINDOW
from edge.analysis.parser.vocabmatch import TypeHit

logger = logging.getLogger(__name__)

_DAYS = re.compile(r"日子|(?<![a-z])days?(?![a-z])")
#: every cue the rules read: claimed words when the residual is taken (:mod:`.accounting`)
CUE_PATTERNS = (
    *CUES.values(),
    CORRELATION_FORM,
    WILL_IT,
    QUESTION_TAG,
    PEAK_SHIFT,
    TENDENCY,
    CONJ,
    SELLERS,
    MORE_LESS,
    _DAYS,
    CO_WINDOW,
    FORECAST_SUBJECT,
)
#: cue words of change over time: a plan of one level (a value, a ranking, a breakdown) does not
#: use them ("which store's complaints rose most" is not the store with the most complaints)
_CHANGE_CUES = (CUES["trend"], CUES["change"], CUES["effect"], PEAK_SHIFT)
_LEVEL_INTENTS = frozenset({"aggregate", "top_k", "breakdown"})
#: words that set two things side by side ("compared to the day before", 同比去年): a plan that
#: compares nothing does not use them
_SIDE_BY_SIDE = re.compile(r"同比|环比|(?<![a-z])(?:compared (?:to|with)|in comparison (?:to|with))(?![a-z])")
#: which way an outlier went ("abnormally low"): the anomaly operator reports each outlier's side
_OUTLIER_SIDE = re.compile(
    r"少|多|偏(?:高|低|多|少)|(?<![a-z])(?:low|high|up|down|dip(?:s|ped)?|drops?|dropped|jumps?|jumped)(?![a-z])"
)
_ASKED_BY = re.compile(
    r"(?:哪|各|每|按|(?<![a-z])(?:which|each|every|per|by|rank|ranked|ranking)(?![a-z]))[^\u0000]{0,4}$"
)


def account(question: str, s: Slots, d: Draft) -> ParseResult:
    """The ``ok`` result, or the ``unsupported`` one that names the words the plan does not use."""
    plan, matches = d.plan, tuple(d.matches)
    # a retrieval's free words are its query, when the question asks for events (a verb or a media
    # word, or a person's events): a retrieval the classifier forced on other words is accounted
    listed = d.intent == "retrieve" and bool({"retrieve_media", "retrieve_verb"} & s.cue or s.entities)
    if not listed:
        unused_dims = _unused_dimension_spans(plan, s.dim_hits)
        words = residual(
            s.mt,
            cues_for(plan),
            plan,
            claimed=_used_type_spans(plan, s.types),
            unclaimed=unused_dims,
            asked=[
                *_asked_by(s.text, unused_dims),
                *_unused_metric_spans(plan, s.metric_hits, d.counted),
                *_unused_range_spans(plan, s.info, s.text),
                *_condition_clauses(plan, s.text),
                *_forecast_values(d.intent, s),
                *_unranked_superlatives(plan, s),
                *_unused_window(plan, s),
                *_side_by_side(plan, s.text),
            ],
        )
        if words:
            return _not_understood(question, s, plan, words, matches)
    return ParseResult(
        plan=plan, status="ok", explanation=None, language=s.lang, matches=matches, read_as=s.read_as
    )


def _not_understood(
    question: str, s: Slots, plan: dict[str, Any], words: list[str], matches: tuple[AttributeMatch, ...]
) -> ParseResult:
    """A reading that leaves words of the question unused: never answered (CONTRACT.md section 4),
    whatever the rest says; another measure, period or value is never put in their place."""
    logger.info("question %r: not understood %s (reading %s)", question, words, plan)
    if s.lang == "zh":
        got = "、".join(s.understood) if s.understood else "无"
        text = (
            f"这个问题里有我不能用的内容：{'、'.join(f'“{w}”' for w in words)}"
            f"（没有读懂，或者门店数据里没有）。我不会拿别的指标、时间或条件来代替。我读懂的：{got}。"
        )
    else:
        got = ", ".join(s.understood) if s.understood else "nothing"
        text = (
            f"This question holds words I cannot use: {', '.join(repr(w) for w in words)} (not understood, "
            f"or not in the store's data). I will not answer another measure, period or condition "
            f"in their place. What I understood: {got}."
        )
    return ParseResult(
        plan=plan,
        status="unsupported",
        explanation=text,
        language=s.lang,
        matches=matches,
        not_understood=tuple(words),
        read_as=s.read_as,
    )


def cues_for(plan: dict[str, Any]) -> tuple[re.Pattern[str], ...]:
    """The cue patterns whose words a plan uses: change words only a plan over time, "which
    days" only a plan that answers day by day, the words of its kind (:data:`INTENT_CONTEXT`)
    only a plan of that kind."""
    intent = str(plan.get("intent"))
    cues = CUE_PATTERNS
    if intent in _LEVEL_INTENTS:
        cues = tuple(p for p in cues if p not in _CHANGE_CUES)
    if intent != "correlation":  # one measure the condition of another: a correlation's words
        cues = tuple(p for p in cues if p is not CUES["conditional"])
    if plan.get("target_metric") != "peak_hour":  # 挪, "pushed back": a peak moving
        cues = tuple(p for p in cues if p is not PEAK_SHIFT)
    if intent != "co_occurrence" and not _dated(plan):
        # 之后 what? no date, no pivot (a co-occurrence's 之后 is "followed by")
        cues = tuple(p for p in cues if p is not CUES["pivot"])
    if intent in INTENT_CONTEXT:
        cues = (*cues, INTENT_CONTEXT[intent])
    if intent == "anomaly":
        cues = (*cues, _OUTLIER_SIDE)
    if intent == "anomaly" or plan.get("time_bucket") == "day" or "date" in (plan.get("group_by") or ()):
        cues = (*cues, WHICH_DAYS)
    return cues


def _unused_dimension_spans(plan: dict[str, Any], dim_hits: Sequence[Hit]) -> list[tuple[int, int]]:
    """Dimension words ("staff", 区域) the plan neither groups nor compares by: "staff turnover"
    is not revenue because "staff" was read as a dimension and then left out."""
    f, compare = plan.get("filters") or {}, plan.get("compare") or {}
    used = fields_used(plan)  # "rainy weather": the key of a value it filters on
    if f.get("store_id"):
        used.add("store_id")
    own = OWN_DIMENSION.get(str(plan.get("target_metric")))
    if own:
        used.add(own)  # 店员差错率: the staff word is part of the measure's name
    if plan.get("intent") == "periodicity":  # "a day-of-week cycle", 按小时的规律: the cycle asked
        used |= {"day_of_week", "hour", "is_weekend"}
    if plan.get("time_bucket"):  # "which week": the buckets of a series
        used.add(BUCKET_DIM.get(str(plan["time_bucket"]), str(plan["time_bucket"])))
    if f.get("time_range") or compare.get("periods"):
        used.add("date")  # 日期 of a date the plan reads
    return [(h.start, h.end) for h in dim_hits if str(h.value) not in used]


def _asked_by(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The unused dimension words the question asks the answer by ("which store", 各区域): a plan
    that does not group by them answers another question."""
    return [(s, e) for s, e in spans if _ASKED_BY.search(text[max(0, s - 10) : s])]


def _unused_metric_spans(
    plan: dict[str, Any], hits: Sequence[Hit], counted: str | None
) -> list[tuple[int, int]]:
    """Measure words the plan does not compute ("when the queue is long are angry customers more
    common" read as the queue alone): another measure is never answered in their place."""
    if plan.get("intent") == "co_occurrence":
        return []  # its measure words name the things paired
    used = {plan.get("target_metric"), plan.get("second_metric"), counted}
    if plan.get("target_metric") == "footfall" and "hour" in (plan.get("group_by") or []):
        used.add("peak_hour")  # "the 3 busiest hours": footfall ranked by hour
    if plan.get("target_metric") == "event_count":  # "how many complaints": events of that type
        types = set((plan.get("filters") or {}).get("event_type") or ())
        used |= {m for m, t in METRIC_ITEM.items() if not types or t in types}
    return [(h.start, h.end) for h in hits if str(h.value) not in used]


#: a condition told as a clause ("since we moved the display", "after they changed the layout"):
#: something that happened, which no event of the memory dates
_CONDITION_CLAUSE = re.compile(
    r"(?<![a-z])(?:ever since|since|after|before|once|following) (?:we|they|i|you|he|she|it|the|our|their)"
    r"(?: [a-z']+){1,2}"
)


def _dated(plan: dict[str, Any]) -> bool:
    """The plan reads a date: a range, or periods around one (what 之后 / "since we moved" need)."""
    return bool((plan.get("compare") or {}).get("periods") or (plan.get("filters") or {}).get("time_range"))


def _side_by_side(plan: dict[str, Any], text: str) -> list[tuple[int, int]]:
    """Words that set two things side by side, in a plan that compares nothing: named."""
    if plan.get("intent") in ("compare", "correlation"):
        return []
    return [m.span() for m in _SIDE_BY_SIDE.finditer(text)]


def _unranked_superlatives(plan: dict[str, Any], s: Slots) -> list[tuple[int, int]]:
    """A value that ranks nothing ("the day with the most complaints", "highest revenue day" as the
    month's total): the words of the ranking it does not make are named (the peak hour is itself
    a superlative: "the busiest hour")."""
    if plan.get("intent") != "aggregate" or plan.get("target_metric") == "peak_hour":
        return []
    return [m.span() for m in CUES["top_rank"].finditer(s.text)]


def _unused_window(plan: dict[str, Any], s: Slots) -> list[tuple[int, int]]:
    """A window around a date (一周内, "the week after") that sets no periods: 三天内的营业额 is not the
    whole memory's revenue, so the window is named."""
    if not s.info.window_days or (plan.get("compare") or {}).get("periods"):
        return []
    # 一天里 / 一周里 is the day's or the week's course (几点人最多), not a window
    return [m.span() for m in WINDOW.finditer(s.text) if not m.group(0).endswith("里")]


def _forecast_values(intent: str, s: Slots) -> list[tuple[int, int]]:
    """A forecast is of the store (tomorrow's weather is not in the memory): the stored values
    and promotion days a question names are not forecast, so they are named."""
    if intent != "forecast":
        return []
    subject = [m.span() for m in FORECAST_SUBJECT.finditer(s.text)]  # 库存 / stock: what is forecast
    spans = [(v.start, v.end) for v in s.values] + [(h.start, h.end) for h in s.promo_hits]
    return [(a, b) for a, b in spans if not any(x < b and a < y for x, y in subject)]


def _condition_clauses(plan: dict[str, Any], text: str) -> list[tuple[int, int]]:
    """Condition clauses of a plan with no date to set them at: named, never dropped."""
    if _dated(plan):
        return []
    return [m.span() for m in _CONDITION_CLAUSE.finditer(text)]


def _unused_range_spans(plan: dict[str, Any], info: TimeInfo, text: str) -> list[tuple[int, int]]:
    """Periods read but not in the plan ("this week's revenue against last week's" as this week
    alone): only a comparison of periods uses more than one range (or a since/until pair)."""
    if (plan.get("compare") or {}).get("periods") or len(info.ranges) < 2:
        return []
    first = info.ranges[0]
    spans = []
    for r in info.ranges[1:]:
        if first.kind in ("since", "until") and r.kind in ("since", "until"):
            continue  # merged into one range
        pos = text.find(r.label)
        if pos >= 0:
            spans.append((pos, pos + len(r.label)))
    return spans


def _used_type_spans(plan: dict[str, Any], types: Sequence[TypeHit]) -> list[tuple[int, int]]:
    """The event-type words the plan uses (its event-type filter, a co-occurrence's items and what
    they are said of): matched without being consumed, since a metric word may name a type too."""
    if plan.get("intent") == "co_occurrence":
        return [(t.start, t.end) for t in types]
    used = set((plan.get("filters") or {}).get("event_type") or ())
    for m in (plan.get("target_metric"), plan.get("second_metric")):
        used |= set(METRIC_EVENT_TYPES.get(str(m), ()))  # "operations that were mistakes": the measure's own
    return [(t.start, t.end) for t in types if t.event_type in used]
