"""Sending an answer's action (or one given directly) to a role: the use cases that queue an
action in the store's action outbox.

Asking writes nothing (:mod:`edge.services.ask`); a store manager who wants an answer's action
carried out sends it to a role (the TUI's "send as action" key, ``adamm action send``). The row
gets the memory's own store id, the role, the plan's ``target_metric`` as ``params.subject``, the
answer's summary, confidence and evidence event ids and an expiry, and waits as ``pending`` in
the outbox until the store's sync worker (or ``adamm action send`` itself when no worker runs:
:mod:`edge.sync.actions`) publishes it.

The ``action_id`` is a stable hash of what is to be done (store, type, role, params), so sending
the same action again while it is still open (pending, sent, accepted), for example a rerun after
a crash, queues it once; once it is done, rejected or expired, the same action sent again is a new
one (the hash of the content and a generation number).
"""

from __future__ import annotations

__all__ = [
    "DEFAULT_ROLE",
    "LOW_CONFIDENCE",
    "ROLE_PATTERN",
    "action_id_for",
    "answer_is_weak",
    "check_role",
    "default_role",
    "own_store_id",
    "propose_action",
    "queue_action",
    "send_answer_action",
]

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from edge.contract import ACTION_TYPES, FINAL_STATES
from edge.errors import UsageError
from edge.memory.semantic import actions
from edge.memory.semantic.status import store_ids
from edge.services.action_rules import (
    DEFAULT_ROLE,
    LOW_CONFIDENCE,
    ROLE_PATTERN,
    action_id_for,
    action_summary,
    answer_is_weak,
    check_role,
    default_role,
)

if TYPE_CHECKING:
    from edge.memory.store import Store


def _open_id(store: Store, store_id: str, action: dict[str, Any], role: str) -> str:
    """The id for ``action``: that of the same action while it is still open, else a new one."""
    with store.read() as conn:
        for generation in range(10_000):
            aid = action_id_for(store_id, action, role, generation)
            row = actions.get_action(conn, aid)
            if row is None or row["state"] not in FINAL_STATES:
                return aid
    raise UsageError("this action was sent 10000 times already")


def queue_action(
    store: Store,
    *,
    store_id: str,
    type: str,
    role: str,
    params: dict[str, Any],
    summary: str,
    confidence: float,
    evidence: tuple[str, ...] = (),
    expires_at: datetime | None = None,
    now: datetime | None = None,
) -> str:
    """Queue an action in the outbox (idempotent while it is open); its id. ``now``: its
    ``issued_at`` (default the clock; ``adamm action send --now`` back-fills)."""
    if type not in ACTION_TYPES:
        raise UsageError(f"action type must be one of {', '.join(ACTION_TYPES)}, not {type!r}")
    check_role(role)
    if expires_at is not None and expires_at <= datetime.now(UTC):
        raise UsageError("the action would expire before it is sent: give a later --expires-in")
    aid = _open_id(store, store_id, {"type": type, "params": params}, role)
    actions.insert_action(
        store,
        actions.ActionRecord(
            action_id=aid,
            store_id=store_id,
            type=type,
            role=role,
            summary=summary,
            confidence=max(0.0, min(1.0, float(confidence))),
            params=params,
            evidence=evidence,
            expires_at=expires_at,
        ),
        now,
    )
    return aid


def send_answer_action(
    store: Store,
    payload: dict[str, Any],
    *,
    role: str,
    store_id: str,
    question: str,
    expires_at: datetime | None,
    confirm: bool = False,
    now: datetime | None = None,
    target: dict[str, Any] | None = None,
) -> str:
    """Queue the action of the answer ``payload`` for ``role``; its id. ``target``: the
    ``target_metric`` / ``scope`` to keep in ``params`` (default: the plan's metric), what the
    action should change and where (CONTRACT.md section 7 measures it); ``now``: ``issued_at``.

    An answer that is not ``ok`` or is low-confidence is refused (a usage error) unless
    ``confirm``; it then goes as a ``recommendation`` titled with the question, with the answer's
    (weak) summary, evidence and confidence. An ok answer that suggests no action is refused: send
    one directly (``--type``/``--title``)."""
    weak = answer_is_weak(payload)
    if weak and not confirm:
        raise UsageError(
            f"not sent: {weak}; an action from it could send staff after nothing",
            hint="add --confirm to send it anyway",
        )
    action = payload.get("action") if isinstance(payload.get("action"), dict) else None
    if action is None:
        if not weak:
            raise UsageError(
                "the answer suggests no action", hint="send one directly with --type TYPE --title TEXT"
            )
        action = {"type": "recommendation", "params": {"title": question, "confirmed_weak": True}}
    params = dict(action.get("params") or {})
    plan = payload.get("plan") if isinstance(payload.get("plan"), dict) else {}
    subject = plan.get("target_metric") if isinstance(plan, dict) else None
    if subject:
        params.setdefault("subject", subject)
        params.setdefault("target_metric", subject)  # what the action should change (section 7)
    params.update({k: v for k, v in (target or {}).items() if v})
    params.setdefault("question", question)
    evidence = tuple(str(e["event_id"]) for e in payload.get("evidence") or [] if isinstance(e, dict))
    return queue_action(
        store,
        store_id=store_id,
        type=str(action["type"]),
        role=role,
        params=params,
        summary=action_summary(payload),
        confidence=float(payload.get("confidence", 0.0)),
        evidence=evidence,
        expires_at=expires_at,
        now=now,
    )


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


def propose_action(
    store: Store,
    payload: dict[str, Any],
    *,
    role: str,
    store_id: str,
    expires_at: datetime | None = None,
) -> str | None:
    """Queue the payload's action in the outbox as a pending action of ``store_id`` for ``role``
    (the TUI's send-as-action).

    Returns the action id, or None when the payload has no action (an answer that is not ok or is
    low-confidence never has one). Idempotent: the same action for the same role and store is
    queued once while it is open."""
    action = payload.get("action")
    if not isinstance(action, dict) or payload.get("status") != "ok" or payload.get("low_confidence"):
        return None
    plan = payload.get("plan") if isinstance(payload.get("plan"), dict) else {}
    params = dict(action.get("params") or {})
    subject = plan.get("target_metric") if isinstance(plan, dict) else None
    if subject:  # what the action is about: the plan's metric (plan.schema.json target_metric)
        params.setdefault("subject", subject)
    evidence = tuple(str(e["event_id"]) for e in payload.get("evidence") or [] if isinstance(e, dict))
    return queue_action(
        store,
        store_id=store_id,
        type=str(action["type"]),
        role=role,
        params=params,
        summary=action_summary(payload),
        confidence=float(payload.get("confidence", 0.0)),
        evidence=evidence,
        expires_at=expires_at,
    )
