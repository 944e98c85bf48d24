"""``adamm actions --db PATH [--json]``: every action of the store and its state.

Read-only (CONTRACT.md section 1: ``actions`` never writes to the memory): state (``pending``
while it waits in the outbox, ``sent``, ``accepted``, ``done``, ``rejected``, ``expired``; an
open action past its expiry reads ``expired`` before any writer marks it), role, type, title,
summary, confidence, when it was issued and expires, who acknowledged it and when. ``--json``:
``{"actions": [{...}]}``, most recently issued first. Called by the ``adamm`` dispatcher in
:mod:`edge.cli`.

Acks are recorded by whoever holds the store's MQTT connection (the sync worker, within a second
or so of their arrival, or ``adamm action sync``). Recording them here would write to the memory,
which this command must not do (CONTRACT.md section 1), so when actions wait for an ack and no sync
worker runs, it says on stderr that their acks wait on the broker and which command records them.
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


def _say_acks_wait(db: str, found: list[dict[str, Any]]) -> None:
    """On stderr: actions wait for acks and no sync worker runs to record them (nothing when one
    runs: it records each ack within a second or so)."""
    waiting = [a for a in found if a["state"] in ("sent", "accepted")]
    if not waiting:
        return
    from edge.sync.actions import worker_running

    try:
        if worker_running(db):
            return
    except OSError:  # the lock beside the memory cannot be opened: whether one runs is unknown
        return
    print(
        f"adamm actions: {len(waiting)} action(s) wait for an ack and no sync worker runs for this memory: "
        "acks that came meanwhile wait on the broker until the store's connection reads them; "
        f"record them with `adamm action sync --db {db} --broker URL` (or run `adamm sync`)",
        file=sys.stderr,
    )


def run(args: argparse.Namespace) -> int:
    from datetime import UTC

    from edge.cli._common import open_existing_store
    from edge.config import parse_now
    from edge.memory.semantic import actions as rows

    now = parse_now(args.now)
    if now is not None and now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    store = open_existing_store(args.db, None, readonly=True)
    try:
        with store.read() as conn:
            found = [as_json(r) for r in rows.list_actions(conn, now=now)]
        zones = {sid: store.timezone(sid) for sid in {a["store_id"] for a in found}}
    finally:
        store.close()
    _say_acks_wait(args.db, found)
    if args.json:
        json.dump({"actions": found}, sys.stdout, ensure_ascii=False)
        sys.stdout.write("\n")
        return 0
    if not found:
        print("no actions")
        return 0
    from edge.presentation.format import zoned_time

    for a in found:
        tz = zones.get(a["store_id"])  # the store's own clock, its zone said (JSON keeps ISO)
        by = f"  by {a['acked_by']} at {zoned_time(a['acked_at'], tz)}" if a["acked_by"] else ""
        expires = zoned_time(a["expires_at"], tz) if a["expires_at"] else "-"
        print(
            f"{a['action_id'][:12]}  {a['state']:<8}  {a['role']}  {a['type']}  {a['title']}"
            f"  issued {zoned_time(a['issued_at'], tz)}  expires {expires}{by}"
        )
        print(f"    {a['summary']}  (confidence {float(a['confidence']):.2f})")
    return 0
