"""Proposing an answer's action: the explicit use case that writes a pending action.

Asking writes nothing (:mod:`edge.services.ask`); a store manager who wants an answer's action
carried out proposes it (the TUI's "save as action" key). The row gets the memory's own store
id, the role in its column, the plan's ``target_metric`` as ``params.subject`` and the evidence's event ids, under an
``action_id`` that is a stable hash of what is to be done, so proposing the same action twice
inserts it once.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from edge.errors import UsageError
from edge.memory.semantic import actions
from edge.memory.semantic.status import store_ids

if TYPE_CHECKING:
    from edge.memory.store import Store

#: the role an action goes to when the payload's action names none
DEFAULT_ROLE = "store_manager"


def action_id_for(store_id: str, action: dict[str, Any], role: str) -> str:
    """The stable id of ``action`` for ``role`` at ``store_id`` (a SHA-256 hex digest)."""
    blob = json.dumps(
        ["action", store_id, action.get("type"), role, action.get("params") or {}],
        sort_keys=True,
        ensure_ascii=False,
        default=str,
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def default_role(payload: dict[str, Any]) -> str:
    """The role the payload's action is meant for (its ``params.role``), else ``store_manager``."""
    action = payload.get("action")
    params = action.get("params") if isinstance(action, dict) else None
    role = params.get("role") if isinstance(params, dict) else None
    return str(role) if role else DEFAULT_ROLE


def own_store_id(store: Store, configured: str | None = None) -> str:
    """The memory's own store id: the configured one (``store_id`` of the daemon config) when
    given, else the single store the memory holds."""
    if configured:
        return configured
    with store.read() as conn:
        ids = store_ids(conn)
    if len(ids) == 1:
        return ids[0]
    if not ids:
        raise UsageError(
            f"the memory {store.path} holds no store yet, so an action has no store to go to",
            hint="import events first (adamm import), or set store_id in the config",
        )
    raise UsageError(
        f"the memory {store.path} holds several stores ({', '.join(ids)}); which one is this?",
        hint="set store_id in the config (--config FILE)",
    )


def propose_action(store: Store, payload: dict[str, Any], *, role: str, store_id: str) -> str | None:
    """Write the payload's action as a pending action of ``store_id`` for ``role``.

    Returns the action id, or None when the payload has no action (an answer that is not ok or is
    low-confidence never has one). Idempotent: the same action for the same role and store is
    inserted once."""
    action = payload.get("action")
    if not isinstance(action, dict) or payload.get("status") != "ok" or payload.get("low_confidence"):
        return None
    plan = payload.get("plan") if isinstance(payload.get("plan"), dict) else {}
    params = dict(action.get("params") or {})
    subject = plan.get("target_metric") if isinstance(plan, dict) else None
    if subject:  # what the action is about: the plan's metric (plan.schema.json target_metric)
        params.setdefault("subject", subject)
    action_id = action_id_for(store_id, action, role)
    evidence = tuple(str(e["event_id"]) for e in payload.get("evidence") or [] if isinstance(e, dict))
    actions.insert_action(
        store,
        actions.ActionRecord(
            action_id=action_id,
            store_id=store_id,
            type=str(action["type"]),
            role=role,
            summary=str(payload.get("summary", "")),
            confidence=float(payload.get("confidence", 0.0)),
            params=params,
            evidence=evidence,
        ),
    )
    return action_id
