"""``adamm search``: filter-first hybrid retrieval from the command line.

Thin: parses the flags into an EventFilter and soft preferences, calls
:func:`edge.memory.search.retrieval.hybrid_search`, prints JSON (CONTRACT.md) or a table. Search covers the hot and the warm tier; when
events of the searched time range exist only in the cold archive, a note on stderr says how many. Called by the
``adamm`` dispatcher in :mod:`edge.cli`.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Any

logger = logging.getLogger(__name__)

EPILOG = """\
ranking:
  Hard filters first (--type, --since, --until, --store, --where select the events in SQL), then the
  survivors are ranked by  score = alpha*cosine + beta*attr_match  (alpha/beta from [retrieval] in
  the config, defaults 0.6/0.4; `adamm tune` fits them).
  cosine      similarity of the event's text vector and TEXT (0 for events without a vector);
              with --image, of its CLIP image vector and TEXT's CLIP text vector
  attr_match  mean over the soft preferences: each --prefer KEY=VALUE scores 1 when the event's
              stats value equals it, else 0; --near T scores 0.5**(|t-T|/time_scale_hours).
              With no --prefer and no --near, attr_match is 0 and score = alpha*cosine.
  Without TEXT (empty string) events are ranked by attr_match, then newest first.

values:
  --where/--prefer values: numbers compare as numbers, true/false as booleans, anything else as
  text. Keys are stats keys (well known or not, e.g. zone, topic); repeating a --where key means
  any of the values. --since/--until take RFC 3339 with an offset (2025-11-01T09:00:00+08:00,
  ...Z) or a date (midnight in the store's time zone); the range is [since, until).

examples:
  adamm search --db store.db --type complaint --since 2025-11-01 --where zone=checkout "顾客在收银台吵架"
  adamm search --db store.db --prefer weather=rain --json "wet floor at the entrance"
"""


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "search",
        help="find events: hard filters first, then vector + attribute ranking",
        description="Hybrid retrieval over the memory: the attribute channel filters, the vector channel ranks.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--db", required=True, metavar="PATH", help="the store database (must exist)")
    p.add_argument(
        "--where",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="hard filter on a stats key (repeatable; AND across keys, OR within one key)",
    )
    p.add_argument(
        "--prefer",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="soft preference on a stats key: raises attr_match, filters nothing (repeatable)",
    )
    p.add_argument(
        "--near", metavar="ISO", help="soft preference for events close to this time (raises attr_match)"
    )
    p.add_argument(
        "--type", action="append", default=[], metavar="EVENT_TYPE", help="keep only these event types"
    )
    p.add_argument("--since", metavar="ISO", help="keep events at or after this time")
    p.add_argument("--until", metavar="ISO", help="keep events before this time")
    p.add_argument("--store", action="append", default=[], metavar="ID", help="keep only this store_id")
    p.add_argument("--k", type=int, default=None, metavar="N", help="results to return (config default 10)")
    p.add_argument("--json", action="store_true", help='print {"results": [...]} on stdout')
    p.add_argument("--config", metavar="FILE", help="TOML config file (else $ADAMM_CONFIG, else defaults)")
    p.add_argument(
        "--image",
        action="store_true",
        help="rank by the events' CLIP image vectors (embedding.image) instead of text vectors; TEXT is "
        "encoded by the CLIP text tower ([image_text] model_dir, else <models_dir>/clip_vit_b16)",
    )
    p.add_argument("text", metavar="TEXT", help="what to look for, in Chinese or English ('' for none)")
    p.set_defaults(func=run)


def _clip_query(config: Any, text: str) -> Any:
    """The CLIP text-tower vector of ``text`` (None for empty text), from the folder the daemon uses."""
    if not text.strip():
        return None
    from edge.encoders.clip import ClipEncoder

    image_text = getattr(config, "image_text", None)
    clip = ClipEncoder(
        model_dir=getattr(image_text, "model_dir", None),
        models_dir=getattr(config, "models_dir", None),
        providers=config.encoders.providers,
    )
    return clip.encode_text([text])[0]


def run(args: argparse.Namespace) -> int:
    from edge.cli._common import build_filter, open_existing_store, parse_pair, parse_time, row_to_json
    from edge.config import load_config
    from edge.errors import UsageError
    from edge.memory.search.retrieval import hybrid_search, store_timezone

    if args.k is not None and args.k < 1:
        raise UsageError(f"--k must be at least 1, got {args.k}")
    where = [parse_pair(w, "--where") for w in args.where]
    prefer = [parse_pair(w, "--prefer") for w in args.prefer]
    config = load_config(args.config)
    store = open_existing_store(args.db, config)
    try:
        tz = store_timezone(store, args.store[0] if args.store else None)
        since = parse_time(args.since, "--since", tz) if args.since is not None else None
        until = parse_time(args.until, "--until", tz) if args.until is not None else None
        near = parse_time(args.near, "--near", tz) if args.near else None
        flt = build_filter(where=where, types=args.type, since=since, until=until, store_ids=args.store)
        k = args.k or config.retrieval.default_k
        rows = hybrid_search(
            store,
            args.text,
            flt,
            k,
            prefer=prefer,
            near=near,
            modality="image" if args.image else "text",
            query_vector=_clip_query(config, args.text) if args.image else None,
        )
        from edge.memory.tiers import archive_only_count

        with store.read() as conn:
            archived = archive_only_count(conn, since, until, args.store)
        zones = {sid: store.timezone(sid) for sid in {r.store_id for r in rows}}
    finally:
        store.close()
    if archived:
        print(
            f"adamm search: {archived} older events of this time range are only in the cold archive and were "
            "not searched (adamm restore --db PATH EVENT_ID brings one back)",
            file=sys.stderr,
        )
    if args.json:
        json.dump({"results": [row_to_json(r) for r in rows]}, sys.stdout, ensure_ascii=False)
        sys.stdout.write("\n")
        return 0
    if not rows:
        print("no events match these filters")
        return 0
    from edge.presentation.format import zoned_time

    # the store-local time with its zone (JSON keeps the stored ISO time)
    shown = [zoned_time(r.timestamp, zones.get(r.store_id)) for r in rows]
    width = max(27, *(len(t) for t in shown))
    print(
        f"{'score':>7} {'cosine':>7} {'attr':>5}  {'local time':<{width}} {'event_type':<16} {'store':<10} event_id / text"
    )
    for r, when in zip(rows, shown, strict=True):
        text = (r.text or "").replace("\n", " ")
        if len(text) > 60:
            text = text[:57] + "..."
        print(
            f"{r.score or 0:7.3f} {r.cosine or 0:7.3f} {r.attr_match or 0:5.2f}  {when:<{width}} "
            f"{r.event_type:<16} {r.store_id:<10} {r.event_id}"
        )
        if text:
            print(f"{'':>50}{text}")
    return 0
