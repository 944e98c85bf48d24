"""POS tail mode: a JSON Lines file followed like ``tail -F`` (appends, rotation, truncation, a
partial last line), with the byte offset saved in the real store so a restart neither loses nor
repeats a purchase."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from daemon_media import daemon_config, until

from edge.capture.pos import JsonlTail, TailState, tail_setting_key
from edge.daemon.app import AdammDaemon, StoreSink


def bill(n: int, amount: float = 10.0) -> str:
    row = {"bill_id": f"B{n}", "timestamp": f"2026-03-01T10:{n // 60:02d}:{n % 60:02d}+08:00"}
    row["order_amount"] = amount  # type: ignore[assignment]
    return json.dumps(row) + "\n"


def append(path: Path, text: str) -> None:
    with path.open("a", encoding="utf-8") as f:
        f.write(text)


def texts(lines: list[tuple[int, bytes]]) -> list[str]:
    return [json.loads(raw)["bill_id"] for _, raw in lines]


def test_tail_follows_appends_and_waits_for_a_partial_line(tmp_path: Path) -> None:
    path = tmp_path / "pos.jsonl"
    tail = JsonlTail(path)
    assert tail.read() == []  # no file yet: nothing, no error
    path.write_text(bill(1) + bill(2), encoding="utf-8")
    assert texts(tail.read()) == ["B1", "B2"]
    assert tail.read() == []
    half = bill(3)
    append(path, half[:12])  # the POS is still writing this line
    assert tail.read() == [] and tail.pending_bytes() == 12
    append(path, half[12:] + bill(4))
    lines = tail.read()
    assert texts(lines) == ["B3", "B4"]
    assert lines[0][0] == len(bill(1) + bill(2))  # byte offset of each line
    assert tail.state == TailState(os.stat(path).st_ino, path.stat().st_size)
    tail.close()


def test_tail_survives_rotation_and_truncation(tmp_path: Path) -> None:
    path = tmp_path / "pos.jsonl"
    path.write_text(bill(1), encoding="utf-8")
    tail = JsonlTail(path)
    assert texts(tail.read()) == ["B1"]
    append(path, bill(2))  # written just before the rotation, not yet read
    path.rename(tmp_path / "pos.jsonl.1")
    assert texts(tail.read()) == ["B2"]  # mid-rotation: the old file is still followed
    path.write_text(bill(3), encoding="utf-8")
    assert texts(tail.read()) == ["B3"] and tail.rotations == 1
    with path.open("w", encoding="utf-8") as f:  # truncated in place, then part of a new line
        f.write(bill(5)[:5])
    assert tail.read() == []
    append(path, bill(5)[5:])
    assert texts(tail.read()) == ["B5"] and tail.truncations == 1
    tail.close()


def test_saved_offset_is_used_only_for_the_same_file(tmp_path: Path) -> None:
    path = tmp_path / "pos.jsonl"
    path.write_text(bill(1) + bill(2), encoding="utf-8")
    ino = os.stat(path).st_ino
    assert texts(JsonlTail(path, TailState(ino, len(bill(1)))).read()) == ["B2"]
    assert texts(JsonlTail(path, TailState(ino + 1, len(bill(1)))).read()) == ["B1", "B2"]  # replaced
    assert texts(JsonlTail(path, TailState(ino, 10_000)).read()) == ["B1", "B2"]  # truncated while down
    assert TailState.loads("garbage") is None and TailState.loads(TailState(1, 2).dumps()) == TailState(1, 2)


def _config(tmp: Path, tail: Path) -> Any:
    return daemon_config(
        tmp, heartbeat_seconds=0.2, pos={"enabled": True, "tail": str(tail), "poll_seconds": 0.05}
    )


def _purchases(db: Path) -> list[str]:
    import apsw

    from edge.memory.db.connect import connect

    if not db.exists():
        return []
    # the store's own factory: a read-only connection with the busy timeout (a bare one failed
    # with BusyError about 1 run in 10 while the daemon wrote)
    conn = connect(db, readonly=True, create=False)
    try:
        return [str(r[0]) for r in conn.execute("SELECT event_id FROM events WHERE event_type = 'purchase'")]
    except apsw.SQLError:
        return []
    finally:
        conn.close()


def _start(cfg: Any) -> tuple[AdammDaemon, threading.Thread]:
    daemon = AdammDaemon(cfg)
    t = threading.Thread(target=daemon.start, name="test-daemon", daemon=True)
    t.start()
    return daemon, t


def test_live_tail_restart_loses_and_repeats_nothing(tmp_path: Path) -> None:
    tail = tmp_path / "pos" / "transactions.jsonl"
    tail.parent.mkdir()
    tail.write_text(bill(1) + bill(2), encoding="utf-8")
    cfg = _config(tmp_path, tail)
    db = tmp_path / "store.db"

    daemon, t = _start(cfg)
    until(lambda: len(_purchases(db)) == 2, "the two lines already in the file")
    append(tail, bill(3) + bill(4) + bill(5)[:9])  # appended while running; B5 half written
    until(lambda: len(_purchases(db)) == 4, "the appended lines")
    daemon.request_stop()
    t.join(60)
    assert not t.is_alive()
    assert sorted(_purchases(db)) == ["pos.pos1.B1", "pos.pos1.B2", "pos.pos1.B3", "pos.pos1.B4"]

    # while the daemon is down: B5 is completed, more is appended, then the log rotates
    append(tail, bill(5)[9:] + bill(6))
    tail.rename(tail.with_name("transactions.jsonl.1"))
    tail.write_text("", encoding="utf-8")
    sink = StoreSink(str(db), "Asia/Shanghai")
    saved = TailState.loads(sink.load_setting(tail_setting_key(tail)))
    sink.close()
    assert saved is not None and saved.offset == len(bill(1) + bill(2) + bill(3) + bill(4))

    # a rotation while down: the rest of the rotated file (same inode) first, then the new file
    daemon, t = _start(cfg)
    until(lambda: "pos.pos1.B6" in _purchases(db), "the lines left in the rotated file")
    append(tail, bill(7))
    until(lambda: "pos.pos1.B7" in _purchases(db), "a line in the new file")
    tail.rename(tail.with_name("transactions.jsonl.2"))  # rotation while running
    tail.write_text(bill(8), encoding="utf-8")
    until(lambda: "pos.pos1.B8" in _purchases(db), "a line after a live rotation")
    daemon.request_stop()
    t.join(60)
    ids = _purchases(db)
    assert len(ids) == len(set(ids))  # nothing stored twice
    assert sorted(ids) == [f"pos.pos1.B{i}" for i in range(1, 9)]
    assert daemon.pos is not None and daemon.pos.status()["tail_rotations"] == 1


def test_restart_resumes_at_the_saved_offset(tmp_path: Path) -> None:
    tail = tmp_path / "transactions.jsonl"
    tail.write_text(bill(1) + bill(2) + bill(3)[:7], encoding="utf-8")
    cfg = _config(tmp_path, tail)
    db = tmp_path / "store.db"
    first = AdammDaemon(cfg, until_eof=True).start()
    assert first.events_written == 2 and sorted(_purchases(db)) == ["pos.pos1.B1", "pos.pos1.B2"]
    append(tail, bill(3)[7:] + bill(4))  # the partial line completed, one more line
    second = AdammDaemon(cfg, until_eof=True).start()
    assert second.events_written == 2  # B3 and B4 only: B1 and B2 are not offered again
    assert sorted(_purchases(db)) == [f"pos.pos1.B{i}" for i in range(1, 5)]
    third = AdammDaemon(cfg, until_eof=True).start()
    assert third.events_written == 0
