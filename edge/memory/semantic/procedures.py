"""Procedural memory: the registered analysis operators persisted in the ``procedures`` table.

Owns :func:`sync_procedures` (upsert every descriptor of
:func:`edge.analysis.operators.descriptors`) and :func:`list_procedures` (read them back).
Called by ``adamm procedures`` (asking registers nothing: CONTRACT.md section 1).
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

import apsw

logger = logging.getLogger(__name__)

_UPSERT = """
INSERT INTO procedures(name, intent, version, description, min_evidence_json,
                       required_event_types_json, default_params_json, registered_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT(name) DO UPDATE SET
    intent = excluded.intent, version = excluded.version, description = excluded.description,
    min_evidence_json = excluded.min_evidence_json,
    required_event_types_json = excluded.required_event_types_json,
    default_params_json = excluded.default_params_json,
    registered_at = CASE WHEN procedures.version = excluded.version
                         AND procedures.default_params_json = excluded.default_params_json
                         AND procedures.description = excluded.description
                         THEN procedures.registered_at ELSE excluded.registered_at END
"""


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def sync_procedures(store: Any, descriptors: list[dict[str, Any]] | None = None) -> int:
    """Upsert the operator descriptors (default: every registered operator); returns how many.

    A read-only store is left alone (0)."""
    if descriptors is None:
        from edge.analysis.operators import descriptors as registered

        descriptors = registered()
    if getattr(store, "readonly", False):
        return 0
    now = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    rows = []
    for d in descriptors:
        params = dict(d.get("default_params") or {})
        params.setdefault("output_keys", d.get("output_keys", []))
        params.setdefault("confidence_method", d.get("confidence_method", ""))
        rows.append(
            (
                d["name"],
                d["intent"],
                d["version"],
                d["description"],
                _dumps(d.get("min_evidence") or {}),
                _dumps(d.get("required_event_types") or []),
                _dumps(params),
                now,
            )
        )

    def write(conn: apsw.Connection) -> int:
        conn.executemany(_UPSERT, rows)
        return len(rows)

    n: int = store.writer.submit(write).result()
    logger.info("procedural memory: %d operators registered", n)
    return n


def list_procedures(store: Any) -> list[dict[str, Any]]:
    """Every stored procedure, by name."""
    with store.read() as conn:
        cur = conn.execute(
            "SELECT name, intent, version, description, min_evidence_json, required_event_types_json, "
            "default_params_json, registered_at FROM procedures ORDER BY name"
        )
        out = []
        for name, intent, version, desc, me, ret, dp, at in cur.fetchall():
            out.append(
                {
                    "name": name,
                    "intent": intent,
                    "version": version,
                    "description": desc,
                    "min_evidence": json.loads(me),
                    "required_event_types": json.loads(ret),
                    "default_params": json.loads(dp),
                    "registered_at": at,
                }
            )
    return out
