"""``adamm maintain --db PATH [--now ISO] [--json] [--config FILE]``: move aged data down the tiers.

Thin over :func:`edge.services.maintain.maintain` (CONTRACT.md sections 1 and 6): the warm step
(quantized vectors, media moved to ``[tiers] warm_media_dir``, events archived) and the cold step
(days closed in the rollup, their events deleted from the events tables, kept in the archive).
Safe to interrupt at any point; run it again to finish. ``--json`` prints the report on stdout;
otherwise one summary line goes to stdout. Called by the ``adamm`` dispatcher in :mod:`edge.cli`.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Any

logger = logging.getLogger(__name__)


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "maintain",
        help="move aged data down the tiers (hot -> warm -> cold archive); safe to interrupt",
        description=(
            "Move aged data down the tiers ([tiers] in the config): events older than warm_after_days "
            "get int8 vectors and their media moved; days older than cold_after_days are closed in the "
            "rollup and their events moved to the compressed archive beside the database. Safe to "
            "interrupt at any point: run it again to finish."
        ),
    )
    p.add_argument("--db", required=True, metavar="PATH", help="the memory database file (must exist)")
    p.add_argument("--now", metavar="ISO", help="the time ages count from (default: the clock)")
    p.add_argument("--json", action="store_true", help="print the report as JSON on stdout")
    p.add_argument("--config", metavar="FILE", help="TOML config file (else $ADAMM_CONFIG, else defaults)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from edge.cli._common import open_existing_store
    from edge.config import load_config, parse_now
    from edge.services.maintain import maintain

    now = parse_now(args.now)
    config = load_config(args.config)
    store = open_existing_store(args.db, config, readonly=False)
    try:
        report = maintain(store, config, now)
    finally:
        store.close()
    if args.json:
        json.dump(report, sys.stdout, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        tiers = report.get("tiers", {})
        ev = tiers.get("events", {})
        warm, cold = tiers.get("warm", {}), tiers.get("cold", {})
        print(
            f"{args.db}: {warm.get('events', 0)} events to warm, {cold.get('events', 0)} to cold "
            f"({cold.get('days_closed', 0)} days closed); now hot {ev.get('hot', 0)}, warm {ev.get('warm', 0)}, "
            f"cold {ev.get('cold', 0)}"
        )
        if warm.get("media_missing"):
            print(
                f"adamm maintain: {warm['media_missing']} media files were not found (references kept as they were)",
                file=sys.stderr,
            )
    return 0
