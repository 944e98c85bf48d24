"""One clock for people on the command line (issue 26, item 2): every time a CLI table shows is
store-local with its zone said (``2025-11-01 10:00:00 CST``), a fleet-wide time in the hub's own
zone; ``--json`` keeps ISO 8601 with offsets."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from actions_helpers import make_memory
from test_hub_ask import ZONES, store_events, summaries

from edge.memory.store import Store
from edge.presentation.format import zoned_time
from edge.services import actions as use
from edge.sync import messages as m
from hub.db import open_hub
from hub.ingest import ingest

ROOT = Path(__file__).resolve().parents[1]
LOCAL = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d (?:[A-Z]{2,5}|UTC[+-]\d\d:\d\d)")


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "TZ": "UTC"},
        timeout=120,
        cwd=ROOT,
    )


@pytest.mark.parametrize(
    ("tz", "shown"),
    [
        ("Asia/Shanghai", "2025-11-13 10:40:06 CST"),
        ("America/New_York", "2025-11-12 21:40:06 EST"),
        ("Asia/Singapore", "2025-11-13 10:40:06 UTC+08:00"),
        (None, "2025-11-13 02:40:06 UTC"),
    ],
)
def test_a_stored_time_is_shown_local_with_its_zone(tz: str | None, shown: str) -> None:
    assert zoned_time("2025-11-13T02:40:06.000000Z", tz) == shown
    assert zoned_time("2025-11-13T10:40:06+08:00", tz) == shown
    assert zoned_time(None, tz) == "" and zoned_time("not a time", tz) == "not a time"


def test_search_and_actions_tables_show_store_local_times(tmp_path: Path) -> None:
    db = make_memory(tmp_path / "m.db")
    out = _run("-m", "edge", "search", "--db", str(db), "--type", "customer_enter", "visitors")
    assert out.returncode == 0, out.stderr
    assert "local time" in out.stdout and "2025-11-01 10:00:00 CST" in out.stdout, out.stdout
    assert "T02:00:00" not in out.stdout
    raw = json.loads(_run("-m", "edge", "search", "--db", str(db), "--json", "visitors").stdout)
    assert all(re.search(r"T\d\d:\d\d:\d\d", r["timestamp"]) for r in raw["results"])  # JSON: ISO
    issued = datetime.now(UTC)
    with Store.open(db) as store:
        use.queue_action(
            store,
            store_id="sh_01",
            type="work_order",
            role="cashier",
            params={"title": "Open till 3"},
            summary="Open till 3",
            confidence=1.0,
            expires_at=issued + timedelta(hours=4),
        )
    table = _run("-m", "edge", "actions", "--db", str(db))
    assert table.returncode == 0, table.stderr
    times = LOCAL.findall(table.stdout)
    assert len(times) == 2 and all(t.endswith(" CST") for t in times), table.stdout
    listed = json.loads(_run("-m", "edge", "actions", "--db", str(db), "--json").stdout)["actions"]
    assert "T" in listed[0]["issued_at"]


def test_hub_status_shows_each_stores_times_in_its_zone_and_json_keeps_iso(tmp_path: Path) -> None:
    path = tmp_path / "hub.db"
    db = open_hub(str(path), create=True)
    try:
        for s in summaries(store_events(ZONES), ZONES):
            assert ingest(db, m.summary_topic(s.store_id), s.encode()).outcome == "stored"
        for sid in ZONES:
            ingest(db, m.status_topic(sid), m.status_payload("online", "2025-12-10T08:00:00Z"))
        ingest(db, m.summary_topic("s1"), b"not json")
    finally:
        db.close()
    text = _run("-m", "hub", "status", "--db", str(path))
    assert text.returncode == 0, text.stderr
    lines = {line.split()[0]: line for line in text.stdout.splitlines() if line.startswith("  s")}
    assert "online since 2025-12-10 16:00:00 CST" in lines["s1"], text.stdout
    assert "online since 2025-12-10 03:00:00 EST" in lines["s2"], text.stdout
    assert "last summary " in lines["s1"] and LOCAL.search(lines["s1"].split("last summary ")[1])
    parked = [line for line in text.stdout.splitlines() if "not_json" in line and "adamm/v1" in line]
    assert parked and parked[0].strip().split(" adamm/v1")[0].endswith(" UTC"), text.stdout  # the hub's zone
    st = json.loads(_run("-m", "hub", "status", "--db", str(path), "--json").stdout)
    s1 = next(s for s in st["stores"] if s["store_id"] == "s1")
    assert s1["at"] == "2025-12-10T08:00:00Z"  # the contract's key (status --json), ISO as sent
