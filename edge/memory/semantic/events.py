"""One event with its raw references, stats and entities (the console's event detail)."""

from __future__ import annotations

import json
from typing import Any

import apsw

from edge.memory.semantic._sql import rows


def get_event(conn: apsw.Connection, event_id: str) -> dict[str, Any] | None:
    """One event with its raw_refs, stats and entities, or None."""
    found = rows(
        conn,
        "SELECT id, event_id, store_id, ts, event_type, modality, source, text, stats_json, tier"
        " FROM events WHERE event_id = ?",
        (event_id,),
    )
    if not found:
        return None
    ev = found[0]
    rowid = ev.pop("id")
    ev["stats"] = json.loads(ev.pop("stats_json") or "{}")
    ev["raw_refs"] = [
        r for (r,) in conn.execute("SELECT ref FROM raw_refs WHERE event_rowid = ? ORDER BY seq", (rowid,))
    ]
    ev["entities"] = [
        e for (e,) in conn.execute("SELECT entity FROM entities WHERE event_rowid = ?", (rowid,))
    ]
    return ev
