"""The last stage of the rule parser's plan: every word of the question is used, or no answer.

Called by :mod:`.core` on a valid plan: the words no extractor claimed, less the cue words the plan uses
(:func:`cues_for`), and the words claimed but left out of it (a dimension it does not group by, a measure
it does not compute, a second period) make the reading ``unsupported`` (CONTRACT.md section 4).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

from edge.analysis.metrics import METRIC_EVENT_TYPES
from edge.analysis.parser import slots as sl
from edge.analysis.parser.accounting import OWN_DIMENSION, fields_split, fields_used, residual
from edge.analysis.parser.lexicon import CUES, INTENT_CONTEXT, SHAPES
from edge.analysis.parser.refusal import PATTERNS, STAGES, said
from edge.analysis.parser.result import ParseResult
from edge.analysis.parser.slots import Draft, Slots
from edge.analysis.parser.stage_fields import BUCKET_DIM, HEAD_GAP
from edge.analysis.parser.stage_intent import METRIC_ITEM, WHICH_DAYS
from edge.analysis.parser.text import Hit
from edge.analysis.parser.timekinds import WINDOW

logger = logging.getLogger(__name__)

#: every cue the rules read: claimed words when the residual is taken (:mod:`.accounting`)
CUE_PATTERNS = (
    *CUES.values(),
    *(sl.CORRELATION_FORM, sl.WILL_IT, sl.QUESTION_TAG, sl.PEAK_SHIFT, sl.SELLERS, sl.MORE_LESS),
    *(PATTERNS[k] for k in ("tendency", "conj", "days", "co_window", "forecast_subject")),
)
#: cue words of change over time: a plan of one level (a value, a ranking, a breakdown) does not
#: use them ("which store's complaints rose most" is not the store with the most complaints)
_CHANGE_CUES = (CUES["trend"], CUES["change"], CUES["effect"], sl.PEAK_SHIFT)
_LEVEL_INTENTS = frozenset({"aggregate", "top_k", "breakdown"})


def account(question: str, s: Slots, d: Draft) -> ParseResult:
    """The ``ok`` result, or the ``unsupported`` one that names the words the plan does not use."""
    plan, words = d.plan, []
    asides: list[str] = []
    # a retrieval's free words are its query, when the question asks for events (a verb or a media
    # word, or a person's events): a retrieval the classifier forced on other words is accounted
    if d.intent != "retrieve" or not ({"retrieve_media", "retrieve_verb"} & s.cue or s.entities):
        unused = _unused_dimension_spans(plan, s.dim_hits, s.text)
        # the products' word right after a category the plan filters on is its head noun (酒类商品,
        # "bakery products": the products of the category), not a grouping left unused
        category = "product_category" in ((plan.get("filters") or {}).get("attributes") or {})
        if category or "product_category" in (plan.get("group_by") or ()):  # or its share of all
            ends = {v.end for v in s.values if v.key == "product_category"}
            heads = {(h.start, h.end) for h in s.dim_hits if h.value == "product_id"}
            unused = [
                (a, b)
                for a, b in unused
                if (a, b) not in heads or not any(HEAD_GAP.fullmatch(s.text[e:a]) for e in ends if e <= a)
            ]
        # event-type words the plan uses are matched without being consumed (a metric word may name
        # a type too): its event-type filter, a co-occurrence's items, the measure's own types
        used = set((plan.get("filters") or {}).get("event_type") or ())
        for m in (plan.get("target_metric"), plan.get("second_metric")):
            used |= set(METRIC_EVENT_TYPES.get(str(m), ()))
        claimed = [(t.start, t.end) for t in s.types if t.event_type in used or d.intent == "co_occurrence"]
        # an event type's word the plan does not use is a word of its own (进店 of 进店的总人数 beside
        # the orders counted), never finished by the function character beside it
        unused_types = [(t.start, t.end) for t in s.types if (t.start, t.end) not in claimed]
        claimed += d.claimed
        asked = _asked(plan, s, d, unused)
        # the unused words of a field of things (店员, not 几点钟 of a peak hour) are words of their own
        things = [
            (h.start, h.end) for h in s.dim_hits if (h.start, h.end) in unused and h.value not in _TIME_FIELDS
        ]
        words = residual(
            s.mt,
            cues_for(plan),
            plan,
            claimed=claimed,
            unclaimed=[*unused, *s.told],
            asked=asked,
            asides=asides,
            whole=[*things, *unused_types],
            dated=_edge_dates(plan, s),
        )
    explanation = None
    if words:  # never answered with another measure, period or value in their place
        logger.info("question %r: not understood %s (reading %s)", question, words, plan)
        quoted = said("list", s.lang).join(said("quoted", s.lang, w=w) for w in words)
        got = said("list", s.lang).join(s.understood) if s.understood else said("nothing", s.lang)
        explanation = said("not_understood", s.lang, words=quoted, got=got)
    return ParseResult(
        plan=plan,
        status="unsupported" if words else "ok",
        explanation=explanation,
        language=s.lang,
        matches=tuple(d.matches),
        not_understood=tuple(words),
        read_as=(*s.read_as, *d.read_as),
        set_aside=tuple(asides),
    )


#: between a word and the noun it modifies ("morning peak footfall", 高峰时段的客流)
_MODIFIES = re.compile(r"\s?的?\s?")
#: a word of the future (a plan of the past answers none): not "will you show me"
_WILL = re.compile(
    r"(?<![a-z])(?:will(?! (?:you|u)(?![a-z]))|gonna|going to(?= be| come| sell| get| have))(?![a-z])"
)
#: a day of a kind counted from another ("the weekend before")
_BEFORE_AFTER = re.compile(r"\s(?:before|after)(?![a-z])")
#: "by" right before days of a kind or a weekday
_BY_DAY = re.compile(r"(?<![a-z])by (?:the )?$")
#: a comparative inside a measure's word ("busier", "more customers", 更多顾客)
_COMPARATIVE = re.compile(r"(?<![a-z])(?:busier|quieter|more|fewer|less)(?![a-z])|更")
#: a measure said up or down right after its word ("revenue is up", "sales are down")
_UP_DOWN = re.compile(
    r"\s(?:(?:is|are|was|were|has been|have been|went|gone|going)\s)?(up|down)(?![a-z])(?! (?:to|till|until|through)(?![a-z]))"
)
#: a word that asks for each or which one ("each weekend", 哪个周末), not "by" (a measure's condition)
_EACH = re.compile(r"(?:(?<![a-z])(?:each|which)\s|哪个|哪一个|每个|每一个|各个)$")
#: a word of "about" before or after a day ("around Nov 11", 双十一前后)
_AROUND_BEFORE = re.compile(r"(?<![a-z])(?:around|roughly|approximately) (?:the )?$")
_AROUND_AFTER = re.compile(r"\s?(?:前后|左右|附近)")
#: the words of leaving out that are function words each ("other than"; "excluding" is named anyway)
_LEAVING = re.compile(r"(?<![a-z])(?:other than|apart from|aside from|besides)(?![a-z])")
#: the fields whose values are kinds: "by weather type" groups by the field itself
_KINDS = frozenset({"weather", "event_type", "product_category"})
#: the fields of time, whose words often stand beside a measure of them (几点钟 of a peak hour)
_TIME_FIELDS = frozenset({"hour", "date", "week", "month", "day_of_week", "is_weekend"})


def _edge_dates(plan: dict[str, Any], s: Slots) -> list[tuple[int, int, str]]:
    """The spans of the dates the plan's range opens or ends at ("since the training on 10
    November"), each "closed" when a word of its edge ends it (以来), else "open": what happened on one names it,
    as a pivot's event does."""
    tr = (plan.get("filters") or {}).get("time_range") or {}
    if len({"since", "until"} & set(tr)) != 1 or "last" in tr:
        return []
    starts = {at for _, at in s.info.pivot_dates}
    return [
        (r.start, r.start + len(r.label), "closed" if _EDGE_WORD.search(r.label) else "open")
        for r in s.info.ranges
        if r.start in starts
    ]


