"""The first stage of the rule parser's plan: whether the question is answered, and its intent.

Owned by :mod:`edge.analysis.parser`; called by :mod:`.core`. The intent is the classifier's when
forced, else the one the cues name, else a compare of the groups or periods named
(:func:`compare_spec`), else what the words ask for (:func:`_fallback_intent`).
"""

from __future__ import annotations

import re
from collections.abc import Set
from datetime import datetime
from typing import Any

from edge.analysis.parser.pairs import co_items, pair
from edge.analysis.parser.refusal import Refusal
from edge.analysis.parser.slots import Draft, Force, Slots
from edge.analysis.parser.timecal import pivot_periods
from edge.analysis.parser.valuekeys import two_fields_reason

#: stats keys that are plan dimensions too (compare / group by them directly)
_KEY_DIMENSIONS = frozenset(
    "weather zone product_category product_id staff_id promotion speech_emotion source event_type store_id".split()
)
_OUT_OF_DOMAIN = re.compile(
    r"股票|股价|基金|彩票|写一首|作诗|写诗|讲个笑话|笑话|翻译|天气预报|"
    r"(?<![a-z])(?:poem|poetry|joke|stock price|stock market|translate|weather forecast|write me|bitcoin|recipe)(?![a-z])"
)
FORECAST_SUBJECT = re.compile(
    r"趋势|库存|备.{0,3}货|进货|订货|补货|预测|(?<![a-z])(?:trend|stock|inventory|restock|order(?:ing)? more|forecast|predict\w*)(?![a-z])"
)
#: "which days": asks for days, so only a plan that answers day by day uses it
WHICH_DAYS = re.compile(
    r"哪几天|哪天|哪些天|哪一天|哪些日子|(?<![a-z])(?:which|what) (?:days?|dates?)(?![a-z])"
)

Compare = tuple[dict[str, Any] | None, str | None, set[int]]


def choose_intent(s: Slots, force: Force | None, tz: str, now: datetime) -> Draft:
    """The draft with its intent (and compare); raises :class:`~.refusal.Refusal`."""
    # refused whatever the intent
    if s.info.errors:  # a date, week, month or span no calendar has: say so, never re-read it
        en, zh = s.info.errors[0]
        raise Refusal((zh, en[:1].upper() + en[1:]))
    if _OUT_OF_DOMAIN.search(s.text):
        raise Refusal("out_of_domain", final=True)
    if s.two_fields is not None:  # one word, two fields, and the measure's events do not decide
        raise Refusal(two_fields_reason(s.two_fields), final=True)
    intent = s.hint
    if intent == "correlation_single":
        # "is there a link between rain and inquiries": non-metric sides are a co-occurrence
        things = [it for it in co_items(s) if it[3] > 0]
        if pair(things, s.text) is not None:
            intent = "co_occurrence"
    compare: dict[str, Any] | None = None
    compare_from: str | None = None
    used: set[int] = set()
    weak = False
    forced = force.intent if force is not None else None
    if forced == "forecast" and not s.info.horizon and (s.info.ranges or "forecast" not in s.cue):
        # a range in the past is not a forecast, nor a question with no word of the future (a
        # forecast's words are never checked against the plan: its reading must name one)
        raise Refusal()
    if forced in ("top_k", "breakdown") and not s.cue & {"top_rank", "which", "breakdown", "breakdown_by"}:
        # a ranking or breakdown needs a word of one: "revenue in the bakery aisle" is a value, not
        # revenue ranked by zone, nor "生鲜区客流" a breakdown of one zone
        raise Refusal()
    if forced is not None and forced != "compare":
        intent = forced
        if forced == "correlation" and len(s.metrics) < 2:
            raise Refusal("two_metrics")
    elif forced == "compare" and intent != "compare_periods":
        compare, compare_from, used = compare_spec(s, s.cue | {"compare"}, None)
        if compare is None or not (compare.get("groups") or compare.get("periods")):
            raise Refusal("no_groups")
        intent = "compare"
    elif intent == "compare_periods":
        pivot = s.info.pivot_dates[0][0]
        compare = {"periods": pivot_periods(pivot, s.info.window_days or 7, now, tz)}
        intent = "compare"
    elif intent is None and s.top_n is not None:
        intent = "top_k"
    elif intent in (None, "correlation_single"):
        compare, compare_from, used = compare_spec(s, s.cue, intent)
        if compare is not None:
            intent = "compare"
        elif intent == "correlation_single":
            raise Refusal("two_metrics")
        elif "compare" in s.cue and len(s.entities) >= 2:
            # "staff_03 and staff_05, who errs more": one figure for both would answer nothing asked
            raise Refusal("entities_compared")
        else:
            intent = _fallback_intent(s)
            weak = intent == "aggregate" and "aggregate" not in s.cue

    if intent == "breakdown" and not (s.dims or s.buckets) and s.metrics and s.metrics[0].endswith("_rate"):
        intent = "aggregate"  # "what share of staff actions were mistakes": the rate itself
    if intent is None:
        raise Refusal()
    if intent == "forecast" and not s.metrics and not FORECAST_SUBJECT.search(s.text):
        raise Refusal("no_forecast_metric")
    grouped = set((compare or {}).get("groups") or ())  # ids compared are groups, not a filter
    entities = [e for e in s.entities if e not in grouped]
    return Draft(intent, {"intent": intent}, entities, compare, compare_from, used, weak)


