"""Every time the question names is honoured, or the answer is not ``ok`` (issue 12, part 1).

Explicit calendar ranges map to exactly that store-local range; an impossible date, month, week
or span is ``unsupported`` with the reason; a range the memory does not hold is
``insufficient_data`` naming the range asked and the range held; a value the memory never saw
names the values it knows; a series' cut-short first and last buckets are not compared as full.
Runs the real rule parser and the real engine over the simulated 75-day memory.
"""

from __future__ import annotations

import calendar
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from engine_data import Memory, full_memory
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edge.analysis.engine import answer, run_plan
from edge.analysis.honesty import end_slack
from edge.analysis.operators._series import bucket_span
from edge.analysis.parser import parse_question
from edge.analysis.plan import resolve_time_range
from edge.analysis.source import Vocabulary
from edge.config import AnalysisConfig
from edge.memory.store import Store

TZ = "Asia/Shanghai"
ZONE = ZoneInfo(TZ)
MONTHS_EN = list(calendar.month_name)[1:]
NOW = datetime(2025, 12, 15, 10, 0)  # naive = store-local


def _vocab(store_ids: tuple[str, ...] = ("sh_xuhui_01",)) -> Vocabulary:
    return Vocabulary(
        timezone=TZ,
        store_ids=store_ids,
        event_types=("customer_enter", "purchase"),
        attributes={"weather": ("晴", "雨")},
    )


@pytest.fixture(scope="module")
def env() -> Iterator[tuple[Memory, Any]]:
    mem = full_memory()
    store = Store.open(mem.path, readonly=True)
    yield mem, store.event_source()
    store.close()


def local(d: date) -> str:
    return datetime(d.year, d.month, d.day, tzinfo=ZONE).isoformat()


def month_after(d: date) -> date:
    return date(d.year + (d.month == 12), d.month % 12 + 1, 1)


def plan_range(question: str, vocab: Any, now: datetime) -> dict[str, str] | None:
    parsed = parse_question(question, vocab, now)
    assert parsed.status == "ok", (question, parsed.explanation)
    return (parsed.plan.get("filters") or {}).get("time_range")


# ---- explicit calendar ranges ------------------------------------------------------------------


@pytest.mark.parametrize("year", [2024, 2025, 2026])
@pytest.mark.parametrize("month", [1, 2, 9, 10, 12])
def test_a_named_month_of_a_named_year_is_that_month(env: tuple[Memory, Any], year: int, month: int) -> None:
    mem, source = env
    vocab = source.vocabulary()
    first = date(year, month, 1)
    want = {"since": local(first), "until": local(month_after(first))}
    name = MONTHS_EN[month - 1]
    for q in (
        f"How many orders were there in {name} {year}?",
        f"What was revenue in {name[:3]} {year}?",
        f"{year}年{month}月的销售额是多少？",
        f"{year}年{month}月份的订单数",
        f"revenue in {year}-{month:02d}",
    ):
        assert plan_range(q, vocab, mem.now) == want, q


@pytest.mark.parametrize(
    ("now", "month", "want_year"),
    [
        (datetime(2025, 12, 1, 20, tzinfo=ZONE), 10, 2025),
        (datetime(2025, 12, 1, 20, tzinfo=ZONE), 12, 2025),  # the month under way
        (datetime(2026, 3, 5, 9, tzinfo=ZONE), 10, 2025),  # not yet begun this year: last year's
        (datetime(2026, 3, 5, 9, tzinfo=ZONE), 1, 2026),
    ],
)
def test_a_month_without_a_year_is_the_latest_one_begun(
    env: tuple[Memory, Any], now: datetime, month: int, want_year: int
) -> None:
    _mem, source = env
    first = date(want_year, month, 1)
    want = {"since": local(first), "until": local(month_after(first))}
    for q in (f"{month}月份的销售额是多少？", f"revenue in {MONTHS_EN[month - 1]}", f"{month}月的客流"):
        assert plan_range(q, source.vocabulary(), now) == want, q


