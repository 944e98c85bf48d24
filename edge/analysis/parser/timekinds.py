"""The time expressions of a question: its kinds of time mention, read by the table of ``timekinds.toml``.

Owned by :mod:`edge.analysis.parser`: :data:`TIME_KINDS` holds the kinds in the order they claim,
each its passes (a pattern, the reader of its matches, the reader's arguments), and
:func:`extract_time` runs them in that order: what one claims no later one reads. Each kind's slot is
a :class:`~.timecal.TimeInfo` of only what it read and the errors it found (a date no calendar has).
"""

from __future__ import annotations

import functools
import importlib.resources
import re
import tomllib
from collections.abc import Callable
from datetime import date, datetime, time, timedelta
from typing import Any

from edge.analysis.parser import timecal as tc
from edge.analysis.parser.extraction import Context, Reader
from edge.analysis.parser.text import CN_NUM, EN_NUM, MaskedText, parse_number, word
from edge.analysis.plan import subtract_duration
from edge.analysis.source import Vocabulary

_DATA = tomllib.loads(
    importlib.resources.files("edge.analysis.parser").joinpath("timekinds.toml").read_text(encoding="utf-8")
)
_WORDS = _DATA["words"]
WEEKDAYS_EN: str = _DATA["pieces"]["WEEKDAYS_EN"]
#: a weekday's number (Monday: 0) by its Chinese (周一) or English name
_WEEKDAYS = dict(zip("一二三四五六日天七", [0, 1, 2, 3, 4, 5, 6, 6, 6], strict=True))
_WEEKDAYS |= {d: i for i, d in enumerate(WEEKDAYS_EN.split("|"))}
_MONTHS = {name[:3].lower(): i for i, name in enumerate(tc.MONTH_NAMES, 1)}
#: the open words of a calendar range (timekinds.toml) -> (the edge they set, whether at its end)
_OPEN_WORDS = {w: v for side in _DATA["open"].values() for ws, v in side.items() for w in ws.split("|")}
_OPEN_BEFORE = re.compile(rf"(?P<w>{'|'.join(_DATA['open']['before'])})\s?$")
_OPEN_AFTER = re.compile(rf"^\s?(?P<w>{'|'.join(_DATA['open']['after'])})")
_ORIGIN = frozenset({"from", "从", "自"})
#: "since" told before what happened on a date ("since the training on", "ever since we moved it
#: on"): the date is where the range opens
#: a period said as a week (its year-back is 52 weeks, the same weekdays)
_WEEKISH = re.compile(r"(?<![a-z])weeks?(?![a-z])|周|星期|礼拜")
#: the parts of the day whose 12 o'clock is midnight
_EVENING = frozenset({"晚上", "夜里", "傍晚"})
#: words before "before/after" a holiday that count days from it ("the day after", "just before")
_COUNTED_FROM = re.compile(
    r"(?<![a-z])(?:days?|nights?|weekends?|weeks?|months?|just|right|shortly|immediately|straight|soon)\s+$"
)
#: what happened on a date, told right after it and closed by a word of since or after (下雨以来)
_TOLD_AFTER = re.compile(r"(?:那天|当天)?([\u3400-\u9fff]{1,8}?)(?:以来|之后|以后)")
_TOLD_SINCE = re.compile(r"(?<![a-z])(?:since|after|following)(?: [a-z'\-]+){1,6} (?:on|from)(?: the)? ?$")


def _pattern(alternatives: list[Any], pieces: dict[str, str]) -> str:
    """The alternatives joined, each ``{PIECE}`` written out, each ``{word, before, after}`` bounded."""
    alts = (
        a if isinstance(a, str) else a.get("before", "") + word(a["word"]) + a.get("after", "")
        for a in alternatives
    )
    return re.sub(r"\{([A-Z_]+)\}", lambda k: pieces[k[1]], "|".join(alts))


_PIECES = {"CN_NUM": CN_NUM, "EN_NUM": EN_NUM}
for _name, _piece in _DATA["pieces"].items():
    _PIECES[_name] = _pattern([_piece], _PIECES)
