"""``answer()`` end to end: question -> parser -> plan -> operator -> honest payload.

Runs on the simulated 75-day memory (tests/engine_data.py) with the real rule parser.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from engine_data import Memory, full_memory

from edge.analysis.engine import AnalysisConfig, answer, build_filter, run_plan
from edge.analysis.parser import ParseResult
from edge.errors import PlanError
from edge.memory.store import Store


@pytest.fixture(scope="module")
def env() -> Iterator[tuple[Memory, Any]]:
    mem = full_memory()
    store = Store.open(mem.path, readonly=True)
    yield mem, store.event_source()
    store.close()


def test_chinese_question_answers_in_chinese(env: tuple[Memory, Any]) -> None:
    mem, source = env
    p = answer("下雨天和晴天相比，哪种天气客单价更高？", source, now=mem.now)
    assert p["status"] == "ok" and p["plan"]["intent"] == "compare"
    assert p["result"]["groups"][0]["key"] == "rain"
    assert "客单价" in p["summary"] and "显著" in p["summary"]
    assert p["action"] and p["action"]["type"] == "recommendation"
    assert p["elapsed_ms"] >= 0 and p["operator"]["name"] == "compare"


def test_english_question_answers_in_english(env: tuple[Memory, Any]) -> None:
    mem, source = env
    p = answer("Is queue length correlated with complaint count?", source, now=mem.now)
    assert p["status"] == "ok" and p["plan"]["intent"] == "correlation"
    assert "correlate" in p["summary"] and p["result"]["r"] > 0


def test_unsupported_question() -> None:
    mem = full_memory()
    store = Store.open(mem.path, readonly=True)
    try:

        def parser(question: str, vocab: Any, now: Any, **_: Any) -> ParseResult:
            return ParseResult(
                plan={}, status="unsupported", explanation="I cannot map this question.", language="en"
            )

        p = answer("what is the meaning of life?", store.event_source(), now=mem.now, parser=parser)
    finally:
        store.close()
    assert p["status"] == "unsupported" and p["plan"] == {} and p["result"] == {}
    assert p["summary"] == "I cannot map this question." and p["confidence"] == 0 and p["action"] is None


def test_forecast_question_is_refused(env: tuple[Memory, Any]) -> None:
    mem, source = env
    p = answer("Predict next month's footfall.", source, now=mem.now)
    assert p["status"] == "refused" and "trend" in p["summary"]


def test_question_beyond_memory_is_insufficient(env: tuple[Memory, Any]) -> None:
    mem, source = env
    p = answer("过去一年每周客流趋势怎么样？", source, now=mem.now)
    assert p["status"] == "insufficient_data" and p["result"] == {}
    assert any(mem.truth["start"] in m for m in p["missing"])


def test_low_confidence_says_weak_and_issues_no_action(env: tuple[Memory, Any]) -> None:
    mem, source = env
    cfg = AnalysisConfig(decay_base=1_000_000)
    p = answer("Is average order value higher on rainy days or sunny days?", source, now=mem.now, config=cfg)
    assert p["status"] == "ok" and p["low_confidence"] is True
    n = min(g["n"] for g in p["result"]["groups"][:2])
    assert p["confidence"] == pytest.approx(n / (n + 1_000_000), abs=1e-6)
    assert "weak" in p["summary"] and p["action"] is None


def test_min_evidence_is_configurable(env: tuple[Memory, Any]) -> None:
    mem, source = env
    plan = {
        "intent": "compare",
        "target_metric": "avg_order_value",
        "compare": {"dimension": "weather", "groups": ["rain", "sunny"]},
    }
    p = run_plan(plan, source, question="q", now=mem.now, config=AnalysisConfig(min_events_per_group=10**7))
    assert p["status"] == "insufficient_data" and any("rain" in m for m in p["missing"])


def test_invalid_plan_is_rejected(env: tuple[Memory, Any]) -> None:
    mem, source = env
    with pytest.raises(PlanError):
        run_plan(
            {"intent": "compare", "bogus": 1}, source, question="q", now=mem.now, config=AnalysisConfig()
        )


def test_build_filter_maps_plan_filters() -> None:
    from datetime import UTC, datetime

    plan = {
        "intent": "aggregate",
        "filters": {
            "store_id": ["s1"],
            "event_type": ["purchase"],
            "hours": [19, 20],
            "days_of_week": [5],
            "attributes": {"weather": "rain", "zone": ["a", "b"]},
            "entities": ["customer_1"],
            "time_range": {"last": "P1W"},
        },
    }
    now = datetime(2025, 12, 1, tzinfo=UTC)
    f = build_filter(plan, now, "Asia/Shanghai")
    assert f.store_ids == ("s1",) and f.event_types == ("purchase",) and f.hours == (19, 20)
    assert dict(f.attributes) == {"weather": ("rain",), "zone": ("a", "b")} and f.entities == ("customer_1",)
    assert f.until == now and f.since is not None and (now - f.since).days == 7


@pytest.mark.parametrize(
    ("intent", "result"),
    [
        ("aggregate", {"value": None, "n": 0}),
        ("trend", {"series": [], "slope_per_bucket": 0.0}),
        ("compare", {"groups": [], "diff_pct": None}),
        ("breakdown", {"parts": [], "top_contributor": None}),
        ("top_k", {"items": []}),
        ("co_occurrence", {"pairs": [], "window_seconds": 60}),
        ("correlation", {"r": None, "n": 0}),
        ("periodicity", {"period": None}),
        ("retrieve", {"events": []}),
        ("anomaly", {}),
    ],
)
def test_an_empty_result_is_never_ok(intent: str, result: dict[str, Any]) -> None:
    from edge.analysis import honesty

    assert honesty.empty_result(intent, result)
    filled = {k: ([1] if isinstance(v, list) else (v if v is not None else 1.0)) for k, v in result.items()}
    assert honesty.empty_result(intent, filled) == (intent == "anomaly" and not filled)


def test_a_filtered_range_is_covered_when_the_memory_holds_the_range() -> None:
    """Whether the memory holds a time range is a matter of the memory, not of how often the
    question's values occur: rainy days' revenue over a span that starts on a dry day is answered."""
    from datetime import UTC, datetime, timedelta

    from edge.analysis.testing import InMemorySource, MemEvent

    t0 = datetime(2025, 3, 3, tzinfo=UTC)
    evs = [
        MemEvent(
            f"e{d}-{i}",
            "s",
            t0 + timedelta(days=d, hours=10 + i),
            "purchase",
            {"order_amount": 10.0, "weather": "rain" if d >= 5 else "sunny"},
        )  # fmt: skip
        for d in range(14)
        for i in range(4)
    ]
    src = InMemorySource(evs, timezone="UTC")
    plan = {
        "intent": "aggregate",
        "target_metric": "revenue",
        "filters": {
            "attributes": {"weather": "rain"},
            "time_range": {"since": t0.isoformat(), "until": (t0 + timedelta(days=14)).isoformat()},
        },
    }
    p = run_plan(plan, src, question="q", now=t0 + timedelta(days=14), config=AnalysisConfig())
    assert p["status"] == "ok" and p["result"]["value"] == 9 * 4 * 10.0
    # a range the memory does not hold at all is still insufficient
    early = {
        **plan,
        "filters": {
            **plan["filters"],
            "time_range": {
                "since": (t0 - timedelta(days=30)).isoformat(),
                "until": (t0 + timedelta(days=14)).isoformat(),
            },
        },
    }
    assert (
        run_plan(early, src, question="q", now=t0 + timedelta(days=14), config=AnalysisConfig())["status"]
        == "insufficient_data"
    )


def test_a_comparison_of_periods_says_the_windows_it_compared() -> None:
    """Not the memory's span: the two windows, each with its store-local dates."""
    from datetime import UTC, datetime, timedelta

    from edge.analysis.testing import InMemorySource, MemEvent

    t0 = datetime(2025, 3, 3, tzinfo=UTC)
    evs = [
        MemEvent(
            f"e{d}-{i}", "s", t0 + timedelta(days=d, hours=10 + i), "purchase", {"order_amount": 10.0 + d}
        )
        for d in range(40)
        for i in range(3)
    ]
    periods = [
        {
            "label": "before",
            "time_range": {"since": "2025-03-10T00:00:00+00:00", "until": "2025-03-17T00:00:00+00:00"},
        },
        {
            "label": "after",
            "time_range": {"since": "2025-03-17T00:00:00+00:00", "until": "2025-03-24T00:00:00+00:00"},
        },
    ]
    plan = {
        "intent": "compare",
        "target_metric": "revenue",
        "compare": {"periods": periods},
        "language": "en",
    }
    p = run_plan(
        plan,
        InMemorySource(evs, timezone="UTC"),
        question="q",
        now=t0 + timedelta(days=40),
        config=AnalysisConfig(),
    )
    reading = p["interpretation"]
    assert reading["period"] == {"from": "2025-03-10", "to": "2025-03-23", "tz": "UTC"}
    assert (
        "before 2025-03-10 to 2025-03-16" in reading["text"]
        and "after 2025-03-17 to 2025-03-23" in reading["text"]
    )
