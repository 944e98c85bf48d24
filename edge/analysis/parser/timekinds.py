"""The time expressions of a question: its kinds of time mention, each a slot extractor of its own.

Owned by :mod:`edge.analysis.parser`; registered in :data:`TIME_KINDS` in the order they claim and
run in that order by :func:`extract_time`: what one claims no later one reads (forecast horizons
first, for 下个月 is not 上个月; clock hours before durations: 晚上7点到9点). Each kind's slot is a
:class:`~.timecal.TimeInfo` of only what it read and the errors it found (a date no calendar has).
"""

from __future__ import annotations

import re
from abc import abstractmethod
from datetime import date, datetime, timedelta

from edge.analysis.parser.extraction import Context, Extractor
from edge.analysis.parser.text import CN_NUM, EN_NUM, MaskedText, parse_number, word
from edge.analysis.parser.timecal import (
    DATE,
    EN_MONTH,
    NN,
    SMALL_NUM,
    YYYY,
    Days,
    RangeMention,
    Reading,
    TimeInfo,
    add_months,
    month_number,
)
from edge.analysis.source import Vocabulary

_UNITS = dict(
    zip("天 日 周 星期 礼拜 月 年 季度 day week month year quarter".split(), "DDWWWMYQDWMYQ", strict=True)
)
WEEKDAYS_EN = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
#: a weekday's number (Monday: 0) by its Chinese (周一) or English name
_WEEKDAYS = dict(zip("一二三四五六日天七", [0, 1, 2, 3, 4, 5, 6, 6, 6], strict=True)) | {
    d: i for i, d in enumerate(WEEKDAYS_EN.split("|"))
}
#: the time kinds in the order they claim
TIME_KINDS: dict[str, TimeKind] = {}


class TimeKind(Extractor):
    """One kind of time mention (``class K(TimeKind, name=..., slot=...)``, registered in order)."""

    def __init_subclass__(cls, name: str, slot: str) -> None:
        super().__init_subclass__()
        if name in TIME_KINDS:
            raise ValueError(f"time kind {name!r} defined twice")
        cls.name, cls.slot = name, slot
        TIME_KINDS[name] = cls()

    def extract(self, mt: MaskedText, ctx: Context) -> TimeInfo:
        r = Reading(mt, ctx)
        self.read(r)
        return r.info

    @abstractmethod
    def read(self, r: Reading) -> None:
        """Claim this kind's matches of ``r.mt`` into ``r.info``."""


def _any(*alternatives: str) -> re.Pattern[str]:
    """The pattern that matches any of ``alternatives`` (the first that does at a place)."""
    return re.compile("|".join(alternatives))


def _first(m: re.Match[str], *names: str) -> str | None:
    """The first of the groups ``names`` (two or more) that matched."""
    return next((g for g in m.group(*names) if g), None)


def _int(text: str | None) -> int | None:
    return int(text) if text else None


def _duration(n: int, unit: str) -> str:
    """``PnU``; quarters (Q, not an ISO unit) become months."""
    return f"P{3 * n}M" if unit == "Q" else f"P{n}{unit}"


_HORIZON = _any(
    rf"下个?月|下周|下个?星期|明天|明年|(?:未来|接下来|今后)的?(?P<n>{CN_NUM})?\s?(?:个)?(?P<u>天|周|星期|月|年)",
    word(rf"next (?:(?P<n2>{EN_NUM}) )?(?P<u2>day|week|month|year)s?|tomorrow|coming (?P<u3>week|month)"),
    word(rf"(?:in|within) (?:the )?(?P<n4>{EN_NUM}) (?P<u4>day|week|month)s?(?: time)?"),
    # what is left of the month or the year: its days
    r"(?<![上0-9一二三四五六七八九十])(?<!上个)(?:到|这个|本)?(?P<left>月|年)底",
    word(
        r"(?:the )?rest of (?:the |this )?(?P<left2>month|year)|by the end of (?:the |this )?(?P<left3>month|year)"
    ),
)


