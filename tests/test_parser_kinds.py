"""Kinds of question that came back ``ok`` for something else, or were refused, found by wordings
written for this file (2026-12-05): ranges of weekdays, "which weekday", the same period a year
ago, an average per day of a total, the share of one part, a comparative with no second side, named
quarters, the n-th weekday of a month, a fortnight.

Every expected date is derived from the calendar and ``NOW`` (a Monday), not copied from output.
Each kind is checked on the simulator's vocabulary and, where the kind touches stored values, on a
second store's vocabulary (German values, Europe/Berlin).
"""

from __future__ import annotations

import calendar
from datetime import date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
import world2

from edge.analysis.parser import lexicon as lx
from edge.analysis.parser import parse_question
from edge.analysis.parser import vocabmatch as vm
from edge.analysis.parser.refusal import STAGES
from edge.analysis.source import Vocabulary
from edge.sim.catalog import VOCABULARY

NOW = datetime(2025, 12, 15, 10)  # a Monday
assert NOW.weekday() == 0

WORLD2 = world2.vocabulary()


def _ok(question: str, vocab: Vocabulary = VOCABULARY) -> dict[str, Any]:
    r = parse_question(question, vocab, NOW)
    assert r.status == "ok", (question, r.explanation, r.plan)
    assert not r.not_understood, (question, r.not_understood)
    return r.plan


def _named(question: str, word: str, vocab: Vocabulary = VOCABULARY) -> None:
    """The question is refused and ``word`` is among the words it names."""
    r = parse_question(question, vocab, NOW)
    assert r.status != "ok" and word in r.not_understood, (question, r.not_understood, r.plan)


def _said(r: Any, reason: str) -> bool:
    """Whether the refusal gives ``reason`` (a name of stages.toml's ``said`` table)."""
    zh, en = STAGES["said"][reason]
    return (zh if r.language == "zh" else en[:40].lower()) in (r.explanation or "").lower()


def _covered(plan: dict[str, Any], first: date, last: date) -> list[date]:
    """The days from ``first`` to ``last`` the plan's time filters let through."""
    f = plan.get("filters", {})
    tr, dows = f.get("time_range", {}), f.get("days_of_week")
    since = datetime.fromisoformat(tr["since"]).date() if "since" in tr else date.min
    until = datetime.fromisoformat(tr["until"]).date() if "until" in tr else date.max
    assert "last" not in tr, plan
    out, d = [], first
    while d <= last:
        if since <= d < until and (dows is None or d.weekday() in dows):
            out.append(d)
        d += timedelta(days=1)
    return out


def _weekday_span(a: int, b: int) -> list[int]:
    return sorted({(a + i) % 7 for i in range((b - a) % 7 + 1)})


@pytest.mark.parametrize(
    ("question", "a", "b"),
    [
        ("周一到周五的客流", 0, 4),
        ("周一至周三的营业额", 0, 2),
        ("Monday through Friday footfall", 0, 4),
        ("footfall from Tuesday to Thursday", 1, 3),
        ("星期五到星期天的客流", 4, 6),
        ("revenue from Saturday to Monday", 5, 0),
    ],
)
def test_a_range_of_weekdays_is_every_day_in_it(question: str, a: int, b: int) -> None:
    plan = _ok(question)
    assert plan["filters"]["days_of_week"] == _weekday_span(a, b), plan
    assert "time_range" not in plan["filters"], plan


@pytest.mark.parametrize(
    ("question", "weeks_back", "a", "b"),
    [
        ("这周一到周三的营业额", 0, 0, 2),
        ("上周一到周三的客流", 1, 0, 2),
        ("footfall from last Tuesday to last Thursday", 1, 1, 3),
    ],
)
def test_a_range_of_dated_weekdays_is_those_days(question: str, weeks_back: int, a: int, b: int) -> None:
    monday = NOW.date() - timedelta(days=NOW.weekday() + 7 * weeks_back)
    want = [monday + timedelta(days=i) for i in range(a, b + 1)]
    plan = _ok(question)
    assert _covered(plan, monday - timedelta(days=14), monday + timedelta(days=14)) == want, plan


@pytest.mark.parametrize(
    ("question", "days"),
    [
        ("Which weekday brings the most revenue?", [0, 1, 2, 3, 4]),
        ("哪个工作日营业额最高", [0, 1, 2, 3, 4]),
        ("which day of the week has the longest queues", None),
    ],
)
def test_which_weekday_ranks_the_days_of_the_week(question: str, days: list[int] | None) -> None:
    plan = _ok(question)
    assert plan["intent"] == "top_k" and plan["group_by"] == ["day_of_week"], plan
    assert plan.get("filters", {}).get("days_of_week") == days, plan


@pytest.mark.parametrize(
    "question",
    [
        "revenue this time last year",
        "footfall same period last year",
        "去年同期的销售额",
        "footfall at this time of day",
    ],
)
def test_the_same_time_a_year_ago_is_never_the_whole_year(question: str) -> None:
    """Alone it names no period: refused, saying which words (never the whole of last year)."""
    r = parse_question(question, VOCABULARY, NOW)
    assert r.status != "ok", r.plan
    said = r.explanation or ""
    assert any(w in said for w in ("this time", "same period", "同期")), said


@pytest.mark.parametrize(
    ("question", "since", "until"),
    [
        (
            "revenue this month vs the same period last year",
            date(2024, 12, 1),
            NOW.date() + timedelta(days=1),
        ),
        ("上个月的客流跟去年同期相比", date(2024, 11, 1), date(2025, 12, 1)),
        ("revenue in November compared with the same month a year ago", date(2024, 11, 1), date(2025, 12, 1)),
    ],
)
def test_the_same_period_a_year_before_another_is_those_days_a_year_back(
    question: str, since: date, until: date
) -> None:
    plan = _ok(question)
    first, second = plan["compare"]["periods"]
    got = second["time_range"]
    assert datetime.fromisoformat(got["since"]).date() == since, plan
    # the first period's end a year back (one open to now: up to today, a year back)
    want_until = until.replace(year=until.year - 1)
    assert datetime.fromisoformat(got["until"]).date() == want_until, plan
    assert datetime.fromisoformat(first["time_range"]["since"]).date() == since.replace(year=since.year + 1)


@pytest.mark.parametrize(
    "question", ["每小时平均订单数", "上个月平均订单数是多少", "average number of orders per hour"]
)
def test_an_average_number_of_orders_is_not_order_value(question: str) -> None:
    """平均订单数 was order value; an average number of a total has no plan: refused, saying so."""
    r = parse_question(question, VOCABULARY, NOW)
    assert r.status != "ok" and _said(r, "per_unit_average"), (r.plan, r.explanation)


@pytest.mark.parametrize(
    "question",
    [
        "What was the average daily footfall last month?",
        "上个月平均每天进店多少人",
        "How many complaints per week on average?",
        "日均营业额是多少",
        "每个月平均营业额",
    ],
)
def test_an_average_per_day_of_a_total_is_not_answered_as_something_else(question: str) -> None:
    r = parse_question(question, VOCABULARY, NOW)
    assert r.status != "ok" and _said(r, "per_unit_average"), (r.plan, r.explanation)


def test_per_day_in_a_comparison_is_the_contracts_own_basis() -> None:
    plan = _ok("Rain vs sun: which brings in more revenue per day?")
    assert plan["intent"] == "compare" and plan["compare"]["dimension"] == "weather", plan


@pytest.mark.parametrize(
    ("question", "vocab", "field"),
    [
        ("What share of revenue came from the bakery last month?", VOCABULARY, "product_category"),
        ("What percentage of complaints came from the checkout?", VOCABULARY, "zone"),
        ("烘焙占销售额的比例是多少", VOCABULARY, "product_category"),
        ("what share of revenue is backwaren", WORLD2, "product_category"),
    ],
)
def test_the_share_of_one_part_is_a_breakdown_over_every_part(
    question: str, vocab: Vocabulary, field: str
) -> None:
    plan = _ok(question, vocab)
    assert plan["intent"] == "breakdown" and plan["group_by"] == [field], plan
    # a filter to the part itself would make it 100% of what is left
    assert field not in plan.get("filters", {}).get("attributes", {}), plan


@pytest.mark.parametrize(
    ("question", "dimension"),
    [
        ("下雨天客单价会高一点吗", "weather"),
        ("周末人是不是多一些", "is_weekend"),
        ("促销期间的转化率是不是高一些", "promotion"),
        ("Are weekends a bit busier?", "is_weekend"),
        ("Is the store busier when it rains?", "weather"),
        ("When it rains, do fewer people come?", "weather"),
        ("What happens to revenue when it rains?", "weather"),
        ("Mondays or Saturdays, which brings in more shoppers?", "day_of_week"),
    ],
)
def test_a_comparative_with_no_second_side_compares_against_the_rest(question: str, dimension: str) -> None:
    plan = _ok(question)
    assert plan["intent"] == "compare" and plan["compare"]["dimension"] == dimension, plan


def _quarter(year: int, q: int) -> tuple[date, date]:
    start = date(year, 3 * q - 2, 1)
    return start, date(year + (q == 4), 1 if q == 4 else 3 * q + 1, 1)


@pytest.mark.parametrize(
    ("question", "year", "q"),
    [
        ("Q3 revenue", 2025, 3),
        ("第三季度的营业额", 2025, 3),
        ("footfall in the first quarter", 2025, 1),
        ("Q2 2024 revenue", 2024, 2),
        ("2024年第四季度的客流", 2024, 4),
    ],
)
def test_a_named_quarter_is_its_three_months(question: str, year: int, q: int) -> None:
    start, end = _quarter(year, q)
    plan = _ok(question)
    tr = plan["filters"]["time_range"]
    assert datetime.fromisoformat(tr["since"]).date() == start, plan
    assert datetime.fromisoformat(tr["until"]).date() == end, plan


def test_the_quarter_now_running_is_read_as_this_quarter() -> None:
    assert _ok("Q4 revenue")["filters"] == _ok("revenue this quarter")["filters"]


def _nth_weekday(year: int, month: int, weekday: int, n: int) -> date:
    days = [
        d
        for d in range(1, calendar.monthrange(year, month)[1] + 1)
        if date(year, month, d).weekday() == weekday
    ]
    return date(year, month, days[n if n < 0 else n - 1])


@pytest.mark.parametrize(
    ("question", "day"),
    [
        ("How many people came in on the last Saturday of November?", _nth_weekday(2025, 11, 5, -1)),
        ("first Monday of November footfall", _nth_weekday(2025, 11, 0, 1)),
        ("11月最后一个周六的客流", _nth_weekday(2025, 11, 5, -1)),
        ("十月的第二个星期三营业额多少", _nth_weekday(2025, 10, 2, 2)),
    ],
)
def test_the_nth_weekday_of_a_month_is_that_day(question: str, day: date) -> None:
    plan = _ok(question)
    assert _covered(plan, date(2025, 9, 1), date(2025, 12, 31)) == [day], plan


def test_a_fortnight_is_two_weeks() -> None:
    assert (
        _ok("footfall over the last fortnight")["filters"]
        == _ok("footfall over the last two weeks")["filters"]
    )


@pytest.mark.parametrize("question", ["revenue over 0 weeks", "footfall for the 00 months"])
def test_a_span_of_no_units_is_refused_not_read_as_one(question: str) -> None:
    r = parse_question(question, VOCABULARY, NOW)
    assert r.status != "ok", r.plan
    assert "not a span of time" in (r.explanation or ""), r.explanation


def test_the_xia_of_yixia_is_no_horizon() -> None:
    """比较一下周末: 一下 ("a bit") then 周末, never 下周 (next week) as a forecast's horizon."""
    plan = _ok("比较一下周末和工作日的客流哪个多")
    assert plan["intent"] == "compare" and plan["compare"]["dimension"] == "is_weekend", plan


@pytest.mark.parametrize(
    ("question", "counted"),
    [
        ("staff_07出错次数", ["staff_error"]),
        ("Staff error counts per staff member", ["staff_error"]),
    ],
)
def test_a_count_of_a_rates_events_is_their_count(question: str, counted: list[str]) -> None:
    plan = _ok(question)
    assert plan["target_metric"] == "event_count" and plan["filters"]["event_type"] == counted, plan


@pytest.mark.parametrize(
    "question",
    [
        "销售额最差的三天",
        "which zone has the lowest footfall",
        "Which product category sold the least last month?",
        "What was the quietest hour yesterday?",
        "哪个区域排队最短",
        "which zone has the fewest visitors",
        "bottom 3 product categories by revenue",
        "quietest day last week",
        "Which store has the best staff error rate?",
    ],
)
def test_a_ranking_from_the_lowest_is_never_answered_with_the_highest(question: str) -> None:
    """A plan ranks from the highest only (plan.schema.json has no order): the lowest is refused,
    saying what to ask instead, never answered with the top of the ranking."""
    r = parse_question(question, VOCABULARY, NOW)
    # refused as a ranking from the lowest, or (its superlative taken into the measure's words:
    # "the fewest visitors") for the field it does not rank by
    assert r.status != "ok" and (_said(r, "bottom_rank") or r.not_understood), (r.plan, r.explanation)


@pytest.mark.parametrize("question", ["days with at least 3 complaints", "哪天投诉至少有3条"])
def test_at_least_n_is_no_top_n(question: str) -> None:
    """A threshold on a count ("at least 3"): no plan has one, and it is no top 3."""
    r = parse_question(question, VOCABULARY, NOW)
    assert r.plan.get("top_k") != 3 and r.status != "ok", r.plan


@pytest.mark.parametrize(
    "question", ["revenue per customer last month", "spend per visitor", "人均销售额是多少"]
)
def test_a_total_per_person_is_not_the_total(question: str) -> None:
    r = parse_question(question, VOCABULARY, NOW)
    assert r.status != "ok" and _said(r, "per_person"), (r.plan, r.explanation)


@pytest.mark.parametrize(
    "question",
    [
        "平均排队多久",
        "how long do people queue at checkout on average",
        "how long do customers remain in the queue",
    ],
)
def test_how_long_of_a_queue_is_no_queue_length(question: str) -> None:
    """queue_length counts people: a question asking for a duration is not answered with it."""
    r = parse_question(question, VOCABULARY, NOW)
    assert r.status != "ok" and _said(r, "queue_duration"), (r.plan, r.explanation)


def test_the_worst_of_a_measure_a_store_wants_low_is_its_highest() -> None:
    plan = _ok("Which store has the worst staff error rate?")
    assert plan["intent"] == "top_k" and plan["group_by"] == ["store_id"], plan


@pytest.mark.parametrize(
    ("question", "vocab", "value"),
    [
        ("Which category sells best on overcast days?", WORLD2, "overcast"),
        ("雨天哪个品类卖得最好", VOCABULARY, "rain"),
    ],
)
def test_the_days_of_a_weather_are_its_words_not_a_grouping_by_date(
    question: str, vocab: Vocabulary, value: str
) -> None:
    plan = _ok(question, vocab)
    assert plan["group_by"] == ["product_category"], plan
    assert plan["filters"]["attributes"]["weather"] == value, plan


@pytest.mark.parametrize(
    "question",
    ["10月31号之后员工出错少了吗", "10月31号培训后员工出错少了吗", "Did staff errors drop after October 31?"],
)
def test_fewer_after_a_date_compares_the_days_around_it(question: str) -> None:
    """少了吗 / "did ... drop" after a date: the days before it against the days after it (in
    both languages alike; it was the trend since the date in Chinese)."""
    pivot, week = date(2025, 10, 31), timedelta(days=7)
    plan = _ok(question)
    before, after = plan["compare"]["periods"]
    assert [datetime.fromisoformat(before["time_range"][k]).date() for k in ("since", "until")] == [
        pivot - week,
        pivot,
    ]
    assert [datetime.fromisoformat(after["time_range"][k]).date() for k in ("since", "until")] == [
        pivot,
        pivot + week,
    ]


@pytest.mark.parametrize(
    ("question", "days_back", "hours"),
    [
        ("footfall this morning", 0, [8, 9, 10, 11]),
        ("今晚的营业额", 0, [18, 19, 20, 21, 22]),
        ("complaints last night", 1, [18, 19, 20, 21, 22]),
        ("昨晚的投诉", 1, [18, 19, 20, 21, 22]),
    ],
)
def test_a_part_of_today_or_yesterday_is_that_day_s_hours(
    question: str, days_back: int, hours: list[int]
) -> None:
    """ "this morning" was every morning of the memory ("this" a function word)."""
    day = NOW.date() - timedelta(days=days_back)
    plan = _ok(question)
    assert _covered(plan, day - timedelta(days=3), day + timedelta(days=3)) == [day], plan
    assert plan["filters"]["hours"] == hours, plan


