"""The tier steps of ``adamm maintain``: hot -> warm, then warm -> cold.

Each step works in batches of ``[tiers] batch_events`` events, one writer transaction per batch,
and picks its work from what the database says is left, so a run killed at any point (SIGKILL
included) is finished by the next run with nothing lost and nothing counted twice:

- warm (events older than ``warm_after_days`` still ``tier = 'hot'``): the batch's events are
  written to the archive (unless it already holds them with the same content), their vectors
  move from the vec0 tables to ``vec_*_warm`` as int8 with a per-vector scale, their local media
  files move to the warm folder (``raw_ref`` updated) and ``events.tier`` becomes ``warm``. A file
  moved by a run that was killed before its commit is found at its new place and the reference
  updated then; a file found nowhere is reported (``media_missing``), never an error.
- cold (store-local days before ``cold_after_days``): :func:`edge.memory.rollup.build.close_days`
  closes the days (their rollup rows become the record), then each batch makes sure every event
  is archived with its current content and deletes it with its vectors from the events tables.

Events brought back by ``adamm restore`` stay hot for ``restore_keep_days``.

``ADAMM_MAINTAIN_CRASH=<point>[:<n>]`` (tests only) SIGKILLs the process the ``n``-th time (default
1st) it passes ``point``: ``warm_batch``, ``media_moved``, ``archive_written``, ``warm_committed``,
``days_closed``, ``cold_deleted``, ``cold_committed``.

Called by :mod:`edge.services.maintain`.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse
from zoneinfo import ZoneInfo

import apsw
import numpy as np

from edge.config import TiersConfig
from edge.errors import StoreError
from edge.memory.db.migrations import MODALITY_VECTOR_TABLES, VECTOR_DIM
from edge.memory.rollup import build as rollup
from edge.memory.tiers import archive
from edge.memory.tiers.records import quantize, records

logger = logging.getLogger(__name__)

CRASH_ENV = "ADAMM_MAINTAIN_CRASH"
#: media files listed by name in a report at most (the count is always complete)
MAX_LISTED = 20

_passes: dict[str, int] = {}


def crash_point(name: str) -> None:
    """SIGKILL this process here when ``$ADAMM_MAINTAIN_CRASH`` names ``name`` (the fault tests)."""
    want = os.environ.get(CRASH_ENV)
    if not want:
        return
    point, _, nth = want.partition(":")
    if point != name:
        return
    _passes[name] = _passes.get(name, 0) + 1
    if _passes[name] >= int(nth or 1):
        os.kill(os.getpid(), signal.SIGKILL)


@dataclass
class StepReport:
    """What a tier step did (the ``--json`` report of ``adamm maintain`` holds these)."""

    events: int = 0
    batches: int = 0
    archived: int = 0
    vectors: int = 0
    media_moved: int = 0
    media_missing: int = 0
    missing_media: list[str] = field(default_factory=list)
    days_closed: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "events": self.events,
            "batches": self.batches,
            "archived": self.archived,
            "vectors": self.vectors,
            "media_moved": self.media_moved,
            "media_missing": self.media_missing,
            "missing_media": list(self.missing_media),
            "days_closed": self.days_closed,
        }


@dataclass(frozen=True)
class Places:
    """Where a memory's tiers live on disk."""

    db: Path
    archive: Path
    warm_media: Path

    @classmethod
    def of(cls, db: str | os.PathLike[str], cfg: TiersConfig) -> Places:
        p = Path(db).expanduser().resolve()
        warm = (
            Path(cfg.warm_media_dir).expanduser() if cfg.warm_media_dir else p.parent / f"{p.name}.warm-media"
        )
        return cls(p, archive.archive_dir(p, cfg.archive_dir), warm)


Submit = Callable[[Callable[[apsw.Connection], Any]], Any]


def _kept_restored(now: datetime, cfg: TiersConfig) -> tuple[str, str]:
    """SQL (over ``events AS e``) that keeps recently restored events out of a step, and its parameter."""
    since = (now - timedelta(days=cfg.restore_keep_days)).astimezone(UTC).isoformat()
    return (
        "NOT EXISTS (SELECT 1 FROM archive_index AS a WHERE a.event_id = e.event_id "
        "AND a.restored_at IS NOT NULL AND a.restored_at > ?)",
        since,
    )


def _zones(conn: apsw.Connection) -> dict[str, str]:
    return {str(s): str(tz) for s, tz in conn.execute("SELECT store_id, timezone FROM stores")}


def _ensure_archived(conn: apsw.Connection, ids: Sequence[int], places: Places) -> int:
    """Archive those of events ``ids`` the archive does not hold with their current content."""
    if not ids:
        return 0
    want = [
        int(i)
        for i, digest, held in conn.execute(
            "SELECT e.id, e.content_hash, a.hash FROM events AS e LEFT JOIN archive_index AS a "
            "ON a.event_id = e.event_id WHERE e.id IN (SELECT value FROM json_each(?))",
            (json.dumps([int(i) for i in ids]),),
        )
        if held is None or int(held) != archive.hash_key(str(digest))
    ]
    if not want:
        return 0
    recs = records(conn, want, _zones(conn))
    return archive.append(conn, places.archive, places.db, recs, crash=crash_point)