class Horizon(TimeKind, name="horizon", slot="a forecast's horizon (下个月, next 7 days): the first named"):
    def read(self, r: Reading) -> None:
        for m in r.each(_HORIZON):
            if r.info.horizon is None and (left := _first(m, "left", "left2", "left3")):
                end = (
                    date(r.today.year + 1, 1, 1)
                    if left in ("年", "year")
                    else add_months(r.today.replace(day=1), 1)
                )
                r.info.horizon = f"P{max((end - r.today).days - 1, 1)}D"
            elif r.info.horizon is None:
                # a word without a unit of its own (下个月, 明年) names one; else a day (明天, tomorrow)
                named = next((u for u in ("月", "周", "星期", "年") if u in m.group(0)), "天")
                unit = _first(m, "u", "u2", "u3", "u4") or named
                n = parse_number(_first(m, "n", "n2", "n4") or "1") or 1
                r.info.horizon = f"P{n}{_UNITS[unit]}"
            r.take(m)


#: the number of a "last N units" phrase that is not a positive count (0, -3)
_BAD_COUNTS = (
    re.compile(
        r"(?:last|past|previous|recent|trailing) (?P<n>-\s?[0-9]+|minus [0-9]+|0+|zero|no) "
        r"(?P<u>day|week|month|quarter|year)s?"
    ),
    re.compile(
        r"(?:过去|最近|近|前)\s?(?P<n>-\s?[0-9]+|负[0-9一二三四五六七八九十]+|0+|零)\s?(?:个)?\s?"
        r"(?P<u>天|日|周|星期|礼拜|季度|月|年)"
    ),
)


class BadCounts(TimeKind, name="bad_counts", slot="errors: a count that is none (the last 0 days, 过去-3天)"):
    def read(self, r: Reading) -> None:
        for pattern in _BAD_COUNTS:
            for m in r.each(pattern):
                text, unit = m.group(0), m.group("u")
                en = f"'{text}' is not a span of time: ask for at least one {unit}"
                r.errors.append((en, f"“{text}”不是一个时间范围：至少要问一个{unit}"))
                r.take(m)


_CN_MONTH = rf"(?:{NN}|十[一二]?|[一二三四五六七八九])"
#: no day number follows (then it is a date, read by DATE)
_NO_DAY = rf"(?!\s?{SMALL_NUM}\s?[日号])(?![0-9])"
#: a span of calendar months: 9月到11月, 2025年9月至2025年11月, from September to November 2025
_MONTH_SPAN = _any(
    rf"(?:从|自)?(?:(?P<y1>{YYYY})\s?年\s?)?(?P<m1>{_CN_MONTH})\s?月份?\s?(?:到|至|~|-|—|–)\s?"
    rf"(?:(?P<y2>{YYYY})\s?年\s?)?(?P<m2>{_CN_MONTH})\s?月份?(?:底|末)?{_NO_DAY}(?:之间|期间)?",
    word(
        rf"(?:from |between )?(?P<e1>{EN_MONTH})(?:,? (?P<ey1>{YYYY}))? ?"
        rf"(?:to|until|till|through|thru|and|-|–) ?(?P<e2>{EN_MONTH})(?:,? (?P<ey2>{YYYY}))?"
    )
    + rf"(?! ?{NN}(?![0-9]))",
)
#: one calendar month of a named year: September 2025, 2025年9月, 2025-09
_YEAR_MONTH = _any(
    rf"(?P<cy>{YYYY})\s?年\s?(?P<cm>{_CN_MONTH})\s?月份?{_NO_DAY}",
    word(rf"(?P<em>{EN_MONTH})\.?,? (?P<ey>{YYYY})"),
    word(rf"(?P<iy>{YYYY})[-/.](?P<im>{NN})") + r"(?![-/.][0-9])",
)
#: a numbered ISO week: week 45, 第45周, 2025-W45, week 45 of 2025
_WEEK_NO = _any(
    r"(?:(?P<cy>[0-9]{4})\s?年\s?)?第\s?(?P<cw>[0-9]{1,3}|[一二三四五六七八九十]{1,3})\s?(?:周|个?星期)(?!内|之内|以内)",
    word(r"(?P<iy>[0-9]{4})-?w(?P<iw>[0-9]{1,3})"),
    word(r"(?:the )?week (?:no\.? |number |#)?(?P<ew>[0-9]{1,3})(?:,? (?:of )?(?P<ey>[0-9]{4}))?"),
)
#: a month by number in English: month 13
_MONTH_NO_EN = re.compile(word(r"month (?P<m>[0-9]{1,3})(?:,? (?:of )?(?P<y>[0-9]{4}))?"))
#: a whole year: 2025年, in 2099, during 2024, the year 2025
_YEAR = _any(
    rf"(?<![0-9])(?P<cy>{YYYY})\s?年(?:全年|整年|一整年)?(?!\s?{SMALL_NUM}\s?月)",
    word(
        r"(?P<ew>in|during|throughout|since|from|after|before|until|till|the year|year) (?P<ey>[12][0-9]{3})"
    )
    + r"(?![-/.][0-9])",
)


