"""Crash safety: SIGKILL ``adamm import`` mid-file, then the file is intact and a re-run completes it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import apsw
import pytest

TOTAL = 80_000


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")
def test_sigkill_mid_import_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    src = tmp_path / "big.jsonl"
    with src.open("w", encoding="utf-8") as f:
        for i in range(TOTAL):
            f.write(
                json.dumps(
                    {
                        "event_id": f"k{i}",
                        "timestamp": f"2025-10-{1 + i % 30:02d}T{i % 24:02d}:00:00Z",
                        "store_id": "s1",
                        "event_type": "purchase",
                        "modality": ["pos"],
                        "raw_ref": [f"pos://t/{i}", f"pos://u/{i}"],
                        "stats": {"order_amount": i % 97, "bill_id": f"b{i}", "lane": i % 5},
                    }
                )
                + "\n"
            )
    db = tmp_path / "crash.db"
    cmd = [sys.executable, "-m", "edge", "import", "--db", str(db), "--tz", "UTC", "--batch-size", "500"]
    proc = subprocess.Popen([*cmd, str(src)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        stored = 0
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
            if not db.exists():
                continue
            try:
                conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
                conn.set_busy_timeout(1000)
                (stored,) = conn.execute("SELECT COUNT(*) FROM events").fetchone()  # type: ignore[misc]
                conn.close()
            except apsw.Error:
                continue
            if stored >= 5000:
                break
        assert proc.poll() is None, "import finished before it could be killed; raise TOTAL"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL

    conn = apsw.Connection(str(db))
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    (before,) = conn.execute("SELECT COUNT(*) FROM events").fetchone()  # type: ignore[misc]
    conn.close()
    assert 5000 <= before < TOTAL and before % 500 == 0  # whole batches only

    rerun = subprocess.run([*cmd, "--json", str(src)], capture_output=True, check=False, timeout=300)
    assert rerun.returncode == 0, rerun.stderr.decode()
    report = json.loads(rerun.stdout)
    assert report["accepted"] == TOTAL - before
    assert report["duplicates"] == before
    assert report["accepted"] + report["duplicates"] == TOTAL and report["rejected"] == 0

    conn = apsw.Connection(str(db))
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    assert conn.execute("SELECT COUNT(*), COUNT(DISTINCT event_id) FROM events").fetchone() == (TOTAL, TOTAL)
    assert conn.execute("SELECT COUNT(*) FROM raw_refs").fetchone() == (2 * TOTAL,)
    assert conn.execute("SELECT COUNT(*) FROM event_attrs").fetchone() == (TOTAL,)
    conn.close()
