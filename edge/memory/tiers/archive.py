"""The cold archive: gzip JSON Lines of MEV records, one file per store-month, and its index.

Files: ``<archive_dir>/<database file name>.<store_id>.<YYYY-MM>.mev.jsonl.gz``. Each maintain
batch appends one gzip member per file it touches (concatenated members are one valid gzip
stream, so ``zcat FILE | adamm import --db OTHER -`` reads a whole file back). ``archive_members``
records each member (byte offset, length, time span) and ``archive_index`` maps each event id to
its member and its line inside it.

Crash safety: the database is the truth. ``archive_files.size`` is the number of bytes the
database has committed to; a batch first cuts the file back to that size (whatever a killed run
wrote after it is dropped), appends its member, fsyncs, and only then, in the same transaction
that deletes or marks the events, records the new size and the index rows. Killed before that
commit, the events are still where they were and the next run writes them again.

Called by :mod:`edge.memory.tiers.steps`, :mod:`edge.memory.tiers.restore` and
:mod:`edge.memory.tiers.check`.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import zlib
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import apsw
import orjson

from edge.errors import StoreError
from edge.memory.db.migrations import MODALITY_VECTOR_TABLES
from edge.memory.tiers.records import Record


def archive_dir(db_path: str | os.PathLike[str], configured: str | None) -> Path:
    """The archive folder: ``configured`` (``[tiers] archive_dir``), else the database's folder."""
    if configured:
        return Path(configured).expanduser()
    return Path(db_path).expanduser().resolve().parent


def file_name(db_path: str | os.PathLike[str], store_id: str, month: str) -> str:
    return f"{Path(db_path).name}.{store_id}.{month}.mev.jsonl.gz"


def encode_line(mev: dict[str, Any]) -> bytes:
    return orjson.dumps(mev) + b"\n"


MODALITY_BITS = {m: 1 << (i + 1) for i, m in enumerate(MODALITY_VECTOR_TABLES)}
EXACT = 1


def hash_key(content_hash: str) -> int:
    """The first 8 bytes of a sha256 hex digest as a signed 64-bit integer (``archive_index.hash``)."""
    return int.from_bytes(bytes.fromhex(content_hash[:16]), "big", signed=True)


def flags_of(exact: bool, given: Sequence[str]) -> int:
    return (EXACT if exact else 0) | sum(MODALITY_BITS.get(m, 0) for m in set(given))


def given_of(flags: int) -> list[str] | None:
    """The modalities the imported line carried, or None when the record is not known to be exact."""
    if not flags & EXACT:
        return None
    return [m for m, bit in MODALITY_BITS.items() if flags & bit]


