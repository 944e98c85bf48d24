"""``adamm check --db PATH [--quick] [--json]``: integrity check of a memory (CONTRACT.md section 1).

Thin over :func:`edge.memory.integrity.check_memory` (read-only: the memory is never changed).
Prints one line per problem on stdout (``--json``: ``{"db", "ok", "checks", "problems":
[{"check", "message"}]}``); exit 0 when the memory is sound, 3 when anything is wrong.
Called by the ``adamm`` dispatcher in :mod:`edge.cli`.
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
        "check",
        help="check a memory's integrity (SQLite pages, vectors, tiers, derived caches)",
        description=(
            "Check a memory without changing it: SQLite's integrity check, foreign keys, that vectors "
            "are well formed, the tiers, and that the hourly rollup and the other caches agree with the "
            "events. One line per problem; exit 0 when sound, 3 otherwise."
        ),
    )
    p.add_argument("--db", required=True, metavar="PATH", help="the memory database file")
    p.add_argument("--quick", action="store_true", help="SQLite's quick_check instead of integrity_check")
    p.add_argument("--json", action="store_true", help="print the report as JSON on stdout")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from edge.memory.integrity import check_memory

    report = check_memory(args.db, quick=args.quick)
    if args.json:
        json.dump(report.as_json(), sys.stdout, ensure_ascii=False)
        sys.stdout.write("\n")
    elif report.ok:
        print(f"{args.db}: sound ({', '.join(report.checks)} checked)")
    else:
        for p in report.problems:
            print(f"{p.check}: {p.message}")
    if not report.ok:
        print(f"adamm check: {args.db}: {len(report.problems)} problems found", file=sys.stderr)
        return 3
    return 0
