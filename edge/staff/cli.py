"""``adamm-staff --store ID --role ROLE --broker URL [--ack STATE] [--once] [--json]``.

The reference client of a staff device (CONTRACT.md sections 1 and 5). Subscribes to
``adamm/v1/{store}/action/{role}/#`` (one retained topic per open action, so a device that
connects for the first time gets every open action of its role at once; an empty retained
message is an action its issuer cleared when it ended) with a persistent session (MQTT 5, or 3.1.1 where the broker
speaks only that: :mod:`edge.sync.mqtt`; client id
``adamm-staff-{store}-{role}`` unless ``--client-id``; a broker written by ``adamm-hub
broker-setup`` uses the user name), so actions sent while the device was offline arrive when it
connects. Each new action is shown once (one JSON line on stdout with ``--json``: the action's
fields plus ``store_id``, ``role`` and ``expires_at``), de-duplicated by ``action_id`` through the
state file (:mod:`edge.staff.state`); an action past its expiry (``params.expires_at``, else the
``expires_at`` user property) is not shown: over MQTT 3.1.1 the broker cannot drop it, the device does. ``--ack STATE``
acknowledges each one on ``adamm/v1/{store}/ack/{action_id}`` with ``{"by", "at", "state"}``;
without it, the terminal asks (``a`` accept, ``d`` done, ``r`` reject, ``s`` skip; prompts on
stderr). ``--once``: exit after the first new action. Credentials from ``$ADAMM_MQTT_USERNAME`` /
``$ADAMM_MQTT_PASSWORD`` / ``$ADAMM_MQTT_CA`` or the ``[mqtt]`` section of ``--config``, never
the command line; refused credentials exit 3 at once.
"""

from __future__ import annotations

import argparse
import json
import logging
import queue
import socket
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from edge import __version__
from edge.cliargs import SuggestingParser
from edge.errors import AdammError, UsageError

logger = logging.getLogger(__name__)

KEYS = {"a": "accepted", "d": "done", "r": "rejected"}


