"""Component status (the ``components`` table): the daemon's heartbeat upsert and the reading
of it as a state code and an age.

The daemon writes one row per component every ``heartbeat_seconds``; a reader calls the status
``stale`` once the newest row is older than :data:`STALE_HEARTBEATS` heartbeats, ``down`` when
there are no rows at all. Presentation words the code (``status.daemon_*`` labels).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

import apsw

from edge.memory.semantic._sql import rows

if TYPE_CHECKING:
    from edge.memory.store import Store

#: the daemon's default heartbeat (``heartbeat_seconds`` of the daemon config)
DEFAULT_HEARTBEAT_SECONDS = 5.0
#: the status is stale after this many missed heartbeats
STALE_HEARTBEATS = 3.0

StatusCode = Literal["running", "stale", "down"]

_UPSERT = (
    "INSERT INTO components(name, kind, state, provider, detail_json, updated_at) "
    "VALUES (:name, :kind, :state, :provider, :detail_json, :updated_at) "
    "ON CONFLICT(name) DO UPDATE SET kind = excluded.kind, state = excluded.state, "
    "provider = excluded.provider, detail_json = excluded.detail_json, "
    "updated_at = excluded.updated_at"
)


@dataclass(frozen=True)
class ComponentStatus:
    """The component rows, whether the daemon looks alive, and the newest row's age in seconds
    (None without rows)."""

    rows: list[dict[str, Any]]
    code: StatusCode
    age_s: float | None


def stale_after(heartbeat_seconds: float) -> float:
    """Seconds without an update after which the component status counts as stale."""
    return STALE_HEARTBEATS * heartbeat_seconds


def upsert_components(store: Store, rows_: Iterable[dict[str, Any]]) -> None:
    """Insert or update component rows (keys: name, kind, state, provider, detail_json,
    updated_at); waits until they are written."""
    batch = list(rows_)

    def write(conn: apsw.Connection) -> None:
        for r in batch:
            conn.execute(_UPSERT, r)

    store.writer.submit(write).result()


def component_status(
    conn: apsw.Connection,
    now: datetime | None = None,
    heartbeat_seconds: float = DEFAULT_HEARTBEAT_SECONDS,
) -> ComponentStatus:
    """The component rows and the daemon's state: ``down`` (no rows), ``stale`` (the newest row is
    older than :func:`stale_after` the heartbeat) or ``running``."""
    found = rows(conn, "SELECT * FROM components ORDER BY kind, name")
    if not found:
        return ComponentStatus(found, "down", None)
    ref = now or datetime.now(UTC)
    if ref.tzinfo is None:
        ref = ref.replace(tzinfo=UTC)
    newest = max(datetime.fromisoformat(str(r["updated_at"]).replace("Z", "+00:00")) for r in found)
    if newest.tzinfo is None:
        newest = newest.replace(tzinfo=UTC)
    age = (ref - newest).total_seconds()
    code: StatusCode = "stale" if age > stale_after(heartbeat_seconds) else "running"
    return ComponentStatus(found, code, age)
