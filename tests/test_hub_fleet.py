"""Does a finding hold in every store: ``adamm-hub facts`` (CONTRACT.md section 7).

A seeded fleet with planted truths, through the real path (each store's daily rollups and the
learned facts as summary messages, ingested by the hub into real SQLite): rain lifts order value
by 30% in four stores, lowers it by 25% in one, does nothing in one, and one store is too thin to
test; and 18:00 is the peak hour (twice the footfall of any other hour) in the same stores, the
quiet hour of the reversed one, an hour like any other in the null one, and the thin store has no
other hour to compare it with (a peak fact, and a weekday profile fact: 18:00 against the
hourly mean, learned in other stores). The fleet check must report exactly that for every kind,
with the false discoveries controlled over every store and kind, pool the stores into a
random-effects estimate whose interval holds the planted effect, and list the kind of fact it
cannot test from rollups (a co-occurrence) with the reason.
"""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hub_data import fact
from test_hub_ask import summaries

from edge.analysis import fleet as F
from edge.analysis.testing import MemEvent
from edge.presentation.facts import compare_groups, correlated_metric, fact_kind, fact_statement
from edge.sync import messages as m
from hub.db import open_hub
from hub.fleet import fleet_check
from hub.ingest import ingest

ROOT = Path(__file__).resolve().parents[1]
DAYS = 42
T0 = datetime(2025, 10, 1, tzinfo=UTC)
NOW = T0 + timedelta(days=DAYS + 1)
#: store -> (planted relative effect of rain on order value, bills a day)
PLANTED = {
    "a1": (0.30, 40),
    "a2": (0.30, 40),
    "a3": (0.30, 40),
    "a4": (0.30, 40),
    "r1": (-0.25, 40),
    "n1": (0.0, 40),
    "t1": (0.30, 1),
    "w1": (0.30, 40),  # names its weather rainy / clear: the same kinds of value
}
LABELS = {"w1": ("rainy", "clear")}
#: store -> footfall at 18:00 (and at the planted rival hour 12:00) against 5 arrivals an hour
PEAK = {"a1": 10, "a2": 10, "a3": 10, "a4": 10, "w1": 10, "r1": 2, "n1": 5, "t1": 1}
ZONES = {s: "Asia/Shanghai" for s in PLANTED}


def _events(seed: int = 5) -> list[MemEvent]:
    rng = random.Random(seed)
    arrivals_rng = random.Random(seed + 1)  # the footfall's own draws: the amounts stay as seeded
    out: list[MemEvent] = []
    for store, (effect, per_day) in PLANTED.items():
        for d in range(DAYS):
            wet, dry = LABELS.get(store, ("rain", "sunny"))
            weather = wet if (d + len(store)) % 3 == 0 else dry
            day = T0 + timedelta(days=d)
            for i in range(per_day if store != "t1" or d % 2 == 0 else 0):
                amount = 50.0 * (1 + effect if weather == wet else 1.0) * math.exp(rng.gauss(0, 0.35))
                out.append(
                    MemEvent(
                        f"{store}-{d}-{i}",
                        store,
                        day + timedelta(hours=2, minutes=i % 600),
                        "purchase",
                        {"order_amount": round(amount, 2), "weather": weather, "bill_id": f"{store}-{d}-{i}"},
                    )
                )
            for hour in range(10, 22) if store != "t1" else (18,):
                mean = PEAK[store] if hour == 18 else (10 if store == "r1" and hour == 12 else 5)
                arrivals = mean if store == "t1" else max(0, round(arrivals_rng.gauss(mean, math.sqrt(mean))))
                for i in range(arrivals):
                    t = day + timedelta(hours=hour - 8, minutes=(7 * i) % 60)  # store-local hour (UTC+8)
                    out.append(
                        MemEvent(f"{store}-{d}-h{hour}-{i}", store, t, "customer_enter", {"person_count": 1})
                    )
    return out


def _learned_fact(store: str) -> m.Summary:
    body = {"metric": "avg_order_value", "dimension": "weather", "value": 65.0, "effect": 0.3, "n": 400, "p_value": 1e-6,
            "valid_from": "2025-10-01"}  # fmt: skip
    statement = fact_statement("compare", body, {"subject": "rain", "baseline": "sunny"})
    return fact(store, f"{store}-rain-aov", statement=statement, **body)


def _peak_fact(store: str) -> m.Summary:
    body = {"metric": "peak_hour", "dimension": "hour", "value": 18, "effect": 1.0, "n": 200, "p_value": 1e-9,
            "valid_from": "2025-10-01"}  # fmt: skip
    return fact(store, f"{store}-peak", statement=fact_statement("peak", body, {"subject": 17}), **body)


