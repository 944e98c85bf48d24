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
        "--plain",
        action="store_true",
        help="lines on the terminal instead of the full-screen app (keys a, d, r, s and Enter)",
    )
    p.add_argument("--lang", choices=("zh", "en"), help="the language of the screen (default: the locale)")
    p.add_argument(
        "--state",
        metavar="FILE",
        help="the de-duplication state file (default $XDG_STATE_HOME/adamm/staff-STORE-ROLE.json)",
    )
    p.add_argument("--by", metavar="NAME", help="who acknowledges (default: the MQTT user, else ROLE@HOST)")
    p.add_argument(
        "--now",
        metavar="ISO",
        help="the time the acks say they were made (default: the clock); for back-filling and tests, "
        "as `adamm action send --now`",
    )
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


def _iso_arg(text: str) -> str:
    """``--now`` as the acks' UTC ISO time (a time without a zone is UTC)."""

    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(f"--now {text!r} is not an ISO 8601 time") from None
    return (t if t.tzinfo else t.replace(tzinfo=UTC)).astimezone(UTC).isoformat(timespec="seconds")


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


def _show_text(a: dict[str, Any], out: TextIO, lang: str | None = None) -> None:
    """An action as lines (the line mode): its title, summary wrapped at word boundaries, local
    times with the zone said, a short id."""
    from edge.staff.view import action_lines

    out.write("\n" + "\n".join(action_lines(a, _lang(lang))) + "\n")
    out.flush()


def _lang(lang: str | None) -> str:
    from edge.presentation.labels import ui_lang
    from edge.staff.view import local_zone

    return ui_lang(lang, local_zone())


def _ask(stdin: TextIO, accepted: bool, lang: str | None = None) -> str | None:
    """The manager's key: an ack state, ``skip``, or None at the end of input."""
    from edge.staff.view import st

    lang = _lang(lang)
    while True:
        choices = st("prompt.accepted" if accepted else "prompt", lang)
        print(f"{choices} > ", end="", file=sys.stderr, flush=True)
        line = stdin.readline()
        if not line:
            return None
        key = line.strip().lower()[:1]
        if key == "s":
            return "skip"
        if key in KEYS and not (accepted and key == "a"):
            return KEYS[key]
        print("  " + st("prompt.again", lang), file=sys.stderr)


class Device:
    """This device's link and memory: receives its role's new actions (each once, unexpired) and
    acknowledges them. Shared by the terminal app (:mod:`edge.staff.app`) and the line modes."""

    def __init__(self, args: argparse.Namespace) -> None:
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
        self.store, self.role = args.store, args.role
        self.state = StaffState(Path(args.state) if args.state else default_path(args.store, args.role))
        self.by = args.by or creds.username or f"{args.role}@{socket.gethostname()}"
        #: ``--now``: the time every ack says (back-filling), else the clock at the ack
        self.at: str | None = _iso_arg(args.now) if getattr(args, "now", None) else None
        self.topic = topic = messages.action_filter(args.store, args.role)
        self.inbox: queue.Queue[tuple[str, bytes, dict[str, str]]] = queue.Queue()

        def on_message(msg: Message) -> bool:
            found = messages.topic_action(msg.topic)
            if found is not None and found[:2] == (args.store, args.role):
                if msg.payload:  # empty: the issuer cleared an action that ended
                    self.inbox.put((found[2], msg.payload, msg.user_properties))
            else:  # the user's session also holds another role's subscription: not for this device
                logger.info("dropping a message on %s (this device is %s)", msg.topic, topic)
            return True

        self.link = connect(
            settings,
            args.client_id or f"adamm-staff-{args.store}-{args.role}",
            subscriptions=[(topic, 1)],
            on_message=on_message,
            manual_ack=True,
        )
        try:
            self.link.wait_subscribed(15.0)
        except BaseException:
            self.link.close()
            raise
        logger.info("listening on %s", topic)

    def next_action(self, timeout: float = 0.5) -> dict[str, Any] | None:
        """The next new action (recorded as shown), or None when none came within ``timeout``
        (a re-sent one is acknowledged again, not shown); raises the link's fatal error."""
        from edge.sync import messages

        try:
            topic_id, payload, props = self.inbox.get(timeout=timeout)
        except queue.Empty:
            if self.link.fatal is not None:
                raise self.link.fatal from None
            return None
        try:
            action = messages.parse_action(payload)
        except messages.MessageError as exc:
            logger.warning("ignoring a message on %s: %s", self.topic, exc)
            return None
        if action.action_id != topic_id:
            logger.warning("ignoring action %s: it came on the topic of %s", action.action_id, topic_id)
            return None
        # the payload's params.expires_at (it survives MQTT 3.1.1, where the broker cannot drop an
        # expired action), else the MQTT 5 user property of an earlier issuer
        expires_at = action.expires_at or props.get(messages.EXPIRES_AT_PROPERTY)
        seen = self.state.get(action.action_id)
        if seen is not None:  # a re-send: not shown again; its ack again, if it had one
            if seen.get("ack"):
                self._publish(action.action_id, seen["ack"], seen["at"])
            return None
        if _expired(expires_at):
            logger.info("action %s expired before it arrived; not shown", action.action_id)
            return None
        shown = {**action.to_message(), "store_id": self.store, "role": self.role, "expires_at": expires_at}
        self.state.shown(action.action_id, _now())
        return shown

    def ack(self, action_id: str, ack_state: str) -> str:
        """Acknowledge: recorded before it is published (if publishing fails, the issuer's
        re-send finds it in the state file and the device sends it again); returns its time."""
        at = self.at or _now()
        self.state.acked(action_id, ack_state, self.by, at)
        self._publish(action_id, ack_state, at)
        return at

    def _publish(self, action_id: str, ack_state: str, at: str) -> None:
        from edge.sync import messages

        self.link.publish_wait(
            messages.ack_topic(self.store, action_id), messages.ack_payload(self.by, at, ack_state)
        )

    def close(self) -> None:
        self.link.close()


def interactive(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> bool:
    """The terminal app runs when a person is at a terminal and no line mode was asked for
    (``--json``, ``--ack``, ``--plain``, or input or output not a terminal)."""
    if args.json or args.ack or args.plain:
        return False
    return bool(stdin.isatty() and stdout.isatty())


def run(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> int:
    device = Device(args)
    try:
        if interactive(args, stdin, stdout):
            from edge.staff.app import StaffApp

            app = StaffApp(device, lang=args.lang, once=args.once)
            app.run()
            if app.failure is not None:
                raise app.failure
            return 0
        while True:
            shown = device.next_action(0.5)
            if shown is None:
                continue
            if args.json:
                stdout.write(json.dumps(shown, ensure_ascii=False) + "\n")
                stdout.flush()
            else:
                _show_text(shown, stdout, args.lang)
            if args.ack:
                device.ack(shown["action_id"], args.ack)
            else:
                accepted = False
                while True:
                    choice = _ask(stdin, accepted, args.lang)
                    if choice is None:
                        return 0
                    if choice == "skip":
                        break
                    device.ack(shown["action_id"], choice)
                    if choice != "accepted" or args.once:
                        break
                    accepted = True
            if args.once:
                return 0
    finally:
        device.close()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
