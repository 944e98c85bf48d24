"""The ``adamm-hub`` command line (thin): parses flags, sets up logging to stderr, maps errors to
exit codes (CONTRACT.md section 1: 2 usage, 3 environment) and calls :mod:`hub.serve`,
:mod:`hub.status`, :mod:`hub.ask` and :mod:`hub.console`. ``--json`` output goes to stdout and nothing else does."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from typing import Any

from edge.cliargs import SuggestingParser
from edge.config.hub import HubConfig
from edge.errors import AdammError

HUB_COMMANDS = ("serve", "ask", "console", "status", "facts", "broker-setup", "demo")
#: commands of CONTRACT.md not built yet (they say so and exit 3)
NOT_BUILT: tuple[str, ...] = ()

logger = logging.getLogger("hub")


def _config(path: str | None) -> HubConfig:
    if not path:
        return HubConfig()
    from edge.config.load import load_config

    return load_config(path, HubConfig)


def build_parser() -> argparse.ArgumentParser:
    parser = SuggestingParser(
        prog="adamm-hub",
        description="adamm hub: receives store summaries over MQTT, answers cross-store questions.",
    )
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="more logging on stderr (-vv: debug)"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    p = sub.add_parser("serve", help="receive store summaries over MQTT and store them (idempotent)")
    p.add_argument("--db", required=True, help="hub store: a SQLite file path, or a postgresql:// URL")
    p.add_argument("--broker", required=True, help="mqtt://HOST:PORT or mqtts://HOST:PORT")
    p.add_argument(
        "--worker",
        type=int,
        default=1,
        help="this worker's number (client id adamm-hub-N; give each PostgreSQL worker its own, the same after a restart)",
    )
    p.add_argument("--config", help="TOML config ([mqtt] credentials and session, [analysis])")
    p = sub.add_parser(
        "status", help="stores known to the hub: last status, summaries received, parked messages"
    )
    p.add_argument("--db", required=True, help="hub store: a SQLite file path, or a postgresql:// URL")
    p.add_argument("--json", action="store_true", help="print JSON on stdout")
    p = sub.add_parser(
        "ask", help="answer a cross-store question (Chinese or English) from the stores' summaries"
    )
    p.add_argument("--db", required=True, help="hub store: a SQLite file path, or a postgresql:// URL")
    p.add_argument("--now", help="ISO time relative times count back from (default: the clock)")
    p.add_argument("--json", action="store_true", help="print the payload (payload.schema.json) on stdout")
    p.add_argument("--config", help="TOML config ([analysis])")
    p.add_argument("question", nargs="+", help="the question")
    p = sub.add_parser(
        "facts",
        help="every store's facts, and each kind of fact tested in every store (holds, reversed, pooled)",
    )
    p.add_argument("--db", required=True, help="hub store: a SQLite file path, or a postgresql:// URL")
    p.add_argument("--all", action="store_true", help="also the facts that no longer hold")
    p.add_argument("--json", action="store_true", help="print JSON on stdout")
    p.add_argument("--now", help="reference time (ISO) for the tests (default: the clock)")
    p.add_argument("--lang", choices=("zh", "en"), help="the text's language (default: the locale)")
    p.add_argument("--config", help="TOML config ([analysis])")
    p = sub.add_parser(
        "console",
        help="the HQ analyst's terminal app: stores, cross-store questions, facts, actions to a store's role",
    )
    p.add_argument("--db", required=True, help="hub store: a SQLite file path, or a postgresql:// URL")
    p.add_argument("--config", help="TOML config ([analysis], [actions] default_expires_in)")
    p.add_argument(
        "--lang", choices=("zh", "en"), help="the app's language (default: the locale, else the stores' zone)"
    )
    p.add_argument(
        "--now", help="reference time (ISO) for relative times such as 'last month' (default: the clock)"
    )
    p = sub.add_parser(
        "broker-setup",
        help="write a locked-down Mosquitto set-up (TLS, per-store users, the ACL, credentials files)",
    )
    p.add_argument(
        "--dir", required=True, help="folder to write (created; rerun to add stores, keeping credentials)"
    )
    p.add_argument("--stores", required=True, help="store ids, comma-separated (sh_01,sh_02)")
    p.add_argument(
        "--port", type=int, help="the TLS listener's port (default 8883; a rerun keeps the set-up's)"
    )
    p.add_argument(
        "--staff-devices", type=int, default=0, help="also staff-ID-1..N per store (several devices at once)"
    )
    p.add_argument(
        "--hub-workers",
        type=int,
        default=1,
        help="also hub-2..N users (one per extra adamm-hub serve worker)",
    )
    p.add_argument(
        "--hostname",
        action="append",
        help="a name the server certificate must be valid for (repeatable; default: localhost and this host's names)",
    )
    p.add_argument(
        "--bind",
        metavar="ADDRESS",
        help="the IP address the listener listens on (default: every interface; a rerun keeps the set-up's)",
    )
    p.add_argument("--json", action="store_true", help="print what was written as JSON on stdout")
    p = sub.add_parser(
        "demo",
        help="a working fleet on this machine: simulated stores, a locked-down broker, the hub filled",
        description=(
            "N simulated stores that differ (cities, zones, weather, planted effects), a locked-down "
            "broker from broker-setup on a free loopback port, every store imported, maintained and "
            "synced through adamm import/maintain/sync, the hub filled through adamm-hub serve; prints "
            "the commands to ask and to open the console, then stops what it started unless --keep. "
            "Needs mosquitto; no network beyond loopback."
        ),
    )
    p.add_argument(
        "--dir", required=True, help="folder for the fleet (hub.db, stores/, broker/, logs/); new or empty"
    )
    p.add_argument("--stores", type=int, default=3, help="simulated stores (default 3)")
    p.add_argument("--days", type=int, default=92, help="days simulated per store (default 92, at least 14)")
    p.add_argument(
        "--keep",
        action="store_true",
        help="leave the broker and adamm-hub serve running (prints how to stop them)",
    )
    for name in NOT_BUILT:
        sub.add_parser(name, help=f"{name} (not built yet: see the hub issue)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    level = logging.INFO if args.verbose <= 1 else logging.DEBUG
    if args.command != "serve" and args.verbose == 0:
        level = logging.WARNING
    logging.basicConfig(
        level=level, stream=sys.stderr, format="adamm-hub: %(levelname)s %(name)s: %(message)s"
    )
    if not args.command:
        parser.print_help(sys.stderr)
        return 2
    if args.command in NOT_BUILT:
        print(f"adamm-hub {args.command}: not built yet in this version", file=sys.stderr)
        return 3
    try:
        return _run(args)
    except AdammError as exc:
        print(f"adamm-hub {args.command}: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130


def hub_zone() -> str | None:
    """The hub machine's own IANA zone (:func:`edge.presentation.format.machine_zone`)."""
    from edge.presentation.format import machine_zone

    return machine_zone()