def _profile_fact(store: str) -> m.Summary:
    body = {"metric": "footfall", "dimension": "hour", "value": 18, "effect": 0.8, "n": 200, "p_value": 1e-6,
            "valid_from": "2025-10-01"}  # fmt: skip
    return fact(store, f"{store}-profile", statement=fact_statement("profile", body, {"subject": 18}), **body)


def _together_fact(store: str) -> m.Summary:
    body = {"metric": "event_count", "dimension": "event_type", "value": 2.1, "effect": 1.1, "n": 80,
            "p_value": 1e-4, "valid_from": "2025-10-01"}  # fmt: skip
    st = fact_statement("co_occurrence", body, {"a": "checkout_queue", "b": "complaint"})
    return fact(store, f"{store}-together", statement=st, **body)


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    path = tmp_path_factory.mktemp("fleet") / "hub.db"
    db = open_hub(str(path), create=True)
    for s in [
        *summaries(_events(), ZONES),
        _learned_fact("a1"),
        _peak_fact("a2"),
        _profile_fact("a3"),
        _together_fact("a1"),
    ]:
        got = ingest(db, m.summary_topic(s.store_id), s.encode())
        assert got.outcome == "stored", got
    yield {"db": db, "path": path}
    db.close()


def test_a_planted_fleet_is_reported_as_planted(hub: dict[str, Any]) -> None:
    result = fleet_check(hub["db"], now=NOW)
    assert sorted(f["store_id"] for f in result["facts"]) == ["a1", "a1", "a2", "a3"]
    rows = {r["kind"]: r for r in result["fleet"]}
    assert set(rows) == {
        "avg_order_value/weather/rain_vs_sunny",
        "peak:peak_hour/hour/18_vs_next_busiest_hour",
        "profile:footfall/hour/18_vs_hourly_mean",
    }
    for f in result["facts"]:  # a fact links to its fleet row
        assert f.get("fleet_kind") in (rows if f["fact_id"] != "a1-together" else (None,))
    row = rows["avg_order_value/weather/rain_vs_sunny"]
    assert (row["metric"], row["dimension"], row["subject"], row["baseline"]) == (
        "avg_order_value",
        "weather",
        "rain",
        "sunny",
    )
    verdicts = {t["store_id"]: t["verdict"] for t in row["stores"]}
    assert verdicts == {"a1": "holds", "a2": "holds", "a3": "holds", "a4": "holds", "r1": "reversed",
                        "n1": "null", "t1": "thin", "w1": "holds"}  # fmt: skip
    assert (row["holds_in"], row["reversed_in"], row["of"]) == (5, 1, 8)
    for t in row["stores"]:
        if t["verdict"] in ("holds", "reversed"):
            planted = PLANTED[t["store_id"]][0]
            assert t["ci"][0] <= planted <= t["ci"][1], t  # the planted effect within its interval
            assert t["p_adjusted"] < 0.05 and t["evidence"]
    # one family of tests: every store with data of every kind, BH-adjusted together
    flat = [t for r in result["fleet"] for t in r["stores"] if t["p_value"] is not None]
    assert result["tested"] == len(flat) == 21  # 7 stores with data, 3 kinds
    assert [t["p_adjusted"] for t in flat] == pytest.approx(F.bh_adjust([t["p_value"] for t in flat]))
    # pooled over the stores with data: heterogeneous (one reversed), an interval, I^2 high
    pooled = row["pooled"]
    assert pooled["ci"][0] < pooled["effect"] < pooled["ci"][1]
    assert pooled["i2"] > 0.5


def test_a_planted_peak_hour_is_tested_in_every_store(hub: dict[str, Any]) -> None:
    result = fleet_check(hub["db"], now=NOW)
    planted = {"a1": "holds", "a2": "holds", "a3": "holds", "a4": "holds", "r1": "reversed", "n1": "null",
               "t1": "thin", "w1": "holds"}  # fmt: skip
    # the weekday profile: footfall at 18:00 against the weekday hourly mean, the same stores
    profile = next(r for r in result["fleet"] if r["fact_kind"] == "profile")
    assert (profile["metric"], profile["subject"], profile["learned_in"]) == ("footfall", "18", ["a3"])
    assert {t["store_id"]: t["verdict"] for t in profile["stores"]} == planted
    row = next(r for r in result["fleet"] if r["fact_kind"] == "peak")
    assert (row["metric"], row["dimension"], row["subject"], row["learned_in"]) == (
        "peak_hour",
        "hour",
        "18",
        ["a2"],
    )
    verdicts = {t["store_id"]: t["verdict"] for t in row["stores"]}
    assert verdicts == planted
    for t in row["stores"]:
        if t["verdict"] == "holds":  # twice the footfall of the busiest other hour, within its interval
            assert t["ci"][0] <= 1.0 <= t["ci"][1] and t["effect"] > 0.5, t
    assert (
        row["pooled"] is not None and row["title"]["en"] == "peak hour 18:00-19:00 vs the next busiest hour"
    )
    # what rollups cannot test is listed with its reason, never dropped in silence
    (untested,) = result["untested"]
    assert untested["fact_kind"] == "co_occurrence" and "not testable from rollups" in untested["reason"]
    assert untested["facts"] == [{"store_id": "a1", "fact_id": "a1-together"}]


