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
import re
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import jsonschema
import pytest
from engine_data import FULL_DAYS, Memory, full_memory, thin_memory

from edge.analysis import honesty
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


def summary_numbers_in_result(summary: str, result: dict[str, Any]) -> list[str]:
    """Tokens of ``summary`` that are no number of ``result`` (the engine's own exit check)."""
    return honesty.numbers_outside(summary, result)


def weakest_n(intent: str, result: dict[str, Any]) -> int | None:
    """The n of the confidence formula, recomputed from the result where the result shows it."""
    if intent == "aggregate":
        return int(result["n"])
    if intent == "compare":
        return min(g["n"] for g in result["groups"][:2])
    if intent == "trend":
        return min(
            s["n"] for s in result["series"] if not s.get("partial")
        )  # cut-short buckets are not fitted
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
    if mem.config.days == FULL_DAYS:
        # the full memory holds every planted effect: each intent answers, but forecast, which the
        # engine refuses by design (it does not extrapolate: operators/forecast.py)
        assert p["status"] == ("refused" if intent == "forecast" else "ok"), (intent, p.get("missing"))
    # interpretation: what was computed, said in the question's language (here: the plan's)
    reading = p["interpretation"]
    assert reading["text"] and reading["not_understood"] == []
    assert reading["measure"] == (
        PLANS[intent].get("target_metric") if intent != "co_occurrence" else reading["measure"]
    )
    if p["status"] != "ok":
        assert p["result"] == {} and p["evidence"] == [] and p["action"] is None
        if p["status"] == "insufficient_data":
            assert p["missing"]
        return
    # result keys of CONTRACT.md section 3, and something in them (an ok answer stands on data)
    assert set(op.output_keys) <= set(p["result"])
    assert not honesty.empty_result(intent, p["result"])
    assert reading["period"] and reading["period"]["from"] <= reading["period"]["to"]
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
    hours = {"items": [{"key": 19, "value": 3896, "n": 12}]}
    assert summary_numbers_in_result("19:00-20:00 (3896)", hours) == []
    assert summary_numbers_in_result("21:00-22:00 (3896)", hours) == ["21"]


#: plans beyond PLANS that make the summaries name groups (weekend, promotion, weather, hour,
#: weekday, periods), a negative change and event types
WORDING_PLANS: dict[str, dict[str, Any]] = {
    **PLANS,
    "compare_weekend": {
        "intent": "compare",
        "target_metric": "conversion_rate",
        "compare": {"dimension": "is_weekend", "groups": ["true", "false"]},
    },
    "compare_weather": {
        "intent": "compare",
        "target_metric": "avg_order_value",
        "compare": {"dimension": "weather"},
    },
    "compare_weekday": {
        "intent": "compare",
        "target_metric": "footfall",
        "compare": {"dimension": "day_of_week"},
    },
    "compare_hours": {
        "intent": "compare",
        "target_metric": "footfall",
        "compare": {"dimension": "hour"},
        "filters": {"hours": [19]},
    },
    "breakdown_weekday": {"intent": "breakdown", "target_metric": "revenue", "group_by": ["day_of_week"]},
    "top_hours": {"intent": "top_k", "target_metric": "footfall", "group_by": ["hour"], "top_k": 3},
    "anomaly_types": {"intent": "anomaly"},
    "co_occurrence_day": {"intent": "co_occurrence", "pair": {"a": "promotion=true", "b": "complaint"}},
}

#: an English word of three letters or more
WORD = re.compile(r"[A-Za-z][A-Za-z']{2,}")
#: names that stay as they are in either language: scipy test names and stored identifiers
KEPT = {"ttest_ind", "ttest_ind_from_stats", "chi2_contingency", "mannwhitneyu", "none"}


def _identifiers(p: dict[str, Any]) -> set[str]:
    """Words of the stored values the summary may quote (event ids, product ids, zone names...)."""
    words: set[str] = set()

    def walk(v: Any) -> None:
        if isinstance(v, str):
            words.update(w.lower() for w in re.findall(r"[A-Za-z0-9_]+", v))
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    for row in (p.get("result") or {}).values():
        if isinstance(row, list):
            walk(
                [
                    {k: r.get(k) for k in ("key", "a", "b", "event_type", "event_id")}
                    for r in row
                    if isinstance(r, dict)
                ]
            )
    walk(p.get("plan", {}).get("pair", {}))
    return words


def _foreign_words(summary: str, keep: set[str]) -> list[str]:
    tokens = re.findall(r"[A-Za-z0-9_]+", summary)
    bad = []
    for tok in tokens:
        if tok.lower() in keep or tok.lower() in KEPT or "_" in tok or any(c.isdigit() for c in tok):
            continue
        if WORD.fullmatch(tok):
            bad.append(tok)
    return bad


