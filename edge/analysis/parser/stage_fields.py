"""The third stage of the rule parser's plan: the fields of its intent.

Owned by :mod:`edge.analysis.parser`; called by :mod:`.core` after :mod:`.stage_measure`: compare,
pair (:mod:`.pairs`), top-k, grouping, time bucket, horizon, a retrieval's types and query.
"""

from __future__ import annotations

import re
from collections.abc import Set
from datetime import datetime
from typing import Any

from edge.analysis import labels
from edge.analysis.parser import pairs
from edge.analysis.parser.refusal import Refusal
from edge.analysis.parser.slots import Draft, Slots
from edge.analysis.parser.stage_filters import time_range
from edge.analysis.parser.timecal import TimeInfo
from edge.analysis.source import Vocabulary

BUCKET_DIM = {"day": "date", "week": "week", "month": "month", "hour": "hour"}
_TIME_DIMS = tuple(BUCKET_DIM.values())  # date, week, month, hour
#: the largest bucket that still gives a series of at least this many points is chosen
_MIN_BUCKETS = 8
_BUCKET_DAYS = (("month", 365.25 / 12), ("week", 7.0), ("day", 1.0), ("hour", 1.0 / 24))
_ANOMALY_DAYS = re.compile(r"日子|哪几天|哪天|哪些天|(?<![a-z])days?(?![a-z])")
#: a time label's preposition, dropped with it from a retrieval's query
_TIME_PREP = r"(?:(?<![a-z])(?:on|in|at|during|from|since|over|for|of)(?: the)? )?"
_RETRIEVE_STRIP = re.compile(
    r"^(?:请|帮我|麻烦)?(?:找一下|找出|找找|查找|搜索|搜一下|调出|调取|给我看|找|查一下|查)|视频|录像|片段|画面|监控|截图|录音"
    r"|(?<![a-z])(?:show me|find me|find|search for|search|look up|get me|pull up|any|clips?|footage|videos?|recordings?|snapshots?)(?![a-z])"
)


def fill_fields(s: Slots, d: Draft, now: datetime) -> None:
    """Set the plan's fields of the draft's intent; a co-occurrence with nothing to pair is refused."""
    intent, plan = d.intent, d.plan
    if d.compare is not None:
        plan["compare"] = d.compare
    if intent == "co_occurrence":
        _pair(s, d)
    dims = list(s.dims)
    if intent == "top_k" and s.top_n is not None:
        plan["top_k"] = s.top_n
    if intent == "top_k" and d.metric == "peak_hour":  # "the 3 busiest hours": footfall ranked by hour
        plan["target_metric"] = "footfall"
        dims = list(dict.fromkeys(["hour", *dims]))
    if intent in ("breakdown", "top_k", "anomaly", "trend") and (group := _group_by(s, d, dims)):
        plan["group_by"] = group[:3]
    if intent in ("trend", "anomaly") and (
        bucket := _series_bucket(s, dims, intent == "anomaly") or _auto_bucket(time_range(s.info), now)
    ):
        plan["time_bucket"] = bucket
    if intent == "periodicity" and s.buckets:
        plan["time_bucket"] = "day" if s.buckets[0] in ("week", "month") else "hour"
    if intent == "forecast" and s.info.horizon:
        plan["horizon"] = s.info.horizon
    if intent == "retrieve":
        if s.types:
            d.filters["event_type"] = list(dict.fromkeys(t.event_type for t in s.types))
        if query := _semantic_query(s.text, s.info):
            plan["semantic_query"] = query


def _pair(s: Slots, d: Draft) -> None:
    """A co-occurrence's pair and window; the values and ids paired are no filters."""
    items = pairs.co_items(s)
    pair = pairs.pair(items, s.text)
    if pair is None:
        raise Refusal("no_pair")
    d.plan["pair"] = {"a": pair[0], "b": pair[1]}
    if window := pairs.co_window(s.text):
        d.plan["pair"]["window_seconds"] = window
    d.used_values = {
        i for i, v in enumerate(s.values) if any(v.start < it[1] and it[0] < v.end for it in items)
    }
    d.entities = [e for e in d.entities if e not in pair]


