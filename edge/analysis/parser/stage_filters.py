"""The fourth stage of the rule parser's plan: its filters, and the stored values it matched.

Owned by :mod:`edge.analysis.parser`; called by :mod:`.core` after :mod:`.stage_fields`: filters on
what the question names and the plan does not compare by; each stored value read is an
:class:`~.result.AttributeMatch` of the result.
"""

from __future__ import annotations

from typing import Any

from edge.analysis.parser.result import AttributeMatch
from edge.analysis.parser.slots import Draft, Slots
from edge.analysis.parser.stage_measure import TENDENCY
from edge.analysis.parser.timecal import TimeInfo
from edge.analysis.parser.vocabmatch import ValueHit


def time_range(info: TimeInfo) -> dict[str, str] | None:
    """The asked range: the first named, with a since/until pair merged into one."""
    if not info.ranges:
        return None
    first = dict(info.ranges[0].time_range)
    if info.ranges[0].kind in ("since", "until"):
        for r in info.ranges[1:]:
            if r.kind in ("since", "until"):
                for k, v in r.time_range.items():
                    first.setdefault(k, v)
    return first


def fill_filters(s: Slots, d: Draft) -> None:
    """Set the plan's ``filters`` and ``language`` and the draft's matches."""
    intent, filters, by = d.intent, d.filters, d.compare_from
    if s.stores and by != "store_id":
        filters["store_id"] = list(s.stores)
    if d.entities:
        filters["entities"] = list(dict.fromkeys(d.entities))
    # a compare of periods carries its own windows
    if (tr := time_range(s.info)) and not (d.compare and "periods" in d.compare):
        filters["time_range"] = tr
    hours = sorted({h for m in s.info.hours for h in m.hours})
    if by == "hour" and s.info.hours:
        # "7-9 pm vs daytime": the first named range is the group under test, the engine compares
        # it against the other hours (the schema has no way to write hour ranges as groups)
        explicit = [m for m in s.info.hours if m.kind != "daypart"] or list(s.info.hours)
        filters["hours"] = sorted(set(explicit[0].hours))
    elif hours and not (
        intent == "trend" and d.metric == "peak_hour" and (TENDENCY.search(s.text) or s.peak_shift)
    ):
        filters["hours"] = hours
    days = sorted({x for m in s.info.days for x in m.days})
    if days and by != "is_weekend":
        filters["days_of_week"] = days
    # a forecast keeps no stored value: it forecasts the store, not the rainy days
    if intent != "forecast" and (attrs := _attributes(s, d)):
        filters["attributes"] = attrs
    d.matches += [_match(s.values[i], val) for i in d.used_values for val in s.values[i].values]
    if filters:
        d.plan["filters"] = filters
    d.plan["language"] = s.lang


def _attributes(s: Slots, d: Draft) -> dict[str, Any]:
    """The stored values no compare or pair uses, by key (with the measure's own, a promotion
    day outside a compare), each a match of the result."""
    attrs: dict[str, Any] = dict(d.filters.get("attributes") or {})
    for i, v in enumerate(s.values):
        if i in d.used_values:
            continue
        for val in v.values:
            d.matches.append(_match(v, val))
            old = attrs.get(v.key)
            vals = [] if old is None else old if isinstance(old, list) else [old]
            if val not in vals:  # one value as itself, several as a list
                attrs[v.key] = val if old is None else [*vals, val]
    if d.intent != "compare" and s.promo_hits:
        attrs.setdefault("promotion", str(s.promo_hits[0].value))
    return attrs


def _match(v: ValueHit, value: str) -> AttributeMatch:
    return AttributeMatch(v.phrase, v.key, value, v.method, v.score, v.set_aside, v.by_events)
