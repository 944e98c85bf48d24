"""The hub store: one schema on SQLite (stdlib ``sqlite3``) and PostgreSQL (psycopg 3).

Owns the connection (:class:`HubDB`, opened by :func:`open_hub` from ``--db``: a path is SQLite,
``postgresql://...`` is PostgreSQL), the small dialect layer (placeholders, column types, the
per-key lock) and the named migrations (:data:`MIGRATIONS`, recorded in ``hub_migrations``).

Tables (migration ``0001_hub``):

- ``hub_rollup``: one row per (store, store-local day, slice, slice value, event type) holding
  every :data:`~edge.sync.messages.ROLLUP_FIELDS` column and the cited first/last event ids.
  ``value`` is the slice value as text (NULL for the ``total`` slice and events without one);
  ``vkey`` is its non-NULL surrogate for the primary key (``''`` for NULL, ``'v'`` + value).
- ``hub_catalog``: per (store, slice, slice value, event type) the first and last day held and
  the days holding it and the events summed over them, kept by ingest with ``hub_rollup`` (what
  the vocabulary and coverage read instead of a year of rows); an entry whose last day goes is
  removed; otherwise a day that loses a value leaves the span as it was (widened only).
- ``hub_summaries``: the per-key state: per (store, key) the kind, the highest version stored,
  its ``msg_id``, when it arrived, and the body of a fact (rollup rows live in ``hub_rollup``).
- ``hub_messages``: every ``msg_id`` received once (what a redelivery is recognised by).
- ``hub_facts``: the current body of each store's semantic facts, by ``fact_id``.
- ``hub_stores``: per store its zone, its last status (state, ``at``, when received) and when its
  last summary arrived.
- ``hub_parked``: messages the hub could not use: topic, ``msg_id`` when readable, reason code,
  detail, the first :data:`PARKED_PAYLOAD_CHARS` characters of the payload, when.
- ``hub_actions`` (migration ``0002_hub_actions``): the outbox of actions the hub issues to a
  store's role, keyed by ``action_id``: store, role, type, ``params_json``, summary,
  ``evidence_json``, confidence, ``issued_at``, ``expires_at``, state (``pending`` < ``sent`` <
  ``accepted`` < ``done`` | ``rejected``; ``expired``), ``acked_by``, ``acked_at``, ``attempts``,
  ``sent_at``, ``next_send_at``, ``updated_at`` (:mod:`hub.actions` reads and writes it).

- ``hub_diverged`` (migration ``0003_hub_diverged``): per (store, key, version the hub held) a
  message of the store with a lower or equal version and other content (answered ``kept_newer``):
  the store's version, when; ``confirmed_at`` once the store sent its current content above the
  hub's version (its versions went backwards: a rebuilt or restored memory, a new box, or a
  forged higher version), which is what ``adamm-hub status`` lists as ``diverged``.

- ``hub_components`` (migration ``0004_hub_components``): the health of a worker's long-running
  parts (``actions/worker-N``: the action sender): state (``ok``, ``failing``, ``stopped``), since
  when it fails, how many rounds failed, the last error, when written; ``adamm-hub status`` shows it.

Nothing here knows MQTT; :mod:`hub.ingest` writes, :mod:`hub.source` and :mod:`hub.status` read.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from edge.errors import EnvironmentProblem, UsageError
from edge.sync.messages import ROLLUP_FIELDS

logger = logging.getLogger(__name__)

#: how much of a parked payload is kept (the rest is dropped; the reason says what was wrong)
PARKED_PAYLOAD_CHARS = 4096
#: seconds a SQLite writer waits for another's lock before giving up (exit 3)
BUSY_TIMEOUT_S = 30.0


class HubStoreError(EnvironmentProblem):
    """The hub database cannot be opened, migrated or written (exit 3)."""


class HubStoreUnreachable(HubStoreError):
    """The hub's PostgreSQL did not answer, transiently (:func:`is_transient`: the server starting,
    restarting or not accepting connections yet, a dropped connection): worth trying again."""


class NotAHubError(HubStoreError):
    """The file is not an adamm hub database (another program's, empty, not SQLite)."""


def _columns_ddl(real: str) -> str:
    return ", ".join(f"{f} {real} NOT NULL DEFAULT 0" for f in ROLLUP_FIELDS)


def _migration_0001(d: str) -> list[str]:
    real = "DOUBLE PRECISION" if d == "postgresql" else "REAL"
    serial = "BIGSERIAL PRIMARY KEY" if d == "postgresql" else "INTEGER PRIMARY KEY AUTOINCREMENT"
    big = "BIGINT" if d == "postgresql" else "INTEGER"
    return [
        "CREATE TABLE hub_stores (store_id TEXT PRIMARY KEY, tz TEXT, status TEXT, status_at TEXT, "
        "status_received_at TEXT, last_summary_at TEXT)",
        "CREATE TABLE hub_messages (msg_id TEXT PRIMARY KEY, store_id TEXT NOT NULL, key TEXT NOT NULL, "
        f"version {big} NOT NULL, received_at TEXT NOT NULL)",
        "CREATE TABLE hub_summaries (store_id TEXT NOT NULL, key TEXT NOT NULL, kind TEXT NOT NULL, "
        f"version {big} NOT NULL, msg_id TEXT NOT NULL, received_at TEXT NOT NULL, body TEXT, "
        "PRIMARY KEY (store_id, key))",
        "CREATE TABLE hub_facts (store_id TEXT NOT NULL, fact_id TEXT NOT NULL, metric TEXT, "
        f"dimension TEXT, effect {real}, confidence {real}, valid_from TEXT, valid_to TEXT, "
        "body TEXT NOT NULL, PRIMARY KEY (store_id, fact_id))",
        "CREATE TABLE hub_rollup (store_id TEXT NOT NULL, local_date TEXT NOT NULL, "
        f"local_weekday {big} NOT NULL, local_week TEXT NOT NULL, local_month TEXT NOT NULL, "
        "slice TEXT NOT NULL, value TEXT, vkey TEXT NOT NULL, event_type TEXT NOT NULL, "
        f"{_columns_ddl(real)}, first_event_id TEXT, last_event_id TEXT, "
        "PRIMARY KEY (store_id, local_date, slice, vkey, event_type))",
        "CREATE INDEX hub_rollup_slice ON hub_rollup (slice, local_date)",
        "CREATE TABLE hub_catalog (store_id TEXT NOT NULL, slice TEXT NOT NULL, vkey TEXT NOT NULL, value TEXT, "
        f"event_type TEXT NOT NULL, first_date TEXT NOT NULL, last_date TEXT NOT NULL, days {big} NOT NULL, "
        f"events {real} NOT NULL, "
        "PRIMARY KEY (store_id, slice, vkey, event_type))",
        f"CREATE TABLE hub_parked (id {serial}, topic TEXT NOT NULL, store_id TEXT, msg_id TEXT, "
        "reason TEXT NOT NULL, detail TEXT NOT NULL, payload TEXT NOT NULL, received_at TEXT NOT NULL)",
    ]


def _migration_0002_hub_actions(d: str) -> list[str]:
    real = "DOUBLE PRECISION" if d == "postgresql" else "REAL"
    big = "BIGINT" if d == "postgresql" else "INTEGER"
    return [
        "CREATE TABLE hub_actions (action_id TEXT PRIMARY KEY, store_id TEXT NOT NULL, role TEXT NOT NULL, "
        "type TEXT NOT NULL, params_json TEXT NOT NULL, summary TEXT NOT NULL, evidence_json TEXT NOT NULL, "
        f"confidence {real} NOT NULL, issued_at TEXT NOT NULL, expires_at TEXT, state TEXT NOT NULL, "
        f"acked_by TEXT, acked_at TEXT, attempts {big} NOT NULL DEFAULT 0, sent_at TEXT, next_send_at TEXT, "
        "updated_at TEXT NOT NULL)",
        "CREATE INDEX hub_actions_due ON hub_actions (state, next_send_at)",
    ]


def _migration_0003_hub_diverged(d: str) -> list[str]:
    big = "BIGINT" if d == "postgresql" else "INTEGER"
    return [
        "CREATE TABLE hub_diverged (store_id TEXT NOT NULL, key TEXT NOT NULL, "
        f"hub_version {big} NOT NULL, hub_msg_id TEXT NOT NULL, store_version {big} NOT NULL, "
        "at TEXT NOT NULL, confirmed_at TEXT, PRIMARY KEY (store_id, key, hub_version))",
    ]


def _migration_0004_hub_components(d: str) -> list[str]:
    big = "BIGINT" if d == "postgresql" else "INTEGER"
    return [
        "CREATE TABLE hub_components (name TEXT PRIMARY KEY, state TEXT NOT NULL, since TEXT, "
        f"failures {big} NOT NULL DEFAULT 0, last_error TEXT, at TEXT NOT NULL)",
    ]


#: the named migrations, in order (name, statements for a dialect)
MIGRATIONS: tuple[tuple[str, Any], ...] = (
    ("0001_hub", _migration_0001),
    ("0002_hub_actions", _migration_0002_hub_actions),
    ("0003_hub_diverged", _migration_0003_hub_diverged),
    ("0004_hub_components", _migration_0004_hub_components),
)
HUB_TABLES = (
    "hub_rollup",
    "hub_catalog",
    "hub_summaries",
    "hub_messages",
    "hub_facts",
    "hub_stores",
    "hub_parked",
    "hub_actions",
    "hub_diverged",
    "hub_components",
)


def is_postgres(target: str) -> bool:
    return target.startswith(("postgresql://", "postgres://"))


class HubDB:
    """One connection to the hub store. SQL is written with ``?`` placeholders (translated for
    PostgreSQL); :meth:`transaction` is one atomic unit (``BEGIN IMMEDIATE`` on SQLite)."""

    def __init__(self, conn: Any, dialect: str, target: str, dsn: str | None = None) -> None:
        self.conn = conn
        self.dialect = dialect
        self.target = target
        self._dsn = dsn or target  # what reopen() connects to (a PostgreSQL URL keeps its password)

    # -- SQL -------------------------------------------------------------------------------------

    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s") if self.dialect == "postgresql" else sql

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        cur = self.conn.cursor()
        cur.execute(self._sql(sql), tuple(params))
        return cur

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            cur = self.conn.cursor()
            cur.executemany(self._sql(sql), [tuple(r) for r in rows])

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in self.execute(sql, params).fetchall()]

    def one(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        row = self.execute(sql, params).fetchone()
        return tuple(row) if row is not None else None

    @contextlib.contextmanager
    def transaction(self) -> Iterator[HubDB]:
        """One atomic unit of work: committed when the block ends, rolled back on an error."""
        if self.dialect == "postgresql":
            with self.conn.transaction():
                yield self
            return
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise _sqlite_error(exc, self.target) from None
        try:
            yield self
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        try:
            self.conn.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            self.conn.execute("ROLLBACK")
            raise _sqlite_error(exc, self.target) from None

    def lock_key(self, store_id: str, key: str) -> None:
        """Serialise writers of one (store, key) until the transaction ends (PostgreSQL: an
        advisory transaction lock; SQLite's ``BEGIN IMMEDIATE`` already serialises writers)."""
        if self.dialect == "postgresql":
            k = zlib.crc32(f"{store_id}\x00{key}".encode()) - 2**31
            self.execute("SELECT pg_advisory_xact_lock(?)", (k,))

    def least(self, a: str, b: str) -> str:
        """SQL for the smaller of two values (``min`` on SQLite, ``least`` on PostgreSQL)."""
        return f"{'least' if self.dialect == 'postgresql' else 'min'}({a}, {b})"

    def greatest(self, a: str, b: str) -> str:
        return f"{'greatest' if self.dialect == 'postgresql' else 'max'}({a}, {b})"

    def insert_ignore(self, table: str, columns: Sequence[str], values: Sequence[Any], conflict: str) -> bool:
        """INSERT that does nothing when ``conflict`` (the primary key) exists; True if inserted."""
        marks = ", ".join("?" * len(columns))
        cur = self.execute(
            f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks}) ON CONFLICT ({conflict}) DO NOTHING",
            values,
        )
        return bool(cur.rowcount == 1)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.conn.close()

    def reconnect(self) -> None:
        """Replace this store's connection with a new one (after a transient error: the old one
        is closed, whatever it was in the middle of is rolled back by the server)."""
        self.close()
        fresh = self.reopen()
        self.conn = fresh.conn

    def reopen(self) -> HubDB:
        """Another connection to this (opened, migrated) store, for another thread of this
        process. No file check: opening and closing the SQLite file in a process that holds a
        connection drops that connection's POSIX locks, and another process's reader could then
        checkpoint and delete the WAL this one still writes to."""
        if self.dialect == "postgresql":
            return _open_postgres(self._dsn)
        return HubDB(_sqlite_connect(Path(self.target)), "sqlite", self.target)

    # -- migrations ------------------------------------------------------------------------------

    def applied(self) -> list[str]:
        return [r[0] for r in self.query("SELECT name FROM hub_migrations ORDER BY name")]

    def pending(self) -> list[str]:
        """The migrations not yet applied (read only)."""
        try:
            have = set(self.applied())
        except Exception:  # no hub_migrations table yet (a new database)
            if self.dialect == "postgresql":
                self.conn.rollback()
            return [n for n, _ in MIGRATIONS]
        return [n for n, _ in MIGRATIONS if n not in have]

    def migrate(self) -> list[str]:
        """Apply the migrations not yet applied (in one transaction); their names. Nothing is
        written when every migration is applied already (``ask`` and ``status`` only read)."""
        done: list[str] = []
        if self.pending():
            with self.transaction():
                if self.dialect == "postgresql":
                    self.execute("SELECT pg_advisory_xact_lock(?)", (0x616461,))  # one migrator at a time
                self.execute(
                    "CREATE TABLE IF NOT EXISTS hub_migrations (name TEXT PRIMARY KEY, applied_at TEXT)"
                )
                have = set(self.applied())
                for name, statements in MIGRATIONS:
                    if name in have:
                        continue
                    for stmt in statements(self.dialect):
                        self.execute(stmt)
                    self.execute(
                        "INSERT INTO hub_migrations (name, applied_at) VALUES (?, ?)", (name, _now_text())
                    )
                    done.append(name)
        if done:
            logger.info("hub store %s: applied %s", self.target, ", ".join(done))
        newer = set(self.applied()) - {n for n, _ in MIGRATIONS}
        if newer:
            raise HubStoreError(
                f"the hub database {self.target} was written by a newer adamm-hub ({', '.join(sorted(newer))})",
                hint="upgrade adamm on this machine",
            )
        return done


