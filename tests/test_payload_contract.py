"""The payload invariants of CONTRACT.md section 4, checked for every registered operator.

One plan per registered intent (a new operator must add one here) is run on the simulated
75-day memory and on the thin 5-day one: the payload validates against payload.schema.json,
every evidence id exists in the memory, the confidence follows n/(n+decay_base) with the
significance cap, low_confidence and its wording follow, and every number in the summary is a
number of the result.
"""

from __future__ import annotations

import importlib.resources
import json
import math
import re
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest
from engine_data import Memory, full_memory, thin_memory

from edge.analysis.engine import run_plan
from edge.analysis.operators import registry
from edge.config import AnalysisConfig
from edge.memory.store import Store

PLANS: dict[str, dict[str, Any]] = {
    "retrieve": {
        "intent": "retrieve",
        "semantic_query": "顾客投诉排队太久",
        "filters": {"event_type": ["complaint"]},
    },
    "aggregate": {
        "intent": "aggregate",
        "target_metric": "avg_order_value",
        "filters": {"time_range": {"last": "P1W"}},
    },
    "trend": {"intent": "trend", "target_metric": "peak_hour", "filters": {"time_range": {"last": "P2M"}}},
    "compare": {
        "intent": "compare",
        "target_metric": "queue_length",
        "compare": {"dimension": "promotion", "groups": ["true", "false"]},
    },
    "anomaly": {"intent": "anomaly", "target_metric": "footfall", "time_bucket": "day"},
    "periodicity": {"intent": "periodicity", "target_metric": "revenue"},
    "co_occurrence": {"intent": "co_occurrence", "pair": {"a": "promotion_broadcast", "b": "checkout_queue"}},
    "breakdown": {"intent": "breakdown", "target_metric": "revenue", "group_by": ["hour"]},
    "top_k": {"intent": "top_k", "target_metric": "dwell_time", "group_by": ["zone"], "top_k": 3},
    "correlation": {"intent": "correlation", "target_metric": "footfall", "second_metric": "revenue"},
    "forecast": {"intent": "forecast", "target_metric": "footfall", "horizon": "P1M"},
}

NUM = re.compile(r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?", re.IGNORECASE)


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    text = (
        importlib.resources.files("edge").joinpath("schemas/payload.schema.json").read_text(encoding="utf-8")
    )
    return json.loads(text)


@pytest.fixture(scope="module", params=["full", "thin"])
def memory(request: pytest.FixtureRequest) -> Iterator[tuple[Memory, Store]]:
    mem = full_memory() if request.param == "full" else thin_memory()
    store = Store.open(mem.path, readonly=True)
    yield mem, store
    store.close()


def _numbers_of(value: Any, out: list[float]) -> None:
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, int | float):
        out.append(float(value))
    elif isinstance(value, str):
        out.extend(float(m) for m in NUM.findall(value))
    elif isinstance(value, dict):
        for v in value.values():
            _numbers_of(v, out)
    elif isinstance(value, list):
        for v in value:
            _numbers_of(v, out)


def _decimals(token: str) -> int:
    mant = token.lower().split("e")[0]
    return len(mant.split(".")[1]) if "." in mant else 0


def summary_numbers_in_result(summary: str, result: dict[str, Any]) -> list[str]:
    """Tokens of ``summary`` that are no number of ``result`` (rounded as written; % as x100)."""
    pool: list[float] = []
    _numbers_of(result, pool)
    candidates = [abs(x) for x in pool] + [abs(x) * 100 for x in pool]
    bad = []
    for m in NUM.finditer(summary):
        tok = m.group(0)
        v = abs(float(tok))
        if "e" in tok.lower():
            ok = any(math.isclose(v, c, rel_tol=0.05) for c in candidates)
        else:
            tol = 0.5 * 10 ** (-_decimals(tok)) + 1e-9
            ok = any(abs(v - c) <= tol for c in candidates)
        if not ok:
            bad.append(tok)
    return bad


def weakest_n(intent: str, result: dict[str, Any]) -> int | None:
    """The n of the confidence formula, recomputed from the result where the result shows it."""
    if intent == "aggregate":
        return int(result["n"])
    if intent == "compare":
        return min(g["n"] for g in result["groups"][:2])
    if intent == "trend":
        return min(s["n"] for s in result["series"] if not s.get("partial"))  # cut-short buckets are not fitted
    if intent == "breakdown":
        return min(p["n"] for p in result["parts"][:2])
    if intent == "top_k":
        return min(i["n"] for i in result["items"])
    if intent == "correlation":
        return int(result["n"])
    if intent == "co_occurrence":
        return int(result["pairs"][0]["count"])
    return None


def test_every_registered_operator_has_a_contract_plan() -> None:
    assert set(registry()) == set(PLANS)


@pytest.mark.parametrize("intent", sorted(PLANS))
def test_payload_invariants(intent: str, memory: tuple[Memory, Store], schema: dict[str, Any]) -> None:
    mem, store = memory
    cfg = AnalysisConfig()
    p = run_plan(PLANS[intent], store.event_source(), question="q", now=mem.now, config=cfg, language="en")
    jsonschema.validate(p, schema)
    op = registry()[intent]
    assert p["operator"] == {"name": op.name, "version": op.version}
    assert p["low_confidence"] == (p["confidence"] < 0.5)
    assert not summary_numbers_in_result(p["summary"], p["result"]), p["summary"]
    if p["status"] != "ok":
        assert p["result"] == {} and p["evidence"] == [] and p["action"] is None
        if p["status"] == "insufficient_data":
            assert p["missing"]
        return
    # result keys of CONTRACT.md section 3
    assert set(op.output_keys) <= set(p["result"])
    # evidence: present, capped, weights in range, ids exist in the memory
    assert p["evidence"] and len(p["evidence"]) <= cfg.evidence_cap
    assert p["evidence_count"] >= len(p["evidence"])
    ids = [e["event_id"] for e in p["evidence"]]
    assert len(ids) == len(set(ids))
    with store.read() as conn:
        marks = ",".join("?" * len(ids))
        found = {r[0] for r in conn.execute(f"SELECT event_id FROM events WHERE event_id IN ({marks})", ids)}
    assert found == set(ids)
    # confidence = n / (n + decay_base), capped at 0.5 when p >= 0.05
    c = p["confidence"]
    assert 0 < c < 1
    n_implied = cfg.decay_base * c / (1 - c)
    pv = p["result"].get("p_value")
    capped = pv is not None and pv >= 0.05 and c == 0.5
    if not capped:
        assert abs(n_implied - round(n_implied)) < 1e-3 * max(1.0, n_implied)
        n = weakest_n(intent, p["result"])
        if n is not None:
            assert c == pytest.approx(n / (n + cfg.decay_base), abs=1e-6)
    if pv is not None and pv >= 0.05:
        assert c <= 0.5
    if p["low_confidence"]:
        assert "weak" in p["summary"] and p["action"] is None


def test_summary_number_check_catches_invented_numbers() -> None:
    result = {"groups": [{"key": "rain", "value": 128.7231, "n": 412}], "diff_pct": 33.12, "p_value": 1.2e-10}
    assert summary_numbers_in_result("rain 128.72, +33.1%, p=1.2e-10, n=412", result) == []
    assert summary_numbers_in_result("rain 128.72 vs 97", result) == ["97"]
