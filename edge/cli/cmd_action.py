"""``adamm action send`` / ``adamm action sync``: push an action to a store's staff devices.

``send`` queues the action in the store's action outbox (from the answer to ``--question``
through :class:`edge.services.ask.AskService`, keeping its summary, evidence and confidence, or
given directly with ``--type``/``--title``) and prints its ``action_id``. The store's MQTT
connection belongs to one process (:mod:`edge.sync.actions`): when a sync worker holds the
store's connection lock the action waits in the outbox for it (state ``pending``); else this
command takes the lock, publishes the action itself (QoS 1, expiring with the action; state
``sent`` once the broker has it) and lets go. The sync worker (``adamm sync``, the daemon's)
carries the actions on its own connection. ``sync`` is the direct connection without a new action
and without the hub, for a store that runs no sync worker: collect the acks the store's session
holds, re-send what is due, mark what expired (what the sync worker does in its loop); beside a
running worker it does nothing. Credentials come from ``$ADAMM_MQTT_USERNAME`` /
``$ADAMM_MQTT_PASSWORD`` / ``$ADAMM_MQTT_CA`` or the config's ``[mqtt]`` (one resolution,
:func:`edge.sync.mqtt.credentials`), never from the command line. Called by the ``adamm``
dispatcher in :mod:`edge.cli`.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

from edge.errors import BrokerError, UsageError

logger = logging.getLogger(__name__)

TYPES = ("recommendation", "work_order", "alert")


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "action",
        help="send an action to the store's staff devices (send), or sync the action outbox (sync)",
        description="Push actions to the store's staff devices over MQTT and collect their acks.",
    )
    sub = p.add_subparsers(dest="action_command", metavar="SUBCOMMAND")
    s = sub.add_parser(
        "send",
        help="send an action to a role (from an answer, or given directly); prints its action_id",
        description=(
            "Queue an action for the store's staff devices with ROLE and publish it (directly when no "
            "sync worker runs, else through the worker). From the answer to --question (refused when "
            "the answer is not ok or has low confidence, unless --confirm) or given with --type and "
            "--title. Prints the action_id (JSON with --json)."
        ),
    )
    _common(s)
    s.add_argument("--role", required=True, help="the staff role it goes to (cashier, cleaner, ...)")
    what = s.add_mutually_exclusive_group(required=True)
    what.add_argument("--question", metavar="TEXT", help="send the action of the answer to this question")
    what.add_argument("--type", choices=TYPES, help="send an action of this type (with --title)")
    s.add_argument("--title", metavar="TEXT", help="what is to be done (with --type)")
    s.add_argument(
        "--expires-in",
        metavar="DURATION",
        help="how long the action stays open: ISO 8601 (PT2H, P1D) or 2h, 30m "
        "(default: [actions] default_expires_in, PT4H)",
    )
    s.add_argument("--confirm", action="store_true", help="send even when the answer is weak or not ok")
    s.add_argument(
        "--metric",
        metavar="METRIC",
        help="the metric the action should change (kept as params.target_metric; with --question, "
        "default the answer's); adamm maintain measures it after the action is done",
    )
    s.add_argument(
        "--where",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="where it should change it (kept as params.scope): zone=checkout, hours=18,19,20; repeatable",
    )
    s.add_argument(
        "--now",
        metavar="ISO",
        help="the action's issued_at and the answer's clock (back-filling, tests; default: the clock)",
    )
    s.set_defaults(func=run_send)
    y = sub.add_parser(
        "sync",
        help="collect acks, re-send unacknowledged actions, mark expired ones (when no worker runs)",
        description=(
            "Connect as the store (only when no sync worker runs), record the acks waiting in its "
            "session, re-send the unacknowledged actions that are due and mark the expired ones. "
            "A running `adamm sync` or daemon does this itself; this is for a store without one "
            "(no hub needed)."
        ),
    )
    _common(y)
    y.add_argument(
        "--listen",
        type=float,
        default=3.0,
        metavar="SECONDS",
        help="wait up to this long for acks (stops after 1 s without one; default 3)",
    )
    y.set_defaults(func=run_sync)
    p.set_defaults(func=lambda _a: _no_subcommand(p))


def _no_subcommand(p: argparse.ArgumentParser) -> int:
    p.print_help(sys.stderr)
    return 2


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", required=True, metavar="PATH", help="the store's memory (must exist)")
    p.add_argument("--broker", required=True, metavar="URL", help="mqtt://HOST:PORT or mqtts://HOST:PORT")
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    p.add_argument("--config", metavar="FILE", help="TOML config file (else $ADAMM_CONFIG, else defaults)")


def _store_id(store: Any, config: Any) -> str:
    from edge.config import DaemonConfig
    from edge.services.actions import own_store_id

    return own_store_id(store, config.store_id if isinstance(config, DaemonConfig) else None)


def run_send(args: argparse.Namespace) -> int:
    from edge.cli._common import open_existing_store
    from edge.config import load_config, parse_duration, parse_now
    from edge.memory.semantic import actions as rows
    from edge.services import actions as use
    from edge.sync.mqtt import parse_broker_url

    if args.type and not (args.title or "").strip():
        raise UsageError("--type needs --title: say what is to be done")
    if args.question is not None and args.title:
        raise UsageError("--title goes with --type; --question takes the action from the answer")
    if args.question is not None and not args.question.strip():
        raise UsageError("the question is empty")
    parse_broker_url(args.broker)
    config = load_config(args.config)
    try:
        span = parse_duration(args.expires_in or config.actions.default_expires_in)
    except ValueError as exc:
        raise UsageError(f"--expires-in: {exc}") from None
    now = parse_now(getattr(args, "now", None))
    target = _target(args.metric, args.where)
    store = open_existing_store(args.db, config, readonly=False)
    try:
        store_id = _store_id(store, config)
        issued = now if now is not None and now.tzinfo is not None else None
        if now is not None and issued is None:  # store-local, as --now elsewhere
            from zoneinfo import ZoneInfo

            issued = now.replace(tzinfo=ZoneInfo(store.timezone(store_id)))
        # an action recorded late (issued in the past) is still sent now: it stays open from now
        expires = max(issued or datetime.now(UTC), datetime.now(UTC)) + span
        role = use.check_role(args.role)
        if args.question is not None:
            from edge.services.ask import AskService

            payload = AskService(store, config, now=now).ask(args.question.strip())
            aid = use.send_answer_action(
                store,
                payload,
                role=role,
                store_id=store_id,
                question=args.question.strip(),
                expires_at=expires,
                confirm=args.confirm,
                now=issued,
                target=target,
            )
        else:
            title = args.title.strip()
            aid = use.queue_action(
                store,
                store_id=store_id,
                type=args.type,
                role=role,
                params={"title": title, **target},
                summary=title,
                confidence=1.0,
                expires_at=expires,
                now=issued,
            )
        try:
            via, _ = _deliver(store, store_id, args, config)
        except BrokerError as exc:
            raise type(exc)(
                f"action {aid} is queued in the outbox but not sent: {exc.message}",
                hint=exc.hint or "run `adamm sync` (or `adamm action sync`) once the broker is back",
            ) from None
        with store.read() as conn:
            row = rows.get_action(conn, aid)
    finally:
        store.close()
    assert row is not None
    if args.json:
        out = {
            "action_id": aid,
            "state": row["state"],
            "role": row["role"],
            "type": row["type"],
            "expires_at": row["expires_at"],
            "via": via,
        }
        json.dump(out, sys.stdout, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        print(aid)
    return 0


def _target(metric: str | None, where: list[str]) -> dict[str, Any]:
    """``--metric`` / ``--where`` as the params an action's effect is measured by."""
    from edge.analysis.metrics import METRICS

    out: dict[str, Any] = {}
    if metric is not None:
        if metric not in METRICS:
            raise UsageError(
                f"--metric {metric!r} is not a metric", hint="one of " + ", ".join(sorted(METRICS))
            )
        out["target_metric"] = metric
    scope: dict[str, Any] = {}
    for item in where:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise UsageError(f"--where {item!r}: give KEY=VALUE (zone=checkout, hours=18,19)")
        if key.strip() == "hours":
            try:
                scope["hours"] = [int(h) for h in value.split(",")]
            except ValueError:
                raise UsageError(f"--where {item!r}: hours are whole numbers 0-23, comma-separated") from None
        else:
            scope[key.strip()] = value.strip()
    if scope:
        out["scope"] = scope
    return out


