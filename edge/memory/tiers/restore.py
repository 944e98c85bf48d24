"""``adamm restore``: archived events back, as imported, and into the hot tier.

:func:`restore` reads each event's record from the archive (the MEV as imported: every field,
vectors at float32 precision; vectors that were computed at import, not carried by the line, are
left out of the printed record but go back into the memory) and, in one writer transaction:

- an event whose rows were deleted by the cold step is inserted again under its old rowid when it
  is free and the rollup has counted it (so the rollup does not see it as new: a closed day stays
  the record and nothing is counted twice), else under a new one (the rollup then counts it as a
  late event of a closed day: kept, not added to the day's figures); its media reference points
  where the warm step moved the file, if it did;
- a warm event gets its float32 vectors back;
- either is marked ``restored_at`` (``archive_index``), which keeps it hot for ``[tiers]
  restore_keep_days``; it stays archived.

Called by :mod:`edge.cli.cmd_restore`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import apsw
import numpy as np

from edge.errors import StoreError
from edge.memory.db.migrations import MODALITY_VECTOR_TABLES, VECTOR_DIM
from edge.memory.ingest.build import EVENT_COLUMNS, LocalTime, build, utc_text, zone
from edge.memory.ingest.mev import LineRejected, check_line
from edge.memory.tiers import archive
from edge.memory.tiers.steps import Places, warm_place


@dataclass
class RestoreResult:
    """The records found (in the order asked), the ids not archived (with why) and what moved."""

    records: list[dict[str, Any]] = field(default_factory=list)
    missing: list[tuple[str, str]] = field(default_factory=list)
    reinserted: int = 0
    promoted: int = 0
    already_hot: int = 0


def printed(mev: dict[str, Any], given: list[str] | None) -> dict[str, Any]:
    """The record as imported: only the vectors the imported line carried."""
    out = dict(mev)
    emb = out.get("embedding")
    if isinstance(emb, dict) and given is not None:
        kept = {m: v for m, v in emb.items() if m in given}
        if kept:
            out["embedding"] = kept
        else:
            out.pop("embedding")
    return out


def restore(
    conn: apsw.Connection, places: Places, event_ids: list[str], *, write: bool = True
) -> RestoreResult:
    """Read (and unless ``write`` is false, restore) ``event_ids`` on the writer connection, inside
    the caller's transaction."""
    res = RestoreResult()
    wanted = list(dict.fromkeys(event_ids))
    rows = archive.index_rows(conn, wanted)
    reader = archive.ArchiveReader(places.archive)
    now = datetime.now(UTC).isoformat()
    imported_at = utc_text(datetime.now(UTC))
    zones = {str(s): str(tz) for s, tz in conn.execute("SELECT store_id, timezone FROM stores")}
    for eid in wanted:
        row = rows.get(eid)
        if row is None:
            held = conn.execute("SELECT tier FROM events WHERE event_id = ?", (eid,)).fetchone()
            why = (
                f"not archived: it is in the {held[0]} tier of the memory (adamm search finds it)"
                if held is not None
                else "no such event in the memory or its archive"
            )
            res.missing.append((eid, why))
            continue
        mev = reader.record(str(row["file"]), int(row["offset"]), int(row["length"]), int(row["line"]))
        if mev.get("event_id") != eid:
            res.missing.append(
                (eid, f"the archive line for it holds {mev.get('event_id')!r} (run adamm check)")
            )
            continue
        given = archive.given_of(int(row["flags"]))
        res.records.append(printed(mev, given))
        if not write:
            continue
        held = conn.execute("SELECT id, tier FROM events WHERE event_id = ?", (eid,)).fetchone()
        if held is None:
            _reinsert(conn, places, mev, int(row["rowid_was"]), zones, imported_at)
            res.reinserted += 1
        elif str(held[1]) == "warm":
            _promote(conn, int(held[0]), mev)
            res.promoted += 1
        else:
            res.already_hot += 1
        conn.execute("UPDATE archive_index SET restored_at = ? WHERE event_id = ?", (now, eid))
    return res


def _vectors(mev: dict[str, Any]) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for modality, vec in (mev.get("embedding") or {}).items():
        if modality in MODALITY_VECTOR_TABLES and len(vec) == VECTOR_DIM:
            out[modality] = np.asarray(vec, dtype=np.float32).tobytes()
    return out


def _promote(conn: apsw.Connection, rowid: int, mev: dict[str, Any]) -> None:
    for modality, blob in _vectors(mev).items():
        table = MODALITY_VECTOR_TABLES[modality]
        conn.execute(f"DELETE FROM {table}_warm WHERE rowid = ?", (rowid,))
        conn.execute(f"DELETE FROM {table} WHERE rowid = ?", (rowid,))
        conn.execute(f"INSERT INTO {table}(rowid, embedding) VALUES (?, ?)", (rowid, blob))
    conn.execute("UPDATE events SET tier = 'hot' WHERE id = ?", (rowid,))


def _reinsert(
    conn: apsw.Connection,
    places: Places,
    mev: dict[str, Any],
    rowid_was: int,
    zones: dict[str, str],
    imported_at: str,
) -> None:
    line = archive.encode_line(mev).decode("utf-8")
    try:
        checked = check_line(line)
    except LineRejected as exc:  # the archive wrote what the import had accepted
        raise StoreError(
            f"the archived record of {mev.get('event_id')} no longer validates: {exc.reason}",
            hint="run adamm check",
        ) from None
    tz = zones.get(str(mev["store_id"]), "UTC")
    rows = build(checked, 1, LocalTime(zone(tz)), imported_at)
    taken = conn.execute("SELECT 1 FROM events WHERE id = ?", (rowid_was,)).fetchone()
    (high,) = conn.execute("SELECT high_water FROM rollup_state WHERE id = 1").fetchone() or (0,)
    if taken is None and rowid_was <= int(high):  # the rollup has counted that rowid: it stays counted once
        rid = rowid_was
    else:  # above every id the rollup has counted, so the rollup sees it as arriving now
        (top,) = conn.execute("SELECT coalesce(max(id), 0) FROM events").fetchone() or (0,)
        rid = max(int(top), int(high)) + 1
    cols = ", ".join(EVENT_COLUMNS)
    conn.execute(
        f"INSERT INTO events({cols}) VALUES ({', '.join('?' * len(EVENT_COLUMNS))})", (rid, *rows.event)
    )
    conn.executemany(
        "INSERT INTO event_attrs(event_rowid, key, value_text, value_num) VALUES (?, ?, ?, ?)",
        [(rid, *a) for a in rows.attrs],
    )
    refs = []
    for seq, ref in rows.refs:
        target = warm_place(places, ref)
        if target is not None and target[0].exists():
            ref = target[1]
        refs.append((rid, seq, ref))
    conn.executemany("INSERT INTO raw_refs(event_rowid, seq, ref) VALUES (?, ?, ?)", refs)
    conn.executemany(
        "INSERT OR IGNORE INTO entities(event_rowid, entity) VALUES (?, ?)", [(rid, e) for e in rows.entities]
    )
    conn.executemany(
        "INSERT INTO relations(event_rowid, seq, head, type, tail) VALUES (?, ?, ?, ?, ?)",
        [(rid, *r) for r in rows.relations],
    )
    for modality, blob in _vectors(mev).items():
        conn.execute(
            f"INSERT INTO {MODALITY_VECTOR_TABLES[modality]}(rowid, embedding) VALUES (?, ?)", (rid, blob)
        )
