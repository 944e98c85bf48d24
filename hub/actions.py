"""Actions the hub issues to a store's role: the ``hub_actions`` outbox (:mod:`hub.db`).

The HQ console's send-as-action (and :func:`issue_action` / :func:`send_answer_action` for a
program) puts a ``pending`` row in the outbox; ``adamm-hub serve`` publishes it (QoS 1, MQTT 5
Message Expiry Interval = the time left to its expiry, and the expiry in ``params.expires_at`` of
the payload, which MQTT 3.1.1 keeps too) retained on ``adamm/v1/{store}/action/{role}/{action_id}``
(so a device that connects later, even for the first time, gets it at once; cleared with an empty
retained message once the action ends)
(:func:`resend_due`, run by :class:`Sender`), re-sends it until a staff device acknowledges it or
it expires (the gap doubles from ``[actions] resend_base_s`` up to ``resend_max_s``), and records
the device's ack from ``adamm/v1/{store}/ack/{action_id}`` (:func:`record_ack`).

States, in the same order as a store's actions (an ack only moves an action forward; a repeated,
reordered or older ack changes nothing)::

    pending < sent < accepted < done | rejected        (done and rejected are final)

An open (pending or sent) action past its ``expires_at`` is ``expired``: readers show it so even
before a writer marks it, it is never re-sent, and a later ack counts only when it was made
before the expiry. Acks for actions the hub did not issue (a store's own) are ignored here.

The ``action_id`` is a SHA-256 of what is to be done (``hub``, store, role, type, params, and a
generation): the same action sent again while it is open is queued once; once it closed, it is a
new action. Times are UTC ISO 8601 with seconds, so they compare as text in SQL.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from edge.contract import (
    FINAL_STATES,
    RECORDED,
    UNKNOWN,
    apply_ack_rule,
    clear_due,
    closing_update,
    iso,
    parse_iso,
    send_blocker,
)
from edge.contract import LATE as LATE  # record_ack's outcomes are the contract's
from edge.contract import UNCHANGED as UNCHANGED
from edge.contract import effective_state as _effective
from edge.errors import BrokerError, EnvironmentProblem, UsageError
from edge.services.action_rules import action_summary, answer_is_weak, default_role
from edge.sync import messages as m
from hub.db import HubDB

logger = logging.getLogger(__name__)

COLUMNS = (
    "action_id", "store_id", "role", "type", "params_json", "summary", "evidence_json", "confidence",
    "issued_at", "expires_at", "state", "acked_by", "acked_at", "attempts", "sent_at", "next_send_at",
    "updated_at",
)  # fmt: skip

#: publish(topic, payload, expiry_s, user_properties), QoS 1 and retained (an open action, or the
#: empty message that clears one that ended)
Publish = Callable[[str, bytes, int | None, Sequence[tuple[str, str]]], object]


def _now(now: datetime | None) -> datetime:
    return now if now is not None else datetime.now(UTC)


def action_id_for(store_id: str, role: str, type: str, params: dict[str, Any], generation: int = 0) -> str:
    parts: list[Any] = ["hub-action", store_id, role, type, params]
    if generation:
        parts.append(generation)
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _rows(db: HubDB, where: str = "", params: Sequence[Any] = ()) -> list[dict[str, Any]]:
    sql = f"SELECT {', '.join(COLUMNS)} FROM hub_actions {where}"
    return [dict(zip(COLUMNS, r, strict=True)) for r in db.query(sql, params)]


def effective_state(row: dict[str, Any], now: datetime | None = None) -> str:
    """The row's state as of ``now`` (the contract's rule: an open action past its expiry reads
    ``expired``)."""
    return _effective(str(row["state"]), row.get("expires_at"), _now(now))


def list_actions(
    db: HubDB, state: str | None = None, store_id: str | None = None, now: datetime | None = None
) -> list[dict[str, Any]]:
    """Hub-issued actions (of one state, one store) with their effective state, newest first."""
    where, params = "", ()  # type: tuple[str, tuple[str, ...]]
    if store_id is not None:
        where, params = "WHERE store_id = ?", (store_id,)
    found = _rows(db, where + " ORDER BY issued_at DESC, action_id", params)
    for r in found:
        r["state"] = effective_state(r, now)
        r["confidence"] = float(r["confidence"])
        r["attempts"] = int(r["attempts"])
    return [r for r in found if state is None or r["state"] == state]


def get_action(db: HubDB, action_id: str, now: datetime | None = None) -> dict[str, Any] | None:
    found = _rows(db, "WHERE action_id = ?", (action_id,))
    if not found:
        return None
    found[0]["state"] = effective_state(found[0], now)
    return found[0]


def issue_action(
    db: HubDB,
    *,
    store_id: str,
    role: str,
    type: str,
    params: dict[str, Any],
    summary: str,
    confidence: float,
    evidence: Sequence[str] = (),
    expires_at: datetime | None = None,
    now: datetime | None = None,
) -> str:
    """Queue an action for ``role`` at ``store_id`` (idempotent while it is open); its id."""
    if not m.valid_store_id(store_id):
        raise UsageError(f"store {store_id!r} is not a store id")
    if not m.valid_topic_level(role or ""):
        raise UsageError(f"role {role!r} is not usable: letters, digits, _ . : - (it names the MQTT topic)")
    if type not in m.ACTION_TYPES:
        raise UsageError(f"action type must be one of {', '.join(m.ACTION_TYPES)}, not {type!r}")
    t = _now(now)
    if expires_at is not None and expires_at <= t:
        raise UsageError("the action would expire before it is sent: give a later expiry")
    conf = max(0.0, min(1.0, float(confidence)))
    m.action_payload("0" * 64, type, params, summary, list(evidence), conf, iso(t))  # readable by a device?
    stamp = iso(t)
    with db.transaction():
        for generation in range(10_000):
            aid = action_id_for(store_id, role, type, params, generation)
            row = get_action(db, aid, t)
            if row is not None and row["state"] in FINAL_STATES:
                continue
            if row is None:
                db.execute(
                    f"INSERT INTO hub_actions ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})",
                    (
                        aid, store_id, role, type,
                        json.dumps(params, ensure_ascii=False, sort_keys=True, default=str), summary,
                        json.dumps(list(evidence), ensure_ascii=False), conf, stamp,
                        iso(expires_at) if expires_at is not None else None, "pending", None, None, 0,
                        None, stamp, stamp,
                    ),
                )  # fmt: skip
            return aid
    raise UsageError("this action was sent 10000 times already")


def finding_store(payload: dict[str, Any], stores: Sequence[str]) -> str | None:
    """The store a cross-store finding points at: the first ranked key that is a known store (the
    top of a "which store's effect" ranking, the highest group of a compare, the top of a top_k),
    else the plan's single store, else the only store."""
    result = payload.get("result")
    result = result if isinstance(result, dict) else {}
    within = result.get("within")
    lists = [within.get("items")] if isinstance(within, dict) else []
    lists += [result.get(k) for k in ("groups", "items", "parts")]
    for found in lists:
        for g in found if isinstance(found, list) else []:
            if isinstance(g, dict) and str(g.get("key")) in stores:
                return str(g["key"])
    plan = payload.get("plan")
    filters = plan.get("filters") if isinstance(plan, dict) else None
    attrs = filters.get("attributes") if isinstance(filters, dict) else None
    sid = attrs.get("store_id") if isinstance(attrs, dict) else None
    if isinstance(sid, str) and sid in stores:
        return sid
    return stores[0] if len(stores) == 1 else None


