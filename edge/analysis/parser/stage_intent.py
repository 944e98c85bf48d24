"""The first stages of the rule parser's plan: whether the question is answered, its intent, its measure.

Owned by :mod:`edge.analysis.parser`; called by :mod:`.core`. The intent is the classifier's when
forced, else the one the cues name, else a compare of the groups or periods named (:func:`compare_spec`),
else what the words ask for (:func:`_fallback_intent`). The measure is the first metric word (both of
a correlation), the peak hour of a "tends to be later" trend, else a count of events.
"""

from __future__ import annotations

import re
from collections.abc import Set
from datetime import datetime
from typing import Any

from edge.analysis.metrics import ADDITIVE, COUNTS, METRIC_EVENT_TYPES, METRICS
from edge.analysis.parser.refusal import PATTERNS, STAGES, Refusal, said
from edge.analysis.parser.slots import Draft, Force, Slots
from edge.analysis.parser.text import Hit
from edge.analysis.parser.timecal import Clock, pivot_periods
from edge.analysis.parser.valuekeys import two_fields_reason

#: stats keys that are plan dimensions too (compare / group by them directly)
_KEY_DIMENSIONS = frozenset(STAGES["key_dimensions"])
#: "which days": asks for days, so only a plan that answers day by day uses it
WHICH_DAYS = PATTERNS["which_days"]
#: the intents whose answer already is per day (a comparison: the mean per day of each group) or
#: has no total to average
_PER_DAY_OK = frozenset({"compare", "retrieve", "co_occurrence", "correlation", "forecast"})
#: what a metric word stands for when it is one side of a co-occurrence
METRIC_ITEM: dict[str, str] = STAGES["metric_item"]
#: the cues that ask how one thing goes with or against another (not a level)
_COMPARING = frozenset({"compare", "change", "correlation", "trend", "effect"})
#: the measures that are a mean of events' sizes (a count of the big ones is no plan's)
_MEANS = frozenset({"dwell_time", "queue_length", "avg_order_value"})
#: the events whose size a mean measure is ("how many times was the queue long": queue events)
_SIZED_TYPES = frozenset(t for m in _MEANS for t in METRIC_EVENT_TYPES.get(m, ()))
#: the cues a ranking or breakdown the classifier decided needs
_RANKING = frozenset({"top_rank", "which", "breakdown", "breakdown_by"})
Compare = tuple[dict[str, Any] | None, str | None, set[int]]
#: (start, end, item, rank): rank 0 a metric word, 1 an event type, 2 a stored value, 3 an entity
Item = tuple[int, int, str, int]