@pytest.mark.parametrize(
    ("now", "m1", "m2", "y1", "y2"),
    [
        (datetime(2025, 12, 1, tzinfo=ZONE), 9, 11, 2025, 2025),
        (datetime(2026, 12, 3, tzinfo=ZONE), 9, 11, 2026, 2026),
        (datetime(2026, 2, 10, tzinfo=ZONE), 11, 1, 2025, 2026),  # across the new year
    ],
)
def test_month_to_month_ranges(
    env: tuple[Memory, Any], now: datetime, m1: int, m2: int, y1: int, y2: int
) -> None:
    _mem, source = env
    want = {"since": local(date(y1, m1, 1)), "until": local(month_after(date(y2, m2, 1)))}
    for q in (
        f"{m1}月到{m2}月的客单价趋势",
        f"{m1}月至{m2}月的销售额",
        f"revenue from {MONTHS_EN[m1 - 1]} to {MONTHS_EN[m2 - 1]}",
        f"revenue between {MONTHS_EN[m1 - 1]} and {MONTHS_EN[m2 - 1]}",
    ):
        assert plan_range(q, source.vocabulary(), now) == want, q


def test_open_ranges_from_a_month_or_a_year(env: tuple[Memory, Any]) -> None:
    mem, source = env
    vocab = source.vocabulary()
    now = datetime(2025, 12, 1, 20, tzinfo=ZONE)
    assert plan_range("revenue since September", vocab, now) == {"since": local(date(2025, 9, 1))}
    assert plan_range("自10月以来的客单价", vocab, now) == {"since": local(date(2025, 10, 1))}
    assert plan_range("10月以后的客流", vocab, now) == {"since": local(date(2025, 11, 1))}
    assert plan_range("revenue before November 2025", vocab, now) == {"until": local(date(2025, 11, 1))}
    assert plan_range("revenue in 2025", vocab, now) == {
        "since": local(date(2025, 1, 1)),
        "until": local(date(2026, 1, 1)),
    }
    assert plan_range("2024年的销售额", vocab, now) == {
        "since": local(date(2024, 1, 1)),
        "until": local(date(2025, 1, 1)),
    }
    # "up to now" after a month or a day opens the range from it (it read September alone)
    for q in ("9月至今的营业额", "9月到现在营业额", "9月迄今的营业额"):
        assert plan_range(q, vocab, now) == {"since": local(date(2025, 9, 1))}, q
    assert plan_range("11月1日至今的投诉", vocab, now) == {"since": local(date(2025, 11, 1))}
    assert plan_range("这个月到现在客单价", vocab, now) == {"since": local(date(2025, 12, 1))}
    # a duration is still a duration
    assert plan_range("三个月以来的客流", vocab, now) == {"last": "P3M"}
    # a date range stays inclusive of its last day
    assert plan_range("revenue between 2025-10-01 and 2025-10-31", vocab, now) == {
        "since": local(date(2025, 10, 1)),
        "until": local(date(2025, 11, 1)),
    }


@pytest.mark.parametrize("week", [1, 23, 45, 52])
def test_iso_weeks(env: tuple[Memory, Any], week: int) -> None:
    _mem, source = env
    monday = date.fromisocalendar(2025, week, 1)
    want = {"since": local(monday), "until": local(monday + timedelta(days=7))}
    for q in (f"footfall in week {week} of 2025", f"2025年第{week}周的客流", f"revenue in 2025-W{week:02d}"):
        assert plan_range(q, source.vocabulary(), datetime(2025, 12, 31, tzinfo=ZONE)) == want, q


# ---- impossible input: unsupported with the reason -----------------------------------------------


@pytest.mark.parametrize(
    ("question", "reason"),
    [
        ("What was revenue on February 30th?", "February 30"),
        ("revenue on 2025-02-30", "2025-02-30"),
        ("revenue on 2025-13-01", "2025-13-01"),
        ("2月30日的销售额", "2月30日"),
        ("2025年4月31日的客流", "4月31日"),
        ("13月的客流", "13"),
        ("revenue in month 13", "month 13"),
        ("footfall in week 60", "week 60"),
        ("2025年第54周的客流", "54"),
        ("revenue in the last 0 days", "0 days"),
        ("past -3 weeks footfall", "-3"),
        ("过去0天的销售额", "过去0天"),
        ("revenue from 2025-11-10 to 2025-11-03", "ends before it starts"),
    ],
)
def test_impossible_times_are_unsupported_with_the_reason(
    env: tuple[Memory, Any], question: str, reason: str
) -> None:
    mem, source = env
    p = answer(question, source, now=mem.now)
    assert p["status"] == "unsupported", p
    assert reason in p["summary"], p["summary"]
    assert p["result"] == {} and p["evidence"] == []