@pytest.mark.parametrize("name", sorted(WORDING_PLANS))
def test_summaries_keep_to_one_language(name: str, memory: tuple[Memory, Store]) -> None:
    mem, store = memory
    plan = WORDING_PLANS[name]
    for lang in ("zh", "en"):
        p = run_plan(
            plan, store.event_source(), question="q", now=mem.now, config=AnalysisConfig(), language=lang
        )
        summary = p["summary"]
        if lang == "zh" and p["status"] != "insufficient_data":
            # insufficient-data texts are the engine's (language-aware there); operators' words here
            assert not _foreign_words(summary, _identifiers(p)), summary
        if lang == "en":
            assert not re.search(r"[\u4e00-\u9fff]", summary), summary
        assert not re.search(r"(?<![\w=])(?:true|false)(?![\w])", summary), summary
        assert not summary_numbers_in_result(summary, p["result"]), summary


def test_a_fall_reads_as_a_fall_in_both_languages(memory: tuple[Memory, Store]) -> None:
    """A trend whose last third is below its first says down / 下降, never a bare signed number."""
    mem, store = memory
    src = store.event_source()
    found = False
    for bucket in ("day", "week"):
        plan = {"intent": "trend", "target_metric": "footfall", "time_bucket": bucket}
        en = run_plan(plan, src, question="q", now=mem.now, config=AnalysisConfig(), language="en")
        zh = run_plan(plan, src, question="q", now=mem.now, config=AnalysisConfig(), language="zh")
        if en["status"] != "ok" or en["result"]["change_pct"] is None:
            continue
        found = True
        pct = f"{abs(en['result']['change_pct']):.1f}%"
        word_en, word_zh = ("down", "下降") if en["result"]["change_pct"] < 0 else ("up", "上升")
        assert f"{word_en} {pct}" in en["summary"] and f"{word_zh} {pct}" in zh["summary"]
        assert "+" not in en["summary"] and "+" not in zh["summary"]
    if mem.config.days >= 20:
        assert found


def test_compared_periods_say_which_way_the_later_one_went(memory: tuple[Memory, Store]) -> None:
    mem, store = memory
    mid = (mem.now - timedelta(days=mem.config.days // 2)).isoformat()
    plan = {
        "intent": "compare",
        "target_metric": "footfall",
        "compare": {
            "periods": [
                {"label": "after", "time_range": {"since": mid}},
                {"label": "before", "time_range": {"until": mid}},
            ]
        },
    }
    for lang, words in (("en", ("up", "down")), ("zh", ("上升", "下降"))):
        p = run_plan(
            plan, store.event_source(), question="q", now=mem.now, config=AnalysisConfig(), language=lang
        )
        if p["status"] != "ok":
            continue
        value = {g["key"]: g["value"] for g in p["result"]["groups"]}
        word = words[0] if value["after"] > value["before"] else words[1]
        assert word in p["summary"] and words[words.index(word) - 1] not in p["summary"], p["summary"]
        assert "+" not in p["summary"]


@pytest.mark.parametrize("name", sorted(WORDING_PLANS))
def test_rendered_answers_keep_to_one_language(name: str, memory: tuple[Memory, Store]) -> None:
    """The whole plain-text rendering (labels, tables, action, evidence) of a zh answer is Chinese
    but for identifiers; an en one has no CJK."""
    from edge.presentation import payload_text

    mem, store = memory
    for lang in ("zh", "en"):
        plan = {**WORDING_PLANS[name], "language": lang}  # as the parser writes it (action titles use it)
        p = run_plan(
            plan, store.event_source(), question="q", now=mem.now, config=AnalysisConfig(), language=lang
        )
        text = payload_text(p, lang)
        if lang == "en":
            assert not re.search(r"[\u4e00-\u9fff]", text), text
            continue
        if p["status"] == "insufficient_data":
            continue  # missing texts are the engine's
        keep = _identifiers(p) | {str(p["operator"]["name"]).lower(), "mad"}
        for row in p["result"].get("events") or []:  # media locations are paths
            keep |= {w.lower() for ref in row.get("raw_ref") or [] for w in re.findall(r"[A-Za-z0-9_]+", ref)}
        action = p.get("action") or {}
        keep |= {
            w.lower()
            for w in re.findall(r"[A-Za-z0-9_]+", json.dumps(action.get("params", {}).get("rule", "")))
        }
        for line in text.splitlines()[1:]:  # the first line echoes the question
            assert not _foreign_words(line, keep), line
