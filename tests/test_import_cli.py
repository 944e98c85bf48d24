"""``adamm import`` from outside: exit codes, --json, stderr reasons, stdin, gzip."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from edge.analysis.source import EventFilter
from edge.cli import main
from edge.memory.store import Store


def ev(i: int, **over: Any) -> dict[str, Any]:
    e: dict[str, Any] = {
        "event_id": f"c{i}",
        "timestamp": f"2025-11-{1 + i % 28:02d}T10:00:00-05:00",
        "store_id": "nyc",
        "event_type": "customer_enter",
        "modality": ["video"],
        "raw_ref": [f"file:///clips/{i}.mp4"],
        "stats": {"person_count": 1 + i % 3},
    }
    e.update(over)
    return e


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_good_file_exit_0_and_json_counts(tmp_path: Path, capsys: Any) -> None:
    src = write(tmp_path / "a.jsonl", [json.dumps(ev(i)) for i in range(30)] + [""])
    db = tmp_path / "m.db"
    assert main(["import", "--db", str(db), "--tz", "America/New_York", "--json", str(src)]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == {"accepted": 30, "rejected": 0, "duplicates": 0, "merged": 0}
    assert list(json.loads(out)) == ["accepted", "rejected", "duplicates", "merged"]
    assert main(["import", "--db", str(db), "--json", str(src)]) == 0
    assert json.loads(capsys.readouterr().out)["duplicates"] == 30
    with Store.open(db, readonly=True) as store:
        assert store.timezone("nyc") == "America/New_York"


def test_bad_lines_reported_with_numbers_exit_1(tmp_path: Path, capsys: Any) -> None:
    lines = [json.dumps(ev(1)), "{oops", json.dumps(ev(2, stats={"person_count": "two"})), json.dumps(ev(3))]
    src = write(tmp_path / "b.jsonl", lines)
    assert main(["import", "--db", str(tmp_path / "m.db"), "--tz", "UTC", "--json", str(src)]) == 1
    out, err = capsys.readouterr()
    assert json.loads(out) == {"accepted": 2, "rejected": 2, "duplicates": 0, "merged": 0}
    reject_lines = [x for x in err.splitlines() if x.startswith("line ")]
    assert reject_lines[0].startswith("line 2: not valid JSON")
    assert reject_lines[1] == 'line 3: stats.person_count must be an integer, got "two"'


def test_usage_errors_exit_2(tmp_path: Path, capsys: Any) -> None:
    src = write(tmp_path / "c.jsonl", [json.dumps(ev(1))])
    assert main(["import", "--db", str(tmp_path / "m.db"), "--tz", "Nowhere/Town", str(src)]) == 2
    assert main(["import", "--db", str(tmp_path / "m.db"), str(tmp_path / "missing.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "unknown time zone 'Nowhere/Town'" in err and "does not exist" in err


def test_unreadable_database_exit_3(tmp_path: Path, capsys: Any) -> None:
    src = write(tmp_path / "d.jsonl", [json.dumps(ev(1))])
    not_a_db = tmp_path / "junk.db"
    not_a_db.write_bytes(b"this is not sqlite" * 100)
    assert main(["import", "--db", str(not_a_db), "--tz", "UTC", str(src)]) == 3
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_stdin_gzip_and_overlong_line(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    payload = "\n".join(json.dumps(ev(i)) for i in range(5)) + "\n"
    proc = subprocess.run(
        [sys.executable, "-m", "edge", "import", "--db", str(db), "--tz", "UTC", "--json", "-"],
        input=payload.encode(),
        capture_output=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["accepted"] == 5
    gz = tmp_path / "e.jsonl.gz"
    big = json.dumps(ev(99, text="x" * 3_000_000))
    with gzip.open(gz, "wt", encoding="utf-8") as f:
        f.write("\n".join([json.dumps(ev(10)), big, json.dumps(ev(11))]) + "\n")
    proc = subprocess.run(
        [sys.executable, "-m", "edge", "import", "--db", str(db), "--json", str(gz)],
        capture_output=True,
        check=False,
    )
    assert proc.returncode == 1
    assert json.loads(proc.stdout) == {"accepted": 2, "rejected": 1, "duplicates": 0, "merged": 0}
    assert "line 2: line is longer than 1 MB" in proc.stderr.decode()


def _caches(db: Path) -> tuple[bool, bool]:
    """(hourly rollup holds every event, a persisted vocabulary exists) for the memory at ``db``."""
    with Store.open(db, readonly=True) as store, store.read() as conn:
        (top,) = conn.execute("SELECT max(id) FROM events").fetchone()
        stale, high = conn.execute("SELECT stale, high_water FROM rollup_state").fetchone()
        (vocab,) = conn.execute("SELECT count(*) FROM vocabulary_cache").fetchone()
    return (stale == 0 and high == top), vocab == 1


def test_import_prepares_the_question_caches(tmp_path: Path, capsys: Any) -> None:
    src = write(tmp_path / "a.jsonl", [json.dumps(ev(i)) for i in range(40)])
    db = tmp_path / "m.db"
    assert main(["import", "--db", str(db), "--tz", "America/New_York", "--no-prepare", str(src)]) == 0
    assert _caches(db) == (False, False)  # left to the first question
    more = write(tmp_path / "b.jsonl", [json.dumps(ev(i)) for i in range(40, 60)])
    assert main(["import", "--db", str(db), str(more)]) == 0
    assert _caches(db) == (True, True)
    # replacing an event marks the rollup stale; the import brings it up to date again
    changed = write(tmp_path / "c.jsonl", [json.dumps(ev(3, stats={"person_count": 9}))])
    assert main(["import", "--db", str(db), "--replace", str(changed)]) == 0
    assert _caches(db) == (True, True)
    with Store.open(db) as store:
        got = store.event_source().aggregate(EventFilter(event_types=("customer_enter",)), [], ["footfall"])
    assert got.column("footfall") == [sum(1 + i % 3 for i in range(60)) - (1 + 3 % 3) + 9]


def test_events_dated_more_than_a_day_ahead_of_the_clock_are_refused_with_the_reason(
    tmp_path: Path, capsys: Any
) -> None:
    """The hub would not believe such a day (CONTRACT.md section 5), so the store never makes one."""
    from datetime import UTC, datetime, timedelta

    soon = (datetime.now(UTC) + timedelta(hours=20)).strftime("%Y-%m-%dT%H:%M:%SZ")
    later = (datetime.now(UTC) + timedelta(hours=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    lines = [json.dumps(ev(1)), json.dumps(ev(2, timestamp="2099-01-15T10:00:00+08:00"))]
    lines += [json.dumps(ev(3, timestamp=soon)), json.dumps(ev(4, timestamp=later))]
    src = write(tmp_path / "f.jsonl", lines)
    assert main(["import", "--db", str(tmp_path / "m.db"), "--tz", "UTC", "--json", str(src)]) == 1
    out, err = capsys.readouterr()
    assert json.loads(out) == {"accepted": 2, "rejected": 2, "duplicates": 0, "merged": 0}
    rejects = [x for x in err.splitlines() if x.startswith("line ")]
    assert [x.split(":")[0] for x in rejects] == ["line 2", "line 4"]
    assert "2099-01-15T10:00:00+08:00 is more than a day after the clock" in rejects[0]
