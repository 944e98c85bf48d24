"""Actions (the ``actions`` table): the action outbox of the side that issues them.

One row per ``action_id``. States and their order (an acknowledgement only moves an action
forward, so a repeated, reordered or older ack never moves it back)::

    pending (queued, not sent yet) < sent (the broker has it) < accepted < done | rejected

``done`` and ``rejected`` are final (whichever comes first stays). ``expired`` is what an
action that nobody acknowledged becomes once its ``expires_at`` passes: it is never shown as
pending or sent again, it is never re-sent, and a later ack counts only when it was made before
the expiry (``at`` < ``expires_at``: the device acted in time, the ack was late in arriving).
An accepted action does not expire (someone has taken it on). A row with no ``expires_at``
(made before the outbox existed) never expires.

Readers (:func:`list_actions`) show the effective state: an open action past its expiry reads
``expired`` even before a writer (:func:`expire_due`) has marked it, so a read-only command can
list the truth without writing. Times are UTC ISO 8601 with seconds (:func:`edge.contract.iso`), so
they compare as text in SQL. The states, their order, the rules (expiry, acks, what is due) and
the time helpers are the contract's (:mod:`edge.contract`), the same for the hub's outbox.

Each open action is a retained message on its own topic (CONTRACT.md section 5); once it ends
(``done``, ``rejected``, ``expired``) the writer that ended it sets ``next_send_at`` so the sender
clears that message (:func:`clear_due_actions`, :func:`mark_cleared`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import apsw

from edge.contract import (
    ACK_STATES,
    ACTION_TYPES,
    UNKNOWN,
    apply_ack_rule,
    clear_due,
    closing_update,
    iso,
)
from edge.contract import LATE as LATE  # the outcomes of apply_ack are the contract's
from edge.contract import RECORDED as RECORDED
from edge.contract import UNCHANGED as UNCHANGED
from edge.contract import effective_state as _effective
from edge.memory.semantic._sql import rows

if TYPE_CHECKING:
    from edge.memory.store import Store


def _now(now: datetime | None) -> datetime:
    return now if now is not None else datetime.now(UTC)


@dataclass(frozen=True)
class ActionRecord:
    """One action row as it is inserted (``state`` starts ``pending``: queued in the outbox)."""

    action_id: str
    store_id: str
    type: str
    role: str
    summary: str
    confidence: float
    params: dict[str, Any] = field(default_factory=dict)
    evidence: tuple[str, ...] = ()
    expires_at: datetime | None = None


def effective_state(row: dict[str, Any], now: datetime | None = None) -> str:
    """The row's state as of ``now``: an open action past its expiry is ``expired``."""
    return _effective(str(row["state"]), row.get("expires_at"), _now(now))


def list_actions(
    conn: apsw.Connection, state: str | None = None, now: datetime | None = None
) -> list[dict[str, Any]]:
    """Actions (optionally of one state) with their effective state (:func:`effective_state`),
    most recently issued first. Reads only."""
    found = rows(conn, "SELECT * FROM actions ORDER BY issued_at DESC, action_id")
    for r in found:
        r["state"] = effective_state(r, now)
    return [r for r in found if state is None or r["state"] == state]


def get_action(conn: apsw.Connection, action_id: str, now: datetime | None = None) -> dict[str, Any] | None:
    """One action with its effective state, or None."""
    found = rows(conn, "SELECT * FROM actions WHERE action_id = ?", (action_id,))
    if not found:
        return None
    found[0]["state"] = effective_state(found[0], now)
    return found[0]


def insert_action(store: Store, record: ActionRecord, now: datetime | None = None) -> bool:
    """Queue ``record`` as a pending action; False (and nothing changed) when its id exists."""
    if record.type not in ACTION_TYPES:
        raise ValueError(f"action type must be one of {', '.join(ACTION_TYPES)}, not {record.type!r}")
    stamp = iso(_now(now))
    expires = iso(record.expires_at) if record.expires_at is not None else None

    def write(conn: apsw.Connection) -> bool:
        conn.execute(
            "INSERT OR IGNORE INTO actions (action_id, store_id, type, role, params_json, summary,"
            " evidence_json, confidence, issued_at, state, updated_at, expires_at, next_send_at)"
            " VALUES (?,?,?,?,?,?,?,?,?,'pending',?,?,?)",
            (
                record.action_id,
                record.store_id,
                record.type,
                record.role,
                json.dumps(record.params, ensure_ascii=False, sort_keys=True, default=str),
                record.summary,
                json.dumps(list(record.evidence), ensure_ascii=False),
                float(record.confidence),
                stamp,
                stamp,
                expires,
                stamp,
            ),
        )
        return bool(conn.changes())

    return bool(store.writer.submit(write).result())


