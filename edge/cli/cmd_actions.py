"""``adamm actions --db PATH [--json]``: every action of the store and its state.

Read-only (CONTRACT.md section 1: ``actions`` never writes to the memory): state (``pending``
while it waits in the outbox, ``sent``, ``accepted``, ``done``, ``rejected``, ``expired``; an
open action past its expiry reads ``expired`` before any writer marks it), role, type, title,
summary, confidence, when it was issued and expires, who acknowledged it and when, and for a done
action its measured effect, the days it still needs, or that it has no measurable target
(``effect``, CONTRACT.md section 7). ``--json``:
``{"actions": [{...}]}``, most recently issued first. Called by the ``adamm`` dispatcher in
:mod:`edge.cli`.

Acks are recorded by whoever holds the store's MQTT connection (the sync worker, within a second
or so of their arrival, or ``adamm action sync``). Recording them here would write to the memory,
which this command must not do (CONTRACT.md section 1), so when actions wait for an ack and no sync
worker runs, it says on stderr that their acks wait on the broker and which command records them.
With ``--broker URL`` (and no worker running) it also reads the acks waiting in the store's
session without recording or acknowledging them (:func:`edge.sync.actions.peek_acks`: the broker
keeps them for the store's next connection) and shows each beside its action (``waiting_ack`` in
``--json``: ``{"state", "by", "at", "would_be"}``, ``would_be`` the state recording it gives,
by the contract's rules), the recorded ``state`` unchanged.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

FIELDS = (
    "action_id",
    "state",
    "role",
    "type",
    "title",
    "summary",
    "confidence",
    "evidence",
    "params",
    "store_id",
    "issued_at",
    "expires_at",
    "sent_at",
    "attempts",
    "acked_by",
    "acked_at",
)


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "actions",
        help="list every action with its state, role and who acknowledged it (read-only)",
        description="Every action of the store: state, role, type, summary, issued, expires, acknowledged "
        "by whom and when. Never writes to the memory.",
    )
    p.add_argument("--db", required=True, metavar="PATH", help="the store's memory (must exist)")
    p.add_argument("--json", action="store_true", help='print {"actions": [...]} on stdout')
    p.add_argument("--now", metavar="ISO", help="the time expiry is judged at (default: the clock)")
    p.add_argument(
        "--broker",
        metavar="URL",
        help="also show the acks waiting on this broker in the store's session, without recording them "
        "(only when no sync worker runs)",
    )
    p.add_argument("--config", metavar="FILE", help="TOML config file with [mqtt] (else $ADAMM_CONFIG)")
    p.set_defaults(func=run)


def as_json(row: dict[str, Any]) -> dict[str, Any]:
    params = json.loads(row.get("params_json") or "{}")
    out = {
        **{k: row.get(k) for k in FIELDS},
        "params": params,
        "title": params.get("title") or params.get("rule") or row["type"],
        "evidence": json.loads(row.get("evidence_json") or "[]"),
        "attempts": int(row.get("attempts") or 0),
    }
    return out


def _say_acks_wait(db: str, found: list[dict[str, Any]], peeked: int | None) -> None:
    """On stderr: actions wait for acks and no sync worker runs to record them (nothing when one
    runs: it records each ack within a second or so). ``peeked``: the acks read on the broker
    (None: not looked)."""
    waiting = [a for a in found if a["state"] in ("sent", "accepted")]
    if not waiting:
        return
    from edge.sync.actions import worker_running

    try:
        if worker_running(db):
            return
    except OSError:  # the lock beside the memory cannot be opened: whether one runs is unknown
        return
    came = (
        "acks that came meanwhile wait on the broker until the store's connection reads them"
        if peeked is None
        else f"{peeked} ack(s) wait on the broker, not recorded"
    )
    print(
        f"adamm actions: {len(waiting)} action(s) wait for an ack and no sync worker runs for this memory: "
        f"{came}; record them with `adamm action sync --db {db} --broker URL` (or run `adamm sync`)",
        file=sys.stderr,
    )


def _peek(args: argparse.Namespace, store: Any) -> list[Any] | None:
    """The acks waiting in the store's session (``--broker``), None when not looked (no
    ``--broker``, or a sync worker holds the connection and records them itself)."""
    if not args.broker:
        return None
    from edge.config import DaemonConfig, load_config
    from edge.services.actions import own_store_id
    from edge.sync.actions import ConnectionLock, peek_acks
    from edge.sync.mqtt import parse_broker_url

    parse_broker_url(args.broker)
    config = load_config(args.config)
    store_id = own_store_id(store, config.store_id if isinstance(config, DaemonConfig) else None)
    lock = ConnectionLock.try_acquire(args.db)
    if lock is None:
        print("adamm actions: a sync worker runs and records acks as they come", file=sys.stderr)
        return None
    with lock:
        return peek_acks(store_id, args.broker, config)


def run(args: argparse.Namespace) -> int:
    from datetime import UTC

    from edge.cli._common import open_existing_store
    from edge.config import parse_now
    from edge.memory.semantic import actions as rows

    now = parse_now(args.now)
    if now is not None and now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    from datetime import datetime

    from edge.config import AdammConfig
    from edge.services.action_effects import action_effects

    store = open_existing_store(args.db, None, readonly=True)
    try:
        with store.read() as conn:
            found = [as_json(r) for r in rows.list_actions(conn, now=now)]
        zones = {sid: store.timezone(sid) for sid in {a["store_id"] for a in found}}
        # a done action: its measured effect, or the days it still needs (CONTRACT.md section 7)
        effects = action_effects(store, AdammConfig(), now or datetime.now(UTC))
        peeked = _peek(args, store)
    finally:
        store.close()
    for a in found:
        if a["action_id"] in effects:
            a["effect"] = effects[a["action_id"]]
    if peeked is not None:
        _overlay(found, peeked, now)
    _say_acks_wait(args.db, found, None if peeked is None else len(peeked))
    if args.json:
        json.dump({"actions": found}, sys.stdout, ensure_ascii=False)
        sys.stdout.write("\n")
        return 0
    if not found:
        print("no actions")
        return 0
    from edge.presentation.effects import effect_text
    from edge.presentation.format import zoned_time

    window = AdammConfig().actions.effect_window_days
    for a in found:
        tz = zones.get(a["store_id"])  # the store's own clock, its zone said (JSON keeps ISO)
        by = f"  by {a['acked_by']} at {zoned_time(a['acked_at'], tz)}" if a["acked_by"] else ""
        expires = zoned_time(a["expires_at"], tz) if a["expires_at"] else "-"
        print(
            f"{a['action_id'][:12]}  {a['state']:<8}  {a['role']}  {a['type']}  {a['title']}"
            f"  issued {zoned_time(a['issued_at'], tz)}  expires {expires}{by}"
        )
        print(f"    {a['summary']}  (confidence {float(a['confidence']):.2f})")
        w = a.get("waiting_ack")
        if w:
            print(
                f"    ack waiting on the broker, not recorded: {w['state']} by {w['by']} at "
                f"{zoned_time(w['at'], tz)} (recorded, the action is {w['would_be']})"
            )
        eff = a.get("effect")
        if eff is not None:  # worded as the store's and the HQ console's Actions tabs word it
            print(f"    effect: {effect_text(eff, 'en', window)}")
    return 0


def _overlay(found: list[dict[str, Any]], acks: list[Any], now: Any) -> None:
    """Put each waiting ack beside its action (``waiting_ack``), with the state recording the acks
    in the order they came would give (the contract's rules, :func:`edge.contract.apply_ack_rule`)."""
    from datetime import UTC, datetime

    from edge.contract import apply_ack_rule, parse_iso

    t = now or datetime.now(UTC)
    by_id = {a["action_id"]: a for a in found}
    would = {aid: a["state"] for aid, a in by_id.items()}
    for ack in acks:
        a = by_id.get(ack.action_id)
        if a is None:  # not this store's action (the hub's): the hub records it
            continue
        rule = apply_ack_rule(would[ack.action_id], a["expires_at"], ack.state, parse_iso(ack.at), t)
        would[ack.action_id] = rule.write or would[ack.action_id]
        a["waiting_ack"] = {"state": ack.state, "by": ack.by, "at": ack.at, "would_be": would[ack.action_id]}
