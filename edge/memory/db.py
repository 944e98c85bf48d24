"""The connection factory: every SQLite connection adamm opens comes from here.

Owns the best-practice settings applied to each connection (WAL, busy timeout, foreign keys,
double-quoted string literals off, ``synchronous=NORMAL``), loading sqlite-vec (extension loading
switched on just for it and straight back off), and forwarding SQLite's own log to ``logging``.
Called by :mod:`edge.memory.store` (writer and readers) and by tests.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import apsw
import sqlite_vec

from edge.errors import ExtensionLoadError, StoreError

logger = logging.getLogger(__name__)

#: pinned in pyproject.toml; a different build may store vectors differently
SQLITE_VEC_VERSION = "v0.1.9"
BUSY_TIMEOUT_MS = 5000

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
    # SQLITE_NOTICE / WARNING (e.g. WAL recovery) are informational; the rest are real problems.
    base = code & 0xFF
    level = logging.INFO if base in (27, 28) else logging.WARNING
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


def connect(path: str | os.PathLike[str], *, readonly: bool = False, create: bool = True) -> apsw.Connection:
    """Open a configured connection with sqlite-vec loaded.

    ``readonly`` opens without write access (readers); ``create=False`` refuses to create a missing
    database file (commands that only read, like ``adamm ask``).
    """
    _forward_sqlite_log()
    p = str(path)
    if p != ":memory:" and not create and not Path(p).exists():
        raise StoreError(f"database {p} does not exist", hint="create it with `adamm import --db PATH FILE`")
    flags = apsw.SQLITE_OPEN_READONLY if readonly else apsw.SQLITE_OPEN_READWRITE
    if create and not readonly:
        flags |= apsw.SQLITE_OPEN_CREATE
    flags |= apsw.SQLITE_OPEN_URI
    try:
        conn = apsw.Connection(p, flags=flags)
        conn.set_busy_timeout(BUSY_TIMEOUT_MS)
        # DQS off: "x" is an identifier, never a string literal
        conn.config(apsw.SQLITE_DBCONFIG_DQS_DML, 0)
        conn.config(apsw.SQLITE_DBCONFIG_DQS_DDL, 0)
        conn.pragma("foreign_keys", True)
        if not readonly and p != ":memory:":
            conn.pragma("journal_mode", "wal")
        conn.pragma("synchronous", "NORMAL")
    except apsw.Error as exc:
        raise StoreError(
            f"cannot open database {p}: {exc}", hint="check the path and its permissions"
        ) from None
    load_vec(conn)
    return conn