#: a word after a date that makes it a range's edge (12月1日以来)
_EDGE_WORD = re.compile(r"(?:以来|至今|迄今|之后|以后|后|起|开始|之前|以前|为止|现在|今天)$")


def _dated(plan: dict[str, Any]) -> bool:
    """The plan reads a date: a range, or periods around one (what 之后 / "since we moved" need)."""
    return bool((plan.get("compare") or {}).get("periods") or (plan.get("filters") or {}).get("time_range"))


def cues_for(plan: dict[str, Any]) -> tuple[re.Pattern[str], ...]:
    """The cue patterns whose words a plan uses: change words only a plan over time, "which days" only
    a plan that answers day by day, the words of its kind (:data:`INTENT_CONTEXT`) only that kind."""
    intent = str(plan.get("intent"))
    dropped = set(_CHANGE_CUES) if intent in _LEVEL_INTENTS else set()
    if intent != "correlation":  # one measure the condition of another: a correlation's words
        dropped.add(CUES["conditional"])
    if intent not in ("periodicity", "co_occurrence"):  # "how many repeat visitors": no cycle computed
        dropped.add(CUES["periodicity"])
    if plan.get("target_metric") != "peak_hour":  # 挪, "pushed back": a peak moving
        dropped.add(sl.PEAK_SHIFT)
    if intent != "co_occurrence":  # "24小时": a pairing's window; 之后 with no date: no pivot to follow
        dropped |= {PATTERNS["co_window"]} if _dated(plan) else {PATTERNS["co_window"], CUES["pivot"]}
    days = intent == "anomaly" or plan.get("time_bucket") == "day" or "date" in (plan.get("group_by") or ())
    outlier_side = PATTERNS["outlier_side"] if intent == "anomaly" else None
    by_hour = (plan.get("compare") or {}).get("dimension") == "hour"  # "against the other hours"
    extra = (
        INTENT_CONTEXT.get(intent),
        outlier_side,
        WHICH_DAYS if days else None,
        PATTERNS["rest_of_day"] if by_hour else None,
    )
    return (*(p for p in CUE_PATTERNS if p not in dropped), *(p for p in extra if p is not None))