def send_answer_action(
    db: HubDB,
    payload: dict[str, Any],
    *,
    store_id: str,
    role: str | None = None,
    question: str = "",
    expires_at: datetime | None = None,
    confirm: bool = False,
    now: datetime | None = None,
) -> str:
    """Queue the finding ``payload`` as an action for a store's role; its id.

    The payload's own action when it has one, else a ``recommendation`` titled with the question
    (or the summary); it keeps the answer's summary, evidence and confidence. An answer that is
    not ok or is low-confidence is refused (a usage error) unless ``confirm``."""
    weak = answer_is_weak(payload)
    if weak and not confirm:
        raise UsageError(f"not sent: {weak}", hint="confirm to send it anyway")
    action = payload.get("action") if isinstance(payload.get("action"), dict) else None
    if action is None:
        action = {"type": "recommendation", "params": {"title": question or str(payload.get("summary", ""))}}
    params = {k: v for k, v in dict(action.get("params") or {}).items() if k != "role"}
    plan = payload.get("plan")
    subject = plan.get("target_metric") if isinstance(plan, dict) else None
    if subject:
        params.setdefault("subject", subject)
    if question:
        params.setdefault("question", question)
    if weak:
        params["confirmed_weak"] = True
    evidence = [str(e["event_id"]) for e in payload.get("evidence") or [] if isinstance(e, dict)]
    return issue_action(
        db,
        store_id=store_id,
        role=role or default_role(payload),
        type=str(action.get("type") or "recommendation"),
        params=params,
        summary=action_summary(payload),
        confidence=float(payload.get("confidence") or 0.0),
        evidence=evidence,
        expires_at=expires_at,
        now=now,
    )


