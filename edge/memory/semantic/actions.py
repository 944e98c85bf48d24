"""Actions (the ``actions`` table): list, insert (idempotent by ``action_id``) and acknowledge.

States: ``pending`` when issued; ``accepted``, ``done`` or ``rejected`` once acknowledged.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import apsw

from edge.memory.semantic._sql import rows, utc_now

if TYPE_CHECKING:
    from edge.memory.store import Store

#: every state an action can be in, and the ones an acknowledgement may set
STATES = ("pending", "accepted", "done", "rejected")
ACK_STATES = ("accepted", "done", "rejected")
#: the action types the table accepts (payload.schema.json ``action.type``)
TYPES = ("recommendation", "work_order", "alert")


@dataclass(frozen=True)
class ActionRecord:
    """One action row as it is inserted (``state`` starts ``pending``)."""

    action_id: str
    store_id: str
    type: str
    role: str
    summary: str
    confidence: float
    params: dict[str, Any] = field(default_factory=dict)
    evidence: tuple[str, ...] = ()


def list_actions(conn: apsw.Connection, state: str | None = None) -> list[dict[str, Any]]:
    """Actions (optionally of one state), most recently issued first."""
    if state is None:
        return rows(conn, "SELECT * FROM actions ORDER BY issued_at DESC")
    return rows(conn, "SELECT * FROM actions WHERE state = ? ORDER BY issued_at DESC", (state,))


def insert_action(store: Store, record: ActionRecord) -> bool:
    """Insert ``record`` as a pending action; False (and nothing changed) when its id exists."""
    if record.type not in TYPES:
        raise ValueError(f"action type must be one of {', '.join(TYPES)}, not {record.type!r}")
    now = utc_now()

    def write(conn: apsw.Connection) -> bool:
        conn.execute(
            "INSERT OR IGNORE INTO actions (action_id, store_id, type, role, params_json, summary,"
            " evidence_json, confidence, issued_at, state, updated_at)"
            " VALUES (?,?,?,?,?,?,?,?,?,'pending',?)",
            (
                record.action_id,
                record.store_id,
                record.type,
                record.role,
                json.dumps(record.params, ensure_ascii=False, sort_keys=True, default=str),
                record.summary,
                json.dumps(list(record.evidence), ensure_ascii=False),
                float(record.confidence),
                now,
                now,
            ),
        )
        return bool(conn.changes())

    return bool(store.writer.submit(write).result())


def ack_action(store: Store, action_id: str, state: str, by: str) -> bool:
    """Set an action's state (accepted/done/rejected); False when no such action exists."""
    if state not in ACK_STATES:
        raise ValueError(f"state must be one of {', '.join(ACK_STATES)}, not {state!r}")

    def write(conn: apsw.Connection) -> bool:
        conn.execute(
            "UPDATE actions SET state = ?, acked_by = ?, updated_at = ? WHERE action_id = ?",
            (state, by, utc_now(), action_id),
        )
        return bool(conn.changes())

    return bool(store.writer.submit(write).result())
