"""``adamm search`` from the outside: JSON keys, usage errors, injection attempts, missing DB."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from edge.cli import main
from edge.config import AdammConfig
from edge.memory.store import Store

KEYS = ["event_id", "score", "cosine", "attr_match", "timestamp", "event_type", "store_id", "raw_ref", "text"]

EVENTS = [
    {
        "event_id": "c1",
        "timestamp": "2025-11-03T10:15:00+08:00",
        "store_id": "sh01",
        "event_type": "complaint",
        "modality": ["text", "audio"],
        "raw_ref": ["file:///media/a1.wav", "file:///media/a1.txt"],
        "text": "顾客在收银台吵架",
        "stats": {"zone": "checkout", "speech_emotion": "angry", "ticket_channel": "hotline"},
    },
    {
        "event_id": "c2",
        "timestamp": "2025-11-04T11:00:00+08:00",
        "store_id": "sh01",
        "event_type": "complaint",
        "modality": ["text"],
        "raw_ref": ["file:///media/c2.txt"],
        "text": "two customers arguing loudly at the checkout",
        "stats": {"zone": "checkout", "ticket_channel": "app", "severity": 3},
    },
    {
        "event_id": "c3",
        "timestamp": "2025-10-20T09:00:00+08:00",
        "store_id": "sh01",
        "event_type": "complaint",
        "modality": ["text"],
        "raw_ref": ["file:///media/c3.txt"],
        "text": "the fridge in aisle 3 is making a buzzing noise",
        "stats": {"zone": "aisle3", "ticket_channel": "app", "severity": 1},
    },
    {
        "event_id": "p1",
        "timestamp": "2025-11-05T12:00:00+08:00",
        "store_id": "sh01",
        "event_type": "purchase",
        "modality": ["pos"],
        "raw_ref": ["pos://t1/b1"],
        "stats": {"order_amount": 12.5, "bill_id": "b1", "zone": "checkout"},
    },
]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("search") / "store.db"
    store = Store.open(str(path), timezone="Asia/Shanghai", config=AdammConfig())
    store.import_lines([json.dumps(e, ensure_ascii=False) for e in EVENTS])
    store.close()
    yield path


def search(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    rc = main(["search", *argv])
    out, err = capsys.readouterr()
    return rc, (json.loads(out) if out.strip().startswith("{") else out), err


def test_json_output_has_exactly_the_contract_keys(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = search(capsys, "--db", str(db), "--json", "--type", "complaint", "顾客在收银台吵架")
    assert rc == 0
    assert list(out) == ["results"]
    assert [r["event_id"] for r in out["results"]][:2] == ["c1", "c2"]
    for r in out["results"]:
        assert list(r) == KEYS
        assert r["timestamp"].endswith("Z") and isinstance(r["raw_ref"], list)
    first = out["results"][0]
    assert first["timestamp"] == "2025-11-03T02:15:00Z" or first["timestamp"].startswith(
        "2025-11-03T02:15:00"
    )
    assert first["raw_ref"] == ["file:///media/a1.wav", "file:///media/a1.txt"]
    assert first["score"] == pytest.approx(0.6 * first["cosine"], abs=1e-5)  # no preferences: attr 0
    assert first["attr_match"] == 0.0


def test_where_since_until_and_a_key_that_is_not_well_known(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["--db", str(db), "--json"]
    _, out, _ = search(capsys, *base, "--where", "ticket_channel=app", "checkout")
    assert sorted(r["event_id"] for r in out["results"]) == ["c2", "c3"]
    _, out, _ = search(capsys, *base, "--where", "severity=3", "")
    assert [r["event_id"] for r in out["results"]] == ["c2"]
    _, out, _ = search(capsys, *base, "--where", "zone=checkout", "--since", "2025-11-04", "")
    # since 2025-11-04 store-local midnight (16:00Z the day before): c2 and p1, newest first
    assert [r["event_id"] for r in out["results"]] == ["p1", "c2"]
    _, out, _ = search(capsys, *base, "--until", "2025-11-03T10:15:00+08:00", "")
    assert [r["event_id"] for r in out["results"]] == ["c3"]  # [since, until): c1 is excluded
    _, out, _ = search(capsys, *base, "--type", "purchase", "--type", "complaint", "--k", "2", "")
    assert len(out["results"]) == 2


def test_prefer_raises_attr_match(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = search(
        capsys,
        "--db",
        str(db),
        "--json",
        "--prefer",
        "ticket_channel=hotline",
        "--type",
        "complaint",
        "noise",
    )
    by_id = {r["event_id"]: r for r in out["results"]}
    assert by_id["c1"]["attr_match"] == 1.0 and by_id["c3"]["attr_match"] == 0.0
    assert by_id["c1"]["score"] == pytest.approx(0.6 * by_id["c1"]["cosine"] + 0.4, abs=1e-5)


@pytest.mark.parametrize(
    "key",
    ["zone;DROP TABLE events", "zone) OR 1=1 --", "1zone", "zo ne", "e.zone", "zone'", '"zone"', ""],
)
def test_where_keys_that_are_not_identifiers_are_usage_errors(
    db: Path, capsys: pytest.CaptureFixture[str], key: str
) -> None:
    rc, out, err = search(capsys, "--db", str(db), "--json", "--where", f"{key}=x", "q")
    assert rc == 2 and out == "" and "identifier" in err
    rc, _, _ = search(capsys, "--db", str(db), "--json", "--prefer", f"{key}=x", "q")
    assert rc == 2


def test_values_are_bound_never_interpolated(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = search(capsys, "--db", str(db), "--json", "--where", "zone=x' OR '1'='1", "q")
    assert rc == 0 and out == {"results": []}
    rc, out, _ = search(capsys, "--db", str(db), "--json", "--type", "complaint", "")
    assert len(out["results"]) == 3  # the table is intact


@pytest.mark.parametrize(
    "flag,value", [("--since", "2025-11-01T00:00:00"), ("--until", "last week"), ("--since", "2025/11/01")]
)
def test_bad_times_are_usage_errors(
    db: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str
) -> None:
    rc, out, err = search(capsys, "--db", str(db), flag, value, "q")
    assert rc == 2 and out == "" and flag in err


def test_missing_database_is_an_environment_error_and_is_not_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope.db"
    rc, out, err = search(capsys, "--db", str(missing), "--json", "q")
    assert rc == 3 and out == "" and "adamm import" in err
    assert not missing.exists()


def test_readable_table_without_json(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = search(capsys, "--db", str(db), "--type", "complaint", "checkout argument")
    assert rc == 0 and "c2" in out and "score" in out


def test_help_documents_the_score(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["search", "--help"])
    out = capsys.readouterr().out
    assert "alpha*cosine + beta*attr_match" in out and "attr_match is 0" in out
