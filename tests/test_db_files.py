"""Opening database files: what is not an adamm memory is refused untouched, missing memories are
not created by readers, newer and damaged memories are refused, ``adamm check`` finds damage and
tampered caches, read-only copies answer, asking writes no data, every connection waits on locks.

Real SQLite files throughout (copies of a simulated memory, another program's database made with
apsw, files damaged by overwriting bytes of their pages).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import apsw
import numpy as np
import pytest
from engine_data import thin_memory

from edge.cli import main
from edge.memory.db import connect as db
from edge.memory.db.migrations import MIGRATIONS, SCHEMA_VERSION
from edge.memory.store import Store

SIDECARS = ("-wal", "-shm", "-journal")
#: the memory's data (what asking must not change); caches and bookkeeping are left out
DATA_TABLES = (
    "stores",
    "settings",
    "events",
    "event_attrs",
    "raw_refs",
    "entities",
    "relations",
    "facts",
    "procedures",
    "actions",
    "components",
    "outbox",
    "outbox_payloads",
    "sync_dirty",
    "vec_text",
    "vec_image",
    "vec_audio",
    "vec_video",
)
QUESTIONS = (
    "How many customers came in yesterday?",
    "上周的客单价是多少？",
    "Compare revenue on rainy and sunny days",
    "顾客投诉最多的是什么时候？",
)


def _copy_memory(dst_dir: Path, name: str = "store.db") -> Path:
    src = thin_memory().path
    dst = dst_dir / name
    dst_dir.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        if Path(f"{src}{suffix}").exists():
            shutil.copy(f"{src}{suffix}", f"{dst}{suffix}")
    return dst


# -- files that are not an adamm memory ----------------------------------------------------------


def _empty(p: Path) -> None:
    p.write_bytes(b"")


def _foreign(p: Path) -> None:
    conn = apsw.Connection(str(p))
    conn.execute("CREATE TABLE foo(a INTEGER, b TEXT); INSERT INTO foo VALUES (1, 'x'), (2, 'y')")
    conn.close()


def _foreign_wal(p: Path) -> None:
    conn = apsw.Connection(str(p))
    conn.pragma("journal_mode", "wal")
    conn.execute("CREATE TABLE foo(a INTEGER); INSERT INTO foo VALUES (1)")
    conn.close()


def _foreign_with_app_id(p: Path) -> None:
    conn = apsw.Connection(str(p))
    conn.pragma("application_id", 0x12345678)
    conn.execute("CREATE TABLE _migrations(name TEXT)")
    conn.close()


def _text(p: Path) -> None:
    p.write_text("this is a shopping list, not a database\n" * 50, encoding="utf-8")


KINDS: dict[str, Callable[[Path], None]] = {
    "empty": _empty,
    "foreign_sqlite": _foreign,
    "foreign_sqlite_wal": _foreign_wal,
    "foreign_app_id": _foreign_with_app_id,
    "text": _text,
}


def _commands(tmp: Path, f: Path) -> dict[str, list[str]]:
    labels = tmp / "labels.jsonl"
    labels.write_text(json.dumps({"query": "x", "relevant": ["e1"]}) + "\n", encoding="utf-8")
    mev = tmp / "one.jsonl"
    mev.write_text("", encoding="utf-8")
    return {
        "ask": ["ask", "--db", str(f), "how many customers came in yesterday?"],
        "search": ["search", "--db", str(f), "queue"],
        "import": ["import", "--db", str(f), "--tz", "UTC", str(mev)],
        "procedures": ["procedures", "--db", str(f)],
        "tune": ["tune", "--db", str(f), "--labels", str(labels), "--config", str(tmp / "tune.toml")],
        "tui": ["tui", "--db", str(f)],
        "demo": ["demo", "--db", str(f), "--days", "14"],
        "demo_force": ["demo", "--db", str(f), "--days", "14", "--force"],
        "check": ["check", "--db", str(f)],
        "action": ["action", "send", "--db", str(f), "--broker", "mqtt://127.0.0.1:1", "--role", "cashier",
                   "--type", "alert", "--title", "x"],
        "action_sync": ["action", "sync", "--db", str(f), "--broker", "mqtt://127.0.0.1:1"],
        "actions": ["actions", "--db", str(f)],
        "maintain": ["maintain", "--db", str(f)],
        "restore": ["restore", "--db", str(f), "e1"],
    }  # fmt: skip


def _fingerprint(p: Path) -> tuple[bytes, int, list[str]]:
    return p.read_bytes(), p.stat().st_mtime_ns, sorted(x.name for x in p.parent.iterdir())


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize(
    "command",
    ["ask", "search", "import", "procedures", "tune", "tui", "demo", "demo_force", "check", "action",
     "action_sync", "actions", "maintain", "restore"],
)  # fmt: skip
def test_a_file_that_is_no_memory_is_refused_and_left_untouched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, command: str
) -> None:
    f = tmp_path / "data" / "other.db"
    f.parent.mkdir()
    KINDS[kind](f)
    argv = _commands(tmp_path, f)[command]
    before = _fingerprint(f)
    assert main(argv) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    if command != "check":
        assert "not an adamm memory" in err
    assert _fingerprint(f) == before
    assert not any(Path(f"{f}{s}").exists() for s in SIDECARS)
    assert not (tmp_path / "tune.toml").exists()


def test_the_daemon_refuses_a_file_that_is_no_memory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from daemon_media import daemon_config

    from edge.daemon.app import AdammDaemon
    from edge.errors import NotAMemoryError

    cfg = daemon_config(tmp_path)
    f = Path(cfg.db)
    _foreign(f)
    before = _fingerprint(f)[:2]
    with pytest.raises(NotAMemoryError):
        AdammDaemon(cfg, until_eof=True).start()
    assert _fingerprint(f)[:2] == before
    assert not any(Path(f"{f}{s}").exists() for s in SIDECARS)


@pytest.mark.parametrize(
    "command",
    [
        "ask",
        "search",
        "procedures",
        "tune",
        "tui",
        "check",
        "action",
        "action_sync",
        "actions",
        "maintain",
        "restore",
    ],
)
def test_readers_do_not_create_a_missing_memory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    f = tmp_path / "nowhere.db"
    assert main(_commands(tmp_path, f)[command]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert not f.exists() and not any(Path(f"{f}{s}").exists() for s in SIDECARS)


def test_import_creates_a_memory_marked_as_adamms(tmp_path: Path) -> None:
    f = tmp_path / "new.db"
    mev = tmp_path / "e.jsonl"
    mev.write_text(
        json.dumps(
            {
                "event_id": "e1",
                "timestamp": "2025-11-01T09:30:00+08:00",
                "store_id": "s1",
                "event_type": "purchase",
                "modality": ["pos"],
                "raw_ref": ["pos://1"],
                "stats": {"order_amount": 3.5},
            }
        )
        + "\n",
        encoding="utf-8",
    )
    assert main(["import", "--db", str(f), "--tz", "Asia/Shanghai", "--no-prepare", str(mev)]) == 0
    with f.open("rb") as fh:
        header = fh.read(100)
    assert int.from_bytes(header[68:72], "big") == db.APPLICATION_ID
    assert int.from_bytes(header[60:64], "big") == SCHEMA_VERSION == len(MIGRATIONS)


# -- older and newer memories ----------------------------------------------------------------------


def _raw(p: Path, *sql: str, **pragmas: int) -> None:
    conn = apsw.Connection(str(p))
    for k, v in pragmas.items():
        conn.pragma(k, v)
    for s in sql:
        conn.execute(s)
    conn.close()


def test_an_older_memory_without_application_id_opens_and_gets_it_on_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = _copy_memory(tmp_path)
    _raw(f, application_id=0, user_version=0)
    assert main(["search", "--db", str(f), "--json", ""]) == 0
    assert json.loads(capsys.readouterr().out)["results"]
    with Store.open(f, readonly=True) as ro, ro.read() as conn:
        assert conn.pragma("application_id") == 0  # a read-only open changes nothing
    with Store.open(f) as rw, rw.read() as conn:
        assert conn.pragma("application_id") == db.APPLICATION_ID
        assert conn.pragma("user_version") == SCHEMA_VERSION


@pytest.mark.parametrize("how", ["migration", "user_version"])
@pytest.mark.parametrize("command", ["ask", "search", "import", "check"])
def test_a_memory_from_a_newer_adamm_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str, command: str
) -> None:
    f = _copy_memory(tmp_path)
    if how == "migration":
        _raw(f, "INSERT INTO _migrations(name, applied_at) VALUES ('9999_from_the_future', 'x')")
    else:
        _raw(f, user_version=SCHEMA_VERSION + 1)
    argv = _commands(tmp_path, f)[command]
    before = _fingerprint(f)
    assert main(argv) == 3
    out, err = capsys.readouterr()
    said = out if command == "check" else err
    assert "newer adamm" in said and "upgrade adamm" in said
    assert _fingerprint(f) == before


# -- damage and adamm check ------------------------------------------------------------------------


def _pages_of(p: Path, *tables: str) -> list[int]:
    conn = apsw.Connection(f"file:{p}?mode=ro", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    try:
        marks = ",".join("?" * len(tables))
        return [int(r[0]) for r in conn.execute(f"SELECT pageno FROM dbstat WHERE name IN ({marks})", tables)]
    finally:
        conn.close()


def _damage(p: Path, pages: list[int]) -> None:
    size = 4096
    conn = apsw.Connection(f"file:{p}?mode=ro", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    size = int(conn.pragma("page_size"))
    conn.close()
    rng = np.random.default_rng(1)
    with p.open("r+b") as fh:
        for page in pages:
            fh.seek((page - 1) * size + 8)
            fh.write(rng.integers(0, 256, size - 16, dtype=np.uint8).tobytes())


def test_check_says_a_sound_memory_is_sound(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = _copy_memory(tmp_path)
    before = _fingerprint(f)
    assert main(["check", "--db", str(f), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is True and report["problems"] == []
    assert {"sqlite", "vectors", "rollup", "tiers"} <= set(report["checks"])
    assert _fingerprint(f) == before


def test_check_and_ask_on_a_damaged_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = _copy_memory(tmp_path)
    pages = _pages_of(f, "events", "rollup_hourly", "rollup_hourly_coarse")
    _damage(f, pages[len(pages) // 3 : len(pages) // 3 + 4] + pages[-2:])
    assert main(["check", "--db", str(f)]) == 3
    out, err = capsys.readouterr()
    assert out.strip() and all(line.split(":")[0] for line in out.splitlines())
    assert err.count("\n") == 1
    assert main(["check", "--db", str(f), "--json"]) == 3
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False and any(p["check"] == "sqlite" for p in report["problems"])
    rc = main(
        ["ask", "--db", str(f), "--now", "2030-01-01T00:00:00+08:00", "How many events were there in total?"]
    )
    err = capsys.readouterr().err
    assert rc == 3 and f"adamm check --db {f}" in err and err.count("\n") == 1


def test_check_finds_a_tampered_rollup(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = _copy_memory(tmp_path)
    with Store.open(f) as store:
        assert store.event_source().rollup_state() is not None  # fresh
    conn = apsw.Connection(str(f))
    store_id, day, etype, n = conn.execute(
        "SELECT store_id, local_date, event_type, n FROM rollup_hourly ORDER BY rowid LIMIT 1"
    ).fetchone()  # type: ignore[misc]
    conn.execute("UPDATE rollup_hourly SET n = n + 2 WHERE rowid = (SELECT min(rowid) FROM rollup_hourly)")
    conn.close()
    assert main(["check", "--db", str(f), "--json"]) == 3
    problems = json.loads(capsys.readouterr().out)["problems"]
    assert [p["check"] for p in problems] == ["rollup"]
    (msg,) = [p["message"] for p in problems]
    assert "rollup_hourly:" in msg and store_id in msg and day in msg and etype in msg


def test_check_finds_malformed_vectors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = _copy_memory(tmp_path)
    conn = db.connect(f)
    row = conn.execute("SELECT rowid FROM vec_text ORDER BY rowid LIMIT 1").fetchone()
    if row is None:  # no text encoder when the memory was built: give one event a vector
        (rid,) = conn.execute("SELECT min(id) FROM events").fetchone()  # type: ignore[misc]
        conn.execute(
            "INSERT INTO vec_text(rowid, embedding) VALUES (?, ?)", (rid, np.ones(512, np.float32).tobytes())
        )
    else:
        (rid,) = row
    bad = np.ones(512, np.float32)
    bad[7] = np.nan
    conn.execute("UPDATE vec_text SET embedding = ? WHERE rowid = ?", (bad.tobytes(), rid))
    conn.close()
    assert main(["check", "--db", str(f)]) == 3
    out = capsys.readouterr().out
    assert "vectors:" in out and "NaN" in out and str(rid) in out


# -- read-only copies ------------------------------------------------------------------------------


@pytest.fixture()
def readonly_copy(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "ro"
    f = _copy_memory(folder)
    assert not any(Path(f"{f}{s}").exists() for s in SIDECARS)
    f.chmod(0o444)
    folder.chmod(0o555)
    try:
        yield f
    finally:
        folder.chmod(0o755)
        f.chmod(0o644)


def test_ask_and_search_answer_from_a_read_only_copy(
    readonly_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = readonly_copy
    before = _fingerprint(f)
    assert not db.can_write(f) and "immutable=1" in db.readonly_uri(f)
    for q in QUESTIONS[:2]:
        assert main(["ask", "--db", str(f), "--json", q]) == 0
        assert json.loads(capsys.readouterr().out)["status"] in {"ok", "insufficient_data"}
    assert main(["search", "--db", str(f), "--json", "queue"]) == 0
    assert "results" in json.loads(capsys.readouterr().out)
    assert main(["check", "--db", str(f)]) == 0
    capsys.readouterr()
    assert _fingerprint(f) == before
    assert stat.S_IMODE(f.stat().st_mode) == 0o444


def test_a_read_only_open_of_a_writable_memory_sees_what_the_writer_committed(tmp_path: Path) -> None:
    f = _copy_memory(tmp_path)
    with Store.open(f) as rw:
        rw.set_setting("probe", "1")  # committed to the WAL, not yet checkpointed
        assert "mode=ro" in db.readonly_uri(f)
        with Store.open(f, readonly=True) as ro:
            assert ro.setting("probe") == "1"


# -- asking writes no data ---------------------------------------------------------------------------


def _data_hash(p: Path) -> dict[str, str]:
    conn = db.connect(p, readonly=True)
    try:
        out = {}
        for table in DATA_TABLES:
            cols = "rowid, embedding" if table.startswith("vec_") else "*"
            h = hashlib.sha256()
            for row in conn.execute(f"SELECT {cols} FROM {table} ORDER BY 1"):
                h.update(repr(row).encode())
            out[table] = h.hexdigest()
        return out
    finally:
        conn.close()


def test_asking_writes_no_data(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = _copy_memory(tmp_path)
    before = _data_hash(f)
    for q in QUESTIONS:
        assert main(["ask", "--db", str(f), "--json", q]) == 0
        capsys.readouterr()
    assert main(["search", "--db", str(f), "--json", "queue"]) == 0
    capsys.readouterr()
    assert _data_hash(f) == before


# -- busy timeout on every connection ----------------------------------------------------------------


def _timeout(conn: apsw.Connection) -> int:
    return int(conn.pragma("busy_timeout"))


def test_every_connection_the_store_makes_has_the_busy_timeout(tmp_path: Path, readonly_copy: Path) -> None:
    from edge.memory.search import vector_index

    f = _copy_memory(tmp_path)
    seen: list[int] = []
    with Store.open(f) as rw:
        assert rw._writer_conn is not None
        seen.append(_timeout(rw._writer_conn))
        seen.append(rw.writer.submit(_timeout).result())  # the writer thread's connection
        with rw.read() as r:
            seen.append(_timeout(r))
            watcher = vector_index.VectorIndex("vec_text")._watcher(r)  # the index's own reader
            assert watcher is not None
            seen.append(_timeout(watcher))
            watcher.close()
        with Store.open(f, readonly=True) as ro, ro.read() as r2:
            seen.append(_timeout(r2))
        with Store.open(f, readonly=True) as ro:
            assert ro._keeper is not None
            seen.append(_timeout(ro._keeper))
    with Store.open(readonly_copy, readonly=True) as ro, ro.read() as r3:  # immutable=1
        seen.append(_timeout(r3))
    for readonly in (True, False):
        c = db.connect(f, readonly=readonly)
        seen.append(_timeout(c))
        c.close()
    c = db.connect(":memory:")
    seen.append(_timeout(c))
    c.close()
    assert len(seen) == 10 and set(seen) == {db.BUSY_TIMEOUT_MS}


def test_a_memory_locked_past_the_timeout_is_exit_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    f = _copy_memory(tmp_path)
    monkeypatch.setattr(db, "BUSY_TIMEOUT_MS", 200)
    holder = apsw.Connection(str(f))
    holder.execute("BEGIN EXCLUSIVE")
    try:
        mev = tmp_path / "e.jsonl"
        mev.write_text(json.dumps({"event_id": "x"}) + "\n", encoding="utf-8")
        rc = main(["import", "--db", str(f), str(mev)])
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    err = capsys.readouterr().err
    assert rc == 3 and "locked by another process" in err and err.count("\n") == 1