#: SQLSTATE classes and codes a retry can fix: connection exceptions (08), operator intervention
#: (57: admin shutdown, crash shutdown, cannot connect now), serialization failure and deadlock
#: (40001, 40P01), insufficient resources (53)
_TRANSIENT_SQLSTATES = ("08", "57", "40001", "40P01", "53")


def is_transient(exc: BaseException) -> bool:
    """True for a database error that a rollback, a new connection and a retry can get past (the
    server restarting, a dropped connection, a terminated backend, a deadlock, a serialization
    failure); False for what retrying cannot fix (a missing table, no permission, a bug)."""
    try:
        import psycopg
    except ImportError:  # pragma: no cover - psycopg is a dependency
        return False
    if not isinstance(exc, psycopg.Error):
        return False
    state = getattr(exc, "sqlstate", None)
    if state:
        return str(state).startswith(_TRANSIENT_SQLSTATES)
    # no SQLSTATE: the client lost the server (connection refused, closed, timed out)
    return isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError)


#: what a PostgreSQL server answers a connection while it cannot take one yet (libpq's connection
#: errors carry no SQLSTATE, only the server's FATAL text)
_NOT_YET = (
    "the database system is starting up",
    "the database system is not yet accepting connections",
    "the database system is shutting down",
    "the database system is in recovery mode",
    "too many clients",
    "remaining connection slots",
)


