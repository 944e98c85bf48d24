"""The later stages of the rule parser's plan: the fields of its intent, then its filters.

Called by :mod:`.core` after the measure: compare, pair, top-k, grouping, time bucket, horizon, a
retrieval's query (:func:`fill_fields`); then filters on what the question names and the plan does not
compare by, each stored value an :class:`~.result.AttributeMatch` of the result (:func:`fill_filters`).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

from edge.analysis import labels
from edge.analysis.parser import lexicon as lx
from edge.analysis.parser.refusal import PATTERNS, STAGES, Refusal, said
from edge.analysis.parser.result import AttributeMatch
from edge.analysis.parser.slots import Draft, Slots
from edge.analysis.parser.stage_intent import co_items, pair, promotion_said
from edge.analysis.parser.text import parse_number
from edge.analysis.parser.timecal import TimeInfo
from edge.analysis.parser.vocabmatch import ValueHit, left_out
from edge.analysis.source import Vocabulary

#: a word just before a phrase that asks by its field (which, 哪个, each)
ASKS_BY = lx.SHAPES["asks_by"]
#: a word just before a field's word that asks by it or for each of its values (每个品类, by staff)
BY_WORD = lx.SHAPES["by_word"]

BUCKET_DIM = {"day": "date", "week": "week", "month": "month", "hour": "hour"}
_DIM_BUCKET = {v: k for k, v in BUCKET_DIM.items()}  # the time dimensions (date, week, month, hour)
#: between a value and its head noun (酒类商品, "bakery products", 水果类的商品)
HEAD_GAP = re.compile(r"\s?(?:类)?(?:的)?\s?")
#: the largest bucket that still gives a series of at least this many points is chosen
_MIN_BUCKETS = 8
#: the fields a series may be split by when a question names several of their values
_SERIES_KEYS = frozenset(STAGES["key_dimensions"])
_BUCKET_DAYS = (("month", 365.25 / 12), ("week", 7.0), ("day", 1.0), ("hour", 1.0 / 24))
#: a retrieval's query: the question less each of these in order
_QUERY_CUTS = [(re.compile(cut), by) for cut, by in STAGES["query"]["cuts"]]


def fill_fields(s: Slots, d: Draft, now: datetime) -> None:
    """Set the plan's fields of the draft's intent; a co-occurrence with nothing to pair is refused."""
    intent, plan = d.intent, d.plan
    if d.compare is not None:
        plan["compare"] = d.compare
    if intent == "co_occurrence":  # the pair and its window; the values and ids paired are no filters
        items = co_items(s)
        if (two := pair(items, s.text)) is None:
            raise Refusal("no_pair")
        plan["pair"] = {"a": two[0], "b": two[1]}
        if m := PATTERNS["co_window"].search(s.text):
            n = parse_number(m.group("n") or m.group("n2") or "") or 1  # 同一, the same: 1
            plan["pair"]["window_seconds"] = n * STAGES["window_seconds"][m.group("u") or m.group("u2")]
        d.used_values = {
            i for i, v in enumerate(s.values) if any(v.start < it[1] and it[0] < v.end for it in items)
        }
        d.entities = [e for e in d.entities if e not in two]
    dims = list(s.dims)
    split = s.each_store
    if intent == "compare" and split and d.compare_from != "store_id":
        plan["group_by"] = ["store_id"]  # "did the queue drop in both stores, or only in one": within each
        d.claimed.append(split.span())
        dims = [x for x in dims if x != "store_id"]
    elif intent == "compare" and (within := [x for x in _asked_by(s) if x in dims and x != d.compare_from]):
        keyed = [x for x in dims if x in _SERIES_KEYS and x != d.compare_from]
        if len(set(within) | set(keyed)) > 1:  # "by category and store higher than last month": one only
            raise Refusal("groups_and_period", final=True)
        # 各店客流比上个月高吗, "each store's revenue on weekends than on weekdays": within each store
        plan["group_by"] = within
        dims = [x for x in dims if x != within[0]]
    elif intent == "breakdown" and split and not dims and len(s.stores) > 1:
        dims = ["store_id"]  # 上海店和北京店的营业额分别是多少: each store's
        d.claimed.append(split.span())
    if intent == "top_k" and s.top_n is not None:
        plan["top_k"] = s.top_n
    if intent == "top_k" and d.metric == "peak_hour":  # "the 3 busiest hours": footfall ranked by hour
        plan["target_metric"] = "footfall"
        dims = list(dict.fromkeys(["hour", *dims]))
    asked_by = {v.key for v in s.values if ASKS_BY.search(s.text[: v.start].rstrip())}
    parts = [v for v in s.values if v.key not in asked_by]
    shared = intent == "breakdown" and bool(PATTERNS["share_asked"].search(s.text))
    if shared:  # "what percent of revenue comes from dairy products": the products are dairy's head noun
        heads = [
            h
            for h in s.dim_hits
            if h.value == "product_id"
            and any(v.key == "product_category" and HEAD_GAP.fullmatch(s.text, v.end, h.start) for v in parts)
        ]
        dims = [x for x in dims if not (heads and x == "product_id")]
    if intent == "breakdown" and not dims and not s.buckets and parts:
        # the share of one part ("what share of revenue came from the bakery"): every part of its field,
        # never a filter to the part (a value of what is split, not a day's condition: "on rainy days");
        # not "by which entrance door", which asks by a field of several doors the memory does not hold
        key = next((v.key for v in parts if v.key not in ("weather", "promotion")), parts[0].key)
        if key in _SERIES_KEYS:  # a stored key no plan groups by (a staff operation) is no breakdown
            d.used_values |= {i for i, v in enumerate(s.values) if v.key == key}
            dims = [key]
    if intent == "breakdown" and not dims and not s.buckets and len(s.stores) == 1 < s.held_stores:
        if PATTERNS["store_share"].search(s.text):  # "what share of revenue came from Xuhui", 徐汇店占几成
            dims = ["store_id"]  # every store's part, not its own
    if shared:  # "what share of footfall is in the fresh zone": the part asked, never also a filter
        d.used_values |= {i for i, v in enumerate(s.values) if v.key in dims}
    if intent in ("breakdown", "top_k", "anomaly", "trend") and (group := _group_by(s, d, dims)):
        plan["group_by"] = group[:3]
        # 每个品类: the word before the field's; 各区域: the field's word begins with it
        each = [
            h
            for h in s.dim_hits
            if h.value in group and (BY_WORD.search(s.text[: h.start]) or h.text[:1] in "各每")
        ]
        if intent == "top_k" and len(group) > 1 and each:  # 每个品类卖得最好的三个商品: the top 3 of each
            raise Refusal("top_in_each", final=True)
    elif intent in ("breakdown", "top_k") and not (intent == "top_k" and d.metric == "peak_hour"):
        raise Refusal("rank_by")  # never the operator's default grouping, which nobody asked for
    if intent in ("trend", "anomaly"):  # a bucket or time dimension named, outlier days, else by range
        named = [*s.buckets, *(_DIM_BUCKET[x] for x in dims if x in _DIM_BUCKET)]
        days = intent == "anomaly" and PATTERNS["anomaly_days"].search(s.post_view)
        if bucket := named[0] if named else "day" if days else _auto_bucket(time_range(s.info), now):
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


def _asked_by(s: Slots) -> list[str]:
    """The fields the question asks for each value of (各店, "each store's", "by zone", 两家店: the
    two stores named), which a comparison of other groups or periods is made within."""
    each = [
        str(h.value)
        for h in s.dim_hits
        if h.value in _SERIES_KEYS and (BY_WORD.search(s.text[: h.start]) or h.text[:1] in "各每")
    ]
    return list(dict.fromkeys(each + (["store_id"] if len(s.stores) > 1 and "store_id" in s.dims else [])))


def _group_by(s: Slots, d: Draft, dims: list[str]) -> list[str]:
    """What a breakdown or ranking groups by (else weekend against weekdays), or a series by."""
    group = [x for x in dims if x != d.compare_from]
    # the values the filters hold, by field: "in the fresh zone" names one value of its field, which
    # no series or ranking is split by
    held: dict[str, int] = {}
    for i, v in enumerate(s.values):
        if i not in d.used_values:
            held[v.key] = held.get(v.key, 0) + len(v.values)
    one = {k for k, n in held.items() if n == 1}
    if d.intent not in ("breakdown", "top_k"):
        several = [k for k, n in held.items() if n > 1 and k in _SERIES_KEYS]
        return list(dict.fromkeys(x for x in [*group, *several] if x not in _DIM_BUCKET and x not in one))
    group = list(dict.fromkeys(group + [BUCKET_DIM[b] for b in s.buckets]))
    if len(kept := [x for x in group if x not in one]) < len(group) and kept:
        group = kept  # "top 3 categories in the fresh zone": by category, the zone a filter
    if not group and len({x.weekend for x in s.info.days if x.weekend is not None}) == 2:
        group, d.compare_from = ["is_weekend"], "is_weekend"
    elif not group and any(
        PATTERNS["which_before"].search(s.text[: x.start]) for x in s.info.days if len(x.days) > 1
    ):
        group = ["day_of_week"]  # "which weekday", 哪个工作日: its days ranked, the days kept
    return group


def _auto_bucket(tr: dict[str, str] | None, now: datetime) -> str | None:
    """The largest bucket giving ``_MIN_BUCKETS`` over the asked range; None without one."""
    days = 0.0  # no range: the operator's default bucket
    if tr and "last" in tr:
        m = re.fullmatch(r"P(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+)W)?(?:(\d+)D)?", tr["last"])
        y, mo, w, d = (int(g or 0) for g in m.groups()) if m else (0, 0, 0, 0)
        days = y * 365.25 + mo * 365.25 / 12 + w * 7 + d
    elif tr and "since" in tr:
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
    labels = [r.label for r in info.ranges] + [h.label for h in info.hours] + [d.label for d in info.days]
    for label in labels:
        text = re.sub(PATTERNS["time_prep"].pattern + re.escape(label), " ", text)
    text = PATTERNS["retrieve_strip"].sub(" ", text)
    for cut, by in _QUERY_CUTS:
        text = cut.sub(by, text)
    return text or None


def effect_within(plan: dict[str, Any], s: Slots, vocab: Vocabulary) -> None:
    """ "Which store's rainy-day order value rose most", "in each store, is order value higher on
    rainy days", "is footfall in each zone higher when it rains": a ranking or comparison of stores
    (of a field asked by) by what one weather brings, rewritten in place to a compare of that
    weather against its baseline within each."""
    cue = s.cue
    f = plan.get("filters") or {}
    attrs = f.get("attributes") or {}
    cond = attrs.get("weather")
    by = (plan.get("compare") or {}).get("dimension")
    each = by == "store_id" or by in _asked_by(s)  # not "compare zones on rainy days": the zones
    ranked = (plan.get("intent") == "top_k" and plan.get("group_by") == ["store_id"]) or (
        plan.get("intent") == "compare" and plan.get("compare") == {"dimension": by} and each
    )
    known = [str(v) for v in vocab.attributes.get("weather", ()) if str(v) != cond]
    # "in each store, is order value higher on rainy days": the weather compared within each, not
    # the stores compared on rainy days (which "which store is higher on rainy days" asks)
    within = plan.get("compare") == {"dimension": by} and each and "compare" in cue and "which" not in cue
    if not (
        ranked
        and isinstance(cond, str)
        and ("change" in cue or within)
        and plan.get("target_metric")
        and known
    ):
        return
    base = labels.baseline("weather", cond, known) or known[0]
    del attrs["weather"]
    if not attrs:
        f.pop("attributes", None)
    if not f:
        plan.pop("filters", None)
    plan.pop("top_k", None)
    weather = {"dimension": "weather", "groups": [cond, base]}
    plan.update(intent="compare", compare=weather, group_by=[by or "store_id"])


#: the labels of a day without a promotion in a memory that names its promotions (world2: "none")
_NO_PROMOTION = frozenset({"none", "false", "no", "0", "off", "keine", "ohne", "无", "没有"})


def promotion_labels(plan: dict[str, Any], vocab: Vocabulary) -> None:
    """Promotion days ("true") and the other days ("false") in the memory's own labels, where it
    names its promotions (``aktion`` / ``none``) and holds one label of each: else left as read."""
    known = [str(v) for v in vocab.attributes.get("promotion", ())]
    if not known or {"true", "false"} & set(known):
        return
    on = [v for v in known if v.lower() not in _NO_PROMOTION]
    off = [v for v in known if v.lower() in _NO_PROMOTION]
    label = {"true": on[0] if len(on) == 1 else None, "false": off[0] if len(off) == 1 else None}
    attrs = (plan.get("filters") or {}).get("attributes") or {}
    if isinstance(attrs.get("promotion"), str) and label.get(attrs["promotion"]):
        attrs["promotion"] = label[attrs["promotion"]]
    cmp = plan.get("compare") or {}
    if cmp.get("dimension") == "promotion" and cmp.get("groups"):
        cmp["groups"] = [label.get(str(g)) or g for g in cmp["groups"]]


def time_range(info: TimeInfo) -> dict[str, str] | None:
    """The asked range: the first named, with a since/until pair merged into one."""
    if not info.ranges:
        return None
    first, pair_kinds = dict(info.ranges[0].time_range), ("since", "until")
    for r in info.ranges[1:] if info.ranges[0].kind in pair_kinds else ():
        if r.kind in pair_kinds:
            first |= {k: v for k, v in r.time_range.items() if k not in first}
    return first


def _days_ahead(info: TimeInfo, now: datetime) -> str | None:
    """The horizon up to the last day of the one day (weekend) named without a year, for a forecast:
    days after today (a past day read as the latest begun: the next one); None for any other time,
    and for days of a past week (a year on they are other weekdays)."""
    if len(info.ranges) != 1 or info.ranges[0].kind != "day" or re.search(r"\d{4}", info.ranges[0].label):
        return None
    tr = info.ranges[0].time_range
    if "until" not in tr:
        return None
    day = datetime.fromisoformat(tr["until"]).date() - timedelta(days=1)  # its last day
    today = now.date()
    if day < today and "since" in tr and datetime.fromisoformat(tr["since"]).date() < day:
        return None  # days a year on fall on other weekdays (圣诞那周 is another Monday to Sunday)
    while day < today:
        day = (
            day.replace(year=day.year + 1) if not (day.month == 2 and day.day == 29) else day.replace(day=28)
        )
    return f"P{(day - today).days}D" if day > today else None


def fill_filters(s: Slots, d: Draft, now: datetime) -> None:
    """Set the plan's ``filters`` and ``language`` and the draft's matches."""
    intent, filters, by = d.intent, d.filters, d.compare_from
    # one store's share of all ("what share came from Xuhui"): every store's part, no filter
    split = intent == "breakdown" and "store_id" in (d.plan.get("group_by") or []) and len(s.stores) == 1
    split = split and bool(PATTERNS["store_share"].search(s.text))
    if s.stores and by != "store_id" and not split:
        filters["store_id"] = list(s.stores)
    if d.entities:
        filters["entities"] = list(dict.fromkeys(d.entities))
    # a compare of periods carries its own windows
    if intent == "forecast" and not s.info.horizon and (ahead := _days_ahead(s.info, now)):
        d.plan["horizon"] = ahead  # "what will footfall be on Christmas Eve": the next one, not the last
    elif (tr := time_range(s.info)) and not (d.compare and "periods" in d.compare):
        filters["time_range"] = tr
    elif (
        (intent in ("aggregate", "top_k", "breakdown") or intent == "compare" and by not in (None, "period"))
        and not s.info.ranges
        and (recent := PATTERNS["vague_recent"].search(s.text))
    ):  # "revenue recently": the last weeks, said; never the whole memory
        filters["time_range"] = {"last": STAGES["recent"]["last"]}
        d.read_as.append((recent.group(0), said("recent_read", s.lang)))
    if not s.info.ranges and (whole := PATTERNS["whole_memory"].search(s.text)):
        d.claimed.append(whole.span())  # "over everything you have": no period but the memory's own
        d.read_as.append((whole.group(0), said("whole_read", s.lang)))
    hours, tends = sorted({h for m in s.info.hours for h in m.hours}), PATTERNS["tendency"].search(s.text)
    if by == "hour" and s.info.hours and not (d.compare or {}).get("groups"):
        # "7-9 pm vs daytime": the first named range is the group under test, the engine compares
        # it against the other hours (the schema has no way to write hour ranges as groups)
        explicit = [m for m in s.info.hours if m.kind != "daypart"] or list(s.info.hours)
        filters["hours"] = sorted(set(explicit[0].hours))
    elif by == "hour":
        pass  # 10am against 8pm: the hours are the groups, no filter
    elif hours and not (intent == "trend" and d.metric == "peak_hour" and (s.peak_shift or tends)):
        filters["hours"] = hours  # not the hours a peak moves in (nor its part of the day: it may leave it)
    # "excluding weekends": the other days; not when nothing is left, nor when the days are compared
    out = {
        i: spans
        for i, m in enumerate(s.info.days)
        if (spans := left_out(s.text, m.start, m.start + len(m.label)))
    }
    days = sorted(
        {x for i, m in enumerate(s.info.days) if i not in out for x in m.days}
        or (set(range(7)) if out else set())
    )
    days = [x for x in days if not any(x in s.info.days[i].days for i in out)]
    if out and days and by not in ("is_weekend", "day_of_week"):
        d.claimed += [span for spans in out.values() for span in spans]
    elif out:
        days = sorted({x for m in s.info.days for x in m.days})  # the words that leave them out: named
    if days and by != "is_weekend":
        filters["days_of_week"] = days
    if intent != "forecast":  # a forecast keeps no stored value: it forecasts the store, not the rainy days
        # the stored values no compare or pair uses, by key: one value as itself, several as a list
        by_key = {k: v if isinstance(v, list) else [v] for k, v in (filters.get("attributes") or {}).items()}
        for v in [v for i, v in enumerate(s.values) if i not in d.used_values]:
            d.matches += [_match(v, val) for val in v.values]
            by_key[v.key] = list(dict.fromkeys([*by_key.get(v.key, []), *v.values]))
        attrs = {k: vals[0] if len(vals) == 1 else vals for k, vals in by_key.items() if vals}
        named = [h for h in s.promo_hits if promotion_said(h, s)]  # 平常 beside rain: usually
        paired = intent == "co_occurrence" and "promotion=" in str(d.plan.get("pair"))
        if intent != "compare" and named and not paired:  # a promotion day outside a compare or pair
            flip = left_out(s.text, named[0].start, named[0].end)  # 不算促销日: the others
            d.claimed += flip
            attrs.setdefault(
                "promotion",
                {"true": "false", "false": "true"}[str(named[0].value)] if flip else str(named[0].value),
            )
        if attrs:
            filters["attributes"] = attrs
    d.matches += [_match(s.values[i], val) for i in d.used_values for val in s.values[i].values]
    if filters:
        d.plan["filters"] = filters
    d.plan["language"] = s.lang


def _match(v: ValueHit, value: str) -> AttributeMatch:
    return AttributeMatch(v.phrase, v.key, value, v.method, v.score, v.set_aside, v.by_events)
