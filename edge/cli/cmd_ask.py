"""``adamm ask``: answer a Chinese or English question from a store's memory.

Answers through the ask use case (:class:`edge.services.ask.AskService`: the rule parser, or the
LLM backend when the config enables it, and the engine with ``[analysis]``), prints the payload (``--json``) or a readable answer
(:func:`edge.presentation.payload_text`). Asking never writes to the memory's data (no facts,
actions, procedures or outcomes, CONTRACT.md section 1); only derived caches (the hourly rollup,
the parser vocabulary, the text-vector cache) are brought up to date, and only when the memory
and its folder are writable (a read-only copy is opened read-only and computes them for the run).
Stored values are matched by similarity through the memory's text-vector cache
(:meth:`edge.memory.store.Store.embed_texts_cached`), so the text encoder loads only for phrases
no earlier question had. Called by the ``adamm`` dispatcher in :mod:`edge.cli`.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Any

from edge.errors import UsageError

logger = logging.getLogger(__name__)


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "ask",
        help="answer a question (zh/en) with evidence and confidence",
        description="Answer a question in Chinese or English from the store's memory (CONTRACT.md).",
    )
    p.add_argument("--db", required=True, metavar="PATH", help="the store database (must exist)")
    p.add_argument(
        "--now", metavar="ISO", help="reference time for relative expressions (default: the clock)"
    )
    p.add_argument("--json", action="store_true", help="print the payload (payload.schema.json) on stdout")
    p.add_argument("--config", metavar="FILE", help="TOML config file (else $ADAMM_CONFIG, else defaults)")
    p.add_argument("question", nargs="+", metavar="QUESTION", help="the question")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from edge.cli._common import open_existing_store
    from edge.config import load_config, parse_now
    from edge.presentation import payload_text
    from edge.services.ask import AskService

    question = " ".join(args.question).strip()
    if not question:
        raise UsageError("the question is empty")
    now = parse_now(args.now)
    config = load_config(args.config)
    store = open_existing_store(args.db, config, readonly=None)
    try:
        payload = AskService(store, config, now=now).ask(question)
    finally:
        store.close()
    if args.json:
        json.dump(payload, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(payload_text(payload) + "\n")
    return 0
