"""``adamm facts``: the store's semantic facts (CONTRACT.md section 6); current ones unless ``--all``.

Prints a readable table (validity, evidence count, confidence, the statement in the store
manager's language: the locale, else the store's time zone; a store column when the facts come
from several stores of one memory) or, with ``--json``, a JSON list of facts with exactly the
contract's fields. The readable output begins with the false discovery control of the last
maintain run (how many standing questions' tests it ran, how many passed; on stderr with
``--json``). ``--store ID`` lists one store's facts (an unknown id is an error that names
the memory's stores). Opens the memory read-only (a memory an older adamm
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
    p.add_argument(
        "--store",
        metavar="ID",
        help="only this store's facts (a memory of several stores; the table shows a store column "
        "when the facts it lists come from more than one)",
    )
    p.add_argument("--json", action="store_true", help="print a JSON list of facts on stdout")
    p.add_argument("--config", metavar="FILE", help="TOML config file (else $ADAMM_CONFIG, else defaults)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from edge.cli._common import open_existing_store
    from edge.config import load_config
    from edge.errors import UsageError
    from edge.memory.semantic.facts import fact_records, last_tests
    from edge.presentation.facts import facts_table, tests_line
    from edge.presentation.labels import ui_lang

    config = load_config(args.config)
    store = open_existing_store(args.db, config, readonly=True)
    try:
        with store.read() as conn:
            known = sorted(str(s) for (s,) in conn.execute("SELECT store_id FROM stores"))
            if args.store is not None and args.store not in known:
                raise UsageError(
                    f"the memory {args.db} holds no store {args.store!r}",
                    hint=f"its stores: {', '.join(known) or 'none yet'}",
                )
            records = fact_records(conn, current_only=not args.all, store_id=args.store)
            control = last_tests(conn)
        lang = ui_lang(None, store.timezone(args.store))
    finally:
        store.close()
    facts = [r.contract() for r in records]
    head = tests_line(control, lang) if control is not None else None
    if args.json:
        if head:
            sys.stderr.write(head + "\n")  # data on stdout stays the contract's list of facts
        json.dump(facts, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    else:
        stores = [r.store_id for r in records]
        several = len(set(stores)) > 1
        if head:
            sys.stdout.write(head + "\n\n")
        sys.stdout.write(facts_table(facts, lang, stores if several else None) + "\n")
    return 0
