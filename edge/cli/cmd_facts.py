"""``adamm facts``: the store's semantic facts (CONTRACT.md section 6); current ones unless ``--all``.

Prints a readable table (validity, evidence count, confidence, the statement in the store
manager's language: the locale, else the store's time zone) or, with ``--json``, a JSON list of
facts with exactly the contract's fields. Opens the memory read-only (a memory an older adamm
made, whose facts table predates the contract's shape, lists no facts). Facts are distilled by the facts step of maintenance (:mod:`edge.services.facts`).
Called by the ``adamm`` dispatcher in :mod:`edge.cli`.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "facts",
        help="list what the store has learned (semantic facts)",
        description="List the store's semantic facts (CONTRACT.md section 6): current ones unless --all.",
    )
    p.add_argument("--db", required=True, metavar="PATH", help="the store database (must exist)")
    p.add_argument("--all", action="store_true", help="also list facts that no longer hold (closed)")
    p.add_argument("--json", action="store_true", help="print a JSON list of facts on stdout")
    p.add_argument("--config", metavar="FILE", help="TOML config file (else $ADAMM_CONFIG, else defaults)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from edge.cli._common import open_existing_store
    from edge.config import load_config
    from edge.memory.semantic.facts import list_facts
    from edge.presentation.facts import facts_table
    from edge.presentation.labels import ui_lang

    config = load_config(args.config)
    store = open_existing_store(args.db, config, readonly=True)
    try:
        with store.read() as conn:
            facts = list_facts(conn, current_only=not args.all)
        lang = ui_lang(None, store.timezone())
    finally:
        store.close()
    if args.json:
        json.dump(facts, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(facts_table(facts, lang) + "\n")
    return 0
