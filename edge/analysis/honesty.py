"""The honesty rules of CONTRACT.md section 4, applied by the engine to every operator's outcome.

Owns the confidence formula (``n / (n + decay_base)``, capped at 0.5 when p >= 0.05), the
low-confidence wording, and the coverage check (a requested time range the memory does not hold
is ``insufficient_data`` with ``missing`` naming the span), and the invariants at the engine's
exit: a plan filter the source did not apply (:func:`unapplied`) or a grouping the operator did
not make (:func:`ungrouped`), a number of the summary not in the result (:func:`numbers_outside`),
a which-store answer naming no store (:func:`stores_unnamed`) are never ``ok``. Called by
:mod:`edge.analysis.engine`. Pure.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from edge.analysis.operators import _words as W
from edge.analysis.source import EventFilter, EventSource, filter_conditions

logger = logging.getLogger(__name__)

#: slack allowed between the requested start and the memory's first event
COVERAGE_TOLERANCE = timedelta(days=1)

WEAK = {"zh": "（结果较弱，置信度低，仅供参考）", "en": " (weak result: low confidence, treat with care)"}


def confidence(n: int, decay_base: float, p_value: float | None = None) -> float:
    """``n/(n+decay_base)``; at most 0.5 when a test gave p >= 0.05."""
    if n <= 0:
        return 0.0
    c = n / (n + decay_base)
    if p_value is not None and p_value >= 0.05:
        c = min(c, 0.5)
    return round(c, 6)


def is_low(conf: float) -> bool:
    """The low-confidence rule: confidence below 0.5."""
    return conf < 0.5


def weak_note(lang: str) -> str:
    """What a summary adds when the result is weak."""
    return WEAK.get(lang, WEAK["en"])


def _day(t: datetime, zone: ZoneInfo) -> str:
    return t.astimezone(zone).date().isoformat()


def _last_day(t: datetime, zone: ZoneInfo) -> str:
    """The store-local day holding the last instant before ``t`` (an exclusive end)."""
    return (t - timedelta(microseconds=1)).astimezone(zone).date().isoformat()


def zone_of(tz: str) -> ZoneInfo:
    """The store's zone (UTC when the name is not an IANA zone: never an error while answering)."""
    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


def coverage_gaps(
    source: EventSource,
    flt: EventFilter,
    windows: list[tuple[datetime | None, datetime | None]],
    lang: str,
    *,
    now: datetime | None = None,
    tz: str = "UTC",
) -> list[str]:
    """``missing`` lines (in ``lang``) for what the memory does not hold of the question.

    - nothing matches the filters at all: which value of the question the memory has never seen,
      and the values it does know;
    - a window that starts before the memory's first matching event (more than a day), that
      ends after its last one (more than :func:`end_slack`; the end of a window is capped at
      ``now``: the future has no data yet), or that lies wholly outside it: the range asked and
      the range held, as store-local days.
    """
    bounded = [w for w in windows if w != (None, None)]
    if not bounded and not (flt.attributes or flt.store_ids or flt.entities or flt.key_equals):
        return []  # nothing asked that the memory could lack: no query on the common path
    zone = zone_of(tz)
    cov = source.coverage(flt)
    if cov.earliest is None or cov.count <= 0:
        return unknown_values(source, flt, lang) or [
            say(
                lang,
                "no events match the question's filters at all",
                "记忆中没有符合问题条件的事件",
            )
        ]
    # whether the memory holds a time range is a matter of the memory (its stores and the
    # measure's events), not of how often the question's values occur in it: "revenue on rainy
    # days last month" is not refused because the month began sunny
    narrow = flt.attributes or flt.entities or flt.key_equals or flt.hours or flt.days_of_week
    if narrow:
        whole = source.coverage(
            flt.narrowed(attributes=(), entities=(), key_equals=(), hours=(), days_of_week=())
        )
        if whole.earliest is not None and whole.count > 0:
            cov = whole
    earliest = cov.earliest
    assert earliest is not None  # checked above; the wider coverage is taken only with an earliest
    latest = cov.latest or earliest
    held_en = f"the memory holds {_day(earliest, zone)} to {_day(latest, zone)}"
    held_zh = f"记忆中的数据从 {_day(earliest, zone)} 到 {_day(latest, zone)}"
    out: list[str] = []
    for since, until in bounded:
        if since is None:
            asked = (
                (f"the time up to {_last_day(until, zone)}", f"{_last_day(until, zone)} 以前")
                if until
                else ("", "")
            )
        elif until is None:
            asked = (f"the time from {_day(since, zone)} on", f"{_day(since, zone)} 以后")
        else:
            asked = (
                f"{_day(since, zone)} to {_last_day(until, zone)}",
                f"{_day(since, zone)} 到 {_last_day(until, zone)}",
            )
        # the future holds no events yet: a window's end counts up to ``now``
        end = min(until, now) if until is not None and now is not None else until
        before = (since is not None and earliest - since > COVERAGE_TOLERANCE) or (
            until is not None and until <= earliest
        )
        after = since is not None and since > latest
        if end is not None and not after:
            lo = since if since is not None else earliest
            after = end - latest > end_slack(max(end - lo, timedelta(0)))
        if not (before or after):
            continue
        if before and after:
            en_why, zh_why = "the memory covers only part of it", "记忆只覆盖其中一部分"
        elif before:
            en_why = f"the memory starts on {_day(earliest, zone)}"
            zh_why = f"记忆从 {_day(earliest, zone)} 才开始"
        else:
            en_why = f"the memory ends on {_day(latest, zone)}"
            zh_why = f"记忆到 {_day(latest, zone)} 就结束了"
        if now is not None and since is not None and since > latest:
            en_why += f" (relative times count from {_day(now, zone)})"
            zh_why += f"（相对时间从 {_day(now, zone)} 起算）"
        line = say(
            lang,
            f"the question asks about {asked[0]}: {en_why}; {held_en}",
            f"问题问的是 {asked[1]}：{zh_why}；{held_zh}",
        )
        if line not in out:
            out.append(line)
    return out


