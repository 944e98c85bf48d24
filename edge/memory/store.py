"""The store facade: open a memory, import MEV lines, hand out reader connections and the writer.

Owns the lifecycle of one SQLite memory file: migrations on open, the single :class:`Writer`
thread (all writes), a pool of read-only reader connections (one per thread), the stores' time
zones, the lazily loaded text encoder, and the import pipeline (parse, validate and build rows on
the calling thread; look up existing ids and insert on the writer, ``batch_size`` lines per
``BEGIN IMMEDIATE`` transaction, one batch in flight while the next is prepared).

Used by ``adamm import`` (:mod:`edge.cli.cmd_import`), search, ask, the demo and the daemon.

Time zones: each store has one IANA zone in the ``stores`` table. The first event of an unknown
store takes, in order: the ``timezone`` given to :meth:`Store.import_lines` / :meth:`Store.open`
(``--tz``); the zone of the memory's only store when it holds exactly one; the default zone an
earlier ``--tz`` recorded; otherwise the line is rejected ("store X has no time zone: pass --tz").
"""

from __future__ import annotations

import gc
import json
import logging
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime
from functools import lru_cache
from itertools import chain
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import apsw
import numpy as np

from edge.config import AdammConfig
from edge.contract import MAX_AHEAD
from edge.errors import ModelMissingError, NoMemoryError, StoreError
from edge.memory.db import connect as db
from edge.memory.db.migrations import MODALITY_VECTOR_TABLES, VECTOR_DIM, migrate
from edge.memory.db.writer import Writer
from edge.memory.ingest.build import EVENT_COLUMNS, EventRows, LocalTime, build, utc_text, zone
from edge.memory.ingest.mev import LineRejected, check_line
from edge.memory.tiers.archive import hash_key

if TYPE_CHECKING:
    from edge.encoders.base import Encoder
    from edge.memory.caches import TextVectorCache
    from edge.memory.query.rollup_source import RollupSource

logger = logging.getLogger(__name__)

_ATTR_COLUMNS = ("event_rowid", "key", "value_text", "value_num")
_REF_COLUMNS = ("event_rowid", "seq", "ref")
_REL_COLUMNS = ("event_rowid", "seq", "head", "type", "tail")
_INSERT_ENTITY = "INSERT OR IGNORE INTO entities(event_rowid, entity) VALUES (?, ?)"


def _rollup_high_water(conn: apsw.Connection) -> int:
    """The largest event id the hourly rollup has counted (0 without a rollup)."""
    try:
        row = conn.execute("SELECT high_water FROM rollup_state WHERE id = 1").fetchone()
    except apsw.SQLError:  # a memory from before the rollup's migration
        return 0
    return int(row[0]) if row else 0


_EXISTING = (
    "SELECT e.event_id, e.id, e.content_hash FROM events AS e "
    "WHERE e.event_id IN (SELECT value FROM json_each(?))"
)
#: events of the batch that only the cold archive holds (their day is closed; see ``_submit_batch``)
_ARCHIVED = (
    "SELECT a.event_id, a.hash, a.local_date, f.store_id FROM archive_index AS a "
    "JOIN archive_members AS m ON m.id = a.member JOIN archive_files AS f ON f.id = m.file_id "
    "WHERE a.event_id IN (SELECT value FROM json_each(?))"
)
DEFAULT_TZ_SETTING = "default_timezone"
#: prepare the next batch while the writer inserts the previous one. The writer inserts many rows
#: per statement (:func:`_insert_rows`), so it releases the GIL for long stretches of SQLite work
#: instead of once per row (which made it wait on the busy importing thread at every row).
PIPELINE = True
#: page cache of the writer connection while an import runs (KiB, as ``PRAGMA cache_size`` takes it)
IMPORT_CACHE_KIB = 64 * 1024
#: page cache of each reader connection (KiB; filled only as pages are read): search results and
#: evidence read rows scattered over the whole events table, which a 2 MiB default cache (SQLite's)
#: keeps re-reading from the file: 10 result rows right after a scan took 0.5 ms, 0.2 ms with this
READ_CACHE_KIB = 64 * 1024
#: SQL text of one multi-row INSERT stays below this (so apsw's statement cache can keep it)
_MAX_INSERT_SQL = 15_000
#: SQLite's default limit on bound parameters is 32766; stay well below
_MAX_INSERT_PARAMS = 8_000

