"""Read queries for the store manager's UI, and recording of answers as actions and facts.

Called by the TUI (:mod:`edge.tui`) and by ``adamm ask`` (``record_outcome``). Reads take a reader
connection from ``Store.read()``; writes go through ``store.writer.submit`` (the single writer).
"""

from __future__ import annotations

import hashlib
import json
import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import apsw

if TYPE_CHECKING:
    from edge.memory.store import Store

logger = logging.getLogger(__name__)

ACK_STATES = ("accepted", "done", "rejected")
STALE_SECONDS = 60.0


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _stable_id(*parts: Any) -> str:
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _rows(conn: apsw.Connection, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    cur = conn.execute(sql, params)
    try:
        names = [d[0] for d in cur.getdescription()]
    except apsw.ExecutionCompleteError:
        return []
    return [dict(zip(names, row, strict=True)) for row in cur]


def list_facts(conn: apsw.Connection, limit: int = 200) -> list[dict[str, Any]]:
    """Semantic facts, most recently updated first."""
    return _rows(conn, "SELECT * FROM facts ORDER BY updated_at DESC LIMIT ?", (limit,))


def list_actions(conn: apsw.Connection, state: str | None = None) -> list[dict[str, Any]]:
    """Actions (optionally of one state), most recently issued first."""
    if state is None:
        return _rows(conn, "SELECT * FROM actions ORDER BY issued_at DESC")
    return _rows(conn, "SELECT * FROM actions WHERE state = ? ORDER BY issued_at DESC", (state,))


def ack_action(store: Store, action_id: str, state: str, by: str) -> bool:
    """Set an action's state (accepted/done/rejected); False when no such action exists."""
    if state not in ACK_STATES:
        raise ValueError(f"state must be one of {', '.join(ACK_STATES)}, not {state!r}")

    def write(conn: apsw.Connection) -> bool:
        conn.execute(
            "UPDATE actions SET state = ?, acked_by = ?, updated_at = ? WHERE action_id = ?",
            (state, by, _now(), action_id),
        )
        return bool(conn.changes())

    return bool(store.writer.submit(write).result())


def record_outcome(store: Store, payload: dict[str, Any]) -> str | None:
    """Store an ok, confident payload's finding as a fact and its action as a pending action.

    Returns the action id (or None when there is no action). Idempotent: ids are stable hashes.
    """
    if payload.get("status") != "ok" or payload.get("low_confidence"):
        return None
    plan = payload.get("plan") or {}
    store_ids = (
        plan.get("store_ids") or plan.get("filters", {}).get("store_id") if isinstance(plan, dict) else None
    )
    store_id = store_ids[0] if isinstance(store_ids, list) and store_ids else None
    evidence = json.dumps([e.get("event_id") for e in payload.get("evidence") or []])
    now = _now()
    fact_id = _stable_id("fact", plan, store_id)
    action = payload.get("action")
    action_id = (
        _stable_id(action.get("type"), action.get("params"), store_id) if isinstance(action, dict) else None
    )

    def write(conn: apsw.Connection) -> None:
        conn.execute(
            "INSERT INTO facts (fact_id, store_id, kind, subject, statement, value_json, evidence_json,"
            " confidence, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?)"
            " ON CONFLICT(fact_id) DO UPDATE SET statement=excluded.statement, value_json=excluded.value_json,"
            " evidence_json=excluded.evidence_json, confidence=excluded.confidence, updated_at=excluded.updated_at",
            (
                fact_id,
                store_id,
                str(plan.get("intent", "finding")),
                str(plan.get("metric", payload.get("question", ""))),
                str(payload.get("summary", "")),
                json.dumps(payload.get("result") or {}, ensure_ascii=False, default=str),
                evidence,
                float(payload.get("confidence", 0.0)),
                now,
                now,
            ),
        )
        if isinstance(action, dict) and action_id is not None:
            conn.execute(
                "INSERT OR IGNORE INTO actions (action_id, store_id, type, params_json, summary, evidence_json,"
                " confidence, issued_at, state, updated_at) VALUES (?,?,?,?,?,?,?,?,'pending',?)",
                (
                    action_id,
                    store_id,
                    action["type"],
                    json.dumps(action.get("params") or {}, ensure_ascii=False, default=str),
                    str(payload.get("summary", "")),
                    evidence,
                    float(payload.get("confidence", 0.0)),
                    now,
                    now,
                ),
            )

    store.writer.submit(write).result()
    return action_id


def component_status(
    conn: apsw.Connection, now: datetime | None = None, lang: str = "en"
) -> tuple[list[dict[str, Any]], str | None]:
    """Component rows and a warning ("daemon not running ...", in ``lang``) when none exist or
    all are stale."""
    from edge.presentation.labels import t

    rows = _rows(conn, "SELECT * FROM components ORDER BY kind, name")
    if not rows:
        return rows, t("status.daemon_down", lang)
    ref = now or datetime.now(UTC)
    newest = max(datetime.fromisoformat(str(r["updated_at"])) for r in rows)
    if newest.tzinfo is None:
        newest = newest.replace(tzinfo=UTC)
    age = (ref - newest).total_seconds()
    if age > STALE_SECONDS:
        return rows, t("status.daemon_stale", lang, age=f"{age:.0f}")
    return rows, None


def tier_counts(conn: apsw.Connection) -> dict[str, int]:
    """Number of events per storage tier."""
    return {str(t): int(n) for t, n in conn.execute("SELECT tier, COUNT(*) FROM events GROUP BY tier")}


def outbox_depth(conn: apsw.Connection) -> int:
    """Number of outbox messages not yet acknowledged by the broker."""
    return int(next(iter(conn.execute("SELECT COUNT(*) FROM outbox WHERE sent_at IS NULL")))[0])


def get_event(conn: apsw.Connection, event_id: str) -> dict[str, Any] | None:
    """One event with its raw_refs, stats and entities, or None."""
    rows = _rows(
        conn,
        "SELECT id, event_id, store_id, ts, event_type, modality, source, text, stats_json, tier"
        " FROM events WHERE event_id = ?",
        (event_id,),
    )
    if not rows:
        return None
    ev = rows[0]
    rowid = ev.pop("id")
    ev["stats"] = json.loads(ev.pop("stats_json") or "{}")
    ev["raw_refs"] = [
        r for (r,) in conn.execute("SELECT ref FROM raw_refs WHERE event_rowid = ? ORDER BY seq", (rowid,))
    ]
    ev["entities"] = [
        e for (e,) in conn.execute("SELECT entity FROM entities WHERE event_rowid = ?", (rowid,))
    ]
    return ev