def end_slack(span: timedelta) -> timedelta:
    """How far the memory may end before the asked end and still count as covering it: two days
    (a store closed on Sundays still answers "last week"), or a tenth of a longer window."""
    return max(timedelta(days=2), span / 10)


def unknown_values(source: EventSource, flt: EventFilter, lang: str) -> list[str]:
    """For a filter nothing matches: each value of it the memory holds no event for, with the
    values of that kind the memory does know."""
    vocab = source.vocabulary()
    out: list[str] = []

    def known(values: Sequence[object]) -> tuple[str, str]:
        shown = [str(v) for v in values][:12]
        if not shown:
            return ("none", "没有")
        more = len(values) - len(shown)
        tail_en = f" and {more} more" if more > 0 else ""
        tail_zh = f" 等 {len(values)} 个" if more > 0 else ""
        return (", ".join(shown) + tail_en, "、".join(shown) + tail_zh)

    def empty(part: EventFilter) -> bool:
        c = source.coverage(part)
        return c.earliest is None or c.count <= 0

    for key, values in flt.attributes:
        for v in values:
            if empty(EventFilter(attributes=((key, (v,)),))):
                en, zh = known(vocab.attributes.get(key, ()))
                out.append(
                    say(
                        lang,
                        f"events with {key} = {v}: the memory has none; {key} values it knows: {en}",
                        f"{W.side_label(f'{key}={v}', 'zh')}的事件：记忆中没有；已知的{W.dimension_label(key, 'zh')}取值：{zh}",
                    )
                )
    for sid in flt.store_ids:
        if empty(EventFilter(store_ids=(sid,))):
            en, zh = known(vocab.store_ids)
            out.append(
                say(
                    lang,
                    f"events of store {sid}: the memory has none; stores it knows: {en}",
                    f"门店 {sid} 的事件：记忆中没有；已知的门店：{zh}",
                )
            )
    for ent in flt.entities:
        if empty(EventFilter(entities=(ent,))):
            out.append(
                say(
                    lang,
                    f"events naming {ent}: the memory has none",
                    f"涉及 {ent} 的事件：记忆中没有",
                )
            )
    if flt.event_types and empty(EventFilter(event_types=flt.event_types)):
        types = ", ".join(flt.event_types)
        en, zh = known(vocab.event_types)
        out.append(
            say(
                lang,
                f"{types} events: the memory has none; event types it holds: {en}",
                f"{'、'.join(flt.event_types)} 类事件：记忆中没有；已有的事件类型：{zh}",
            )
        )
    return out


#: per intent, the result keys an ``ok`` answer must hold something in (CONTRACT.md section 4:
#: at least one group, bucket, part, item, pair or value); anomaly's list may be empty (none found
#: is an answer) as long as its series was checked
_RESULT_FILLED = {
    "aggregate": ("value",),
    "trend": ("series",),
    "compare": ("groups",),
    "breakdown": ("parts",),
    "top_k": ("items",),
    "co_occurrence": ("pairs",),
    "correlation": ("r",),
    "periodicity": ("period",),
    "retrieve": ("events",),
}


def empty_result(intent: str, result: dict[str, object]) -> bool:
    """True when an operator's ``ok`` result holds nothing to stand on (an invariant at the
    engine's exit: such an answer is never ``ok``, whatever the operator said)."""
    if not result:
        return True
    for key in _RESULT_FILLED.get(intent, ()):
        v = result.get(key)
        if v is None or (isinstance(v, (list, tuple, dict)) and not v):
            return True
    return False


# -- the invariants at the engine's exit -------------------------------------------------------------


def unapplied(source: EventSource, flt: EventFilter, lang: str) -> list[str]:
    """``missing`` lines for each of the plan's filters (the conditions of ``flt``) that the
    source reports it did not apply (:meth:`~edge.analysis.source.AggregateSource.applied`): an
    answer that ignored a filter of the question is never ``ok``."""
    done = source.applied(flt)
    out = []
    for cond in filter_conditions(flt):
        if cond in done:
            continue
        name = cond.removeprefix("attributes.")
        out.append(
            say(
                lang,
                f"a memory that can apply the question's filter {name} (this one cannot: the answer "
                "would ignore it)",
                f"能按问题中的条件 {name} 筛选的记忆（这里做不到：答案会忽略该条件）",
            )
        )
    return out