def test_the_cli_prints_the_contracts_json_and_a_readable_table(hub: dict[str, Any]) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "hub", "facts", "--db", str(hub["path"]), "--now", NOW.isoformat(), "--json"],
        capture_output=True, text=True, cwd=ROOT, check=True,
    )  # fmt: skip
    got = json.loads(run.stdout)
    assert set(got) >= {"facts", "fleet"}
    row = got["fleet"][0]
    assert set(row) >= {
        "kind",
        "metric",
        "dimension",
        "baseline",
        "stores",
        "pooled",
        "holds_in",
        "reversed_in",
        "of",
    }
    assert set(row["stores"][0]) >= {"store_id", "effect", "ci", "p_value", "n", "verdict"}
    assert set(row["pooled"]) >= {"effect", "ci", "i2"}
    for lang, words in (
        (
            "en",
            (
                "holds in 5 of 8",
                "reversed in r1",
                "peak hour 18:00-19:00",
                "not tested across stores: co_occurrence",
            ),
        ),
        ("zh", ("8 家中 5 家成立", "r1 相反", "高峰时段 18:00-19:00", "未跨门店检验：co_occurrence")),
    ):
        text = subprocess.run(
            [sys.executable, "-m", "hub", "facts", "--db", str(hub["path"]), "--now", NOW.isoformat(), "--lang", lang],
            capture_output=True, text=True, cwd=ROOT, check=True,
        ).stdout  # fmt: skip
        assert all(w in text for w in words), text


def test_null_stores_are_not_called_significant_at_the_nominal_rate() -> None:
    """Over many seeds of a fleet where rain does nothing, the share of stores the check calls
    holds or reversed stays at or below the FDR level (the BH control), never a chance finding."""
    rng = random.Random(11)
    false_findings = tests = 0
    for _ in range(200):
        ps = [rng.random() for _ in range(8)]  # null tests: uniform p-values
        adj = F.bh_adjust(ps)
        false_findings += sum(F.verdict(0.1, a, 1, thin=False) != "null" for a in adj)
        tests += len(ps)
    assert false_findings / tests <= F.FDR


def test_random_effects_equals_the_dersimonian_laird_formulas() -> None:
    effects, ses = [0.3, 0.28, 0.35, -0.2], [0.05, 0.06, 0.05, 0.07]
    got = F.random_effects(effects, ses)
    assert got is not None
    w = [1 / s**2 for s in ses]
    fixed = sum(a * b for a, b in zip(w, effects, strict=True)) / sum(w)
    q = sum(a * (e - fixed) ** 2 for a, e in zip(w, effects, strict=True))
    tau2 = max(0.0, (q - 3) / (sum(w) - sum(x * x for x in w) / sum(w)))
    ws = [1 / (s**2 + tau2) for s in ses]
    assert got.effect == pytest.approx(sum(a * b for a, b in zip(ws, effects, strict=True)) / sum(ws))
    assert got.i2 == pytest.approx((q - 3) / q)
    assert F.random_effects([0.1], [0.1]) is None


def test_random_effects_equals_statsmodels_meta_analysis() -> None:
    """The pooled estimate, its interval, tau^2 and I^2 are statsmodels' DerSimonian-Laird
    (``combine_effects(method_re="dl")``) on seeded heterogeneous fleets of several sizes; where
    the stores agree (statsmodels' untruncated tau^2 < 0) ours is the fixed effect, tau^2 0."""
    import numpy as np
    from statsmodels.stats.meta_analysis import combine_effects

    rng = random.Random(11)
    for k, spread in ((2, 0.2), (3, 0.1), (7, 0.1), (30, 0.1), (6, 0.0)):
        effects = [rng.gauss(0.15, spread) for _ in range(k)]
        ses = [rng.uniform(0.01, 0.05) for _ in range(k)]
        got = F.random_effects(effects, ses)
        assert got is not None
        ref = combine_effects(np.array(effects), np.array([s * s for s in ses]), method_re="dl")
        if float(ref.tau2) > 0:
            lo, hi = ref.conf_int(alpha=0.05)[1]
            assert got.effect == pytest.approx(float(ref.mean_effect_re), rel=1e-9)
            assert got.tau2 == pytest.approx(float(ref.tau2), rel=1e-9)
            assert got.ci[0] == pytest.approx(float(lo), rel=1e-6) and got.ci[1] == pytest.approx(
                float(hi), rel=1e-6
            )
            assert got.i2 == pytest.approx(float(ref.i2), abs=1e-9)
        else:
            assert got.effect == pytest.approx(float(ref.mean_effect_fe), rel=1e-9)
            assert got.tau2 == 0.0 and got.i2 == 0.0


