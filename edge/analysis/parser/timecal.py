"""The time slot's values and the store's calendar.

Owned by :mod:`edge.analysis.parser`: the mentions of time a question names (:class:`TimeInfo`),
the store's calendar that writes store-local days as RFC 3339 ranges and collects what no calendar
has (:class:`Clock`), and one time kind's pass over the question on it (:class:`Reading`). Read by
the time kinds (:mod:`.timekinds`) and by the plan's stages.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

from edge.analysis.parser.extraction import Context
from edge.analysis.parser.text import MaskedText, parse_number

MONTH_NAMES = "January February March April May June July August September October November December".split()
_MONTH_NUMBERS = {name[:3].lower(): i for i, name in enumerate(MONTH_NAMES, 1)}
EN_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?"
    r"|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
#: pattern pieces: a year, a number of one or two digits, a small number in digits or Chinese
YYYY, NN, SMALL_NUM = r"[0-9]{4}", r"[0-9]{1,2}", r"(?:[0-9]{1,2}|[一二三四五六七八九十]{1,3})"
#: one date: ISO, Chinese (年月日, 月日/号) or English (Nov 10, 10 November, with or without year)
DATE = (
    rf"(?P<iso>(?<![0-9])(?P<iy>{YYYY})[-/.](?P<im>{NN})[-/.](?P<id>{NN})(?![0-9]))"
    rf"|(?P<cn>(?:(?P<cy>{YYYY})年)?(?P<cm>{SMALL_NUM})月(?P<cd>{SMALL_NUM})[日号]?)"
    rf"|(?P<en1>(?P<em1>{EN_MONTH})\.? (?P<ed1>{NN})(?![0-9])(?:st|nd|rd|th)?(?:,? (?P<ey1>{YYYY}))?)"
    rf"|(?P<en2>(?<![0-9])(?P<ed2>{NN})(?:st|nd|rd|th)? (?:of )?(?P<em2>{EN_MONTH})(?:,? (?P<ey2>{YYYY}))?)"
)

#: a calendar range of days: its first day and the day after its last
Days = tuple[date, date]


@dataclass
class RangeMention:
    """A time window named in the question (上周, last 3 months, 11月10号 ...)."""

    label: str
    time_range: dict[str, str]
    start: int
    kind: str  # "last" | "calendar" | "day" | "span" | "since" | "until"


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


def month_number(name: str) -> int:
    """1-12 for an English month name or its abbreviation (lower case)."""
    return _MONTH_NUMBERS[name[:3]]


def add_months(d: date, n: int) -> date:
    """The first day of the month ``n`` months after ``d``'s month."""
    year, month0 = divmod(d.year * 12 + d.month - 1 + n, 12)
    return date(year, month0 + 1, 1)


class Clock:
    """The store's calendar at the time of the question; collects what no calendar has."""

    def __init__(self, now: datetime, tz: str) -> None:
        try:
            self.zone = ZoneInfo(tz)
        except Exception:  # an unknown zone name must not break parsing
            self.zone = ZoneInfo("UTC")
        self.now = now.replace(tzinfo=self.zone) if now.tzinfo is None else now.astimezone(self.zone)
        self.today = self.now.date()
        self.errors: list[tuple[str, str]] = []

    def at(self, d: date) -> str:
        return datetime(d.year, d.month, d.day, tzinfo=self.zone).isoformat()

    def day(self, d: date) -> dict[str, str]:
        return self.span(d, d + timedelta(days=1))

    def span(self, a: date, b_exclusive: date) -> dict[str, str]:
        return {"since": self.at(a), "until": self.at(b_exclusive)}

    def monday(self, weeks: int) -> date:
        """The Monday of this week, ``weeks`` weeks on."""
        return self.today - timedelta(days=self.today.weekday()) + timedelta(weeks=weeks)

    def period(self, unit: str, offset: int) -> dict[str, str]:
        """The calendar ``unit`` ``offset`` units from the current one (that one: from its start on)."""
        if unit == "day":
            return self.day(self.today + timedelta(days=offset))
        if unit == "week":
            first = self.monday(offset)
            end = first + timedelta(weeks=1)
        else:
            months = {"month": 1, "quarter": 3, "year": 12}[unit]
            this = (self.today.month - 1) // months * months
            first = add_months(date(self.today.year, 1, 1), this + offset * months)
            end = add_months(first, months)
        return {"since": self.at(first)} if offset == 0 else self.span(first, end)

    def latest_year(self, month: int) -> int:
        """The year of the latest ``month`` that has begun by now."""
        return self.today.year if month <= self.today.month else self.today.year - 1

    def infer_year(self, month: int, day: int) -> date | None:
        """The latest month/day not in the future (February 29th: the last leap year's), else an error."""
        for back in range(0, 9):
            try:
                d = date(self.today.year - back, month, day)
            except ValueError:
                continue
            if d <= self.today + timedelta(days=1):
                return d
        month_name = MONTH_NAMES[month - 1] if 1 <= month <= 12 else f"month {month}"
        self.impossible(f"{month_name} {day}", f"{month}月{day}日")
        return None

    def impossible(self, en: str, zh: str) -> None:
        self.errors.append((f"there is no such date as {en}", f"没有 {zh} 这个日期"))

    def backwards(self, text: str) -> None:
        self.errors.append((f"'{text}' ends before it starts", f"“{text}”的结束早于开始"))

    def month_range(self, year: int | None, month: int, label: str, months: int = 1) -> Days | None:
        """A month and the ``months - 1`` after it (no year: the latest begun by now), else an error."""
        if not 1 <= month <= 12:
            self.errors.append((f"there is no month {month} ({label})", f"没有 {month} 月（{label}）"))
            return None
        if year is None:
            year = self.latest_year(month)
        if not 1 <= year <= 9998:
            self.errors.append((f"the year {year} is outside the calendar", f"{year} 年超出了日历范围"))
            return None
        first = date(year, month, 1)
        return first, add_months(first, months)

    def read_date(self, m: re.Match[str], prefix: str = "") -> date | None:
        """The date a :data:`DATE` match names (its groups prefixed with ``prefix``), else an error."""
        g = {k[len(prefix) :]: v for k, v in m.groupdict().items() if k.startswith(prefix)}
        y: int | None
        if g.get("iso"):
            y, mo, dy = int(g["iy"]), int(g["im"]), int(g["id"])
        elif g.get("cn"):
            mo_n, dy_n = parse_number(g["cm"]), parse_number(g["cd"])
            if mo_n is None or dy_n is None:
                return None
            y, mo, dy = (int(g["cy"]) if g.get("cy") else None), mo_n, dy_n
        else:  # English: month day (en1) or day month (en2)
            n = "1" if g.get("en1") else "2"
            y = int(g["ey" + n]) if g.get("ey" + n) else None
            mo, dy = month_number(g["em" + n]), int(g["ed" + n])
        if y is None:
            return self.infer_year(mo, dy)
        try:
            return date(y, mo, dy)
        except ValueError:
            self.impossible(f"{y:04d}-{mo:02d}-{dy:02d}", f"{y}年{mo}月{dy}日")
            return None