def connect_transient(exc: BaseException) -> bool:
    """True for a failed connection that trying again later can get past: no server answered
    (refused, timed out, reset) or the server is starting, stopping or full; False when it
    answered no for good (no such database or role, authentication failed, pg_hba.conf)."""
    try:
        import psycopg
    except ImportError:  # pragma: no cover - psycopg is a dependency
        return False
    if not isinstance(exc, psycopg.OperationalError):
        return False
    text = str(exc)
    return "FATAL:" not in text or any(s in text for s in _NOT_YET)


def _now_text() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def now_text() -> str:
    """The current UTC time as stored in the hub's ``*_at`` columns."""
    return _now_text()


def _sqlite_error(exc: sqlite3.Error, target: str) -> HubStoreError:
    text = str(exc)
    if "locked" in text or "busy" in text:
        return HubStoreError(
            f"the hub database {target} is locked by another process past {BUSY_TIMEOUT_S:.0f} s",
            hint="stop the other adamm-hub writer or use PostgreSQL for several workers",
        )
    if "not a database" in text or "malformed" in text:
        return NotAHubError(f"{target} is not an adamm hub database ({text})", hint="check the --db path")
    return HubStoreError(f"the hub database {target} cannot be used: {text}")


def open_hub(target: str, *, create: bool = False) -> HubDB:
    """The hub store at ``target`` (a SQLite path or a ``postgresql://`` URL), migrated.

    ``create``: a missing SQLite file is created (``serve``); otherwise a missing file is an error
    (``ask``, ``status``). A file that is not a hub database is left untouched: exit 3."""
    if is_postgres(target):
        return _open_postgres(target)
    if not target or target.startswith(("mqtt://", "mqtts://")):
        raise UsageError(f"--db {target!r}: give a SQLite file path or a postgresql:// URL")
    path = Path(target)
    if not path.exists():
        if not create:
            raise HubStoreError(
                f"no hub database at {path}", hint="run adamm-hub serve --db PATH --broker URL first"
            )
    else:
        _check_existing_sqlite(path)
    db = HubDB(_sqlite_connect(path), "sqlite", str(path))
    try:
        db.migrate()
    except sqlite3.Error as exc:
        db.close()
        raise _sqlite_error(exc, str(path)) from None
    return db