def _month(m: re.Match[str], cn: str, en: str) -> int:
    """The month a Chinese (number) or English (name) group of ``m`` names."""
    return parse_number(m.group(cn)) or 0 if m.group(cn) else month_number(m.group(en))


#: a part of a month (11月上旬, 月底 of a named month, early / mid / late November, the first week
#: of May): its days, the month the latest begun; never the open edge of a range ("since the
#: start of November" is the calendar's)
_MONTH_PART = _any(
    rf"(?:(?P<y>{YYYY})年)?(?P<m>{_CN_MONTH})月(?:份)?的?(?P<zp>上旬|中旬|下旬|初|底|末)",
    word(
        rf"(?<!since )(?<!from )(?<!until )(?<!till )(?<!through )(?<!to )(?P<ep>early|mid|late|"
        rf"the (?:start|beginning|middle|end|first week|last week) of)[- ](?P<em>{EN_MONTH})"
    ),
)
_PART_DAYS = {"上旬": (1, 11), "初": (1, 11), "early": (1, 11), "the start of": (1, 11),
              "the beginning of": (1, 11), "中旬": (11, 21), "mid": (11, 21),
              "the middle of": (11, 21), "下旬": (21, 0), "底": (21, 0), "末": (21, 0), "late": (21, 0),
              "the end of": (21, 0), "the first week of": (1, 8), "the last week of": (-7, 0)}  # fmt: skip


class MonthParts(
    TimeKind, name="month_parts", slot="a part of a month (11月上旬, early November, the first week of May)"
):
    def read(self, r: Reading) -> None:
        for m in r.each(_MONTH_PART):
            en = m.group("em")
            month = month_number(en) if en else parse_number(m.group("m"))
            y = int(m.group("y")) if m.group("y") else None
            days = r.month_range(y, month, m.group(0)) if month is not None else None
            if days is None:
                r.take(m)
                continue
            first, end = days  # end: the next month's first day
            a, b = _PART_DAYS[_first(m, "zp", "ep") or ""]
            since = first + timedelta(days=a - 1) if a > 0 else end + timedelta(days=a)
            until = first + timedelta(days=b - 1) if b > 0 else end
            r.range(m, r.span(since, until), "calendar")