def expire_due(db: HubDB, now: datetime | None = None) -> list[str]:
    """Mark every open action past its expiry ``expired``; the ids marked."""
    stamp = iso(_now(now))
    with db.transaction():
        ids = [
            str(r[0])
            for r in db.query(
                "SELECT action_id FROM hub_actions WHERE state IN ('pending', 'sent') "
                "AND expires_at IS NOT NULL AND expires_at <= ?",
                (stamp,),
            )
        ]
        db.execute(
            "UPDATE hub_actions SET state = 'expired', updated_at = ?, next_send_at = ? "
            "WHERE state IN ('pending', 'sent') AND expires_at IS NOT NULL AND expires_at <= ?",
            (stamp, closing_update("expired", _now(now)), stamp),
        )
    return ids


@dataclass
class SendReport:
    sent: list[str] = field(default_factory=list)
    expired: list[str] = field(default_factory=list)
    cleared: list[str] = field(default_factory=list)


def resend_due(
    db: HubDB,
    publish: Publish,
    *,
    now: datetime | None = None,
    resend_base_s: float = 60.0,
    resend_max_s: float = 3600.0,
) -> SendReport:
    """Expire what is past its expiry, clear the retained message of every action that ended, then
    publish (retained) every open action whose (re-)send is due (the contract's
    :func:`~edge.contract.send_blocker`, row by row: not expired, a usable role) and, once
    ``publish`` returns (the broker's PUBACK), mark it ``sent`` with its next re-send. A publish
    that raises stops the round (the action stays due)."""
    t = _now(now)
    report = SendReport(expired=expire_due(db, t))
    ended = _rows(
        db,
        "WHERE state IN ('done', 'rejected', 'expired') AND next_send_at IS NOT NULL ORDER BY issued_at, action_id",
    )
    for row in ended:
        if not clear_due(row, t):
            continue
        if int(row["attempts"] or 0) > 0:  # never published: nothing retained to clear
            publish(*m.action_clear(row))
        with db.transaction():
            db.execute(
                "UPDATE hub_actions SET next_send_at = NULL, updated_at = ? WHERE action_id = ? "
                "AND state IN ('done', 'rejected', 'expired')",
                (iso(t), row["action_id"]),
            )
        report.cleared.append(row["action_id"])
    due = _rows(
        db,
        "WHERE state IN ('pending', 'sent') AND (next_send_at IS NULL OR next_send_at <= ?) "
        "ORDER BY issued_at, action_id",
        (iso(t),),
    )
    for row in due:
        why = send_blocker(row, t)
        if why is not None:
            if "topic" in why:
                logger.warning("hub action %s not sent: %s", row["action_id"], why)
            continue
        publish(*m.action_message(row, t))
        nxt = iso(t + m.resend_gap(int(row["attempts"]), resend_base_s, resend_max_s))
        with db.transaction():  # an ack that ended it meanwhile keeps its state and its clearing
            db.execute(
                "UPDATE hub_actions SET state = CASE WHEN state = 'pending' THEN 'sent' ELSE state END, "
                "sent_at = ?, attempts = attempts + 1, "
                "next_send_at = CASE WHEN state IN ('pending', 'sent') THEN ? ELSE next_send_at END, "
                "updated_at = ? WHERE action_id = ?",
                (iso(t), nxt, iso(t), row["action_id"]),
            )
        report.sent.append(row["action_id"])
    return report