def build_parser() -> argparse.ArgumentParser:
    p = SuggestingParser(
        prog="adamm-staff",
        description="Receive a store's actions for one role and acknowledge them (the staff device client).",
    )
    p.add_argument("--version", action="version", version=f"adamm-staff {__version__}")
    p.add_argument("--store", required=True, metavar="ID", help="the store id")
    p.add_argument("--role", required=True, help="this device's role (cashier, cleaner, ...)")
    p.add_argument("--broker", required=True, metavar="URL", help="mqtt://HOST:PORT or mqtts://HOST:PORT")
    p.add_argument(
        "--ack",
        choices=("accepted", "done", "rejected"),
        help="acknowledge every action with this state automatically (else ask on the terminal)",
    )
    p.add_argument("--once", action="store_true", help="exit after the first new action")
    p.add_argument("--json", action="store_true", help="one JSON line per action on stdout")
    p.add_argument(
        "--state",
        metavar="FILE",
        help="the de-duplication state file (default $XDG_STATE_HOME/adamm/staff-STORE-ROLE.json)",
    )
    p.add_argument("--by", metavar="NAME", help="who acknowledges (default: the MQTT user, else ROLE@HOST)")
    p.add_argument("--client-id", metavar="ID", help="MQTT client id (default adamm-staff-STORE-ROLE)")
    p.add_argument("--config", metavar="FILE", help="TOML config file with [mqtt] (else $ADAMM_CONFIG)")
    p.add_argument("-v", "--verbose", action="count", default=0, help="more log output on stderr")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    level = logging.WARNING if args.verbose <= 0 else logging.INFO if args.verbose == 1 else logging.DEBUG
    logging.basicConfig(level=level, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    try:
        return run(args, sys.stdin, sys.stdout)
    except AdammError as exc:
        print(f"adamm-staff: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("adamm-staff: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _expired(expires_at: str | None) -> bool:
    if not expires_at:
        return False
    try:
        t = datetime.fromisoformat(expires_at.replace("Z", "+00:00"))
    except ValueError:
        return False
    return (t if t.tzinfo else t.replace(tzinfo=UTC)) <= datetime.now(UTC)


def _show_text(a: dict[str, Any], out: TextIO) -> None:
    title = a["params"].get("title") or a["params"].get("rule") or a["type"]
    out.write(f"\n[{a['type']}] {title}\n  {a['summary']}\n")
    out.write(f"  confidence {a['confidence']:.2f}, evidence {len(a['evidence'])} events")
    out.write(f", issued {a['issued_at']}, expires {a['expires_at'] or '-'}\n  id {a['action_id']}\n")
    out.flush()


def _ask(stdin: TextIO, accepted: bool) -> str | None:
    """The manager's key: an ack state, ``skip``, or None at the end of input."""
    while True:
        choices = "[d]one [r]eject [s]kip" if accepted else "[a]ccept [d]one [r]eject [s]kip"
        print(f"{choices} > ", end="", file=sys.stderr, flush=True)
        line = stdin.readline()
        if not line:
            return None
        key = line.strip().lower()[:1]
        if key == "s":
            return "skip"
        if key in KEYS and not (accepted and key == "a"):
            return KEYS[key]
        print("  type a, d, r or s and Enter", file=sys.stderr)


def run(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> int:
    from edge.config import load_config
    from edge.staff.state import StaffState, default_path
    from edge.sync import messages
    from edge.sync.mqtt import Message, connect, link_settings, parse_broker_url

    for name, value in (("--store", args.store), ("--role", args.role)):
        if not messages.valid_topic_level(value):
            raise UsageError(f"{name} {value!r} is not usable: letters, digits, _ . : - only")
    address = parse_broker_url(args.broker)
    config = load_config(args.config)
    settings = link_settings(address, config.mqtt)
    creds = settings.credentials
    state = StaffState(Path(args.state) if args.state else default_path(args.store, args.role))
    by = args.by or creds.username or f"{args.role}@{socket.gethostname()}"
    topic = messages.action_filter(args.store, args.role)
    inbox: queue.Queue[tuple[str, bytes, dict[str, str]]] = queue.Queue()

    def on_message(msg: Message) -> bool:
        found = messages.topic_action(msg.topic)
        if found is not None and found[:2] == (args.store, args.role):
            if msg.payload:  # empty: the issuer cleared an action that ended
                inbox.put((found[2], msg.payload, msg.user_properties))
        else:  # the user's session also holds another role's subscription: not for this device
            logger.info("dropping a message on %s (this device is %s)", msg.topic, topic)
        return True

    link = connect(
        settings,
        args.client_id or f"adamm-staff-{args.store}-{args.role}",
        subscriptions=[(topic, 1)],
        on_message=on_message,
        manual_ack=True,
    )
    try:
        link.wait_subscribed(15.0)
    except BaseException:
        link.close()
        raise
    logger.info("listening on %s", topic)

    def ack(action_id: str, ack_state: str, at: str) -> None:
        link.publish_wait(messages.ack_topic(args.store, action_id), messages.ack_payload(by, at, ack_state))

    try:
        while True:
            try:
                topic_id, payload, props = inbox.get(timeout=0.5)
            except queue.Empty:
                if link.fatal is not None:
                    raise link.fatal from None
                continue
            try:
                action = messages.parse_action(payload)
            except messages.MessageError as exc:
                logger.warning("ignoring a message on %s: %s", topic, exc)
                continue
            if action.action_id != topic_id:
                logger.warning("ignoring action %s: it came on the topic of %s", action.action_id, topic_id)
                continue
            # the payload's params.expires_at (it survives MQTT 3.1.1, where the broker cannot drop an
            # expired action), else the MQTT 5 user property of an earlier issuer
            expires_at = action.expires_at or props.get(messages.EXPIRES_AT_PROPERTY)
            seen = state.get(action.action_id)
            if seen is not None:  # a re-send: not shown again; its ack again, if it had one
                if seen.get("ack"):
                    ack(action.action_id, seen["ack"], seen["at"])
                continue
            if _expired(expires_at):
                logger.info("action %s expired before it arrived; not shown", action.action_id)
                continue
            shown = {
                **action.to_message(),
                "store_id": args.store,
                "role": args.role,
                "expires_at": expires_at,
            }
            state.shown(action.action_id, _now())
            if args.json:
                stdout.write(json.dumps(shown, ensure_ascii=False) + "\n")
                stdout.flush()
            else:
                _show_text(shown, stdout)
            # the ack is recorded before it is published: if publishing fails (the process exits 3),
            # the issuer's re-send finds it in the state file and the device sends it again
            if args.ack:
                at = _now()
                state.acked(action.action_id, args.ack, by, at)
                ack(action.action_id, args.ack, at)
            else:
                accepted = False
                while True:
                    choice = _ask(stdin, accepted)
                    if choice is None:
                        return 0
                    if choice == "skip":
                        break
                    at = _now()
                    state.acked(action.action_id, choice, by, at)
                    ack(action.action_id, choice, at)
                    if choice != "accepted" or args.once:
                        break
                    accepted = True
            if args.once:
                return 0
    finally:
        link.close()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
