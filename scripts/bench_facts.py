#!/usr/bin/env python3
"""Benchmark: the facts step of maintenance (:func:`edge.services.facts.distil_facts`).

Simulates a store (``--days``, default 365: a year, no text) into a fresh memory, then times
``adamm maintain --json`` on a copy of it as a whole process, with the tiers not due (a config
with ``warm_after_days = 3650``: the run is the facts step, every standing question at every
weekly point of the year; the goal: under 60 s on 2 cores) and with the default tiers (the same
plus the year's first archiving, for reference), one facts run in-process over the whole history (every standing
question at every weekly evaluation point, with the false discovery control) and the incremental
case (a memory holding the same history minus its last two weeks, distilled, then those weeks
imported and distilled again: only their points are evaluated). Prints a Markdown table on
stdout; progress on stderr.

Usage: ``python3 scripts/bench_facts.py [--days 365] [--customers 300] [--workdir DIR]``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import shutil
import subprocess
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


def _child_cpu() -> float:
    """CPU seconds (user + system) of the finished child processes: on a shared machine the wall
    time also counts the waits for a core."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--days", type=int, default=365)
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

    rows: list[tuple[str, int, int, int, float, float, float | None]] = []
    logger.info("simulated %d events over %d days", len(events), cfg.days)
    now = datetime.combine(end_day, datetime.min.time(), tz)
    with Store.open(work / "base.db", timezone=cfg.timezone) as store:
        store.import_events(events)
        store.event_source().rollup_state()  # bring the rollup up to date outside the timing
    root = Path(__file__).resolve().parents[1]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")])),
    }
    # the facts step as a whole process: tiers not due yet (the year stays hot), so the run is
    # the facts step, the action effects and a tiers step with nothing to move
    not_due = work / "tiers-not-due.toml"
    not_due.write_text("[tiers]\nwarm_after_days = 3650\ncold_after_days = 7300\n")
    for name, config in (
        ("adamm maintain, whole process (tiers not due)", not_due),
        ("adamm maintain, whole process (default tiers: the year's first archiving too)", None),
    ):
        db = work / f"maintained-{'facts' if config else 'tiers'}.db"
        shutil.copy(work / "base.db", db)
        logger.info("%s over %d days", name, cfg.days)
        cmd = [sys.executable, "-m", "edge", "maintain", "--db", str(db), "--now", now.isoformat(), "--json"]
        t0, c0 = time.perf_counter(), _child_cpu()
        run = subprocess.run([*cmd, *(["--config", str(config)] if config else [])],
                             capture_output=True, text=True, env=env, cwd=work)  # fmt: skip
        whole, cpu = time.perf_counter() - t0, _child_cpu() - c0
        if run.returncode != 0:
            raise SystemExit(f"adamm maintain failed: {run.stderr[-2000:]}")
        got = json.loads(run.stdout)["facts"]
        rows.append(
            (name, got["evaluations"], got["tested"], got["passed"], whole, cpu, 60.0 if config else None)
        )
    shutil.copy(work / "base.db", work / "once.db")
    with Store.open(work / "once.db", timezone=cfg.timezone) as store:
        t0, c0 = time.perf_counter(), time.process_time()
        report = distil_facts(store, AdammConfig(), now)
        secs, cpu = time.perf_counter() - t0, time.process_time() - c0
        rows.append(
            ("facts step in-process, the whole history", report["evaluations"], report["tested"],
             report["passed"], secs, cpu, None)
        )  # fmt: skip
        with store.read() as conn:
            total, current = len(repo.list_facts(conn)), len(repo.list_facts(conn, current_only=True))
    with Store.open(work / "nightly.db", timezone=cfg.timezone) as store:
        store.import_events([e for e in events if local(e) < cut.date()])
        distil_facts(store, AdammConfig(), cut)
        store.import_events([e for e in events if local(e) >= cut.date()])
        store.event_source().rollup_state()
        t0, c0 = time.perf_counter(), time.process_time()
        report = distil_facts(store, AdammConfig(), datetime.combine(end_day, datetime.min.time(), tz))
        secs, cpu = time.perf_counter() - t0, time.process_time() - c0
        rows.append(
            ("facts step, a later run that finds the last two weeks", report["evaluations"], report["tested"],
             report["passed"], secs, cpu, None)
        )  # fmt: skip
    load = os.getloadavg()[0]
    print(f"{len(events)} events, {cfg.days} days, 1 store; {total} facts ({current} current); "
          f"{os.cpu_count()} CPUs, load average {load:.1f}\n")  # fmt: skip
    print(
        "| run | evaluations | tests (BH family) | passed | seconds (wall) | CPU seconds | goal | share of goal (wall) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, n, tested, passed, secs, cpu, goal in rows:
        g, share = ("-", "-") if goal is None else (f"< {goal:.0f} s", f"{secs / goal:.2f}")
        print(f"| {name} | {n} | {tested} | {passed} | {secs:.2f} | {cpu:.2f} | {g} | {share} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
