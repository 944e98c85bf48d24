"""The hot in-memory vector matrix behind exact retrieval (one per store and modality).

Owns a float32 copy of one vec0 table (``vec_text`` ...), laid out for the way retrieval reads it:
rows sorted by ``(event_type, rowid)`` so that the dominant hard filters (an event type, a time
range inside it, since rowids follow import order) select *contiguous* runs of rows, which are
scored as zero-copy slices at memory bandwidth instead of being gathered row by row. Rows added
since the last layout sit in an unsorted tail and are folded in when the tail grows.

Warm events (:mod:`edge.memory.tiers`) keep int8 vectors with a per-vector scale in
``<table>_warm``; they are loaded dequantized into the same matrix, so retrieval covers the hot
and the warm tier alike (the high-water mark and the row count span both tables).

The matrix is loaded lazily from sqlite-vec's shadow tables (``<table>_rowids`` and
``<table>_vector_chunks00`` of the pinned sqlite-vec 0.1.9; the public ``SELECT rowid, embedding``
scan is the fallback) and kept in sync by the rowid high-water mark and the row count, checked
only after some connection committed (``PRAGMA data_version`` on a watcher connection): new rows
are appended on the next query, a lower count (deleted rows) triggers a reload. A vector updated in
place under the same rowid is not seen until :meth:`VectorIndex.invalidate` is called (import with
``--replace`` should call :func:`invalidate` for the store).

Called by :mod:`edge.memory.search.retrieval` only. Thread-safe: syncing is serialised by a lock; a query
works on an immutable snapshot, so concurrent queries never see a half-appended row.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, NamedTuple

import apsw
import numpy as np

from edge.memory.db.migrations import MODALITY_VECTOR_TABLES, VECTOR_DIM

logger = logging.getLogger(__name__)

#: runs of at least this many consecutive positions are scored as slices (no copy)
MIN_RUN = 32
#: rows gathered per block for scattered survivors (keeps the copy in cache)
GATHER_BLOCK = 2048
#: re-sort the layout when the unsorted tail exceeds this share of the rows
TAIL_SHARE = 0.1
#: from this many rows on, a scan is split in two parts scored on two threads (blocking waits,
#: no spinning); below, the calling thread alone
TWO_THREAD_ROWS = 8_192
#: rows the calling thread scans beyond half of a split scan: the helper thread starts later (it
#: has to be woken, some 50 us here, about 512 rows at one core's bandwidth), and when it finishes
#: first the caller does not sleep waiting for it
HEAD_START_ROWS = 512
#: cached attribute postings per index (cleared when full)
POSTINGS_CACHE = 256

_helper: ThreadPoolExecutor | None = None
_helper_lock = threading.Lock()


def _openblas_threads_setter() -> Callable[[int], int] | None:
    """``openblas_set_num_threads_local`` of the OpenBLAS numpy uses, or None (another BLAS, or an
    OpenBLAS older than 0.3.27). It sets the BLAS thread count and answers the one before.

    Despite its name it is process-wide in pthread builds such as numpy's wheels (per thread only
    in OpenMP builds), so :func:`dot` sets one thread for the duration of a scan and restores the
    count after it. One BLAS thread on each of our two threads gives BLAS's matrix-vector kernel
    without BLAS's own worker threads, which spin while they wait and for a while after a call: a
    10k-row subset took 0.7 ms on a quiet machine but 16 ms median under load with them, and 0.8 ms
    instead of 0.4 ms right after a threaded call.
    """
    import ctypes
    import glob
    import os

    site = os.path.dirname(os.path.dirname(np.__file__))
    candidates = sorted(glob.glob(os.path.join(site, "numpy.libs", "libscipy_openblas*")))  # Linux wheels
    candidates += sorted(
        glob.glob(os.path.join(os.path.dirname(np.__file__), ".dylibs", "libscipy_openblas*"))
    )
    try:  # any other OpenBLAS this process has loaded (a distribution's numpy)
        with open("/proc/self/maps", encoding="utf-8") as maps:
            candidates += sorted({line.split()[-1] for line in maps if "openblas" in line and "/" in line})
    except OSError:
        pass
    for path in candidates:
        try:
            fn = ctypes.CDLL(path).openblas_set_num_threads_local
        except (OSError, AttributeError):
            continue
        fn.argtypes, fn.restype = [ctypes.c_int], ctypes.c_int
        return fn
    return None


_set_blas_threads = _openblas_threads_setter()


def _one_blas_thread() -> None:
    if _set_blas_threads is not None:
        _set_blas_threads(1)


def _second_thread() -> ThreadPoolExecutor:
    global _helper
    with _helper_lock:
        if _helper is None:
            _helper = ThreadPoolExecutor(1, thread_name_prefix="adamm-score", initializer=_one_blas_thread)
        return _helper


def _matvec(matrix: np.ndarray, q: np.ndarray, out: np.ndarray) -> None:
    """``out = matrix @ q`` on the calling thread only (BLAS is set to one thread during a scan)."""
    if _set_blas_threads is None:
        np.einsum("ij,j->i", matrix, q, out=out)
    else:
        np.matmul(matrix, q, out=out)


def dot(matrix: np.ndarray, q: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``matrix @ q`` (float32) on at most two threads: BLAS's matrix-vector kernel with BLAS set to
    one thread for the call where numpy's OpenBLAS allows it (else numpy's own loop), never BLAS's
    spinning worker threads."""
    if out is None:
        out = np.empty(matrix.shape[0], dtype=np.float32)
    with _one_blas_thread_while_scanning():
        _split_matvec(matrix, q, out)
    return out