class NamedPeriods(TimeKind, name="named_periods", slot="named months, ISO weeks, years and month spans"):
    def read(self, r: Reading) -> None:
        for m in r.each(_MONTH_SPAN):
            text = m.group(0)
            mo1, mo2 = _month(m, "m1", "e1"), _month(m, "m2", "e2")
            y1, y2 = _int(m.group("y1") or m.group("ey1")), _int(m.group("y2") or m.group("ey2"))
            if y1 is None and y2 is None and 1 <= mo2 <= 12:
                y2 = r.latest_year(mo2)
            if y1 is None and y2 is not None:
                y1 = y2 if mo1 <= mo2 else y2 - 1
            elif y2 is None and y1 is not None:
                y2 = y1 if mo2 >= mo1 else y1 + 1
            ma, mb = r.month_range(y1, mo1, text), r.month_range(y2, mo2, text)
            if ma and mb and mb[1] <= ma[0]:
                r.backwards(text)
            elif ma and mb:
                r.info.ranges.append(RangeMention(text, r.span(ma[0], mb[1]), m.start(), "span"))
            r.take(m)
        for m in r.each(_YEAR_MONTH):
            y = int(m.group("cy") or m.group("ey") or m.group("iy"))
            mo = int(m.group("im")) if m.group("iy") else _month(m, "cm", "em")
            r.calendar(m, r.month_range(y, mo, m.group(0)))
        for m in r.each(_WEEK_NO):
            r.calendar(m, self.iso_week(m, r))
        for m in r.each(_MONTH_NO_EN):
            r.calendar(m, r.month_range(_int(m.group("y")), int(m.group("m")), m.group(0)))
        for m in r.each(_YEAR):
            y = int(m.group("cy") or m.group("ey"))
            r.calendar(m, r.month_range(y, 1, m.group(0), months=12), open_word=m.group("ew"))

    @staticmethod
    def iso_week(m: re.Match[str], r: Reading) -> Days | None:
        """The days of a numbered ISO week (without a year: the latest begun by now)."""
        wk = parse_number(_first(m, "cw", "iw", "ew") or "") or 0
        y_text = _first(m, "cy", "iy", "ey")
        y = int(y_text) if y_text else r.today.isocalendar()[0]
        note = " (ISO weeks are 1-52 or 53)", "（ISO 周为 1-52 或 53）"
        try:
            monday = date.fromisocalendar(y, wk, 1)
            if not y_text and monday > r.today:
                y, note = y - 1, ("", "")
                monday = date.fromisocalendar(y, wk, 1)
        except ValueError:
            r.errors.append((f"there is no week {wk} in {y}{note[0]}", f"{y} 年没有第 {wk} 周{note[1]}"))
            return None
        return monday, monday + timedelta(days=7)


#: two dates in one pattern, the groups of each named apart
_DATE_A, _DATE_B = (DATE.replace("(?P<", f"(?P<{p}_") for p in "ab")
_SPAN = re.compile(
    rf"(?:从|自|between |from )?(?:{_DATE_A}) ?(?:到|至|~|-|–|—|to|until|through|and|till) ?"
    rf"(?:{_DATE_B})(?:之间|期间)?"
)
#: a span that says it is one (not "Nov 10 - Nov 1" read as two dates)
_SPAN_WORD = re.compile(r"到|至|~|从|自|(?<![a-z])(?:between|from|to|until|through|till)(?![a-z])")
#: a date with a word before or after it that opens a range from or up to it (the range's edge)
_OPEN_DATES = [
    (re.compile(rf"(?:(?P<pre>{pre})\s?)?(?:{DATE})(?:\s?(?P<suf>{suf}))?"), edge)
    for pre, suf, edge in (
        (
            "since|starting(?: from)?|from|after|自从?|从",
            "以来|至今|迄今|到现在|到今天|到目前为止|之后|以后|起|开始",
            "since",
        ),
        ("until|till|up to|before|截至|截止到?|到", "之前|以前|为止", "until"),
    )
]
_DATE = re.compile(DATE)