# -- warm ----------------------------------------------------------------------------------------


def warm_step(submit: Submit, places: Places, cfg: TiersConfig, now: datetime) -> StepReport:
    """Move every hot event older than ``warm_after_days`` to the warm tier."""
    report = StepReport()
    before = (now - timedelta(days=cfg.warm_after_days)).timestamp()
    keep_sql, keep_since = _kept_restored(now, cfg)

    def batch(conn: apsw.Connection) -> int:
        ids = [
            int(i)
            for (i,) in conn.execute(
                f"SELECT e.id FROM events AS e WHERE e.tier = 'hot' AND e.ts_epoch < ? AND {keep_sql} "
                "ORDER BY e.id LIMIT ?",
                (before, keep_since, cfg.batch_events),
            )
        ]
        if not ids:
            return 0
        crash_point("warm_batch")
        report.archived += _ensure_archived(conn, ids, places)
        report.vectors += _quantize(conn, ids)
        _move_media(conn, ids, places, report)
        conn.execute(
            "UPDATE events SET tier = 'warm' WHERE id IN (SELECT value FROM json_each(?))", (json.dumps(ids),)
        )
        return len(ids)

    while True:
        n = int(submit(batch))
        if n == 0:
            break
        crash_point("warm_committed")
        report.events += n
        report.batches += 1
    return report


def _quantize(conn: apsw.Connection, ids: Sequence[int]) -> int:
    js = json.dumps([int(i) for i in ids])
    moved = 0
    for table in MODALITY_VECTOR_TABLES.values():
        rows = conn.execute(
            f"SELECT rowid, embedding FROM {table} WHERE rowid IN (SELECT value FROM json_each(?))", (js,)
        ).fetchall()
        if not rows:
            continue
        out = []
        for rowid, blob in rows:
            vec = np.frombuffer(blob if isinstance(blob, bytes) else b"", dtype=np.float32)
            if vec.shape[0] != VECTOR_DIM:
                continue
            scale, q = quantize(vec)
            out.append((int(rowid or 0), scale, q))
        conn.executemany(f"INSERT OR REPLACE INTO {table}_warm(rowid, scale, q) VALUES (?, ?, ?)", out)
        conn.execute(f"DELETE FROM {table} WHERE rowid IN (SELECT value FROM json_each(?))", (js,))
        moved += len(out)
    return moved


def local_file(ref: str) -> Path | None:
    """The local file a ``raw_ref`` names (a path or a ``file://`` URI), else None."""
    if ref.startswith("file://"):
        parsed = urlparse(ref)
        if parsed.netloc not in ("", "localhost"):
            return None
        return Path(unquote(parsed.path))
    if "://" in ref or ref.startswith("pos:"):
        return None
    return Path(ref).expanduser()


def warm_place(places: Places, ref: str) -> tuple[Path, str] | None:
    """Where the media file of ``ref`` goes in the warm folder, and the updated reference."""
    path = local_file(ref)
    if path is None:
        return None
    if path.is_relative_to(places.warm_media):
        return None  # already there
    rel = Path(*path.absolute().parts[1:])
    dest = places.warm_media / rel
    new_ref = dest.absolute().as_uri() if ref.startswith("file://") else str(dest)
    return dest, new_ref


def _move_media(conn: apsw.Connection, ids: Sequence[int], places: Places, report: StepReport) -> None:
    refs = conn.execute(
        "SELECT event_rowid, seq, ref FROM raw_refs WHERE event_rowid IN (SELECT value FROM json_each(?))",
        (json.dumps([int(i) for i in ids]),),
    ).fetchall()
    for rowid, seq, ref in refs:
        assert isinstance(rowid, int) and isinstance(seq, int)
        target = warm_place(places, str(ref))
        if target is None:
            continue
        src, (dest, new_ref) = local_file(str(ref)), target
        assert src is not None
        if src.exists():
            try:
                dest.parent.mkdir(parents=True, exist_ok=True)
                try:
                    os.replace(src, dest)
                except OSError:  # another file system: copy, then remove the original
                    shutil.copy2(src, dest)
                    src.unlink()
            except OSError as exc:
                raise StoreError(
                    f"cannot move the media file {src} to {dest}: {exc.strerror or exc}",
                    hint="set [tiers] warm_media_dir to a folder adamm can write, then run adamm maintain again",
                ) from None
            crash_point("media_moved")
            report.media_moved += 1
        elif not dest.exists():
            report.media_missing += 1
            if len(report.missing_media) < MAX_LISTED:
                report.missing_media.append(str(ref))
            continue
        conn.execute(
            "UPDATE raw_refs SET ref = ? WHERE event_rowid = ? AND seq = ?", (new_ref, int(rowid), int(seq))
        )