def is_ack_topic(topic: str) -> bool:
    return m.topic_action_id(topic) is not None


def record_ack(db: HubDB, topic: str, payload: bytes, *, now: datetime | None = None) -> str:
    """Apply one received ack to a hub-issued action (idempotent; never backwards): ``recorded``,
    ``unchanged``, ``unknown`` (not the hub's), ``late`` (made after the expiry), or the
    :class:`~edge.sync.messages.MessageError` reason of a message that is not an ack."""
    try:
        ack = m.parse_ack(topic, payload)
    except m.MessageError as exc:
        logger.warning("ignoring a message on %s: %s", topic, exc)
        return exc.reason
    store = m.topic_store(topic)
    t = _now(now)
    at = parse_iso(ack.at)
    with db.transaction():
        found = db.one(
            "SELECT state, expires_at, store_id FROM hub_actions WHERE action_id = ?", (ack.action_id,)
        )
        if found is None or found[2] != store:
            return UNKNOWN
        rule = apply_ack_rule(str(found[0]), found[1], ack.state, at, t)
        if rule.write == "expired":
            db.execute(
                "UPDATE hub_actions SET state = 'expired', updated_at = ?, next_send_at = ? WHERE action_id = ?",
                (iso(t), closing_update("expired", t), ack.action_id),
            )
        elif rule.write is not None:
            db.execute(
                "UPDATE hub_actions SET state = ?, acked_by = ?, acked_at = ?, updated_at = ?, "
                "next_send_at = COALESCE(?, next_send_at) WHERE action_id = ?",
                (rule.write, ack.by, iso(at), iso(t), closing_update(rule.write, t), ack.action_id),
            )
    if rule.outcome != RECORDED:
        return rule.outcome
    logger.info("action %s at %s: %s by %s", ack.action_id[:12], store, ack.state, ack.by)
    return RECORDED


#: seconds the sender waits for the broker's PUBACK before it tries again in the next round
PUBACK_TIMEOUT_S = 15.0


class SenderFailing(EnvironmentProblem):
    """The hub's action sender failed on every round for ``[actions] sender_give_up_s`` (exit 3)."""


#: seconds between two writes of a failing component's row (its first failure is written at once)
HEALTH_EVERY_S = 10.0


def record_component(
    db: HubDB,
    name: str,
    state: str,
    *,
    since: str | None = None,
    failures: int = 0,
    last_error: str | None = None,
    now: datetime | None = None,
) -> None:
    """Write the health of a worker's component (``hub_components``, read by ``adamm-hub status``)."""
    with db.transaction():
        db.execute(
            "INSERT INTO hub_components (name, state, since, failures, last_error, at) VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (name) DO UPDATE SET state = excluded.state, since = excluded.since, "
            "failures = excluded.failures, last_error = excluded.last_error, at = excluded.at",
            (name, state, since, failures, last_error, iso(_now(now))),
        )