def choose_intent(s: Slots, force: Force | None, tz: str, now: datetime) -> Draft:
    """The draft with its intent (and compare); raises :class:`~.refusal.Refusal`."""
    if s.info.errors:  # a date, week, month or span no calendar has: say so, never re-read it
        en, zh = s.info.errors[0]
        raise Refusal((zh, en[:1].upper() + en[1:]))
    if PATTERNS["out_of_domain"].search(s.text):
        raise Refusal("out_of_domain", final=True)
    if PATTERNS["change_asked"].search(s.text):  # delete the footage: answering never changes the memory
        raise Refusal("change_asked", final=True)
    if PATTERNS["why_asked"].search(s.text):  # a cause: no operator computes one
        raise Refusal("cause", final=True)
    if PATTERNS["advice_asked"].search(s.text):  # what to do: no operator computes it
        raise Refusal("advice", final=True)
    if PATTERNS["subject_asked"].search(s.text) and s.hint != "retrieve":  # what complaints are about
        raise Refusal("subject", final=True)
    if PATTERNS["follow_up"].search(s.text):  # "same for complaints": no question before it is kept
        raise Refusal("follow_up", final=True)
    if PATTERNS["statistic_asked"].search(s.text):  # a median, a spread: no operator computes one
        raise Refusal("statistic", final=True)
    if PATTERNS["distinct_asked"].search(s.text):  # how many different products: no plan counts groups
        raise Refusal("distinct", final=True)
    if s.two_fields is not None:  # one word, two fields, and the measure's events do not decide
        raise Refusal(two_fields_reason(s.two_fields), final=True)
    intent, forced = s.hint, force.intent if force is not None else None
    if intent == "correlation_single" and pair([it for it in co_items(s) if it[3] > 0], s.text):
        intent = "co_occurrence"  # "a link between rain and inquiries": non-metric sides co-occur
    spec: Compare = (None, None, set())
    weak = False
    if (  # "does footfall peak earlier on weekends": the weekend's peak hour against weekdays'
        intent == "trend"
        and s.peak_shift
        and forced in (None, "trend", "compare")
        and not s.info.ranges
        and any(d.weekend is not None for d in s.info.days)
        and not PATTERNS["peak_moved"].search(s.text)
    ):
        spec = compare_spec(s, s.cue | {"compare"}, None)
        intent = "compare" if spec[1] == "is_weekend" else intent
        spec = spec if intent == "compare" else (None, None, set())
    elif (
        intent == "trend" and s.peak_shift and forced in (None, "trend", "compare") and _SIDES.search(s.text)
    ):
        # "is the peak later in December than in September": two periods' peak hours side by side;
        # "later than last month": since then against it
        if len(s.info.ranges) == 2:
            spec = compare_spec(s, s.cue | {"compare"}, None)
        elif then := _other_side(s, tz, now) or _other_side(s, tz, now, sided=True):
            spec = ({"periods": then}, "period", set())  # on weekends, "later than last month"
        intent = "compare" if spec[1] == "period" else intent
        spec = spec if intent == "compare" else (None, None, set())
    if forced is not None and forced != "compare":
        if forced == "forecast" and not s.info.horizon and (s.info.ranges or "forecast" not in s.cue):
            # a range in the past is not a forecast, nor a question with no word of the future (a
            # forecast's words are never checked against the plan: its reading must name one)
            raise Refusal()
        if forced in ("top_k", "breakdown") and not s.cue & _RANKING:
            raise Refusal()  # "revenue in the bakery aisle" is a value, "生鲜区客流" no breakdown
        if forced == "correlation" and len(s.metrics) < 2:
            raise Refusal("two_metrics")
        intent = forced
    elif forced == "compare" and intent != "compare_periods":
        spec = compare_spec(s, s.cue | {"compare"}, None)
        if spec[0] is None or not (spec[0].get("groups") or spec[0].get("periods")):
            raise Refusal("no_groups")
        intent = "compare"
    elif intent == "compare_periods":
        periods = pivot_periods(s.info.pivot_dates[0][0], s.info.window_days or 7, now, tz)
        spec, intent = ({"periods": periods}, None, set()), "compare"
    elif intent is None and s.top_n is not None:
        intent = "top_k"
    elif intent in (None, "correlation_single"):
        # "footfall trend in the fresh and wine zones": each value's course, not the two side by side
        course = (
            intent is None
            and "trend" in s.cue
            and not {"compare", "change"} & s.cue
            and not s.info.ranges[1:]
        )
        if course:
            spec = (None, None, set())
        elif "compare" in s.cue and s.promo_hits and _than_period(s):
            raise Refusal("promotion_than_period", final=True)  # 促销日客流比上个月高吗
        elif "compare" in s.cue and (then := _other_side(s, tz, now, sided=True)):
            spec = ({"periods": then}, "period", set())  # 周末客流比上个月高吗: weekends, then and since
        else:
            spec = compare_spec(s, s.cue, intent)
            if spec[1] not in (None, "period") and "compare" in s.cue and _than_period(s):
                # 生鲜区和酒水区的停留时间比上周长吗, 晚上的客流比昨天多吗: groups and, after "than",
                # a period; comparing the groups within that period drops the period's side
                raise Refusal("groups_and_period", final=True)
        if spec[0] is not None:
            intent = "compare"
        elif intent == "correlation_single":
            raise Refusal("two_metrics")
        elif "compare" in s.cue and len(s.entities) >= 2:
            # "staff_03 and staff_05, who errs more": one figure for both would answer nothing asked
            raise Refusal("entities_compared")
        elif {"compare", "change"} & s.cue and (then := _other_side(s, tz, now)):
            spec, intent = ({"periods": then}, "period", set()), "compare"  # "higher than last month"
        else:
            intent = _fallback_intent(s)
            weak = intent == "aggregate" and "aggregate" not in s.cue
    if intent == "breakdown" and not (s.dims or s.buckets) and s.metrics and s.metrics[0].endswith("_rate"):
        intent = "aggregate"  # "what share of staff actions were mistakes": the rate itself
    if intent is None:
        raise Refusal()
    # the day's hours said as the other side (比白天高: daytime) are the rest of the day's
    parts = list(
        dict.fromkeys(tuple(m.hours) for m in s.info.hours if not PATTERNS["whole_day"].fullmatch(m.label))
    )
    if len(parts) == 1 and PATTERNS["rest_of_day"].search(s.text) and intent in ("aggregate", "compare"):
        spec, intent = ({"dimension": "hour"}, "hour", set()), "compare"  # "5-7pm against the other hours"
    elif intent == "compare" and spec[1] == "hour" and len(parts) >= 2:
        if any(len(p) > 1 for p in parts):  # 下午比上午忙吗: no plan sets two spans of hours side by side
            raise Refusal("two_dayparts", final=True)
        spec = ({"dimension": "hour", "groups": [p[0] for p in parts]}, "hour", set())  # 9am against 3pm
    if intent not in ("compare", "correlation", "co_occurrence") and PATTERNS["sameness"].search(s.text):
        # "这周和上周营业额一样吗": two periods (groups) the same, compared; "和上周一样吗": one, refused
        spec = compare_spec(s, s.cue | {"compare"}, None)
        if not (spec[0] and (spec[0].get("groups") or spec[0].get("periods"))):
            raise Refusal("no_groups")
        intent = "compare"
    if intent != "anomaly" and PATTERNS["than_usual"].search(s.text):
        # "busier than usual": no plan compares with a usual level; 平时 ("normal days") is the other
        # side only of promotion days named, "than usual" only of a comparison of other groups
        dim = (spec[0] or {}).get("dimension")
        sides = dim not in (None, "promotion", "hour") or any(str(h.value) == "true" for h in s.promo_hits)
        if not (intent == "compare" and sides):
            raise Refusal("than_usual", final=True)
    conditional = "conditional" in s.cue and not _COMPARING & s.cue
    if intent == "correlation" and conditional and PATTERNS["quantity_asked"].search(s.text):
        # "how many complaints on busy days", 客流少的日子营业额多少: a level on days of a kind no
        # field records (which days are busy?), never the link a correlation computes
        raise Refusal("condition_days", final=True)
    if (
        intent == "co_occurrence"
        and set(s.metrics) - COUNTS
        and "event_count" not in s.metrics
        and PATTERNS["value_asked"].search(s.text)
    ):
        # 促销广播播放的时候，排队长度是多少: a measure's value while other events happen, not how
        # often the two happen together
        raise Refusal("measure_during", final=True)
    if intent == "compare" and _crossed(s, spec[1]):
        raise Refusal("crossed", final=True)  # "weekends than rainy days": two kinds of group
    if intent == "forecast" and not s.metrics and not PATTERNS["forecast_subject"].search(s.text):
        raise Refusal("no_forecast_metric")
    grouped = set((spec[0] or {}).get("groups") or ())  # ids compared are groups, not a filter
    return Draft(intent, {"intent": intent}, [e for e in s.entities if e not in grouped], *spec, weak)