class Dates(TimeKind, name="dates", slot="date spans, since or until a date, single days (each a pivot)"):
    def read(self, r: Reading) -> None:
        for m in r.each(_SPAN):
            a, b = r.read_date(m, "a_"), r.read_date(m, "b_")
            if a and b and b >= a:
                r.range(m, r.span(a, b + timedelta(days=1)), "span")
            elif a and b and _SPAN_WORD.search(m.group(0)):
                r.backwards(m.group(0))
                r.take(m)
        for pattern, edge in _OPEN_DATES:
            for m in r.each(pattern):
                d = r.read_date(m) if m.group("pre") or m.group("suf") else None
                if d:
                    r.range(m, {edge: r.at(d)}, edge, pivot=d)
        for m in r.each(_DATE):
            d = r.read_date(m)
            if d:
                r.range(m, r.day(d), "day", pivot=d)


_H = r"(?:[0-9]{1,2}|[一二三四五六七八九十]{1,3}|十[一二]|两)"
_DAY_PART = "早上|上午|中午|下午|晚上|傍晚|晚间|夜间|夜里|午后"
_PM_PREFIX = {"下午", "晚上", "傍晚", "晚间", "夜间", "夜里", "午后"}
_CLOCK_RANGE_CN = re.compile(
    rf"(?P<p1>{_DAY_PART})?\s?(?P<h1>{_H})\s?(?:点|时|:00)(?:钟)?\s?(?:到|至|-|~|—|–)\s?"
    rf"(?P<p2>早上|上午|中午|下午|晚上|傍晚)?\s?(?P<h2>{_H})\s?(?:点|时|:00)(?:钟)?(?:之间)?"
)
_CLOCK_RANGE_EN = _any(
    word(
        r"(?:from |between )?(?P<h1>[0-9]{1,2})(?::00)? ?(?P<a1>am|pm)? ?(?:-|–|to|until|and) ?"
        r"(?P<h2>[0-9]{1,2})(?::00)? ?(?P<a2>am|pm|o'?clock)"
    ),
    r"(?P<h3>[0-9]{1,2}):00 ?(?:-|–|to|~) ?(?P<h4>[0-9]{1,2}):00",
)
#: hours open on one side: after 6pm, before noon, 晚上6点以后, 中午之前
_CLOCK_OPEN = _any(
    word(
        r"(?P<w1>after|since|from|before|until|till|up to) (?:(?P<h1>[0-9]{1,2})(?::00)? ?(?P<a1>am|pm)|(?P<noon1>noon|midday))"
    ),
    rf"(?:(?P<p2>{_DAY_PART})?(?P<h2>{_H})\s?(?:点|时)(?:钟)?|(?P<noon2>中午(?:12点)?))(?P<w2>以后|之后|后|以前|之前|前)",
)
_AFTER = {"after", "since", "from", "以后", "之后", "后"}
#: not the 一点 of 高一点 / 多一点 / 快一点 ("a bit"), nor 有一点 / 差一点
_CLOCK_ONE = _any(
    rf"(?<![高低多少快慢好差大小长短贵宜有些])(?P<p1>{_DAY_PART})?(?P<h1>{_H})点(?:钟)?",
    word(r"(?:at )?(?P<h2>[0-9]{1,2}) ?(?P<a2>am|pm)"),
)


def _hour(token: str, prefix: str | None, ampm: str | None = None) -> int | None:
    """The hour (0-23) a clock hour names with its part of the day (下午) or am/pm."""
    h = parse_number(token)
    if h is None or h > 24:
        return None
    if (ampm == "pm" or prefix in _PM_PREFIX) and h < 12:
        h += 12
    return 0 if ampm == "am" and h == 12 else h % 24


def _hour_span(h1: int, h2: int) -> list[int]:
    """The hours from ``h1`` up to ``h2``, across midnight when ``h2`` is earlier."""
    if h1 == h2:
        return [h1]
    return [h % 24 for h in range(h1, h2 if h2 > h1 else h2 + 24)]


