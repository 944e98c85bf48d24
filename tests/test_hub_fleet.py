"""Does a finding hold in every store: ``adamm-hub facts`` (CONTRACT.md section 7).

A seeded fleet with planted truths, through the real path (each store's daily rollups and one
learned fact as summary messages, ingested by the hub into real SQLite): rain lifts order value
by 30% in four stores, lowers it by 25% in one, does nothing in one, and one store is too thin to
test. The fleet check must report exactly that, with the false discoveries controlled, and pool
the stores into a random-effects estimate whose interval holds the planted effect.
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
from edge.presentation.facts import compare_groups, fact_statement
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
ZONES = {s: "Asia/Shanghai" for s in PLANTED}


def _events(seed: int = 5) -> list[MemEvent]:
    rng = random.Random(seed)
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
    return out


def _learned_fact(store: str) -> m.Summary:
    body = {"metric": "avg_order_value", "dimension": "weather", "value": 65.0, "effect": 0.3, "n": 400, "p_value": 1e-6,
            "valid_from": "2025-10-01"}  # fmt: skip
    statement = fact_statement("compare", body, {"subject": "rain", "baseline": "sunny"})
    return fact(store, f"{store}-rain-aov", statement=statement, **body)


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    path = tmp_path_factory.mktemp("fleet") / "hub.db"
    db = open_hub(str(path), create=True)
    for s in [*summaries(_events(), ZONES), _learned_fact("a1")]:
        got = ingest(db, m.summary_topic(s.store_id), s.encode())
        assert got.outcome == "stored", got
    yield {"db": db, "path": path}
    db.close()


def test_a_planted_fleet_is_reported_as_planted(hub: dict[str, Any]) -> None:
    result = fleet_check(hub["db"], now=NOW)
    assert [f["store_id"] for f in result["facts"]] == ["a1"]
    assert result["facts"][0]["fleet_kind"] == result["fleet"][0]["kind"]  # a fact links to its fleet row
    (row,) = result["fleet"]
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
    # one family of tests: the seven stores with data, BH-adjusted together
    assert result["tested"] == 7
    adjusted = sorted(t["p_adjusted"] for t in row["stores"] if "p_adjusted" in t)
    assert adjusted == pytest.approx(
        sorted(F.bh_adjust([t["p_value"] for t in row["stores"] if t["p_value"] is not None]))
    )
    # pooled over the stores with data: heterogeneous (one reversed), an interval, I^2 high
    pooled = row["pooled"]
    assert pooled["ci"][0] < pooled["effect"] < pooled["ci"][1]
    assert pooled["i2"] > 0.5


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
        ("en", ("holds in 5 of 8", "reversed in r1")),
        ("zh", ("8 家中 5 家成立", "r1 相反")),
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