#: a word that sets one side against another ("later than", 比上个月晚)
_SIDES = re.compile(r"(?<![a-z])(?:than|vs\.?|versus|compared (?:to|with))(?![a-z])|比")
#: the words just before the other side of a comparison ("higher than last month", 比上个月高)
_THAN = re.compile(
    r"(?:(?<![a-z])(?:than|compared (?:to|with)|vs\.?|versus|against)\s*(?:(?:it|they|that|this) (?:was|were|is|are)\s+)?"
    r"(?:(?:in|on|during|at|for)\s+)?(?:the\s+)?"
    r"|比\s*|(?:和|跟|与|同)\s*)$"
)


def _than_period(s: Slots) -> bool:
    """The one period named is the other side of a "than" (比上个月, "than last month")."""
    return len(s.info.ranges) == 1 and bool(_THAN.search(s.text[: s.info.ranges[0].start]))


def _other_side(s: Slots, tz: str, now: datetime, sided: bool = False) -> list[dict[str, Any]] | None:
    """The one period a comparison names with no other side against the time since it ended up to
    now ("is revenue higher than last month", 客流比上周少吗), or a running one against the last
    whole one ("is revenue higher this month"); None when it names another side."""
    info = s.info  # "yesterday compared to the day before": a window named, the other side unread
    if PATTERNS["same_dates_asked"].search(s.text):
        return None  # 同比去年: the same dates a year back, which 去年同期 reads
    # ``sided``: only the period right after a "than" (比上个月), beside one value of a field kept as
    # a filter of both sides (周末, 雨天), never two values (the groups compared); promotion days
    # are no filter a comparison writes
    one_each = len({v.key for v in s.values}) == len(s.values) and len(info.days) <= 1
    kept = (s.values or info.days) and not (sided and one_each)
    # a field asked by (各店, "each store") beside the period after a "than" is compared within
    # each of its values (:func:`~.stage_fields.fill_fields`): 各店客流比上个月高吗
    by_field = s.dims and not (sided and set(s.dims) <= _KEY_DIMENSIONS)
    if len(info.ranges) != 1 or info.hours or kept or info.window_days or by_field or s.promo_hits:
        return None
    named = info.ranges[0]
    if sided and not _than_period(s):
        return None
    until = named.time_range.get("until")
    if named.running:  # "is revenue higher this month": this month so far against the last
        clock = Clock(now, tz)
        first, end = clock.period_days(named.running, -1)
        label = said(f"last_{named.running}", s.lang)
        return [
            {"label": named.label, "time_range": dict(named.time_range)},
            {"label": label, "time_range": clock.span(first, end)},
        ]
    if not until or "since" not in named.time_range or not _THAN.search(s.text[: named.start]):
        return None  # "did revenue increase last week", 上个月营业额比较高吗: not against the time since
    end = datetime.fromisoformat(until)  # store-local, as a naive ``now`` is
    if end.replace(tzinfo=None) > (now.astimezone(end.tzinfo).replace(tzinfo=None) if now.tzinfo else now):
        return None
    label = said("since_then", s.lang)
    return [
        {"label": label, "time_range": {"since": until}},
        {"label": named.label, "time_range": dict(named.time_range)},
    ]