def _deliver(
    store: Any, store_id: str, args: argparse.Namespace, config: Any, listen_s: float = 0.0
) -> tuple[str, Any]:
    """Publish the outbox directly when no worker owns the store's connection (``direct`` and
    the :class:`~edge.sync.actions.SendReport`); else leave it to the worker (``worker``, None)."""
    from edge.sync.actions import ConnectionLock, sync_actions
    from edge.sync.mqtt import credentials
    from edge.sync.runner import check_store_user

    check_store_user(credentials(config.mqtt).username, [store_id])  # before connecting, naming both
    lock = ConnectionLock.try_acquire(args.db)
    if lock is None:
        print(
            f"adamm action {args.action_command}: the store's sync worker is running; it sends the outbox",
            file=sys.stderr,
        )
        return "worker", None
    with lock:
        report = sync_actions(store, store_id, args.broker, config, listen_s=listen_s)
    return "direct", report


def run_sync(args: argparse.Namespace) -> int:
    from edge.cli._common import open_existing_store
    from edge.config import load_config
    from edge.sync.mqtt import parse_broker_url

    parse_broker_url(args.broker)
    if args.listen < 0:
        raise UsageError("--listen must not be negative")
    config = load_config(args.config)
    store = open_existing_store(args.db, config, readonly=False)
    try:
        via, report = _deliver(store, _store_id(store, config), args, config, listen_s=args.listen)
    finally:
        store.close()
    out: dict[str, Any] = {"via": via}
    if report is not None:
        out |= {"sent": report.sent, "expired": report.expired, "acks": report.acks}
    if args.json:
        json.dump(out, sys.stdout, ensure_ascii=False)
        sys.stdout.write("\n")
    elif report is not None:
        print(
            f"sent {len(report.sent)}, expired {len(report.expired)}, "
            f"acks recorded {report.acks.get('recorded', 0)}"
        )
    return 0
