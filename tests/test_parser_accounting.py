"""Kinds of word accounting (edge.analysis.parser.accounting): what a reading uses is claimed,
what it does not use is named; neither more nor less.

Each test is one kind, over a few wordings in both languages, on the simulator's vocabulary:
- the rest of a word whose other part an extractor took (客 of 客人 when 人最多 was read), and an
  inflection of the measure's own word ("how many people visit" for visitors) are the measure's;
- "which days" is used only by a reading that answers day by day; a level reading of it (the
  total of the month) is never ``ok``;
- "by weekday" groups by the day of the week; "on weekdays" keeps Monday to Friday;
- "moments when ..." asks for the events (a retrieval), not a count of them.
"""

from __future__ import annotations

from datetime import datetime

import pytest

from edge.analysis.parser import parse_question
from edge.analysis.parser.accounting import _stem
from edge.sim.catalog import VOCABULARY

NOW = datetime(2025, 12, 15, 10, 0)


def _parse(q: str) -> tuple[str, dict, tuple[str, ...]]:
    res = parse_question(q, VOCABULARY, now=NOW)
    return res.status, res.plan, res.not_understood


@pytest.mark.parametrize(
    ("question", "metric"),
    [
        ("Does rain affect how many people visit?", "footfall"),
        ("一天中什么时候客人最多？", "footfall"),
        ("Were fewer shoppers visiting on rainy days?", "footfall"),
    ],
)
def test_rest_of_a_measure_word_is_the_measures(question: str, metric: str) -> None:
    status, plan, words = _parse(question)
    assert status == "ok", words
    assert plan["target_metric"] == metric


@pytest.mark.parametrize(
    ("question", "named"),
    [
        ("上个月鱼的销量是多少？", "鱼"),
        ("牛排区的顾客停留时间有多长？", "牛排"),
        ("How many visitors came by scooter last week?", "scooter"),
    ],
)
def test_an_unknown_word_beside_a_claimed_one_is_still_named(question: str, named: str) -> None:
    """Only a word actually in the question finishes a fragment: an unknown word is named."""
    status, _, words = _parse(question)
    assert status != "ok"
    assert any(named in w for w in words), words


def test_stem() -> None:
    assert _stem("visitors") == _stem("visit") == "visit"


@pytest.mark.parametrize(
    "question",
    [
        "上个月哪几天营业额特别低？",
        "Which days last month had abnormally low revenue?",
        "What days were unusually quiet in November?",
    ],
)
def test_which_days_is_answered_day_by_day(question: str) -> None:
    status, plan, words = _parse(question)
    assert status == "ok", words
    assert plan["intent"] == "anomaly" and plan.get("time_bucket") == "day"


@pytest.mark.parametrize(
    "question", ["上个月哪天营业额最高？", "Which day had the highest revenue last month?"]
)
def test_which_day_ranking_groups_by_date(question: str) -> None:
    status, plan, _ = _parse(question)
    assert status == "ok"
    assert plan["intent"] == "top_k" and plan["group_by"] == ["date"]


def test_which_days_never_claimed_by_a_level_reading() -> None:
    """Forced to read one level (the month's total), "which days" is named, not swallowed."""
    from edge.analysis.parser.core import _WHICH_DAYS, _cues_for

    assert _WHICH_DAYS not in _cues_for({"intent": "aggregate"})
    assert _WHICH_DAYS in _cues_for({"intent": "top_k", "group_by": ["date"]})
    assert _WHICH_DAYS in _cues_for({"intent": "anomaly", "time_bucket": "day"})


@pytest.mark.parametrize(
    "question",
    [
        "Show me footfall by weekday for the last 8 weeks",
        "What's revenue per weekday?",
        "按星期看一下上个月的客流",
    ],
)
def test_by_weekday_groups_by_day_of_week(question: str) -> None:
    status, plan, _ = _parse(question)
    assert status == "ok"
    assert "day_of_week" in plan["group_by"]
    assert "days_of_week" not in plan.get("filters", {})


def test_on_weekdays_filters_monday_to_friday() -> None:
    status, plan, _ = _parse("Average order value on weekdays last month")
    assert status == "ok"
    assert plan["filters"]["days_of_week"] == [0, 1, 2, 3, 4]
    assert not plan.get("group_by")


@pytest.mark.parametrize(
    "question",
    ["Find the moments when someone complained about stock", "Show me the times when the queue was long"],
)
def test_moments_when_is_a_retrieval(question: str) -> None:
    status, plan, _ = _parse(question)
    assert status == "ok"
    assert plan["intent"] == "retrieve"