def _crossed(s: Slots, by: str | None) -> bool:
    """Whether the two sides of a comparison word are groups of different kinds: a field other than
    the one compared by with other values on each side (rainy weekends against sunny weekdays), a
    field on each side the other lacks (the bakery than the wine zone), or the other side held
    only by another field (weekends than rainy days)."""
    key = "days" if by in ("is_weekend", "day_of_week") else by
    if by not in (None, "period") and key != "days" and len({str(d.days) for d in s.info.days}) > 1:
        return True  # rainy weekends with sunny weekdays: the days of each side are no filter of both
    if by in (None, "period") or not (m := PATTERNS["sides"].search(s.text)):
        return False
    named = [(v.start, v.key, v.values[0]) for v in s.values]
    named += [(d.start, "days", str(d.days)) for d in s.info.days]
    # 平时 / "normal days" (no promotion) is the rest of what is compared, not a side of its own
    named += [(h.start, "promotion", str(h.value)) for h in s.promo_hits if str(h.value) == "true"]
    left = {(k, v) for at, k, v in named if at < m.start()}
    right = {(k, v) for at, k, v in named if at >= m.end()}
    lk, rk = {k for k, _ in left} - {key}, {k for k, _ in right} - {key}
    if any({v for x, v in left if x == k} != {v for x, v in right if x == k} for k in lk & rk):
        return True
    if lk - rk and rk - lk:
        return True
    return bool(rk - lk) and any(k == key for k, _ in left) and not any(k == key for k, _ in right)


