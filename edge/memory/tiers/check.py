"""The tier checks of ``adamm check`` (:mod:`edge.memory.integrity` runs them): one message per problem.

- ``archive``: every archive file is there and at least as long as the memory recorded; every
  indexed member decompresses and holds, at the indexed line, the indexed event (whose canonical
  hash is the recorded one when the record was exact);
- ``tier_counts``: per closed store-local day, the rollup's count (plus the events that arrived
  after the day closed) equals the events in the memory plus the archived ones, each counted once
  (restored events are in both); archived events of a day that is not closed are still in the
  memory; every event the rollup of a closed day cites is in the memory or the archive;
- ``warm_vectors``: warm vectors are ``VECTOR_DIM`` int8 values with a finite, positive scale, belong
  to an event, and no event has the same modality both hot and warm.

Read-only. Called by :func:`edge.memory.integrity.check_memory`.
"""

from __future__ import annotations

import math
from pathlib import Path

import apsw

from edge.errors import AdammError
from edge.memory.db.migrations import MODALITY_VECTOR_TABLES, VECTOR_DIM
from edge.memory.ingest.build import content_hash
from edge.memory.tiers.archive import EXACT, ArchiveReader, hash_key


def _has(conn: apsw.Connection, table: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_schema WHERE name = ?", (table,)).fetchone() is not None


def check_archive(conn: apsw.Connection, folder: Path) -> list[str]:
    if not _has(conn, "archive_files"):
        return []
    out: list[str] = []
    usable: set[str] = set()
    for name, size in conn.execute("SELECT file, size FROM archive_files ORDER BY file"):
        path = folder / str(name)
        try:
            on_disk = path.stat().st_size
        except OSError:
            out.append(f"archive file {path} is missing ({size} bytes recorded): restore it from a backup")
            continue
        if on_disk < int(size):
            out.append(f"archive file {path} is cut short: {on_disk} bytes, the memory recorded {size}")
            continue
        usable.add(str(name))
    reader = ArchiveReader(folder)
    bad_members: set[tuple[str, int]] = set()
    mismatched = 0
    example = ""
    for eid, file, offset, length, line, digest, flags in conn.execute(
        "SELECT a.event_id, f.file, m.offset, m.length, a.line, a.hash, a.flags FROM archive_index AS a "
        "JOIN archive_members AS m ON m.id = a.member JOIN archive_files AS f ON f.id = m.file_id "
        "ORDER BY f.file, m.offset, a.line"
    ):
        if str(file) not in usable:
            continue
        key = (str(file), int(offset))
        if key in bad_members:
            continue
        try:
            rec = reader.record(str(file), int(offset), int(length), int(line))
        except AdammError as exc:
            bad_members.add(key)
            out.append(f"archive file {folder / str(file)}: {exc}")
            continue
        except ValueError:
            mismatched += 1
            example = example or str(eid)
            continue
        if rec.get("event_id") != eid or (int(flags) & EXACT and hash_key(content_hash(rec)) != int(digest)):
            mismatched += 1
            example = example or str(eid)
    if mismatched:
        out.append(f"{mismatched} archived events do not match their archive line (first: {example})")
    return out


def check_counts(conn: apsw.Connection) -> list[str]:
    if not _has(conn, "archive_index") or not _has(conn, "rollup_days"):
        return []
    out: list[str] = []
    row = conn.execute("SELECT high_water FROM rollup_state WHERE id = 1").fetchone()
    high = int(row[0]) if row else 0

    def by_day(sql: str, *params: object) -> dict[tuple[str, str], int]:
        return {(str(s), str(d)): int(n) for s, d, n in conn.execute(sql, params)}

    closed = {
        (str(s), str(d)): (int(n), int(late))
        for s, d, n, late in conn.execute(
            "SELECT store_id, local_date, events, late_events FROM rollup_days WHERE state = 'closed'"
        )
    }
    held = by_day("SELECT store_id, local_date, count(*) FROM events GROUP BY 1, 2")
    archived = by_day(
        "SELECT f.store_id, a.local_date, count(*) FROM archive_index AS a JOIN archive_members AS m "
        "ON m.id = a.member JOIN archive_files AS f ON f.id = m.file_id GROUP BY 1, 2"
    )
    both = by_day(
        "SELECT e.store_id, e.local_date, count(*) FROM events AS e JOIN archive_index AS a "
        "ON a.event_id = e.event_id GROUP BY 1, 2"
    )
    pending = by_day("SELECT store_id, local_date, count(*) FROM events WHERE id > ? GROUP BY 1, 2", high)
    # restored under a new rowid (their old one was taken): the rollup counts them as late
    renumbered = by_day(
        "SELECT e.store_id, e.local_date, count(*) FROM events AS e JOIN archive_index AS a "
        "ON a.event_id = e.event_id WHERE a.restored_at IS NOT NULL AND e.id <> a.rowid_was GROUP BY 1, 2"
    )
    for key, (n, late) in sorted(closed.items()):
        have = held.get(key, 0) + archived.get(key, 0) - both.get(key, 0) - pending.get(key, 0)
        want = n + late - renumbered.get(key, 0)
        if have != want:
            s, d = key
            out.append(
                f"store {s} day {d}: the rollup holds {n} events (+{late} late), the memory and the archive "
                f"hold {have} ({held.get(key, 0)} in the memory, {archived.get(key, 0)} archived)"
            )
    lost = by_day(
        "SELECT f.store_id, a.local_date, count(*) FROM archive_index AS a JOIN archive_members AS m "
        "ON m.id = a.member JOIN archive_files AS f ON f.id = m.file_id WHERE NOT EXISTS "
        "(SELECT 1 FROM events AS e WHERE e.event_id = a.event_id) AND NOT EXISTS (SELECT 1 FROM rollup_days AS d "
        "WHERE d.store_id = f.store_id AND d.local_date = a.local_date AND d.state = 'closed') GROUP BY 1, 2"
    )
    for (s, d), n in sorted(lost.items()):
        out.append(
            f"store {s} day {d}: {n} events are only in the archive but the day is not closed in the rollup"
        )
    (uncited,) = conn.execute(
        "SELECT count(*) FROM (SELECT first_event_id AS id FROM rollup_hourly_coarse AS r WHERE EXISTS "
        "(SELECT 1 FROM rollup_days AS d WHERE d.store_id = r.store_id AND d.local_date = r.local_date "
        "AND d.state = 'closed') UNION SELECT last_event_id FROM rollup_hourly_coarse AS r WHERE EXISTS "
        "(SELECT 1 FROM rollup_days AS d WHERE d.store_id = r.store_id AND d.local_date = r.local_date "
        "AND d.state = 'closed')) AS c WHERE c.id IS NOT NULL "
        "AND NOT EXISTS (SELECT 1 FROM events AS e WHERE e.event_id = c.id) "
        "AND NOT EXISTS (SELECT 1 FROM archive_index AS a WHERE a.event_id = c.id)"
    ).fetchone() or (0,)
    if uncited:
        out.append(
            f"{uncited} events cited by the rollup of closed days are neither in the memory nor in the archive"
        )
    return out


def check_warm_vectors(conn: apsw.Connection) -> list[str]:
    out: list[str] = []
    for modality, table in MODALITY_VECTOR_TABLES.items():
        warm = f"{table}_warm"
        if not _has(conn, warm):
            continue
        bad = 0
        for _rowid, scale, q in conn.execute(f"SELECT rowid, scale, q FROM {warm}"):
            if not isinstance(q, bytes) or len(q) != VECTOR_DIM or not (math.isfinite(scale) and scale > 0):
                bad += 1
        if bad:
            out.append(
                f"{bad} warm {modality} vectors ({warm}) are not {VECTOR_DIM} int8 values with a positive scale"
            )
        (orphans,) = conn.execute(
            f"SELECT count(*) FROM {warm} WHERE rowid NOT IN (SELECT id FROM events)"
        ).fetchone() or (0,)
        if orphans:
            out.append(f"{orphans} warm {modality} vectors ({warm}) belong to no event")
        (twice,) = conn.execute(
            f"SELECT count(*) FROM {warm} WHERE rowid IN (SELECT rowid FROM {table}_rowids)"
        ).fetchone() or (0,)
        if twice:
            out.append(f"{twice} events have both a float32 and an int8 {modality} vector")
    return out


def archive_folder_of(conn: apsw.Connection, db_path: Path) -> Path:
    """The archive folder ``adamm maintain`` last used (recorded in ``settings``), else the default."""
    row = conn.execute("SELECT value FROM settings WHERE key = 'tiers.archive_dir'").fetchone()
    if row is not None:
        return Path(str(row[0]))
    return db_path.expanduser().resolve().parent