class ClockHours(TimeKind, name="clock_hours", slot="clock hours and ranges (晚上7点到9点, 9am-5pm)"):
    def read(self, r: Reading) -> None:
        for m in r.each(_CLOCK_RANGE_CN):
            p1, p2 = m.group("p1"), m.group("p2") or m.group("p1")
            h1, h2 = _hour(m.group("h1"), p1), _hour(m.group("h2"), p2)
            if h1 is not None and h2 is not None:
                if p1 and not m.group("p2") and h2 < h1 and h2 + 12 > h1 and h2 < 12:
                    h2 += 12
                r.hours(m, _hour_span(h1, h2), "clock")
        for m in r.each(_CLOCK_RANGE_EN):  # 9am-5pm, 7 to 9 o'clock, 10:00-14:00
            a2 = m.group("a2") if m.group("a2") in ("am", "pm") else None
            h1 = _hour(_first(m, "h1", "h3") or "", None, m.group("a1") or a2)
            h2 = _hour(_first(m, "h2", "h4") or "", None, a2)
            if h1 is not None and h2 is not None:
                r.hours(m, _hour_span(h1, h2), "clock")
        for m in r.each(_CLOCK_OPEN):  # open on one side: to the day's end or from its start
            noon = bool(_first(m, "noon1", "noon2"))
            h = 12 if noon else _hour(_first(m, "h1", "h2") or "", m.group("p2"), m.group("a1"))
            if h is not None:
                after = _first(m, "w1", "w2") in _AFTER
                r.hours(m, list(range(h, 24)) if after else list(range(0, h)), "clock")
        for m in r.each(_CLOCK_ONE):
            h = _hour(_first(m, "h1", "h2") or "", m.group("p1"), m.group("a2"))
            if h is not None:
                r.hours(m, [h], "clock")


_WEEK_DAY = _any(
    r"(?P<w>上上|上|本|这)(?:个)?(?:周|星期|礼拜)(?P<d>[一二三四五六日天末])",
    word(rf"(?P<ew>last|this) (?P<ed>{WEEKDAYS_EN}|weekend)"),
)
_WEEK_OFFSETS = {"上上": -2, "上": -1, "本": 0, "这": 0, "last": -1, "this": 0}


class WeekDays(TimeKind, name="week_days", slot="a day or weekend of a named week (上周一, last Monday)"):
    def read(self, r: Reading) -> None:
        for m in r.each(_WEEK_DAY):
            monday = r.monday(_WEEK_OFFSETS[_first(m, "w", "ew") or ""])
            name = _first(m, "d", "ed") or ""
            if name in ("末", "weekend"):
                r.range(m, r.span(monday + timedelta(days=5), monday + timedelta(days=7)), "day")
            else:
                r.range(m, r.day(monday + timedelta(days=_WEEKDAYS[name])), "day")


_HALF = _any(
    r"(?:过去|最近|近|这)\s?半(?P<u>年|个月|个?星期)",
    word(r"(?:the )?(?:last|past) (?:half (?:a )?year|six months)"),
)
_LAST_CN = _any(
    rf"(?:过去|最近|近|前|这|在过去的?|最近的|过去的)\s?(?P<n>{CN_NUM}|几)?\s?(?:个)?\s?(?P<u>天|日|周|星期|礼拜|季度|月|年)",
    # "三个月以来" is a duration, "10月以来" is since October (read with the calendar months)
    rf"(?P<n2>{CN_NUM})\s?(?:(?:个)?(?P<u2>天|周|星期|礼拜|季度|年)|个(?P<u2m>月))(?:以来|来)",
)
_IN = "(?:(?:in|over|during|for|within) )?"
_LAST_EN = _any(
    rf"{_IN}(?:the )?(?:last|past|previous|recent|trailing|these) (?P<n>{EN_NUM}|few|couple of|several) "
    r"(?P<u>day|week|month|quarter|year)s?",
    rf"{_IN}the (?:past|last) (?P<u2>day|week|month|quarter|year)",
    rf"{_IN}(?:the )?past (?P<u3>week|month|quarter|year)",
    # "trending over two months": a span over time, never a horizon ("in two weeks" is one)
    rf"(?:over|across|during|for) (?:the )?(?P<n4>{EN_NUM}) (?P<u4>day|week|month|quarter|year)s?",
)
#: "a few" / 几 in a span ("the last few weeks", 这几个月) is read as 3, and the answer says so
_A_FEW = 3
_FEW_EN = {"few": _A_FEW, "several": _A_FEW, "couple of": 2}


