"""``adamm-hub ask``: the pure engine over the hub's daily rollups answers like the stores.

The hub is fed through its real ingest path with the summaries a store publishes (one rollup per
store-local day and slice, each row summed per slice value and event type), computed here from
seeded synthetic events by the plain-Python reference of edge.analysis.testing (independently of
the hub's code). For aggregate / compare / top_k / trend / breakdown plans, the hub's answer about
one store equals that store's own answer over its events (InMemorySource), and a cross-store answer
equals the answer over both stores' events. Then what the hub cannot know is answered honestly.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hub_data import pg_dsn  # noqa: F401  (fixture)
from sqlsource_data import Ev, random_events
from test_source_contract import same_answer

from edge.analysis import honesty
from edge.analysis.engine import answer, run_plan
from edge.analysis.source import EventFilter
from edge.analysis.testing import InMemorySource, Reference
from edge.config import AnalysisConfig
from edge.sync import messages as m
from hub.db import open_hub
from hub.ingest import ingest
from hub.source import HubQueryError, HubSource

ROOT = Path(__file__).resolve().parents[1]
DAYS = 40
T0 = datetime(2025, 11, 1, tzinfo=UTC)
NOW = T0 + timedelta(days=DAYS)
ZONES = {"s1": "Asia/Shanghai", "s2": "America/New_York"}
SAME_ZONE = {"s1": "Asia/Shanghai", "s2": "Asia/Shanghai"}
SLICE_KEY = {"hour": "hour", "weather": "weather", "promotion": "promotion", "zone": "zone",
             "product_category": "product_category"}  # fmt: skip


def store_events(zones: dict[str, str]) -> list[Ev]:
    """Synthetic events whose bills stay within one store-local day (as a real till's do)."""
    evs = random_events(23, 9000, days=DAYS)
    ref = Reference(evs, zones)
    for e in evs:
        if "bill_id" in e.stats:
            e.stats["bill_id"] = f"{e.stats['bill_id']}-{e.store_id}-{ref.date(e)}"
    return evs


def summaries(evs: list[Ev], zones: dict[str, str]) -> list[m.Summary]:
    """What each store publishes: per local day and slice, rows per (value, event type)."""
    ref = Reference(evs, zones)
    days: dict[tuple[str, str], list[Ev]] = {}
    for e in evs:
        days.setdefault((e.store_id, ref.date(e)), []).append(e)
    out = []
    for (store, day), day_evs in sorted(days.items()):
        for sl in m.ROLLUP_SLICES:
            groups: dict[tuple[Any, str], list[Ev]] = {}
            for e in day_evs:
                value = None if sl == "total" else ref.key(e, SLICE_KEY[sl])
                groups.setdefault((value, e.event_type), []).append(e)
            rows = []
            for (value, et), g in sorted(groups.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
                row: dict[str, Any] = {"value": value, "event_type": et}
                for f in m.ROLLUP_FIELDS:
                    if f != "bill_sq":
                        row[f] = ref.component(g, f) or 0
                bills: dict[Any, float] = {}
                for e in g:
                    if e.event_type == "purchase":
                        b = ref.key(e, "bill")
                        bills[b] = bills.get(b, 0.0) + float(e.stats.get("order_amount") or 0.0)
                row["bill_sq"] = sum(t * t for t in bills.values())
                by_time = sorted(g, key=lambda e: (e.ts, e.event_id))
                row["first_event_id"], row["last_event_id"] = by_time[0].event_id, by_time[-1].event_id
                rows.append(row)
            out.append(m.make_summary(store, "rollup", m.rollup_key(day, sl), 1, {
                "day": day, "slice": sl, "tz": zones[store], "closed": True, "rows": rows}))  # fmt: skip
    return out


#: each world's hub, built once per test session: tests parametrized by world interleave the two
#: (a module-scoped fixture would be torn down and built again at every switch, ~15 s each)
_WORLDS: dict[str, dict[str, Any]] = {}


@pytest.fixture(scope="module", params=["zones", "same_zone"])
def world(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    if request.param not in _WORLDS:
        zones = ZONES if request.param == "zones" else SAME_ZONE
        evs = store_events(zones)
        path = tmp_path_factory.mktemp("hubask") / "hub.db"
        db = open_hub(str(path), create=True)
        for s in summaries(evs, zones):
            got = ingest(db, m.summary_topic(s.store_id), s.encode())
            assert got.outcome == "stored", got
        _WORLDS[request.param] = {"zones": zones, "events": evs, "db": db, "path": path}
    yield _WORLDS[request.param]  # read only; closed with the process


def _run(source: Any, plan: dict[str, Any], now: datetime = NOW) -> dict[str, Any]:
    return run_plan(plan, source, question="q", now=now, config=AnalysisConfig(), language="en")


SINCE, UNTIL = "2025-11-08T00:00:00", "2025-12-01T00:00:00"
RANGE = {"time_range": {"since": SINCE, "until": UNTIL}}
STORE_PLANS: dict[str, dict[str, Any]] = {
    "revenue": {"intent": "aggregate", "target_metric": "revenue", "filters": dict(RANGE)},
    "footfall_all": {"intent": "aggregate", "target_metric": "footfall"},
    "aov": {"intent": "aggregate", "target_metric": "avg_order_value", "filters": dict(RANGE)},
    "conversion": {"intent": "aggregate", "target_metric": "conversion_rate"},
    "dwell": {"intent": "aggregate", "target_metric": "dwell_time", "filters": {"time_range": {"last": "P2W"}}},
    "negative": {"intent": "aggregate", "target_metric": "negative_emotion_rate"},
    "staff_errors": {"intent": "aggregate", "target_metric": "staff_error_rate"},
    "rain_revenue": {"intent": "aggregate", "target_metric": "revenue", "filters": {"attributes": {"weather": "rain"}}},
    "aov_rain_vs_sunny": {"intent": "compare", "target_metric": "avg_order_value",
                          "compare": {"dimension": "weather", "groups": ["rain", "sunny"]}},
    "revenue_rain_vs_sunny": {"intent": "compare", "target_metric": "revenue",
                              "compare": {"dimension": "weather", "groups": ["rain", "sunny"]}},
    "queue_promotion": {"intent": "compare", "target_metric": "queue_length",
                        "compare": {"dimension": "promotion", "groups": ["true", "false"]}},
    "top_zones": {"intent": "top_k", "target_metric": "revenue", "group_by": ["zone"], "top_k": 3},
    "top_hours": {"intent": "top_k", "target_metric": "footfall", "group_by": ["hour"], "top_k": 5},
    "trend_day": {"intent": "trend", "target_metric": "revenue", "time_bucket": "day"},
    "trend_week": {"intent": "trend", "target_metric": "footfall", "time_bucket": "week"},
    "trend_aov": {"intent": "trend", "target_metric": "avg_order_value", "time_bucket": "day"},
    "trend_peak": {"intent": "trend", "target_metric": "peak_hour", "time_bucket": "week"},
    "by_hour": {"intent": "breakdown", "target_metric": "revenue", "group_by": ["hour"]},
    "by_category": {"intent": "breakdown", "target_metric": "revenue", "group_by": ["product_category"]},
}  # fmt: skip
CROSS_PLANS: dict[str, dict[str, Any]] = {
    "top_store": {"intent": "top_k", "target_metric": "revenue", "group_by": ["store_id"], "filters": dict(RANGE)},
    "aov_by_store": {"intent": "compare", "target_metric": "avg_order_value", "compare": {"dimension": "store_id"}},
    "revenue_by_store": {"intent": "compare", "target_metric": "revenue", "compare": {"dimension": "store_id"}},
    "revenue_all": {"intent": "aggregate", "target_metric": "revenue", "filters": dict(RANGE)},
    "trend_all": {"intent": "trend", "target_metric": "revenue", "time_bucket": "week"},
    "breakdown_store": {"intent": "breakdown", "target_metric": "footfall", "group_by": ["store_id"]},
    "rain_effect_by_store": {"intent": "compare", "target_metric": "avg_order_value", "group_by": ["store_id"],
                             "compare": {"dimension": "weather", "groups": ["rain", "sunny"]}},
}  # fmt: skip


def _localised(plan: dict[str, Any], zone: str) -> dict[str, Any]:
    """The plan with its wall-clock bounds written in ``zone`` (plans carry offsets)."""
    out = json.loads(json.dumps(plan))
    tr = (out.get("filters") or {}).get("time_range") or {}
    for k in ("since", "until"):
        if k in tr:
            tr[k] = datetime.fromisoformat(tr[k]).replace(tzinfo=ZoneInfo(zone)).isoformat()
    return out


def _same(got: dict[str, Any], want: dict[str, Any]) -> None:
    assert got["status"] == want["status"], (got.get("missing"), want.get("missing"))
    same_answer(got["result"], want["result"])
    assert got["confidence"] == pytest.approx(want["confidence"], rel=1e-9)


@pytest.mark.parametrize("name", sorted(STORE_PLANS))
@pytest.mark.parametrize("store", ["s1", "s2"])
def test_the_hub_answers_about_a_store_as_the_store_does(
    world: dict[str, Any], name: str, store: str
) -> None:
    zone = world["zones"][store]
    plan = _localised(STORE_PLANS[name], zone)
    plan.setdefault("filters", {})["store_id"] = [store]
    own = InMemorySource([e for e in world["events"] if e.store_id == store], {store: zone}, timezone=zone)
    # relative windows count back from the store's local midnight: the hub holds whole days
    now = datetime(NOW.year, NOW.month, NOW.day, tzinfo=ZoneInfo(zone))
    want = _run(own, plan, now)
    got = _run(HubSource(world["db"]), plan, now)
    _same(got, want)


@pytest.mark.parametrize(
    ("world", "name"),
    [
        (world, name)
        for world in ("zones", "same_zone")
        for name in sorted(CROSS_PLANS)
        # one window over stores in several zones is each store's own wall clock: checked per store
        if world == "same_zone" or "time_range" not in CROSS_PLANS[name].get("filters", {})
    ],
    indirect=["world"],
)
def test_cross_store_answers_equal_the_answer_over_every_stores_events(
    world: dict[str, Any], name: str
) -> None:
    both = InMemorySource(world["events"], world["zones"], timezone="Asia/Shanghai")
    plan = _localised(CROSS_PLANS[name], "Asia/Shanghai")
    _same(_run(HubSource(world["db"]), plan), _run(both, plan))


def test_the_plans_are_mostly_answered(world: dict[str, Any]) -> None:
    """The equalities above mean something: most plans are ok on this data."""
    src = HubSource(world["db"])
    ok = []
    for n, p in STORE_PLANS.items():
        plan = _localised(p, world["zones"]["s1"])
        plan.setdefault("filters", {})["store_id"] = ["s1"]
        if _run(src, plan)["status"] == "ok":
            ok.append(n)
    assert len(ok) >= len(STORE_PLANS) - 3, ok


def test_evidence_cites_the_stores_event_ids(world: dict[str, Any]) -> None:
    got = _run(HubSource(world["db"]), _localised(CROSS_PLANS["top_store"], "Asia/Shanghai"))
    assert got["status"] == "ok" and got["evidence"]
    ids = {e.event_id for e in world["events"]}
    assert all(ev["event_id"] in ids for ev in got["evidence"])


def test_two_dimensions_at_once_are_refused_honestly(world: dict[str, Any]) -> None:
    src = HubSource(world["db"])
    plan = {"intent": "compare", "target_metric": "avg_order_value", "filters": {"hours": [14, 15]},
            "compare": {"dimension": "weather", "groups": ["rain", "sunny"]}}  # fmt: skip
    got = _run(src, plan)
    assert got["status"] == "insufficient_data" and got["result"] == {}
    assert any("per dimension" in x for x in got["missing"]), got["missing"]
    with pytest.raises(HubQueryError):
        src.aggregate(EventFilter(), ["bill"], ["revenue"])


def test_a_store_or_a_month_the_hub_has_no_data_for_is_insufficient(world: dict[str, Any]) -> None:
    src = HubSource(world["db"])
    plan = {"intent": "aggregate", "target_metric": "revenue", "filters": {"store_id": ["zz_99"]}}
    got = _run(src, plan)
    assert got["status"] == "insufficient_data" and any("zz_99" in x for x in got["missing"])
    month = {"intent": "aggregate", "target_metric": "revenue",
             "filters": {"time_range": {"since": "2025-06-01T00:00:00+08:00", "until": "2025-07-01T00:00:00+08:00"}}}  # fmt: skip
    got = _run(src, month)
    assert got["status"] == "insufficient_data" and got["missing"]


def test_the_parser_learns_the_stores_from_the_hub(world: dict[str, Any]) -> None:
    src = HubSource(world["db"])
    vocab = src.vocabulary()
    assert vocab.store_ids == ("s1", "s2") and vocab.timezones == world["zones"]
    # which of its slices' keys each event type carries, from the hub's catalog
    want: dict[str, set[str]] = {}
    for e in world["events"]:
        keys = {k for k, v in e.stats.items() if v is not None and k in SLICE_KEY and k != "hour"}
        want.setdefault(e.event_type, set()).update(keys)
    assert {t: set(k) for t, k in vocab.keys_by_type.items()} == {t: k for t, k in want.items() if k}
    assert "product_category" in vocab.keys_by_type["purchase"]
    got = answer("Which store had the highest revenue in November 2025?", src, now=NOW)
    assert got["status"] == "ok" and got["plan"]["intent"] == "top_k", got
    assert got["plan"]["group_by"] == ["store_id"]
    assert {i["key"] for i in got["result"]["items"]} == {"s1", "s2"}


def test_adamm_hub_ask_prints_the_payload(world: dict[str, Any]) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "hub", "ask", "--db", str(world["path"]), "--now", NOW.isoformat()]
    r = subprocess.run(
        [*cmd, "--json", "2025年11月哪个门店的销售额最高？"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert r.returncode == 0, r.stderr
    payload = json.loads(r.stdout)
    assert payload["status"] == "ok" and payload["plan"]["group_by"] == ["store_id"]
    text = subprocess.run(
        [*cmd, "Compare average order value across stores in November"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert text.returncode == 0 and "s1" in text.stdout, text.stderr
    missing = subprocess.run(
        [sys.executable, "-m", "hub", "ask", "--db", str(world["path"]) + ".nope", "revenue"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert missing.returncode == 3 and "no hub database" in missing.stderr and missing.stdout == ""


@pytest.mark.parametrize(
    "question", ["which store's rainy-day order value rose most", "哪个门店雨天客单价提升最多？"]
)
def test_which_stores_rainy_day_order_value_rose_most(world: dict[str, Any], question: str) -> None:
    """Rain against sunny days within each store, ranked by the change (compare ``within``)."""
    src = HubSource(world["db"])
    got = answer(question, src, now=NOW)
    assert got["status"] == "ok", got
    assert got["plan"]["compare"] == {"dimension": "weather", "groups": ["rain", "sunny"]}
    assert got["plan"]["group_by"] == ["store_id"]
    items = got["result"]["within"]["items"]
    assert {i["key"] for i in items} == {"s1", "s2"}
    # each store's effect is its own rain vs sunny comparison, recomputed from its events
    for i in items:
        zone = world["zones"][i["key"]]
        own = InMemorySource(
            [e for e in world["events"] if e.store_id == i["key"]], {i["key"]: zone}, timezone=zone
        )
        plan = {"intent": "compare", "target_metric": "avg_order_value",
                "compare": {"dimension": "weather", "groups": ["rain", "sunny"]}}  # fmt: skip
        vals = {g["key"]: g["value"] for g in _run(own, plan)["result"]["groups"]}
        assert i["effect_pct"] == pytest.approx(
            (vals["rain"] - vals["sunny"]) / abs(vals["sunny"]) * 100, abs=1e-3
        )
    assert [i["effect_pct"] for i in items] == sorted((i["effect_pct"] for i in items), reverse=True)
    assert items[0]["key"] in got["summary"]


@pytest.mark.parametrize("world", ["same_zone"], indirect=True)  # one PostgreSQL copy is enough
def test_a_postgresql_hub_answers_as_the_sqlite_one(
    world: dict[str, Any], request: pytest.FixtureRequest
) -> None:
    from hub_data import fresh_pg_dsn

    pg = open_hub(fresh_pg_dsn(request.getfixturevalue("pg_dsn")))
    try:
        for s in summaries(world["events"], world["zones"]):
            assert ingest(pg, m.summary_topic(s.store_id), s.encode()).outcome == "stored"
        for plan in (*CROSS_PLANS.values(), STORE_PLANS["top_hours"], STORE_PLANS["aov_rain_vs_sunny"]):
            plan = _localised(plan, "Asia/Shanghai")
            want = _run(HubSource(world["db"]), plan)
            got = _run(HubSource(pg), plan)
            _same(got, want)
            assert got["evidence"] == want["evidence"]
        assert HubSource(pg).vocabulary() == HubSource(world["db"]).vocabulary()
    finally:
        pg.close()


@pytest.mark.parametrize(
    "question",
    [
        "Which store had the highest revenue in November 2025?",
        "Rank the stores by footfall",
        "Revenue of each store in November 2025",
        "Which store had the most complaints?",
        "哪个门店客流最多？",
        "各门店的销售额",
        "每个门店上个月的客单价",
    ],
)
def test_a_question_about_the_stores_names_them(world: dict[str, Any], question: str) -> None:
    """Which store / each store / rank the stores: the answer names a store in its summary and
    its result (an exit check of the engine: such an answer that names none is not ok)."""
    got = answer(question, HubSource(world["db"]), now=NOW)
    assert honesty.asks_which_store(got["plan"]), got["plan"]
    assert got["status"] == "ok", got["missing"]
    named = [s for s in world["zones"] if s in got["summary"]]
    assert named, got["summary"]
    assert not honesty.stores_unnamed(got["plan"], got["summary"], got["result"], sorted(world["zones"]))
    assert set(named) <= {str(k) for k in _keys(got["result"])}


def _keys(result: dict[str, Any]) -> list[Any]:
    rows = result.get("items") or result.get("parts") or result.get("groups") or []
    return [r["key"] for r in rows]


def test_a_comparison_within_each_store_without_listed_groups_is_made_per_store(
    world: dict[str, Any],
) -> None:
    """Compare weather per store, no groups listed: the two groups the comparison picks are
    compared within each store (it used to compare every store together and name none)."""
    plan = {"intent": "compare", "target_metric": "revenue", "group_by": ["store_id"],
            "compare": {"dimension": "weather"}}  # fmt: skip
    got = _run(HubSource(world["db"]), plan)
    assert got["status"] == "ok", got["missing"]
    within = got["result"]["within"]
    assert within["by"] == "store_id" and {i["key"] for i in within["items"]} == {"s1", "s2"}
    assert within["items"][0]["key"] in got["summary"]
    pair = {"intent": "compare", "target_metric": "revenue", "group_by": ["store_id"],
            "compare": {"dimension": "weather", "groups": [within["first"], within["second"]]}}  # fmt: skip
    same_answer(got["result"], _run(HubSource(world["db"]), pair)["result"])
    three = {**pair, "compare": {"dimension": "weather", "groups": ["rain", "sunny", "cloudy"]}}
    refused = _run(HubSource(world["db"]), three)
    assert refused["status"] == "insufficient_data" and "two groups" in refused["missing"][0]
