"""``adamm restore --db PATH [--json] [--config FILE] EVENT_ID...``: archived events back.

Thin over :func:`edge.memory.tiers.restore.restore` (CONTRACT.md sections 1 and 6): each event is
read from the archive, put back into the hot tier (the rollup keeps counting it once), and with
``--json`` printed as MEV JSON Lines exactly as imported on stdout (else one line per event). An id
that is not archived is reported on stderr (one line each) and the exit code is 1; the others are
still restored. Called by the ``adamm`` dispatcher in :mod:`edge.cli`.
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
        "restore",
        help="bring archived events back from the cold archive (MEV JSON Lines with --json)",
        description=(
            "Bring archived events back from the cold archive into the hot tier. With --json, print "
            "them as MEV JSON Lines exactly as they were imported."
        ),
    )
    p.add_argument("--db", required=True, metavar="PATH", help="the memory database file (must exist)")
    p.add_argument("--json", action="store_true", help="print the events as MEV JSON Lines on stdout")
    p.add_argument("--config", metavar="FILE", help="TOML config file (else $ADAMM_CONFIG, else defaults)")
    p.add_argument("event_ids", nargs="+", metavar="EVENT_ID", help="ids of archived events")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from edge.cli._common import open_existing_store
    from edge.config import load_config
    from edge.memory.tiers.check import archive_folder_of
    from edge.memory.tiers.restore import restore
    from edge.memory.tiers.steps import Places

    config = load_config(args.config)
    store = open_existing_store(args.db, config, readonly=False)
    try:
        places = Places.of(store.path, config.tiers)
        with store.read() as conn:
            folder = archive_folder_of(conn, store.path)
        places = Places(places.db, folder, places.warm_media)
        result = store.writer.submit(lambda conn: restore(conn, places, list(args.event_ids))).result()
        from edge.memory.search import vector_index

        vector_index.invalidate(store)
    finally:
        store.close()
    for rec in result.records:
        if args.json:
            sys.stdout.write(json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n")
        else:
            print(f"restored {rec['event_id']} ({rec['event_type']}, {rec['timestamp']}) to the hot tier")
    for eid, why in result.missing:
        print(f"adamm restore: argument {_position(args.event_ids, eid)}: {eid}: {why}", file=sys.stderr)
    return 1 if result.missing else 0


def _position(ids: list[str], eid: str) -> int:
    """1-based position of ``eid`` among the arguments (the 'line number' of a reject)."""
    return ids.index(eid) + 1
