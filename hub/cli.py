"""The ``adamm-hub`` command line (thin). The hub's commands are not built yet."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

HUB_COMMANDS = ("serve", "ask", "console")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="adamm-hub", description="adamm hub: cross-store memory and analysis (not built yet)."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in HUB_COMMANDS:
        sub.add_parser(name, help=f"{name} (not built yet: see the hub issue)")
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help(sys.stderr)
        return 2
    print(f"adamm-hub {args.command}: the hub is not built yet in this version", file=sys.stderr)
    return 3