#: a number as a summary writes it: thousands separators, decimals, an exponent
_NUM = re.compile(
    r"(?<![\w.])[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d])|[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?", re.I
)
#: an hour written as clock times ("19:00" or "19:00-20:00"): the number is the starting hour
_CLOCK = re.compile(r"(?<!\d)(\d{1,2}):00(?:-\d{1,2}:00)?")
#: a store-local date, week or month as results write them (their parts are no quantities)
_DATE = re.compile(r"(?<!\d)\d{4}-\d{2}(?:-\d{2})?(?:T\d{2})?(?!\d)")


def _numbers(value: Any, out: list[float], dates: set[str]) -> None:
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, int | float):
        if math.isfinite(value):
            out.append(float(value))
    elif isinstance(value, str):
        dates.update(_DATE.findall(value))
        out.extend(float(t.replace(",", "")) for t in _NUM.findall(_DATE.sub(" ", value)))
    elif isinstance(value, dict):
        for v in value.values():
            _numbers(v, out, dates)
    elif isinstance(value, list | tuple):
        for v in value:
            _numbers(v, out, dates)


def _decimals(token: str) -> int:
    mant = token.lower().split("e")[0]
    return len(mant.split(".")[1]) if "." in mant else 0


def ungrouped(plan: dict[str, Any], group_keys: frozenset[str] | None, lang: str) -> list[str]:
    """``missing`` lines for the plan's ``group_by`` keys an operator does not answer per group
    (``group_keys``: the keys it does, None for any): "the footfall trend by zone" is not the
    footfall trend of every zone together."""
    if group_keys is None:
        return []
    intent = str(plan.get("intent") or "")
    out = []
    for key in dict.fromkeys(str(k) for k in plan.get("group_by") or []):
        if key == "period" or key in group_keys:
            continue
        out.append(
            say(
                lang,
                f"an analysis per {W.dimension_label(key, 'en')}: {intent} gives one answer over every "
                f"{W.dimension_label(key, 'en')} (ask about one {W.dimension_label(key, 'en')}, or for a "
                "breakdown)",
                f"按{W.dimension_label(key, 'zh')}分别分析：这项分析只对全部{W.dimension_label(key, 'zh')}"
                f"给出一个答案（可以只问其中一个，或改问拆解）",
            )
        )
    return out


def numbers_outside(summary: str, result: dict[str, Any]) -> list[str]:
    """The numbers written in ``summary`` that are no number of ``result`` (CONTRACT.md section 4:
    every number in the summary comes from the result). A number matches as written: rounded to
    its decimals, as a percentage (x100), with thousands separators, in scientific notation
    within 5%; a clock time names its starting hour; a date matches a date of the result."""
    pool: list[float] = []
    dates: set[str] = set()
    _numbers(result, pool, dates)
    candidates = [abs(x) for x in pool] + [abs(x) * 100 for x in pool]
    bad: list[str] = []
    text = _CLOCK.sub(lambda m: f" {m.group(1)} ", summary)
    for d in _DATE.findall(text):
        if d not in dates and not any(x.startswith(d) for x in dates):
            bad.append(d)
    for m in _NUM.finditer(_DATE.sub(" ", text)):
        tok = m.group(0)
        v = abs(float(tok.replace(",", "")))
        if "e" in tok.lower():
            ok = any(math.isclose(v, c, rel_tol=0.05) for c in candidates)
        else:
            tol = 0.5 * 10 ** (-_decimals(tok)) + 1e-9
            ok = any(abs(v - c) <= tol for c in candidates)
        if not ok:
            bad.append(tok)
    return bad


def asks_which_store(plan: dict[str, Any]) -> bool:
    """True when the plan asks which store, about each store, or to rank the stores: it groups,
    compares, ranks or breaks down by ``store_id``."""
    dims = [str(g) for g in plan.get("group_by") or []]
    dims.append(str((plan.get("compare") or {}).get("dimension") or ""))
    return "store_id" in dims


def stores_unnamed(plan: dict[str, Any], summary: str, result: dict[str, Any], stores: Sequence[str]) -> bool:
    """True when ``plan`` asks which store (:func:`asks_which_store`) and the answer names none of
    ``stores`` (the source's store ids) in its summary or in its result."""
    if not asks_which_store(plan) or not stores:
        return False
    known = {str(s) for s in stores}
    in_result: set[str] = set()

    def walk(v: Any) -> None:
        if isinstance(v, str):  # a key of one group ("s1") or of several ("2025-11/s1")
            in_result.update(known.intersection(re.split(r"[/,;|\s]+", v)))
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list | tuple):
            for x in v:
                walk(x)

    walk(result)
    return not (in_result and any(s in summary for s in in_result))


def say(lang: str, en: str, zh: str) -> str:
    """The text in the answer's language."""
    return zh if lang == "zh" else en