def compare_spec(s: Slots, cue: Set[str], hint: str | None) -> Compare:
    """The ``compare`` object when the question compares groups or periods (else None), what it
    compares by, and the indexes of the values that are its groups."""
    by_key: dict[str, list[int]] = {}
    for i, v in enumerate(s.values):
        by_key.setdefault(v.key, []).append(i)
    categorical = bool(s.promo_hits) or "weather" in by_key or bool({"promotion", "weather"} & set(s.dims))
    categorical = categorical or any(d.weekend is not None for d in s.info.days)  # did weekends lift it
    wants = (
        "compare" in cue
        or hint == "correlation_single"
        or ("effect" in cue and categorical and not s.info.pivot_dates)
    )
    by_id: dict[str, list[str]] = {}  # staff_03 and staff_05: ids of one field (staff_id)
    for e in s.entities:
        by_id.setdefault(re.split(r"[_\-0-9]", e.lower(), maxsplit=1)[0] + "_id", []).append(e)
    split = s.each_store is not None  # "compare them store by store": within each, not the stores
    for key, ids in [("store_id", list(s.stores)), *by_id.items()]:
        if len(ids) >= 2 and wants and key in _KEY_DIMENSIONS and not (split and key == "store_id"):
            return {"dimension": key, "groups": ids}, key, set()
    for key, idx in by_key.items():
        vals = list(dict.fromkeys(s.values[i].values[0] for i in idx))
        if len(vals) >= 2 and key in _KEY_DIMENSIONS:
            return {"dimension": key, "groups": vals}, key, set(idx)
    # weekend and promotion days are compared by themselves; one of them when a compare is asked
    # (against the rest); named weekdays only when a compare is asked
    for dim, named, alone in (
        ("is_weekend", [d.weekend for d in s.info.days if d.weekend is not None], True),
        ("day_of_week", [d.days[0] for d in s.info.days if d.weekend is None and len(d.days) == 1], False),
        # "other days" / 平时 alone, beside another field's value, is the rest of that field's days
        ("promotion", [str(h.value) for h in s.promo_hits if promotion_said(h, s)], True),
    ):
        groups = list(dict.fromkeys(named))
        if len(groups) >= 2 and (alone or wants):
            return {"dimension": dim, "groups": groups}, dim, set()
        if groups and alone and wants:
            return {"dimension": dim}, dim, set()
    if not wants:
        return None, None, set()
    if len(s.info.ranges) >= 2:
        periods = [{"label": r.label, "time_range": dict(r.time_range)} for r in s.info.ranges]
        trs = [r.time_range for r in s.info.ranges]
        spans = [(tr["since"], tr.get("until", "~")) for tr in trs if "since" in tr]
        if any(a < d and c < b for i, (a, b) in enumerate(spans) for c, d in spans[i + 1 :]):
            raise Refusal("overlapping_periods", final=True)  # Christmas this year vs last year: 3 periods
        return {"periods": periods}, "period", set()
    if len(s.info.hours) >= 2 or (s.info.hours and any(h.kind == "daypart" for h in s.info.hours)):
        return {"dimension": "hour"}, "hour", set()
    # a value of the compared field is one of its groups, never a filter (the one asked about: the
    # answer says it, :class:`~edge.analysis.operators.compare.Compare`)
    by = [d for d in s.dims if d != "date"] + [k for k in by_key if k in _KEY_DIMENSIONS]
    return ({"dimension": by[0]}, by[0], set(by_key.get(by[0], ()))) if by else (None, None, set())


def promotion_said(hit: Hit, s: Slots) -> bool:
    """A promotion word that says promotion days or days without one (促销日, 非促销日), or "usual
    days" (平时, "other days") beside promotion days or with no other field's value named (whose
    rest they would be)."""
    said_ = str(hit.value) == "true" or bool(PATTERNS["no_promotion"].search(hit.text))
    return said_ or not s.values or any(str(h.value) == "true" for h in s.promo_hits)