def _split_matvec(matrix: np.ndarray, q: np.ndarray, out: np.ndarray) -> None:
    """:func:`dot`'s work, inside :func:`_one_blas_thread_while_scanning`."""
    n = matrix.shape[0]
    if n >= TWO_THREAD_ROWS:
        mine = min(n // 2 + HEAD_START_ROWS, n - 1)
        other = _second_thread().submit(_matvec, matrix[mine:], q, out[mine:])
        _matvec(matrix[:mine], q, out[:mine])
        other.result()
    else:
        _matvec(matrix, q, out)


_scans_lock = threading.Lock()
_scans = 0  # scans running now, on any thread
_threads_before = 0  # the BLAS thread count before the first of them


@contextlib.contextmanager
def _one_blas_thread_while_scanning() -> Iterator[None]:
    """BLAS at one thread from the first running scan's start to the last one's end (the setting
    is process-wide in numpy's wheels: counted, so overlapping scans on several threads restore
    the count that was there before them)."""
    global _scans, _threads_before
    if _set_blas_threads is None:
        yield
        return
    with _scans_lock:
        if _scans == 0:
            _threads_before = _set_blas_threads(1)
        else:
            _set_blas_threads(1)  # per thread only in OpenMP builds: this thread too
        _scans += 1
    try:
        yield
    finally:
        with _scans_lock:
            _scans -= 1
            if _scans == 0:
                _set_blas_threads(_threads_before)


@dataclass(frozen=True)
class Selection:
    """Rows of a snapshot to score: runs of consecutive positions, scored in place as slices of the
    matrix (no copy), and the scattered rest, gathered in cache-sized blocks. Scores come out in
    that order (the spans one after another, then the scattered positions); :meth:`positions_at`
    maps an index into the scores back to a matrix position."""

    spans: tuple[tuple[int, int], ...]
    scattered: np.ndarray  # int64 positions, ascending

    @classmethod
    def of_positions(cls, pos: np.ndarray, spans: Sequence[tuple[int, int]] = ()) -> Selection:
        """The selection of sorted positions ``pos`` (plus whole ``spans`` known already): runs of
        at least :data:`MIN_RUN` consecutive positions become spans."""
        pos = np.asarray(pos, dtype=np.int64)
        if pos.shape[0] == 0:
            return cls(tuple(spans), pos)
        breaks = np.flatnonzero(np.diff(pos) != 1) + 1
        starts = np.concatenate(([0], breaks))
        ends = np.concatenate((breaks, [pos.shape[0]]))
        long_runs = np.flatnonzero(ends - starts >= MIN_RUN)
        if long_runs.shape[0] == 0:
            return cls(tuple(spans), pos)
        runs = [(int(pos[starts[r]]), int(pos[starts[r]]) + int(ends[r] - starts[r])) for r in long_runs]
        keep = np.ones(pos.shape[0], dtype=bool)
        for r in long_runs:
            keep[starts[r] : ends[r]] = False
        return cls((*spans, *runs), pos[keep])

    @property
    def size(self) -> int:
        return sum(e - s for s, e in self.spans) + int(self.scattered.shape[0])

    def positions(self) -> np.ndarray:
        """Every position of the selection, ascending."""
        parts = [np.arange(s, e, dtype=np.int64) for s, e in self.spans] + [self.scattered]
        return np.sort(np.concatenate(parts))

    def positions_at(self, idx: np.ndarray) -> np.ndarray:
        """Matrix positions of the rows behind scores ``idx`` (see the class docstring)."""
        if len(self.spans) == 1 and self.scattered.shape[0] == 0:
            return self.spans[0][0] + idx
        out = np.empty(idx.shape[0], dtype=np.int64)
        at = 0
        for s, e in self.spans:
            sel = (idx >= at) & (idx < at + e - s)
            out[sel] = s + idx[sel] - at
            at += e - s
        sel = idx >= at
        out[sel] = self.scattered[idx[sel] - at]
        return out


@dataclass(frozen=True)
class Snapshot:
    """An immutable view of the index for one query."""

    matrix: np.ndarray  # (n, d) float32, unit-norm rows
    rowids: np.ndarray  # (n,) int64: rowid of each position
    positions: np.ndarray  # (max_rowid + 1,) int64: position of each rowid, -1 when absent
    #: partition key -> [start, end) of its rows in the sorted region
    ranges: dict[str, tuple[int, int]]
    #: partition key of each row of the unsorted tail, which starts at ``n_sorted``
    tail_keys: np.ndarray
    n_sorted: int

    @property
    def size(self) -> int:
        return int(self.matrix.shape[0])

    def positions_of(self, rowids: np.ndarray) -> np.ndarray:
        """Positions of ``rowids`` in this snapshot (rowids without a vector are dropped), sorted."""
        ids = np.asarray(rowids, dtype=np.int64)
        ids = ids[(ids >= 0) & (ids < self.positions.shape[0])]
        pos = self.positions[ids]
        pos = pos[(pos >= 0) & (pos < self.size)]
        pos.sort()
        return pos

    def score_all(self, q: np.ndarray) -> np.ndarray:
        """Cosine of every row against unit-norm ``q`` (:func:`dot`: BLAS's worker threads would
        spin on the other core for a while after the call, slowing the next query and the daemon)."""
        if self.size == 0:
            return np.zeros(0, dtype=np.float32)
        return dot(self.matrix, q)

    def partition_selection(self, keys: Sequence[str]) -> Selection:
        """The rows of partitions ``keys``: slices of the sorted region, then the matching tail."""
        spans = [self.ranges[k] for k in sorted(set(keys)) if k in self.ranges]
        if self.tail_keys.shape[0] == 0:
            return Selection(tuple(spans), np.zeros(0, dtype=np.int64))
        tail = self.n_sorted + np.flatnonzero(np.isin(self.tail_keys, list(keys)))
        return Selection.of_positions(tail.astype(np.int64), spans)

    def score(self, sel: Selection, q: np.ndarray) -> np.ndarray:
        """Cosine of the rows of ``sel`` against ``q``, in the selection's order."""
        out = np.empty(sel.size, dtype=np.float32)
        at = 0
        with _one_blas_thread_while_scanning():  # once for all the spans
            for s, e in sel.spans:
                _split_matvec(self.matrix[s:e], q, out[at : at + e - s])
                at += e - s
        rest = sel.scattered
        if rest.shape[0]:
            buf = np.empty((min(GATHER_BLOCK, rest.shape[0]), self.matrix.shape[1]), dtype=np.float32)
            for i in range(0, rest.shape[0], GATHER_BLOCK):
                part = rest[i : i + GATHER_BLOCK]
                block = buf[: part.shape[0]]
                np.take(self.matrix, part, axis=0, out=block)
                np.einsum("ij,j->i", block, q, out=out[at + i : at + i + part.shape[0]])
        return out

    def score_positions(self, pos: np.ndarray, q: np.ndarray) -> np.ndarray:
        """Cosine of the rows at sorted positions ``pos`` against ``q``, in the same order."""
        sel = Selection.of_positions(pos)
        scores = self.score(sel, q)
        if not sel.spans or not sel.scattered.shape[0]:
            return scores  # one kind only: already in position order
        out = np.empty(pos.shape[0], dtype=np.float32)
        out[np.searchsorted(pos, sel.positions_at(np.arange(pos.shape[0])))] = scores
        return out


class Postings(NamedTuple):
    """An attribute filter's survivors in one snapshot."""

    positions: np.ndarray  # sorted
    selection: Selection  # the same rows, as slices and gathers
    missing: int  # survivors without a vector in the snapshot


class VectorIndex:
    """The in-memory matrix of one vec0 table; see the module docstring."""

    def __init__(self, table: str, dim: int = VECTOR_DIM) -> None:
        if table not in MODALITY_VECTOR_TABLES.values():
            raise ValueError(f"unknown vector table {table!r}")
        self.table = table
        self.dim = dim
        self._lock = threading.Lock()
        self._watch: apsw.Connection | None = None
        self._watch_path = ""
        self._dv: Any = None
        self._reset()

    def _reset(self) -> None:
        self._buf = np.zeros((0, self.dim), dtype=np.float32)
        self._keys = np.zeros(0, dtype=object)  # partition key (event_type) per position
        self._rowids = np.zeros(0, dtype=np.int64)
        self._pos = np.full(1, -1, dtype=np.int64)
        self._n = 0
        self._n_sorted = 0
        self._ranges: dict[str, tuple[int, int]] = {}
        self._high = 0  # highest rowid loaded
        self._count = 0  # rows in the vec0 table when last synced
        self._snapshot: Snapshot | None = None
        #: (key, values) -> postings, for this snapshot and database state; cleared whenever the
        #: database changed
        self._postings: dict[Any, Postings] = {}

    def invalidate(self) -> None:
        """Forget everything; the next query reloads from the database."""
        with self._lock:
            self._reset()
            self._dv = None

    def snapshot(self, conn: apsw.Connection) -> Snapshot:
        """Bring the matrix up to date with the database and return a snapshot.

        A dedicated watcher connection's ``PRAGMA data_version`` (which moves whenever another
        connection commits) makes the no-change case cost microseconds; after a commit the row
        count and high-water mark are checked and new rows loaded through the watcher, so the
        state and the loaded rows come from one read snapshot. In-memory databases use ``conn``.
        """
        with self._lock:
            watch = self._watcher(conn)
            if watch is None:
                self._sync(conn)
                self._postings.clear()  # no cheap change signal for in-memory databases
            else:
                dv = watch.pragma("data_version")
                if self._snapshot is None or dv != self._dv:
                    with watch:  # one read transaction for the state check and the load
                        self._sync(watch)
                    self._dv = dv
                    self._postings.clear()
            assert self._snapshot is not None
            return self._snapshot

    def postings(
        self,
        conn: apsw.Connection,
        snap: Snapshot,
        key: Any,
        rowids_of: Callable[[apsw.Connection], np.ndarray],
    ) -> Postings:
        """Where in ``snap`` the events ``rowids_of(conn)`` selects are (an attribute filter's
        postings), and how many of them have no vector in ``snap``.

        Cached per ``key`` until the database changes (the next :meth:`snapshot` after a commit
        drops the cache), so a repeated filter costs no SQL and no run-finding: its survivors are
        scored as the same slices and gathers again. Call with the ``snap`` just returned by
        :meth:`snapshot`.
        """
        with self._lock:
            hit = self._postings.get(key) if snap is self._snapshot else None
        if hit is not None:
            return hit
        rowids = rowids_of(conn)
        pos = snap.positions_of(rowids)
        # rowids are unique per key
        out = Postings(pos, Selection.of_positions(pos), int(rowids.shape[0]) - int(pos.shape[0]))
        with self._lock:
            if snap is self._snapshot:
                if len(self._postings) >= POSTINGS_CACHE:
                    self._postings.clear()
                self._postings[key] = out
        return out

    def _watcher(self, conn: apsw.Connection) -> apsw.Connection | None:
        path = conn.db_filename("main")
        if not path:
            return None
        if self._watch is None or self._watch_path != path:
            from edge.memory.db.connect import connect

            self.close()
            self._watch, self._watch_path = connect(path, readonly=True), path
        return self._watch

    def close(self) -> None:
        """Close the watcher connection (the store calls this through :func:`release`)."""
        if self._watch is not None:
            self._watch.close()
        self._watch, self._watch_path, self._dv = None, "", None

    def _sync(self, conn: apsw.Connection) -> None:
        high, count = self._table_state(conn)
        if self._snapshot is not None and high == self._high and count == self._count:
            return
        if high < self._high:
            self._reset()
        (fresh,) = conn.execute(
            f"SELECT count(*) FROM {self.table}_rowids WHERE rowid > ?", (self._high,)
        ).fetchone()  # type: ignore[misc]
        if self._has_warm(conn):
            (warm_fresh,) = conn.execute(
                f"SELECT count(*) FROM {self.table}_warm WHERE rowid > ?", (self._high,)
            ).fetchone()  # type: ignore[misc]
            fresh = int(fresh) + int(warm_fresh)
        if self._count + int(fresh) != count:
            logger.info("%s: vectors were deleted, reloading the vector index", self.table)
            self._reset()
        first = self._n == 0
        self._append(*self._load_after(conn, self._high))
        if first:
            self._n_sorted = self._n  # the loader returns rows in layout order
            self._ranges = _ranges(self._keys[: self._n])
        self._high, self._count = high, count
        if self._n - self._n_sorted > TAIL_SHARE * self._n:
            self._relayout()
        self._snapshot = Snapshot(
            matrix=self._buf[: self._n],
            rowids=self._rowids[: self._n],
            positions=self._pos,
            ranges=dict(self._ranges),
            tail_keys=self._keys[self._n_sorted : self._n].copy(),
            n_sorted=self._n_sorted,
        )

    def _table_state(self, conn: apsw.Connection) -> tuple[int, int]:
        # two statements: combined, SQLite loses its O(1)-per-page count optimisation
        high = conn.execute(f"SELECT max(rowid) FROM {self.table}_rowids").fetchone()
        count = conn.execute(f"SELECT count(*) FROM {self.table}_rowids").fetchone()
        hi, n = int((high or (0,))[0] or 0), int((count or (0,))[0] or 0)
        if self._has_warm(conn):
            whigh = conn.execute(f"SELECT max(rowid) FROM {self.table}_warm").fetchone()
            wcount = conn.execute(f"SELECT count(*) FROM {self.table}_warm").fetchone()
            hi, n = max(hi, int((whigh or (0,))[0] or 0)), n + int((wcount or (0,))[0] or 0)
        return hi, n

    def _has_warm(self, conn: apsw.Connection) -> bool:
        """The memory has the warm tier's int8 table (migration ``0011_tiers``)."""
        found = conn.execute(
            "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?", (f"{self.table}_warm",)
        ).fetchone()
        return found is not None

    def _load_warm(self, conn: apsw.Connection, after: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The warm tier's int8 vectors with rowid > ``after``, dequantized (``q * scale``)."""
        if not self._has_warm(conn):
            return _empty(self.dim)
        rows = conn.execute(
            f"SELECT w.rowid, w.scale, w.q, e.event_type FROM {self.table}_warm AS w "
            "JOIN events AS e ON e.id = w.rowid WHERE w.rowid > ?",
            (after,),
        ).fetchall()
        rows = [r for r in rows if isinstance(r[2], bytes) and len(r[2]) == self.dim]
        if not rows:
            return _empty(self.dim)
        rowids = np.array([r[0] for r in rows], dtype=np.int64)
        q = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.int8).reshape(-1, self.dim)  # type: ignore[misc]
        scales = np.array([r[1] for r in rows], dtype=np.float32)
        vectors = q.astype(np.float32) * scales[:, None]
        keys = np.array([r[3] for r in rows], dtype=object)
        return rowids, _normalized(vectors), keys

    # -- loading ---------------------------------------------------------------------------------

    def _load_after(self, conn: apsw.Connection, after: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(rowids, vectors, partition keys) of the rows with rowid > ``after`` that have an event,
        in layout order (partition key, rowid)."""
        try:
            hot = self._load_shadow(conn, after)
        except (apsw.Error, ValueError) as exc:
            logger.warning("%s: reading shadow tables failed (%s); using the slow scan", self.table, exc)
            hot = self._load_public(conn, after)
        warm = self._load_warm(conn, after)
        if warm[0].shape[0] == 0:
            return hot
        rowids = np.concatenate((hot[0], warm[0]))
        keys = np.concatenate((hot[2], warm[2]))
        order = np.lexsort((rowids, keys.astype(str)))
        return rowids[order], np.concatenate((hot[1], warm[1]))[order], keys[order]

    def _load_shadow(self, conn: apsw.Connection, after: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        t = self.table
        rows = conn.execute(
            f"SELECT r.rowid, r.chunk_id, r.chunk_offset, e.event_type FROM {t}_rowids AS r "
            f"JOIN events AS e ON e.id = r.rowid WHERE r.rowid > ? ORDER BY e.event_type, r.rowid",
            (after,),
        ).fetchall()
        if not rows:
            return _empty(self.dim)
        rowids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        chunk = np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows))
        offset = np.fromiter((r[2] for r in rows), dtype=np.int64, count=len(rows))
        keys = np.array([r[3] for r in rows], dtype=object)
        vectors = np.empty((len(rows), self.dim), dtype=np.float32)
        order = np.argsort(chunk, kind="stable")
        bounds = np.flatnonzero(np.diff(chunk[order])) + 1
        for group in np.split(order, bounds):
            cid = int(chunk[group[0]])
            got = conn.execute(f"SELECT vectors FROM {t}_vector_chunks00 WHERE rowid = ?", (cid,)).fetchone()
            if got is None:
                raise ValueError(f"vector chunk {cid} missing")
            blob = got[0]
            if not isinstance(blob, bytes) or len(blob) % (4 * self.dim):
                raise ValueError(f"vector chunk {cid} has an unexpected size")
            mat = np.frombuffer(blob, dtype=np.float32).reshape(-1, self.dim)
            vectors[group] = mat[offset[group]]
        return rowids, _normalized(vectors), keys

    def _load_public(self, conn: apsw.Connection, after: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rows = conn.execute(
            f"SELECT v.rowid, v.embedding, e.event_type FROM {self.table} AS v "
            f"JOIN events AS e ON e.id = v.rowid WHERE v.rowid > ?",
            (after,),
        ).fetchall()
        if not rows:
            return _empty(self.dim)
        rows.sort(key=lambda r: (str(r[2]), int(r[0])))  # type: ignore[arg-type]
        rowids = np.array([r[0] for r in rows], dtype=np.int64)
        vectors = np.stack([np.frombuffer(bytes(r[1]), dtype=np.float32) for r in rows])  # type: ignore[arg-type]
        keys = np.array([r[2] for r in rows], dtype=object)
        return rowids, _normalized(vectors), keys

    # -- layout ----------------------------------------------------------------------------------

    def _append(self, rowids: np.ndarray, vectors: np.ndarray, keys: np.ndarray) -> None:
        m = rowids.shape[0]
        if m == 0:
            return
        need = self._n + m
        if self._n == 0:  # first load: adopt the loader's arrays instead of copying 2 GB
            self._buf, self._rowids, self._keys = vectors, rowids.copy(), keys.copy()
        elif need > self._buf.shape[0]:
            cap = max(need, int(self._buf.shape[0] * 1.5), 1024)
            # a fresh buffer: snapshots taken earlier keep the old one alive and unchanged
            buf = np.empty((cap, self.dim), dtype=np.float32)
            buf[: self._n] = self._buf[: self._n]
            rid = np.empty(cap, dtype=np.int64)
            rid[: self._n] = self._rowids[: self._n]
            keys_all = np.empty(cap, dtype=object)
            keys_all[: self._n] = self._keys[: self._n]
            self._buf, self._rowids, self._keys = buf, rid, keys_all
        if self._n:
            self._buf[self._n : need] = vectors
            self._rowids[self._n : need] = rowids
            self._keys[self._n : need] = keys
        top = int(rowids.max())
        if top >= self._pos.shape[0]:
            pos = np.full(max(top + 1, int(self._pos.shape[0] * 1.5)), -1, dtype=np.int64)
            pos[: self._pos.shape[0]] = self._pos
            self._pos = pos
        else:
            self._pos = self._pos.copy()  # earlier snapshots keep their own map
        self._pos[rowids] = np.arange(self._n, need, dtype=np.int64)
        self._n = need

    def _relayout(self) -> None:
        """Sort all rows by (partition key, rowid) into a fresh buffer."""
        n = self._n
        if n == 0:
            self._n_sorted = 0
            return
        keys = self._keys[:n].astype(str)
        order = np.lexsort((self._rowids[:n], keys))
        buf = np.empty((max(n, self._buf.shape[0]), self.dim), dtype=np.float32)
        np.take(self._buf[:n], order, axis=0, out=buf[:n])
        rid = np.empty(buf.shape[0], dtype=np.int64)
        rid[:n] = self._rowids[:n][order]
        keys_all = np.empty(buf.shape[0], dtype=object)
        keys_all[:n] = self._keys[:n][order]
        pos = np.full(self._pos.shape[0], -1, dtype=np.int64)
        pos[rid[:n]] = np.arange(n, dtype=np.int64)
        self._buf, self._rowids, self._keys, self._pos = buf, rid, keys_all, pos
        self._n_sorted = n
        self._ranges = _ranges(keys_all[:n])
        logger.debug("%s: vector index laid out, %d rows", self.table, n)


def _ranges(sorted_keys: np.ndarray) -> dict[str, tuple[int, int]]:
    """[start, end) of each run of equal keys in a sorted key array."""
    n = sorted_keys.shape[0]
    if n == 0:
        return {}
    change = np.flatnonzero(sorted_keys[1:] != sorted_keys[:-1]) + 1
    starts = np.concatenate(([0], change))
    ends = np.concatenate((change, [n]))
    return {str(sorted_keys[s]): (int(s), int(e)) for s, e in zip(starts, ends, strict=True)}


def _empty(dim: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return (
        np.zeros(0, dtype=np.int64),
        np.zeros((0, dim), dtype=np.float32),
        np.zeros(0, dtype=object),
    )


def _normalized(x: np.ndarray) -> np.ndarray:
    """Unit-norm rows, in place; most stored vectors already are, so only the others are divided."""
    sq = np.einsum("ij,ij->i", x, x)
    off = np.flatnonzero(np.abs(sq - 1.0) > 1e-5)
    if off.shape[0]:
        norms = np.sqrt(sq[off])
        norms[norms == 0] = 1.0
        x[off] /= norms[:, None]
    return x


# -- one index per (store, modality) -------------------------------------------------------------

_registry: weakref.WeakKeyDictionary[Any, dict[str, VectorIndex]] = weakref.WeakKeyDictionary()
_registry_lock = threading.Lock()


def index_for(store: Any, modality: str) -> VectorIndex:
    """The index of ``store``'s ``modality`` vectors (created on first use, dropped with the store)."""
    try:
        table = MODALITY_VECTOR_TABLES[modality]
    except KeyError:
        valid = ", ".join(MODALITY_VECTOR_TABLES)
        raise ValueError(f"unknown modality {modality!r}; valid: {valid}") from None
    with _registry_lock:
        per_store = _registry.setdefault(store, {})
        if modality not in per_store:
            per_store[modality] = VectorIndex(table)
        return per_store[modality]


def invalidate(store: Any) -> None:
    """Drop the in-memory vectors of ``store`` (call after vectors were replaced in place)."""
    with _registry_lock:
        for index in _registry.get(store, {}).values():
            index.invalidate()


def release(store: Any) -> None:
    """Free ``store``'s indexes and their watcher connections (call from ``Store.close``)."""
    with _registry_lock:
        indexes = _registry.pop(store, {})
    for index in indexes.values():
        with index._lock:
            index.close()
            index._reset()