def _for_people(status: dict[str, Any]) -> dict[str, Any]:
    """``adamm-hub status`` for a terminal: a store's times in its own zone, the hub's (parked
    messages) in the hub's zone, each with the zone said; ``--json`` keeps ISO 8601."""
    from edge.presentation.format import zoned_time

    out = json.loads(json.dumps(status))
    for s in out["stores"]:
        for key in ("status_at", "status_received_at", "last_summary_at"):
            if s.get(key):
                s[key] = zoned_time(s[key], s.get("tz"))
    zone = hub_zone()
    for p in out["parked"]["latest"]:
        if p.get("received_at"):
            p["received_at"] = zoned_time(p["received_at"], zone)
    for c in out.get("components", []):  # the serve workers' parts, in the hub's zone
        for key in ("since", "at"):
            if c.get(key):
                c[key] = zoned_time(c[key], zone)
    return out


def _run(args: Any) -> int:
    if args.command == "serve":
        if args.worker < 1:
            from edge.errors import UsageError

            raise UsageError(f"--worker {args.worker}: give a number from 1")
        from hub.serve import serve

        return serve(args.db, args.broker, worker=args.worker, config=_config(args.config))
    if args.command == "status":
        from hub.db import open_hub
        from hub.status import hub_status, render, status_json

        db = open_hub(args.db)
        try:
            st = status_json(db) if args.json else hub_status(db)
        finally:
            db.close()
        if args.json:
            print(json.dumps(st, ensure_ascii=False, indent=2))
        else:
            print(render(_for_people(st)))
        return 0
    if args.command == "ask":
        from edge.config import parse_now
        from edge.presentation import payload_text
        from hub.ask import ask

        payload = ask(args.db, " ".join(args.question), now=parse_now(args.now), config=_config(args.config))
        if args.json:
            json.dump(payload, sys.stdout, ensure_ascii=False, indent=2)
            sys.stdout.write("\n")
        else:
            sys.stdout.write(payload_text(payload) + "\n")
        return 0
    if args.command == "facts":
        from datetime import UTC, datetime

        from edge.config import parse_now
        from edge.presentation.labels import default_lang
        from hub.db import open_hub
        from hub.fleet import fleet_check, store_facts
        from hub.fleet import render as render_facts

        db = open_hub(args.db)
        try:
            now = parse_now(args.now) or datetime.now(UTC)
            result = fleet_check(db, now=now, config=_config(args.config).analysis)
            if args.all:
                result["facts"] = store_facts(db, include_closed=True)
        finally:
            db.close()
        if args.json:
            print(json.dumps(result, ensure_ascii=False, indent=2, default=str))
        else:
            print(render_facts(result, args.lang or default_lang()))
        return 0
    if args.command == "console":
        from edge.config import parse_now
        from hub.console.app import run_console

        return run_console(args.db, _config(args.config), args.lang, now=parse_now(args.now))
    if args.command == "broker-setup":
        from pathlib import Path

        from hub.broker_reload import reload
        from hub.broker_setup import broker_setup

        stores = [s.strip() for s in args.stores.split(",") if s.strip()]
        hostnames = (["localhost", *args.hostname]) if args.hostname else None
        done = broker_setup(
            Path(args.dir),
            stores,
            port=args.port,
            staff_devices=args.staff_devices,
            hub_workers=args.hub_workers,
            hostnames=hostnames,
            bind=args.bind,
        )
        reloaded = reload(done.dir)  # a broker already running this set-up takes the new users now
        if args.json:
            print(
                json.dumps(
                    {
                        "dir": str(done.dir),
                        "port": done.port,
                        "users": list(done.users),
                        "added": list(done.added),
                        "reloaded": list(reloaded.reloaded),
                        "reload_command": reloaded.command,
                    }
                )
            )
        else:
            print(
                f"wrote {done.dir}: {len(done.users)} users ({len(done.added)} new); "
                + (reloaded.sentence() or f"run: mosquitto -c {done.dir / 'mosquitto.conf'}"),
                file=sys.stderr,
            )
        return 0
    if args.command == "demo":
        from pathlib import Path

        from hub.demo import DemoOptions, run_demo

        options = DemoOptions(Path(args.dir), stores=args.stores, keep=args.keep, days=args.days)
        return run_demo(options, out=sys.stdout, err=sys.stderr)
    raise AssertionError(args.command)