def _fallback_intent(s: Slots) -> str | None:
    """The intent of a question no cue decided and that compares nothing: a ranking, a breakdown,
    a trend, outliers or a value, by the words that ask for them; None without a measure."""
    measured, trend = bool(s.metrics or s.types), "trend" in s.cue
    valued = bool(s.metrics or (s.types and "aggregate" in s.cue))
    since = "change" in s.cue and any(r.kind in ("since", "last") for r in s.info.ranges)
    for intent, when in (
        ("top_k", "top_rank" in s.cue and ("which" in s.cue or s.dims)),
        ("breakdown", "breakdown_by" in s.cue and s.dims and not s.buckets and measured and not trend),
        ("breakdown", s.buckets == ("hour",) and measured and not trend),
        ("trend", trend or (s.buckets and measured)),
        ("anomaly", valued and WHICH_DAYS.search(s.text)),  # "which days was revenue low": outliers
        ("trend", valued and since),  # "has X improved since October / in the last 2 months": its course
        ("aggregate", valued),
    ):
        if when:
            return intent
    return None


def choose_measure(s: Slots, d: Draft) -> None:
    """Set the draft's metric, the plan's target (and second) metric and the measure's filters;
    "how many" of a rate's events (staff mistakes) is their count, not the rate."""
    intent, filters = d.intent, d.filters
    metric = s.metrics[0] if s.metrics else None
    if intent == "trend" and PATTERNS["tendency"].search(s.text) and s.info.hours:
        metric = "peak_hour"
    # the named event types counted: when asked for, or as the measure of a question with none
    counted_types = "event_count" in s.metrics or (metric is None and intent != "forecast")
    if intent in ("retrieve", "co_occurrence"):
        metric = None
    elif s.types and intent != "correlation" and counted_types:
        metric = "event_count"
        filters["event_type"] = list(dict.fromkeys(t.event_type for t in s.types))
        people = STAGES["counted_as"].get(filters["event_type"][0])
        if people and len(filters["event_type"]) == 1 and not PATTERNS["events_asked"].search(s.text):
            metric = people  # 进店总共多少人: the people who came in, not their entry events
            del filters["event_type"]
    elif metric is None and intent not in ("correlation", "forecast"):
        by_type = intent in ("top_k", "breakdown") and "event_type" in s.dims  # 哪类事件最多: events counted
        if not (
            by_type
            or intent in ("anomaly", "periodicity")
            or (intent == "trend" and (s.entities or s.values))
        ):
            raise Refusal("no_metric")
        metric = "event_count"
    if (
        metric in STAGES["count_of"]
        and intent in ("aggregate", "trend", "compare", "top_k", "breakdown", "anomaly")
        and PATTERNS["count_asked"].search(s.text)
        and not _rate_asked(s.text, intent)
    ):
        key, counted = STAGES["count_of"][metric]
        d.counted, metric = metric, "event_count"
        if key == "event_type":
            filters["event_type"] = list(dict.fromkeys([*filters.get("event_type", []), *counted]))
        else:
            filters.setdefault("attributes", {})[key] = list(counted) if len(counted) > 1 else counted[0]
    if (
        metric in ADDITIVE
        and intent not in _PER_DAY_OK
        and (PATTERNS["per_unit_average"].search(s.text) or PATTERNS["bare_average"].search(s.post_view))
    ):
        raise Refusal("per_unit_average", final=True)  # no plan computes the mean of a total per day
    if metric in ADDITIVE and PATTERNS["per_person"].search(s.text):
        raise Refusal("per_person", final=True)
    if (
        metric in ("queue_length", "dwell_time")
        and intent in ("aggregate", "trend", "compare", "breakdown", "top_k")
        and PATTERNS["count_asked"].search(s.text)
        and PATTERNS["events_asked"].search(s.text)
    ):  # "number of queue events", 停留记录有多少条: the events counted, not their mean size
        filters["event_type"] = list(METRIC_EVENT_TYPES[metric])
        metric = "event_count"
    sized = metric in _MEANS and metric != "avg_order_value"  # "total spend per basket" is the order value
    if sized and intent in ("aggregate", "trend", "compare") and PATTERNS["mean_total"].search(s.text):
        raise Refusal("mean_total", final=True)  # "total dwell time": the sizes added up, which no plan does
    if metric == "queue_length" and PATTERNS["duration_asked"].search(s.text):
        raise Refusal("queue_duration", final=True)
    if (
        (metric in _MEANS or set(s.metrics) & _MEANS or {t.event_type for t in s.types} & _SIZED_TYPES)
        and PATTERNS["threshold_count"].search(s.text)
        and PATTERNS["threshold_kind"].search(s.text)
    ):
        raise Refusal("threshold", final=True)  # "how many long queues": no plan counts over a size
    if intent in ("top_k", "breakdown") and (why := _lowest_first(s.text, metric)):
        raise Refusal(why, final=True)
    if intent == "correlation":
        d.plan["target_metric"], d.plan["second_metric"] = s.metrics[0], s.metrics[1]
    elif metric is not None:
        d.plan["target_metric"] = metric
    d.metric = metric