@pytest.mark.parametrize(
    ("question", "last"), [("最近24小时的订单", "P1D"), ("orders in the last 48 hours", "P2D")]
)
def test_the_last_hours_in_whole_days_are_those_days_up_to_now(question: str, last: str) -> None:
    assert _ok(question)["filters"]["time_range"] == {"last": last}


@pytest.mark.parametrize(
    "question", ["24小时的订单", "最近3个小时的订单", "top 10% of days by revenue", "销售额前10%的天"]
)
def test_hours_and_percentages_no_plan_holds_are_named(question: str) -> None:
    """ "24小时" was taken as a co-occurrence's window by every plan (and dropped); "top 10%" was
    the top 10."""
    r = parse_question(question, VOCABULARY, NOW)
    assert r.status != "ok" and r.not_understood, r.plan


_MONDAY = NOW.date() - timedelta(days=NOW.weekday())


def _at(d: date) -> str:
    """Midnight of ``d`` in the simulated store's zone, as the plan writes it."""
    return datetime(d.year, d.month, d.day, tzinfo=ZoneInfo(VOCABULARY.timezone)).isoformat()


@pytest.mark.parametrize(
    ("question", "window"),
    [
        ("revenue since last month", {"since": _at(date(NOW.year, NOW.month - 1, 1))}),
        ("上个月以来的客流", {"since": _at(date(NOW.year, NOW.month - 1, 1))}),
        ("footfall before last week", {"until": _at(_MONDAY - timedelta(weeks=1))}),
        ("revenue since yesterday", {"since": _at(NOW.date() - timedelta(days=1))}),
        ("footfall until yesterday", {"until": _at(NOW.date())}),
        ("revenue since Monday", {"since": _at(_MONDAY)}),
        ("周一以来的营业额", {"since": _at(_MONDAY)}),
        # "from" before a calendar word is its origin: yesterday's complaints
        (
            "complaints from yesterday",
            {"since": _at(NOW.date() - timedelta(days=1)), "until": _at(NOW.date())},
        ),
    ],
)
def test_an_open_word_before_a_calendar_word_opens_the_range(question: str, window: dict[str, str]) -> None:
    """ "since last month" was last month alone, "since Monday" every Monday (NOW is a Monday,
    2025-12-15; last month is November, last week starts on the 8th)."""
    plan = _ok(question)
    assert plan["filters"]["time_range"] == window, plan
    assert "days_of_week" not in plan["filters"], plan


@pytest.mark.parametrize(
    ("question", "groups"),
    [
        ("just compare dwell time between aisle A and aisle B", ["shelf_a", "shelf_b"]),
        ("A区货架和B区货架，客人逗留时间哪个长", ["shelf_a", "shelf_b"]),
    ],
)
def test_a_zone_named_by_its_letter_is_the_stored_zone_it_ends(question: str, groups: list[str]) -> None:
    """ "aisle B" is shelf_b (the one stored zone ending in _b); A区货架 was compared as three groups."""
    plan = _ok(question)
    assert plan["compare"] == {"dimension": "zone", "groups": groups}, plan


def test_the_s_of_zones_is_no_zone_s() -> None:
    assert "attributes" not in _ok("Which 2 zones see the most complaints?").get("filters", {})


@pytest.mark.parametrize(
    "question", ["Why did revenue drop last week?", "为什么上周营业额下降了", "how come complaints went up"]
)
def test_a_cause_asked_is_refused_not_answered_with_the_trend(question: str) -> None:
    """ "why" was a function word: the trend of last week came back ok for a question about a cause."""
    r = parse_question(question, VOCABULARY, NOW)
    assert r.status != "ok", r.plan
    assert "why" in (r.explanation or "") or "原因" in (r.explanation or ""), r.explanation


_YESTERDAY = NOW.date() - timedelta(days=1)


@pytest.mark.parametrize(
    ("question", "want"),
    [
        # 最好 "preferably", not "the best": the longest queue, its top three zones
        (
            "哪个区域排队最长，最好列出前三",
            {"intent": "top_k", "target_metric": "queue_length", "top_k": 3, "group_by": ["zone"]},
        ),
        # "from" Mondays: no open range, the two days compared
        (
            "how does revenue from Mondays compare with Saturdays",
            {
                "intent": "compare",
                "target_metric": "revenue",
                "compare": {"dimension": "day_of_week", "groups": [0, 5]},
                "filters": {"days_of_week": [0, 5]},
            },
        ),
        # "mean" the verb, no average
        (
            "footfall yesterday, I mean the total",
            {
                "intent": "aggregate",
                "target_metric": "footfall",
                "filters": {"time_range": {"since": _at(_YESTERDAY), "until": _at(NOW.date())}},
            },
        ),
        (
            "Which days had higher than average footfall?",
            {"intent": "anomaly", "target_metric": "footfall", "time_bucket": "day"},
        ),
        # the share of a part with a weather named: split by the part's field, the weather kept
        (
            "What share of revenue on rainy days came from the bakery?",
            {
                "intent": "breakdown",
                "target_metric": "revenue",
                "group_by": ["product_category"],
                "filters": {"attributes": {"weather": "rain"}},
            },
        ),
    ],
)
def test_near_wordings_of_the_new_kinds_keep_their_reading(question: str, want: dict[str, Any]) -> None:
    """Found in review: each was read right before the kinds above and must stay so."""
    plan = _ok(question)
    assert {k: plan.get(k) for k in want} == want, plan
    assert "filters" in want or not plan.get("filters"), plan


