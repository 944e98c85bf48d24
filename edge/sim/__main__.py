"""``python -m edge.sim``: the simulated fleet's events as MEV JSON Lines (what ``adamm-hub demo``
pipes into ``adamm import``), or its description as JSON.

``--describe`` prints the fleet of ``--stores N`` (store ids, cities, zones, climate, the ``--now``
after its last day) as one JSON list; ``--store I`` (1-based) prints store ``I``'s events on stdout.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

from edge.cliargs import SuggestingParser
from edge.errors import AdammError


def main(argv: Sequence[str] | None = None) -> int:
    p = SuggestingParser(
        prog="python -m edge.sim",
        description="The simulated fleet: events (MEV JSON Lines) or its description.",
    )
    p.add_argument("--stores", type=int, default=3, help="stores in the fleet (default 3)")
    p.add_argument("--days", type=int, default=92, help="days per store (default 92)")
    p.add_argument("--seed", type=int, default=7, help="simulation seed (default 7)")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--describe", action="store_true", help="print the fleet as one JSON list")
    what.add_argument("--store", type=int, metavar="I", help="print store I's events (1-based)")
    args = p.parse_args(argv)
    from edge.sim.fleet import fleet
    from edge.sim.simulator import simulate_jsonl

    try:
        stores = fleet(args.stores, days=args.days, seed=args.seed)
        if args.describe:
            print(json.dumps([s.describe() for s in stores], ensure_ascii=False))
            return 0
        if not 1 <= args.store <= len(stores):
            print(f"python -m edge.sim: --store {args.store}: give 1..{len(stores)}", file=sys.stderr)
            return 2
        simulate_jsonl(stores[args.store - 1].config, sys.stdout)
    except AdammError as exc:
        print(f"python -m edge.sim: {exc}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:
        return 0
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