class Recent(TimeKind, name="recent", slot="the last N units (过去3天, 最近半年, the past few weeks)"):
    def read(self, r: Reading) -> None:
        for m in r.each(_HALF):
            u = m.group("u")
            r.range(m, {"last": "P6M" if u in (None, "年") else "P15D" if "月" in u else "P4D"}, "last")
        for m in r.each(_LAST_CN):
            unit = _UNITS[_first(m, "u", "u2", "u2m") or ""]
            n_text = _first(m, "n", "n2")
            n = (_A_FEW if n_text == "几" else parse_number(n_text)) if n_text else 1
            # 这周/这个月 are calendar words; a bare 天 is no span
            if not n_text and (m.group(0).startswith("这") or unit == "D") or n is None or n <= 0:
                continue
            r.range(m, {"last": _duration(n, unit)}, "last")
        for m in r.each(_LAST_EN):
            n_en = _first(m, "n", "n4")
            n = _FEW_EN.get(n_en or "") or parse_number(n_en or "") or 1 if n_en else 1
            r.range(m, {"last": _duration(n, _UNITS[_first(m, "u", "u2", "u3", "u4") or ""])}, "last")


#: "... to date": from the start of the current period up to now (before "this year" and kin)
_TO_DATE = [
    ("year", "年初至今|年初到现在|今年至今|今年到目前为止"),
    ("quarter", "本季度至今|季初至今"),
    ("month", "本月至今|月初至今|月初到现在|这个月到现在|这个月至今|本月到现在"),
    ("week", "本周至今|周初至今"),
]
#: calendar words (Chinese, English) -> the period they name, counted from the current one
_CALENDAR = [
    (zh, f"{u}[ -]to[ -]date|{u[0]}td|so far this {u}|this {u} so far", u, 0) for u, zh in _TO_DATE
] + [
    ("上上周|上上个?星期", "the week before last", "week", -2),
    ("上周|上个?星期|上个?礼拜", "last week|previous week|the prior week", "week", -1),
    ("本周|这周|这个?星期|这个?礼拜", "this week", "week", 0),
    ("上上个月", "the month before last", "month", -2),
    ("上个?月", "last month|previous month|the prior month", "month", -1),
    ("本月|这个月|当月", "this month", "month", 0),
    ("上个?季度", "last quarter|previous quarter", "quarter", -1),
    ("本季度|这个?季度", "this quarter", "quarter", 0),
    ("去年", "last year|previous year", "year", -1),
    ("今年", "this year", "year", 0),
    ("前天|前儿个?", "the day before yesterday", "day", -2),
    ("昨天|昨日|昨儿个?", "yesterday", "day", -1),
    ("今天|今日|今儿个?", "today", "day", 0),
]
_CALENDAR_RE = [(_any(zh, word(en)), unit, offset) for zh, en, unit, offset in _CALENDAR]


class CalendarWords(TimeKind, name="calendar", slot="calendar words (today, 上周, this month, 年初至今)"):
    def read(self, r: Reading) -> None:
        for pattern, unit, offset in _CALENDAR_RE:
            for m in r.each(pattern):
                r.range(m, r.period(unit, offset), "calendar")


_MONTH_ONLY = _any(
    rf"(?<![0-9个])(?P<m>{_CN_MONTH})月份?(?![0-9一二三四五六七八九十日号])",
    word(rf"in (?P<em>{EN_MONTH})"),
    word(r"(?P<em2>january|february|march|april|june|july|august|september|october|november|december)"),
)