def apply_ack(
    store: Store, action_id: str, state: str, by: str, at: datetime | None = None, now: datetime | None = None
) -> str:
    """Record an acknowledgement idempotently (the order in the module docstring).

    Returns :data:`RECORDED` (the state moved forward), :data:`UNCHANGED` (a repeated or older
    ack, or one after a final state), :data:`UNKNOWN` (no such action) or :data:`LATE` (made
    after the action expired)."""
    if state not in ACK_STATES:
        raise ValueError(f"state must be one of {', '.join(ACK_STATES)}, not {state!r}")
    current_time = _now(now)
    ack_time = at if at is not None else current_time

    def write(conn: apsw.Connection) -> str:  # one transaction: the writer's
        found = rows(conn, "SELECT state, expires_at FROM actions WHERE action_id = ?", (action_id,))
        if not found:
            return UNKNOWN
        rule = apply_ack_rule(str(found[0]["state"]), found[0]["expires_at"], state, ack_time, current_time)
        if rule.write == "expired":
            conn.execute(
                "UPDATE actions SET state = 'expired', updated_at = ?, next_send_at = ? WHERE action_id = ?",
                (iso(current_time), closing_update("expired", current_time), action_id),
            )
        elif rule.write is not None:
            conn.execute(
                "UPDATE actions SET state = ?, acked_by = ?, acked_at = ?, updated_at = ?,"
                " next_send_at = COALESCE(?, next_send_at) WHERE action_id = ?",
                (
                    rule.write,
                    by,
                    iso(ack_time),
                    iso(current_time),
                    closing_update(rule.write, current_time),
                    action_id,
                ),
            )
        return rule.outcome

    return str(store.writer.submit(write).result())


def ack_action(store: Store, action_id: str, state: str, by: str, at: datetime | None = None) -> bool:
    """Acknowledge an action (accepted/done/rejected; :func:`apply_ack`'s order); False when no
    such action exists."""
    return apply_ack(store, action_id, state, by, at) != UNKNOWN


def due_actions(conn: apsw.Connection, now: datetime | None = None) -> list[dict[str, Any]]:
    """Open actions whose (re-)send is due at ``now``, oldest first (expired ones included: the
    sender marks them instead of sending)."""
    return rows(
        conn,
        "SELECT * FROM actions WHERE state IN ('pending', 'sent')"
        " AND (next_send_at IS NULL OR next_send_at <= ?) ORDER BY issued_at, action_id",
        (iso(_now(now)),),
    )


def mark_sent(store: Store, action_id: str, next_send_at: datetime, now: datetime | None = None) -> bool:
    """The broker acknowledged a (re-)send of ``action_id``: ``pending`` becomes ``sent`` (a later
    state is kept), the attempt is counted and the next re-send scheduled. False when the action
    is no longer open."""
    stamp = iso(_now(now))

    def write(conn: apsw.Connection) -> bool:
        conn.execute(
            "UPDATE actions SET state = 'sent', sent_at = ?, attempts = attempts + 1, next_send_at = ?,"
            " updated_at = ? WHERE action_id = ? AND state IN ('pending', 'sent')",
            (stamp, iso(next_send_at), stamp, action_id),
        )
        changed = bool(conn.changes())
        if not changed:  # acknowledged meanwhile: count the send, keep the state
            conn.execute("UPDATE actions SET attempts = attempts + 1 WHERE action_id = ?", (action_id,))
        return changed

    return bool(store.writer.submit(write).result())


def expire_due(store: Store, now: datetime | None = None) -> list[str]:
    """Mark every open action past its expiry ``expired``; the ids marked."""
    stamp = iso(_now(now))

    def write(conn: apsw.Connection) -> list[str]:  # one transaction (the writer's)
        ids = [
            str(r[0])
            for r in conn.execute(
                "SELECT action_id FROM actions WHERE state IN ('pending', 'sent')"
                " AND expires_at IS NOT NULL AND expires_at <= ?",
                (stamp,),
            )
        ]
        conn.execute(
            "UPDATE actions SET state = 'expired', updated_at = ?, next_send_at = ?"
            " WHERE state IN ('pending', 'sent') AND expires_at IS NOT NULL AND expires_at <= ?",
            (stamp, closing_update("expired", _now(now)), stamp),
        )
        return ids

    return list(store.writer.submit(write).result())


def clear_due_actions(conn: apsw.Connection, now: datetime | None = None) -> list[dict[str, Any]]:
    """Ended actions whose retained message is still to be cleared at ``now`` (the contract's
    :func:`~edge.contract.clear_due`), oldest first."""
    found = rows(
        conn,
        "SELECT * FROM actions WHERE state IN ('done', 'rejected', 'expired') AND next_send_at IS NOT NULL"
        " ORDER BY issued_at, action_id",
    )
    t = _now(now)
    return [r for r in found if clear_due(r, t)]


def mark_cleared(store: Store, action_id: str, now: datetime | None = None) -> None:
    """The broker has the clearing of ``action_id``'s retained message: nothing more to send."""
    stamp = iso(_now(now))

    def write(conn: apsw.Connection) -> None:
        conn.execute(
            "UPDATE actions SET next_send_at = NULL, updated_at = ?"
            " WHERE action_id = ? AND state IN ('done', 'rejected', 'expired')",
            (stamp, action_id),
        )

    store.writer.submit(write).result()