_PIECES |= {f"DATE_{p.upper()}": _PIECES["DATE"].replace("(?P<", f"(?P<{p}_") for p in "ab"}


def _group(m: re.Match[str], name: str) -> str:
    """The group ``name`` or ``name`` with a number (y, y2, y3: one group in other alternatives), else ""."""
    return next((v for k, v in m.groupdict().items() if v and k.rstrip("0123456789") == name), "")


def _year_month(m: re.Match[str], prefix: str = "") -> tuple[int | None, int]:
    """The year (None: not named) and month of a match: groups y, m (a number) or mn (a name)."""
    y, name = _group(m, prefix + "y"), _group(m, prefix + "mn")
    month = _MONTHS[name[:3]] if name else parse_number(_group(m, prefix + "m") or "1") or 0
    return (int(y) if y else None), month


class Reading(tc.Clock):
    """One time kind's pass over the question on the store's calendar and its readers (``read_<name>``)."""

    def __init__(self, mt: MaskedText, ctx: Context) -> None:
        super().__init__(ctx.now, ctx.vocab.timezone)
        self.mt = mt
        self.info = tc.TimeInfo(errors=self.errors)

    def take(self, m: re.Match[str]) -> None:
        self.mt.consume(m.start(), m.end())

    def range(self, m: re.Match[str], window: dict[str, str], kind: str, pivot: date | None = None) -> None:
        """A time window named by ``m`` (claimed); ``pivot``: the one date it is read from."""
        if pivot:
            self.info.pivot_dates.append((pivot, m.start()))
        self.info.ranges.append(tc.RangeMention(m.group(0), window, m.start(), kind))
        self.take(m)

    def between(self, m: re.Match[str], first: date, end: date) -> None:
        """The span of days from ``first`` up to ``end`` (not in it), else an error: it ends before it starts."""
        if end <= first:
            self.fail(f"'{m.group(0)}' ends before it starts", f"“{m.group(0)}”的结束早于开始")
        self.range(m, self.span(first, end), "span")

    def opened(self, m: re.Match[str], from_opens: bool) -> tuple[str | None, int, int]:
        """The open word (since, 以来 ...; else None) after or before ``m`` and the span with it."""
        start, stop, view = m.start(), m.end(), self.mt.view
        if suf := _OPEN_AFTER.match(view[stop : stop + 4]):
            return suf.group("w"), start, stop + suf.end()
        # "from" before a calendar word is its origin, unless ``from_opens``: "the complaints from yesterday"
        if pre := _OPEN_BEFORE.search(view[max(0, start - 24) : start]):
            if from_opens or pre.group("w") not in _ORIGIN:
                return pre.group("w"), max(0, start - 24) + pre.start(), stop
        return None, start, stop

    def calendar(
        self,
        m: re.Match[str],
        days: tc.Days,
        plain: dict[str, str] | None = None,
        running: str = "",
        named: str = "calendar",
    ) -> None:
        """A calendar range: its days, ``plain`` (the ``running`` unit's: from its start on), or with
        an open word (group open, or beside it) an edge; ``named``: the kind of a plain range."""
        opener = _group(m, "open")
        kind, start, stop = (opener, m.start(), m.end()) if opener else self.opened(m, plain is None)
        if opens := _OPEN_WORDS.get(kind or ""):
            window, kind, running = {opens[0]: self.at(days[1] if opens[1] else days[0])}, opens[0], ""
        else:
            window, kind = plain or self.span(*days), named
        self.info.ranges.append(tc.RangeMention(self.mt.view[start:stop], window, start, kind, running))
        self.mt.consume(start, stop)

    def date_of(self, m: re.Match[str], prefix: str = "") -> date | None:
        """The date of a ``DATE`` match (no year: the latest not in the future), else an error."""
        (y, mo), dy = _year_month(m, prefix), parse_number(_group(m, prefix + "d")) or 0
        for year in [y] if y is not None else range(self.today.year, self.today.year - 9, -1):
            try:
                d = date(year, mo, dy)
            except ValueError:
                continue
            if y is not None or d <= self.today + timedelta(days=1):
                return d
        named = tc.MONTH_NAMES[mo - 1] if 1 <= mo <= 12 else f"month {mo}"
        en = f"{y:04d}-{mo:02d}-{dy:02d}" if y is not None else f"{named} {dy}"
        zh = (f"{y}年" if y is not None else "") + f"{mo}月{dy}日"
        self.errors.append((f"there is no such date as {en}", f"没有 {zh} 这个日期"))
        return None

    def read_horizon(self, m: re.Match[str]) -> None:
        """A forecast's horizon, the first named; what is left of the week, month or year: its days."""
        left = _group(m, "left")
        if rest := _group(m, "rest"):  # "the rest of December": of this month only
            if _MONTHS[rest[:3]] != self.today.month:
                self.read_error(m, "'{text}' is not the rest of this month", "“{text}”不是本月剩下的日子")
            left = "month"
        if self.info.horizon is None and left:
            end = self.period_days(_WORDS["unit_names"][_WORDS["units"][left]], 0)[1]
            self.info.horizon = f"P{max((end - self.today).days - 1, 1)}D"
        elif self.info.horizon is None:
            # a word without a unit of its own (下个月, 明年) names one; else a day (明天, tomorrow)
            named = next((u for u in ("月", "周", "星期", "礼拜", "年") if u in m.group(0)), "天")
            n = _WORDS["days_ahead"].get(m.group(0)) or parse_number(_group(m, "n") or "1") or 1
            self.info.horizon = f"P{n}{_WORDS['units'][_group(m, 'u') or named]}"
        self.take(m)

    def read_holiday(self, m: re.Match[str], days: dict[str, list[int]]) -> None:
        """The days of a holiday on a fixed date: of the year named (今年双十一), else the latest
        begun (Christmas before the 25th: last year's)."""
        name = _group(m, "h").replace("'", "")
        key = next(k for k in sorted(days, key=len, reverse=True) if name.startswith(k))
        month, day, n = days[key]
        n = 1 if _group(m, "one") else n  # 国庆节当天: its first day
        first = date(self.today.year, month, day)
        if year := _group(m, "yr"):
            first = first.replace(year=first.year + _WORDS["years"][year])  # this year's, even if ahead
        elif first > self.today:
            first = first.replace(year=first.year - 1)
        if wk := _group(m, "wk"):  # 圣诞那周, "Christmas week": the week it falls in
            first, n = first - timedelta(days=first.weekday()), 7
        edge = _group(m, "suf") or _group(m, "pre")
        if edge and (counted := _COUNTED_FROM.search(self.mt.view, max(0, m.start() - 14), m.start())):
            # "the day after Christmas", "just after Singles Day": days counted from it, not read
            text = self.mt.view[counted.start() : m.end()]
            self.fail(
                f"'{text}' is no time I can read: name the dates", f"“{text}”不是我能读懂的时间：请说出日期"
            )
            return
        if edge:  # 双十一之后, "before Christmas Eve": open
            since = edge in ("之后", "以后", "以来", "后", "since", "after")
            d = first if since and n == 1 else first + timedelta(days=n) if since else first
            if not since and not year and first.year < self.today.year:  # before this year's, still ahead
                d = first.replace(year=self.today.year)
            self.range(m, {"since" if since else "until": self.at(d)}, "since" if since else "until", pivot=d)
            return
        self.range(m, self.span(first, first + timedelta(days=n)), "day" if n == 1 or wk else "calendar")

    def read_error(self, m: re.Match[str], en: str, zh: str) -> None:
        """A time no calendar has or too vague to read, named (``en``, ``zh`` of the match's groups)."""
        fields = {"text": m.group(0), **m.groupdict()}
        self.fail(en.format(**fields), zh.format(**fields))

    def read_month(self, m: re.Match[str], months: int = 1) -> None:
        """A named month, quarter (q) or year, the latest begun when no year is named, or an open range."""
        year, month = _year_month(m)
        if year is None and (named := _group(m, "yr")):  # 今年11月, "November last year"
            year = self.today.year + _WORDS["years"][named]
        if q := _group(m, "q"):
            month = 3 * (_WORDS["ordinals"].get(q) or parse_number(q) or 1) - 2
        days = self.month_range(year, month, m.group(0), months)
        # the quarter now running: from its start on, as "this quarter"
        plain = {"since": self.at(days[0])} if q and days[0] <= self.today < days[1] else None
        self.calendar(m, days, plain)

    def read_month_part(self, m: re.Match[str], parts: dict[str, list[int]]) -> None:
        """A part of a month: from day a to day b of it (``parts``; 0: its end, -7: a week before;
        第n周: days 7n-6 to 7n)."""
        first, end = self.month_range(*_year_month(m), m.group(0))  # end: the next month's first day
        part = _group(m, "part")
        n = parse_number(part[1:2]) if part.startswith("第") else None
        a, b = (7 * n - 6, 7 * n + 1) if n else parts[part]
        since = first + timedelta(days=a - 1) if a > 0 else end + timedelta(days=a)
        self.calendar(m, (since, first + timedelta(days=b - 1) if b > 0 else end))  # since mid-October

    def read_month_days(self, m: re.Match[str]) -> None:
        """Days a to b of one month (no year: the latest begun), the last day in it, or its first or
        last n days or weeks (fl)."""
        first, end = self.month_range(*_year_month(m), m.group(0))  # end: the next month's first day
        days = (end - first).days
        a, b = parse_number(_group(m, "a")) or 0, parse_number(_group(m, "b")) or 0
        if fl := _group(m, "fl"):
            n = (parse_number(_group(m, "n")) or 0) * (1 if _group(m, "u") in ("天", "days") else 7)
            a, b = (days - n + 1, days) if fl in ("最后", "last") else (1, n)
        if not 1 <= a <= b <= days:
            self.read_error(m, "'{text}' is no span of days of one month", "“{text}”不是同一个月里的一段日子")
        window = self.span(first + timedelta(days=a - 1), first + timedelta(days=b))
        self.range(m, window, "calendar" if fl else "span")

    def read_month_span(self, m: re.Match[str]) -> None:
        """A span of months (a_ to b_, or two in a row); a year named on one side only is the other's too."""
        (y1, mo1), (y2, mo2) = _year_month(m, "a_"), _year_month(m, "b_")
        if _group(m, "two") and mo2 % 12 != (mo1 + 1) % 12:  # 九月和十一月两个月: not one after the other
            self.read_error(m, "'{text}' are no two months in a row", "“{text}”不是相连的两个月")
        if y1 is None and y2 is None and 1 <= mo2 <= 12:
            y2 = self.month_range(None, mo2, m.group(0))[0].year  # the latest begun
        if y1 is None and y2 is not None:
            y1 = y2 if mo1 <= mo2 else y2 - 1
        elif y2 is None and y1 is not None:
            y2 = y1 if mo2 >= mo1 else y1 + 1
        self.between(m, self.month_range(y1, mo1, m.group(0))[0], self.month_range(y2, mo2, m.group(0))[1])

    def read_iso_week(self, m: re.Match[str]) -> None:
        """A numbered ISO week (without a year: the latest begun by now)."""
        wk, y_text = parse_number(_group(m, "w")) or 0, _group(m, "y")
        y = int(y_text) if y_text else self.today.isocalendar()[0]
        note = " (ISO weeks are 1-52 or 53)", "（ISO 周为 1-52 或 53）"
        try:
            monday = date.fromisocalendar(y, wk, 1)
            if not y_text and monday > self.today:
                y, note = y - 1, ("", "")
                monday = date.fromisocalendar(y, wk, 1)
        except ValueError:
            self.fail(f"there is no week {wk} in {y}{note[0]}", f"{y} 年没有第 {wk} 周{note[1]}")
        self.calendar(m, (monday, monday + timedelta(days=7)))

    def read_span(self, m: re.Match[str]) -> None:
        """A span of two dates (a_ to b_), the last day in it."""
        a, b = self.date_of(m, "a_"), self.date_of(m, "b_")
        if a and b and (b >= a or re.search(_WORDS["span"], m.group(0))):
            self.between(m, a, b + timedelta(days=1))

    def read_date(self, m: re.Match[str], edge: str | None = None) -> None:
        """A single day, or with a word before or after it (pre, suf) the ``edge`` of an open range."""
        pre, suf = _group(m, "pre"), _group(m, "suf")
        told = edge == "since" and not suf and pre in ("", "from")
        if told and (clause := _TOLD_SINCE.search(self.mt.view, max(0, m.start() - 80), m.start())):
            pre = "since"  # "since the training on 10 November", "since we put a cashier on from 1 December"
            self.info.told.append(clause.span())
        if (not edge or pre or suf) and (d := self.date_of(m)):
            self.range(m, {edge: self.at(d)} if edge else self.day(d), edge or "day", pivot=d)
            if not suf and (clause := _TOLD_AFTER.match(self.mt.view, m.end())):
                self.info.told.append(clause.span(1))  # 11月20日下雨以来: what happened that day

    def read_clock(self, m: re.Match[str]) -> None:
        """Clock hours: h up to another (to), open on one side (w: after, before), or one hour."""
        p, to, a_to = _group(m, "p"), _group(m, "to"), _group(m, "ato")
        h = 12 if _group(m, "noon") else _hour(_group(m, "h"), p, _group(m, "a") or a_to)
        h2 = 12 if _group(m, "tonoon") else _hour(to, _group(m, "pto") or p, a_to) if to else h
        if h is None or h2 is None:
            return
        if p and not _group(m, "pto") and h2 < h < h2 + 12 and h2 < 12:
            h2 += 12
        elif h2 == 12 and (_group(m, "pto") in _EVENING or (p and not _group(m, "pto") and h > 12)):
            h2 = 24  # 晚上9点到12点, 下午2点到晚上12点: up to midnight
        if _group(m, "tomid"):
            h2 = 24  # "from 6pm to midnight"
        hours = [x % 24 for x in range(h, h2 if h2 > h else h2 + 24)] if h != h2 else [h]
        if w := _group(m, "w"):
            hours = list(range(h, 24)) if w in _WORDS["after"] else list(range(0, h))
            hours = list(range(0, h + 1)) if w in ("through", "thru") else hours  # 3pm's hour too
        self.info.hours.append(tc.HoursMention(hours, m.group(0), m.start(), "clock"))
        self.take(m)

    def read_week_day(self, m: re.Match[str], weeks: dict[str, int]) -> None:
        """A day (d) or the weekend of a named week (w; "this past": the latest before today), or the
        days from one to another (e, of week we)."""
        week, end = weeks.get(_group(m, "w")), _group(m, "e")
        weekend = _group(m, "d") in ("末", "weekend")
        day = 5 if weekend else _WEEKDAYS[_group(m, "d")]
        if week is None:  # this past Saturday (weekend): the latest one before today
            back = (self.today.weekday() - day) % 7 or 7
            week = (self.today - timedelta(days=back) - self.monday(0)).days // 7
        first = self.monday(week) + timedelta(days=day)
        if end:
            last = self.monday(weeks.get(_group(m, "we"), week)) + timedelta(days=_WEEKDAYS[end])
            self.between(m, first, last + timedelta(days=1))
        else:  # since last Monday (weekend): from it on; "from" is its origin (the events from it)
            days = (first, first + timedelta(days=2 if weekend else 1))
            self.calendar(m, days, plain=self.span(*days), named="day")

    def read_week_of(self, m: re.Match[str], skip: int = 0, kind: str = "calendar") -> None:
        """The Monday-to-Sunday week a date is in less its first ``skip`` days (5: its weekend), or the
        seven days from it ("the week starting")."""
        if d := self.date_of(m, "" if _group(m, "d") else "a_"):
            first = d if _group(m, "from") else d - timedelta(days=d.weekday())
            self.range(m, self.span(first + timedelta(days=skip), first + timedelta(days=7)), kind)

    def read_fixed(self, m: re.Match[str], last: dict[str, str]) -> None:
        """A span back of a set length by the unit named (最近半年: P6M; the last fortnight: P2W)."""
        self.range(m, {"last": last[_group(m, "u")]}, "last")

    def read_month_weekday(self, m: re.Match[str]) -> None:
        """The n-th (or the last) weekday of a month; no year named: the latest not in the future."""
        (year, month), named = _year_month(m), _group(m, "n")
        n = _WORDS["ordinals"].get(named) or parse_number(named) or 0
        days, weekday = self.month_range(year, month, m.group(0)), _WEEKDAYS[_group(m, "d")]
        for back in (0, 1) if year is None else (0,):
            first, end = (d.replace(year=d.year - back) for d in days)
            first += timedelta(days=(weekday - first.weekday()) % 7)
            count = ((end - first).days + 6) // 7  # how many of that weekday the month has
            k = count if n == -1 else n
            day = first + timedelta(weeks=k - 1) if 1 <= k <= count else None
            if day is None or day <= self.today:
                break
        if day is None:
            self.fail(f"there is no such day as '{m.group(0)}'", f"没有“{m.group(0)}”这一天")
        self.range(m, self.day(day), "day", pivot=day)

    def read_year_ago(self, m: re.Match[str], months: int = 12) -> None:
        """The same period ``months`` before another one: read when every kind has read (:func:`extract_time`)."""
        self.info.year_ago = (m.group(0), m.start(), months)
        self.take(m)

    def read_before_that(self, m: re.Match[str], alone_last: bool = False) -> None:
        """The units before another period: read when every kind has read (:func:`extract_time`);
        ``alone_last``: alone, the units up to now (前一周: the past week), else the calendar one before."""
        n = parse_number(_group(m, "n") or "1") or 1
        self.info.before_that = (m.group(0), m.start(), _WORDS["units"][_group(m, "u")], n, alone_last)
        self.take(m)

    def read_last(self, m: re.Match[str], zh: bool = False) -> None:
        """The last n units (none: one); in Chinese a bare 这周 or 天 and a count of none are no span."""
        n_text, unit = _group(m, "n"), _WORDS["units"][_group(m, "u")]
        n = (_WORDS["few"].get(n_text) or parse_number(n_text)) if n_text else 1
        if zh and (n is None or n <= 0 or not n_text and (m.group(0).startswith("这") or unit == "D")):
            return
        n = n or 1
        if unit == "Q" or unit == "H" and n % 24 == 0:  # quarters in months, hours in whole days
            n, unit = (3 * n, "M") if unit == "Q" else (n // 24, "D")
        if unit != "H":  # fewer hours than whole days are no duration a plan writes: left unread
            self.range(m, {"last": f"P{n}{unit}"}, "last")

    def read_period(self, m: re.Match[str], unit: str = "", offset: int = 0, ago: bool = False) -> None:
        """A calendar word (yesterday, 上个月) or N units ``ago`` (三天前), or the edge of an open range."""
        if ago:
            n = parse_number(_group(m, "n"))
            if not n or n < 0:
                return
            unit, offset = _WORDS["unit_names"][_WORDS["units"][_group(m, "u")]], -n
        running = unit if offset == 0 and unit != "day" else ""
        self.calendar(m, self.period_days(unit, offset), plain=self.period(unit, offset), running=running)

    def read_window(self, m: re.Match[str]) -> None:
        """The window of days around a pivot date (the last named wins)."""
        n = parse_number(_group(m, "n") or "1") or 1
        self.info.window_days = n * _WORDS["unit_days"][_WORDS["units"][_group(m, "u")]]
        self.take(m)

    def read_hours(self, m: re.Match[str], hours: list[int], offset: int | None = None) -> None:
        """A part of the day as its ``hours``; with an ``offset``, of that day (今晚, last night)."""
        self.info.hours.append(tc.HoursMention(list(hours), m.group(0), m.start(), "daypart"))
        if offset is None:
            self.take(m)
        else:
            self.range(m, self.period("day", offset), "calendar")

    def read_days(self, m: re.Match[str], days: list[int] | None = None) -> None:
        """Days of the week kept: ``days``, the day named (d) or those from one to another (a to b)."""
        if a := _group(m, "a"):
            first, last = _WEEKDAYS[a], _WEEKDAYS[_group(m, "b")]
            days = [(first + i) % 7 for i in range((last - first) % 7 + 1)]
        kept = sorted(set(days or [_WEEKDAYS[_group(m, "d")]]))
        # "since Monday", 周一以来: from the latest Monday on ("since Mondays" keeps Mondays)
        if len(kept) == 1 and not days and not m.group(0).endswith("s") and self.opened(m, False)[0]:
            latest = self.today - timedelta(days=(self.today.weekday() - kept[0]) % 7)
            self.calendar(m, (latest, latest + timedelta(days=1)))
            return
        weekend = {(0, 1, 2, 3, 4): False, (5, 6): True}.get(tuple(kept))
        self.info.days.append(tc.DaysMention(kept, weekend, m.group(0), m.start()))
        self.take(m)


def _hour(token: str, prefix: str, ampm: str) -> int | None:
    """The hour (0-23) a clock hour names with its part of the day (下午) or am/pm."""
    h = parse_number(token)
    if h is None or h > 24:
        return None
    if (ampm == "pm" or prefix in _WORDS["pm"]) and h < 12:
        h += 12
    return 0 if ampm == "am" and h == 12 else h % 24


Pass = tuple[re.Pattern[str], Callable[..., None], dict[str, Any]]


def _read(passes: list[Pass], mt: MaskedText, ctx: Context) -> tc.TimeInfo:
    """What one time kind reads: each pass's reader of each of its matches (in the text as the pass begins)."""
    r = Reading(mt, ctx)
    for pattern, read, args in passes:
        for m in pattern.finditer(mt.view):
            try:
                read(r, m, **args)
            except tc.Unreadable:
                r.take(m)
    return r.info


#: each time kind's passes, in the order they claim: a pattern, its reader and the reader's arguments
_PASSES: dict[str, list[Pass]] = {
    k["name"]: [
        (re.compile(_pattern(p.pop("re"), _PIECES)), getattr(Reading, "read_" + p.pop("read")), p)
        for p in k["passes"]
    ]
    for k in _DATA["kind"]
}
if len(_PASSES) != len(_DATA["kind"]):
    raise ValueError("a time kind is defined twice in timekinds.toml")
#: the time kinds in the order they claim
TIME_KINDS = {
    k["name"]: Reader(k["name"], k["slot"], functools.partial(_read, _PASSES[k["name"]]))
    for k in _DATA["kind"]
}
#: the windows' pattern (the question's words read it too)
WINDOW = _PASSES["windows"][0][0]


def extract_time(mt: MaskedText, now: datetime, tz: str) -> tc.TimeInfo:
    """Find and consume every time expression of ``mt``; return them in question order."""
    ctx = Context(Vocabulary(timezone=tz), now)
    info = tc.TimeInfo()
    for kind in TIME_KINDS.values():
        info.add(kind.extract(mt, ctx))
    if info.year_ago:
        _year_before(info, *info.year_ago, tc.Clock(now, tz))
    if info.before_that:
        _before_that(info, *info.before_that, tc.Clock(now, tz))
    return info.in_order()


def _set_against(info: tc.TimeInfo) -> list[tc.RangeMention]:
    """The ranges a period before another one may be set against: those that start, or run back
    from now."""
    return [r for r in info.ranges if "since" in r.time_range or "last" in r.time_range]


def _since(tr: dict[str, str], today: datetime) -> datetime:
    """When the range ``tr`` starts (one that runs back: back from ``today``)."""
    return subtract_duration(today, tr["last"]) if "last" in tr else datetime.fromisoformat(tr["since"])


def _before_that(
    info: tc.TimeInfo, text: str, start: int, unit: str, n: int, alone_last: bool, clock: tc.Clock
) -> None:
    """The units just before the one other period named (上周和前一周: the week before last; "the
    last 2 weeks against the 2 weeks before": the 2 weeks before those); alone, the units up to now
    or the calendar ones before the current (前一周, "the previous month")."""
    named = _set_against(info)
    if len(named) > 1:
        en = f"'{text}' is the period before another one: name one other period, or the dates"
        info.errors.append((en, f"“{text}”是另一个时间段之前的时间：只说一个别的时间段，或者直接说日期"))
    elif not named and alone_last:
        info.ranges.append(tc.RangeMention(text, {"last": f"P{n}{unit}"}, start, "last"))
    elif not named:
        word = _WORDS["unit_names"][unit]
        info.ranges.append(tc.RangeMention(text, clock.span(*clock.period_days(word, -n)), start, "calendar"))
    elif not _same_length(other := named[0], unit, n):  # "yesterday vs the week before": a day against a week
        en = f"'{text}' is not as long as the period it is set against ({other.label}): name both periods"
        info.errors.append((en, f"“{text}”和它对比的时间段（{other.label}）长短不同：请把两个时间段都说出来"))
    else:
        end = _since(other.time_range, datetime.combine(clock.today, time())).date()
        months = {"M": 1, "Y": 12}.get(unit)
        first = (
            _months_back(end, n * months) if months else end - timedelta(days=n * _WORDS["unit_days"][unit])
        )
        info.ranges.append(tc.RangeMention(text, clock.span(first, end), start, "calendar"))


def _year_before(info: tc.TimeInfo, text: str, start: int, months: int, clock: tc.Clock) -> None:
    """The same period a year (a month) before the one other range named (one open to now: up to
    today), else an error."""
    back = (
        ("a year", "去年同期")
        if months == 12
        else ("a month", "上个月同期")
        if months > 0
        else ("a week", "上周同一天")
    )
    named = _set_against(info)
    if len(named) != 1:
        en = f"'{text}' is a period {back[0]} before another one: name that one too (this month against {'the same period last year' if months == 12 else 'the same days last month'}), or the dates"
        info.errors.append((en, f"“{text}”要和另一个时间段一起说（如“这个月和{back[1]}比”），或者直接说日期"))
        return
    tr, today = named[0].time_range, datetime.combine(clock.today, time())
    try:
        since = _since(tr, today)
        until = datetime.fromisoformat(tr["until"]) if "until" in tr else today + timedelta(days=1)
        # a span shorter than a month keeps its length (the same day a month before 30 November is
        # 30 October, one day); ``months`` below 0 is days back (-7: the same days a week before)
        length = until.date() - since.date()
        a = _months_back(since.date(), months) if months > 0 else since.date() + timedelta(days=months)
        if months == 12 and (named[0].running == "week" or _WEEKISH.search(named[0].label)):
            a = since.date() - timedelta(days=364)  # a week a year back: the same weekdays, 52 weeks
        b = a + length if length.days < 28 or months < 0 else _months_back(until.date(), months)
    except (ValueError, OverflowError):  # the last 10000 years: no calendar reaches a year before
        en = f"'{text}' is {back[0]} before a period that starts before the calendar's first year: name a shorter one"
        info.errors.append((en, f"“{text}”所对的时间段早于日历的第一年：请说一个短一些的时间段"))
        return
    info.ranges.append(tc.RangeMention(text, clock.span(a, b), start, "calendar"))


def _same_length(r: tc.RangeMention, unit: str, n: int) -> bool:
    """Whether ``r`` is ``n`` ``unit``s long (a running one: the unit it runs in)."""
    tr = r.time_range
    if "last" in tr:
        return bool(tr["last"] == f"P{n}{unit}")
    if r.running:
        return n == 1 and _WORDS["unit_names"].get(unit) == r.running
    if "until" not in tr:
        return False
    days = (datetime.fromisoformat(tr["until"]) - datetime.fromisoformat(tr["since"])).days
    low, high = {"D": (1, 1), "W": (7, 7), "M": (28, 31), "Y": (365, 366)}[unit]
    return n * low <= days <= n * high


def _months_back(d: date, months: int) -> date:
    """The same day ``months`` months before ``d`` (past the end of a shorter month: its last day,
    February 29th a year back: the 28th)."""
    first = tc.add_months(d, -months)
    return first.replace(day=min(d.day, (tc.add_months(first, 1) - timedelta(days=1)).day))
