"""Row helpers shared by the semantic repositories."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import apsw


def rows(conn: apsw.Connection, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    """The rows of ``sql`` as dicts keyed by column name."""
    cur = conn.execute(sql, params)
    try:
        names = [d[0] for d in cur.getdescription()]
    except apsw.ExecutionCompleteError:
        return []
    return [dict(zip(names, row, strict=True)) for row in cur]


def utc_now() -> str:
    """The current UTC time as ISO 8601 (seconds)."""
    return datetime.now(UTC).isoformat(timespec="seconds")
