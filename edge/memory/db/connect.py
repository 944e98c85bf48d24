"""The connection factory: every SQLite connection adamm opens comes from here.

Owns the best-practice settings applied to each connection (WAL, busy timeout, foreign keys,
double-quoted string literals off, ``synchronous=NORMAL``), loading sqlite-vec (extension loading
switched on just for it and straight back off), and forwarding SQLite's own log to ``logging``.
Read-only connections open ``mode=ro``, or ``immutable=1`` when the file or its folder cannot be
written and no ``-wal`` file exists (then no writer can be active, and SQLite needs to create no
``-shm``/``-wal`` file to read it: a read-only copy on a read-only medium opens, and nothing is
left next to it).

Also tells an adamm memory from other files (:func:`check_memory_file`): the ``application_id``
of the file header (:data:`APPLICATION_ID`, set by :func:`edge.memory.db.migrations.migrate`), or
for memories made before it was set, the ``_migrations`` table; a memory that records a migration
this code does not know was written by a newer adamm and is refused.

Called by :mod:`edge.memory.store` (writer and readers), ``adamm check`` and by tests.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import apsw
import sqlite_vec

from edge.errors import (
    ExtensionLoadError,
    MemoryDamagedError,
    NewerMemoryError,
    NoMemoryError,
    NotAMemoryError,
    StoreError,
    StoreLockedError,
)
from edge.memory.db.migrations import APPLICATION_ID, MIGRATIONS

logger = logging.getLogger(__name__)

#: pinned in pyproject.toml; a different build may store vectors differently
SQLITE_VEC_VERSION = "v0.1.9"
BUSY_TIMEOUT_MS = 5000
#: bytes of the database file each connection reads through a memory map (SQLite's
#: ``mmap_size``): reading the outbox's 12 kB payloads (overflow pages) is ~5x cheaper than through
#: read(); a larger file is read through read() beyond this. Writes are unaffected.
MMAP_BYTES = 256 * 2**20
_SQLITE_MAGIC = b"SQLite format 3\x00"
_HEADER_BYTES = 100

_sqlite_log_forwarded = False


def _forward_sqlite_log() -> None:
    global _sqlite_log_forwarded
    if _sqlite_log_forwarded:
        return
    try:
        apsw.config(apsw.SQLITE_CONFIG_LOG, _sqlite_log)
    except apsw.MisuseError:  # already initialised in this process: keep the existing handler
        pass
    _sqlite_log_forwarded = True


def _sqlite_log(code: int, message: str) -> None:
    # SQLITE_NOTICE / WARNING (e.g. WAL recovery) are informational, and so is SQLITE_SCHEMA
    # (a statement prepared before a migration changed the schema: SQLite re-prepares it and
    # retries); the rest are real problems.
    base = code & 0xFF
    level = logging.INFO if base in (17, 27, 28) else logging.WARNING
    logger.log(level, "sqlite (%s): %s", code, message)


def load_vec(conn: apsw.Connection) -> None:
    """Load sqlite-vec into ``conn``, failing with a message that says what to do."""
    try:
        conn.enable_load_extension(True)
        conn.load_extension(sqlite_vec.loadable_path())
    except (apsw.Error, OSError) as exc:
        raise ExtensionLoadError(
            f"cannot load the sqlite-vec extension ({exc})",
            hint=f"reinstall it: pip install sqlite-vec=={SQLITE_VEC_VERSION.lstrip('v')}",
        ) from None
    finally:
        conn.enable_load_extension(False)
    (version,) = conn.execute("SELECT vec_version()").fetchone()  # type: ignore[misc]
    if version != SQLITE_VEC_VERSION:
        logger.warning("sqlite-vec %s loaded, adamm is tested with %s", version, SQLITE_VEC_VERSION)


def _mode_writable(p: Path) -> bool:
    """``p`` can be written by this process (its permission bits too: root passes ``os.access``
    for a 0444 file, but a read-only copy is meant to stay read-only)."""
    try:
        mode = p.stat().st_mode
    except OSError:
        return False
    return bool(mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)) and os.access(p, os.W_OK)


def can_write(path: str | os.PathLike[str]) -> bool:
    """The memory at ``path`` and its folder are writable (a write connection can keep its WAL)."""
    p = Path(path).absolute()
    return _mode_writable(p) and _mode_writable(p.parent)


def readonly_uri(path: str | os.PathLike[str]) -> str:
    """The URI a read-only connection to ``path`` opens: ``immutable=1`` when nothing can be
    writing to it (file or folder not writable, no ``-wal`` file), else ``mode=ro``."""
    p = Path(path).absolute()
    immutable = not Path(f"{p}-wal").exists() and not can_write(p)
    return f"file:{quote(str(p))}?{'immutable=1' if immutable else 'mode=ro'}"


def store_error(exc: apsw.Error, path: str | os.PathLike[str], doing: str = "open") -> StoreError:
    """The :class:`StoreError` a store manager can act on for an SQLite error met on ``path``."""
    p = str(path)
    if isinstance(exc, apsw.BusyError | apsw.LockedError):
        return StoreLockedError(
            f"memory {p} is locked by another process past the busy timeout",
            hint="stop the other adamm process using it, or retry later",
        )
    if isinstance(exc, apsw.CorruptError | apsw.NotADBError):
        return MemoryDamagedError(
            f"memory {p} is damaged ({exc})", hint=f"run `adamm check --db {p}` to see what is wrong"
        )
    if isinstance(exc, apsw.FullError):
        return StoreError(
            f"the disk holding memory {p} is full; cannot {doing} it",
            hint="free some space and run the same command again: nothing stored is lost",
        )
    if isinstance(exc, apsw.ReadOnlyError):
        return StoreError(
            f"memory {p} is read-only; cannot {doing} it for writing", hint="copy it to a writable folder"
        )
    return StoreError(f"cannot {doing} memory {p}: {exc}", hint="check the path and its permissions")


def connect(path: str | os.PathLike[str], *, readonly: bool = False, create: bool = True) -> apsw.Connection:
    """Open a configured connection with sqlite-vec loaded.

    Every connection, read-only ones included, gets the same settings (busy timeout first).
    ``readonly`` opens without write access (readers; see :func:`readonly_uri`); ``create=False``
    refuses to create a missing database file (commands that only read, like ``adamm ask``).
    """
    _forward_sqlite_log()
    p = str(path)
    memory = p == ":memory:"
    if not memory and not create and not Path(p).exists():
        raise NoMemoryError(f"no memory at {p}", hint="create one with `adamm import` or `adamm demo`")
    flags = apsw.SQLITE_OPEN_READONLY if readonly else apsw.SQLITE_OPEN_READWRITE
    if create and not readonly:
        flags |= apsw.SQLITE_OPEN_CREATE
    flags |= apsw.SQLITE_OPEN_URI
    target = readonly_uri(p) if readonly and not memory and not p.startswith("file:") else p
    try:
        conn = apsw.Connection(target, flags=flags)
    except apsw.Error as exc:
        raise store_error(exc, p) from None
    try:
        conn.set_busy_timeout(BUSY_TIMEOUT_MS)
        # DQS off: "x" is an identifier, never a string literal
        conn.config(apsw.SQLITE_DBCONFIG_DQS_DML, 0)
        conn.config(apsw.SQLITE_DBCONFIG_DQS_DDL, 0)
        conn.pragma("foreign_keys", True)
        if not readonly and not memory:
            conn.pragma("journal_mode", "wal")
        conn.pragma("synchronous", "NORMAL")
        if not memory:
            conn.pragma("mmap_size", MMAP_BYTES)
    except apsw.Error as exc:
        conn.close()
        raise store_error(exc, p) from None
    load_vec(conn)
    return conn


def wal_keeper(path: str | os.PathLike[str]) -> apsw.Connection | None:
    """For a read-only store on a writable memory: a connection that never reads or writes, held
    open and closed after the readers, so that (being able to write) it removes the ``-wal`` and
    ``-shm`` files the readers needed when it is the last connection. None when there is nothing
    to clean (an immutable open, or a folder that cannot be written)."""
    p = Path(path)
    if "immutable=1" in readonly_uri(p):
        return None
    try:
        conn = apsw.Connection(str(p), flags=apsw.SQLITE_OPEN_READWRITE)
        conn.set_busy_timeout(BUSY_TIMEOUT_MS)
        conn.execute("SELECT count(*) FROM sqlite_schema").fetchall()  # joins the WAL (reads only)
    except apsw.Error as exc:
        logger.debug("no WAL keeper for %s: %s", p, exc)
        return None
    return conn


@contextmanager
def _peek(p: Path) -> Iterator[apsw.Connection]:
    """A bare read-only connection (no sqlite-vec, nothing written or created next to ``p``)."""
    flags = apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI
    wal = Path(f"{p}-wal").exists()
    uri = f"file:{quote(str(p.absolute()))}?{'mode=ro' if wal else 'immutable=1'}"
    conn = apsw.Connection(uri, flags=flags)
    try:
        conn.set_busy_timeout(BUSY_TIMEOUT_MS)
        yield conn
    finally:
        conn.close()


def check_memory_file(path: str | os.PathLike[str]) -> None:
    """Raise unless ``path`` holds an adamm memory this code can open; reads, never writes.

    :class:`NoMemoryError` when nothing is there; :class:`NotAMemoryError` for an empty file, a
    non-SQLite file or another program's database; :class:`NewerMemoryError` for a memory from a
    newer adamm; :class:`MemoryDamagedError` when SQLite cannot read its schema.
    """
    p = Path(path)
    what = "give the path of an adamm memory, or a new path for `adamm import` / `adamm demo` to create"
    try:
        st = p.stat()
    except FileNotFoundError:
        raise NoMemoryError(
            f"no memory at {p}", hint="create one with `adamm import` or `adamm demo`"
        ) from None
    except OSError as exc:
        raise StoreError(
            f"cannot read {p}: {exc.strerror}", hint="check the path and its permissions"
        ) from None
    if not stat.S_ISREG(st.st_mode):
        raise NotAMemoryError(f"{p} is not a file, not an adamm memory", hint=what)
    if st.st_size == 0:
        raise NotAMemoryError(f"{p} is an empty file, not an adamm memory", hint=what)
    try:
        with p.open("rb") as f:
            head = f.read(_HEADER_BYTES)
    except OSError as exc:
        raise StoreError(f"cannot read {p}: {exc.strerror}", hint="check its permissions") from None
    if len(head) < _HEADER_BYTES or not head.startswith(_SQLITE_MAGIC):
        raise NotAMemoryError(f"{p} is not an SQLite database, not an adamm memory", hint=what)
    app_id = int.from_bytes(head[68:72], "big")
    if app_id not in (0, APPLICATION_ID):
        raise NotAMemoryError(
            f"{p} is another program's SQLite database (application id {app_id:#010x}), not an adamm memory",
            hint=what,
        )
    try:
        with _peek(p) as conn:
            (has_table,) = conn.execute(
                "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = '_migrations'"
            ).fetchone() or (0,)
            names = [str(r[0]) for r in conn.execute("SELECT name FROM _migrations")] if has_table else []
            version = int(conn.pragma("user_version") or 0)
            app_id = int(conn.pragma("application_id") or 0)
    except (apsw.CorruptError, apsw.NotADBError) as exc:
        raise store_error(exc, p) from None
    except apsw.Error as exc:
        raise store_error(exc, p, "read") from None
    if not has_table and app_id != APPLICATION_ID:
        raise NotAMemoryError(f"{p} is another program's SQLite database, not an adamm memory", hint=what)
    known = {name for name, _ in MIGRATIONS}
    unknown = sorted(set(names) - known)
    if unknown or version > len(MIGRATIONS):
        detail = f"migration {unknown[0]}" if unknown else f"schema version {version}"
        raise NewerMemoryError(
            f"memory {p} was written by a newer adamm ({detail} is unknown to adamm {_version()})",
            hint="upgrade adamm",
        )


def _version() -> str:
    from edge import __version__

    return str(__version__)
