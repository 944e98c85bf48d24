"""The parser's development question set (tests/data/dev): well-formed, balanced zh/en, and every
expected plan value one that plan.schema.json and the simulator's vocabulary allow, so a miss
there is the parser's and not the set's."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from edge.analysis.plan import plan_schema
from edge.sim.catalog import VOCABULARY

DEV = Path(__file__).resolve().parent / "data" / "dev"
SCHEMA = plan_schema()
DEFS = SCHEMA["$defs"]
INTENTS = set(SCHEMA["properties"]["intent"]["enum"])
METRICS = set(DEFS["metric"]["enum"])
DIMENSIONS = set(DEFS["dimension"]["enum"])
BUCKETS = set(SCHEMA["properties"]["time_bucket"]["enum"])
LAST = re.compile(DEFS["time_range"]["properties"]["last"]["pattern"])
UNANSWERABLE_KINDS = {
    "unknown_measure",
    "unknown_attribute",
    "unknown_value",
    "unknown_period",
    "unread_condition",
    "out_of_scope",
}
#: expect paths whose value is "present" or checked below; any other path is a mistake in the set
KNOWN_PATHS = {
    "intent",
    "target_metric",
    "second_metric",
    "language",
    "group_by",
    "time_bucket",
    "top_k",
    "compare.dimension",
    "compare.periods",
    "pair.a",
    "filters.time_range",
    "filters.time_range.last",
    "filters.time_range.since",
    "filters.event_type",
    "filters.entities",
}


def _rows(name: str) -> list[dict[str, Any]]:
    text = (DEV / name).read_text(encoding="utf-8")
    return [json.loads(x) for x in text.splitlines() if x.strip()]


def _lang(q: str) -> str:
    return "zh" if re.search(r"[\u4e00-\u9fff]", q) else "en"


def _problems(row: dict[str, Any]) -> list[str]:
    exp = row["expect"]
    bad: list[str] = []
    if exp.get("intent") not in INTENTS:
        bad.append(f"intent {exp.get('intent')!r}")
    if exp.get("language") != _lang(row["q"]):
        bad.append("language")
    needs_metric = exp.get("intent") not in ("retrieve", "co_occurrence")
    if needs_metric and "target_metric" not in exp:
        bad.append("no target_metric")
    for key in ("target_metric", "second_metric"):
        if key in exp and exp[key] not in METRICS:
            bad.append(f"{key} {exp[key]!r}")
    if exp.get("intent") == "correlation" and "second_metric" not in exp:
        bad.append("correlation without second_metric")
    for path, want in exp.items():
        if path.startswith("filters.attributes."):
            attr = path.removeprefix("filters.attributes.")
            if want not in VOCABULARY.attributes.get(attr, ()):
                bad.append(f"{path} {want!r}")
        elif path not in KNOWN_PATHS:
            bad.append(f"unknown path {path}")
    if any(d not in DIMENSIONS for d in exp.get("group_by", [])):
        bad.append(f"group_by {exp['group_by']}")
    if "compare.dimension" in exp and exp["compare.dimension"] not in DIMENSIONS:
        bad.append("compare.dimension")
    if "time_bucket" in exp and exp["time_bucket"] not in BUCKETS:
        bad.append("time_bucket")
    if "filters.time_range.last" in exp and not LAST.fullmatch(exp["filters.time_range.last"]):
        bad.append("filters.time_range.last")
    if "top_k" in exp and not (isinstance(exp["top_k"], int) and 1 <= exp["top_k"] <= 1000):
        bad.append("top_k")
    if any(t not in VOCABULARY.event_types for t in exp.get("filters.event_type", [])):
        bad.append("filters.event_type")
    if any(e not in VOCABULARY.entities for e in exp.get("filters.entities", [])):
        bad.append("filters.entities")
    if row.get("where", "hub") != "hub" or not row.get("kind"):
        bad.append("where/kind")
    return bad


def test_answerable_dev_questions_are_valid_and_cover_every_intent_and_metric() -> None:
    rows = _rows("answerable.jsonl")
    bad = {r["q"]: p for r in rows if (p := _problems(r))}
    assert bad == {}
    assert sorted(_lang(r["q"]) for r in rows).count("zh") == 100 and len(rows) == 200
    assert len({r["q"] for r in rows}) == len(rows)
    assert {r["expect"]["intent"] for r in rows} == INTENTS
    assert {
        r["expect"][k] for r in rows for k in ("target_metric", "second_metric") if k in r["expect"]
    } == METRICS
    assert any(r.get("where") == "hub" for r in rows if _lang(r["q"]) == "zh")
    assert any(r.get("where") == "hub" for r in rows if _lang(r["q"]) == "en")


def test_unanswerable_dev_questions_are_balanced_and_labelled() -> None:
    rows = _rows("unanswerable.jsonl")
    assert len(rows) == 90 and sum(_lang(r["q"]) == "zh" for r in rows) == 45
    assert {r["kind"] for r in rows} == UNANSWERABLE_KINDS
    assert all(set(r) == {"q", "kind"} for r in rows)
    assert len({r["q"] for r in rows}) == len(rows)
    answerable = {r["q"] for r in _rows("answerable.jsonl")}
    assert not answerable & {r["q"] for r in rows}