def _sqlite_connect(path: Path) -> sqlite3.Connection:
    try:
        conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
    except sqlite3.Error as exc:
        raise _sqlite_error(exc, str(path)) from None
    return conn


def _check_existing_sqlite(path: Path) -> None:
    """Refuse (without writing) a file that is not a hub database."""
    if path.is_dir():
        raise NotAHubError(f"{path} is a folder, not an adamm hub database", hint="check the --db path")
    try:
        head = path.open("rb").read(16)
    except OSError as exc:
        raise HubStoreError(f"cannot read {path}: {exc.strerror}") from None
    if head != b"SQLite format 3\x00":
        raise NotAHubError(
            f"{path} is not an adamm hub database (not SQLite or empty)", hint="check the --db path"
        )
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S)
        try:
            names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise _sqlite_error(exc, str(path)) from None
    if "hub_migrations" not in names:
        raise NotAHubError(
            f"{path} is another program's SQLite database, not an adamm hub database",
            hint="check the --db path",
        )


def _open_postgres(dsn: str) -> HubDB:
    import psycopg

    try:
        conn = psycopg.connect(dsn, autocommit=True, connect_timeout=10)
    except psycopg.Error as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        error = HubStoreUnreachable if connect_transient(exc) else HubStoreError
        raise error(
            f"cannot connect to the hub's PostgreSQL ({first})",
            hint="check that the server runs and the postgresql:// URL",
        ) from None
    db = HubDB(conn, "postgresql", _safe_dsn(dsn), dsn)
    try:
        db.migrate()
    except psycopg.Error as exc:
        db.close()
        error = HubStoreUnreachable if is_transient(exc) else HubStoreError
        raise error(f"cannot migrate the hub's PostgreSQL database: {exc}") from None
    return db


def _safe_dsn(dsn: str) -> str:
    """The URL without its password (for messages and logs)."""
    if "@" in dsn and "://" in dsn:
        scheme, rest = dsn.split("://", 1)
        cred, host = rest.rsplit("@", 1)
        user = cred.split(":", 1)[0]
        return f"{scheme}://{user}@{host}"
    return dsn