#: GIL switch interval while an import runs: the writer thread gets the GIL back this soon after
#: each SQLite call instead of after Python's default 5 ms (it waits that long at every statement
#: while the importing thread parses)
IMPORT_SWITCH_INTERVAL_S = 0.0005

_runtime_lock = threading.Lock()
_runtime_users = 0
_runtime_saved: tuple[bool, float] = (True, 0.005)


@contextmanager
def _import_runtime() -> Iterator[None]:
    """While an import runs: the cyclic garbage collector paused and a short GIL switch interval
    (both restored when the last concurrent import ends).

    An import allocates millions of small containers that all die by reference counting; the
    collector's generation sweeps over them only cost time.
    """
    global _runtime_users, _runtime_saved
    with _runtime_lock:
        if _runtime_users == 0:
            _runtime_saved = (gc.isenabled(), sys.getswitchinterval())
            gc.disable()
            sys.setswitchinterval(min(IMPORT_SWITCH_INTERVAL_S, _runtime_saved[1]))
        _runtime_users += 1
    try:
        yield
    finally:
        with _runtime_lock:
            _runtime_users -= 1
            if _runtime_users == 0:
                sys.setswitchinterval(_runtime_saved[1])
                if _runtime_saved[0]:
                    gc.enable()


@lru_cache(maxsize=64)
def _values_sql(table: str, columns: tuple[str, ...], rows: int) -> str:
    row = "(" + ",".join("?" * len(columns)) + ")"
    return f"INSERT INTO {table}({', '.join(columns)}) VALUES " + ",".join([row] * rows)


