"""``adamm tui --db PATH [--lang zh|en] [--now ISO]``: start the store manager's Textual app.

Registered by :mod:`edge.cli`; opens the store and runs :class:`edge.tui.app.AdammApp`.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from edge.errors import StoreError

logger = logging.getLogger(__name__)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("tui", help="the store manager's terminal app")
    p.add_argument("--db", required=True, help="path of the store's memory (SQLite)")
    p.add_argument(
        "--lang",
        choices=["zh", "en"],
        default=None,
        help="language of the whole app (default: the locale's, else zh for a store in a Chinese time zone, else en)",
    )
    p.add_argument("--now", default=None, help="reference time (ISO) for relative times such as 'last month'")
    p.add_argument("--out", default=None, help="folder Ctrl+S saves answers to (default: current folder)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    db = Path(args.db)
    if not db.exists():
        raise StoreError(f"database {db} not found; create it with adamm import or adamm demo")
    from edge.cli._common import parse_now
    from edge.memory.store import Store
    from edge.tui.app import AdammApp

    now = parse_now(args.now)
    out_dir = Path(args.out) if args.out else None
    store = Store.open(db)
    try:
        AdammApp(store, args.lang, now=now, out_dir=out_dir).run()  # None: the locale, else the store
    finally:
        store.close()
    return 0
