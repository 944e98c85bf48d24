"""Integrity check of a memory (``adamm check``): what is wrong, one problem per line.

Owns :func:`check_memory`, which opens the memory read-only (it never writes, nor creates a file
next to it) and checks, in order: that the file is an adamm memory this code can read; SQLite's
own ``integrity_check`` (or ``quick_check``); foreign keys; that every stored vector is
well formed (``VECTOR_DIM`` float32 values, all finite) and belongs to an event; the tiers named
in ``events.tier``; and that the derived caches agree with the events: the hourly rollup (fine
and coarse tables: events and amounts per store, local day and event type, when the rollup says
it is fresh), its bookkeeping rows, the text-vector cache and the persisted parser vocabulary
(when its change marker says it is current); the tiers (:mod:`edge.memory.tiers.check`: archive
files and members, rollup vs memory vs archive counts per closed day, warm vectors). A stale cache is not a problem (the next
``adamm ask`` rebuilds it); a current one that disagrees is.

Called by :mod:`edge.cli.cmd_check`.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import apsw
import numpy as np

from edge.errors import AdammError
from edge.memory.db import connect as db
from edge.memory.db.migrations import MODALITY_VECTOR_TABLES, VECTOR_DIM

logger = logging.getLogger(__name__)

TIERS = ("hot", "warm", "cold")
#: at most this many lines per check (the rest is summed up in one more line)
MAX_LINES_PER_CHECK = 20
#: relative tolerance of summed amounts (float sums in a different order)
_SUM_TOLERANCE = 1e-9


@dataclass
class Problem:
    """One thing wrong: which check found it and what it is."""

    check: str
    message: str


@dataclass
class Report:
    """What :func:`check_memory` ran and found."""

    path: str
    checks: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_json(self) -> dict[str, Any]:
        return {
            "db": self.path,
            "ok": self.ok,
            "checks": list(self.checks),
            "problems": [asdict(p) for p in self.problems],
        }


class _Lines:
    """Problems of one check, capped at :data:`MAX_LINES_PER_CHECK` lines."""

    def __init__(self, report: Report, check: str) -> None:
        self.report, self.check, self.more = report, check, 0
        self.count = 0
        report.checks.append(check)

    def add(self, message: str) -> None:
        self.count += 1
        if self.count <= MAX_LINES_PER_CHECK:
            self.report.problems.append(Problem(self.check, message))
        else:
            self.more += 1

    def close(self) -> None:
        if self.more:
            self.report.problems.append(Problem(self.check, f"... and {self.more} more problems like these"))


def check_memory(path: str | Path, *, quick: bool = False) -> Report:
    """Check the memory at ``path``; never writes to it."""
    from edge.memory.store import Store

    report = Report(str(path))
    lines = _Lines(report, "file")
    try:
        db.check_memory_file(path)
    except AdammError as exc:
        lines.add(str(exc))
        return report
    try:
        store = Store.open(path, readonly=True)
    except AdammError as exc:
        lines.add(str(exc))
        return report
    try:
        with store.read() as conn:
            if not _sqlite_integrity(conn, report, quick):
                return report  # damaged pages: the other checks would only repeat it
            for run in (_foreign_keys, _vectors, _text_vector_cache, _tiers, _rollup):
                try:
                    run(conn, report)
                except (apsw.CorruptError, apsw.NotADBError) as exc:
                    _Lines(report, run.__name__.strip("_")).add(f"damaged page met: {exc}")
                    return report
            _archive_tiers(conn, report, Path(path))
            _vocabulary(store, conn, report)
    except (apsw.CorruptError, apsw.NotADBError) as exc:
        report.problems.append(Problem("sqlite", f"damaged page met: {exc}"))
    finally:
        store.close()
    return report


def _has_table(conn: apsw.Connection, name: str) -> bool:
    row = conn.execute("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?", (name,)).fetchone()
    return row is not None


def _sqlite_integrity(conn: apsw.Connection, report: Report, quick: bool) -> bool:
    lines = _Lines(report, "sqlite")
    pragma = "quick_check" if quick else "integrity_check"
    try:
        rows = [str(r[0]) for r in conn.execute(f"PRAGMA {pragma}")]
    except (apsw.CorruptError, apsw.NotADBError) as exc:
        lines.add(f"the database file is damaged: {exc}")
        return False
    for row in rows:
        if row != "ok":
            lines.add(row)
    lines.close()
    return lines.count == 0


def _foreign_keys(conn: apsw.Connection, report: Report) -> None:
    lines = _Lines(report, "foreign_keys")
    counts: dict[tuple[str, str], int] = {}
    for table, _rowid, parent, _fk in conn.execute("PRAGMA foreign_key_check"):
        counts[(str(table), str(parent))] = counts.get((str(table), str(parent)), 0) + 1
    for (table, parent), n in sorted(counts.items()):
        lines.add(f"{n} rows of {table} refer to a missing row of {parent}")
    lines.close()


def _blobs(conn: apsw.Connection, sql: str) -> Iterator[tuple[Any, ...]]:
    yield from conn.execute(sql)


def _vectors(conn: apsw.Connection, report: Report) -> None:
    lines = _Lines(report, "vectors")
    want = VECTOR_DIM * 4
    for modality, table in MODALITY_VECTOR_TABLES.items():
        if not _has_table(conn, table):
            continue
        bad_size: list[int] = []
        not_finite: list[int] = []
        for rowid, blob in _blobs(conn, f"SELECT rowid, embedding FROM {table}"):
            if not isinstance(blob, bytes) or len(blob) != want:
                bad_size.append(int(rowid))
                continue
            if not np.isfinite(np.frombuffer(blob, dtype=np.float32)).all():
                not_finite.append(int(rowid))
        if bad_size:
            lines.add(
                f"{len(bad_size)} {modality} vectors ({table}) are not {VECTOR_DIM} float32 values "
                f"(events.id {', '.join(map(str, bad_size[:5]))})"
            )
        if not_finite:
            lines.add(
                f"{len(not_finite)} {modality} vectors ({table}) hold NaN or infinite values "
                f"(events.id {', '.join(map(str, not_finite[:5]))})"
            )
        (orphans,) = conn.execute(
            f"SELECT count(*) FROM {table} WHERE rowid NOT IN (SELECT id FROM events)"
        ).fetchone() or (0,)
        if orphans:
            lines.add(f"{orphans} {modality} vectors ({table}) belong to no event")
    lines.close()


def _text_vector_cache(conn: apsw.Connection, report: Report) -> None:
    if not _has_table(conn, "text_vector_cache"):
        return
    lines = _Lines(report, "text_vector_cache")
    sizes: dict[str, dict[int, int]] = {}
    not_finite: dict[str, int] = {}
    for model, blob in conn.execute("SELECT model, vector FROM text_vector_cache"):
        m = str(model)
        n = len(blob) if isinstance(blob, bytes) else -1
        sizes.setdefault(m, {})
        sizes[m][n] = sizes[m].get(n, 0) + 1
        if n > 0 and n % 4 == 0 and not np.isfinite(np.frombuffer(blob, dtype=np.float32)).all():
            not_finite[m] = not_finite.get(m, 0) + 1
    for m, by_size in sorted(sizes.items()):
        usual = max(by_size, key=lambda k: by_size[k])
        odd = sum(v for k, v in by_size.items() if k != usual) + (by_size[usual] if usual % 4 else 0)
        if odd or usual <= 0:
            lines.add(f"{odd or by_size[usual]} cached text vectors of {m} have the wrong size")
        if not_finite.get(m):
            lines.add(f"{not_finite[m]} cached text vectors of {m} hold NaN or infinite values")
    lines.close()


def _tiers(conn: apsw.Connection, report: Report) -> None:
    lines = _Lines(report, "tiers")
    for tier, n in conn.execute("SELECT tier, count(*) FROM events GROUP BY tier ORDER BY tier"):
        if tier not in TIERS:
            lines.add(f"{n} events are in an unknown tier {tier!r} (known: {', '.join(TIERS)})")
    lines.close()


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=_SUM_TOLERANCE, abs_tol=1e-6)


def _closed_days(conn: apsw.Connection) -> set[tuple[str, str]]:
    """(store, local day) pairs whose rollup is closed, so no longer derived from events."""
    if not _has_table(conn, "rollup_days"):
        return set()
    return {
        (str(s), str(d))
        for s, d in conn.execute("SELECT store_id, local_date FROM rollup_days WHERE state = 'closed'")
    }


def _rollup(conn: apsw.Connection, report: Report) -> None:
    from edge.memory.rollup import build as rollup

    if not _has_table(conn, "rollup_state"):
        return
    lines = _Lines(report, "rollup")
    st = rollup.state(conn)
    if st is None:
        lines.add("rollup_state has no row: the hourly rollup cannot say what it holds")
        lines.close()
        return
    (top,) = conn.execute("SELECT coalesce(max(id), 0) FROM events").fetchone() or (0,)
    if _has_table(conn, "archive_index"):  # events of closed days moved to the archive had rowids too
        (archived_top,) = conn.execute(
            "SELECT coalesce(max(rowid_was), 0) FROM archive_index"
        ).fetchone() or (0,)
        top = max(int(top), int(archived_top))
    if st.high_water > int(top):
        lines.add(f"rollup_state says events up to id {st.high_water} are rolled up, the largest is {top}")
    if st.stale:
        lines.close()
        return  # the next adamm ask rebuilds it: nothing to compare
    truth = {
        (str(s), str(d), str(t)): (int(n), float(a))
        for s, d, t, n, a in conn.execute(
            "SELECT store_id, local_date, event_type, count(*), "
            "coalesce(sum(CASE WHEN event_type = 'purchase' THEN order_amount END), 0) "
            "FROM events WHERE id <= ? GROUP BY 1, 2, 3",
            (st.high_water,),
        )
    }
    closed = _closed_days(conn)
    for table in ("rollup_hourly", "rollup_hourly_coarse"):
        held = {
            (str(s), str(d), str(t)): (int(n), float(a))
            for s, d, t, n, a in conn.execute(
                f"SELECT store_id, local_date, event_type, sum(n), sum(amount_sum) FROM {table} GROUP BY 1, 2, 3"
            )
        }
        for key in sorted(set(truth) | set(held)):
            if key[:2] in closed:
                continue  # a closed day's rollup is the record: its events may be archived
            n_true, a_true = truth.get(key, (0, 0.0))
            n_held, a_held = held.get(key, (0, 0.0))
            s, d, t = key
            if n_true != n_held:
                lines.add(f"{table}: store {s} day {d} {t}: holds {n_held} events, the events say {n_true}")
            elif not _close(a_true, a_held):
                lines.add(
                    f"{table}: store {s} day {d} {t}: holds order amount {a_held:g}, the events say {a_true:g}"
                )
    lines.close()


def _archive_tiers(conn: apsw.Connection, report: Report, path: Path) -> None:
    """The tier checks of :mod:`edge.memory.tiers.check` (archive files, counts per closed day,
    warm vectors)."""
    from edge.memory.tiers import check as tiers

    folder = tiers.archive_folder_of(conn, path)
    for name, run in (
        ("archive", lambda: tiers.check_archive(conn, folder)),
        ("tier_counts", lambda: tiers.check_counts(conn)),
        ("warm_vectors", lambda: tiers.check_warm_vectors(conn)),
    ):
        lines = _Lines(report, name)
        for message in run():
            lines.add(message)
        lines.close()


def _vocabulary(store: Any, conn: apsw.Connection, report: Report) -> None:
    from edge.memory import caches as startup_cache

    if not _has_table(conn, "vocabulary_cache"):
        return
    lines = _Lines(report, "vocabulary_cache")
    if conn.execute("SELECT 1 FROM change_counters WHERE name = 'events_deleted'").fetchone() is None:
        lines.add("change_counters has no events_deleted row: cached vocabularies cannot be trusted")
    marker = startup_cache.change_marker(conn)
    row = conn.execute("SELECT marker, vocabulary_json FROM vocabulary_cache WHERE id = 1").fetchone()
    if marker is not None and row is not None and row[0] == marker:
        source = store.event_source()
        built = source.events._build_vocabulary(conn)  # the events source behind the rollup builds it
        try:
            stored = json.loads(str(row[1]))
        except ValueError:
            lines.add("the cached parser vocabulary is not valid JSON")
        else:
            fresh = json.loads(startup_cache.vocabulary_json(built))
            for key in sorted(set(fresh) | set(stored)):
                if fresh.get(key) != stored.get(key):
                    lines.add(f"the cached parser vocabulary's {key} differ from the events'")
    lines.close()
