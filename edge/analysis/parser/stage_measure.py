"""The second stage of the rule parser's plan: the measure it computes.

Owned by :mod:`edge.analysis.parser`; called by :mod:`.core` after :mod:`.stage_intent`: the first
metric word (both of a correlation), the peak hour of a "tends to be later" trend, else a count of
events; "how many" of a rate's events (staff mistakes) is their count, not the rate.
"""

from __future__ import annotations

import re

from edge.analysis.parser.refusal import Refusal
from edge.analysis.parser.slots import Draft, Slots

TENDENCY = re.compile(
    r"倾向|偏向|更常|更爱|喜欢在|习惯|更晚|更早|(?<![a-z])(?:tend|prefer|later|earlier|habit)"
)
#: the events a rate counts (its numerator): asked "how many", the count of these is answered
_COUNT_OF: dict[str, tuple[str, tuple[str, ...]]] = {
    "staff_error_rate": ("event_type", ("staff_error",)),
    "negative_emotion_rate": ("speech_emotion", ("negative", "angry")),
}
_COUNT_ASKED = re.compile(
    r"多少次|几次|多少起|多少个|多少回|几回|(?<![a-z])(?:how many|number of|count of|how often)(?![a-z])"
)
_RATE_ASKED = re.compile(r"率|比例|比率|占比|(?<![a-z])(?:rate|share|percent\w*|proportion|ratio)(?![a-z])")


def choose_measure(s: Slots, d: Draft) -> None:
    """Set the draft's metric, the plan's target (and second) metric and the measure's filters."""
    intent, filters = d.intent, d.filters
    metric = s.metrics[0] if s.metrics else None
    if intent == "trend" and TENDENCY.search(s.text) and s.info.hours:
        metric = "peak_hour"
    # the named event types counted: when asked for, or as the measure of a question with none
    counted_types = "event_count" in s.metrics or (metric is None and intent != "forecast")
    if intent in ("retrieve", "co_occurrence"):
        metric = None
    elif s.types and intent != "correlation" and counted_types:
        metric = "event_count"
        filters["event_type"] = list(dict.fromkeys(t.event_type for t in s.types))
    elif metric is None and intent not in ("correlation", "forecast"):
        if not (intent in ("anomaly", "periodicity") or (intent == "trend" and (s.entities or s.values))):
            raise Refusal("no_metric")
        metric = "event_count"
    if (
        metric in _COUNT_OF
        and intent in ("aggregate", "trend", "compare", "top_k", "breakdown", "anomaly")
        and _COUNT_ASKED.search(s.text)
        and not _RATE_ASKED.search(s.text)
    ):
        # "how many staff mistakes": a count is asked, so a count is answered, not the rate
        key, counted = _COUNT_OF[str(metric)]
        d.counted = metric
        metric = "event_count"
        if key == "event_type":
            filters["event_type"] = list(dict.fromkeys([*filters.get("event_type", []), *counted]))
        else:
            filters.setdefault("attributes", {})[key] = list(counted) if len(counted) > 1 else counted[0]
    if intent == "correlation":
        d.plan["target_metric"], d.plan["second_metric"] = s.metrics[0], s.metrics[1]
    elif metric is not None:
        d.plan["target_metric"] = metric
    d.metric = metric