def test_empty_and_reversed_plan_windows_are_unsupported(env: tuple[Memory, Any]) -> None:
    mem, source = env
    cfg = AnalysisConfig()
    for tr in (
        {"since": "2025-10-01T00:00:00+08:00", "until": "2025-10-01T00:00:00+08:00"},
        {"since": "2025-10-05T00:00:00+08:00", "until": "2025-10-01T00:00:00+08:00"},
        {"last": "P0D"},
    ):
        plan = {"intent": "aggregate", "target_metric": "revenue", "filters": {"time_range": tr}}
        p = run_plan(plan, source, question="q", now=mem.now, config=cfg, language="en")
        assert p["status"] == "unsupported", (tr, p)


# ---- ranges the memory does not hold -------------------------------------------------------------


def held(mem: Memory) -> tuple[str, str]:
    last = mem.config.start + timedelta(days=mem.config.days - 1)
    return mem.config.start.isoformat(), last.isoformat()


@pytest.mark.parametrize(
    ("question", "asked"),
    [
        ("revenue in 2099", ("2099-01-01", "2099-12-31")),
        ("2099年的销售额", ("2099-01-01", "2099-12-31")),
        ("How many orders were there in March 2025?", ("2025-03-01", "2025-03-31")),
        ("revenue between 2025-08-01 and 2025-09-10", ("2025-08-01", "2025-09-10")),
        ("revenue between 2025-11-01 and 2025-12-31", ("2025-11-01", "2025-12-31")),
    ],
)
def test_a_range_the_memory_does_not_hold_names_both_ranges(
    env: tuple[Memory, Any], question: str, asked: tuple[str, str]
) -> None:
    mem, source = env
    p = answer(question, source, now=datetime(2025, 12, 31, 23, tzinfo=ZONE))
    assert p["status"] == "insufficient_data", p
    text = " ".join(p["missing"])
    first, last = held(mem)
    assert asked[0] in text and asked[1] in text, text
    assert first in text and last in text, text
    assert p["result"] == {} and p["evidence"] == []


def test_relative_ranges_after_the_memory_say_so_in_the_questions_language(env: tuple[Memory, Any]) -> None:
    mem, source = env
    later = datetime(2026, 12, 3, 10, tzinfo=ZONE)  # the clock, a year after the memory ends
    first, last = held(mem)
    zh = answer("过去三个月进店高峰期有没有变化？", source, now=later)
    en = answer("Has the evening peak moved over the last 3 months?", source, now=later)
    for p in (zh, en):
        assert p["status"] == "insufficient_data", p
        assert last in p["missing"][0] and "2026-12-03" in p["missing"][0]
    assert "记忆" in zh["missing"][0] and not any(c.isascii() and c.isalpha() for c in zh["missing"][0])
    assert "memory" in en["missing"][0]


def test_a_range_wider_than_the_memory_is_insufficient_not_an_error(env: tuple[Memory, Any]) -> None:
    mem, source = env
    for q in ("revenue in the last 99999 years", "过去一万年的销售额", "footfall over the last 5000 weeks"):
        p = answer(q, source, now=mem.now)
        assert p["status"] == "insufficient_data", (q, p)


def test_the_covered_range_is_ok(env: tuple[Memory, Any]) -> None:
    mem, source = env
    p = answer("How many orders were there in October 2025?", source, now=mem.now)
    assert p["status"] == "ok"
    want = {
        e["stats"].get("bill_id") or e["event_id"]
        for e in mem.events
        if e["event_type"] == "purchase"
        and datetime.fromisoformat(e["timestamp"]).astimezone(ZONE).date().strftime("%Y-%m") == "2025-10"
    }
    assert p["result"]["value"] == len(want)


# ---- values the memory has never seen ------------------------------------------------------------


