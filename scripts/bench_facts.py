#!/usr/bin/env python3
"""Benchmark: the facts step of maintenance (:func:`edge.services.facts.distil_facts`).

Simulates a store (``--days``, default 425: about 14 months, no text) into a fresh memory, then
times one facts run over the whole history (every standing question at every weekly evaluation
point) and the incremental case (a memory holding the same history minus its last two weeks,
distilled, then those weeks imported and distilled again: only their points are evaluated). Prints
a Markdown table on stdout; progress on stderr.

Usage: ``python3 scripts/bench_facts.py [--days 425] [--customers 300] [--workdir DIR]``.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from datetime import date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from edge.config import AdammConfig
from edge.memory.semantic import facts as repo
from edge.memory.store import Store
from edge.services.facts import distil_facts
from edge.sim import SimConfig, simulate

logger = logging.getLogger("bench_facts")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--days", type=int, default=425)
    ap.add_argument("--customers", type=int, default=300)
    ap.add_argument("--workdir", type=Path, default=None)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")
    work = args.workdir or Path(tempfile.mkdtemp(prefix="adamm-bench-facts-"))
    work.mkdir(parents=True, exist_ok=True)
    cfg = SimConfig(days=args.days, customers_per_day=args.customers, with_text=False)
    tz = ZoneInfo(cfg.timezone)
    events = list(simulate(cfg))
    end_day = cfg.start + timedelta(days=cfg.days)
    # the last full week: from the last Monday the data reaches
    last_monday = end_day - timedelta(days=1 + (end_day - timedelta(days=1)).weekday())
    cut = datetime.combine(last_monday - timedelta(days=7), datetime.min.time(), tz)

    def local(e: dict[str, object]) -> date:
        return datetime.fromisoformat(str(e["timestamp"]).replace("Z", "+00:00")).astimezone(tz).date()

    rows = []
    logger.info("simulated %d events over %d days", len(events), cfg.days)
    with Store.open(work / "once.db", timezone=cfg.timezone) as store:
        store.import_events(events)
        store.event_source().rollup_state()  # bring the rollup up to date outside the timing
        now = datetime.combine(end_day, datetime.min.time(), tz)
        t0 = time.perf_counter()
        report = distil_facts(store, AdammConfig(), now)
        rows.append(("one run over the whole history", report["evaluations"], time.perf_counter() - t0))
        with store.read() as conn:
            total, current = len(repo.list_facts(conn)), len(repo.list_facts(conn, current_only=True))
    with Store.open(work / "nightly.db", timezone=cfg.timezone) as store:
        store.import_events([e for e in events if local(e) < cut.date()])
        distil_facts(store, AdammConfig(), cut)
        store.import_events([e for e in events if local(e) >= cut.date()])
        store.event_source().rollup_state()
        t0 = time.perf_counter()
        report = distil_facts(store, AdammConfig(), datetime.combine(end_day, datetime.min.time(), tz))
        rows.append(
            ("a later run that finds the last two weeks", report["evaluations"], time.perf_counter() - t0)
        )
    print(f"{len(events)} events, {cfg.days} days; {total} facts ({current} current)\n")
    print("| run | evaluations | seconds |")
    print("|---|---:|---:|")
    for name, n, secs in rows:
        print(f"| {name} | {n} | {secs:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
