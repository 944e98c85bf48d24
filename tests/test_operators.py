"""Each operator recovers the simulator's planted effects and refuses on thin data.

Real memories (tests/engine_data.py: the seeded simulator imported into SQLite + sqlite-vec);
expected values come from :func:`edge.sim.expected` or from a direct recomputation over the raw
simulated events, never from the operator's own output.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from datetime import date, timedelta
from typing import Any

import pytest
from engine_data import Memory, full_memory, thin_memory

from edge.analysis.engine import run_plan
from edge.config import AnalysisConfig
from edge.memory.store import Store


@pytest.fixture(scope="module")
def full() -> Iterator[tuple[Memory, Any]]:
    mem = full_memory()
    store = Store.open(mem.path, readonly=True)
    yield mem, store.event_source()
    store.close()


@pytest.fixture(scope="module")
def thin() -> Iterator[tuple[Memory, Any]]:
    mem = thin_memory()
    store = Store.open(mem.path, readonly=True)
    yield mem, store.event_source()
    store.close()


def ask(env: tuple[Memory, Any], plan: dict[str, Any]) -> dict[str, Any]:
    mem, source = env
    return run_plan(plan, source, question="test", now=mem.now, config=AnalysisConfig(), language="en")


def test_compare_recovers_rain_order_value_uplift(full: tuple[Memory, Any]) -> None:
    mem = full[0]
    p = ask(
        full,
        {
            "intent": "compare",
            "target_metric": "avg_order_value",
            "compare": {"dimension": "weather", "groups": ["rain", "sunny"]},
        },
    )
    assert p["status"] == "ok"
    g = p["result"]["groups"]
    assert g[0]["key"] == "rain"
    assert g[0]["value"] / g[1]["value"] == pytest.approx(mem.truth["rain_aov_ratio"], abs=0.12)
    assert p["result"]["significant"] is True and p["result"]["p_value"] < 0.05
    assert p["result"]["per"] is None
    assert p["result"]["diff_pct"] == pytest.approx(
        (g[0]["value"] - g[1]["value"]) / g[1]["value"] * 100, rel=1e-3
    )
    # the group value is SUM(order_amount) / COUNT(DISTINCT bill) over rain-day purchases
    weather = mem.truth["weather_by_date"]
    rev, bills = 0.0, set()
    for e in mem.events:
        if e["event_type"] == "purchase" and weather[_local_date(mem, e)] == "rain":
            rev += e["stats"]["order_amount"]
            bills.add(e["stats"].get("bill_id", e["event_id"]))
    assert g[0]["value"] == pytest.approx(rev / len(bills), rel=1e-3)


def _local_date(mem: Memory, e: dict[str, Any]) -> str:
    from datetime import datetime
    from zoneinfo import ZoneInfo

    ts = datetime.fromisoformat(e["timestamp"].replace("Z", "+00:00"))
    return ts.astimezone(ZoneInfo(mem.config.timezone)).date().isoformat()


def test_compare_additive_metric_is_per_day(full: tuple[Memory, Any]) -> None:
    p = ask(full, {"intent": "compare", "target_metric": "footfall", "compare": {"dimension": "is_weekend"}})
    assert p["status"] == "ok" and p["result"]["per"] == "day"
    weekend = next(g for g in p["result"]["groups"] if g["key"] is True)
    weekday = next(g for g in p["result"]["groups"] if g["key"] is False)
    assert weekend["value"] > weekday["value"]  # WEEKLY_FACTORS: weekends highest


def test_trend_recovers_evening_peak_shift(full: tuple[Memory, Any]) -> None:
    mem = full[0]
    p = ask(full, {"intent": "trend", "target_metric": "peak_hour", "time_bucket": "week"})
    assert p["status"] == "ok"
    r = p["result"]
    assert r["start_value"] == mem.truth["peak_hour_first"]
    assert r["end_value"] == mem.truth["peak_hour_last"]
    assert r["shift_hours"] == mem.truth["peak_shift_hours"]
    assert r["direction"] == "up" and r["p_value"] < 0.05
    assert len(r["series"]) >= 8 and all({"bucket", "value", "n"} <= set(s) for s in r["series"])


def test_compare_periods_recovers_training_effect(full: tuple[Memory, Any]) -> None:
    mem = full[0]
    t = date.fromisoformat(mem.truth["training_date"])
    tz = "+08:00"

    def at(d: date) -> str:
        return f"{d.isoformat()}T00:00:00{tz}"

    plan = {
        "intent": "compare",
        "target_metric": "staff_error_rate",
        "compare": {
            "periods": [
                {"label": "before", "time_range": {"since": at(t - timedelta(days=28)), "until": at(t)}},
                {"label": "after", "time_range": {"since": at(t), "until": at(t + timedelta(days=28))}},
            ]
        },
    }
    p = ask(full, plan)
    assert p["status"] == "ok"
    vals = {g["key"]: g["value"] for g in p["result"]["groups"]}
    assert vals["before"] == pytest.approx(mem.truth["staff_error_rate_before"], abs=0.035)
    assert vals["after"] == pytest.approx(mem.truth["staff_error_rate_after"], abs=0.03)
    assert p["result"]["test"] == "chi2_contingency" and p["result"]["significant"] is True


def test_anomaly_finds_planted_footfall_days(full: tuple[Memory, Any]) -> None:
    mem = full[0]
    p = ask(full, {"intent": "anomaly", "target_metric": "footfall", "time_bucket": "day"})
    assert p["status"] == "ok"
    high = {a["bucket"] for a in p["result"]["anomalies"] if a["direction"] == "high"}
    assert set(mem.truth["footfall_anomaly_dates"]) <= high
    assert len(high) <= len(mem.truth["footfall_anomaly_dates"]) + 2
    for a in p["result"]["anomalies"]:
        assert abs(a["score"]) >= 3.5


def test_periodicity_finds_weekly_cycle(full: tuple[Memory, Any]) -> None:
    mem = full[0]
    p = ask(full, {"intent": "periodicity", "target_metric": "footfall"})
    assert p["status"] == "ok"
    assert p["result"]["period"] == mem.truth["weekly_period_days"]
    assert p["result"]["period_unit"] == "day" and 0 < p["result"]["strength"] <= 1


def test_co_occurrence_rain_and_high_margin_inquiries(full: tuple[Memory, Any]) -> None:
    p = ask(
        full,
        {
            "intent": "co_occurrence",
            "pair": {"a": "weather=rain", "b": "topic=high_margin_product", "window_seconds": 3600},
        },
    )
    assert p["status"] == "ok"
    pair = p["result"]["pairs"][0]
    assert pair["lift"] > 1.2
    assert p["result"]["window_seconds"] == 3600
    assert 0 < pair["support"] <= 1 and pair["count"] > 0
    # without a window, a day attribute paired with an event attribute is still counted by hour
    default = ask(
        full, {"intent": "co_occurrence", "pair": {"a": "weather=rain", "b": "topic=high_margin_product"}}
    )
    assert default["status"] == "ok" and default["result"]["window_seconds"] == 3600
    assert default["result"]["pairs"][0]["lift"] == pair["lift"]
    # two day attributes: whole store-local days
    day = ask(full, {"intent": "co_occurrence", "pair": {"a": "weather=rain", "b": "promotion=true"}})
    assert day["result"]["window_seconds"] == 86400


def test_correlation_queue_and_complaints_positive(full: tuple[Memory, Any]) -> None:
    p = ask(
        full, {"intent": "correlation", "target_metric": "queue_length", "second_metric": "complaint_count"}
    )
    assert p["status"] == "ok"
    assert p["result"]["r"] > 0.2 and p["result"]["p_value"] < 0.05
    assert p["result"]["method"] == "pearson" and p["result"]["n"] >= 60


def test_breakdown_matches_direct_recomputation(full: tuple[Memory, Any]) -> None:
    mem = full[0]
    p = ask(full, {"intent": "breakdown", "target_metric": "revenue", "group_by": ["product_category"]})
    assert p["status"] == "ok"
    want: dict[str, float] = defaultdict(float)
    for e in mem.events:
        if e["event_type"] == "purchase":
            want[e["stats"]["product_category"]] += e["stats"]["order_amount"]
    parts = p["result"]["parts"]
    assert {x["key"]: x["value"] for x in parts} == pytest.approx(dict(want), rel=1e-6)
    assert [x["value"] for x in parts] == sorted((x["value"] for x in parts), reverse=True)
    assert p["result"]["top_contributor"] == max(want, key=lambda k: want[k])
    assert sum(x["share"] for x in parts) == pytest.approx(1.0, abs=1e-3)


def test_breakdown_of_a_ratio_says_its_shares_are_of_the_events(full: tuple[Memory, Any]) -> None:
    """An average has no share of a total: the summary says the share is of the events behind it."""
    p = ask(
        full, {"intent": "breakdown", "target_metric": "avg_order_value", "group_by": ["product_category"]}
    )
    assert p["status"] == "ok"
    assert "of the events behind it" in p["summary"] and "of the total" not in p["summary"]
    assert sum(x["share"] for x in p["result"]["parts"]) == pytest.approx(1.0, abs=1e-3)


@pytest.mark.parametrize(
    ("intent", "metric", "group_by", "filters"),
    [
        ("breakdown", "revenue", None, {"attributes": {"product_category": "bakery"}}),  # the default
        ("breakdown", "footfall", ["zone"], {"attributes": {"zone": ["entrance"]}}),
        ("top_k", "revenue", ["day_of_week"], {"days_of_week": [5]}),
        ("top_k", "footfall", ["hour"], {"hours": [18]}),
    ],
)
def test_a_split_by_a_field_the_filters_hold_to_one_value_is_not_answered(
    full: tuple[Memory, Any], intent: str, metric: str, group_by: list[str] | None, filters: dict[str, Any]
) -> None:
    """Its one part would be the whole of what is left (the bakery's share of the bakery is 100%)."""
    plan: dict[str, Any] = {"intent": intent, "target_metric": metric, "filters": filters}
    if group_by:
        plan["group_by"] = group_by
    p = ask(full, plan)
    assert p["status"] == "insufficient_data", p["summary"]
    assert p["result"] == {} and any("share of itself" in m for m in p["missing"]), p["missing"]


def test_a_split_between_two_held_values_is_answered(full: tuple[Memory, Any]) -> None:
    plan = {
        "intent": "top_k",
        "target_metric": "footfall",
        "group_by": ["hour"],
        "filters": {"hours": [18, 19]},
    }
    p = ask(full, plan)
    assert p["status"] == "ok" and {i["key"] for i in p["result"]["items"]} == {18, 19}, p["result"]


@pytest.mark.parametrize("intent", ["top_k", "breakdown"])
def test_the_interpretation_names_the_grouping_an_operator_chose(
    full: tuple[Memory, Any], intent: str
) -> None:
    """A plan that leaves the grouping to the operator is told with the grouping it got."""
    p = ask(full, {"intent": intent, "target_metric": "revenue"})
    assert p["status"] == "ok"
    assert p["interpretation"]["groups"] == ["product_category"], p["interpretation"]
    assert "product category" in p["interpretation"]["text"], p["interpretation"]["text"]


def test_top_k_matches_direct_recomputation(full: tuple[Memory, Any]) -> None:
    mem = full[0]
    p = ask(full, {"intent": "top_k", "target_metric": "order_count", "group_by": ["product_id"], "top_k": 3})
    assert p["status"] == "ok"
    bills: dict[str, set[str]] = defaultdict(set)
    for e in mem.events:
        if e["event_type"] == "purchase":
            bills[e["stats"]["product_id"]].add(e["stats"].get("bill_id", e["event_id"]))
    ranked = sorted(bills, key=lambda k: (-len(bills[k]), k))[:3]
    assert [i["key"] for i in p["result"]["items"]] == ranked
    assert [i["value"] for i in p["result"]["items"]] == [len(bills[k]) for k in ranked]


def test_aggregate_matches_direct_recomputation(full: tuple[Memory, Any]) -> None:
    mem = full[0]
    p = ask(full, {"intent": "aggregate", "target_metric": "footfall"})
    want = sum(e["stats"].get("person_count", 1) for e in mem.events if e["event_type"] == "customer_enter")
    assert p["status"] == "ok" and p["result"]["value"] == want


def test_forecast_is_refused(full: tuple[Memory, Any]) -> None:
    p = ask(full, {"intent": "forecast", "target_metric": "footfall", "horizon": "P1M"})
    assert p["status"] == "refused" and p["result"] == {} and p["action"] is None
    assert "trend" in p["summary"]


def test_retrieve_returns_filtered_events(full: tuple[Memory, Any]) -> None:
    p = ask(
        full,
        {
            "intent": "retrieve",
            "semantic_query": "customer complains about the queue",
            "filters": {"event_type": ["complaint"]},
            "top_k": 5,
        },
    )
    assert p["status"] == "ok"
    assert 0 < len(p["result"]["events"]) <= 5
    assert all(e["event_type"] == "complaint" for e in p["result"]["events"])


THIN_PLANS: dict[str, dict[str, Any]] = {
    "aggregate": {"intent": "aggregate", "target_metric": "avg_order_value"},
    "trend": {"intent": "trend", "target_metric": "footfall", "time_bucket": "day"},
    "compare": {
        "intent": "compare",
        "target_metric": "avg_order_value",
        "compare": {"dimension": "weather", "groups": ["rain", "sunny"]},
    },
    "anomaly": {"intent": "anomaly", "target_metric": "footfall"},
    "periodicity": {"intent": "periodicity", "target_metric": "footfall"},
    "co_occurrence": {"intent": "co_occurrence", "pair": {"a": "purchase", "b": "complaint"}},
    "breakdown": {"intent": "breakdown", "target_metric": "revenue", "group_by": ["product_category"]},
    "top_k": {"intent": "top_k", "target_metric": "avg_order_value", "group_by": ["product_id"]},
    "correlation": {
        "intent": "correlation",
        "target_metric": "queue_length",
        "second_metric": "complaint_count",
    },
    "retrieve": {"intent": "retrieve", "filters": {"event_type": ["complaint"], "entities": ["nobody_999"]}},
}


@pytest.mark.parametrize("intent", sorted(THIN_PLANS))
def test_thin_data_is_insufficient(thin: tuple[Memory, Any], intent: str) -> None:
    p = ask(thin, THIN_PLANS[intent])
    assert p["status"] == "insufficient_data", p["summary"]
    assert p["result"] == {} and p["missing"] and p["action"] is None
    assert p["evidence"] == [] and p["confidence"] == 0


def test_uncovered_time_range_is_insufficient(full: tuple[Memory, Any]) -> None:
    p = ask(
        full,
        {
            "intent": "trend",
            "target_metric": "footfall",
            "time_bucket": "week",
            "filters": {"time_range": {"last": "P6M"}},
        },
    )
    assert p["status"] == "insufficient_data" and p["result"] == {}
    assert any(full[0].truth["start"] in m for m in p["missing"])
    ok = ask(
        full,
        {
            "intent": "trend",
            "target_metric": "footfall",
            "time_bucket": "week",
            "filters": {"time_range": {"last": "P10W"}},
        },
    )
    assert ok["status"] == "ok"


def test_compare_hour_range_against_the_other_hours(full: tuple[Memory, Any]) -> None:
    mem = full[0]
    p = ask(
        full,
        {
            "intent": "compare",
            "target_metric": "footfall",
            "compare": {"dimension": "hour"},
            "filters": {"hours": [19, 20]},
        },
    )
    assert p["status"] == "ok"
    keys = {g["key"] for g in p["result"]["groups"]}
    assert keys == {"19-21h", "other_hours"}
    inside = next(g for g in p["result"]["groups"] if g["key"] == "19-21h")
    n_inside = 0
    for e in mem.events:
        if e["event_type"] == "customer_enter":
            from datetime import datetime
            from zoneinfo import ZoneInfo

            ts = datetime.fromisoformat(e["timestamp"].replace("Z", "+00:00")).astimezone(
                ZoneInfo(mem.config.timezone)
            )
            n_inside += ts.hour in (19, 20)
    assert inside["n"] == n_inside