def test_an_unknown_attribute_value_names_the_known_ones(env: tuple[Memory, Any]) -> None:
    mem, source = env
    cfg = AnalysisConfig()
    known = source.vocabulary().attributes["weather"]
    for lang in ("en", "zh"):
        plan = {
            "intent": "aggregate",
            "target_metric": "revenue",
            "filters": {"attributes": {"weather": "volcanic_ash"}},
            "language": lang,
        }
        p = run_plan(plan, source, question="q", now=mem.now, config=cfg, language=lang)
        assert p["status"] == "insufficient_data", p
        text = p["missing"][0]
        assert "volcanic_ash" in text and all(k in text for k in known), text


def test_an_unknown_store_names_the_known_ones(env: tuple[Memory, Any]) -> None:
    mem, source = env
    plan = {"intent": "aggregate", "target_metric": "footfall", "filters": {"store_id": ["nowhere_99"]}}
    p = run_plan(plan, source, question="q", now=mem.now, config=AnalysisConfig(), language="en")
    assert p["status"] == "insufficient_data"
    assert "nowhere_99" in p["missing"][0] and mem.config.store_id in p["missing"][0]


# ---- cut-short buckets ---------------------------------------------------------------------------


def test_cut_short_buckets_are_marked_and_left_out_of_the_comparison(env: tuple[Memory, Any]) -> None:
    mem, source = env
    # mid-afternoon of the memory's last day: the last day and its week are not over, and three
    # months back starts mid-week and mid-day
    now = datetime.combine(mem.config.start + timedelta(days=mem.config.days - 1), datetime.min.time(), ZONE)
    now = now.replace(hour=15)
    for bucket in ("week", "day"):
        plan = {
            "intent": "trend",
            "target_metric": "footfall",
            "time_bucket": bucket,
            "filters": {"time_range": {"last": "P2M"}},
        }
        p = run_plan(plan, source, question="q", now=now, config=AnalysisConfig(), language="en")
        assert p["status"] == "ok", p
        series = p["result"]["series"]
        since, until = resolve_time_range({"last": "P2M"}, now, TZ)
        assert since is not None and until is not None
        key = "week" if bucket == "week" else "date"
        for pt in series:
            span = bucket_span(key, pt["bucket"], TZ)
            assert span is not None
            whole = span[0] >= max(since, datetime(2025, 9, 1, tzinfo=ZONE)) and span[1] <= until
            assert bool(pt.get("partial")) == (not whole), pt
        assert series[0].get("partial") and series[-1].get("partial")
        full = [pt for pt in series if not pt.get("partial")]
        third = max(1, len(full) // 3)
        # additive metric: start/end are the mean per whole bucket of the first/last third
        assert p["result"]["start_value"] == pytest.approx(
            sum(pt["value"] for pt in full[:third]) / third, rel=1e-6
        )
        assert p["result"]["end_value"] == pytest.approx(
            sum(pt["value"] for pt in full[-third:]) / third, rel=1e-6
        )


# ---- property: no crash, never ok outside the memory ---------------------------------------------

_QUESTIONS = st.one_of(
    st.builds(
        lambda y, m, d: f"revenue on {y:04d}-{m:02d}-{d:02d}",
        st.integers(0, 9999),
        st.integers(0, 15),
        st.integers(0, 35),
    ),
    st.builds(
        lambda y, m: f"How many orders were there in {MONTHS_EN[m - 1]} {y}?",
        st.integers(1000, 2999),
        st.integers(1, 12),
    ),
    st.builds(
        lambda y, m, d: f"{y}年{m}月{d}日的客流", st.integers(1, 9999), st.integers(0, 14), st.integers(0, 33)
    ),
    st.builds(lambda y, m: f"{y}年{m}月的销售额", st.integers(1, 9999), st.integers(0, 14)),
    st.builds(
        lambda n, u: f"footfall over the last {n} {u}",
        st.one_of(st.integers(-5, 120), st.integers(-5, 10**7)),
        st.sampled_from(["days", "weeks", "months", "years", "quarters"]),
    ),
    st.builds(
        lambda n, u: f"过去{n}{u}的客单价", st.integers(0, 10**6), st.sampled_from(["天", "周", "个月", "年"])
    ),
    st.builds(lambda w, y: f"footfall in week {w} of {y}", st.integers(0, 99), st.integers(1000, 2999)),
    st.builds(
        lambda a, b: f"revenue between {a.isoformat()} and {b.isoformat()}",
        st.dates(date(1, 1, 1), date(9998, 12, 31)),
        st.dates(date(1, 1, 1), date(9998, 12, 31)),
    ),
    st.builds(lambda m1, m2: f"{m1}月到{m2}月的销售额", st.integers(0, 14), st.integers(0, 14)),
)
#: mostly around the memory (2025-09-01 .. 2025-11-14), where a range half in and half out is
#: likeliest, sometimes anywhere in the calendar
_NOWS = st.one_of(
    st.datetimes(datetime(2025, 8, 1), datetime(2026, 3, 31)),
    st.datetimes(datetime(2025, 8, 1), datetime(2026, 3, 31)),
    st.datetimes(datetime(1, 1, 3), datetime(9999, 12, 28)),
).map(lambda d: d.replace(tzinfo=UTC))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(question=_QUESTIONS, now=_NOWS)
def test_random_times_never_crash_and_never_ok_outside_the_memory(
    env: tuple[Memory, Any], question: str, now: datetime
) -> None:
    mem, source = env
    p = answer(question, source, now=now)
    assert p["status"] in ("ok", "insufficient_data", "unsupported", "refused")
    tr = (p["plan"].get("filters") or {}).get("time_range")
    if p["status"] != "ok" or not tr:
        return
    since, until = resolve_time_range(tr, now, TZ)
    earliest = datetime.combine(mem.config.start, datetime.min.time(), ZONE)
    latest = datetime.combine(mem.config.start + timedelta(days=mem.config.days), datetime.min.time(), ZONE)
    if since is not None:
        assert since >= earliest - timedelta(days=1), (question, now, tr)
        assert since < latest, (question, now, tr)
    if until is not None:
        end = min(until, now)
        lo = since or earliest
        assert end - latest <= end_slack(max(end - lo, timedelta(0))) + timedelta(days=1), (question, now, tr)


@pytest.mark.parametrize(
    ("question", "place"),
    [
        ("浦东店上个月的销售额是多少？", "浦东"),  # 徐汇店 is sh_xuhui_01 (its pinyin)
        ("What was revenue at the Jing'an branch last month?", "jing'an"),
        ("静安分店上周的客单价", "静安"),
        ("看看南京路店上周的客流", "南京路"),
    ],
)
def test_a_store_named_by_an_unknown_place_is_not_dropped(question: str, place: str) -> None:
    """A place-named store the memory does not know is kept in the plan as asked (then answered
    as an unknown store), never dropped for the all-store figure."""
    res = parse_question(question, _vocab(store_ids=("sh_xuhui_01",)), NOW)
    assert res.plan["filters"]["store_id"] == [place]


def test_a_store_named_by_a_part_of_its_id_is_that_store() -> None:
    vocab = _vocab(store_ids=("sh_xuhui_01", "sh_jingan_02"))
    res = parse_question("What was revenue at the Xuhui store last month?", vocab, NOW)
    assert res.plan["filters"]["store_id"] == ["sh_xuhui_01"]
    for q in ("上个月到店客流多少", "哪个门店销售额最高", "2025-11-10培训前后店员差错率对比"):
        assert "store_id" not in (parse_question(q, vocab, NOW).plan or {}).get("filters", {}), q


@pytest.mark.parametrize(
    ("question", "first"),
    [
        ("year to date revenue", date(NOW.year, 1, 1)),
        ("年初至今的销售额", date(NOW.year, 1, 1)),
        ("revenue so far this month", date(NOW.year, NOW.month, 1)),
        ("本月至今订单数", date(NOW.year, NOW.month, 1)),
        ("QTD revenue", date(NOW.year, 3 * ((NOW.month - 1) // 3) + 1, 1)),
    ],
)
def test_to_date_ranges_start_at_the_period(question: str, first: date) -> None:
    res = parse_question(question, _vocab(), NOW)
    assert res.plan["filters"]["time_range"] == {"since": local(first)}


def test_chinese_clock_range_with_liang() -> None:
    res = parse_question("上周下午两点到四点有多少订单？", _vocab(), NOW)
    assert res.plan["filters"]["hours"] == [14, 15]