class Sender:
    """The serve worker's action sender: a thread with its own connection (``db.reopen()``) that
    (re-)sends due hub actions through ``publish`` every ``period_s`` while ``connected()`` is true.

    A round that fails is tried again a period later; the sender's health is written to
    ``hub_components`` as ``name`` (``ok`` on its first good round and after a recovery;
    ``failing`` with the count, since when and the last error while rounds fail), so ``adamm-hub
    status`` shows it; after ``give_up_s`` of nothing but failed rounds it stops with
    :attr:`fatal` set (a :class:`SenderFailing`, state ``stopped``), which ends the worker with exit 3
    (:meth:`hub.serve.Server.run`)."""

    def __init__(
        self,
        db: HubDB,
        publish: Publish,
        connected: Callable[[], bool],
        *,
        resend_base_s: float,
        resend_max_s: float,
        period_s: float = 1.0,
        name: str = "actions",
        give_up_s: float = 300.0,
    ) -> None:
        self.main_db = db  # reopened in the thread (never opened again by path: see HubDB.reopen)
        self.publish = publish
        self.connected = connected
        self.resend_base_s = resend_base_s
        self.resend_max_s = resend_max_s
        self.period_s = period_s
        self.name = name
        self.give_up_s = give_up_s
        #: set when the sender gave up (the worker stops with it)
        self.fatal: SenderFailing | None = None
        self.failures = 0
        self.last_error: str | None = None
        self._failing_since: tuple[float, str] | None = None  # (monotonic, ISO)
        self._written_at = 0.0
        self._healthy_written = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="hub-actions", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _write(self, db: HubDB | None, state: str) -> None:
        """Record the health; a database that cannot take it is logged (the next write tries again)."""
        opened: HubDB | None = None
        try:
            if db is None:
                db = opened = self.main_db.reopen()
            since = self._failing_since[1] if self._failing_since else None
            record_component(
                db, self.name, state, since=since, failures=self.failures, last_error=self.last_error
            )
            self._written_at = time.monotonic()
        except Exception as exc:  # the health row is a report, never a reason to stop sending
            logger.warning("cannot record the health of %s: %s", self.name, exc)
        finally:
            if opened is not None:
                opened.close()

    def _failed(self, db: HubDB | None, error: str) -> None:
        self.failures += 1
        self.last_error = error
        now = time.monotonic()
        if self._failing_since is None:
            self._failing_since = (now, iso(_now(None)))
            self._written_at = 0.0
        failing_for = now - self._failing_since[0]
        if failing_for >= self.give_up_s:
            self.fatal = SenderFailing(
                f"the hub's action sender ({self.name}) failed on every round for {failing_for:.0f} s "
                f"({self.failures} failures since {self._failing_since[1]}); the last: {error}",
                hint="see adamm-hub status and the log for the cause; hub actions wait in the outbox. "
                "Fix it, then start adamm-hub serve again",
            )
            logger.error("%s", self.fatal)
            self._write(db, "stopped")
            self._stop.set()
        elif now - self._written_at >= HEALTH_EVERY_S:
            self._write(db, "failing")

    def _succeeded(self, db: HubDB) -> None:
        if self._failing_since is not None or not self._healthy_written:
            if self._failing_since is not None:
                logger.info("hub actions: sending again after %d failed rounds", self.failures)
            self._failing_since, self.failures, self.last_error = None, 0, None
            self._write(db, "ok")
            self._healthy_written = True

    def _run(self) -> None:
        db: HubDB | None = None
        try:
            while not self._stop.wait(self.period_s):
                if not self.connected():
                    continue
                try:
                    db = db or self.main_db.reopen()
                    got = resend_due(
                        db, self.publish, resend_base_s=self.resend_base_s, resend_max_s=self.resend_max_s
                    )
                    if got.sent or got.expired or got.cleared:
                        logger.info(
                            "hub actions: sent %d, expired %d, cleared %d",
                            len(got.sent),
                            len(got.expired),
                            len(got.cleared),
                        )
                    self._succeeded(db)
                except BrokerError as exc:
                    logger.warning("sending hub actions: %s; trying again", exc)
                    self._failed(db, str(exc))
                except Exception as exc:  # the next round tries again; serving summaries goes on
                    logger.exception("sending hub actions failed")
                    if db is not None:
                        db.close()
                    db = None
                    self._failed(None, f"{type(exc).__name__}: {exc}")
        finally:
            if db is not None:
                db.close()
