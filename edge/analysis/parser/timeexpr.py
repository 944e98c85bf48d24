"""Time expressions of a question: relative and calendar ranges, dates, hours and weekdays.

Owned by :mod:`edge.analysis.parser`; :func:`extract_time` reads (and consumes) every time
expression of a :class:`MaskedText` and returns what it found; the top-level parser decides how the
pieces become ``filters.time_range``, ``filters.hours``, ``filters.days_of_week``, a compare's
periods or a forecast's horizon. Calendar ranges (上周, last month, 昨天, 11月10号) are store-local
days written as RFC 3339 with the store's UTC offset; ``last N units`` stays a duration.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

from edge.analysis.parser.text import CN_NUM, EN_NUM, MaskedText, parse_number, word

_EN_MONTHS = {
    "jan": 1,
    "feb": 2,
    "mar": 3,
    "apr": 4,
    "may": 5,
    "jun": 6,
    "jul": 7,
    "aug": 8,
    "sep": 9,
    "oct": 10,
    "nov": 11,
    "dec": 12,
}
_EN_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?"
    r"|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_WEEKDAYS_EN = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_WEEKDAYS_CN = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6, "七": 6}

_D = r"(?:[0-9]{1,2}|[一二三四五六七八九十]{1,3})"
#: one date: ISO, Chinese (年月日, 月日/号) or English (Nov 10, 10 November, with or without year)
DATE = (
    r"(?P<iso>(?<![0-9])(?P<iy>[0-9]{4})[-/.](?P<im>[0-9]{1,2})[-/.](?P<id>[0-9]{1,2})(?![0-9]))"
    r"|(?P<cn>(?:(?P<cy>[0-9]{4})年)?(?P<cm>" + _D + r")月(?P<cd>" + _D + r")[日号]?)"
    r"|(?P<en1>(?P<em1>"
    + _EN_MONTH
    + r")\.? (?P<ed1>[0-9]{1,2})(?![0-9])(?:st|nd|rd|th)?(?:,? (?P<ey1>[0-9]{4}))?)"
    r"|(?P<en2>(?<![0-9])(?P<ed2>[0-9]{1,2})(?:st|nd|rd|th)? (?:of )?(?P<em2>"
    + _EN_MONTH
    + r")(?:,? (?P<ey2>[0-9]{4}))?)"
)

_UNIT_CN = {"天": "D", "日": "D", "周": "W", "星期": "W", "礼拜": "W", "月": "M", "年": "Y", "季度": "Q"}
_UNIT_EN = {"day": "D", "week": "W", "month": "M", "year": "Y", "quarter": "Q"}

_DAYPARTS = [
    (r"早上|早晨|上午|清晨|" + word(r"mornings?"), list(range(8, 12)), "morning"),
    (r"中午|午间|午饭时间|" + word(r"noon|lunch ?time|midday"), [11, 12, 13], "noon"),
    (r"下午|午后|" + word(r"afternoons?"), list(range(12, 18)), "afternoon"),
    (r"晚上|傍晚|晚间|夜间|夜里|" + word(r"evenings?|nights?|tonight"), list(range(18, 23)), "evening"),
    (r"白天|日间|" + word(r"daytime|during the day"), list(range(8, 18)), "daytime"),
    (r"凌晨|" + word(r"early morning"), list(range(0, 6)), "early"),
    (r"深夜|" + word(r"late night"), [22, 23], "late"),
]
_PM_PREFIX = {"下午", "晚上", "傍晚", "晚间", "夜间", "夜里", "午后"}


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


class _Clock:
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
        return {"since": self.at(d), "until": self.at(d + timedelta(days=1))}

    def span(self, a: date, b_exclusive: date) -> dict[str, str]:
        return {"since": self.at(a), "until": self.at(b_exclusive)}

    def infer_year(self, month: int, day: int) -> date | None:
        """A month/day without a year: the latest such day that is not in the future (this year,
        else an earlier one: February 29th looks back to the last leap year); None (and an
        error) when no year has it."""
        for back in range(0, 9):
            try:
                d = date(self.today.year - back, month, day)
            except ValueError:
                continue
            if d <= self.today + timedelta(days=1):
                return d
        self.impossible(f"{_month_name(month)} {day}", f"{month}月{day}日")
        return None

    def impossible(self, en: str, zh: str) -> None:
        self.errors.append((f"there is no such date as {en}", f"没有 {zh} 这个日期"))

    def month_range(
        self, year: int | None, month: int, label_en: str, label_zh: str
    ) -> tuple[date, date] | None:
        """The first day of a calendar month and of the next one (a month without a year: the
        latest that has begun by now)."""
        if not 1 <= month <= 12:
            self.errors.append((f"there is no month {month} ({label_en})", f"没有 {month} 月（{label_zh}）"))
            return None
        if year is None:
            year = self.today.year if month <= self.today.month else self.today.year - 1
        if not 1 <= year <= 9998:
            self.errors.append((f"the year {year} is outside the calendar", f"{year} 年超出了日历范围"))
            return None
        first = date(year, month, 1)
        return first, _next_month(first)


_EN_MONTH_NAMES = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]


def _month_name(month: int) -> str:
    return _EN_MONTH_NAMES[month - 1] if 1 <= month <= 12 else f"month {month}"


def _month_start(d: date) -> date:
    return d.replace(day=1)


def _next_month(d: date) -> date:
    return date(d.year + (d.month == 12), d.month % 12 + 1, 1)


def _date_from(m: re.Match[str], clock: _Clock, prefix: str = "") -> date | None:
    g = {k[len(prefix) :]: v for k, v in m.groupdict().items() if k.startswith(prefix)}
    y: int | None
    if g.get("iso"):
        y, mo, dy = int(g["iy"]), int(g["im"]), int(g["id"])
    elif g.get("cn"):
        mo_n, dy_n = parse_number(g["cm"]), parse_number(g["cd"])
        if mo_n is None or dy_n is None:
            return None
        y, mo, dy = (int(g["cy"]) if g.get("cy") else None), mo_n, dy_n
    else:
        for n in ("1", "2"):
            if g.get("en" + n):
                y = int(g["ey" + n]) if g.get("ey" + n) else None
                mo, dy = _EN_MONTHS[g["em" + n][:3]], int(g["ed" + n])
                break
        else:
            return None
    if y is None:
        return clock.infer_year(mo, dy)
    try:
        return date(y, mo, dy)
    except ValueError:
        clock.impossible(f"{y:04d}-{mo:02d}-{dy:02d}", f"{y}年{mo}月{dy}日")
        return None


def _prefixed(prefix: str) -> str:
    return re.sub(r"\(\?P<(\w+)>", lambda m: f"(?P<{prefix}{m.group(1)}>", DATE)


_SPAN = re.compile(
    r"(?:从|自|between |from )?(?:"
    + _prefixed("a_")
    + r") ?(?:到|至|~|-|–|—|to|until|through|and|till) ?(?:"
    + _prefixed("b_")
    + r")(?:之间|期间)?"
)
_SINCE = re.compile(
    r"(?:(?P<pre>since|starting(?: from)?|from|after|自从?|从)\s?)?(?:"
    + DATE
    + r")(?:\s?(?P<suf>以来|之后|以后|起|开始))?"
)
_UNTIL = re.compile(
    r"(?:(?P<pre>until|till|up to|before|截至|截止到?|到)\s?)?(?:"
    + DATE
    + r")(?:\s?(?P<suf>之前|以前|为止))?"
)
_DATE = re.compile(DATE)

_LAST_CN = re.compile(
    r"(?:过去|最近|近|前|这|在过去的?|最近的|过去的)\s?(?P<n>"
    + CN_NUM
    + r"|几)?\s?(?:个)?\s?(?P<u>天|日|周|星期|礼拜|季度|月|年)"
    # "三个月以来" is a duration, "10月以来" is since October (read with the calendar months)
    r"|(?P<n2>" + CN_NUM + r")\s?(?:(?:个)?(?P<u2>天|周|星期|礼拜|季度|年)|个(?P<u2m>月))(?:以来|来)"
)
_LAST_EN = re.compile(
    r"(?:(?:in|over|during|for|within) )?(?:the )?(?:last|past|previous|recent|trailing|these) (?P<n>"
    + EN_NUM
    + r"|few|couple of|several) "
    r"(?P<u>day|week|month|quarter|year)s?"
    r"|(?:(?:in|over|during|for|within) )?the (?:past|last) (?P<u2>day|week|month|quarter|year)"
    r"|(?:(?:in|over|during|for|within) )?(?:the )?past (?P<u3>week|month|quarter|year)"
)
#: "a few" / 几 in a span ("the last few weeks", 这几个月)
_A_FEW = 3
_HALF = re.compile(
    r"(?:过去|最近|近|这)\s?半(?P<u>年|个月|个?星期)|"
    + word(r"(?:the )?(?:last|past) (?:half (?:a )?year|six months)")
)
_WEEK_DAY = re.compile(
    r"(?P<w>上上|上|本|这)(?:个)?(?:周|星期|礼拜)(?P<d>[一二三四五六日天末])"
    r"|" + word(r"(?P<ew>last|this) (?P<ed>monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekend)")
)
_CALENDAR = [
    # "... to date": from the start of the current period up to now (before "this year" and kin)
    (
        r"年初至今|年初到现在|今年至今|今年到目前为止|"
        + word(r"year[ -]to[ -]date|ytd|so far this year|this year so far"),
        "year",
        0,
    ),
    (
        r"本季度至今|季初至今|" + word(r"quarter[ -]to[ -]date|qtd|so far this quarter|this quarter so far"),
        "quarter",
        0,
    ),
    (
        r"本月至今|月初至今|月初到现在|"
        + word(r"month[ -]to[ -]date|mtd|so far this month|this month so far"),
        "month",
        0,
    ),
    (r"本周至今|周初至今|" + word(r"week[ -]to[ -]date|wtd|so far this week|this week so far"), "week", 0),
    (r"上上周|上上个?星期|" + word(r"the week before last"), "week", -2),
    (r"上周|上个?星期|上个?礼拜|" + word(r"last week|previous week|the prior week"), "week", -1),
    (r"本周|这周|这个?星期|这个?礼拜|" + word(r"this week"), "week", 0),
    (r"上上个月|" + word(r"the month before last"), "month", -2),
    (r"上个?月|" + word(r"last month|previous month|the prior month"), "month", -1),
    (r"本月|这个月|当月|" + word(r"this month"), "month", 0),
    (r"上个?季度|" + word(r"last quarter|previous quarter"), "quarter", -1),
    (r"本季度|这个?季度|" + word(r"this quarter"), "quarter", 0),
    (r"去年|" + word(r"last year|previous year"), "year", -1),
    (r"今年|" + word(r"this year"), "year", 0),
    (r"前天|" + word(r"the day before yesterday"), "day", -2),
    (r"昨天|昨日|" + word(r"yesterday"), "day", -1),
    (r"今天|今日|" + word(r"today"), "day", 0),
]
_CALENDAR_RE = [(re.compile(p), unit, offset) for p, unit, offset in _CALENDAR]
_DAYPARTS_RE = [(re.compile(p), hours, name) for p, hours, name in _DAYPARTS]
_HORIZON = re.compile(
    r"下个?月|下周|下个?星期|明天|明年|未来(?P<n>" + CN_NUM + r")?\s?(?:个)?(?P<u>天|周|星期|月|年)"
    r"|"
    + word(
        r"next (?:(?P<n2>" + EN_NUM + r") )?(?P<u2>day|week|month|year)s?|tomorrow|coming (?P<u3>week|month)"
    )
)
_WINDOW = re.compile(
    r"(?:前后\s?)?(?P<n>" + CN_NUM + r")?\s?(?:个)?(?P<u>天|周|星期|月)(?:内|之内|里|以内)"
    r"|前后\s?(?P<n4>" + CN_NUM + r")?\s?(?:个)?(?P<u4>天|周|星期|月)"
    r"|"
    + word(r"(?:the|a|(?P<n2>" + EN_NUM + r")) (?P<u2>day|week|month)s? (?:after|before|following|prior)")
    + r"|"
    + word(r"within (?:(?P<n3>" + EN_NUM + r") )?(?P<u3>day|week|month)s?")
)
_MONTH_ONLY = re.compile(
    r"(?<![0-9个])(?P<m>[0-9]{1,2}|十[一二]?|[一二三四五六七八九])月份?(?![0-9一二三四五六七八九十日号])"
    r"|"
    + word(r"in (?P<em>" + _EN_MONTH + r")")
    + r"|"
    + word(r"(?P<em2>january|february|march|april|june|july|august|september|october|november|december)")
)
_H = r"(?:[0-9]{1,2}|[一二三四五六七八九十]{1,3}|十[一二]|两)"
_CLOCK_RANGE_CN = re.compile(
    r"(?P<p1>早上|上午|中午|下午|晚上|傍晚|晚间|夜间|夜里|午后)?\s?(?P<h1>"
    + _H
    + r")\s?(?:点|时|:00)(?:钟)?\s?"
    r"(?:到|至|-|~|—|–)\s?(?P<p2>早上|上午|中午|下午|晚上|傍晚)?\s?(?P<h2>"
    + _H
    + r")\s?(?:点|时|:00)(?:钟)?(?:之间)?"
)
_CLOCK_RANGE_EN = re.compile(
    word(
        r"(?:from |between )?(?P<h1>[0-9]{1,2})(?::00)? ?(?P<a1>am|pm)? ?(?:-|–|to|until|and) ?"
        r"(?P<h2>[0-9]{1,2})(?::00)? ?(?P<a2>am|pm|o'?clock)"
    )
    + r"|(?P<h3>[0-9]{1,2}):00 ?(?:-|–|to|~) ?(?P<h4>[0-9]{1,2}):00"
)
#: not the 一点 of 高一点 / 多一点 / 快一点 ("a bit"), nor 有一点 / 差一点
_CLOCK_ONE = re.compile(
    r"(?<![高低多少快慢好差大小长短贵宜有些])"
    r"(?P<p1>早上|上午|中午|下午|晚上|傍晚|晚间|夜间|夜里|午后)?(?P<h1>"
    + _H
    + r")点(?:钟)?|"
    + word(r"(?:at )?(?P<h2>[0-9]{1,2}) ?(?P<a2>am|pm)")
)
_WEEKEND = re.compile(r"周末|双休日|星期六日|" + word(r"weekends?|saturdays? and sundays?"))
#: "by weekday" groups by the day of the week (a dimension word), it does not keep Monday-Friday
_WEEKDAY = re.compile(
    r"工作日|平日|周中|(?<!by )(?<!per )(?<!each )(?<!across )"
    + word(r"weekdays?|work ?days?|working days?|business days?")
)
_NAMED_DAY = re.compile(
    r"(?:周|星期|礼拜)(?P<d>[一二三四五六日天])|" + word(r"(?P<e>" + "|".join(_WEEKDAYS_EN) + r")s?")
)


_CN_MONTH = r"(?:[0-9]{1,2}|十[一二]?|[一二三四五六七八九])"
#: no day number follows (then it is a date, read by DATE)
_NO_DAY = r"(?!\s?(?:[0-9]{1,2}|[一二三四五六七八九十]{1,3})\s?[日号])(?![0-9])"
#: a span of calendar months: 9月到11月, 2025年9月至2025年11月, from September to November 2025
_MONTH_SPAN = re.compile(
    r"(?:从|自)?(?:(?P<y1>[0-9]{4})\s?年\s?)?(?P<m1>" + _CN_MONTH + r")\s?月份?\s?(?:到|至|~|-|—|–)\s?"
    r"(?:(?P<y2>[0-9]{4})\s?年\s?)?(?P<m2>" + _CN_MONTH + r")\s?月份?(?:底|末)?" + _NO_DAY + r"(?:之间|期间)?"
    r"|"
    + word(
        r"(?:from |between )?(?P<e1>"
        + _EN_MONTH
        + r")(?:,? (?P<ey1>[0-9]{4}))? ?(?:to|until|till|through|thru|and|-|–) ?"
        r"(?P<e2>" + _EN_MONTH + r")(?:,? (?P<ey2>[0-9]{4}))?"
    )
    + r"(?! ?[0-9]{1,2}(?![0-9]))"
)
#: one calendar month of a named year: September 2025, 2025年9月, 2025-09
_YEAR_MONTH = re.compile(
    r"(?P<cy>[0-9]{4})\s?年\s?(?P<cm>"
    + _CN_MONTH
    + r")\s?月份?"
    + _NO_DAY
    + r"|"
    + word(r"(?P<em>" + _EN_MONTH + r")\.?,? (?P<ey>[0-9]{4})")
    + r"|"
    + word(r"(?P<iy>[0-9]{4})[-/.](?P<im>[0-9]{1,2})")
    + r"(?![-/.][0-9])"
)
#: a whole year: 2025年, in 2099, during 2024, the year 2025
_YEAR = re.compile(
    r"(?<![0-9])(?P<cy>[0-9]{4})\s?年(?:全年|整年|一整年)?(?!\s?(?:[0-9]{1,2}|[一二三四五六七八九十]{1,3})\s?月)"
    r"|"
    + word(
        r"(?P<ew>in|during|throughout|since|from|after|before|until|till|the year|year) (?P<ey>[12][0-9]{3})"
    )
    + r"(?![-/.][0-9])"
)
#: a numbered ISO week: week 45, 第45周, 2025-W45, week 45 of 2025
_WEEK_NO = re.compile(
    r"(?:(?P<cy>[0-9]{4})\s?年\s?)?第\s?(?P<cw>[0-9]{1,3}|[一二三四五六七八九十]{1,3})\s?(?:周|个?星期)(?!内|之内|以内)"
    r"|"
    + word(r"(?P<iy>[0-9]{4})-?w(?P<iw>[0-9]{1,3})")
    + r"|"
    + word(r"(?:the )?week (?:no\.? |number |#)?(?P<ew>[0-9]{1,3})(?:,? (?:of )?(?P<ey>[0-9]{4}))?")
)
#: a month by number in English: month 13
_MONTH_NO_EN = re.compile(word(r"month (?P<m>[0-9]{1,3})(?:,? (?:of )?(?P<y>[0-9]{4}))?"))
#: words before/after a calendar range that make it the start or the end of an open range
_OPEN_BEFORE = re.compile(
    r"(?P<w>since|starting(?: from| in)?|from|after|before|until|till|up to|through|自从?|从|截至|截止到?)\s?$"
)
_OPEN_AFTER = re.compile(r"^\s?(?P<w>以来|起|开始|之后|以后|之前|以前|为止)")
#: the number of a "last N units" phrase that is not a positive count (0, -3)
_BAD_COUNT_EN = re.compile(
    r"(?:last|past|previous|recent|trailing) (?P<n>-\s?[0-9]+|minus [0-9]+|0+|zero|no) (?P<u>day|week|month|quarter|year)s?"
)
_BAD_COUNT_CN = re.compile(
    r"(?:过去|最近|近|前)\s?(?P<n>-\s?[0-9]+|负[0-9一二三四五六七八九十]+|0+|零)\s?(?:个)?\s?(?P<u>天|日|周|星期|礼拜|季度|月|年)"
)


def _duration(n: int, unit: str) -> str:
    """``PnU``; quarters (Q, not an ISO unit) become months."""
    return f"P{3 * n}M" if unit == "Q" else f"P{n}{unit}"


def _unit_days(unit: str, n: int) -> int:
    return n * {"D": 1, "W": 7, "M": 30, "Y": 365}[unit]


def _hour(token: str, prefix: str | None, ampm: str | None = None) -> int | None:
    h = parse_number(token)
    if h is None or h > 24:
        return None
    if ampm == "pm" or (prefix in _PM_PREFIX):
        if h < 12:
            h += 12
    if ampm == "am" and h == 12:
        h = 0
    return h % 24


def _hour_span(h1: int, h2: int) -> list[int]:
    if h2 > h1:
        return list(range(h1, h2))
    if h2 < h1:  # crosses midnight
        return list(range(h1, 24)) + list(range(0, h2))
    return [h1]


def extract_time(mt: MaskedText, now: datetime, tz: str) -> TimeInfo:
    """Find and consume every time expression of ``mt``; return them in question order."""
    clock = _Clock(now, tz)
    info = TimeInfo()

    def take(m: re.Match[str]) -> None:
        mt.consume(m.start(), m.end())

    # forecast horizons first: "下个月" is not "上个月"
    for m in _HORIZON.finditer(mt.view):
        if info.horizon is None:
            unit = m.group("u") or m.group("u2") or m.group("u3")
            n: int | None = parse_number(m.group("n") or m.group("n2") or "1") or 1
            text = m.group(0)
            if unit is None:
                unit_code = (
                    "M"
                    if "月" in text
                    else "W"
                    if ("周" in text or "星期" in text)
                    else "Y"
                    if "年" in text
                    else "D"
                )
            else:
                unit_code = _UNIT_CN.get(unit) or _UNIT_EN[unit]
            info.horizon = f"P{n}{unit_code}"
        take(m)

    # a count that is no count ("the last 0 days", "过去-3天"): say so, never read it as 1
    for m in list(_BAD_COUNT_EN.finditer(mt.view)) + list(_BAD_COUNT_CN.finditer(mt.view)):
        clock.errors.append(
            (
                f"'{m.group(0)}' is not a span of time: ask for at least one {m.group('u')}",
                f"“{m.group(0)}”不是一个时间范围：至少要问一个{m.group('u')}",
            )
        )
        take(m)

    # calendar months, weeks and years named explicitly (a named year or the latest begun)
    for m in _MONTH_SPAN.finditer(mt.view):
        if m.group("m1"):
            mo1, mo2 = parse_number(m.group("m1")) or 0, parse_number(m.group("m2")) or 0
            y1, y2 = _int(m.group("y1")), _int(m.group("y2"))
        else:
            mo1, mo2 = _EN_MONTHS[m.group("e1")[:3]], _EN_MONTHS[m.group("e2")[:3]]
            y1, y2 = _int(m.group("ey1")), _int(m.group("ey2"))
        if y1 is None and y2 is None and 1 <= mo2 <= 12:
            y2 = clock.today.year if mo2 <= clock.today.month else clock.today.year - 1
        if y1 is None and y2 is not None:
            y1 = y2 if mo1 <= mo2 else y2 - 1
        elif y2 is None and y1 is not None:
            y2 = y1 if mo2 >= mo1 else y1 + 1
        ma = clock.month_range(y1, mo1, m.group(0), m.group(0))
        mb = clock.month_range(y2, mo2, m.group(0), m.group(0))
        if ma and mb:
            if mb[1] <= ma[0]:
                clock.errors.append(
                    (f"'{m.group(0)}' ends before it starts", f"“{m.group(0)}”的结束早于开始")
                )
            else:
                info.ranges.append(RangeMention(m.group(0), clock.span(ma[0], mb[1]), m.start(), "span"))
        take(m)
    for m in _YEAR_MONTH.finditer(mt.view):
        if m.group("cy"):
            y, mo = int(m.group("cy")), parse_number(m.group("cm")) or 0
        elif m.group("ey"):
            y, mo = int(m.group("ey")), _EN_MONTHS[m.group("em")[:3]]
        else:
            y, mo = int(m.group("iy")), int(m.group("im"))
        got = clock.month_range(y, mo, m.group(0), m.group(0))
        if got:
            _calendar_mention(info, mt, m, got, clock)
        take(m)
    for m in _WEEK_NO.finditer(mt.view):
        wk = parse_number(m.group("cw") or m.group("iw") or m.group("ew") or "") or 0
        y_text = m.group("cy") or m.group("iy") or m.group("ey")
        y = int(y_text) if y_text else clock.today.isocalendar()[0]
        try:
            monday = date.fromisocalendar(y, wk, 1)
        except ValueError:
            clock.errors.append(
                (
                    f"there is no week {wk} in {y} (ISO weeks are 1-52 or 53)",
                    f"{y} 年没有第 {wk} 周（ISO 周为 1-52 或 53）",
                )
            )
            take(m)
            continue
        if not y_text and monday > clock.today:
            try:
                monday = date.fromisocalendar(y - 1, wk, 1)
            except ValueError:
                clock.errors.append((f"there is no week {wk} in {y - 1}", f"{y - 1} 年没有第 {wk} 周"))
                take(m)
                continue
        _calendar_mention(info, mt, m, (monday, monday + timedelta(days=7)), clock)
        take(m)
    for m in _MONTH_NO_EN.finditer(mt.view):
        got = clock.month_range(_int(m.group("y")), int(m.group("m")), m.group(0), m.group(0))
        if got:
            _calendar_mention(info, mt, m, got, clock)
        take(m)
    for m in _YEAR.finditer(mt.view):
        y = int(m.group("cy") or m.group("ey"))
        if not 1 <= y <= 9998:
            clock.errors.append((f"the year {y} is outside the calendar", f"{y} 年超出了日历范围"))
        else:
            _calendar_mention(info, mt, m, (date(y, 1, 1), date(y + 1, 1, 1)), clock, open_word=m.group("ew"))
        take(m)

    for m in _SPAN.finditer(mt.view):
        a = _date_from(m, clock, "a_")
        b = _date_from(m, clock, "b_")
        if a and b and b >= a:
            info.ranges.append(
                RangeMention(m.group(0), clock.span(a, b + timedelta(days=1)), m.start(), "span")
            )
            take(m)
        elif (
            a
            and b
            and re.search(
                r"到|至|~|从|自|(?<![a-z])(?:between|from|to|until|through|till)(?![a-z])", m.group(0)
            )
        ):
            clock.errors.append((f"'{m.group(0)}' ends before it starts", f"“{m.group(0)}”的结束早于开始"))
            take(m)
    for m in _SINCE.finditer(mt.view):
        if not (m.group("pre") or m.group("suf")):
            continue
        d = _date_from(m, clock)
        if d:
            info.pivot_dates.append((d, m.start()))
            info.ranges.append(RangeMention(m.group(0), {"since": clock.at(d)}, m.start(), "since"))
            take(m)
    for m in _UNTIL.finditer(mt.view):
        if not (m.group("pre") or m.group("suf")):
            continue
        d = _date_from(m, clock)
        if d:
            info.pivot_dates.append((d, m.start()))
            info.ranges.append(RangeMention(m.group(0), {"until": clock.at(d)}, m.start(), "until"))
            take(m)
    for m in _DATE.finditer(mt.view):
        d = _date_from(m, clock)
        if d:
            info.pivot_dates.append((d, m.start()))
            info.ranges.append(RangeMention(m.group(0), clock.day(d), m.start(), "day"))
            take(m)

    # clock hours before relative durations ("晚上7点到9点")
    for m in _CLOCK_RANGE_CN.finditer(mt.view):
        p1, p2 = m.group("p1"), m.group("p2") or m.group("p1")
        h1, h2 = _hour(m.group("h1"), p1), _hour(m.group("h2"), p2)
        if h1 is not None and h2 is not None:
            if p1 and not m.group("p2") and h2 < h1 and h2 + 12 > h1 and h2 < 12:
                h2 += 12
            info.hours.append(HoursMention(_hour_span(h1, h2), m.group(0), m.start(), "clock"))
            take(m)
    for m in _CLOCK_RANGE_EN.finditer(mt.view):
        if m.group("h3"):
            h1, h2 = int(m.group("h3")), int(m.group("h4"))
        else:
            a2 = m.group("a2") if m.group("a2") in ("am", "pm") else None
            a1 = m.group("a1") or a2
            r1, r2 = _hour(m.group("h1"), None, a1), _hour(m.group("h2"), None, a2)
            if r1 is None or r2 is None:
                continue
            h1, h2 = r1, r2
        if h1 <= 24 and h2 <= 24:
            info.hours.append(HoursMention(_hour_span(h1 % 24, h2 % 24), m.group(0), m.start(), "clock"))
            take(m)
    for m in _CLOCK_ONE.finditer(mt.view):
        if m.group("h1"):
            h = _hour(m.group("h1"), m.group("p1"))
        else:
            h = _hour(m.group("h2"), None, m.group("a2"))
        if h is not None:
            info.hours.append(HoursMention([h], m.group(0), m.start(), "clock"))
            take(m)

    for m in _HALF.finditer(mt.view):
        u = m.group("u")
        dur = "P6M" if (u is None or u == "年") else ("P15D" if "月" in u else "P4D")
        info.ranges.append(RangeMention(m.group(0), {"last": dur}, m.start(), "last"))
        take(m)
    for m in _WEEK_DAY.finditer(mt.view):
        offset = {"上上": -2, "上": -1, "本": 0, "这": 0, "last": -1, "this": 0}[
            m.group("w") or m.group("ew")
        ]
        monday = clock.today - timedelta(days=clock.today.weekday()) + timedelta(weeks=offset)
        name = m.group("d") or m.group("ed")
        if name in ("末", "weekend"):
            window = clock.span(monday + timedelta(days=5), monday + timedelta(days=7))
        else:
            wd = _WEEKDAYS_CN[name] if name in _WEEKDAYS_CN else _WEEKDAYS_EN.index(name)
            window = clock.day(monday + timedelta(days=wd))
        info.ranges.append(RangeMention(m.group(0), window, m.start(), "day"))
        take(m)
    for m in _LAST_CN.finditer(mt.view):
        unit = _UNIT_CN[m.group("u") or m.group("u2") or m.group("u2m")]
        n_text = m.group("n") or m.group("n2")
        # 这几个月 / 最近几天: "a few" is read as 3, and the answer's interpretation says so
        n = (_A_FEW if n_text == "几" else parse_number(n_text)) if n_text else 1
        if not n_text and m.group(0).startswith("这"):
            continue  # 这周/这个月 are calendar words
        if n is None or n <= 0:
            continue
        if not n_text and unit in ("D",):
            continue
        info.ranges.append(RangeMention(m.group(0), {"last": _duration(n, unit)}, m.start(), "last"))
        take(m)
    for m in _LAST_EN.finditer(mt.view):
        if m.group("u"):
            few = {"few": _A_FEW, "several": _A_FEW, "couple of": 2}
            n = few.get(m.group("n")) or parse_number(m.group("n")) or 1
            unit = _UNIT_EN[m.group("u")]
        else:
            n = 1
            unit = _UNIT_EN[m.group("u2") or m.group("u3")]
        info.ranges.append(RangeMention(m.group(0), {"last": _duration(n, unit)}, m.start(), "last"))
        take(m)

    for pattern, unit_name, offset in _CALENDAR_RE:
        for m in pattern.finditer(mt.view):
            info.ranges.append(
                RangeMention(m.group(0), _calendar(clock, unit_name, offset), m.start(), "calendar")
            )
            take(m)

    for m in _MONTH_ONLY.finditer(mt.view):
        if m.group("em") or m.group("em2"):
            mon: int | None = _EN_MONTHS[(m.group("em") or m.group("em2"))[:3]]
        else:
            mon = parse_number(m.group("m"))
        if mon is not None:
            got = clock.month_range(None, mon, m.group(0), m.group(0))
            if got:
                _calendar_mention(info, mt, m, got, clock)
            take(m)

    for m in _WINDOW.finditer(mt.view):
        unit = m.group("u") or m.group("u2") or m.group("u3") or m.group("u4")
        n = parse_number(m.group("n") or m.group("n2") or m.group("n3") or m.group("n4") or "1") or 1
        code = _UNIT_CN.get(unit) or _UNIT_EN[unit]
        info.window_days = _unit_days(code, n)
        take(m)

    for pattern, hours, _name in _DAYPARTS_RE:
        for m in pattern.finditer(mt.view):
            info.hours.append(HoursMention(list(hours), m.group(0), m.start(), "daypart"))
            take(m)

    for m in _WEEKEND.finditer(mt.view):
        info.days.append(DaysMention([5, 6], True, m.group(0), m.start()))
        take(m)
    for m in _WEEKDAY.finditer(mt.view):
        info.days.append(DaysMention([0, 1, 2, 3, 4], False, m.group(0), m.start()))
        take(m)
    for m in _NAMED_DAY.finditer(mt.view):
        wd = _WEEKDAYS_CN[m.group("d")] if m.group("d") else _WEEKDAYS_EN.index(m.group("e"))
        info.days.append(DaysMention([wd], None, m.group(0), m.start()))
        take(m)

    info.errors = clock.errors
    info.ranges.sort(key=lambda r: r.start)
    info.hours.sort(key=lambda h: h.start)
    info.days.sort(key=lambda d: d.start)
    info.pivot_dates.sort(key=lambda p: p[1])
    return info


def _int(text: str | None) -> int | None:
    return int(text) if text else None


_SINCE_WORDS = {
    "since",
    "starting",
    "starting from",
    "starting in",
    "from",
    "自",
    "自从",
    "从",
    "以来",
    "起",
    "开始",
}
_AFTER_WORDS = {"after", "之后", "以后"}
_BEFORE_WORDS = {"before", "之前", "以前"}
_UNTIL_WORDS = {"until", "till", "up to", "through", "截至", "截止", "截止到", "为止"}


def _calendar_mention(
    info: TimeInfo,
    mt: MaskedText,
    m: re.Match[str],
    days: tuple[date, date],
    clock: _Clock,
    open_word: str | None = None,
) -> None:
    """A named calendar range ``[first, end)``; a word before or after it (since, before, 以来,
    之前 ...) makes it the open start or end of a range instead."""
    first, end = days
    view = mt.view
    start, stop = m.start(), m.end()
    kind = None
    if open_word:
        kind = open_word
    else:
        pre = _OPEN_BEFORE.search(view[max(0, start - 16) : start])
        suf = _OPEN_AFTER.match(view[stop : stop + 4])
        if suf:
            kind, stop = suf.group("w"), stop + suf.end()
        elif pre:
            kind, start = pre.group("w"), max(0, start - 16) + pre.start()
    label = view[start:stop]
    if kind in _SINCE_WORDS:
        info.ranges.append(RangeMention(label, {"since": clock.at(first)}, start, "since"))
    elif kind in _AFTER_WORDS:
        info.ranges.append(RangeMention(label, {"since": clock.at(end)}, start, "since"))
    elif kind in _BEFORE_WORDS:
        info.ranges.append(RangeMention(label, {"until": clock.at(first)}, start, "until"))
    elif kind in _UNTIL_WORDS:
        info.ranges.append(RangeMention(label, {"until": clock.at(end)}, start, "until"))
    else:
        info.ranges.append(RangeMention(label, clock.span(first, end), start, "calendar"))
    mt.consume(start, stop)


def _calendar(clock: _Clock, unit: str, offset: int) -> dict[str, str]:
    today = clock.today
    if unit == "day":
        return clock.day(today + timedelta(days=offset))
    if unit == "week":
        monday = today - timedelta(days=today.weekday()) + timedelta(weeks=offset)
        if offset == 0:
            return {"since": clock.at(monday)}
        return clock.span(monday, monday + timedelta(weeks=1))
    if unit == "month":
        first = _month_start(today)
        for _ in range(-offset):
            first = _month_start(first - timedelta(days=1))
        if offset == 0:
            return {"since": clock.at(first)}
        return clock.span(first, _next_month(first))
    if unit == "quarter":
        q_first = date(today.year, 3 * ((today.month - 1) // 3) + 1, 1)
        for _ in range(-offset):
            q_first = date(q_first.year - (q_first.month == 1), (q_first.month - 4) % 12 + 1, 1)
        if offset == 0:
            return {"since": clock.at(q_first)}
        q_end = date(q_first.year + (q_first.month == 10), (q_first.month + 2) % 12 + 1, 1)
        return clock.span(q_first, q_end)
    first_y = date(today.year + offset, 1, 1)
    if offset == 0:
        return {"since": clock.at(first_y)}
    return clock.span(first_y, date(first_y.year + 1, 1, 1))


def pivot_periods(pivot: date, window_days: int, now: datetime, tz: str) -> list[dict[str, object]]:
    """``before``/``after`` windows of ``window_days`` around a store-local ``pivot`` day."""
    clock = _Clock(now, tz)
    w = timedelta(days=window_days)
    return [
        {"label": "before", "time_range": clock.span(pivot - w, pivot)},
        {"label": "after", "time_range": clock.span(pivot, pivot + w)},
    ]