def _rate_asked(text: str, intent: str) -> bool:
    """A rate asked for by name; in a breakdown a share (各占多少比例) is each part's of the count."""
    words = (m.group(0) for m in PATTERNS["rate_asked"].finditer(text))
    return any(intent != "breakdown" or not PATTERNS["share_asked"].fullmatch(w) for w in words)


def _lowest_first(text: str, metric: str | None) -> str | None:
    """Why a ranking cannot be answered from the highest: it asks for the lowest ("lowest", 最少,
    the worst of a measure a store wants high, the best of one it wants low), or for the best or
    worst of a measure with no better direction; None when the highest is what is asked."""
    if PATTERNS["lowest"].search(text):
        return "bottom_rank"
    worst, best = PATTERNS["worst"].search(text), PATTERNS["best"].search(text)
    better = METRICS[metric].better if metric in METRICS else ""
    if better == "higher":
        return "bottom_rank" if worst else None
    if better == "lower":
        return "bottom_rank" if best else None
    return "no_direction" if worst or best else None


def co_items(s: Slots) -> list[Item]:
    """The things the question names that a co-occurrence may pair (metric words as the events they
    stand for, stored values, event types, ids), in question order; of overlapping spans the
    longer wins, then the more specific."""
    items: list[Item] = [
        (h.start, h.end, METRIC_ITEM[str(h.value)], 0) for h in s.metric_hits if str(h.value) in METRIC_ITEM
    ]
    items += [(v.start, v.end, f"{v.key}={v.values[0]}", 2) for v in s.values]
    items += [(h.start, h.end, f"promotion={h.value}", 2) for h in s.promo_hits]  # 促销日 and angry voices
    items += [(t.start, t.end, t.event_type, 1) for t in s.types]
    for e in s.entities:
        pos = max(s.text.find(e.lower()), 0)
        items.append((pos, pos + len(e), e, 3))
    kept: list[Item] = []
    for it in sorted(items, key=lambda it: (-(it[1] - it[0]), -it[3])):
        if all(it[1] <= k[0] or it[0] >= k[1] for k in kept):
            kept.append(it)
    return sorted(kept, key=lambda it: it[0])


def pair(items: list[Item], text: str) -> tuple[str, str] | None:
    """The two items a joining word stands between (the most specific on each side), else the
    first two different items; None with fewer than two."""
    for m in PATTERNS["conj"].finditer(text):
        left = [it for it in items if it[1] <= m.start()]
        right = [it for it in items if it[0] >= m.end()]
        if left and right:
            a = max(left, key=lambda it: (it[3], it[0]))
            b = max(right, key=lambda it: (it[3], -it[0]))
            if a[2] != b[2]:
                return a[2], b[2]
    names = list(dict.fromkeys(it[2] for it in items))
    return (names[0], names[1]) if len(names) >= 2 else None