def test_a_compare_facts_groups_read_back_from_its_statement() -> None:
    body = {
        "metric": "avg_order_value",
        "dimension": "weather",
        "value": 65.0,
        "effect": 0.3,
        "n": 10,
        "p_value": 0.01,
    }
    for subject, baseline in (("rain", "sunny"), ("snow", "clear"), ("晴", "雨")):
        st = fact_statement("compare", body, {"subject": subject, "baseline": baseline})
        fact_ = {**body, "statement": st}
        assert compare_groups(fact_, ["clear", "rain", "snow", "sunny", "晴", "雨"]) == (subject, baseline)


@pytest.mark.parametrize(
    ("kind", "body", "words"),
    [
        ("compare", {"metric": "avg_order_value", "dimension": "weather", "value": 65.0, "effect": 0.3}, {"subject": "rain", "baseline": "sunny"}),
        ("profile", {"metric": "footfall", "dimension": "hour", "value": 18, "effect": 0.9}, {"subject": 18}),
        ("peak", {"metric": "peak_hour", "dimension": "hour", "value": 18, "effect": 0.4}, {"subject": 17}),
        ("trend", {"metric": "peak_hour", "dimension": "week", "value": 19, "effect": 0.1}, {}),
        ("periodicity", {"metric": "footfall", "dimension": "date", "value": 7, "effect": None}, {}),
        ("correlation", {"metric": "queue_length", "dimension": "date", "value": 0.6, "effect": None}, {"second": "complaint_count"}),
        ("anomaly", {"metric": "footfall", "dimension": "date", "value": 900, "effect": 1.2}, {}),
        ("co_occurrence", {"metric": "event_count", "dimension": "event_type", "value": 2.0, "effect": 1.0}, {"a": "checkout_queue", "b": "complaint"}),
        ("change", {"metric": "staff_error_rate", "dimension": "date", "value": 0.03, "effect": -0.8}, {}),
        ("level", {"metric": "staff_error_rate", "dimension": "date", "value": 0.03, "effect": None}, {}),
    ],
)  # fmt: skip
def test_the_kind_of_every_fact_reads_back_from_its_statement(
    kind: str, body: dict[str, Any], words: dict[str, Any]
) -> None:
    """The hub sees facts in the contract's shape only: each kind of statement the facts step
    writes is recognised (and a correlation's second metric with it)."""
    fact_ = {**body, "n": 120, "p_value": None if kind in ("periodicity", "level") else 0.001,
             "valid_from": "2025-10-06"}  # fmt: skip
    fact_["statement"] = fact_statement(kind, fact_, words)
    assert fact_kind(fact_) == kind, fact_["statement"]["en"]
    assert fact_kind({**fact_, "action_id": "act_1"}) == "action_effect"
    if kind == "correlation":
        assert correlated_metric(fact_) == "complaint_count"


#: a peak hour's trend fact (the facts step's body of that kind)
PEAK_TREND = {
    "metric": "peak_hour",
    "dimension": "week",
    "value": 19,
    "effect": 0.1,
    "n": 120,
    "p_value": 0.001,
}


def test_a_peak_hour_trend_is_not_pooled_in_percent() -> None:
    """An hour of the day moves by hours: its trend is listed as not tested, with the reason,
    rather than pooled as a percentage change across stores."""
    from hub.fleet import _kind

    body = dict(PEAK_TREND)
    peak_trend = {**body, "valid_from": "2025-10-06", "statement": fact_statement("trend", body, {})}
    reason = _kind(peak_trend, {})
    assert isinstance(reason, str) and "hours" in reason  # listed as untested, with why
    revenue = {**peak_trend, "metric": "revenue"}
    revenue["statement"] = fact_statement("trend", revenue, {})
    assert not isinstance(_kind(revenue, {}), str)


def test_a_correlation_row_says_r_not_a_percent() -> None:
    """A correlation's effect is r: said as r with its interval, never as a percent change; a
    peak hour's trend is said without a percent too."""
    from hub.fleet import _eff, _eff_ci

    corr, comp = {"fact_kind": "correlation"}, {"fact_kind": "compare"}
    assert _eff(corr, 0.598) == "r=+0.60" and _eff_ci(corr, [0.41, 1.02]) == "[+0.41, +1.00]"
    assert _eff(comp, 0.598) == "+59.8%"
    body = dict(PEAK_TREND)
    st = fact_statement("trend", body, {})
    assert "%" not in st["en"] and "%" not in st["zh"] and fact_kind({**body, "statement": st}) == "trend"