def _rows_per_statement(columns: tuple[str, ...]) -> int:
    width = len(columns)
    head = len(_values_sql("x" * 16, columns, 0))
    return max(1, min((_MAX_INSERT_SQL - head) // (2 * width + 2), _MAX_INSERT_PARAMS // width))


def _insert_rows(
    conn: apsw.Connection, table: str, columns: tuple[str, ...], rows: Sequence[Sequence[Any]]
) -> None:
    """INSERT ``rows`` with as few statements as possible: many rows per statement (statement
    sizes from a fixed set, so they stay prepared), each executed in one go inside SQLite."""
    n = len(rows)
    if n == 0:
        return
    full = _rows_per_statement(columns)
    i = 0
    for size in (full, 64, 8, 1):
        if size > full and size != 1:
            continue
        sql = _values_sql(table, columns, size)
        while n - i >= size:
            conn.execute(sql, tuple(chain.from_iterable(rows[i : i + size])))
            i += size


def _blank(line: str | bytes) -> bool:
    """The line holds JSON whitespace only (not ``\\x0b``, ``\\x1c`` or other Unicode spaces)."""
    if isinstance(line, bytes):
        return not line.strip(b" \t\r\n")
    return not line.strip(" \t\r\n")


@dataclass
class ImportReport:
    """Counts of one import (CONTRACT.md: ``{"accepted", "rejected", "duplicates", "merged"}``).

    ``merged`` is a contract field and always 0 here: an import stores every valid line as its own
    event (near-duplicates are merged by the daemon before they reach the store)."""

    accepted: int = 0
    rejected: int = 0
    duplicates: int = 0
    merged: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass
class _Batch:
    rows: list[EventRows] = field(default_factory=list)
    rejects: list[tuple[int, str]] = field(default_factory=list)
    new_stores: dict[str, str] = field(default_factory=dict)
    duplicates: int = 0
    superseded: int = 0  # earlier lines of this batch replaced by a later one (replace=True)
    lines: int = 0


@dataclass
class _BatchResult:
    accepted: int
    duplicates: int
    rejects: list[tuple[int, str]]
    replaced: int


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)


class Store:
    """One memory file. Open with :meth:`open`; close (or use as a context manager) when done."""

    def __init__(
        self,
        path: Path,
        config: AdammConfig,
        writer_conn: apsw.Connection | None,
        readonly: bool,
        default_tz: str | None,
    ) -> None:
        self.path = path
        self.config = config
        self.readonly = readonly
        self._default_tz = default_tz
        self._writer_conn = writer_conn
        self._keeper: apsw.Connection | None = None  # see db.wal_keeper
        self._closed = False
        self._local = threading.local()
        self._readers: list[apsw.Connection] = []
        self._readers_lock = threading.Lock()
        self._zones: dict[str, str] = {}
        self._local_times: dict[str, LocalTime] = {}
        self._encoder: Encoder | None = None
        self._encoder_failed = False
        self._encoder_lock = threading.Lock()
        self._vector_cache: TextVectorCache | None = None
        self._import_lock = threading.Lock()
        self.writer: Writer | _ReadonlyWriter
        if writer_conn is not None:
            self.writer = Writer(writer_conn, name=f"adamm-writer:{path.name}")
            self.writer.start()
        else:
            self.writer = _ReadonlyWriter(path)
        self._load_zones()

    # -- lifecycle -------------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        timezone: str | None = None,
        config: AdammConfig | None = None,
        readonly: bool = False,
        create: bool = True,
    ) -> Store:
        """Open (and unless ``readonly``, migrate) the memory at ``path``.

        An existing file must be an adamm memory (:func:`edge.memory.db.connect.check_memory_file`:
        an empty file, another program's database or a memory from a newer adamm is refused and
        left untouched); a new one is created only where no file exists, unless ``create`` is
        false or ``readonly`` (then :class:`~edge.errors.NoMemoryError`). ``timezone`` (an IANA
        name, checked) is the zone for stores that have none yet; it is recorded as the memory's
        default zone when none is recorded.
        """
        if timezone is not None:
            zone(timezone)
        p = Path(path)
        cfg = config or AdammConfig()
        exists = p.exists() or p.is_symlink()
        if exists:
            db.check_memory_file(p)
        elif readonly or not create:
            raise NoMemoryError(f"no memory at {p}", hint="create one with `adamm import` or `adamm demo`")
        if readonly:
            keeper = db.wal_keeper(p)
            try:
                conn = db.connect(p, readonly=True, create=False)
                conn.close()
                store = cls(p, cfg, None, True, timezone)
            except BaseException:
                if keeper is not None:
                    keeper.close()
                raise
            store._keeper = keeper
            return store
        conn = db.connect(p, readonly=False, create=not exists)
        try:
            migrate(conn)
            if timezone is not None:
                conn.execute(
                    "INSERT OR IGNORE INTO settings(key, value) VALUES (?, ?)", (DEFAULT_TZ_SETTING, timezone)
                )
        except StoreError:
            conn.close()
            raise
        except apsw.Error as exc:
            conn.close()
            raise db.store_error(exc, p, "prepare") from None
        return cls(p, cfg, conn, False, timezone)

    def close(self) -> None:
        """Stop the writer (after draining its queue) and close every connection."""
        if self._closed:
            return
        self._closed = True
        self.writer.close()
        with self._readers_lock:
            readers, self._readers = self._readers, []
        for conn in readers:
            conn.close()
        if self._writer_conn is not None:
            self._writer_conn.close()
            self._writer_conn = None
        if self._keeper is not None:
            self._keeper.close()
            self._keeper = None

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- connections -----------------------------------------------------------------------------

    @contextmanager
    def read(self) -> Iterator[apsw.Connection]:
        """A read-only connection of this thread (pooled: the same one each time on a thread)."""
        if self._closed:
            raise StoreError("the store is closed")
        conn: apsw.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = db.connect(self.path, readonly=True, create=False)
            conn.pragma("cache_size", -READ_CACHE_KIB)
            self._local.conn = conn
            with self._readers_lock:
                self._readers.append(conn)
        yield conn

    # -- time zones ------------------------------------------------------------------------------

    def _load_zones(self) -> None:
        try:
            with self.read() as conn:
                rows = list(conn.execute("SELECT store_id, timezone FROM stores"))
        except apsw.SQLError:  # not migrated (read-only open of an empty file)
            rows = []
        self._zones.update({str(s): str(tz) for s, tz in rows})

    def setting(self, key: str) -> str | None:
        """A value of the ``settings`` table (None when absent, or the file is not migrated)."""
        try:
            with self.read() as conn:
                row = conn.execute("SELECT value FROM settings WHERE key = ?", (key,)).fetchone()
        except apsw.SQLError:
            return None
        return None if row is None else str(row[0])

    def set_setting(self, key: str, value: str) -> None:
        """Write a value of the ``settings`` table (through the writer; returns once committed)."""

        def upsert(conn: apsw.Connection) -> None:
            conn.execute(
                "INSERT INTO settings(key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

        self.writer.submit(upsert).result()

    def timezone(self, store_id: str | None = None) -> str:
        """The IANA zone of ``store_id`` (or of the memory's single store; else the default zone)."""
        if store_id is not None:
            if store_id not in self._zones:
                self._load_zones()
            tz = self._zones.get(store_id)
            if tz is not None:
                return tz
        else:
            self._load_zones()
            if len(self._zones) == 1:
                return next(iter(self._zones.values()))
        fallback = self._default_tz or self.setting(DEFAULT_TZ_SETTING)
        if fallback:
            return fallback
        if self._zones:
            return self._zones[sorted(self._zones)[0]]
        return "UTC"

    def _zone_for_new_store(self, store_id: str, tz_arg: str | None, pending: dict[str, str]) -> str:
        """The zone a store seen for the first time gets, or :class:`LineRejected`."""
        self._load_zones()
        if store_id in self._zones:
            return self._zones[store_id]
        if tz_arg:
            return tz_arg
        known = {**self._zones, **pending}
        if len(known) == 1:
            return next(iter(known.values()))
        recorded = self.setting(DEFAULT_TZ_SETTING)
        if recorded:
            return recorded
        raise LineRejected(
            f"store {store_id} has no time zone: pass --tz (an IANA name such as Asia/Shanghai)"
        )

    def _local_time(self, store_id: str, tz_arg: str | None, batch: _Batch) -> LocalTime:
        lt = self._local_times.get(store_id)
        if lt is not None:
            return lt
        tz = self._zones.get(store_id)
        if tz is None:
            tz = self._zone_for_new_store(store_id, tz_arg, batch.new_stores)
            if store_id not in self._zones:
                batch.new_stores[store_id] = tz
                self._zones[store_id] = tz
        lt = LocalTime(zone(tz))
        self._local_times[store_id] = lt
        return lt

    # -- text vectors ----------------------------------------------------------------------------

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray | None:
        """Unit-norm text vectors from ``config.encoders.text``; None when the model is not installed."""
        enc = self.text_encoder()
        if enc is None:
            return None
        return enc.encode(list(texts))

    def embed_texts_cached(self, texts: Sequence[str]) -> np.ndarray | None:
        """:meth:`embed_texts` through the memory's text-vector cache (migration 0006): the
        encoder is loaded only when some text has no cached vector, and what it computes is kept
        for the next process. Used for the parser's similarity matching (short phrases, stored
        values), not for event texts."""
        items = [str(t) for t in texts]
        if not items:
            return self.embed_texts(items)
        if self._vector_cache is None:
            from edge.memory.caches import TextVectorCache

            self._vector_cache = TextVectorCache(self)
        model = self.config.encoders.text
        found = self._vector_cache.lookup(model, items)
        missing = [t for t in dict.fromkeys(items) if t not in found]
        if missing:
            vecs = self.embed_texts(missing)
            if vecs is None:
                return None
            new = {t: np.asarray(v, dtype=np.float32) for t, v in zip(missing, vecs, strict=True)}
            self._vector_cache.add(model, new)
            found.update(new)
        return np.stack([found[t] for t in items]).astype(np.float32, copy=False)

    def text_encoder(self) -> Encoder | None:
        """The ``config.encoders.text`` encoder, loaded on first use and shared (the daemon embeds
        transcripts with it too, so one session serves both); None when the model is not installed."""
        with self._encoder_lock:
            if self._encoder is None and not self._encoder_failed:
                from edge.encoders.base import create

                cfg = self.config.encoders
                try:
                    self._encoder = create(cfg.text, providers=cfg.providers, batch_size=cfg.batch_size)
                except ModelMissingError as exc:
                    self._encoder_failed = True
                    logger.warning(
                        "text encoder not available, events are stored without text vectors: %s", exc
                    )
            return self._encoder

    # -- analysis port ---------------------------------------------------------------------------

    def event_source(self) -> RollupSource:
        """The analysis source over this memory: the rollup, with the events behind it for open
        days. Strict: a closed day is answered from its rollup alone (its events may be in the cold
        archive, so reading them could count only the few restored ones); what the rollup cannot
        express there is ``insufficient_data`` with the reason, never a partial count."""
        from edge.memory.query.rollup_source import RollupSource

        return RollupSource(self, writer=self.writer, strict=True)

    # -- import ----------------------------------------------------------------------------------

    def import_events(self, events: Iterable[dict[str, Any]], **kwargs: Any) -> ImportReport:
        """Import event dicts (the simulator, the daemon): serialised, then :meth:`import_lines`."""
        lines = (json.dumps(e, ensure_ascii=False, default=_json_default) for e in events)
        return self.import_lines(lines, **kwargs)

    def import_lines(
        self,
        lines: Iterable[str | bytes],
        *,
        replace: bool = False,
        on_reject: Callable[[int, str], None] | None = None,
        progress: Callable[[int], None] | None = None,
        batch_size: int = 2000,
        default_store_tz: str | None = None,
        now: datetime | None = None,
    ) -> ImportReport:
        """Validate and store MEV JSON Lines (line numbers are 1-based; blank lines, those of JSON
        whitespace only, are skipped). Each item is one line, as text or as the UTF-8 bytes read
        from a file (invalid UTF-8 rejects that line).

        Idempotent on ``event_id``: the same content again is a duplicate; different content is
        rejected unless ``replace`` (then the stored event is replaced and counts as accepted). An
        event the cold tier archived counts as stored: the same content is a duplicate, other
        content is rejected even with ``replace`` (its day is closed; the rollup is its record).
        Rejected lines go to ``on_reject(line_no, reason)`` in line order. An event dated more
        than :data:`~edge.contract.MAX_AHEAD` after ``now`` (the clock) is rejected.

        Each batch is its own transaction: when the disk fills up (SQLITE_FULL) the failing batch
        is rolled back, the batches before it stay, and :class:`StoreError` (exit 3) says how many
        events were stored; the same import run again stores the rest.
        """
        if self.readonly:
            raise StoreError("the store was opened read-only", hint="open it without readonly to import")
        tz_arg = default_store_tz or self._default_tz
        if tz_arg is not None:
            zone(tz_arg)
        report = ImportReport()
        clock = now or datetime.now(UTC)
        imported_at = utc_text(datetime.now(UTC))
        latest = clock + MAX_AHEAD  # an event dated later is not believed (nor would the hub)
        batch_size = max(1, int(batch_size))
        in_flight: tuple[_Batch, Future[_BatchResult]] | None = None
        lines_read = 0
        replaced_any = False
        submitted = False

        #: batches handed to the writer whose result is not counted yet (at most two)
        outstanding: list[tuple[_Batch, Future[_BatchResult]]] = []

        def submit(b: _Batch) -> Future[_BatchResult]:
            future = self._submit_batch(b, replace)
            outstanding.append((b, future))
            return future

        def finish(item: tuple[_Batch, Future[_BatchResult]]) -> None:
            nonlocal replaced_any
            b, fut = item
            try:
                res = fut.result()
            finally:
                outstanding[:] = [o for o in outstanding if o[1] is not fut]
            report.accepted += res.accepted + b.superseded
            report.duplicates += res.duplicates + b.duplicates
            rejects = sorted(b.rejects + res.rejects)
            report.rejected += len(rejects)
            replaced_any = replaced_any or res.replaced > 0
            if on_reject is not None:
                for n, reason in rejects:
                    on_reject(n, reason)
            if progress is not None:
                progress(b.lines)

        def read_and_store(grow_cache: Callable[[], None]) -> None:
            nonlocal lines_read, submitted, in_flight
            batch = _Batch()
            seen: dict[str, int] = {}  # event_id -> index in batch.rows
            for lineno, line in enumerate(lines, start=1):
                lines_read = lineno
                batch.lines = lineno
                if _blank(line):
                    continue
                try:
                    checked = check_line(line)
                    if checked.ts > latest:
                        raise LineRejected(
                            f"timestamp {checked.obj['timestamp']} is more than a day after the clock "
                            f"({utc_text(clock)}); fix the date or the device's clock"
                        )
                    lt = self._local_time(checked.obj["store_id"], tz_arg, batch)
                    rows = build(checked, lineno, lt, imported_at)
                except LineRejected as exc:
                    batch.rejects.append((lineno, exc.reason))
                else:
                    prev = seen.get(rows.event_id)
                    if prev is None:
                        seen[rows.event_id] = len(batch.rows)
                        batch.rows.append(rows)
                    else:
                        earlier = batch.rows[prev]
                        if earlier.content_hash == rows.content_hash:
                            batch.duplicates += 1
                        elif replace:
                            batch.rows[prev] = rows
                            batch.superseded += 1
                        else:
                            batch.rejects.append(
                                (
                                    lineno,
                                    f"event_id {rows.event_id} already seen at line {earlier.line} "
                                    "with different content (use --replace)",
                                )
                            )
                if len(batch.rows) + len(batch.rejects) + batch.duplicates >= batch_size:
                    if not submitted:
                        grow_cache()  # a big import: more than one batch
                    future = submit(batch)
                    submitted = True
                    if in_flight is not None:
                        finish(in_flight)
                    in_flight = (batch, future)
                    if not PIPELINE:
                        finish(in_flight)
                        in_flight = None
                    batch = _Batch(lines=lineno)
                    seen = {}
            if batch.rows or batch.rejects or batch.duplicates or not submitted:
                batch.lines = lines_read
                future = submit(batch)
                if in_flight is not None:
                    finish(in_flight)
                in_flight = (batch, future)
            if in_flight is not None:
                finish(in_flight)

        failed: apsw.Error | None = None
        with self._import_lock, _import_runtime(), self._import_cache() as grow_cache:
            try:
                read_and_store(grow_cache)
            except apsw.Error as exc:
                failed = exc
                # that batch was rolled back; the next one may be queued already: keep it out if
                # the writer has not started it, else count it (its transaction is its own)
                for item in list(outstanding):
                    if item[1].cancel():
                        continue
                    try:
                        finish(item)
                    except apsw.Error:
                        pass
        if isinstance(failed, apsw.FullError):
            raise StoreError(
                f"the disk holding {self.path} is full: {report.accepted} events of this import "
                "were stored and are safe",
                hint="free some space and run the same import again; it continues where it stopped, "
                "events already stored count as duplicates",
            ) from None
        if failed is not None:
            raise db.store_error(failed, self.path, "write to") from None
        if replaced_any:
            from edge.memory.search import vector_index

            vector_index.invalidate(self)
        return report

    @contextmanager
    def _import_cache(self) -> Iterator[Callable[[], None]]:
        """Yields ``grow()``: a bigger page cache on the writer connection for the rest of the import
        (queued before the next batch); the old size comes back when the import ends."""
        old: list[Future[int]] = []

        def set_size(conn: apsw.Connection) -> int:
            size = int(conn.pragma("cache_size"))
            conn.pragma("cache_size", -IMPORT_CACHE_KIB)
            return size

        def grow() -> None:
            if not old:
                old.append(self.writer.submit(set_size))

        try:
            yield grow
        finally:
            if old:
                size = old[0].result()
                self.writer.submit(lambda conn: conn.pragma("cache_size", size)).result()

    def _embed_batch(self, batch: _Batch) -> None:
        wanted = [r for r in batch.rows if r.text_to_embed is not None]
        if not wanted:
            return
        # events already stored with the same content need no new vector
        with self.read() as conn:
            known = {
                str(eid): str(h)
                for eid, _id, h in conn.execute(_EXISTING, (json.dumps([r.event_id for r in wanted]),))
            }
        wanted = [r for r in wanted if known.get(r.event_id) != r.content_hash]
        if not wanted:
            return
        vecs = self.embed_texts([r.text_to_embed or "" for r in wanted])
        if vecs is None:
            return
        for r, v in zip(wanted, vecs, strict=True):
            if v.shape[0] == VECTOR_DIM:
                r.vectors["text"] = np.asarray(v, dtype=np.float32).tobytes()

    def _submit_batch(self, batch: _Batch, replace: bool) -> Future[_BatchResult]:
        self._embed_batch(batch)
        rows = batch.rows
        new_stores = dict(batch.new_stores)
        created = utc_text(datetime.now(UTC))

        def write(conn: apsw.Connection) -> _BatchResult:
            if new_stores:
                conn.executemany(
                    "INSERT OR IGNORE INTO stores(store_id, timezone, created_at) VALUES (?, ?, ?)",
                    [(s, tz, created) for s, tz in new_stores.items()],
                )
            existing: dict[str, tuple[int, str]] = {}
            if rows:
                existing = {
                    str(eid): (int(i), str(h))
                    for eid, i, h in conn.execute(_EXISTING, (json.dumps([r.event_id for r in rows]),))
                }
            # an event the cold tier archived is still stored: its day is closed and the rollup is
            # that day's record, so the same content again is a duplicate, other content is refused
            absent = [r.event_id for r in rows if r.event_id not in existing]
            archived: dict[str, tuple[int, str, str]] = {}
            if absent:
                archived = {
                    str(eid): (int(h), str(day), str(store))
                    for eid, h, day, store in conn.execute(_ARCHIVED, (json.dumps(absent),))
                }
            (max_id,) = conn.execute("SELECT COALESCE(MAX(id), 0) FROM events").fetchone()  # type: ignore[misc]
            # above the rollup's high-water mark too: once every event is archived the table can be
            # empty while the rollup has counted ids above its max; a new event under such an id
            # would look counted already (a late event of a closed day not seen as late)
            next_id = max(int(max_id), _rollup_high_water(conn)) + 1
            accepted = duplicates = replaced = 0
            rejects: list[tuple[int, str]] = []
            to_insert: list[tuple[int, EventRows]] = []
            replaced_ids: list[int] = []
            for r in rows:
                hit = existing.get(r.event_id)
                cold = archived.get(r.event_id) if hit is None else None
                if cold is not None:
                    if cold[0] == hash_key(r.content_hash):
                        duplicates += 1
                    else:
                        rejects.append((r.line, _archived_reason(r.event_id, cold[1], cold[2], replace)))
                elif hit is None:
                    to_insert.append((next_id, r))
                    next_id += 1
                elif hit[1] == r.content_hash:
                    duplicates += 1
                elif replace:
                    replaced_ids.append(hit[0])
                    to_insert.append((hit[0], r))
                else:
                    rejects.append(
                        (
                            r.line,
                            f"event_id {r.event_id} already stored with different content (use --replace)",
                        )
                    )
            if replaced_ids:
                ids = [(i,) for i in replaced_ids]
                for table in MODALITY_VECTOR_TABLES.values():
                    conn.executemany(f"DELETE FROM {table} WHERE rowid = ?", ids)
                conn.executemany("DELETE FROM events WHERE id = ?", ids)  # children cascade
                replaced = len(replaced_ids)
            if to_insert:
                _insert_rows(conn, "events", EVENT_COLUMNS, [(i, *r.event) for i, r in to_insert])
                _insert_rows(
                    conn, "event_attrs", _ATTR_COLUMNS, [(i, *a) for i, r in to_insert for a in r.attrs]
                )
                _insert_rows(
                    conn, "raw_refs", _REF_COLUMNS, [(i, *ref) for i, r in to_insert for ref in r.refs]
                )
                ents = [(i, e) for i, r in to_insert for e in r.entities]
                if ents:  # INSERT OR IGNORE: an entity listed twice is kept once
                    conn.executemany(_INSERT_ENTITY, ents)
                _insert_rows(
                    conn, "relations", _REL_COLUMNS, [(i, *rel) for i, r in to_insert for rel in r.relations]
                )
                for modality, table in MODALITY_VECTOR_TABLES.items():
                    vecs = [(i, r.vectors[modality]) for i, r in to_insert if modality in r.vectors]
                    if vecs:
                        conn.executemany(f"INSERT INTO {table}(rowid, embedding) VALUES (?, ?)", vecs)
                accepted = len(to_insert)
            return _BatchResult(accepted, duplicates, rejects, replaced)

        return self.writer.submit(write)


def _archived_reason(event_id: str, day: str, store: str, replace: bool) -> str:
    """Why a line whose event the cold archive holds with other content is refused."""
    return (
        f"event_id {event_id} is in the cold archive with different content: day {day} of store {store} "
        f"is closed and its figures are final, so it {'cannot be replaced' if replace else 'is kept as archived'} "
        f"(adamm restore --db ... {event_id} shows the archived event)"
    )


class _ReadonlyWriter:
    """Stands in for the writer of a read-only store: every submit fails with a clear message."""

    def __init__(self, path: Path) -> None:
        self._path = path

    def submit(self, fn: Callable[[apsw.Connection], Any]) -> Future[Any]:
        raise StoreError(f"{self._path} was opened read-only", hint="open it without readonly to write")

    def close(self, timeout: float | None = None) -> None:
        return None
