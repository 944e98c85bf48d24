"""``adamm tune``: fit the hybrid score's alpha/beta on labelled queries and save them to config.

Thin over :mod:`edge.memory.search.tune`: prints the grid table (or JSON) and writes the best weights to
the ``[retrieval]`` section of the config file. Called by the ``adamm`` dispatcher.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from typing import Any

logger = logging.getLogger(__name__)

EPILOG = """\
labels file (JSON Lines, one labelled query per line):
  {"query": "顾客在收银台吵架",
   "filters": {"where": {"zone": "checkout"}, "type": ["complaint"], "since": "2025-11-01",
               "until": "2025-12-01", "store": ["s1"], "prefer": {"weather": "rain"},
               "near": "2025-11-20T18:00:00+08:00"},
   "relevant": ["evt-001", "evt-042"]}
  filters keys are those of `adamm search`, all optional: where/prefer as an object (a list value
  means any of them) or a list of "KEY=VALUE" strings; type/store a string or a list; times RFC 3339
  with an offset or a date (store-local midnight). relevant: event_ids, binary relevance.

what it does:
  For alpha = 0.0, 0.1, ..., 1.0 and beta = 1 - alpha (only the ratio changes a ranking) it ranks
  every query's survivors by alpha*cosine + beta*attr_match, scores mean nDCG@10 and writes the best
  alpha/beta to [retrieval] in the config file (created if missing; other content kept). On a tie
  the configured weights stay. attr_match only varies with "prefer"/"near", so labels without them
  cannot separate the weightings.
"""


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "tune",
        help="fit search's alpha/beta on labelled queries (nDCG@10) and write them to config",
        description="Grid-search the hybrid score weights on labelled queries and save the best.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--db", required=True, metavar="PATH", help="the store database (must exist)")
    p.add_argument("--labels", required=True, metavar="FILE", help="labelled queries, JSON Lines (see below)")
    p.add_argument(
        "--config",
        metavar="FILE",
        help="TOML config to read and update (else $ADAMM_CONFIG); created when missing",
    )
    p.add_argument("--json", action="store_true", help="print the grid and the winner as JSON on stdout")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from edge.cli._common import open_existing_store
    from edge.cli._labels import read_labels
    from edge.config import AdammConfig, load_config
    from edge.errors import UsageError
    from edge.memory.search.retrieval import store_timezone
    from edge.memory.search.tune import grid_search, write_retrieval_weights

    target = args.config or os.environ.get("ADAMM_CONFIG")
    if not target:
        raise UsageError("say where to write the weights: --config FILE (or set ADAMM_CONFIG)")
    config = load_config(target) if Path(target).exists() else AdammConfig()
    store = open_existing_store(args.db, config)
    try:
        result = grid_search(store, read_labels(args.labels, store_timezone(store)))
    finally:
        store.close()
    for msg in result.skipped:
        print(f"adamm tune: {msg}", file=sys.stderr)
    if result.queries == 0:
        raise UsageError("no labelled query has a relevant event in this memory; nothing to tune")
    alpha, beta, _ = result.best
    write_retrieval_weights(target, alpha, beta)
    if args.json:
        json.dump({**result.as_json(), "written_to": str(target)}, sys.stdout)
        sys.stdout.write("\n")
        return 0
    print(f"{'alpha':>5} {'beta':>5} {'nDCG@10':>8}")
    for a, b, n in result.rows:
        mark = "  <- best" if (a, b) == (alpha, beta) else ""
        mark += "  (current)" if (a, b) == result.current[:2] else ""
        print(f"{a:5.1f} {b:5.1f} {n:8.4f}{mark}")
    if result.current[:2] not in {(a, b) for a, b, _ in result.rows}:
        print(f"current alpha={result.current[0]} beta={result.current[1]}: nDCG@10 {result.current[2]:.4f}")
    print(f"{result.queries} queries; wrote alpha={alpha} beta={beta} to {target}")
    return 0
