"""Time expressions of a question: relative and calendar ranges, dates, hours and weekdays.

Owned by :mod:`edge.analysis.parser`; :func:`extract_time` reads (and consumes) every time
expression of a :class:`MaskedText`, one kind of mention after the other (:data:`.TIME_KINDS`),
and returns what they found; the top-level parser decides how the pieces become
``filters.time_range``, ``filters.hours``, ``filters.days_of_week``, a compare's periods or a
forecast's horizon. Calendar ranges (上周, last month, 昨天, 11月10号) are store-local days
written as RFC 3339 with the store's UTC offset; ``last N units`` stays a duration.
"""

from __future__ import annotations

from datetime import datetime

from edge.analysis.parser.extraction import Context
from edge.analysis.parser.text import MaskedText
from edge.analysis.parser.timecal import (
    DATE,
    DaysMention,
    HoursMention,
    RangeMention,
    TimeInfo,
    pivot_periods,
)
from edge.analysis.parser.timekinds import TIME_KINDS
from edge.analysis.source import Vocabulary

__all__ = ["DATE", "DaysMention", "HoursMention", "RangeMention", "TimeInfo", "extract_time", "pivot_periods"]


def extract_time(mt: MaskedText, now: datetime, tz: str) -> TimeInfo:
    """Find and consume every time expression of ``mt``; return them in question order. (A time
    kind reads no more of its context than the clock and the zone ``tz``.)"""
    ctx = Context(Vocabulary(timezone=tz), now)
    info = TimeInfo()
    for kind in TIME_KINDS.values():
        info.add(kind.extract(mt, ctx))
    return info.in_order()