def append(
    conn: apsw.Connection,
    folder: Path,
    db_path: str | os.PathLike[str],
    recs: Sequence[Record],
    *,
    crash: Any = None,
) -> int:
    """Append ``recs`` to their store-month files and index them, on the writer connection inside
    the caller's transaction. Returns the number of records written."""
    by_file: dict[tuple[str, str], list[Record]] = {}
    for r in recs:
        by_file.setdefault((r.store_id, r.local_date[:7]), []).append(r)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(
            f"cannot create the archive folder {folder}: {exc.strerror or exc}",
            hint="set [tiers] archive_dir to a folder adamm can write, then run adamm maintain again",
        ) from None
    now = datetime.now(UTC).isoformat()
    for (store, month), group in sorted(by_file.items()):
        name = file_name(db_path, store, month)
        path = folder / name
        row = conn.execute("SELECT id, size FROM archive_files WHERE file = ?", (name,)).fetchone()
        committed = int(row[1]) if row else 0
        data = gzip.compress(b"".join(encode_line(r.mev) for r in group), compresslevel=9, mtime=0)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                size = os.fstat(fd).st_size
                if size < committed:
                    raise StoreError(
                        f"the archive file {path} is shorter than the memory recorded ({size} < {committed} bytes)",
                        hint="restore it from a backup; adamm check lists what is missing",
                    )
                if size > committed:
                    os.ftruncate(fd, committed)  # an interrupted earlier write
                os.lseek(fd, committed, os.SEEK_SET)
                view = memoryview(data)
                while view:
                    n = os.write(fd, view)
                    view = view[n:]
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            raise StoreError(
                f"cannot write the archive file {path}: {exc.strerror or exc}",
                hint="free some space or fix the folder's permissions ([tiers] archive_dir), then run adamm maintain again",
            ) from None
        if row is None:
            _fsync_dir(folder)
        if crash is not None:
            crash("archive_written")
        if row is None:
            conn.execute(
                "INSERT INTO archive_files(file, store_id, month, size) VALUES (?, ?, ?, ?)",
                (name, store, month, committed + len(data)),
            )
            file_id = int(conn.last_insert_rowid())
        else:
            file_id = int(row[0])
            conn.execute("UPDATE archive_files SET size = ? WHERE id = ?", (committed + len(data), file_id))
        conn.execute(
            "INSERT INTO archive_members(file_id, offset, length, events, min_ts, max_ts, archived_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                file_id,
                committed,
                len(data),
                len(group),
                min(r.ts_epoch for r in group),
                max(r.ts_epoch for r in group),
                now,
            ),
        )
        member = int(conn.last_insert_rowid())
        conn.executemany(
            "INSERT INTO archive_index(event_id, member, line, local_date, ts, rowid_was, hash, flags, restored_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL) "
            "ON CONFLICT(event_id) DO UPDATE SET member = excluded.member, line = excluded.line, "
            "local_date = excluded.local_date, ts = excluded.ts, rowid_was = excluded.rowid_was, "
            "hash = excluded.hash, flags = excluded.flags",
            [
                (
                    r.event_id,
                    member,
                    i,
                    r.local_date,
                    math.floor(r.ts_epoch),
                    r.rowid,
                    hash_key(r.content_hash),
                    flags_of(r.exact, r.given),
                )
                for i, r in enumerate(group)
            ],
        )
    return len(recs)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class ArchiveReader:
    """Reads members of archive files (each member decompressed once per reader)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._members: dict[tuple[str, int], list[bytes]] = {}

    def member(self, file: str, offset: int, length: int) -> list[bytes]:
        """The lines of one member (a :class:`StoreError` when the file or member is unreadable)."""
        key = (file, offset)
        hit = self._members.get(key)
        if hit is not None:
            return hit
        path = self.folder / file
        try:
            with open(path, "rb") as fh:
                fh.seek(offset)
                data = fh.read(length)
        except OSError as exc:
            raise StoreError(
                f"cannot read the archive file {path}: {exc.strerror or exc}",
                hint="check [tiers] archive_dir; adamm check lists what the archive lacks",
            ) from None
        if len(data) != length:
            raise StoreError(f"the archive file {path} is cut short at byte {offset + len(data)}")
        try:
            raw = zlib.decompress(data, wbits=31)
        except zlib.error as exc:
            raise StoreError(f"the archive file {path} is damaged at byte {offset}: {exc}") from None
        lines = raw.splitlines()
        if len(self._members) > 256:
            self._members.clear()
        self._members[key] = lines
        return lines

    def record(self, file: str, offset: int, length: int, line: int) -> dict[str, Any]:
        lines = self.member(file, offset, length)
        if not 0 <= line < len(lines):
            raise StoreError(f"the archive file {self.folder / file} has no line {line} at byte {offset}")
        loaded: dict[str, Any] = orjson.loads(lines[line])
        return loaded


#: the columns of :func:`index_rows`
INDEX_COLUMNS = (
    "event_id",
    "store_id",
    "local_date",
    "ts",
    "rowid_was",
    "hash",
    "flags",
    "restored_at",
    "file",
    "offset",
    "length",
    "line",
)
INDEX_SELECT = (
    "SELECT a.event_id, f.store_id, a.local_date, a.ts, a.rowid_was, a.hash, a.flags, a.restored_at, "
    "f.file, m.offset, m.length, a.line FROM archive_index AS a JOIN archive_members AS m ON m.id = a.member "
    "JOIN archive_files AS f ON f.id = m.file_id"
)


def index_rows(conn: apsw.Connection, event_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """event_id -> its archive row (:data:`INDEX_COLUMNS`) for those of ``event_ids`` that are archived."""
    out: dict[str, dict[str, Any]] = {}
    ids = list(event_ids)
    for i in range(0, len(ids), 5000):
        chunk = json.dumps(ids[i : i + 5000])
        for row in conn.execute(
            f"{INDEX_SELECT} WHERE a.event_id IN (SELECT value FROM json_each(?))",
            (chunk,),
        ):
            d = dict(zip(INDEX_COLUMNS, row, strict=True))
            out[str(d["event_id"])] = d
    return out
