"""``adamm restore --db PATH [--json] [--config FILE] [--day DATE...] EVENT_ID...``: archived events back.

Thin over :func:`edge.memory.tiers.restore.restore` (CONTRACT.md sections 1 and 6): each event is
read from the archive, put back into the hot tier (the rollup keeps counting it once), and with
``--json`` printed as MEV JSON Lines exactly as imported on stdout (else one line per event). An id
that is not archived is reported on stderr (one line each) and the exit code is 1; the others are
still restored. ``--day DATE`` (store-local, repeatable, or ``FROM..TO``) restores every event of
those days that is only in the archive (what a cold answer that cannot be given from the rollup
names). Called by the ``adamm`` dispatcher in :mod:`edge.cli`.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from datetime import date
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
    p.add_argument(
        "--day",
        action="append",
        default=[],
        metavar="DATE",
        help="also restore every archived event of this store-local day (YYYY-MM-DD, or FROM..TO); repeatable",
    )
    p.add_argument("event_ids", nargs="*", metavar="EVENT_ID", help="ids of archived events")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from edge.cli._common import open_existing_store
    from edge.config import load_config
    from edge.memory.tiers.check import archive_folder_of
    from edge.memory.tiers.restore import restore
    from edge.memory.tiers.steps import Places

    try:
        days = [_day_range(d) for d in args.day]
    except ValueError as exc:
        print(f"adamm restore: --day: {exc}", file=sys.stderr)
        return 2
    if not days and not args.event_ids:
        print("adamm restore: name EVENT_IDs or --day DATE", file=sys.stderr)
        return 2
    config = load_config(args.config)
    store = open_existing_store(args.db, config, readonly=False)
    try:
        places = Places.of(store.path, config.tiers)
        with store.read() as conn:
            folder = archive_folder_of(conn, store.path)
        places = Places(places.db, folder, places.warm_media)
        with store.read() as conn:
            wanted = list(args.event_ids) + _archived_only(conn, days)
        result = store.writer.submit(lambda conn: restore(conn, places, wanted)).result()
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
        where = f"argument {_position(args.event_ids, eid)}: " if eid in args.event_ids else ""
        print(f"adamm restore: {where}{eid}: {why}", file=sys.stderr)
    return 1 if result.missing else 0


def _day_range(text: str) -> tuple[str, str]:
    """``YYYY-MM-DD`` or ``FROM..TO`` -> (first, last) store-local dates, checked."""
    lo, _, hi = text.partition("..")
    first, last = date.fromisoformat(lo.strip()), date.fromisoformat((hi or lo).strip())
    if last < first:
        raise ValueError(f"{text}: the range ends before it starts")
    return first.isoformat(), last.isoformat()


def _archived_only(conn: Any, days: list[tuple[str, str]]) -> list[str]:
    """The ids of the events of these store-local days that are only in the archive, in time order."""
    out: list[str] = []
    for lo, hi in days:
        out.extend(
            str(eid)
            for (eid,) in conn.execute(
                "SELECT a.event_id FROM archive_index AS a WHERE a.local_date BETWEEN ? AND ? AND NOT EXISTS "
                "(SELECT 1 FROM events AS e WHERE e.event_id = a.event_id) ORDER BY a.ts, a.event_id",
                (lo, hi),
            )
        )
    return list(dict.fromkeys(out))


def _position(ids: list[str], eid: str) -> int:
    """1-based position of ``eid`` among the arguments (the 'line number' of a reject)."""
    return ids.index(eid) + 1
