"""``adamm procedures``: list the analysis operators held in the store's procedural memory.

Registers the built-in operators (upsert) and prints them, as JSON with ``--json``. Called by the
``adamm`` dispatcher in :mod:`edge.cli`.
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
        "procedures",
        help="list the analysis operators (procedural memory) of a store",
        description="Register the built-in analysis operators in the store and list them.",
    )
    p.add_argument("--db", required=True, metavar="PATH", help="the store database (must exist)")
    p.add_argument("--json", action="store_true", help='print {"procedures": [...]} on stdout')
    p.add_argument("--config", metavar="FILE", help="TOML config file (else $ADAMM_CONFIG, else defaults)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from edge.cli._common import open_existing_store
    from edge.config import load_config
    from edge.memory.semantic.procedures import list_procedures, sync_procedures

    config = load_config(args.config)
    store = open_existing_store(args.db, config, readonly=None)
    try:
        sync_procedures(store)
        procs = list_procedures(store)
    finally:
        store.close()
    if args.json:
        json.dump({"procedures": procs}, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
        return 0
    for p in procs:
        sys.stdout.write(f"{p['name']:<14} v{p['version']:<5} {p['intent']:<14} {p['description']}\n")
        if p["min_evidence"]:
            me = ", ".join(f"{k}: {v}" for k, v in p["min_evidence"].items())
            sys.stdout.write(f"{'':<14} min evidence: {me}\n")
    return 0