def _unused_dimension_spans(
    plan: dict[str, Any], dim_hits: Sequence[Hit], text: str
) -> list[tuple[int, int]]:
    """Dimension words ("staff", 区域) the plan neither groups nor compares by ("staff turnover"); a
    "which" word of a field it only filters on several values of (两家店…哪家高: the two pooled)."""
    f = plan.get("filters") or {}
    pooled = {
        k
        for k, v in [("store_id", f.get("store_id")), *(f.get("attributes") or {}).items()]
        if isinstance(v, list) and len(v) > 1
    }
    pooled -= fields_split(plan)
    which = [
        h
        for h in dim_hits
        if str(h.value) in pooled and PATTERNS["asked_by"].search(text[max(0, h.start - 10) : h.start + 1])
    ]
    used = fields_used(plan)  # "rainy weather": the key of a value it filters on
    if (plan.get("filters") or {}).get("store_id"):
        used.add("store_id")
    if own := OWN_DIMENSION.get(str(plan.get("target_metric"))):
        used.add(own)  # 店员差错率: the staff word is part of the measure's name
    counted = set((plan.get("filters") or {}).get("event_type") or ())
    for metric, field in OWN_DIMENSION.items():  # "how many mistakes did staff make": the rate's events
        key, events = STAGES["count_of"][metric]
        if key == "event_type" and counted & set(events):
            used.add(field)
    if plan.get("intent") == "periodicity":  # "a day-of-week cycle", 按小时的规律: the cycle asked
        used |= {"day_of_week", "hour", "is_weekend"}
    if plan.get("time_bucket"):  # "which week": the buckets of a series
        used.add(BUCKET_DIM.get(str(plan["time_bucket"]), str(plan["time_bucket"])))
    if _dated(plan):
        used.add("date")  # 日期 of a date the plan reads
    return [(h.start, h.end) for h in dim_hits if str(h.value) not in used or h in which]