#: the words before or after a calendar range that make it an open range -> the edge they set and
#: whether that is the named range's end (after March: since April 1st) or its start (since March:
#: since March 1st)
_OPEN_BEFORE_WORDS = {
    "since the start of|since the beginning of|from the start of|from the beginning of": ("since", False),
    "until the end of|through the end of|till the end of|up to the end of": ("until", True),
    "since|starting from|starting in|starting|from|自从|自|从": ("since", False),
    "after": ("since", True),
    "before": ("until", False),
    "until|till|up to|through|截至|截止到|截止": ("until", True),
}
_OPEN_AFTER_WORDS = {
    "以来|至今|迄今|到现在|到今天|到目前为止|到目前|起|开始": ("since", False),
    "之后|以后": ("since", True),
    "之前|以前": ("until", False),
    "为止": ("until", True),
}
_OPEN_WORDS = {
    word: opens
    for table in (_OPEN_BEFORE_WORDS, _OPEN_AFTER_WORDS)
    for words, opens in table.items()
    for word in words.split("|")
}
#: a long open word read as its first word (since the beginning of -> since)
_OPEN_KEY = re.compile(r" the (?:start|beginning|end) of$")
_OPEN_BEFORE = re.compile(rf"(?P<w>{'|'.join(_OPEN_BEFORE_WORDS)})\s?$")
_OPEN_AFTER = re.compile(rf"^\s?(?P<w>{'|'.join(_OPEN_AFTER_WORDS)})")


class Reading(Clock):
    """One time kind's pass over the question on the store's calendar: the text and what it found."""

    def __init__(self, mt: MaskedText, ctx: Context) -> None:
        super().__init__(ctx.now, ctx.vocab.timezone)
        self.mt = mt
        self.info = TimeInfo(errors=self.errors)

    def each(self, pattern: re.Pattern[str]) -> Iterator[re.Match[str]]:
        """The matches of ``pattern`` in the text as it is now."""
        return pattern.finditer(self.mt.view)

    def take(self, m: re.Match[str]) -> None:
        self.mt.consume(m.start(), m.end())

    def range(self, m: re.Match[str], window: dict[str, str], kind: str, pivot: date | None = None) -> None:
        """A time window named by ``m`` (claimed); ``pivot``: the one date it is read from."""
        if pivot:
            self.info.pivot_dates.append((pivot, m.start()))
        self.info.ranges.append(RangeMention(m.group(0), window, m.start(), kind))
        self.take(m)

    def hours(self, m: re.Match[str], hours: list[int], kind: str) -> None:
        self.info.hours.append(HoursMention(hours, m.group(0), m.start(), kind))
        self.take(m)

    def days(self, m: re.Match[str], days: list[int], weekend: bool | None) -> None:
        self.info.days.append(DaysMention(days, weekend, m.group(0), m.start()))
        self.take(m)

    def calendar(self, m: re.Match[str], days: Days | None, open_word: str | None = None) -> None:
        """A named calendar range (None: one no calendar has, claimed all the same); an open word
        before or after it (since, before, 以来, 之前 ...) makes it the edge of an open range."""
        if days is None:
            self.take(m)
            return
        view, start, stop, kind = self.mt.view, m.start(), m.end(), open_word
        if not kind:
            pre = _OPEN_BEFORE.search(view[max(0, start - 24) : start])
            suf = _OPEN_AFTER.match(view[stop : stop + 4])
            if suf:
                kind, stop = suf.group("w"), stop + suf.end()
            elif pre:
                kind, start = pre.group("w"), max(0, start - 24) + pre.start()
        if opens := _OPEN_WORDS.get(_OPEN_KEY.sub("", kind or "")):
            edge, at_end = opens
            window, kind = {edge: self.at(days[1] if at_end else days[0])}, edge
        else:
            window, kind = self.span(*days), "calendar"
        self.info.ranges.append(RangeMention(view[start:stop], window, start, kind))
        self.mt.consume(start, stop)


def pivot_periods(pivot: date, window_days: int, now: datetime, tz: str) -> list[dict[str, object]]:
    """``before``/``after`` windows of ``window_days`` around a store-local ``pivot`` day."""
    clock, w = Clock(now, tz), timedelta(days=window_days)
    return [
        {"label": "before", "time_range": clock.span(pivot - w, pivot)},
        {"label": "after", "time_range": clock.span(pivot, pivot + w)},
    ]