class Months(TimeKind, name="months", slot="a month without a year (10月, in May): the latest begun"):
    def read(self, r: Reading) -> None:
        for m in r.each(_MONTH_ONLY):
            en = _first(m, "em", "em2")
            month = month_number(en) if en else parse_number(m.group("m"))
            if month is not None:
                r.calendar(m, r.month_range(None, month, m.group(0)))


WINDOW = _any(
    rf"(?:前后\s?)?(?P<n>{CN_NUM})?\s?(?:个)?(?P<u>天|周|星期|月)(?:内|之内|里|以内)",
    rf"前后\s?(?P<n4>{CN_NUM})?\s?(?:个)?(?P<u4>天|周|星期|月)",
    word(rf"(?:the|a|(?P<n2>{EN_NUM})) (?P<u2>day|week|month)s? (?:after|before|following|prior)"),
    word(rf"within (?:(?P<n3>{EN_NUM}) )?(?P<u3>day|week|month)s?"),
)
_UNIT_DAYS = {"D": 1, "W": 7, "M": 30, "Y": 365}


class Windows(TimeKind, name="windows", slot="window_days around a date (一周内, the week after)"):
    def read(self, r: Reading) -> None:
        for m in r.each(WINDOW):
            n = parse_number(_first(m, "n", "n2", "n3", "n4") or "1") or 1
            r.info.window_days = n * _UNIT_DAYS[_UNITS[_first(m, "u", "u2", "u3", "u4") or ""]]
            r.take(m)


_DAYPARTS = [
    (_any(zh, word(en)), hours)
    for zh, en, hours in (
        ("早上|早晨|上午|清晨", "mornings?", list(range(8, 12))),
        ("中午|午间|午饭时间", "noon|lunch ?time|midday", [11, 12, 13]),
        ("下午|午后", "afternoons?", list(range(12, 18))),
        ("晚上|傍晚|晚间|夜间|夜里", "evenings?|nights?|tonight", list(range(18, 23))),
        ("白天|日间", "daytime|during the day", list(range(8, 18))),
        ("凌晨", "early morning", list(range(0, 6))),
        ("深夜", "late night", [22, 23]),
    )
]


class Dayparts(TimeKind, name="dayparts", slot="parts of the day (下午, mornings, late night) as hours"):
    def read(self, r: Reading) -> None:
        for pattern, hours in _DAYPARTS:
            for m in r.each(pattern):
                r.hours(m, list(hours), "daypart")


_WEEKEND = _any("周末|双休日|星期六日", word(r"weekends?|saturdays? and sundays?"))
#: "by weekday" groups by the day of the week (a dimension word), it does not keep Monday-Friday
_WEEKDAY = re.compile(
    r"工作日|平日|周中|(?<!by )(?<!per )(?<!each )(?<!across )"
    + word(r"weekdays?|work ?days?|working days?|business days?")
)
_NAMED_DAY = _any(r"(?:周|星期|礼拜)(?P<d>[一二三四五六日天])", word(rf"(?P<e>{WEEKDAYS_EN})s?"))


class DaysOfWeek(TimeKind, name="days_of_week", slot="days of the week kept (周末, weekdays, 周一, Mondays)"):
    def read(self, r: Reading) -> None:
        for m in r.each(_WEEKEND):
            r.days(m, [5, 6], True)
        for m in r.each(_WEEKDAY):
            r.days(m, [0, 1, 2, 3, 4], False)
        for m in r.each(_NAMED_DAY):
            r.days(m, [_WEEKDAYS[_first(m, "d", "e") or ""]], None)


def extract_time(mt: MaskedText, now: datetime, tz: str) -> TimeInfo:
    """Find and consume every time expression of ``mt``; return them in question order. (A time
    kind reads no more of its context than the clock and the zone ``tz``.)"""
    ctx = Context(Vocabulary(timezone=tz), now)
    info = TimeInfo()
    for kind in TIME_KINDS.values():
        info.add(kind.extract(mt, ctx))
    return info.in_order()
