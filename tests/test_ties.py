"""A first place within the noise of the second is said to be a tie, not named with confidence.

Seeded data with known answers on the pure in-memory source: ten days of visitors where 10:00 and
20:00 draw nearly the same crowd (a near tie), and a second world where 10:00 clearly leads.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from edge.analysis.engine import AnalysisConfig, run_plan
from edge.analysis.testing import InMemorySource, MemEvent

TZ = "Europe/Berlin"
NOW = datetime(2025, 3, 11, tzinfo=ZoneInfo(TZ))


def _source(counts: dict[int, int]) -> InMemorySource:
    events = []
    for day in range(10):
        base = datetime(2025, 3, 1, tzinfo=ZoneInfo(TZ)) + timedelta(days=day)
        for hour, per_day in counts.items():
            for i in range(per_day):
                events.append(
                    MemEvent(
                        f"v-{day}-{hour}-{i}",
                        "berlin-mitte",
                        base.replace(hour=hour, minute=i % 60),
                        "customer_enter",
                        {"person_count": 1},
                    )
                )
    return InMemorySource(events, timezone=TZ)


@pytest.mark.parametrize(
    ("counts", "tie"),
    [({10: 40, 20: 39, 14: 10}, True), ({10: 60, 20: 30, 14: 10}, False)],
)
def test_the_peak_hour_is_a_tie_when_the_runner_up_is_within_noise(counts: dict[int, int], tie: bool) -> None:
    src = _source(counts)
    plan = {"intent": "aggregate", "target_metric": "peak_hour", "language": "en"}
    p = run_plan(plan, src, question="peak hour?", now=NOW, config=AnalysisConfig())
    assert p["status"] == "ok"
    assert p["result"]["value"] == 10 and p["result"]["runner_up"] == 20
    assert (p["result"]["p_value"] >= 0.05) == tie
    assert ("tie" in p["summary"]) == tie
    if tie:
        assert p["confidence"] <= 0.5


@pytest.mark.parametrize(("counts", "tie"), [({10: 40, 20: 39}, True), ({10: 60, 20: 30}, False)])
def test_the_first_of_a_ranking_is_a_tie_when_the_second_is_within_noise(
    counts: dict[int, int], tie: bool
) -> None:
    src = _source(counts)
    plan = {
        "intent": "top_k",
        "target_metric": "footfall",
        "group_by": ["hour"],
        "top_k": 1,
        "language": "zh",
    }
    p = run_plan(plan, src, question="哪个小时客流最多", now=NOW, config=AnalysisConfig())
    assert p["status"] == "ok"
    assert p["result"]["items"][0]["key"] == 10
    assert (p["result"]["p_value"] >= 0.05) == tie
    assert ("并列" in p["summary"]) == tie
    assert (p["confidence"] <= 0.5) if tie else p["confidence"] > 0.5
