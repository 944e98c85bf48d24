"""``adamm ask`` and ``adamm procedures`` through the real command line entry point.

Each test works on its own copy of a simulated memory (tests/engine_data.py), so derived caches
refreshed by one test never shape another's answer.
"""

from __future__ import annotations

import importlib.resources
import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from engine_data import full_memory, thin_memory

from edge.analysis.operators import registry
from edge.cli import main
from edge.memory.store import Store


def _copy(src: Path, dst_dir: Path) -> Path:
    dst = dst_dir / "store.db"
    for suffix in ("", "-wal", "-shm"):
        if Path(f"{src}{suffix}").exists():
            shutil.copy(f"{src}{suffix}", f"{dst}{suffix}")
    return dst


@pytest.fixture()
def full_db(tmp_path: Path) -> Path:
    return _copy(full_memory().path, tmp_path)


def _schema() -> dict[str, Any]:
    text = (
        importlib.resources.files("edge").joinpath("schemas/payload.schema.json").read_text(encoding="utf-8")
    )
    return json.loads(text)


def test_ask_json_prints_only_the_payload(full_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    now = full_memory().now.isoformat()
    rc = main(["ask", "--db", str(full_db), "--now", now, "--json", "下雨天和晴天相比，哪种天气客单价更高？"])
    out = capsys.readouterr().out
    assert rc == 0
    payload = json.loads(out)
    jsonschema.validate(payload, _schema())
    assert payload["status"] == "ok" and payload["result"]["groups"][0]["key"] == "rain"


def test_ask_readable_output(full_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    now = full_memory().now.isoformat()
    rc = main(["ask", "--db", str(full_db), "--now", now, "Break down revenue by product category."])
    out = capsys.readouterr().out
    assert rc == 0 and "dairy" in out
    with pytest.raises(json.JSONDecodeError):
        json.loads(out)


def test_ask_relative_time_counts_from_now(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = _copy(thin_memory().path, tmp_path)
    late = "2030-01-01T00:00:00+08:00"  # "last week" from 2030: the memory holds nothing then
    rc = main(["ask", "--db", str(db), "--now", late, "--json", "How many customers came in yesterday?"])
    payload = json.loads(capsys.readouterr().out)
    assert rc == 0 and payload["status"] == "insufficient_data" and payload["missing"]


def test_now_alone_makes_a_relative_question_answerable(
    full_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """ "Last week" counted from --now (the memory's end) is covered; counted from today's clock,
    long after the simulated months, it holds nothing. So ok here comes only from --now."""
    question = "How many orders were there last week?"
    assert datetime.now(UTC) - full_memory().now > timedelta(days=30)
    rc = main(["ask", "--db", str(full_db), "--now", full_memory().now.isoformat(), "--json", question])
    with_now = json.loads(capsys.readouterr().out)
    assert rc == 0 and with_now["status"] == "ok", with_now
    rc = main(["ask", "--db", str(full_db), "--json", question])
    without = json.loads(capsys.readouterr().out)
    assert rc == 0 and without["status"] != "ok", without
    assert with_now["plan"]["intent"] == without["plan"]["intent"]


def test_missing_db_is_exit_3_and_not_created(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "nope.db"
    assert main(["ask", "--db", str(db), "anything"]) == 3
    assert not db.exists()
    err = capsys.readouterr().err
    assert "no memory at" in err and "adamm import" in err and err.count("\n") == 1


def test_bad_now_is_exit_2(full_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ask", "--db", str(full_db), "--now", "yesterday-ish", "上周的客单价是多少？"]) == 2
    assert "--now" in capsys.readouterr().err


def test_procedures_are_persisted_and_listed(full_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["procedures", "--db", str(full_db), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["procedures"]
    assert {p["intent"] for p in listed} == set(registry())
    store = Store.open(full_db, readonly=True)
    try:
        with store.read() as conn:
            rows = conn.execute("SELECT name, version, min_evidence_json FROM procedures").fetchall()
    finally:
        store.close()
    assert {r[0] for r in rows} == {op.name for op in registry().values()}
    compare = next(p for p in listed if p["name"] == "compare")
    assert compare["min_evidence"] and "groups" in compare["default_params"]["output_keys"]
    # a second listing upserts instead of duplicating
    assert main(["procedures", "--db", str(full_db)]) == 0
    text = capsys.readouterr().out
    assert (
        text.count("compare") >= 1 and len([ln for ln in text.splitlines() if ln.startswith("compare ")]) == 1
    )