def _group_by(s: Slots, d: Draft, dims: list[str]) -> list[str]:
    """What a breakdown or ranking groups by (its dimensions and buckets, else weekend against
    weekdays when both are named), or a series by (its dimensions that are not time)."""
    group = [x for x in dims if x != d.compare_from]
    if d.intent not in ("breakdown", "top_k"):
        return [x for x in group if x not in _TIME_DIMS]
    group = list(dict.fromkeys(group + [BUCKET_DIM[b] for b in s.buckets]))
    if not group and len({x.weekend for x in s.info.days if x.weekend is not None}) == 2:
        group, d.compare_from = ["is_weekend"], "is_weekend"
    return group


def _series_bucket(s: Slots, dims: list[str], anomaly: bool) -> str | None:
    """The bucket a series question names: a bucket word, a time dimension ("which week looked
    off"), or days for outliers asked as days."""
    if s.buckets:
        return s.buckets[0]
    named = next((x for x in dims if x in _TIME_DIMS), None)
    if named is not None:
        return "day" if named == "date" else named
    return "day" if anomaly and _ANOMALY_DAYS.search(s.post_view) else None


def _auto_bucket(tr: dict[str, str] | None, now: datetime) -> str | None:
    """The largest of month / week / day / hour giving ``_MIN_BUCKETS`` buckets over the asked range
    (days for a month, weeks for three months); None without a range (the operator's default)."""
    if not tr or not ("last" in tr or "since" in tr):
        return None
    if "last" in tr:
        m = re.fullmatch(r"P(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+)W)?(?:(\d+)D)?", tr["last"])
        if not m:
            return None
        y, mo, w, d = (int(g) if g else 0 for g in m.groups())
        days = y * 365.25 + mo * 365.25 / 12 + w * 7 + d
    else:
        try:
            since = datetime.fromisoformat(tr["since"])
            until = datetime.fromisoformat(tr["until"]) if "until" in tr else now
        except ValueError:
            return None
        if (since.tzinfo is None) != (until.tzinfo is None):  # a naive ``now`` is store-local
            since, until = since.replace(tzinfo=None), until.replace(tzinfo=None)
        days = (until - since).total_seconds() / 86400.0
    if days <= 0:
        return None
    return next((name for name, length in _BUCKET_DAYS if days / length >= _MIN_BUCKETS - 1e-9), "hour")


def _semantic_query(text: str, info: TimeInfo) -> str | None:
    """The descriptive rest of a (normalised) retrieval question: no time, finding or media words."""
    for label in (
        [r.label for r in info.ranges] + [h.label for h in info.hours] + [d.label for d in info.days]
    ):
        text = re.sub(_TIME_PREP + re.escape(label), " ", text)
    text = _RETRIEVE_STRIP.sub(" ", text)
    text = re.sub(r"[?？!！。.,，、]+", " ", text)
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r"^(?:(?:of|from|with|showing|where|that|the)\s+)+", "", text)
    text = re.sub(r"(?:\s+(?:on|in|at|the|of|during))+$", "", text)
    text = re.sub(r"^(?:一下|下|的)+|(?:的)+$", "", text)
    text = re.sub(r"\s+", " ", text).strip(" 的")
    return text or None


def effect_within(plan: dict[str, Any], cue: Set[str], vocab: Vocabulary) -> None:
    """ "Which store's rainy-day order value rose most": a ranking of stores by the change one
    weather brings, rewritten (in place, once the filters are set) to a compare of that weather
    against a baseline (:func:`edge.analysis.labels.baseline`) within each store, which the compare
    operator ranks."""
    f = plan.get("filters") or {}
    attrs = f.get("attributes") or {}
    cond = attrs.get("weather")
    ranks_stores = (plan.get("intent") == "top_k" and plan.get("group_by") == ["store_id"]) or (
        plan.get("intent") == "compare" and plan.get("compare") == {"dimension": "store_id"}
    )
    if not (ranks_stores and isinstance(cond, str) and "change" in cue and plan.get("target_metric")):
        return
    known = [str(v) for v in vocab.attributes.get("weather", ()) if str(v) != cond]
    if not known:
        return
    base = labels.baseline("weather", cond, known) or known[0]
    del attrs["weather"]
    if not attrs:
        f.pop("attributes", None)
    if not f:
        plan.pop("filters", None)
    plan.pop("top_k", None)
    plan.update(
        intent="compare", compare={"dimension": "weather", "groups": [cond, base]}, group_by=["store_id"]
    )
