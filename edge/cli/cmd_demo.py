"""``adamm demo``: build a simulated store's memory and answer sample questions (CONTRACT.md section 1).

Thin argument parsing over :mod:`edge.demo`; progress on stderr, answers on stdout.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

logger = logging.getLogger(__name__)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="simulate a store into a fresh memory and answer sample questions",
        description=(
            "Simulate a retail store (cameras, microphones, POS, weather, promotions, staff; effects "
            "of known size planted), import it through the same path as `adamm import`, then answer "
            "sample questions in Chinese and English with evidence and confidence. Needs no camera, "
            "microphone, GPU or network."
        ),
    )
    parser.add_argument(
        "--db",
        type=Path,
        default=None,
        help="database file to build (default: a new temporary directory); kept afterwards",
    )
    parser.add_argument("--days", type=int, default=92, help="days to simulate (default 92, at least 14)")
    parser.add_argument("--seed", type=int, default=7, help="simulation seed (default 7)")
    parser.add_argument("--force", action="store_true", help="replace an existing non-empty --db")
    parser.add_argument("--json", action="store_true", help="print the payloads as one JSON list on stdout")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from edge.demo import DemoOptions, demo_config, demo_questions, print_answers, run_demo

    options = DemoOptions(db=args.db, days=args.days, seed=args.seed, force=args.force)
    _, payloads = run_demo(options, err=sys.stderr)
    print_answers(demo_questions(demo_config(options)), payloads, sys.stdout, as_json=args.json)
    return 0