def compare_spec(s: Slots, cue: Set[str], hint: str | None) -> Compare:
    """The ``compare`` object when the question compares groups or periods (else None), what it
    compares by, and the indexes of the values that are its groups."""
    by_key: dict[str, list[int]] = {}
    for i, v in enumerate(s.values):
        by_key.setdefault(v.key, []).append(i)
    categorical = bool(s.promo_hits) or "weather" in by_key or bool({"promotion", "weather"} & set(s.dims))
    effect = "effect" in cue and categorical and not s.info.ranges
    wants = "compare" in cue or hint == "correlation_single" or effect
    if len(s.stores) >= 2 and wants:
        return {"dimension": "store_id", "groups": list(s.stores)}, "store_id", set()
    by_id: dict[str, list[str]] = {}  # staff_03 and staff_05: ids of one field (staff_id)
    for e in s.entities:
        by_id.setdefault(re.split(r"[_\-0-9]", e.lower(), maxsplit=1)[0] + "_id", []).append(e)
    for key, ids in by_id.items():
        if len(ids) >= 2 and wants and key in _KEY_DIMENSIONS:
            return {"dimension": key, "groups": ids}, key, set()
    for key, idx in by_key.items():
        vals = list(dict.fromkeys(s.values[i].values[0] for i in idx))
        if len(vals) >= 2 and key in _KEY_DIMENSIONS:
            return {"dimension": key, "groups": vals}, key, set(idx)
    weekend = list(dict.fromkeys(d.weekend for d in s.info.days if d.weekend is not None))
    named = list(dict.fromkeys(d.days[0] for d in s.info.days if d.weekend is None and len(d.days) == 1))
    promos = list(dict.fromkeys(str(h.value) for h in s.promo_hits))
    # weekend and promotion days are compared by themselves; one of them when a compare is asked
    # (against the rest); named weekdays only when a compare is asked
    for dim, groups, alone in (
        ("is_weekend", weekend, True),
        ("day_of_week", named, False),
        ("promotion", promos, True),
    ):
        if len(groups) >= 2 and (alone or wants):
            return {"dimension": dim, "groups": groups}, dim, set()
        if groups and alone and wants:
            return {"dimension": dim}, dim, set()
    if not wants:
        return None, None, set()
    if len(s.info.ranges) >= 2:
        periods = [{"label": r.label, "time_range": dict(r.time_range)} for r in s.info.ranges]
        return {"periods": periods}, "period", set()
    if len(s.info.hours) >= 2 or (s.info.hours and any(h.kind == "daypart" for h in s.info.hours)):
        return {"dimension": "hour"}, "hour", set()
    for d in s.dims:
        if d != "date":  # a value of the compared field is one of its groups, never a filter
            return {"dimension": d}, d, set(by_key.get(d, ()))
    for key, idx in by_key.items():
        if key in _KEY_DIMENSIONS:
            return {"dimension": key}, key, set(idx)
    return None, None, set()


def _fallback_intent(s: Slots) -> str | None:
    """The intent of a question no cue decided and that compares nothing: a ranking, a breakdown,
    a trend, outliers or a value, by the words that ask for them; None without a measure."""
    measured = bool(s.metrics or s.types)
    if "top_rank" in s.cue and ("which" in s.cue or s.dims):
        return "top_k"
    if "breakdown_by" in s.cue and s.dims and not s.buckets and measured and "trend" not in s.cue:
        return "breakdown"
    if s.buckets == ("hour",) and measured and "trend" not in s.cue:
        return "breakdown"
    if "trend" in s.cue or (s.buckets and measured):
        return "trend"
    if s.metrics or (s.types and "aggregate" in s.cue):
        if WHICH_DAYS.search(s.text):
            return "anomaly"  # "which days was revenue low": the days that stood out
        if "change" in s.cue and any(r.kind in ("since", "last") for r in s.info.ranges):
            return "trend"  # "has X improved since October / in the last 2 months": its course
        return "aggregate"
    return None
