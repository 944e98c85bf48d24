"""``adamm demo`` end to end: simulate, import through the real store, answer through the real engine.

Runs a short simulation (35 days) into a real SQLite + sqlite-vec memory in a tmp dir via
``edge.cli.main``; checks the payloads against payload.schema.json and that the planted rain effect
on order value is found.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from edge.cli import main
from edge.demo import DemoOptions, demo_questions, prepare_db
from edge.errors import UsageError
from edge.sim import SimConfig, expected

SCHEMA_DIR = Path(__file__).resolve().parents[1] / "edge" / "schemas"


def test_questions_cover_both_languages_and_the_real_training_date() -> None:
    cfg = SimConfig(days=92)
    questions = [q.question for q in demo_questions(cfg)]
    assert len(questions) >= 10
    chinese = [q for q in questions if any("\u4e00" <= ch <= "\u9fff" for ch in q)]
    assert len(chinese) >= 5 and len(questions) - len(chinese) >= 5
    training = expected(cfg)["training_date"]
    assert sum(training in q for q in questions) == 2


def test_refuses_to_overwrite_a_memory(tmp_path: Path) -> None:
    from edge.errors import NotAMemoryError
    from edge.memory.store import Store

    db = tmp_path / "store.db"
    Store.open(db, timezone="UTC").close()
    before = db.read_bytes()
    with pytest.raises(UsageError):
        prepare_db(DemoOptions(db=db))
    assert db.read_bytes() == before
    assert prepare_db(DemoOptions(db=db, force=True)) == db
    assert not db.exists()
    other = tmp_path / "other.db"
    other.write_bytes(b"not empty")  # not an adamm memory: never replaced, even with --force
    with pytest.raises(NotAMemoryError):
        prepare_db(DemoOptions(db=other, force=True))
    assert other.read_bytes() == b"not empty"
    assert main(["demo", "--db", str(tmp_path / "x.db"), "--days", "3"]) == 2


def test_demo_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "demo.db"
    rc = main(["demo", "--db", str(db), "--days", "35", "--json"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    payloads: list[dict[str, Any]] = json.loads(captured.out)
    questions = demo_questions(SimConfig(days=35))
    assert [p["question"] for p in payloads] == [q.question for q in questions]
    schema = json.loads((SCHEMA_DIR / "payload.schema.json").read_text(encoding="utf-8"))
    plan_schema = json.loads((SCHEMA_DIR / "plan.schema.json").read_text(encoding="utf-8"))
    for p in payloads:
        jsonschema.validate(p, schema)
        if p["status"] != "unsupported":
            jsonschema.validate(p["plan"], plan_schema)
    assert "adamm demo: importing" in captured.err or "adamm demo: imported" in captured.err
    by_question = {p["question"]: p for p in payloads}
    for q in (
        "下雨天和晴天相比，哪种天气客单价更高？",
        "Is average order value higher on rainy days or sunny days?",
    ):
        rain = by_question[q]
        assert rain["status"] == "ok", rain["summary"]
        groups = rain["result"]["groups"]
        assert groups[0]["key"] == "rain" and groups[0]["value"] > groups[1]["value"]
        assert rain["result"]["significant"] is True
    assert by_question["Predict next month's footfall."]["status"] == "refused"
    assert by_question["过去一年每周客流趋势怎么样？"]["status"] == "insufficient_data"
    # a second run into the same memory is refused (exit 2) rather than mixing two simulations
    assert main(["demo", "--db", str(db), "--days", "35"]) == 2
