"""The time slot's values and the store's calendar.

Owned by :mod:`edge.analysis.parser`: the mentions of time a question names (:class:`TimeInfo`) and
the store's calendar, which writes store-local days as RFC 3339 ranges and collects what no calendar
has (:class:`Clock`). Read by the time kinds (:mod:`.timekinds`) and by the plan's stages.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import NoReturn
from zoneinfo import ZoneInfo

MONTH_NAMES = "January February March April May June July August September October November December".split()
#: a calendar range of days: its first day and the day after its last
Days = tuple[date, date]


@dataclass
class RangeMention:
    """A time window named in the question (上周, last 3 months, 11月10号 ...)."""

    label: str
    time_range: dict[str, str]
    start: int
    kind: str  # "last" | "calendar" | "day" | "span" | "since" | "until"
    #: the running calendar unit it is, from its start up to now (this month: "month"), else ""
    running: str = ""


@dataclass
class HoursMention:
    hours: list[int]
    label: str
    start: int
    kind: str  # "clock" | "daypart"


@dataclass
class DaysMention:
    days: list[int]
    weekend: bool | None  # True for 周末, False for 工作日, None for a named weekday
    label: str
    start: int


@dataclass
class TimeInfo:
    ranges: list[RangeMention] = field(default_factory=list)
    hours: list[HoursMention] = field(default_factory=list)
    days: list[DaysMention] = field(default_factory=list)
    horizon: str | None = None
    #: a duration without "last" (一周内, the week after, 两周): the window around a pivot date
    window_days: int | None = None
    #: single dates with the word that qualifies them (since/after/before)
    pivot_dates: list[tuple[date, int]] = field(default_factory=list)
    #: what the question names that no calendar has (February 30th, month 13, week 60, the last
    #: 0 days), as (en, zh) reasons: the question is unsupported, never silently re-read
    errors: list[tuple[str, str]] = field(default_factory=list)
    #: the same period a year (or a month) before another one (去年同期, the same days last month), as
    #: (its words, where they start, how many months back)
    year_ago: tuple[str, int, int] | None = None
    #: the unit before another period (上周和前一周, "last month against the month before"), as (its
    #: words, where they start, its unit, how many, whether alone it is the units up to now)
    before_that: tuple[str, int, str, int, bool] | None = None
    #: the clauses told as what happened on the date a range opens at ("since the training on"):
    #: their words name an event, never a filter (a stored value inside one is named)
    told: list[tuple[int, int]] = field(default_factory=list)

    def add(self, other: TimeInfo) -> None:
        """Take in what ``other`` found later: its mentions follow, its horizon and window win."""
        for f in dataclasses.fields(self):
            mine, theirs = getattr(self, f.name), getattr(other, f.name)
            if isinstance(mine, list):
                mine += theirs
            elif theirs is not None:
                setattr(self, f.name, theirs)

    def in_order(self) -> TimeInfo:
        """The mentions sorted in question order (stable: at one place, the first found first)."""
        for mentions in (self.ranges, self.hours, self.days):
            mentions.sort(key=lambda x: x.start)
        self.pivot_dates.sort(key=lambda p: p[1])
        return self


def add_months(d: date, n: int) -> date:
    """The first day of the month ``n`` months after ``d``'s month."""
    year, month0 = divmod(d.year * 12 + d.month - 1 + n, 12)
    return date(year, month0 + 1, 1)


class Unreadable(Exception):
    """A time no calendar has, its reason in the clock's errors: its words are claimed, never re-read."""


class Clock:
    """The store's calendar at the time of the question; collects what no calendar has."""

    def __init__(self, now: datetime, tz: str) -> None:
        try:
            self.zone = ZoneInfo(tz)
        except Exception:  # an unknown zone name must not break parsing
            self.zone = ZoneInfo("UTC")
        self.today = (now if now.tzinfo is None else now.astimezone(self.zone)).date()
        self.errors: list[tuple[str, str]] = []

    def fail(self, en: str, zh: str) -> NoReturn:
        """Collect what no calendar has (the reason in English and Chinese) and stop reading it."""
        self.errors.append((en, zh))
        raise Unreadable(en)

    def at(self, d: date) -> str:
        return datetime(d.year, d.month, d.day, tzinfo=self.zone).isoformat()

    def day(self, d: date) -> dict[str, str]:
        return self.span(d, d + timedelta(days=1))

    def span(self, a: date, b_exclusive: date) -> dict[str, str]:
        return {"since": self.at(a), "until": self.at(b_exclusive)}

    def monday(self, weeks: int) -> date:
        """The Monday of this week, ``weeks`` weeks on."""
        return self.today - timedelta(days=self.today.weekday()) + timedelta(weeks=weeks)

    def period_days(self, unit: str, offset: int) -> Days:
        """The days of the calendar ``unit`` ``offset`` units from the current one."""
        if unit in ("day", "week"):
            step = timedelta(days=1 if unit == "day" else 7)
            first = (self.today if unit == "day" else self.monday(0)) + offset * step
            return first, first + step
        months = {"month": 1, "quarter": 3, "year": 12}[unit]
        first = date(self.today.year, (self.today.month - 1) // months * months + 1, 1)
        return add_months(first, offset * months), add_months(first, (offset + 1) * months)

    def period(self, unit: str, offset: int) -> dict[str, str]:
        """The calendar ``unit`` ``offset`` units from the current one (that one: from its start on)."""
        first, end = self.period_days(unit, offset)
        return {"since": self.at(first)} if offset == 0 and unit != "day" else self.span(first, end)

    def month_range(self, year: int | None, month: int, label: str, months: int = 1) -> Days:
        """A month and the ``months - 1`` after it (no year: the latest begun by now), else an error."""
        if not 1 <= month <= 12:
            self.fail(f"there is no month {month} ({label})", f"没有 {month} 月（{label}）")
        if year is None:
            year = self.today.year if month <= self.today.month else self.today.year - 1
        if not 1 <= year <= 9998:
            self.fail(f"the year {year} is outside the calendar", f"{year} 年超出了日历范围")
        first = date(year, month, 1)
        return first, add_months(first, months)


def pivot_periods(pivot: date, window_days: int, now: datetime, tz: str) -> list[dict[str, object]]:
    """``before``/``after`` windows of ``window_days`` around a store-local ``pivot`` day."""
    clock, w = Clock(now, tz), timedelta(days=window_days)
    return [
        {"label": "before", "time_range": clock.span(pivot - w, pivot)},
        {"label": "after", "time_range": clock.span(pivot, pivot + w)},
    ]