# -- cold ----------------------------------------------------------------------------------------


def cold_cutoffs(conn: apsw.Connection, cfg: TiersConfig, now: datetime) -> dict[str, tuple[str, float]]:
    """store -> (first store-local date that stays out of the cold tier, its local midnight as epoch)."""
    out: dict[str, tuple[str, float]] = {}
    for store, tz in _zones(conn).items():
        zone = ZoneInfo(tz)
        day = (now.astimezone(zone) - timedelta(days=cfg.cold_after_days)).date()
        midnight = datetime(day.year, day.month, day.day, tzinfo=zone)
        out[store] = (day.isoformat(), midnight.timestamp())
    return out


def cold_step(submit: Submit, places: Places, cfg: TiersConfig, now: datetime) -> StepReport:
    """Close the days older than ``cold_after_days`` and move their events to the archive."""
    report = StepReport()
    cutoffs = submit(lambda conn: cold_cutoffs(conn, cfg, now))
    keep_sql, keep_since = _kept_restored(now, cfg)
    for store, (day, _epoch) in sorted(cutoffs.items()):

        def close(conn: apsw.Connection, s: str = store, d: str = day) -> int:
            return rollup.close_days(conn, d, s)

        report.days_closed += int(submit(close))
        crash_point("days_closed")

        def batch(conn: apsw.Connection, s: str = store, d: str = day) -> int:
            ids = [
                int(i)
                for (i,) in conn.execute(
                    "SELECT e.id FROM events AS e INDEXED BY events_local_date WHERE e.store_id = ? AND e.local_date < ? "
                    "AND EXISTS (SELECT 1 FROM rollup_days AS r WHERE r.store_id = e.store_id "
                    f"AND r.local_date = e.local_date AND r.state = 'closed') AND {keep_sql} ORDER BY e.id LIMIT ?",
                    (s, d, keep_since, cfg.batch_events),
                )
            ]
            if not ids:
                return 0
            report.archived += _ensure_archived(conn, ids, places)
            js = json.dumps(ids)
            for table in MODALITY_VECTOR_TABLES.values():
                conn.execute(f"DELETE FROM {table} WHERE rowid IN (SELECT value FROM json_each(?))", (js,))
                conn.execute(
                    f"DELETE FROM {table}_warm WHERE rowid IN (SELECT value FROM json_each(?))", (js,)
                )
            conn.execute("DELETE FROM events WHERE id IN (SELECT value FROM json_each(?))", (js,))
            crash_point("cold_deleted")
            return len(ids)

        while True:
            n = int(submit(batch))
            if n == 0:
                break
            crash_point("cold_committed")
            report.events += n
            report.batches += 1
    return report


def record_state(submit: Submit, cfg: TiersConfig, now: datetime) -> None:
    """The tier boundaries this run moved data across, per store (``tier_state``)."""
    warm_before = (now - timedelta(days=cfg.warm_after_days)).timestamp()

    def write(conn: apsw.Connection) -> None:
        stamp = datetime.now(UTC).isoformat()
        for store, (day, epoch) in cold_cutoffs(conn, cfg, now).items():
            conn.execute(
                "INSERT INTO tier_state(store_id, warm_before, cold_before_date, cold_before, updated_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT(store_id) DO UPDATE SET "
                "warm_before = max(warm_before, excluded.warm_before), "
                "cold_before_date = max(cold_before_date, excluded.cold_before_date), "
                "cold_before = max(cold_before, excluded.cold_before), "
                "updated_at = excluded.updated_at",
                (store, warm_before, day, epoch, stamp),
            )

    submit(write)


def compact(db_path: str | os.PathLike[str], free_share: float) -> dict[str, Any]:
    """VACUUM the database when at least ``free_share`` of its pages are free (and ``free_share``
    < 1); returns the bytes before and after. Atomic (SQLite's VACUUM): safe to kill."""
    from edge.memory.db.connect import connect

    conn = connect(db_path)
    try:
        pages = int(conn.pragma("page_count") or 0)
        free = int(conn.pragma("freelist_count") or 0)
        size = int(conn.pragma("page_size") or 4096)
        out: dict[str, Any] = {"vacuumed": False, "bytes_before": pages * size, "bytes_after": pages * size}
        if free_share < 1 and pages and free >= free_share * pages and free > 0:
            conn.execute("VACUUM")
            conn.pragma("wal_checkpoint(TRUNCATE)")
            after = int(conn.pragma("page_count") or 0)
            out.update(vacuumed=True, bytes_after=after * size)
            logger.info("maintain: compacted %s from %d to %d pages", db_path, pages, after)
        return out
    finally:
        conn.close()