def test_an_open_word_before_a_running_quarter_opens_it() -> None:
    first = date(NOW.year, 3 * ((NOW.month - 1) // 3) + 1, 1)
    assert _ok("revenue before Q4")["filters"]["time_range"] == {"until": _at(first)}


def test_the_nth_weekday_of_a_month_is_never_in_the_future_without_a_year() -> None:
    last_friday = _nth_weekday(NOW.year - 1, 12, 4, -1)  # this December's is still to come
    assert _covered(_ok("footfall on the last Friday of December"), date(2024, 1, 1), date(2025, 12, 31)) == [
        last_friday
    ]


def test_the_same_period_a_year_before_the_last_days_is_those_days_a_year_back() -> None:
    plan = _ok("过去30天和去年同期比客流有变化吗")
    since = NOW.date() - timedelta(days=30)
    want = {
        "since": _at(since.replace(year=since.year - 1)),
        "until": _at(NOW.date().replace(year=NOW.year - 1) + timedelta(days=1)),
    }
    assert plan["compare"]["periods"][1]["time_range"] == want, plan


def _units_ago(unit: str, n: int) -> tuple[date, date]:
    """The calendar ``unit`` ``n`` back from NOW's: its first day and the day after its last."""
    today = NOW.date()
    if unit == "day":
        return today - timedelta(days=n), today - timedelta(days=n - 1)
    if unit == "week":
        monday = today - timedelta(days=today.weekday()) - timedelta(weeks=n)
        return monday, monday + timedelta(weeks=1)
    y, m = divmod(today.year * 12 + today.month - 1 - n, 12)
    first = date(y, m + 1, 1)
    return first, (first + timedelta(days=32)).replace(day=1)


@pytest.mark.parametrize(
    ("question", "unit", "n"),
    [
        ("三天前的客流", "day", 3),
        ("three days ago, how many visitors came in", "day", 3),
        ("两周前的营业额", "week", 2),
        ("两个礼拜前的投诉多不多", "week", 2),
        ("revenue two weeks ago", "week", 2),
        ("两个月前的订单数", "month", 2),
        ("complaints a month ago", "month", 1),
    ],
)
@pytest.mark.parametrize("world", ["sim", "world2"])
def test_units_ago_are_that_calendar_unit(question: str, unit: str, n: int, world: str) -> None:
    """三天前 / two weeks ago were named and refused: now the day, the week, the month that many back."""
    vocab = VOCABULARY if world == "sim" else WORLD2
    first, end = _units_ago(unit, n)
    zone = ZoneInfo(vocab.timezone)
    want = {
        "since": datetime(first.year, first.month, first.day, tzinfo=zone).isoformat(),
        "until": datetime(end.year, end.month, end.day, tzinfo=zone).isoformat(),
    }
    assert _ok(question, vocab)["filters"]["time_range"] == want


def test_since_units_ago_opens_a_range_from_that_unit() -> None:
    assert _ok("complaints since two weeks ago")["filters"]["time_range"] == {
        "since": _at(_units_ago("week", 2)[0])
    }
    assert _ok("三天前到现在的订单数")["filters"]["time_range"] == {"since": _at(_units_ago("day", 3)[0])}


@pytest.mark.parametrize(
    "question",
    [
        "一年前的客流",
        "几天前的投诉",
        "revenue a few days ago",
        "半个月前的营业额",
        "3月前的营业额",
        "15日前的客流",
    ],
)
def test_vague_or_other_times_before_are_not_read_as_units_ago(question: str) -> None:
    """A year ago (which days?), a few days ago, half a month ago; 3月前 is before March, 15日前 before the 15th."""
    r = parse_question(question, VOCABULARY, NOW)
    assert r.status != "ok", r.plan


@pytest.mark.parametrize(
    ("aside", "question"),
    [
        ("Sorry to bother you, but ", "how many people walked in yesterday?"),
        ("My boss wants to know: ", "is footfall higher on weekends than weekdays?"),
        ("Off the top of your head, ", "what's the average order value in November?"),
        ("Not urgent: ", "is there a weekly pattern in footfall?"),
        ("If it's not too much trouble, ", "show me the top 5 products by revenue this month."),
        ("老板让我问一下，", "上周营业额多少？"),
        ("我有点好奇，", "这个月投诉是不是比上个月多了"),
        ("开会要用，", "最近8周的转化率趋势"),
        ("总部这边想知道，", "11月哪家店转化率最高"),
    ],
)
@pytest.mark.parametrize("world", ["sim", "world2"])
def test_a_clause_about_the_asking_is_set_aside_and_said(aside: str, question: str, world: str) -> None:
    """Asides of politeness, hedges and who asks were words not understood: every padded question was
    refused. A clause of them alone, beside a clause that was read, is set aside and said."""
    vocab = VOCABULARY if world == "sim" else WORLD2
    bare = parse_question(question, vocab, NOW)
    padded = parse_question(aside + question, vocab, NOW)
    assert bare.status == "ok", bare
    assert padded.status == "ok", (padded.not_understood, padded.explanation)
    drop = ("raw_question",)
    assert {k: v for k, v in padded.plan.items() if k not in drop} == {
        k: v for k, v in bare.plan.items() if k not in drop
    }
    assert [a.strip(" ,:，") for a in padded.set_aside] == [
        aside.strip(" ,:，").lower().removesuffix(", but")
    ]


@pytest.mark.parametrize(
    "question", ["Hmm, what would revenue look like next week?", "不好意思打扰一下，昨天进店人数是多少"]
)
def test_fixed_phrases_of_politeness_are_function_words(question: str) -> None:
    """Said anywhere in a question (不好意思, hmm), they are no content: read as function words."""
    r = parse_question(question, VOCABULARY, NOW)
    assert r.status == "ok" and not r.set_aside, r


@pytest.mark.parametrize(
    "question",
    [
        "On meeting days, what is the revenue?",  # a condition: days of meetings
        "During the meeting, how many people came in?",
        "开会的时候，客流多少",
        "老板来店里那天，销售额是多少",
        "Email, how many orders last week?",  # a channel no event records
        "Boards, how many sold last week?",  # a product no event names
        "Team A, what's their error rate?",  # a team the memory does not know
        "会员，上周的客单价多少",  # members: an attribute no event records
        "Sorry to bother you",  # nothing else asked
        # found in review: a clause that narrows, with no word of asking, is content
        "revenue last week, managers only",
        "complaints last week, urgent ones",
        "complaints last week, about the manager",
        "revenue last week, not hq",
        "上周营业额，要总部的",
        "上周投诉数，关于经理的",
        "上周营业额，老板那家",
    ],
)
def test_a_clause_with_content_not_read_is_never_set_aside(question: str) -> None:
    r = parse_question(question, VOCABULARY, NOW)
    assert r.status != "ok", (r.plan, r.set_aside)


def test_the_answer_says_what_was_set_aside() -> None:
    from test_parser_fields import _source

    from edge.analysis.engine import answer

    p = answer("Sorry to bother you, but what was the total revenue?", _source(), now=NOW)
    assert p["status"] == "ok", p
    assert "set aside as not about the data: “sorry to bother you" in p["interpretation"]["text"]
    p = answer("老板让我问一下，总销售额多少", _source(), now=NOW)
    assert "与数据无关、未计入：“老板让我问一下”" in p["interpretation"]["text"], p["interpretation"]


@pytest.mark.parametrize(
    ("question", "month", "first_half"),
    [
        ("11月下半月的投诉", 11, False),
        ("10月上半月的营业额", 10, True),
        ("the first half of November footfall", 11, True),
        ("footfall in the second half of October", 10, False),
    ],
)
def test_a_half_of_a_named_month_is_its_days(question: str, month: int, first_half: bool) -> None:
    """上半月 / "the second half of" were named and refused (or the whole month kept)."""
    last = calendar.monthrange(NOW.year, month)[1]
    days = (
        (date(NOW.year, month, 1), date(NOW.year, month, 15))
        if first_half
        else (date(NOW.year, month, 16), date(NOW.year, month, last))
    )
    got = _covered(_ok(question), date(NOW.year, 1, 1), date(NOW.year, 12, 31))
    assert (got[0], got[-1], len(got)) == (*days, (days[1] - days[0]).days + 1)


@pytest.mark.parametrize(
    "question",
    ["does footfall peak earlier on weekends", "is the peak hour later on weekdays", "周末的高峰是不是更晚"],
)
def test_a_peak_earlier_or_later_on_weekends_compares_them(question: str) -> None:
    """Was the trend of the weekend's peak hour (or its value): "earlier on weekends" compares the
    weekend's peak with weekdays'."""
    plan = _ok(question)
    assert (plan["intent"], plan["target_metric"], plan["compare"]["dimension"]) == (
        "compare",
        "peak_hour",
        "is_weekend",
    )
    assert "days_of_week" not in plan.get("filters", {}), plan


@pytest.mark.parametrize(
    "question", ["has the weekend peak moved earlier over the last 3 months", "周末高峰提前了吗"]
)
def test_a_peak_that_moved_is_still_its_course(question: str) -> None:
    plan = _ok(question)
    assert (plan["intent"], plan["filters"]["days_of_week"]) == ("trend", [5, 6]), plan


@pytest.mark.parametrize(
    "question", ["Is revenue the same for weekends and weekdays?", "周末和工作日的客流一样吗"]
)
def test_the_same_in_a_comparison_is_no_follow_up(question: str) -> None:
    assert _ok(question)["compare"]["dimension"] == "is_weekend"


def test_words_of_the_measure_or_for_before_a_store_noun_are_no_place() -> None:
    """按转化率给门店排个名 filtered a store called 率给: 给 ("for") and the end of a measure word
    (率, 额) never start a place."""
    plan = _ok("按转化率给门店排个名")
    assert (plan["intent"], plan["group_by"]) == ("top_k", ["store_id"]), plan
    assert "store_id" not in plan.get("filters", {}), plan
    r = parse_question("给南京路店的营业额排个名", VOCABULARY, NOW)
    assert r.plan["filters"]["store_id"] == ["南京路"], r.plan


def test_only_is_a_function_word_in_chinese_too() -> None:
    """ "only the bakery's revenue" was read; 只看烘焙类的销售额 named 只 as not understood."""
    assert (
        _ok("只看烘焙类的销售额")["filters"]["attributes"]
        == _ok("only the bakery's revenue")["filters"]["attributes"]
    )


def test_the_one_of_a_word_after_a_week_is_no_monday() -> None:
    """一起, 一点都 after 周 were Monday (and 一点 one o'clock); 周一下午 is still Monday afternoon."""
    monday = NOW.date() - timedelta(days=NOW.weekday())
    plan = _ok("周一下午的客流")
    assert (plan["filters"]["days_of_week"], plan["filters"]["hours"]) == ([0], list(range(12, 18))), plan
    plan = parse_question("上周一起投诉的有几个", VOCABULARY, NOW).plan  # "together" last week: the week
    assert plan["filters"]["time_range"] == {"since": _at(monday - timedelta(weeks=1)), "until": _at(monday)}
    plan = parse_question("这周一点都不忙，客流多少", VOCABULARY, NOW).plan  # "not busy at all" this week
    assert plan["filters"] == {"time_range": {"since": _at(monday)}}, plan


def test_the_same_period_a_year_before_a_span_past_the_calendar_is_named_not_a_crash() -> None:
    r = parse_question("最近10000年和去年同期的营业额", VOCABULARY, NOW)
    assert r.status != "ok" and "日历" in (r.explanation or ""), r.explanation


@pytest.mark.parametrize(
    "question", ["我们店上周的营业额", "咱们店上周一共进来多少客人", "你们店昨天的客流", "我们自己店的客流"]
)
def test_our_store_is_the_store_not_one_called_we(question: str) -> None:
    """我们店 filtered a store called 我们 (insufficient data at the answer): "our store" as in English."""
    assert "store_id" not in _ok(question).get("filters", {})


@pytest.mark.parametrize(
    ("question", "word"),
    [
        ("revenue recently", "recently"),
        ("最近的营业额", "最近"),
        ("最近哪个区投诉最多", "最近"),
        ("最近周末和工作日哪个客流多", "最近"),
    ],
)
def test_a_word_of_recent_time_is_the_last_weeks_and_said(question: str, word: str) -> None:
    """ "revenue recently" was the total of the whole memory: a value, a ranking or a comparison of
    groups over "recently" is the last 4 weeks, and the answer says so."""
    r = parse_question(question, VOCABULARY, NOW)
    assert r.status == "ok", r.explanation
    assert r.plan["filters"]["time_range"] == {"last": "P4W"}, r.plan
    assert (word, STAGES["said"]["recent_read"][0 if r.language == "zh" else 1]) in r.read_as


@pytest.mark.parametrize("question", ["最近客流有变化吗", "最近8周的营业额"])
def test_a_course_or_a_span_of_its_own_keeps_its_window(question: str) -> None:
    plan = _ok(question)
    assert plan.get("filters", {}).get("time_range") in (None, {"last": "P8W"}), plan


@pytest.mark.parametrize(
    "question", ["complaints the other day", "那天的客流", "前些日子的投诉", "revenue a while ago"]
)
def test_a_day_not_named_is_named_not_the_whole_memory(question: str) -> None:
    """ "complaints the other day" was every complaint in the memory ("other", "day" function words)."""
    r = parse_question(question, VOCABULARY, NOW)
    assert r.status != "ok", r.plan
    assert "日期" in (r.explanation or "") or "dates" in (r.explanation or ""), r.explanation


@pytest.mark.parametrize("days_on", range(7))
def test_this_past_saturday_is_the_latest_before_today(days_on: int) -> None:
    now = NOW + timedelta(days=days_on)
    want = now.date() - timedelta(days=(now.weekday() - 5) % 7 or 7)
    for question in ("revenue this past Saturday", "footfall this past weekend"):
        tr = parse_question(question, VOCABULARY, now).plan["filters"]["time_range"]
        assert tr["since"] == _at(want), (question, now, tr)


@pytest.mark.parametrize(
    ("question", "group"),
    [
        ("which staff member made the most errors", ["staff_id"]),
        ("哪个员工出错最多", ["staff_id"]),
        ("how many mistakes did staff make last week", None),
        ("员工上周出错多少次", None),
    ],
)
def test_the_most_errors_or_how_many_is_their_count_not_the_rate(
    question: str, group: list[str] | None
) -> None:
    """ "which staff member made the most errors" ranked the error rate (a count asked, a rate
    answered); "how many mistakes did staff make" was refused for its word "staff"."""
    plan = _ok(question)
    assert (plan["target_metric"], plan["filters"]["event_type"], plan.get("group_by")) == (
        "event_count",
        ["staff_error"],
        group,
    ), plan


def test_the_highest_error_rate_is_still_the_rate() -> None:
    assert _ok("who has the highest error rate")["target_metric"] == "staff_error_rate"


def _month_back(d: date) -> date:
    first = (d.replace(day=1) - timedelta(days=1)).replace(day=1)
    return first.replace(day=min(d.day, calendar.monthrange(first.year, first.month)[1]))


@pytest.mark.parametrize(
    "question",
    ["revenue this month so far vs the same days last month", "这个月到目前为止和上个月同期比营业额"],
)
def test_the_same_days_last_month_are_the_other_period_a_month_back(question: str) -> None:
    """Was this month so far against the whole of last month ("the same days" dropped; 同期 named)."""
    periods = _ok(question)["compare"]["periods"]
    first = NOW.date().replace(day=1)
    assert periods[0]["time_range"] == {"since": _at(first)}
    assert periods[1]["time_range"] == {
        "since": _at(_month_back(first)),
        "until": _at(_month_back(NOW.date() + timedelta(days=1))),
    }


def test_normal_days_against_promotion_days_are_still_compared() -> None:
    assert _ok("做促销那几天客单价跟平常比怎么样？")["compare"]["dimension"] == "promotion"


def test_a_word_of_change_under_a_value_is_named_in_chinese_too() -> None:
    """营业额提高了吗 was the total of revenue: 提 of 提高 was "finished" by the function word 高."""
    r = parse_question("营业额提高了吗", VOCABULARY, NOW)
    assert r.status != "ok" and "提" in "".join(r.not_understood), r
    assert _ok("客流增加了吗")["intent"] == "trend"


def test_the_answer_names_the_value_asked_when_the_two_highest_are_others() -> None:
    """ "is revenue higher on sunny days" led with the two highest weathers and, sunny days the lowest,
    said no word of them."""
    from edge.analysis.engine import answer
    from edge.analysis.testing import InMemorySource, MemEvent

    t0, events = datetime(2025, 11, 1, 2, tzinfo=ZoneInfo("UTC")), []
    for day in range(30):  # sunny days sell least, rainy days most
        weather, amount = (
            ("sunny", 10.0) if day % 3 == 0 else ("cloudy", 20.0) if day % 3 == 1 else ("rain", 30.0)
        )
        for i in range(12):
            ts = t0 + timedelta(days=day, minutes=10 * i)
            events.append(
                MemEvent(
                    f"p{day}-{i}",
                    "s1",
                    ts,
                    "purchase",
                    {"weather": weather, "order_amount": amount + i % 3, "bill_id": f"b{day}-{i}"},
                )
            )
    source = InMemorySource(events, timezone="UTC")
    p = answer("is revenue higher on sunny days", source, now=datetime(2025, 12, 15, tzinfo=ZoneInfo("UTC")))
    assert p["status"] == "ok", p
    sunny = next(g for g in p["result"]["groups"] if g["key"] == "sunny")
    assert p["plan"]["compare"] == {"dimension": "weather"}, p["plan"]  # every weather, none required
    assert p["result"]["groups"][-1] == sunny
    assert "asked about" in p["summary"] and "lower than both" in p["summary"], p["summary"]


@pytest.mark.parametrize(
    "question", ["has dwell time gone up in the fresh zone", "any unusual days in the fresh zone"]
)
def test_a_series_in_one_named_value_is_not_split_by_its_field(question: str) -> None:
    """ "has dwell time gone up in the fresh zone" was a trend per zone held to the fresh zone, which the
    engine refuses (one answer per zone asked of one zone): "zone" is the value's own word."""
    plan = _ok(question)
    assert "group_by" not in plan and plan["filters"]["attributes"] == {"zone": "fresh"}, plan
    assert _ok("trend of complaints in each zone")["group_by"] == ["zone"]


@pytest.mark.parametrize(
    "question", ["footfall trend in the fresh and wine zones", "客流走势，生鲜区和酒水区"]
)
def test_a_trend_of_two_named_values_is_each_ones_course_not_a_comparison(question: str) -> None:
    """Was a comparison of the two zones' footfall: the trend asked was dropped."""
    plan = _ok(question)
    assert (plan["intent"], plan["group_by"], plan["filters"]["attributes"]) == (
        "trend",
        ["zone"],
        {"zone": ["fresh", "wine"]},
    ), plan
    assert _ok("生鲜区和酒水区客流比较")["intent"] == "compare"


def test_what_zone_or_a_listing_of_what_was_said_is_still_read() -> None:
    assert _ok("投诉最多的是什么区域")["group_by"] == ["zone"]
    assert _ok("show me what customers complained about yesterday")["intent"] == "retrieve"
    plan = _ok("top 3 categories by revenue in the fresh zone")  # the zone a filter, no grouping
    assert (plan["group_by"], plan["filters"]["attributes"]) == (["product_category"], {"zone": "fresh"})


@pytest.mark.parametrize(
    ("question", "hours"),
    [
        ("晚上5点到7点的客流和其他时间比", [17, 18]),  # was 5-7pm's footfall alone
        ("footfall between 5 and 7pm vs the rest of the day", [17, 18]),  # was refused for "rest"
    ],
)
def test_hours_against_other_hours_are_compared(question: str, hours: list[int]) -> None:
    plan = _ok(question)
    assert (plan["intent"], plan["compare"], plan["filters"]["hours"]) == (
        "compare",
        {"dimension": "hour"},
        hours,
    )


@pytest.mark.parametrize(
    ("question", "a", "b"),
    [
        ("revenue from November 1 to 10", 1, 10),
        ("11月1号到10号的营业额", 1, 10),
        ("complaints between the 5th and the 12th of November", 5, 12),
        ("11月5号到12号之间的投诉", 5, 12),
        ("footfall in the 2nd week of November", 8, 14),
        ("11月第二周的客流", 8, 14),
    ],
)
@pytest.mark.parametrize("world", ["sim", "world2"])
def test_days_of_one_month_named_once_are_that_span(question: str, a: int, b: int, world: str) -> None:
    """The second day or the week of the month was left unread (named): the span is now read."""
    vocab = VOCABULARY if world == "sim" else WORLD2
    zone = ZoneInfo(vocab.timezone)
    year = NOW.year  # November has begun this year by NOW
    want = {
        "since": datetime(year, 11, a, tzinfo=zone).isoformat(),
        "until": datetime(year, 11, b + 1, tzinfo=zone).isoformat(),
    }
    assert _ok(question, vocab)["filters"]["time_range"] == want


@pytest.mark.parametrize("question", ["11月10号到5号的客流", "2月1号到30号的营业额"])
def test_a_span_of_days_no_month_has_is_named(question: str) -> None:
    r = parse_question(question, VOCABULARY, NOW)
    assert r.status != "ok" and "同一个月" in (r.explanation or ""), r.explanation


@pytest.mark.parametrize(
    ("traditional", "simplified"),
    [
        ("上週營業額多少", "上周营业额多少"),
        ("上個月哪個區的投訴最多", "上个月哪个区的投诉最多"),
        ("客單價的趨勢", "客单价的趋势"),
    ],
)
def test_traditional_characters_read_as_the_simplified_ones(traditional: str, simplified: str) -> None:
    """上週營業額多少 named 营业額 as not understood: traditional characters are read as simplified."""
    assert _ok(traditional) == _ok(simplified)


@pytest.mark.parametrize(
    ("question", "unit"),
    [
        ("is revenue higher than last month", "month"),
        ("营业额比上个月高吗", "month"),
        ("客流比上周少吗", "week"),
        ("环比上周营业额涨了多少", "week"),  # week on week: this week so far against the last
        # a running period, higher or lower: against the last whole one (it ends where this begins)
        ("is revenue higher this month", "month"),
        ("has the queue got shorter this week", "week"),
        ("本月投诉少了吗", "month"),
    ],
)
def test_higher_than_one_period_compares_it_with_the_time_since(question: str, unit: str) -> None:
    """ "is revenue higher than last month" was last month's revenue: the other side is the time
    since that period ended, up to now; "is revenue higher this month" was this month's revenue:
    compared with last month (per day, both)."""
    today = NOW.date()
    first = today.replace(day=1) if unit == "month" else today - timedelta(days=today.weekday())
    before = _month_back(first) if unit == "month" else first - timedelta(weeks=1)
    periods = _ok(question)["compare"]["periods"]
    assert [p["time_range"] for p in periods] == [
        {"since": _at(first)},
        {"since": _at(before), "until": _at(first)},
    ]


@pytest.mark.parametrize(
    ("question", "ok"),
    [
        ("revenue on December 1 and 8", False),  # two days, not a span
        ("revenue between November 1 and 8", True),
        ("上周一天营业额最高是多少", False),  # a day of last week, not last Monday
        ("本周营业额同上周相比", True),  # 同上周 is no follow-up
        ("客流是怎么增长的", True),  # how it grew, not advice
        ("store std_01 revenue", True),  # a store's code, no standard deviation
        ("上周六和上周日客流一样吗", True),  # two days the same: compared
    ],
)
def test_wordings_found_in_review(question: str, ok: bool) -> None:
    r = parse_question(question, VOCABULARY, NOW)
    assert (r.status == "ok") is ok, (r.plan, r.explanation)
    if question == "revenue between November 1 and 8":
        assert r.plan["filters"]["time_range"]["until"] == _at(date(NOW.year, 11, 9))
    if question.endswith("一样吗"):
        assert len(r.plan["compare"]["periods"]) == 2


def test_their_store_is_a_store_named_not_ours() -> None:
    """他们店 ("their store") is someone else's: kept as the store asked for, which the memory does not know."""
    plan = parse_question("他们店上周营业额", VOCABULARY, NOW).plan
    assert plan["filters"]["store_id"] == ["他们"], plan


def test_a_change_within_a_closed_period_is_still_its_course() -> None:
    assert _ok("did revenue increase last week")["intent"] == "trend"


@pytest.mark.parametrize(
    "question",
    [
        "is footfall up this week",
        "are complaints down this month",
        "这个月营业额是不是高了",
        "本周客流是不是上去了",
    ],
)
def test_up_or_down_in_a_running_period_is_compared_with_the_last(question: str) -> None:
    """Were this week's (month's) value alone: "up", 高了, 上去了 are words of change."""
    periods = _ok(question)["compare"]["periods"]
    assert "until" not in periods[0]["time_range"] and "until" in periods[1]["time_range"], periods


@pytest.mark.parametrize("question", ["上个月营业额比较高吗", "compare last month's revenue"])
def test_a_period_not_set_against_another_is_no_comparison_with_the_time_since(question: str) -> None:
    """比较高 ("rather high") and a bare "compare" name no other side: never the time since."""
    plan = parse_question(question, VOCABULARY, NOW).plan
    assert "periods" not in plan.get("compare", {}), plan


#: shapes no plan computes, each answered `ok` with something else before this file's session 5:
#: (question, the reason it is refused with: a name of stages.toml's ``said`` table)
_NO_PLAN_SHAPE = [
    # a median was the mean (中, 位, 数 each a function word); a count of distinct values a comparison
    ("中位数客单价是多少", "statistic"),
    ("what is the median order value in November", "statistic"),
    ("standard deviation of daily revenue", "statistic"),
    ("销售额的标准差", "statistic"),
    ("how many different products sold last week", "distinct"),
    ("上周卖了多少种商品", "distinct"),
    ("How many distinct zones had complaints?", "distinct"),
    # "same for complaints" was the complaint total: the question it leans on is not kept
    ("same for complaints", "follow_up"),
    ("And the same for the bakery?", "follow_up"),
    ("投诉也一样吗", "follow_up"),
    ("同样的问题，看看烘焙区", "follow_up"),
    # "the same as" one thing (营业额和上周一样吗 was last Monday's revenue, then last week's)
    ("营业额和上周一样吗", "no_groups"),
    ("这周一样忙吗", "no_groups"),
    ("is revenue the same as last week", "no_groups"),
    ("上周一的营业额一样吗", "no_groups"),
    # a value against the usual level (今天比平时忙吗 was today on days with no promotion)
    ("is today busier than usual", "than_usual"),
    ("今天比平时忙吗", "than_usual"),
    ("how does yesterday's revenue compare to the average day", "than_usual"),
    # advice ("how can we increase revenue" was the trend, 怎么提高营业额 the total)
    ("how can we increase revenue", "advice"),
    ("怎么提高营业额", "advice"),
    ("what should I do about the queues", "advice"),
    ("如何减少排队", "advice"),
    # what events are about ("what are customers complaining about" was their number)
    ("what are customers complaining about", "subject"),
    ("顾客都在抱怨什么", "subject"),
]


@pytest.mark.parametrize(("question", "reason"), _NO_PLAN_SHAPE)
@pytest.mark.parametrize("world", ["sim", "world2"])
def test_a_shape_no_plan_computes_is_refused_with_its_reason(question: str, reason: str, world: str) -> None:
    r = parse_question(question, VOCABULARY if world == "sim" else WORLD2, NOW)
    assert r.status != "ok" and _said(r, reason), (r.plan, r.explanation)


@pytest.mark.parametrize(
    ("question", "word"),
    [
        ("compare last month's revenue", "compare"),
        ("compare revenue", "compare"),
        ("比较一下上个月的营业额", "比较一下"),
        ("对比一下上周客流", "对比"),
    ],
)
def test_a_compare_verb_with_one_side_is_named_not_answered_as_a_value(question: str, word: str) -> None:
    """ "compare last month's revenue" was last month's revenue: a comparison with nothing to set
    beside it is no value; the verb is named (two sides named are compared, below)."""
    r = parse_question(question, VOCABULARY, NOW)
    assert r.status != "ok" and word in r.not_understood, (r.plan, r.not_understood)
    both = _ok(
        "对比一下上周和这周的客流" if r.language == "zh" else "compare this week vs last week footfall"
    )
    assert both["intent"] == "compare" and len(both["compare"]["periods"]) == 2


def test_a_ranking_with_nothing_to_rank_by_is_refused_never_the_operators_default() -> None:
    """哪几天营业额最高 and "our five best days" were rankings with no ``group_by``: the operator
    ranked product categories, which nobody asked for. The days are the grouping; a ranking that
    names none is refused."""
    for q in ("哪几天营业额最高", "Our five best days for takings - which were they?", "哪些天客流最多"):
        assert _ok(q)["group_by"] == ["date"], q
    for q in ("top 3 by revenue", "营业额排名前三"):
        r = parse_question(q, VOCABULARY, NOW)
        assert r.status != "ok" and _said(r, "rank_by"), (q, r.plan)


def test_the_days_of_a_week_asked_are_the_weekdays_not_a_window() -> None:
    """一周里哪天 was a window of 7 days and a ranking of dates; 一周中哪天 read 周中 as weekdays."""
    for q in ("一周里哪天卖得最好", "一周中哪天客流最多", "一个星期里哪几天排队最长"):
        plan = _ok(q)
        assert plan["group_by"] == ["day_of_week"] and "days_of_week" not in plan.get("filters", {}), (
            q,
            plan,
        )
    assert _ok("周中客流怎么样")["filters"]["days_of_week"] == [0, 1, 2, 3, 4]


def test_a_few_days_back_is_a_span_not_a_ranking() -> None:
    """前几天 was read as the last 3 days and 前几 named as a top-k with nothing ranked."""
    for q, last in (("前几天的客流怎么样", "P3D"), ("前几周的营业额", "P3W")):
        assert _ok(q)["filters"]["time_range"] == {"last": last}, q
    assert _ok("卖得最好的前几个商品")["intent"] == "top_k"


@pytest.mark.parametrize("world", ["sim", "world2"])
def test_a_share_asked_is_never_answered_with_a_count(world: str) -> None:
    """ "the share of complaints" was the complaint count, 情绪负面的比例 a count of negative
    speech: 比 was a function word and 例 finished 比例. A share is answered by a rate, a breakdown
    or a ranking of parts, else named."""
    vocab = VOCABULARY if world == "sim" else WORLD2
    for q in ("投诉的比例", "what was the proportion of complaints last week"):
        r = parse_question(q, vocab, NOW)
        assert r.status != "ok", (q, r.plan)
    assert _ok("负面情绪占比是多少", vocab)["target_metric"] == "negative_emotion_rate"
    assert _ok("投诉按区域的占比", vocab)["intent"] == "breakdown"


def test_a_rates_events_named_are_counted_and_a_breakdowns_share_is_of_the_count() -> None:
    """ "Break down staff error events by employee" was each one's error rate: the events named
    are counted; 各占多少比例 of a breakdown is each part's share of that count, not the rate."""
    for q in ("Break down staff error events by employee", "员工失误事件按员工分解一下，各占多少比例"):
        plan = _ok(q)
        assert plan["target_metric"] == "event_count" and plan["filters"]["event_type"] == ["staff_error"], q
    assert _ok("各员工的失误率")["target_metric"] == "staff_error_rate"


@pytest.mark.parametrize(
    ("question", "intent"),
    [
        # colloquial words of change, splitting, pairing, moving together and rhythm (named before)
        ("营业额这几个月咋变的", "trend"),
        ("is revenue creeping up since October", "trend"),
        ("are complaints ticking up since November", "trend"),
        ("break last week's revenue down by zone", "breakdown"),
        ("how does revenue divide up across categories", "breakdown"),
        ("投诉和排队是不是老凑一块", "co_occurrence"),
        ("does revenue move with footfall", "correlation"),
        ("投诉有没有什么节奏", "periodicity"),
    ],
)
def test_colloquial_words_of_a_kind_are_read(question: str, intent: str) -> None:
    assert _ok(question)["intent"] == intent


def test_what_is_left_of_a_week_and_next_weekend_are_forecast_horizons() -> None:
    """下礼拜 was named (下周 and 下个星期 were read), 这周剩下的几天 and "the rest of the week" had
    no horizon (the month's and the year's rest had), "next weekend" was the weekend's days."""
    days_left = 6 - NOW.weekday()  # the days after today up to Sunday
    for q, horizon in (
        ("下礼拜营业额大概多少", "P1W"),
        ("这周剩下的几天营业额会有多少", f"P{days_left}D"),
        ("forecast footfall for the rest of the week", f"P{days_left}D"),
        ("照这个势头下个月客流会有多少", "P1M"),
        ("Roughly how long will the checkout queues be next weekend?", "P1W"),
        ("下周末客流会有多少", "P1W"),
    ):
        plan = _ok(q)
        assert plan["intent"] == "forecast" and plan["horizon"] == horizon, (q, plan)
    assert "horizon" not in _ok("看下周末客流")  # 看下: look at the weekends' footfall


def test_a_part_of_a_month_opens_a_range_and_is_read_with_its_measure_word() -> None:
    """ "since mid-October" was October (mid named), 10月前半个月 named 前半."""
    since = _ok("revenue since mid-November")["filters"]["time_range"]
    assert since == {"since": datetime(2025, 11, 11).isoformat() + "+08:00"}
    part = _covered(_ok("10月前半个月的营业额"), date(2025, 9, 1), date(2025, 12, 14))
    assert part[0] == date(2025, 10, 1) and part[-1] == date(2025, 10, 15)


def test_a_ranking_by_a_named_measure_is_by_it_and_its_groups_may_be_bare() -> None:
    """ "best-selling products by revenue" ranked orders and named revenue; 哪两个区 named 区."""
    for q in (
        "best-selling products by revenue",
        "按营业额算卖得最好的品类",
        "Best-selling category by revenue last week?",
    ):
        assert _ok(q)["target_metric"] == "revenue", q
    assert _ok("best-selling products")["target_metric"] == "order_count"
    plan = _ok("哪两个区投诉最多")
    assert plan["group_by"] == ["zone"] and plan["top_k"] == 2
    assert _ok("peak hour for footfall last week")["target_metric"] == "peak_hour"


def test_a_value_asked_by_which_is_no_part_of_a_breakdown() -> None:
    """ "by which entrance door" was a breakdown by zone (the entrance zone's field): it asks by a
    field of several doors the memory does not hold."""
    for q in ("Break footfall down by which entrance door people used", "把营业额按哪个入口拆一下"):
        assert parse_question(q, VOCABULARY, NOW).status != "ok", q
    assert _ok("what share of revenue came from the bakery")["group_by"] == ["product_category"]


def test_how_long_a_queue_will_be_is_its_length_how_long_people_queue_its_duration() -> None:
    assert _ok("how long will the queues be tomorrow")["target_metric"] == "queue_length"
    r = parse_question("how long do people queue at checkout", VOCABULARY, NOW)
    assert r.status != "ok" and _said(r, "queue_duration")


def test_an_aside_naming_who_asks_is_set_aside() -> None:
    r = parse_question("领导问：上个月营业额是多少", VOCABULARY, NOW)
    assert r.status == "ok" and r.set_aside == ("领导问",), (r.not_understood, r.set_aside)
    assert parse_question("老顾客的客单价", VOCABULARY, NOW).status != "ok"  # 老 of 老顾客 is content


@pytest.mark.parametrize(
    ("question", "first", "days"),
    [
        ("双十一的营业额", date(2025, 11, 11), 1),
        ("revenue on Halloween", date(2025, 10, 31), 1),
        ("国庆期间客流怎么样", date(2025, 10, 1), 7),
        ("how busy were we on Christmas Eve", date(2024, 12, 24), 1),  # before the 24th: last year's
    ],
)
def test_a_holiday_of_a_fixed_date_is_its_days_the_latest_begun(
    question: str, first: date, days: int
) -> None:
    plan = _ok(question)
    covered = _covered(plan, date(2024, 1, 1), date(2025, 12, 31))
    assert covered == [first + timedelta(days=i) for i in range(days)], (question, plan)
    r = parse_question("春节的营业额", VOCABULARY, NOW)  # the lunar calendar's: named
    assert r.status != "ok" and "春节" in r.not_understood


def test_a_forecast_of_a_day_named_without_a_year_is_of_the_next_one() -> None:
    """ "What will footfall look like on Christmas Eve?" was last year's Christmas Eve, counted
    (``aggregate``): a future question, and the day ahead is the horizon."""
    ahead = (date(2025, 12, 24) - NOW.date()).days
    for q in ("What will footfall look like on Christmas Eve?", "12月24号客流会是多少"):
        plan = _ok(q)
        assert plan["intent"] == "forecast" and plan["horizon"] == f"P{ahead}D", (q, plan)
        assert "time_range" not in plan.get("filters", {}), plan
    weekend = _ok("这个周末客流会不会更多")  # this weekend: up to its Sunday
    assert weekend["horizon"] == f"P{6 - NOW.weekday()}D"
    assert _ok("Project revenue for the rest of December")["horizon"] == f"P{31 - NOW.day}D"
    r = parse_question("forecast revenue for the rest of November", VOCABULARY, NOW)
    assert r.status != "ok" and "not the rest of this month" in (r.explanation or "")


def test_a_store_named_by_the_distinct_part_of_its_id_is_that_store() -> None:
    """ "Xuhui or Chaoyang?" named both stores' words as not understood (the ids are sh_xuhui_01,
    bj_chaoyang_02); a part common to several ids or a word of the lexicon is no store."""
    plan = _ok("compare dwell time in xuhui and chaoyang")
    assert plan["compare"] == {"dimension": "store_id", "groups": ["sh_xuhui_01", "bj_chaoyang_02"]}
    assert _ok("xuhui revenue last week")["filters"]["store_id"] == ["sh_xuhui_01"]
    vocab = Vocabulary(store_ids=("main_revenue_01", "main_north_02"), timezone="Asia/Shanghai")
    plan = _ok("revenue in north last week", vocab)
    assert plan["filters"]["store_id"] == ["main_north_02"]
    assert "store_id" not in _ok("revenue last week", vocab).get("filters", {})
    assert (
        parse_question("main revenue last week", vocab, NOW).plan.get("filters", {}).get("store_id") is None
    )


@pytest.mark.parametrize(
    ("question", "intent", "metric"),
    [
        ("顾客情绪负面的比例是越来越高了吗", "trend", "negative_emotion_rate"),
        ("投诉数会不会隔几天就来一波", "periodicity", "complaint_count"),
        (
            "Do days with more complaints also have a lower average order value?",
            "correlation",
            "complaint_count",
        ),
        (
            "When the promo announcement plays, do checkout queues follow within ten minutes?",
            "co_occurrence",
            None,
        ),
    ],
)
def test_more_wordings_of_a_kind_are_read(question: str, intent: str, metric: str | None) -> None:
    plan = _ok(question)
    assert plan["intent"] == intent and plan.get("target_metric") == metric, plan


@pytest.mark.parametrize("world", ["sim", "world2"])
def test_a_measure_words_wildcard_stretch_is_not_claimed_with_it(world: str) -> None:
    """ "how much do customers spend on toys per basket" was the average order value of every
    order: the measure's words (spend ... per basket) claimed the words between them. A wildcard
    stretch of a word table's pattern is left to the other extractors and to accounting."""
    vocab = VOCABULARY if world == "sim" else WORLD2
    for q, word in (
        ("how much do customers spend on toys per basket", "toys"),
        ("how much did shoppers spend at the pharmacy each order", "pharmacy"),
    ):
        r = parse_question(q, vocab, NOW)
        assert r.status != "ok" and word in r.not_understood, (q, r.plan, r.not_understood)
    assert _ok("how much do customers typically spend per order", vocab)["target_metric"] == "avg_order_value"
    plan = _ok("how much do people spend in the bakery per order")  # a stored value between: read
    assert plan["filters"]["attributes"] == {"product_category": "bakery"}


def test_the_sum_of_the_ranked_ones_is_named_and_back_is_content() -> None:
    """前三名商品的营业额加起来多少 was the top 3 listed (their sum asked); "footfall at the back
    door" was the entrance zone's (back was a function word, door a word of the entrance)."""
    for q, word in (
        ("前三名商品的营业额加起来多少", "加起来"),
        ("footfall at the back door", "back"),
    ):
        r = parse_question(q, VOCABULARY, NOW)
        assert r.status != "ok" and word in r.not_understood, (q, r.plan, r.not_understood)
    assert _ok("top 3 products by revenue")["top_k"] == 3


@pytest.mark.parametrize("world", ["sim", "world2"])
def test_a_kind_of_customer_and_a_count_over_a_size_are_never_the_whole_store(world: str) -> None:
    """大客户的客单价 was every customer's order value (大 and 客户 each a function word); "how many
    long queues" and 长时间停留的顾客有多少 were the mean queue and the mean stay."""
    vocab = VOCABULARY if world == "sim" else WORLD2
    for q, word in (
        ("大客户的客单价", "大客户"),
        ("the usual customers' order value", "usual customers"),
        ("总店的营业额", "总店"),  # the head store: 总 and 店 each a function word
        # compounds of function characters no list names: 店 + 主, 小 + 店, 新 + 顾客, 中 + 位 + 数
        ("店主在的时候营业额高吗", "店主"),
        ("小店的客流", "小店"),
        ("新顾客最近一个月的转化率是多少", "新顾客"),
        ("中位数客单价是多少", "中位数"),
    ):
        r = parse_question(q, vocab, NOW)
        assert r.status != "ok" and word in r.not_understood, (q, r.plan, r.not_understood)
    for q in ("how many long queues were there last week", "长时间停留的顾客有多少"):
        r = parse_question(q, vocab, NOW)
        assert r.status != "ok" and _said(r, "threshold"), (q, r.plan)
    assert _ok("排队的人有多少", vocab)["target_metric"] == "queue_length"
    # function compounds stay function words: a repeated character, 全店, 多少, 高低
    for q in ("最近六周员工出错率有没有在慢慢改善", "全店客流多少", "各店客流高低"):
        _ok(q, vocab)
    assert _ok("很多顾客的客单价", vocab)["target_metric"] == "avg_order_value"


def test_a_weather_asked_in_each_store_is_compared_within_each_store() -> None:
    """ "is order value higher on rainy days in each store" compared the stores on rainy days (`ok`,
    an answer to "which store is higher when it rains"): the weather is compared within each."""
    for q in ("is order value higher on rainy days in each store", "各门店下雨天的客单价是不是更高"):
        plan = _ok(q)
        assert plan["compare"]["dimension"] == "weather" and plan["compare"]["groups"][0] == "rain", plan
        assert plan["group_by"] == ["store_id"] and "attributes" not in plan.get("filters", {}), plan
    plan = _ok("which store has higher order value on rainy days")  # the stores, on rainy days
    assert plan["compare"] == {"dimension": "store_id"} and plan["filters"]["attributes"] == {
        "weather": "rain"
    }


def test_a_day_of_every_month_and_the_same_customer_are_never_dropped() -> None:
    """ "footfall on the last Friday of every month" was the latest Friday's, by month; "how many
    complaints came from the same customer" every complaint."""
    for q in ("footfall on the last Friday of every month", "每个月最后一个周五的客流", "每月1号的营业额"):
        r = parse_question(q, VOCABULARY, NOW)
        assert r.status != "ok" and "recurs every month" in (r.explanation or "") + _en(q, r), (q, r.plan)
    for q, word in (
        ("how many complaints came from the same customer", "the same customer"),
        ("同一个顾客投诉了几次", "同一个顾客"),
    ):
        r = parse_question(q, VOCABULARY, NOW)
        assert r.status != "ok" and word in r.not_understood, (q, r.plan, r.not_understood)
    last_friday = _ok("footfall on the last Friday of November")["filters"]["time_range"]
    assert last_friday["since"].startswith("2025-11-28")


def _en(question: str, r: Any) -> str:
    """The Chinese refusal's reason said as the English one's test reads it ("每个月都有")."""
    return "recurs every month" if "每个月都有" in (r.explanation or "") else ""


def test_one_store_pointed_at_in_a_memory_of_several_is_named() -> None:
    """那家店上周营业额 / "that store's revenue" were the whole fleet's at a hub (two stores in the
    simulator's vocabulary); in a memory of one store it is that store."""
    for q, word in (
        ("那家店上周营业额", "那家店"),
        ("what was that store's revenue last week", "that store"),
    ):
        r = parse_question(q, VOCABULARY, NOW)
        assert r.status != "ok" and word in r.not_understood, (q, r.plan, r.not_understood)
        assert parse_question(q, WORLD2, NOW).status == "ok", q  # one store: that one
    assert _ok("这个月营业额")["filters"]["time_range"]  # 这个 of 这个月 points at no store


@pytest.mark.parametrize(
    ("question", "first", "last"),
    [
        # "since last Monday" was last Monday alone; the weekend of a date was its Saturday alone
        ("revenue since last Monday", NOW.date() - timedelta(days=7), NOW.date() - timedelta(days=1)),
        ("上周一以来的营业额", NOW.date() - timedelta(days=7), NOW.date() - timedelta(days=1)),
        ("revenue since last weekend", NOW.date() - timedelta(days=2), NOW.date() - timedelta(days=1)),
        ("footfall on the weekend of November 8", date(2025, 11, 8), date(2025, 11, 9)),
        ("11月12号那个周末的客流", date(2025, 11, 15), date(2025, 11, 16)),  # a Wednesday: its week's
        # "this time last week" was the whole of last week
        ("footfall this time last week", NOW.date() - timedelta(days=7), NOW.date() - timedelta(days=7)),
        ("上周的今天客流多少", NOW.date() - timedelta(days=7), NOW.date() - timedelta(days=7)),
    ],
)
def test_days_of_a_named_week_open_ranges_and_a_weekend_of_a_date_is_two_days(
    question: str, first: date, last: date
) -> None:
    covered = _covered(_ok(question), date(2025, 9, 1), NOW.date() - timedelta(days=1))
    assert (covered[0], covered[-1]) == (first, last), (question, covered[0], covered[-1])


def test_two_parts_of_the_day_against_each_other_are_refused_not_one_against_the_rest() -> None:
    """下午比上午忙吗 was the afternoon against every other hour (the evening too): no plan sets two
    spans of hours side by side; one part against the rest of the day is still compared."""
    # 上午和下午哪个时段客单价更高 was a held-out question expected to compare by hour (it compared the
    # morning with every other hour)
    for q in (
        "下午比上午忙吗",
        "is queue length higher in the morning or the evening",
        "上午和下午哪个时段客单价更高",
    ):
        r = parse_question(q, VOCABULARY, NOW)
        assert r.status != "ok" and _said(r, "two_dayparts"), (q, r.plan)
    assert _ok("is the evening busier")["compare"] == {"dimension": "hour"}
    assert _ok("晚上7点到9点的负面情绪比例是不是比白天高？")["filters"]["hours"] == [19, 20]  # 白天: the rest
    assert _ok("上午10点比晚上8点人多吗")["compare"] == {"dimension": "hour", "groups": [10, 20]}


@pytest.mark.parametrize(
    "question",
    [
        "is revenue higher on weekends than on rainy days",
        "compare footfall on rainy weekends with sunny weekdays",
        "do rainy Mondays have fewer customers than sunny Fridays",
        "is the bakery busier than the wine zone on weekends",
        "周末下雨天和工作日晴天的客流比一比",
    ],
)
def test_groups_of_two_kinds_set_against_each_other_are_refused(question: str) -> None:
    """ "is revenue higher on weekends than on rainy days" compared weekends with weekdays on rainy
    days; "rainy weekends with sunny weekdays" rain with sun on every day: one plan compares one
    field's groups."""
    r = parse_question(question, VOCABULARY, NOW)
    assert r.status != "ok" and _said(r, "crossed"), (question, r.plan)


@pytest.mark.parametrize(
    ("question", "by"),
    [
        ("is revenue higher on rainy days than on sunny days in the bakery", "weather"),
        ("is the fresh zone busier on weekends than on weekdays", "is_weekend"),
        ("生鲜区周末比工作日客流多吗", "is_weekend"),
        ("周末人是不是比平时多", "is_weekend"),
        ("促销日比平时营业额高吗", "promotion"),
    ],
)
def test_a_field_said_for_both_sides_is_a_filter_of_one_comparison(question: str, by: str) -> None:
    assert _ok(question)["compare"]["dimension"] == by


def test_hours_apart_are_said_apart_and_two_clock_hours_compared_need_no_filter() -> None:
    """上午10点比晚上8点人多吗 kept hours 10 and 20, said "10:00-21:00" (every hour between)."""
    from edge.analysis.interpretation import _filter_words

    assert _filter_words({"hours": [17, 18, 20]}, "en") == ["hours 17:00-19:00, 20:00-21:00"]
    assert _filter_words({"hours": [8, 9, 10, 11]}, "zh") == ["时段 08:00-12:00"]
    plan = _ok("上午10点比晚上8点人多吗")
    assert plan["compare"] == {"dimension": "hour", "groups": [10, 20]} and "hours" not in plan.get(
        "filters", {}
    )


def test_the_stores_combined_is_their_total() -> None:
    """ "what's the combined revenue of both stores" named "combined" (its total is the value)."""
    for q in ("what's the combined revenue of both stores", "the two stores' revenue combined"):
        plan = _ok(q)
        assert plan["intent"] == "aggregate" and len(plan["filters"]["store_id"]) == 2, plan


def test_a_subject_asked_with_the_records_asked_is_a_retrieval() -> None:
    """上周顾客投诉了什么，给我看看记录 asks to see the complaints (the subject refusal's advice)."""
    plan = _ok("上周顾客投诉了什么，给我看看记录")
    assert plan["intent"] == "retrieve" and plan["filters"]["event_type"] == ["complaint"]
    assert parse_question("what did the top 3 products bring in combined", VOCABULARY, NOW).status != "ok"


@pytest.mark.parametrize(
    ("question", "path", "value"),
    [
        # "the return rate" was an event count's trend (return a stored topic, rate a function word)
        ("How has the return rate trended since October?", None, None),
        # weekends or rainy days: groups of two kinds
        ("Are queues longer on weekends or on rainy days?", None, None),
        ("国庆节当天的投诉有几条", "filters.time_range.until", "2025-10-02T00:00:00+08:00"),
        ("只看A区货架，周末和工作日的平均停留时长有差别吗", "filters.attributes", {"zone": "shelf_a"}),
        ("按星期几拆分过去8周的客流，哪天贡献最大", "group_by", ["day_of_week"]),
        ("Do rainy days get more complaints than other days?", "compare", {"dimension": "weather"}),
        ("staff_07上个月的失误记录给我看看", "intent", "retrieve"),
        ("customer_123最近两周的进店记录", "intent", "retrieve"),
        (
            "What was the negative emotion rate between 19:00 and 21:00 on rainy days last month?",
            "filters.hours",
            [19, 20],
        ),
        ("How did queue length in the 6pm hour trend in November, day by day?", "filters.hours", [18]),
        (
            "How often do staff errors and complaints occur within 2 minutes of each other?",
            "pair.window_seconds",
            120,
        ),
        (
            "Co-occurrence of promotion broadcasts and purchases within 30 minutes",
            "pair.window_seconds",
            1800,
        ),
        (
            "Top 5 wine & spirits products by revenue last month",
            "filters.attributes",
            {"product_category": "wine_spirits"},
        ),
        (
            "Any stores with odd revenue in the first ten days of December?",
            "filters.time_range.until",
            "2025-12-11T00:00:00+08:00",
        ),
        ("11月的最后三天营业额", "filters.time_range.since", "2025-11-28T00:00:00+08:00"),
        ("酒水类和水果类的订单数比一比", "compare.groups", ["wine_spirits", "fruit"]),
        ("阴天跟雨天比，顾客负面情绪比例高不高", "compare.groups", ["cloudy", "rain"]),
        ("上个月每逢周六的订单数加起来一共多少？", "filters.days_of_week", [5]),
        ("销售额有没有以周为单位的规律？", "intent", "periodicity"),
        (
            "My boss wants to know the conversion rate on Saturdays and Sundays in October.",
            "filters.days_of_week",
            [5, 6],
        ),
        ("老板想知道上个月的营业额", "intent", "aggregate"),
        ("avg queue length at the tills in the last 14 days pls", "filters.time_range", {"last": "P14D"}),
    ],
)
def test_wordings_of_development_set_four(question: str, path: str | None, value: Any) -> None:
    """Misses of ``tests/data/dev4`` (read while tuning), each a kind: None means refused."""
    _read_as(question, path, value)


def _read_as(question: str, path: str | None, value: Any) -> None:
    """The plan's value at the dotted ``path`` is ``value``; no path: refused (with the reason
    ``value`` of the said table, when given)."""
    if path is None:
        r = parse_question(question, VOCABULARY, NOW)
        assert r.status != "ok" and (value is None or _said(r, value)), (question, r.plan)
        return
    cur: Any = _ok(question)
    for part in path.split("."):
        cur = cur[part]
    assert cur == value, (question, cur)


def test_a_store_named_by_its_district_in_chinese_is_that_store() -> None:
    """徐汇店 / 朝阳店 were stores called 徐汇 and 朝阳 (none in the memory, so refused): a Chinese
    place is matched to a store id by its pinyin, 北京 of 北京朝阳店 by its initials."""
    assert _ok("上个月徐汇店的转换率是多少？")["filters"]["store_id"] == ["sh_xuhui_01"]
    plan = _ok("徐汇店和朝阳店上个月的客单价谁高？")
    assert plan["compare"] == {"dimension": "store_id", "groups": ["sh_xuhui_01", "bj_chaoyang_02"]}
    assert _ok("北京朝阳店上周客流")["filters"]["store_id"] == ["bj_chaoyang_02"]  # 朝: chao, not zhao
    assert _ok("南京路店的营业额")["filters"]["store_id"] == ["南京路"]  # no such store: as asked
    # initials alone never name a store (深圳 read 深怀 has the initials sh of sh_xuhui_01)
    assert _ok("深圳南山店上个月的营业额是多少")["filters"]["store_id"] == ["深圳南山"]


@pytest.mark.parametrize(
    ("question", "stores"),
    [
        ("北京店昨天的客单价是多少？", ["bj_chaoyang_02"]),
        ("What was the Beijing store's footfall yesterday?", ["bj_chaoyang_02"]),
        ("上海店这个月被投诉了几次？", ["sh_xuhui_01"]),  # 上 begins no other place here
        ("北京和上海的客单价谁高", ["bj_chaoyang_02", "sh_xuhui_01"]),  # bare, no 店
        (
            "Shanghai vs Beijing - who had the higher average order value last month?",
            ["sh_xuhui_01", "bj_chaoyang_02"],
        ),
        # a place or city whose initials are no store's, or no city's: as asked (refused by the memory)
        ("沙河店的客流", ["沙河"]),  # sh by chance: no city
        ("Footfall at the Shenzhen store last week", ["shenzhen"]),  # sz, not sh (圳 read huai)
        ("广州店上个月卖了多少钱？", ["广州"]),  # gz: no store's
    ],
)
def test_a_city_names_the_store_whose_id_has_its_initials(question: str, stores: list[str]) -> None:
    """北京店 and "the Beijing store" were a store called 北京 (refused): a city of
    ``NAMING_WORDS.cities`` names the one store whose id has its initials as a part (bj)."""
    plan = _ok(question)
    assert (plan.get("compare") or {}).get("groups") or plan["filters"]["store_id"] == stores, plan
    if "compare" in plan:
        assert plan["compare"]["groups"] == stores


def test_no_two_cities_share_initials() -> None:
    """Else a question about one would be answered for the other's store."""
    initials = [next(iter(vm._city_initials(c))) for c in lx.NAMING_WORDS["cities"]]
    assert len(set(initials)) == len(initials)


@pytest.mark.parametrize(
    ("question", "word"),
    [
        ("北京时间昨天的营业额是多少", "北京"),  # Beijing time, not the Beijing store
        ("What was revenue yesterday in Beijing time?", "beijing"),
        ("上海朝阳店营业额", "上海"),  # a city and another store's district: which?
        ("上海的北京店营业额", "上海"),
        ("the Beijing Xuhui store revenue", "beijing"),
        ("Chaoyang store in Shanghai revenue", "shanghai"),
    ],
)
def test_a_city_beside_another_store_or_in_another_word_is_named(question: str, word: str) -> None:
    r = parse_question(question, VOCABULARY, NOW)
    assert r.status != "ok" and word in r.not_understood, (r.plan, r.not_understood)


def test_a_quantity_on_days_of_a_kind_no_field_records_is_refused_not_correlated() -> None:
    """ "how many complaints on busy days" was the correlation of complaints with footfall; "revenue
    per staff hour" a breakdown by staff and hour. How two measures go together is still read."""
    for q, reason in (
        ("how many complaints on busy days", "condition_days"),
        ("客流少的日子营业额多少", "condition_days"),
        ("revenue per staff hour last week", "per_person"),
    ):
        r = parse_question(q, VOCABULARY, NOW)
        assert r.status != "ok" and _said(r, reason), (q, r.plan)
    for q in (
        "is order value lower on busier days",
        "客流多的日子客单价是不是反而低",
        "排队长的时候转化率怎么样",
    ):
        assert _ok(q)["intent"] == "correlation", q


@pytest.mark.parametrize(
    ("question", "path", "value"),
    [
        # wrong `ok` answers of tests/data/dev5 (a hostile set, read while tuning)
        ("Delete yesterday's camera footage from the fresh section.", None, "change_asked"),
        ("把昨天生鲜区的监控视频删掉", None, "change_asked"),
        ("How much did the usual crowd spend last week?", None, None),
        ("店长在店的日子客单价是不是高一些？", None, None),
        (
            "Did the crowd at the tills get longer on promotion days than on ordinary days?",
            "target_metric",
            "queue_length",
        ),
        ("Which day of the week brings in the most walk-ins?", "target_metric", "footfall"),
        ("促销日顾客语气负面的占比是多少？", "intent", "aggregate"),  # 占比是多少 was a comparison
        ("下雨天平常一单多少钱？", "filters.attributes", {"weather": "rain"}),  # 平常: usually
        ("非促销日下雨天的客流", "filters.attributes", {"weather": "rain", "promotion": "false"}),
        ("排队越长，顾客说话带负面情绪的比例是不是越高？", "second_metric", "negative_emotion_rate"),
        ("顾客逛得越久，每单花得越多吗？", "second_metric", "avg_order_value"),
        ("How much did fruit bring in last week?", "filters.attributes", {"product_category": "fruit"}),
        (
            "What fraction of customer remarks sounded negative on promotion days?",
            "target_metric",
            "negative_emotion_rate",
        ),
        ("Average time people spent in aisle B in November", "filters.attributes", {"zone": "shelf_b"}),
        ("双十一那周的客流", "filters.time_range.since", "2025-11-10T00:00:00+08:00"),
        ("Forecast revenue for Christmas week", "intent", "forecast"),
    ],
)
def test_wordings_of_development_set_five(question: str, path: str | None, value: Any) -> None:
    _read_as(question, path, value)


def test_a_refused_pairing_is_never_re_read_as_another_kind_and_promotion_days_pair() -> None:
    """促销日和负面情绪有没有同时出现的规律 was refused by the rules (a promotion day was no item to
    pair) and then answered by the classifier as a periodicity of negative emotions; 圣诞节那周的排队
    会有多长 was last year's Christmas week, counted; "came in 3 days ago" a forecast in 3 days."""
    plan = _ok("促销日和负面情绪有没有同时出现的规律")
    assert plan["pair"] == {"a": "promotion=true", "b": "speech_emotion=negative"} and "filters" not in plan
    assert _ok("圣诞节那周的排队会有多长")["intent"] == "forecast"
    covered = _covered(_ok("How many customer inquiries came in 3 days ago?"), date(2025, 9, 1), NOW.date())
    assert covered == [NOW.date() - timedelta(days=3)]


@pytest.mark.parametrize(
    ("question", "path", "value"),
    [
        # misses of tests/data/dev6 (scored once unseen, then read)
        ("11月累计销售额", "intent", "aggregate"),  # 累计 alone: the total
        ("促销日哪个小时排队最长？", "group_by", ["hour"]),  # 哪个小 of 哪个小时 was "which is smaller"
        ("Total complaints from 2025-12-01 to 2025-12-07 inclusive", "intent", "aggregate"),
        ("12月1日到12月7日（含）一共多少条投诉？", "intent", "aggregate"),
    ],
)
def test_wordings_of_development_set_six_more(question: str, path: str, value: Any) -> None:
    assert _ok(question)[path] == value, question


@pytest.mark.parametrize(
    ("question", "first", "last"),
    [
        ("In the week starting 2025-11-12, what was the revenue?", date(2025, 11, 12), date(2025, 11, 18)),
        ("revenue in the week of November 12", date(2025, 11, 10), date(2025, 11, 16)),
        ("2025年11月12日那一周的营业额", date(2025, 11, 10), date(2025, 11, 16)),
    ],
)
def test_the_week_of_a_date_is_its_week_or_seven_days_from_it(question: str, first: date, last: date) -> None:
    covered = _covered(_ok(question), date(2025, 9, 1), NOW.date())
    assert (covered[0], covered[-1]) == (first, last), question


@pytest.mark.parametrize(
    ("question", "path", "value"),
    [
        ("Revenue on every other Monday since September", None, "recurs"),
        ("9月以来每隔一个周一的销售额", None, "隔着重复"),
        ("11月每天的累计销售额", None, "statistic"),
        ("running total of revenue in November", None, "statistic"),
        ("Across both stores, what was the staff error rate in September?", "intent", "aggregate"),
        ("店员出错率这两个月有改善吗？按周给我看下", "time_bucket", "week"),  # was grouped by staff
        ("staff error rate by staff member", "group_by", ["staff_id"]),
    ],
)
def test_wordings_of_development_set_six(question: str, path: str | None, value: Any) -> None:
    if path is None:
        r = parse_question(question, VOCABULARY, NOW)
        said_it = value in (r.explanation or "") or (value in STAGES["said"] and _said(r, value))
        assert r.status != "ok" and said_it, (question, r.plan, r.explanation)
        return
    plan = _ok(question)
    assert plan[path] == value and (path != "time_bucket" or "group_by" not in plan), (question, plan)


@pytest.mark.parametrize(
    ("question", "hours"),
    [
        # 晚高峰是几点 was the whole day's peak hour (晚 was a word of the peak, not of its hours)
        ("晚高峰是几点", [17, 18, 19, 20, 21, 22]),
        ("早高峰是什么时候", [8, 9, 10, 11]),  # 早高峰客流 is the visitors of that peak: named
        ("when is the after-work rush", [17, 18, 19, 20, 21, 22]),
        ("when is the lunch rush", [11, 12, 13]),
        ("when is the evening rush", [18, 19, 20, 21, 22]),
    ],
)
def test_the_peak_of_a_part_of_the_day_is_within_its_hours(question: str, hours: list[int]) -> None:
    plan = _ok(question)
    assert (plan["target_metric"], plan["filters"]["hours"]) == ("peak_hour", hours), plan


def test_the_top_few_within_each_group_is_refused_not_ranked_across_pairs() -> None:
    """每个品类卖得最好的三个商品 ranked the top 3 category × product pairs of the whole store."""
    for q in ("每个品类卖得最好的三个商品", "各区域投诉最多的员工"):
        r = parse_question(q, VOCABULARY, NOW)
        assert r.status != "ok" and _said(r, "top_in_each"), (q, r.plan)
    assert _ok("各区域投诉数排名")["group_by"] == ["zone"]
    assert _ok("which zone and hour has the most complaints")["group_by"] == ["zone", "hour"]


@pytest.mark.parametrize("world", ["sim", "world2"])
def test_a_kind_asked_is_a_field_or_named(world: str) -> None:
    """ "Which type of mistake do staff make most often" ranked the staff (`ok`): a kind of something
    no field records is named. A kind of product is its category, a kind of event its type."""
    vocab = VOCABULARY if world == "sim" else WORLD2
    for q, word in (
        ("Which type of mistake do staff make most often?", "type"),
        ("What kind of complaints do we get most?", "kind"),
    ):
        r = parse_question(q, vocab, NOW)
        assert r.status != "ok" and word in r.not_understood, (q, r.plan, r.not_understood)
    for q, word in (
        # by a kind of something a measure names ("by error type"), or 按投诉类型 (类 read as category)
        ("staff errors broken down by error type last month", "by error type"),
        ("complaints by complaint type", "by complaint type"),
        ("按投诉类型统计投诉", "按投诉类型"),
    ):
        r = parse_question(q, vocab, NOW)
        assert r.status != "ok" and word in r.not_understood, (q, r.plan, r.not_understood)
    assert _ok("Give me revenue by weather type", vocab)["group_by"] == ["weather"]
    for q in ("What type of product sells best?", "哪类商品卖得最好"):
        assert _ok(q, vocab)["group_by"] == ["product_category"], q
    for q in ("Which type of events happened most last week?", "上周都发生了哪些类型的事件，各占多少？"):
        plan = _ok(q, vocab)
        assert plan["group_by"] == ["event_type"] and plan["target_metric"] == "event_count", (q, plan)


@pytest.mark.parametrize(
    ("question", "group"),
    [
        ("哪个门店的员工失误率最高", ["store_id"]),  # 员工 names the measure; the store is asked
        ("哪3个区域员工失误率最高", ["zone"]),
        ("员工失误率最高的是谁", ["staff_id"]),  # who: a person
        ("哪位店员的差错率最高", ["staff_id"]),
        ("出错率最高的员工是谁", ["staff_id"]),
        ("哪几位员工失误率最高", ["staff_id"]),
        ("哪3个员工失误率最高", ["staff_id"]),
    ],
)
def test_a_measures_own_field_is_grouped_only_when_asked(question: str, group: list[str]) -> None:
    """哪个门店的员工失误率最高 ranked store × staff pairs: 员工 beside the rate is its name."""
    assert _ok(question)["group_by"] == group


@pytest.mark.parametrize(
    ("question", "second"),
    [
        # 前一周 after 上周 was the last 7 days: last week against itself, `ok`
        ("上周客流和前一周比怎么样", ("2025-12-01", "2025-12-08")),
        ("上个月和前一个月的营业额对比", ("2025-10-01", "2025-11-01")),
        ("How did last week's footfall stack up against the week before?", ("2025-12-01", "2025-12-08")),
        ("how did sales do yesterday compared to the day before", ("2025-12-13", "2025-12-14")),
        ("this month vs the previous month revenue", ("2025-11-01", "2025-12-01")),
        # a rolling span: the same span just before it
        ("the last two weeks of orders against the two weeks before", ("2025-11-17", "2025-12-01")),
    ],
)
def test_the_period_before_another_is_the_one_just_before_it(question: str, second: tuple[str, str]) -> None:
    periods = _ok(question)["compare"]["periods"]
    tr = periods[1]["time_range"]
    assert (tr["since"][:10], tr["until"][:10]) == second, periods


def test_the_period_before_alone_or_before_a_holiday() -> None:
    """Alone, 前一周 is the past week and "the previous month" the calendar one before this; "the
    week before Christmas" is not read as before another period (named, refused)."""
    assert _ok("前一周的客流")["filters"]["time_range"] == {"last": "P1W"}
    assert _ok("revenue the previous month")["filters"]["time_range"]["since"][:10] == "2025-11-01"
    r = parse_question("revenue in the week before Christmas", VOCABULARY, NOW)
    assert r.status != "ok" and any("week" in w for w in r.not_understood), r.not_understood


@pytest.mark.parametrize(
    ("question", "word"),
    [
        ("How was revenue on rainy days that came right after a sunny day?", "right after a sunny day"),
        ("revenue the day after a promotion day", "the day after a promotion day"),
        ("促销日的第二天客流多少", "第二天"),
    ],
)
def test_days_after_days_of_a_kind_are_named(question: str, word: str) -> None:
    """ "rainy days that came right after a sunny day" compared rainy with sunny days (`ok`): every
    word of the sequence was a function word or a value."""
    r = parse_question(question, VOCABULARY, NOW)
    assert r.status != "ok" and any(word in w for w in r.not_understood), (r.plan, r.not_understood)


def test_a_rates_events_counted_by_a_field_are_no_other_types() -> None:
    """ "how many angry complaints" counted every negative or angry voice (`ok`), complaints or not;
    上周有多少生气的顾客 ("how many") was the rate, a share."""
    r = parse_question("how many angry complaints last month", VOCABULARY, NOW)
    assert r.status != "ok" and "complaints" in r.not_understood, r.plan
    plan = _ok("上周有多少生气的顾客")
    assert plan["target_metric"] == "event_count" and plan["filters"]["attributes"]["speech_emotion"]
    assert _ok("上周生气的顾客占比多少")["target_metric"] == "negative_emotion_rate"


@pytest.mark.parametrize(
    "question",
    [
        "How many complaints last week were about the queue?",
        "上周有几条投诉是嫌排队太久的？",
        "关于排队的投诉有几条",
    ],
)
def test_what_events_are_about_is_their_topic_not_another_measure(question: str) -> None:
    """ "complaints about the queue" was refused ("queue" read as the queue measure, then unused)."""
    plan = _ok(question)
    assert plan["target_metric"] == "complaint_count" and plan["filters"]["attributes"] == {"topic": "queue"}


@pytest.mark.parametrize(
    ("question", "path", "value"),
    [
        # 大前天 was 前天 (大 a function character): the day before, `ok`
        ("大前天的营业额", "filters.time_range.since", "2025-12-12T00:00:00+08:00"),
        ("大后天会有多少客流", "horizon", "P3D"),
        ("forecast footfall for the day after tomorrow", "horizon", "P2D"),
        # a holiday of a year named: that year's (今年 was a second period, the holiday named)
        ("今年双十一那天销售额多少？", "filters.time_range.since", "2025-11-11T00:00:00+08:00"),
        (
            "What were sales on Singles' Day last year?",
            "filters.time_range.since",
            "2024-11-11T00:00:00+08:00",
        ),
        ("Christmas Eve last year revenue", "filters.time_range.since", "2024-12-24T00:00:00+08:00"),
        # a month of a year named: 今年11月 was this whole year and 11月 named
        ("今年11月的营业额", "filters.time_range.since", "2025-11-01T00:00:00+08:00"),
        ("revenue in November last year", "filters.time_range.since", "2024-11-01T00:00:00+08:00"),
    ],
)
def test_days_counted_from_today_and_holidays_of_a_year(question: str, path: str, value: str) -> None:
    _read_as(question, path, value)


def test_a_change_over_a_year_is_never_a_comparison_of_groups() -> None:
    """哪家店的销售额同比增长最多 compared the stores' revenue (`ok` at a hub): 同比 / 环比 (a change
    against another period) are named unless the plan compares periods."""
    r = parse_question("哪家店的销售额同比增长最多？", VOCABULARY, NOW)
    assert r.status != "ok" and "同比" in r.not_understood, r.plan
    assert "periods" in _ok("这个月营业额环比上个月怎么样")["compare"]
    periods = _ok("今年11月的客流和去年11月比怎么样？")["compare"]["periods"]
    assert [p["time_range"]["since"][:7] for p in periods] == ["2025-11", "2024-11"]


def test_which_store_inside_its_word_is_asked() -> None:
    """哪家店员工失误率高 was the whole fleet's rate (`ok`): 店员 took 哪家店's 店 (员工 is staff), and
    a which-word inside a field's word left unused was dropped. "哪…高" compares."""
    plan = _ok("哪家店员工失误率高")
    assert plan["intent"] == "compare" and plan["compare"]["dimension"] == "store_id", plan
    r = parse_question("哪家的客流", VOCABULARY, NOW)
    assert r.status != "ok" and "哪家" in r.not_understood
    assert _ok("哪个店员出错最多")["group_by"] == ["staff_id"]  # 店员: a staff member


@pytest.mark.parametrize(
    ("question", "wrong"),
    [
        # a breakdown of one store's figure is not every store's share
        ("break down Xuhui's revenue last month", "store_id"),
        ("徐汇店上个月营业额的构成", "store_id"),
        # a change by store is a trend, not a comparison of levels
        ("哪家店营业额涨得多", "compare"),
        ("哪家店营业额增长快", "compare"),
        # short forms that are words: sat (the verb), HR, "go with", "take in" after no subject
        ("How long have customers sat in the checkout queue last week?", "days_of_week"),
        ("HR: revenue by store last week", "hour"),
        ("let's go with revenue and footfall for last week", "correlation"),
        ("how long did checkout take in Xuhui yesterday", "revenue"),
    ],
)
def test_readings_that_were_too_wide_are_not_made(question: str, wrong: str) -> None:
    """A review of this session's readings found each `ok` for something else."""
    r = parse_question(question, VOCABULARY, NOW)
    assert r.status != "ok" or wrong not in str(r.plan), r.plan


@pytest.mark.parametrize(
    "question",
    [
        # what is left out is followed by more: a list, or a part of it
        "revenue excluding weekends and promotion days",
        "除了周末和雨天，营业额多少",
        "revenue last month excluding weekend mornings",
        "revenue excluding Xuhui and Chaoyang",
        # nothing left, or the days left out are the ones compared
        "revenue excluding Xuhui, excluding Chaoyang",
        "footfall on Saturday excluding weekends",
        "weekends vs weekdays revenue excluding weekends",
        # "leaving" alone is no exclusion (customers leaving)
        "How many customers were leaving on weekends?",
        "revenue yesterday vs the week before",  # a day against a week
        "revenue on Christmas this year vs last year",  # a day inside the years it is set against
        "最近顾客逛得更久了吗",  # longer than what? (a level was answered)
        "上周店员被投诉了几次",  # complaints carry no staff member (店员 was dropped)
    ],
)
def test_readings_that_do_not_match_the_question_whole_are_refused(question: str) -> None:
    """A review of this session's readings found each `ok` for something else: a leaving-out with
    more after it (the second item got the opposite filter), or nothing left (no filter at all);
    periods of other lengths; a comparative with nothing compared; a field's word dropped."""
    r = parse_question(question, VOCABULARY, NOW)
    assert r.status != "ok", r.plan


@pytest.mark.parametrize(
    "question",
    ["What about the queue yesterday?", "Tell me about queue length yesterday", "关于排队长度，上周平均多少"],
)
def test_about_the_subject_of_the_question_is_its_measure(question: str) -> None:
    """ "about" reads a topic only for events that are about something (complaints, inquiries)."""
    plan = _ok(question)
    assert plan["target_metric"] == "queue_length" and "attributes" not in plan.get("filters", {}), plan


def test_weekend_or_not_is_a_field_to_group_by() -> None:
    """按小时和是否周末拆解 grouped by hour and kept only weekends (是否周末 read as 周末)."""
    plan = _ok("按小时和是否周末拆解北京朝阳店最近三个月的客流")
    assert set(plan["group_by"]) == {"hour", "is_weekend"} and "days_of_week" not in plan["filters"], plan
    assert _ok("周末的客流")["filters"]["days_of_week"] == [5, 6]


def test_a_city_beside_its_own_stores_district_is_that_store() -> None:
    for q in (
        "What was the Beijing Chaoyang store's footfall last week?",
        "请统计上海徐汇店11月份的平均排队人数",
    ):
        assert len(_ok(q)["filters"]["store_id"]) == 1, q


@pytest.mark.parametrize(
    "question", ["酒类商品的营业额", "水果类商品上周卖了多少单", "bakery products revenue"]
)
def test_the_products_of_a_category_are_the_category(question: str) -> None:
    """酒类商品 was refused (商品, a grouping left unused): the head noun of the category named."""
    assert _ok(question)["filters"]["attributes"]["product_category"]
    assert "group_by" not in _ok(question)


# ----------------------------------------------- kinds found by dev10 (the quarter review), session 8


@pytest.mark.parametrize(
    "question",
    [
        "How many repeat customers have we had since September?",  # was a periodicity of every event
        "Break down staff errors by error type for each store since September",  # the classifier: anomalies
        "staff errors broken down by error type last month",
        "is revenue higher when we're on track",
    ],
)
def test_words_of_another_kind_are_named_with_the_encoder(question: str, store_text_embed: Any) -> None:
    """Each came back ``ok`` for something else with the store's encoder: "repeat" before a noun is
    no cycle; a grouping by a kind no field records is named whatever the intent."""
    r = parse_question(question, VOCABULARY, NOW, embed=store_text_embed)
    assert r.status != "ok", (question, r.plan)


def test_a_topic_word_is_not_a_which_question() -> None:
    """顾客在哪个区域停留最久 filtered dwell on the inquiries' topic "location" (在哪 of 在哪个区域)."""
    for q in ("只看十月份，顾客在哪个区域停留最久？", "投诉都集中在哪些区域？分区域列一下"):
        assert "attributes" not in _ok(q).get("filters", {}), q
    assert _ok("上周问位置的咨询有多少")["filters"]["attributes"] == {"topic": "location"}
    assert _ok("上周有多少咨询问收银台在哪")["filters"]["attributes"]["topic"] == "location"


@pytest.mark.parametrize(
    "question", ["九月到十一月进店的总人数是多少", "进店总共多少人", "how many entries last week"]
)
def test_the_people_who_came_in_are_footfall(question: str) -> None:
    """进店的总人数 counted entry events (a group of three is one): the people are footfall."""
    plan = _ok(question)
    assert plan["target_metric"] == "footfall" and "event_type" not in plan.get("filters", {}), plan


def test_an_effect_of_days_of_a_kind_within_a_period_compares_them() -> None:
    """ "did promotion days lift revenue this quarter": promotion days against the others, in it."""
    plan = parse_question("Did promotion days actually lift revenue this quarter?", VOCABULARY, NOW).plan
    assert plan["intent"] == "compare" and plan["compare"]["dimension"] == "promotion", plan
    assert plan["filters"]["time_range"] == {"since": "2025-10-01T00:00:00+08:00"}


def test_a_peak_hour_later_than_another_period_compares_them() -> None:
    """ "is the peak hour later in December than in September" was a trend of December alone."""
    plan = _ok("Is the peak hour later in December than it was in September?")
    assert plan["intent"] == "compare" and [p["label"] for p in plan["compare"]["periods"]] == [
        "in december",
        "in september",
    ]
    plan = _ok("is the peak hour later than last month")
    assert plan["intent"] == "compare" and plan["compare"]["periods"][1]["label"] == "last month", plan


@pytest.mark.parametrize(
    "question",
    [
        "Looking over the whole period, is there a weekly rhythm in orders?",
        "How is footfall split across the days of the week, over everything you have?",
        "所有数据里哪天营业额最高",
    ],
)
def test_the_whole_memory_named_is_read_and_said(question: str) -> None:
    r = parse_question(question, VOCABULARY, NOW)
    assert r.status == "ok" and "time_range" not in r.plan.get("filters", {}), r.plan
    assert r.read_as and r.read_as[-1][1] in ("all the memory holds", "记忆里的全部数据")
    # beside a period it is no reading of its own
    assert parse_question("revenue last week over the whole period", VOCABULARY, NOW).status != "ok"


def test_a_part_of_a_named_week_is_not_a_superlative() -> None:
    """12月第一周营业额 named 第一 as a ranking word of a value."""
    tr = _ok("两家店十二月第一周加起来收了多少钱")["filters"]["time_range"]
    assert tr == {"since": "2025-12-01T00:00:00+08:00", "until": "2025-12-08T00:00:00+08:00"}


def test_after_a_date_against_before_it_compares_the_two_sides() -> None:
    plan = _ok("上海店11月20号之后跟之前比，客单价变了多少")
    assert [p["label"] for p in plan["compare"]["periods"]] == ["before", "after"], plan


def test_a_kind_of_weather_is_the_weather() -> None:
    assert _ok("按天气类型看营业额")["group_by"] == ["weather"]


@pytest.mark.parametrize(
    ("question", "kept"),
    [
        ("is footfall higher than last month on weekends", {"days_of_week": [5, 6]}),
        ("周末客流比上个月高吗", {"days_of_week": [5, 6]}),
        ("is revenue on rainy days higher than last month", {"attributes": {"weather": "rain"}}),
    ],
)
def test_than_a_period_beside_days_of_a_kind_compares_the_periods(question: str, kept: dict) -> None:
    """周末客流比上个月高吗 compared weekends with weekdays within last month (``ok``): the side after
    "than" is a period, and the weekends are kept on both sides."""
    plan = _ok(question)
    assert [p["label"] for p in plan["compare"]["periods"]][1] in ("last month", "上个月"), plan
    assert {k: plan["filters"][k] for k in kept} == kept
    # two values of one field are the groups compared, whatever period is named
    assert _ok("is revenue higher on rainy days than sunny days last month")["compare"]["groups"] == [
        "rain",
        "sunny",
    ]


def test_did_weekends_lift_a_measure_compares_weekends() -> None:
    """ "did weekends boost revenue in November" was a daily trend of weekends (the classifier)."""
    plan = _ok("did weekends boost revenue in November")
    assert plan["compare"] == {"dimension": "is_weekend"} and plan["filters"]["time_range"]["since"] == (
        "2025-11-01T00:00:00+08:00"
    )


# --------------------------------- kinds found by dev11 (did it work, everywhere, spoken), session 8


def _range(question: str) -> dict:
    return dict(_ok(question)["filters"]["time_range"])


@pytest.mark.parametrize(
    ("question", "since", "until"),
    [
        ("pull up the videos of staff mistakes on the tenth of november", "2025-11-10", "2025-11-11"),
        ("revenue on december first", "2025-12-01", "2025-12-02"),
        ("footfall on the twenty-ninth of november", "2025-11-29", "2025-11-30"),
        ("average queue length since the 1st of december", "2025-12-01", None),  # was that day only
        ("revenue before the 3rd of november", None, "2025-11-03"),
        ("What was our conversion rate in the first two weeks of September?", "2025-09-01", "2025-09-15"),
        ("11月的最后两周营业额", "2025-11-17", "2025-12-01"),
        ("十月十八日那天收银台平均排几个人？", "2025-10-18", "2025-10-19"),
        ("乳制品九、十两个月的销售额加起来多少", "2025-09-01", "2025-11-01"),
        ("revenue for the September-to-November stretch", "2025-09-01", "2025-12-01"),
        ("revenue from 1 to 8 december", "2025-12-01", "2025-12-09"),
        ("Pull up the complaint recordings from 28 November", "2025-11-28", None),  # from: since
        ("12月1日那天之后的客流", "2025-12-01", None),
        ("revenue across September and October", "2025-09-01", "2025-11-01"),
        ("revenue from Dec 1 onwards", "2025-12-01", None),
    ],
)
def test_days_said_aloud_and_spans_of_a_month(question: str, since: str | None, until: str | None) -> None:
    """A day in words, "since the 1st of", the first n weeks of a month, a date with 那天, two months
    in a row, "across" two months."""
    tr = _range(question)
    assert (tr.get("since", "")[:10] or None, tr.get("until", "")[:10] or None) == (since, until), tr


def test_two_months_named_together_must_be_in_a_row() -> None:
    assert parse_question("九月和十一月两个月的销售额", VOCABULARY, NOW).status != "ok"
    assert _range("11月最后一个周六的客流")["since"][:10] == "2025-11-29"  # not the last week


@pytest.mark.parametrize(
    ("question", "since"),
    [
        ("staff error rate for staff_07 since the training on november tenth", "2025-11-10"),
        ("revenue since the campaign launch on 1 december", "2025-12-01"),
        ("revenue since we rolled out the loyalty app on december first", "2025-12-01"),
        ("从十一月十七号新陈列上线到现在 平均排队几个人", "2025-11-17"),
    ],
)
def test_what_happened_on_a_date_names_the_date(question: str, since: str) -> None:
    """ "since the training on 10 November" read that day alone (since dropped) or was refused: what
    happened on a date the range opens at is that date's name, said as a pivot's event is."""
    assert _range(question)["since"][:10] == since


@pytest.mark.parametrize(
    "question",
    [
        "error rate of staff we hired since Nov 1",  # a clause of a noun: who, not when
        "we moved the bakery shelves on the twenty fourth of november um did we take more money on bakery stuff after that than before",
    ],
)
def test_an_act_that_is_no_event_of_a_date_is_named(question: str) -> None:
    assert parse_question(question, VOCABULARY, NOW).status != "ok"


def test_each_store_on_its_own_is_compared_within_each() -> None:
    """ "did the queue drop after 1 December in both stores, or only in one" pooled the two stores."""
    plan = _ok("Did the queue drop after 1 December in both stores, or only in one of them?")
    assert plan["group_by"] == ["store_id"] and plan["compare"]["periods"], plan
    plan = _ok("Rainy days versus sunny days, average order value, for each store, since October.")
    assert plan["compare"]["groups"] == ["rain", "sunny"] and plan["group_by"] == ["store_id"], plan
    assert _ok("compare conversion on weekends vs weekdays for each store")["group_by"] == ["store_id"]
    # a plan that pools them names the words; "both stores" together is the two pooled
    r = parse_question("两家店的销售额是不是都有每周的规律", VOCABULARY, NOW)
    assert r.status != "ok" and "都" in r.not_understood
    assert "group_by" not in _ok("Total revenue for both stores combined in November?")


def test_which_of_two_stores_named_compares_them() -> None:
    """两家店十一月的客单价哪家高 pooled the two stores (哪家 was dropped)."""
    for q in ("两家店十一月的客单价哪家高", "上海店和北京店十一月的客单价哪家高"):
        assert _ok(q)["compare"]["dimension"] == "store_id", q


def test_more_and_more_or_less_and_less_is_a_course() -> None:
    """越来越长还是越来越短 compared the wine zone with the other zones (还是 read as "or")."""
    plan = _ok("酒水区的停留时长最近一个月是越来越长还是越来越短")
    assert plan["intent"] == "trend" and plan["filters"]["attributes"] == {"zone": "wine"}, plan


def test_fillers_of_speech_are_function_words() -> None:
    plan = _ok(
        "so we ran the training on the tenth of november um did the staff error rate actually go down after that compared to before"
    )
    assert (
        plan["intent"] == "compare"
        and plan["compare"]["periods"][1]["time_range"]["since"][:10] == "2025-11-10"
    )


@pytest.mark.parametrize(
    "question",
    [
        "complaints about the new layout since 1 December",  # the subject, not the date's name
        "revenue from the loyalty campaign since December 1",
        "12月1日以来会员活动的营业额",
        "how many repeat visitors in November",
        "促销日客流比上个月高吗",  # promotion days are no filter a comparison of periods keeps
        "was the queue shorter after 1 December by hour",  # a bucket no plan of two periods has
        "was the queue shorter after 1 December, broken down separately by hour",
        "was footfall higher on 6 and 13 December",
        "what was the span of daily revenue in November",
        "revenue on the first december weekend",
    ],
)
def test_words_near_the_new_readings_are_still_named(question: str) -> None:
    """From a review of this session's readings: each came back ``ok`` for something else."""
    assert parse_question(question, VOCABULARY, NOW).status != "ok"


def test_the_events_of_a_type_asked_for_are_counted() -> None:
    for q in ("How many customer entry events were recorded", "进店事件有多少条"):
        assert _ok(q)["target_metric"] == "event_count", q
    assert _ok("每个店员的失误次数")["group_by"] == ["staff_id"]
    assert _ok("compare November and October revenue")["compare"]["periods"][1]["label"] == "october"


@pytest.mark.parametrize(
    "question",
    [
        "Does Beijing have the same weekly rhythm in footfall that Shanghai has?",
        "is the weekly cycle in revenue the same at xuhui and chaoyang",
    ],
)
def test_stores_said_alike_are_never_pooled(question: str) -> None:
    """A cycle "the same at Xuhui and Chaoyang" was one cycle of the two stores pooled (``ok``)."""
    r = parse_question(question, VOCABULARY, NOW)
    assert r.status != "ok" and "the same" in r.not_understood, r.plan


# -- session 9: kinds found by the last review and by wordings of grouping ------------------------


@pytest.mark.parametrize(
    ("question", "within"),
    [
        ("两家店的客流比上个月高吗", "store_id"),
        ("各店客流比上个月高吗", "store_id"),
        ("each store's footfall compared with last month", "store_id"),
        ("is footfall higher than last month in each zone", "zone"),
    ],
)
def test_than_a_period_asked_by_a_field_compares_the_periods_within_each(question: str, within: str) -> None:
    """两家店各自的客流比上个月高吗 compared the two stores within last month ("than last month" dropped)."""
    plan = _ok(question)
    periods = plan["compare"]["periods"]
    assert plan["group_by"] == [within], plan
    assert periods[1]["time_range"] == {
        "since": "2025-11-01T00:00:00+08:00",
        "until": "2025-12-01T00:00:00+08:00",
    }
    assert periods[0]["time_range"] == {"since": "2025-12-01T00:00:00+08:00"}


def test_a_peak_on_days_of_a_kind_later_than_a_period_compares_the_periods() -> None:
    """ "is the peak hour on weekends later than last month" was the course of last month's weekends."""
    plan = _ok("is the peak hour on weekends later than last month")
    assert plan["intent"] == "compare" and len(plan["compare"]["periods"]) == 2, plan
    assert plan["filters"]["days_of_week"] == [5, 6]


def test_a_stored_value_inside_the_name_of_a_dates_event_is_no_filter() -> None:
    """ "footfall since the rain on Nov 3" kept rain as a filter; "the new cashier training on Nov 20"
    filtered on the checkout zone."""
    r = parse_question("footfall since the rain on Nov 3", VOCABULARY, NOW)
    assert r.status != "ok" and r.not_understood == ("rain",), r
    for q in (
        "Did complaints drop in the week after the new cashier training on Nov 20?",
        "since we moved the bakery shelves on 24 Nov, how is revenue",
        "did revenue go up after we moved the shelves on 24 November",
    ):
        assert "attributes" not in _ok(q).get("filters", {}), q
    # a value outside the event's name is still a filter
    assert _ok("revenue in the bakery since the training on 10 November")["filters"]["attributes"] == {
        "product_category": "bakery"
    }


def test_than_before_a_date_compares_the_days_around_it() -> None:
    """ "is the queue shorter since 1 December than before" was the course since 1 December."""
    for q in ("is the queue shorter since 1 December than before", "12月1日以来排队比之前短了吗"):
        periods = _ok(q)["compare"]["periods"]
        assert periods[1]["time_range"]["since"][:10] == "2025-12-01", q


def test_an_event_types_word_the_plan_does_not_use_is_named() -> None:
    """进店的总人数和成交单数 answered the orders only: 进店 was "finished" by the function word 店."""
    r = parse_question("进店的总人数和成交单数", VOCABULARY, NOW)
    assert r.status != "ok" and "进店" in r.not_understood, r


@pytest.mark.parametrize(
    "question",
    [
        "revenue by payment type",
        "revenue by customer type",
        "revenue by customer",
        "complaints by staff type",
        "revenue by store type",
        "footfall by zone type",
    ],
)
def test_a_grouping_by_what_no_field_records_is_named(question: str) -> None:
    """ "revenue by payment type" was the whole store's revenue (payment and type read as nothing)."""
    r = parse_question(question, VOCABULARY, NOW)
    assert r.status != "ok" and any(w.startswith("by ") for w in r.not_understood), r


def test_by_as_an_amount_an_agent_or_a_fields_kind_is_read() -> None:
    assert _ok("Top 3 zones by average dwell time this month")["group_by"] == ["zone"]
    assert _ok("Are customer inquiries usually followed by staff guidance?")["intent"] == "co_occurrence"
    assert _ok("revenue by weather type")["group_by"] == ["weather"]
    for q in ("revenue by product type", "按商品类型拆分营业额", "revenue by item kind"):
        assert _ok(q)["group_by"] == ["product_category"], q


@pytest.mark.parametrize(
    ("question", "other"),
    [
        ("is revenue higher than in Q3", "2025-07-01"),
        ("is footfall higher than on 1 December", "2025-12-01"),
        ("is revenue lower than it was in October", "2025-10-01"),
        ("is footfall lower than it was last month", "2025-11-01"),
    ],
)
def test_than_a_period_after_a_preposition_or_it_was_is_the_other_side(question: str, other: str) -> None:
    """ "is revenue higher than in Q3" was Q3's total; "than it was in October" October's course."""
    periods = _ok(question)["compare"]["periods"]
    assert periods[1]["time_range"]["since"][:10] == other, periods
    assert periods[0]["time_range"]["since"] == periods[1]["time_range"]["until"]


@pytest.mark.parametrize(
    ("question", "word"),
    [
        ("was footfall up last week", "up"),
        ("is revenue higher last week", "higher"),
        ("did the queue get longer yesterday", "longer"),
        ("is the queue shorter than before 1 December", "shorter"),
        ("上个月的客流比以前多吗", "比以前"),
        ("is footfall higher this month than before", "than before"),
        ("complaints other than about the queue", "other than"),
        ("revenue other than dairy", "other than"),
        ("revenue by cashier", "cashier"),
        ("各个入口的客流", "入口"),
        ("每个收银台的排队长度", "收银台"),
    ],
)
def test_a_comparison_with_no_other_side_a_leaving_out_or_a_value_asked_by_is_named(
    question: str, word: str
) -> None:
    """Each was `ok` for one value: a level of last week ("up"), the queue topic itself ("other
    than"), the checkout zone's total ("by cashier": each cashier is no field)."""
    _named(question, word)


@pytest.mark.parametrize("question", ["total dwell time last week", "总停留时间", "排队人数一共多少"])
def test_a_total_of_a_mean_measure_is_refused(question: str) -> None:
    r = parse_question(question, VOCABULARY, NOW)
    assert r.status != "ok" and _said(r, "mean_total"), r.explanation


@pytest.mark.parametrize(
    ("question", "hours"),
    [
        ("footfall from 9am to noon", [9, 10, 11]),
        ("revenue from noon until 6pm", [12, 13, 14, 15, 16, 17]),
        ("早上8点到中午的客流", [8, 9, 10, 11]),
        ("中午到下午3点的客流", [12, 13, 14]),
        ("晚上9点到12点的客流", [21, 22, 23]),
        ("晚上10点到凌晨2点的客流", [0, 1, 22, 23]),
    ],
)
def test_hours_up_to_or_from_noon_and_across_midnight(question: str, hours: list[int]) -> None:
    """ "from 9am to noon" was 9 to 23 (noon no range's end); 晚上9点到12点 was 21 through 11."""
    assert _ok(question)["filters"]["hours"] == hours


def test_what_happened_on_a_date_told_in_chinese_is_no_filter() -> None:
    """自从11月20日下雨以来客流 filtered on rain: 下雨 is what happened that day."""
    plan = _ok("自从11月20日下雨以来客流怎么样")
    assert plan["filters"] == {"time_range": {"since": "2025-11-20T00:00:00+08:00"}}, plan
    assert "attributes" not in _ok("11月8号下雨之后客流有变化吗").get("filters", {})


@pytest.mark.parametrize(
    "question",
    [
        "is footfall in the fresh and wine sections higher than last month",
        "晚上的客流比昨天多吗",
        "is revenue by category and store higher than last month",
    ],
)
def test_groups_beside_a_period_after_than_are_refused(question: str) -> None:
    """ "fresh and wine higher than last month" compared fresh with wine within last month."""
    r = parse_question(question, VOCABULARY, NOW)
    assert r.status != "ok" and _said(r, "groups_and_period"), r.explanation


def test_the_same_day_a_week_or_a_month_back_and_a_year_on_year_month() -> None:
    """ "today vs the same day last week" was today against all of last week; 本月营业额同比去年
    this month against the whole of 2024."""
    periods = _ok("is revenue today higher than the same day last week")["compare"]["periods"]
    assert periods[1]["time_range"] == {
        "since": "2025-12-08T00:00:00+08:00",
        "until": "2025-12-09T00:00:00+08:00",
    }
    periods = _ok("revenue today vs the same day last month")["compare"]["periods"]
    assert periods[1]["time_range"]["since"][:10] == "2025-11-15"
    periods = _ok("本月营业额同比去年")["compare"]["periods"]
    assert periods[1]["time_range"] == {
        "since": "2024-12-01T00:00:00+08:00",
        "until": "2024-12-16T00:00:00+08:00",
    }


def test_a_store_word_at_the_end_of_a_list_of_fields_is_a_grouping() -> None:
    """ "revenue by zone and store last week" grouped by zone only ("store" a function word)."""
    assert _ok("revenue by zone and store last week")["group_by"] == ["zone", "store_id"]


@pytest.mark.parametrize(
    ("question", "edge", "day"),
    [
        ("双十一之后的客流", "since", "2025-11-11"),
        ("since Singles Day how is revenue", "since", "2025-11-11"),
        ("双十一之前的客流", "until", "2025-11-11"),
        ("footfall before Christmas Eve", "until", "2025-12-24"),  # this year's, still ahead
        ("国庆之后的客流", "since", "2025-10-08"),  # after the holiday's seven days
    ],
)
def test_before_or_after_a_holiday_opens_a_range(question: str, edge: str, day: str) -> None:
    """双十一之后的客流 was 11 November alone."""
    tr = _ok(question)["filters"]["time_range"]
    assert list(tr) == [edge] and tr[edge][:10] == day, tr


@pytest.mark.parametrize(
    ("question", "word"),
    [
        ("revenue around Nov 11", "around"),
        ("双十一前后营业额", "前后"),
        ("12月1日左右的客流", "左右"),
        ("雨天营业额占多少", "占多少"),
        ("revenue by promo day", "promo day"),
        ("which weekend in November was busiest", "weekend"),
        ("每个周末的营业额", "周末"),
    ],
)
def test_days_around_a_date_a_share_of_days_and_each_day_of_a_kind_are_named(
    question: str, word: str
) -> None:
    """Each was `ok` for one day or for the days pooled."""
    _named(question, word)


def test_events_related_to_a_value_are_about_it() -> None:
    """ "queue-related complaints" was a correlation of the queue with complaints."""
    for q in (
        "queue-related complaints",
        "complaints related to the queue last week",
        "排队相关的投诉有多少",
    ):
        plan = _ok(q)
        assert plan["intent"] == "aggregate" and plan["filters"]["attributes"] == {"topic": "queue"}, q
    assert _ok("is the queue related to complaints")["intent"] == "correlation"


def test_what_percent_of_a_total_is_every_parts_share() -> None:
    assert _ok("what percent of revenue is dairy")["group_by"] == ["product_category"]


@pytest.mark.parametrize("question", ["how many customers by 10am today", "今天到10点为止的客流"])
def test_up_to_an_hour_is_the_hours_before_it(question: str) -> None:
    """ "by 10am" was the 10 o'clock hour alone."""
    assert _ok(question)["filters"]["hours"] == list(range(10))


def test_a_measure_conditioned_on_a_value_after_by_is_read() -> None:
    """ "rank the stores by bakery revenue": the bakery's revenue ranks, no grouping by the bakery."""
    plan = _ok("Rank the stores by weekend revenue since October 1.")
    assert plan["group_by"] == ["store_id"] and plan["filters"]["days_of_week"] == [5, 6]
    plan = _ok("rank the stores by bakery revenue")
    assert plan["filters"]["attributes"] == {"product_category": "bakery"}


@pytest.mark.parametrize("question", ["早高峰客流", "morning peak footfall", "高峰时段的客流"])
def test_footfall_of_the_peak_is_no_peak_hour(question: str) -> None:
    """早高峰客流 (the visitors of the morning peak) was answered with an hour."""
    r = parse_question(question, VOCABULARY, NOW)
    assert r.status != "ok" and r.not_understood, r.plan
    assert _ok("what's the peak hour for footfall")["target_metric"] == "peak_hour"


def test_groupings_said_with_sorted_or_ordered_and_a_total_per_order() -> None:
    assert _ok("footfall grouped by zone")["group_by"] == ["zone"]
    assert _ok("products sorted by revenue")["group_by"] == ["product_id"]
    assert _ok("revenue per order")["target_metric"] == "avg_order_value"


@pytest.mark.parametrize(
    "question", ["is each store's revenue higher on weekends than on weekdays", "各店周末营业额比工作日高吗"]
)
def test_each_store_beside_groups_compares_them_within_each_store(question: str) -> None:
    plan = _ok(question)
    assert plan["compare"]["dimension"] == "is_weekend" and plan["group_by"] == ["store_id"], plan


def test_events_of_a_mean_measure_counted_and_counted_over_a_size() -> None:
    """ "number of queue events" was the mean queue length; "how many times was the queue long"
    counted every queue event."""
    for q in ("number of queue events", "停留记录有多少条"):
        plan = _ok(q)
        assert plan["target_metric"] == "event_count" and plan["filters"]["event_type"], q
    r = parse_question("how many times was the queue long", VOCABULARY, NOW)
    assert r.status != "ok" and _said(r, "threshold"), r.explanation


@pytest.mark.parametrize(
    "question",
    [
        "revenue the day after Christmas",
        "footfall the day before Singles Day",
        "revenue just after Singles Day",
    ],
)
def test_days_counted_from_a_holiday_are_refused(question: str) -> None:
    """ "the day after Christmas" became every day since Christmas (the day dropped)."""
    assert parse_question(question, VOCABULARY, NOW).status != "ok"


@pytest.mark.parametrize(
    ("question", "other"),
    [
        ("revenue yesterday vs the same day last week", "2025-12-07"),
        ("revenue on Dec 10 vs the same day last week", "2025-12-03"),
        ("revenue on 30 November vs the same day last month", "2025-10-30"),
        ("今天的营业额比上周同一天高吗", "2025-12-08"),
    ],
)
def test_the_same_day_back_is_counted_from_the_other_day(question: str, other: str) -> None:
    """ "yesterday vs the same day last week" was set against today a week back; 30 November
    against the same day last month was two days (30 October to 1 November)."""
    periods = _ok(question)["compare"]["periods"]
    tr = periods[1]["time_range"]
    assert tr["since"][:10] == other, periods
    days = (datetime.fromisoformat(tr["until"]) - datetime.fromisoformat(tr["since"])).days
    assert days == 1, tr


def test_whether_events_are_related_to_something_asks_a_link() -> None:
    """ "are complaints related to queues" became a count of complaints about the queue."""
    assert _ok("are complaints related to queues")["intent"] == "correlation"


def test_dev12_kinds_read_after_its_first_score() -> None:
    """Kinds of dev12 (scored unseen first: 67/100 answerable) read since, each checked once."""
    assert (
        _ok("staff_07's error rate since the nov 10 training")["filters"]["time_range"]["since"][:10]
        == "2025-11-10"
    )
    assert _ok("what percentage of last week's footfall did each store account for")["group_by"] == [
        "store_id"
    ]
    assert _ok("can you show me how footfall built up hour by hour yesterday")["intent"] == "trend"
    assert (
        _ok("since the training on 10 november has the error rate kept dropping week to week")["intent"]
        == "trend"
    )
    assert (
        _ok("How did the two stores' revenue move week by week over the past two months?")["intent"]
        == "trend"
    )
    assert len(_ok("上周单量比上上周涨了没")["compare"]["periods"]) == 2
    assert _ok("按区域排一下停留时长 要前三")["top_k"] == 3
    assert _ok("上个月店员出错率排个名")["group_by"] == ["staff_id"]
    assert _ok("上周哪三个小时单子最多")["group_by"] == ["hour"]
    assert _ok("酒类的订单占全部订单的多少")["group_by"] == ["product_category"]
    # not a question of the data: an instruction with "move" in it is no trend
    assert parse_question("Move staff_03's shifts to the weekend please", VOCABULARY, NOW).status != "ok"
    # "the fresh zone" is a value's head noun, not a grouping within which weekends are compared
    assert "group_by" not in _ok("is the fresh zone busier on weekends than on weekdays")


@pytest.mark.parametrize(
    ("question", "word"),
    [
        ("revenue is up?", "up"),
        ("footfall is down this week", "down"),
        ("busier today?", "busier"),
        ("did we get more customers today", "more customers"),
        ("revenue by weekend", "weekend"),
        ("how much revenue by Friday", "friday"),
        ("is the queue shorter than it was before Dec 1", "than it was"),
    ],
)
def test_a_measure_said_up_or_compared_and_days_after_by_are_named(question: str, word: str) -> None:
    """From the second review: each was the plain level of the period (or of every Friday)."""
    _named(question, word)


@pytest.mark.parametrize(
    ("question", "hours"),
    [
        ("下午2点到晚上12点的客流", list(range(14, 24))),
        ("中午12点到晚上12点的营业额", list(range(12, 24))),
        ("revenue from 6pm to midnight", list(range(18, 24))),
    ],
)
def test_hours_up_to_midnight(question: str, hours: list[int]) -> None:
    assert _ok(question)["filters"]["hours"] == hours


def test_a_total_of_people_queuing_is_refused() -> None:
    r = parse_question("总共有多少人排队", VOCABULARY, NOW)
    assert r.status != "ok" and _said(r, "mean_total"), r.explanation


@pytest.mark.parametrize(
    ("question", "word"),
    [
        ("how many customers will come on Saturday", "will"),
        ("footfall in the other store", "the other store"),
        ("其他店的客流", "其他店"),
    ],
)
def test_a_future_day_and_the_other_store_are_named(question: str, word: str) -> None:
    """ "how many customers will come on Saturday" was every past Saturday's footfall; "the other
    store" was both stores."""
    _named(question, word)


def test_stores_by_store_in_a_city_keeps_the_city() -> None:
    """ "revenue by store in Shanghai" was every store's revenue (Shanghai dropped)."""
    plan = _ok("revenue by store in Shanghai")
    assert plan["filters"]["store_id"] == ["sh_xuhui_01"], plan
    assert "filters" not in _ok("what share of revenue came from Xuhui")  # its share of all stores


def test_a_share_of_a_named_part_is_every_parts_share_never_the_part_alone() -> None:
    """From the third review: "what percent of complaints are in the fresh zone" kept the fresh zone
    as a filter and grouped by zone (100%); "dairy products" grouped the products within dairy."""
    for q, key in (
        ("what percent of complaints are in the fresh zone", "zone"),
        ("what share of footfall is in the fresh zone", "zone"),
        ("what percent of revenue comes from dairy products", "product_category"),
    ):
        plan = _ok(q)
        assert plan["group_by"] == [key] and "filters" not in plan, (q, plan)


@pytest.mark.parametrize(
    "question",
    [
        "footfall up to 10am today",
        "revenue up to Dec 10",
        "revenue by weekend vs weekday",
        "footfall every weekend",
    ],
)
def test_up_to_and_weekends_compared_or_every_weekend_are_read(question: str) -> None:
    """False refusals of the second batch's namings ("up", "by weekend", "every weekend")."""
    _ok(question)


def test_fewer_new_years_eve_and_till_close() -> None:
    """ "fewer complaints this week than last week" named "fewer"; "New Year's Eve" was 1 January;
    "from 8pm till close" filtered on the checkout zone (till)."""
    assert len(_ok("fewer complaints this week than last week?")["compare"]["periods"]) == 2
    assert _ok("revenue on New Year's Eve")["filters"]["time_range"]["since"][:10] == "2024-12-31"
    assert _ok("revenue from 8pm till close")["filters"] == {"hours": [20, 21, 22, 23]}
    assert _ok("revenue at the tills last week")["filters"]["attributes"] == {"zone": "checkout"}


def test_a_second_grouping_after_and_and_a_single_type_by_type() -> None:
    """ "revenue by store and day this week" dropped the day; "complaints by type" was one event
    type split by event type (100%); "staff errors by type" the rate by event type."""
    plan = _ok("revenue by store and day this week")
    assert plan["group_by"] == ["store_id"] and plan["time_bucket"] == "day", plan
    for q in ("complaints by type", "staff errors by type", "哪个环节的投诉明显增多？"):
        r = parse_question(q, VOCABULARY, NOW)
        assert r.status != "ok" and {"by type", "环节"} & set(r.not_understood), (q, r.not_understood)
    assert _ok("Break down all events by type for the past week")["group_by"] == ["event_type"]


def test_up_to_an_hour_of_a_day_and_through_an_hour() -> None:
    """截至今天上午10点 was the 10 o'clock hour of every day; "through 3pm" the 3 pm hour alone."""
    r = parse_question("截至今天上午10点的客流", VOCABULARY, NOW)
    assert r.status != "ok" and "上午10点" in r.not_understood, r.not_understood
    assert _ok("revenue through 3pm yesterday")["filters"]["hours"] == list(range(16))


def test_a_weather_asked_in_each_zone_is_compared_within_each_zone() -> None:
    """ "is footfall in each zone higher when it rains" compared the zones on rainy days."""
    for q in ("is footfall in each zone higher when it rains", "各区域下雨天客流更多吗"):
        plan = _ok(q)
        assert plan["compare"]["groups"][0] == "rain" and plan["group_by"] == ["zone"], plan


def test_a_week_a_year_back_keeps_its_weekdays() -> None:
    """ "this week vs the same week last year" was 15 December 2024, a Sunday: 52 weeks back."""
    periods = _ok("revenue last week vs the same week last year")["compare"]["periods"]
    since = datetime.fromisoformat(periods[1]["time_range"]["since"])
    assert since.date() == date(2024, 12, 9) and since.weekday() == 0, periods


def test_promotion_days_in_a_memory_that_names_its_promotions() -> None:
    """The second world labels its days ``aktion`` / ``none``: "revenue on promotion days" filtered
    on "true", a value it does not hold (refused by the engine as insufficient data)."""
    assert _ok("revenue on promotion days", WORLD2)["filters"]["attributes"] == {"promotion": "aktion"}
    assert _ok("促销日的营业额", WORLD2)["filters"]["attributes"] == {"promotion": "aktion"}
    assert _ok("revenue on promotion days")["filters"]["attributes"] == {"promotion": "true"}


@pytest.mark.parametrize(
    ("question", "word"),
    [
        ("was last weekend busier than the weekend before", "the weekend before"),
        ("footfall since 8am", "since 8am"),
    ],
)
def test_a_weekend_counted_from_another_and_since_an_hour_of_no_day_are_named(
    question: str, word: str
) -> None:
    """ "the weekend before" became weekends against weekdays within last weekend; "since 8am" the
    hours from 8 on every day of the memory."""
    _named(question, word)
    assert _ok("footfall since 8am today")["filters"]["hours"][0] == 8