def _asked(plan: dict[str, Any], s: Slots, d: Draft, unused: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Words the plan leaves out that the question asks for: named even as function words."""
    intent, target, text, info = plan.get("intent"), plan.get("target_metric"), s.text, s.info
    periods = (plan.get("compare") or {}).get("periods")
    # unused dimension words the answer is asked by ("which store", 各区域)
    # (哪家店 itself, unless a comparison's sides are what it asks between: 周六和周日，哪天)
    which_in = 1 if intent != "compare" else 0
    spans = [(a, b) for a, b in unused if PATTERNS["asked_by"].search(text[max(0, a - 10) : a + which_in])]
    if intent != "co_occurrence":  # measure words not computed (a co-occurrence's name its items)
        used = {target, plan.get("second_metric"), d.counted}
        if target == "footfall" and "hour" in (plan.get("group_by") or []):
            used.add("peak_hour")  # "the 3 busiest hours": footfall ranked by hour
        peaks = [h.end for h in s.metric_hits if h.value == "peak_hour"]
        if target == "peak_hour" and not any(
            h.value == "footfall" and any(_MODIFIES.fullmatch(text, e, h.start) for e in peaks)
            for h in s.metric_hits
        ):  # "the peak hour for footfall": the hour of the most visitors; not 早高峰客流, the visitors
            used.add("footfall")  # of the peak (a number, not an hour)
        if target == "event_count":  # "how many complaints": events of that type
            types = set((plan.get("filters") or {}).get("event_type") or ())
            # a rate's events counted by a field of theirs (speech emotions) are no other type's:
            # "how many angry complaints" is not every angry voice
            by_field = d.counted is not None and STAGES["count_of"][d.counted][0] != "event_type"
            used |= {m for m, t in METRIC_ITEM.items() if (not types and not by_field) or t in types}
        spans += [(h.start, h.end) for h in s.metric_hits if str(h.value) not in used]
    # periods after the first ("this week's revenue against last week's"), but a since/until pair
    merged = ("since", "until") if info.ranges and info.ranges[0].kind in ("since", "until") else ()
    for r in () if periods else info.ranges[1:]:
        if r.kind not in merged and (pos := text.find(r.label)) >= 0:
            spans.append((pos, pos + len(r.label)))
    if not _dated(plan):  # condition clauses with no date to set them at
        spans += [m.span() for m in PATTERNS["condition_clause"].finditer(text)]
    if d.intent == "forecast":  # of the store: the stored values and promotion days it names, but
        subject = [m.span() for m in PATTERNS["forecast_subject"].finditer(text)]  # 库存: what is forecast
        named = [(v.start, v.end) for v in s.values] + [(h.start, h.end) for h in s.promo_hits]
        spans += [(a, b) for a, b in named if not any(x < b and a < y for x, y in subject)]
    rates = [m for m in (target, plan.get("second_metric")) if str(m).endswith("_rate")]
    if intent not in ("breakdown", "top_k", "co_occurrence", "retrieve") and not rates:
        spans += [m.span() for m in PATTERNS["share_asked"].finditer(text)]  # a share, not a count
    if intent not in ("co_occurrence", "retrieve") and not rates and d.counted is None:
        spans += [m.span() for m in PATTERNS["rate_word"].finditer(s.mt.view)]  # "the return rate"
    spans += [m.span() for m in PATTERNS["group_kind"].finditer(text)]  # "the usual customers"
    spans += [m.span() for m in PATTERNS["day_after_kind"].finditer(text)]  # "after a sunny day"
    if intent not in ("trend", "periodicity", "anomaly", "correlation", "retrieve"):  # "what kind of trend"
        spans += [m.span() for m in PATTERNS["kind_asked"].finditer(s.mt.view)]  # "which type of mistake"
    # a stored value asked by ("revenue by cashier", 各个入口的客流, "which checkout"): each of several
    # of a kind the memory does not tell apart, never the one value's total
    grouped = set(plan.get("group_by") or ()) | {(plan.get("compare") or {}).get("dimension")}

    def asked_by(start: int) -> bool:
        return bool(SHAPES["by_word"].search(text[:start]) or SHAPES["asks_by"].search(text[:start]))

    measured = {h.start for h in s.metric_hits}

    def conditions(end: int) -> bool:
        """Whether a measure's word follows right after (a space): "rank the stores by bakery
        revenue", "by weekend revenue" is the measure's condition, no grouping."""
        return text[end : end + 1] == " " and end + 1 in measured

    spans += [
        (v.start, v.end)
        for i, v in enumerate(s.values)
        if i not in d.used_values and v.key not in grouped and asked_by(v.start) and not conditions(v.end)
    ]
    # the same of days of a kind: "revenue by promo day", 每个周末的营业额, "which weekend was busiest"
    spans += [
        (h.start, h.end)
        for h in s.promo_hits
        if "promotion" not in grouped and asked_by(h.start) and not conditions(h.end)
    ]
    weeks = grouped & {"week", "date"}
    spans += [
        (m.start, m.start + len(m.label))
        for m in info.days
        if m.weekend and not weeks and _EACH.search(text[: m.start])
    ]
    # "revenue by weekend" (each weekend?), "how much revenue by Friday" (up to it?): named, not a
    # measure's condition ("rank the stores by weekend revenue")
    by_days = grouped & {"is_weekend", "day_of_week"}  # "revenue by weekend vs weekday": compared
    spans += [
        (m.start, m.start + len(m.label))
        for m in info.days
        if not by_days and _BY_DAY.search(text[: m.start]) and not conditions(m.start + len(m.label))
    ]
    if intent == "trend" and info.ranges:  # 上个月的客流比以前多吗, "than it was before Dec 1": the period
        # against the time before it, which no course inside the month answers
        spans += [m.span() for m in sl.THAN_BEFORE.finditer(text) if m.group(0).startswith(("than", "比"))]
    # "revenue around Nov 11", 双十一前后: days around a date no one counted, never that day alone
    for r in info.ranges:
        if m := _AROUND_BEFORE.search(text, max(0, r.start - 12), r.start):
            spans.append(m.span())
        if m := _AROUND_AFTER.match(text, r.start + len(r.label)):
            spans.append(m.span())
    if intent != "forecast":  # "how many customers will come on Saturday": the next one, not every past one
        spans += [m.span() for m in _WILL.finditer(s.mt.view)]
    # "complaints by type": one event type split by event type is all of it (its kinds are no field)
    types = set((plan.get("filters") or {}).get("event_type") or METRIC_EVENT_TYPES.get(str(target), ()))
    if "event_type" in (plan.get("group_by") or ()) and (len(types) == 1 or str(target).endswith("_rate")):
        spans += [(h.start, h.end) for h in s.dim_hits if h.value == "event_type"]
    # 截至今天上午10点: up to an hour of a day, which no plan's range and hours say (it would be that
    # hour on every day up to the day's end): the hour is named
    for r in info.ranges:
        end = r.start + len(r.label)
        spans += [
            (h.start, h.start + len(h.label))
            for h in info.hours
            if r.kind == "until" and h.start >= end and not text[end : h.start].strip()
        ]
    # "than the weekend before": a weekend counted from another, which no plan reads (not weekends)
    for day in info.days:
        end = day.start + len(day.label)
        if (after := _BEFORE_AFTER.match(text, end)) and text[: day.start].endswith("the "):
            spans.append((day.start - 4, after.end()))
    # "footfall since 8am": since an hour of which day? (with a day named: that day's hours)
    if not info.ranges:
        spans += [(h.start, h.start + len(h.label)) for h in info.hours if h.label.startswith("since")]
    # "complaints other than about the queue": the words that leave out what follows them, unless
    # a reader used them (excluding weekends: the other days), never dropped for the thing itself
    leaving = [m.span() for m in _LEAVING.finditer(text) if not any(a <= m.start() < b for a, b in d.claimed)]
    spans += leaving
    if intent == "aggregate":  # "was footfall up last week", "is revenue higher": against what?
        view = s.mt.view
        for m in (m for p in (CUES["compare"], CUES["change"], sl.MORE_LESS) for m in p.finditer(s.text)):
            free = [
                i
                for i in range(*m.span())
                if view[i] not in "\u0000 " and not any(a <= i < b for a, b in leaving)
            ]  # its words nothing read
            if free and "多少" not in text[free[0] : free[-1] + 1]:  # 占比是多少: how much, no comparison
                spans.append((free[0], free[-1] + 1))
        # a measure's word that compares ("busier today?", "did we get more customers") or one
        # said up or down ("revenue is up?", "sales are down this week")
        spans += [(h.start, h.end) for h in s.metric_hits if _COMPARATIVE.search(h.text)]
        spans += [
            m.span(1) for m in _UP_DOWN.finditer(text) if any(h.end == m.start() for h in s.metric_hits)
        ]
    kinds = [m.span() for m in PATTERNS["kind_by"].finditer(s.mt.view)]  # "by error type"
    kinds += [m.span() for m in PATTERNS["by_unread"].finditer(s.mt.view)]  # "by payment type"
    # the kinds of a field whose values are kinds ("by weather type"), not of another ("by staff type")
    kinds = [(a, b) for a, b in kinds if not any(a <= h.start < b and h.value in _KINDS for h in s.dim_hits)]
    spans += kinds
    if (
        s.held_stores > 1
        and not s.stores
        and d.compare_from != "store_id"
        and "store_id" not in fields_used(plan)
    ):
        spans += [m.span() for m in PATTERNS["store_pointed"].finditer(text)]  # "that store": which one?
    split = fields_split(plan)
    if s.held_stores > 1 and "store_id" not in split:  # 两家店都有规律吗: each store, never both pooled
        spans += [m.span("w") if m.group("w") else m.span() for m in PATTERNS["each_store"].finditer(text)]
    if len((plan.get("filters") or {}).get("store_id") or ()) > 1 and "store_id" not in split:
        spans += [m.span() for m in PATTERNS["alike"].finditer(text)]  # "the same rhythm at X and Y"
    if intent not in ("periodicity", "forecast", "retrieve"):  # "was it shorter after 1 Dec, by hour"
        by = {plan.get("time_bucket")} | {b for b, dim in BUCKET_DIM.items() if dim in split}
        if intent in ("compare", "correlation", "co_occurrence"):
            by.add("day")  # a comparison of means per day, a correlation of daily values
        spans += [(h.start, h.end) for h in s.bucket_hits if str(h.value) not in by]
    if intent == "top_k":  # "the top 3 products combined": each is listed, never their sum
        spans += [m.span() for m in PATTERNS["sum_of_ranked"].finditer(text)]
    if intent == "aggregate" and target != "peak_hour":  # a value that ranks nothing: its superlative
        dated = [(r.start, r.start + len(r.label)) for r in info.ranges]  # not 第一 of 12月第一周
        tops = (m.span() for m in CUES["top_rank"].finditer(text))
        spans += [(a, b) for a, b in tops if not any(x <= a and b <= y for x, y in dated)]
    if info.window_days and not periods:  # a window (三天内) that sets no periods, but 一天里 (a course)
        spans += [m.span() for m in WINDOW.finditer(text) if not m.group(0).endswith("里")]
    if intent not in ("compare", "correlation"):  # words that set two things side by side
        spans += [m.span() for m in PATTERNS["side_by_side"].finditer(text)]
    if intent not in ("compare", "correlation", "trend", "top_k", "forecast"):  # 逛得更久了吗: than what?
        spans += [m.span() for m in PATTERNS["comparative"].finditer(text)]
    if intent in ("compare", "correlation") and not periods:  # 同比增长最多: a change, not levels
        spans += [m.span() for m in PATTERNS["over_period"].finditer(text)]
    return spans
