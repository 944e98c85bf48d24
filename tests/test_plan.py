"""The plan schema (package copy), validate_plan and resolve_time_range (edge.analysis.plan)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import jsonschema
import pytest

from edge.analysis.plan import add_months, plan_errors, plan_schema, resolve_time_range, validate_plan
from edge.errors import PlanError

SHARED_SCHEMA = Path(__file__).resolve().parents[1].parent / "shared" / "spec" / "plan.schema.json"


@pytest.mark.skipif(not SHARED_SCHEMA.exists(), reason="shared spec not present")
def test_package_schema_is_the_shared_contract() -> None:
    assert plan_schema() == json.loads(SHARED_SCHEMA.read_text(encoding="utf-8"))


def test_schema_is_a_valid_draft_2020_12_schema() -> None:
    schema = plan_schema()
    jsonschema.validators.validator_for(schema).check_schema(schema)
    assert schema["$schema"].endswith("2020-12/schema")


@pytest.mark.parametrize(
    "plan",
    [
        {"intent": "aggregate", "target_metric": "footfall"},
        {
            "intent": "trend",
            "target_metric": "revenue",
            "time_bucket": "week",
            "filters": {"time_range": {"last": "P3M"}},
        },
        {
            "intent": "compare",
            "target_metric": "staff_error_rate",
            "compare": {
                "periods": [
                    {
                        "label": "before",
                        "time_range": {
                            "since": "2025-11-03T00:00:00+08:00",
                            "until": "2025-11-10T00:00:00+08:00",
                        },
                    },
                    {
                        "label": "after",
                        "time_range": {"since": "2025-11-10T00:00:00+08:00", "until": "2025-11-17T00:00:00Z"},
                    },
                ]
            },
        },
        {
            "intent": "co_occurrence",
            "pair": {"a": "weather=rain", "b": "customer_inquiry", "window_seconds": 600},
        },
        {
            "intent": "compare",
            "compare": {"dimension": "is_weekend", "groups": [True, False]},
            "language": "zh",
        },
    ],
)
def test_valid_plans_pass(plan: dict[str, object]) -> None:
    validate_plan(plan)
    assert plan_errors(plan) == []


@pytest.mark.parametrize(
    ("plan", "where"),
    [
        ({}, "intent"),
        ({"intent": "guess"}, "intent"),
        ({"intent": "aggregate", "target_metric": "profit"}, "target_metric"),
        ({"intent": "aggregate", "extra": 1}, "extra"),
        ({"intent": "trend", "filters": {"time_range": {"last": "3 months"}}}, "filters.time_range.last"),
        ({"intent": "trend", "filters": {"hours": [24]}}, "filters.hours.0"),
        ({"intent": "trend", "filters": {"time_range": {"since": "2025-11-10"}}}, "filters.time_range.since"),
        (
            {"intent": "trend", "filters": {"time_range": {"since": "2025-11-10T00:00:00"}}},
            "filters.time_range.since",
        ),
        ({"intent": "compare", "compare": {"dimension": "weather", "groups": ["rain"]}}, "compare.groups"),
        ({"intent": "top_k", "top_k": 0}, "top_k"),
        ([], "(plan)"),
    ],
)
def test_invalid_plans_raise_plan_error_naming_the_field(plan: object, where: str) -> None:
    with pytest.raises(PlanError) as exc:
        validate_plan(plan)
    assert where in str(exc.value)
    assert exc.value.exit_code == 2


def test_add_months_clamps_to_month_end() -> None:
    assert add_months(datetime(2025, 5, 31), -3) == datetime(2025, 2, 28)
    assert add_months(datetime(2024, 5, 31), -3) == datetime(2024, 2, 29)
    assert add_months(datetime(2025, 1, 15), -1) == datetime(2024, 12, 15)
    assert add_months(datetime(2025, 11, 30), 3) == datetime(2026, 2, 28)


def test_last_counts_back_calendar_months_in_store_time() -> None:
    now = datetime(2025, 12, 15, 10, 0)  # naive = store-local (UTC+8)
    since, until = resolve_time_range({"last": "P3M"}, now, "Asia/Shanghai")
    assert since == datetime(2025, 9, 15, 2, 0, tzinfo=UTC)
    assert until == datetime(2025, 12, 15, 2, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("duration", "local_since"),
    [
        ("P8W", datetime(2025, 10, 20, 10, 0)),
        ("P30D", datetime(2025, 11, 15, 10, 0)),
        ("P1Y", datetime(2024, 12, 15, 10, 0)),
        ("P1M2W", datetime(2025, 11, 1, 10, 0)),
    ],
)
def test_last_durations(duration: str, local_since: datetime) -> None:
    now = datetime(2025, 12, 15, 10, 0, tzinfo=UTC)
    since, until = resolve_time_range({"last": duration}, now, "UTC")
    assert since == local_since.replace(tzinfo=UTC)
    assert until == now


def test_last_across_a_dst_change_keeps_local_wall_time() -> None:
    # New York: 2025-11-02 DST ends. 1 month before 2025-11-15 12:00 EST is 2025-10-15 12:00 EDT.
    now = datetime(2025, 11, 15, 17, 0, tzinfo=UTC)  # 12:00 EST
    since, _ = resolve_time_range({"last": "P1M"}, now, "America/New_York")
    assert since == datetime(2025, 10, 15, 16, 0, tzinfo=UTC)  # 12:00 EDT


def test_since_until_are_parsed_as_rfc3339() -> None:
    since, until = resolve_time_range(
        {"since": "2025-11-03T00:00:00+08:00", "until": "2025-11-10T00:00:00Z"}, datetime(2025, 12, 1), "UTC"
    )
    assert since == datetime(2025, 11, 2, 16, 0, tzinfo=UTC)
    assert until == datetime(2025, 11, 10, 0, 0, tzinfo=UTC)


def test_since_only_is_open_ended_and_empty_is_unbounded() -> None:
    since, until = resolve_time_range({"since": "2025-11-01T00:00:00+08:00"}, datetime(2025, 12, 1), "UTC")
    assert since == datetime(2025, 10, 31, 16, 0, tzinfo=UTC) and until is None
    assert resolve_time_range({}, datetime(2025, 12, 1), "UTC") == (None, None)
    assert resolve_time_range(None, datetime(2025, 12, 1), "UTC") == (None, None)


def test_unknown_store_zone_is_a_plan_error() -> None:
    with pytest.raises(PlanError, match="Mars/Olympus"):
        resolve_time_range({"last": "P1D"}, datetime(2025, 12, 1), "Mars/Olympus")


def test_bad_time_range_is_a_plan_error() -> None:
    with pytest.raises(PlanError):
        resolve_time_range({"last": "three months"}, datetime(2025, 12, 1), "UTC")
    with pytest.raises(PlanError):
        resolve_time_range({"since": "yesterday"}, datetime(2025, 12, 1), "UTC")
