"""The action rule table: findings become recommendations / work orders / alerts, never from a
weak or non-ok result. Payloads come from the real engine on the simulated memory; the two rules
whose trigger the default simulation does not plant are checked on hand-made results."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from engine_data import Memory, full_memory

from edge.analysis.actions import RULES, decide
from edge.analysis.engine import run_plan
from edge.config import AnalysisConfig
from edge.memory.store import Store


@pytest.fixture(scope="module")
def env() -> Iterator[tuple[Memory, Any]]:
    mem = full_memory()
    store = Store.open(mem.path, readonly=True)
    yield mem, store.event_source()
    store.close()


def run(env: tuple[Memory, Any], plan: dict[str, Any]) -> dict[str, Any]:
    return run_plan(plan, env[1], question="q", now=env[0].now, config=AnalysisConfig())


def test_rain_order_value_recommends_tasting(env: tuple[Memory, Any]) -> None:
    p = run(
        env,
        {
            "intent": "compare",
            "target_metric": "avg_order_value",
            "language": "zh",
            "compare": {"dimension": "weather", "groups": ["rain", "sunny"]},
        },
    )
    assert p["action"]["type"] == "recommendation"
    assert p["action"]["params"]["rule"] == "rain_aov_tasting" and "试吃" in p["action"]["params"]["title"]


def test_footfall_spike_orders_an_evening_cashier(env: tuple[Memory, Any]) -> None:
    p = run(env, {"intent": "anomaly", "target_metric": "footfall"})
    assert p["action"]["type"] == "work_order" and p["action"]["params"]["rule"] == "evening_cashier"
    assert set(env[0].truth["footfall_anomaly_dates"]) <= set(p["action"]["params"]["dates"])


def test_queue_complaint_correlation_recommends_a_checkout(env: tuple[Memory, Any]) -> None:
    p = run(
        env, {"intent": "correlation", "target_metric": "queue_length", "second_metric": "complaint_count"}
    )
    assert p["action"]["type"] == "recommendation" and p["action"]["params"]["rule"] == "open_checkout"


def test_no_action_for_plain_breakdown(env: tuple[Memory, Any]) -> None:
    p = run(env, {"intent": "breakdown", "target_metric": "revenue", "group_by": ["hour"]})
    assert p["status"] == "ok" and p["action"] is None


def _payload(result: dict[str, Any], *, status: str = "ok", low: bool = False) -> dict[str, Any]:
    return {"status": status, "result": result, "low_confidence": low}


STAFF_PLAN = {
    "intent": "compare",
    "target_metric": "staff_error_rate",
    "compare": {
        "periods": [
            {"label": "before", "time_range": {"last": "P2W"}},
            {"label": "after", "time_range": {"last": "P1W"}},
        ]
    },
}


def test_staff_error_not_dropping_orders_retraining() -> None:
    same = {
        "groups": [{"key": "after", "value": 0.12, "n": 400}, {"key": "before", "value": 0.11, "n": 400}],
        "significant": False,
    }
    act = decide(STAFF_PLAN, _payload(same))
    assert act and act["type"] == "work_order" and act["params"]["rule"] == "staff_retraining"
    dropped = {
        "groups": [{"key": "before", "value": 0.12, "n": 400}, {"key": "after", "value": 0.05, "n": 400}],
        "significant": True,
    }
    assert decide(STAFF_PLAN, _payload(dropped)) is None


def test_complaint_anomaly_raises_an_alert() -> None:
    plan = {"intent": "anomaly", "target_metric": "complaint_count"}
    res = {
        "anomalies": [{"bucket": "2025-11-19", "value": 16, "expected": 5, "score": 8.1, "direction": "high"}]
    }
    act = decide(plan, _payload(res))
    assert act and act["type"] == "alert" and act["params"]["dates"] == ["2025-11-19"]
    assert decide(plan, _payload({"anomalies": []})) is None


def test_no_action_when_weak_or_not_ok() -> None:
    plan = {"intent": "anomaly", "target_metric": "complaint_count"}
    res = {
        "anomalies": [{"bucket": "2025-11-19", "value": 16, "expected": 5, "score": 8.1, "direction": "high"}]
    }
    assert decide(plan, _payload(res, low=True)) is None
    assert decide(plan, _payload(res, status="insufficient_data")) is None


def test_rule_table_is_data() -> None:
    assert {r.type for r in RULES} == {"recommendation", "work_order", "alert"}
    assert len({r.rule_id for r in RULES}) == len(RULES)


def test_a_staff_device_reads_how_the_question_was_read_first() -> None:
    from edge.services.action_rules import action_summary

    payload = {
        "summary": "客单价为 88。",
        "plan": {"language": "zh"},
        "interpretation": {
            "text": "计算的是客单价的数值，时间 2025-11-01 至 2025-11-30。",
            "not_understood": [],
        },
    }
    assert action_summary(payload) == "计算的是客单价的数值，时间 2025-11-01 至 2025-11-30。客单价为 88。"
    en = {"summary": "AOV is 88.", "plan": {"language": "en"}, "interpretation": {"text": "Computed AOV."}}
    assert action_summary(en) == "Computed AOV. AOV is 88."
    assert action_summary({"summary": "x"}) == "x"
