"""Where the tier boundaries are, which tiers a time range reaches, and how big each tier is.

``tier_state`` (written by :func:`edge.memory.tiers.steps.record_state` at the end of each
maintain run) holds per store the instant before which events are warm (``warm_before``) and the
store-local day before which days are cold (``cold_before``). A memory no maintain has run on is
hot throughout. Read-only: every function takes a reader connection.

Called by :mod:`edge.services.ask` (the payload's ``tiers``), ``adamm search`` (the archive
note), :mod:`edge.services.maintain` and the daemon's status.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import apsw

from edge.analysis.source import zone
from edge.memory.db.migrations import MODALITY_VECTOR_TABLES

ORDER = ("hot", "warm", "cold")


def _has(conn: apsw.Connection, table: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_schema WHERE name = ?", (table,)).fetchone() is not None


def boundaries(conn: apsw.Connection) -> tuple[float, float] | None:
    """(warm_before, cold_before) epochs over all stores, or None before the first maintain run."""
    if not _has(conn, "tier_state"):
        return None
    row = conn.execute("SELECT max(warm_before), max(cold_before) FROM tier_state").fetchone()
    if row is None or row[0] is None:
        return None
    return float(row[0]), float(row[1])


def _epoch(t: datetime | None) -> float | None:
    return None if t is None else t.timestamp()


def tiers_for(conn: apsw.Connection, windows: Iterable[tuple[datetime | None, datetime | None]]) -> list[str]:
    """The tiers that hold data of the half-open windows ``(since, until)`` (None: unbounded), in
    the order hot, warm, cold. Cold counts only when the archive holds events of the window."""
    found: set[str] = set()
    bounds = boundaries(conn)
    for since, until in windows:
        lo, hi = _epoch(since), _epoch(until)
        if bounds is None:
            found.add("hot")
            continue
        warm_before, cold_before = bounds
        if hi is None or hi > warm_before:
            found.add("hot")
        if (hi is None or hi > cold_before) and (lo is None or lo < warm_before):
            found.add("warm")
        if lo is None or lo < cold_before:
            top = cold_before if hi is None else min(hi, cold_before)
            row = conn.execute(
                "SELECT 1 FROM archive_members WHERE min_ts < ? AND max_ts >= ? LIMIT 1",
                (top, -1e18 if lo is None else lo),
            ).fetchone()
            if row is not None:
                found.add("cold")
    return [t for t in ORDER if t in found] or ["hot"]


def late_not_counted(
    conn: apsw.Connection,
    windows: Iterable[tuple[datetime | None, datetime | None]],
    store_ids: Iterable[str] = (),
) -> list[tuple[str, str, int]]:
    """``(store, local date, events)`` of the closed days within ``windows`` that events reached
    after they closed, when the day's own events were archived: those events are kept but the
    day's figures (its rollup rows, the record) do not count them."""
    if not _has(conn, "rollup_days"):
        return []
    stores = list(store_ids)
    zones = {str(s): str(tz) for s, tz in conn.execute("SELECT store_id, timezone FROM stores")}
    sql = (
        "SELECT store_id, local_date, late_events FROM rollup_days WHERE state = 'closed' AND late_events > 0"
    )
    params: list[Any] = []
    if stores:
        sql += f" AND store_id IN ({', '.join('?' * len(stores))})"
        params += stores
    found: list[tuple[str, str, int]] = []
    spans = list(windows)
    for store, day, n in conn.execute(sql, params):
        tz = zone(zones.get(str(store), "UTC"))
        for since, until in spans:
            lo = None if since is None else since.astimezone(tz).date().isoformat()
            hi = (
                None
                if until is None
                else (until - timedelta(microseconds=1)).astimezone(tz).date().isoformat()
            )
            if (lo is None or str(day) >= lo) and (hi is None or str(day) <= hi):
                found.append((str(store), str(day), int(n)))
                break
    return found


def archive_only_count(
    conn: apsw.Connection, since: datetime | None, until: datetime | None, store_ids: Iterable[str] = ()
) -> int:
    """Events of ``[since, until)`` that are only in the archive (not in the events tables)."""
    if not _has(conn, "archive_index"):
        return 0
    sql = (
        "SELECT count(*) FROM archive_index AS a WHERE NOT EXISTS "
        "(SELECT 1 FROM events AS e WHERE e.event_id = a.event_id)"
    )
    params: list[Any] = []
    if since is not None:
        sql += " AND a.ts >= ?"
        params.append(math.floor(since.timestamp()))
    if until is not None:
        sql += " AND a.ts < ?"
        params.append(math.ceil(until.timestamp()))
    stores = list(store_ids)
    if stores:
        sql += (
            " AND a.member IN (SELECT m.id FROM archive_members AS m JOIN archive_files AS f ON f.id = m.file_id "
            f"WHERE f.store_id IN ({', '.join('?' * len(stores))}))"
        )
        params += stores
    (n,) = conn.execute(sql, params).fetchone() or (0,)
    return int(n)


@dataclass
class TierSizes:
    """Events per tier (cold: archived events no longer in the events tables), the bytes of the
    database file (with its WAL) and of the archive files."""

    events: dict[str, int]
    db_bytes: int
    archive_bytes: int
    archive_files: int
    last_run: dict[str, Any] | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _file_size(path: Path) -> int:
    total = 0
    for suffix in ("", "-wal"):
        try:
            total += os.stat(str(path) + suffix).st_size
        except OSError:
            pass
    return total


def tier_sizes(conn: apsw.Connection, db_path: str | os.PathLike[str], archive_folder: Path) -> TierSizes:
    """Events per tier (cold: archived events not in the events tables) and the bytes on disk."""
    events = {t: 0 for t in ORDER}
    for tier, n in conn.execute("SELECT tier, count(*) FROM events GROUP BY tier"):
        events[str(tier)] = int(n)
    files = 0
    archive_bytes = 0
    last: dict[str, Any] | None = None
    if _has(conn, "archive_index"):
        events["cold"] = archive_only_count(conn, None, None)
        for (name,) in conn.execute("SELECT file FROM archive_files"):
            files += 1
            archive_bytes += _file_size(archive_folder / str(name))
        row = conn.execute(
            "SELECT started_at, finished_at, now, report_json FROM maintain_runs ORDER BY id DESC LIMIT 1"
        ).fetchone()
        if row is not None:
            import json

            last = {"started_at": row[0], "finished_at": row[1], "now": row[2]}
            try:
                summary = json.loads(str(row[3]))
            except ValueError:
                summary = {}
            last["ok"] = bool(summary.get("ok", row[1] is not None))
    return TierSizes(events, _file_size(Path(db_path)), archive_bytes, files, last)


def vector_counts(conn: apsw.Connection) -> dict[str, int]:
    """Stored vectors per precision: ``float32`` (hot) and ``int8`` (warm)."""
    hot = warm = 0
    for table in MODALITY_VECTOR_TABLES.values():
        (h,) = conn.execute(f"SELECT count(*) FROM {table}_rowids").fetchone() or (0,)
        hot += int(h)
        if _has(conn, f"{table}_warm"):
            (w,) = conn.execute(f"SELECT count(*) FROM {table}_warm").fetchone() or (0,)
            warm += int(w)
    return {"float32": hot, "int8": warm}
