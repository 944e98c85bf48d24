#!/usr/bin/env python3
"""Benchmark: the hub's fleet check, ``adamm-hub facts --json`` as a whole process, at
``--stores`` stores x ``--days`` days of daily rollups (the goal: under 10 s at 1,000 x 365).

The rollups (``total`` and ``weather`` slices, five event types; rain lifts order value by 20% in
two stores of three) are written straight into ``hub_rollup`` and ``hub_catalog``, the rows
ingest writes (as ``scripts/bench_hub.py`` does); one kind of fact ("order value on rain vs sunny
days") is learned in ``--learned`` stores and goes through the hub's real ingest as fact summaries.
The fleet check then tests that kind in every store and controls the false discoveries over all of
them. Prints a Markdown table on stdout; progress on stderr.

Usage: ``python3 scripts/bench_fleet.py [--stores 1000] [--days 365] [--learned 5] [--workdir DIR]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from hub_data import fact, write_rollups  # noqa: E402

from edge.presentation.facts import fact_statement  # noqa: E402
from edge.sync import messages as m  # noqa: E402
from hub.db import open_hub  # noqa: E402
from hub.ingest import ingest  # noqa: E402

START = date(2025, 1, 1)
GOAL_S = 10.0


def _child_cpu() -> float:
    """CPU seconds (user + system) of the finished child processes: on a shared machine the wall
    time also counts the waits for a core."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _purchase(rng: random.Random, s: int, weather: str) -> dict[str, float]:
    """A day's bills: order value 75, lifted 20% by rain in two stores of three; bills vary (CV
    0.3), days do not."""
    bills = rng.randint(80, 120)
    aov = 75.0 * (1.2 if s % 3 and weather == "rain" else 1.0)
    return {"events": bills * 2, "purchase_events": bills * 2, "bills": bills, "revenue": bills * aov,
            "bill_sq": bills * aov * aov * 1.09}  # fmt: skip


def build(path: Path, stores: int, days: int) -> None:
    """``stores`` x ``days`` of rollup rows straight into the hub database (ingest's rows)."""
    write_rollups(path, stores, days, seed=27, start=START, zone_of=lambda _s: "Asia/Shanghai",
                  purchase_of=_purchase, log=log)  # fmt: skip


def learn(path: Path, learned: int) -> None:
    """The rain-vs-sunny order value fact, learned in ``learned`` stores, through ingest."""
    db = open_hub(str(path))
    body = {"metric": "avg_order_value", "dimension": "weather", "value": 90.0, "effect": 0.2, "n": 3000,
            "p_value": 1e-6, "valid_from": START.isoformat()}  # fmt: skip
    statement = fact_statement("compare", body, {"subject": "rain", "baseline": "sunny"})
    for s in range(1, 3 * learned, 3):  # stores where rain does lift order value
        sid = f"store_{s:04d}"
        got = ingest(
            db, m.summary_topic(sid), fact(sid, f"{sid}-rain-aov", statement=statement, **body).encode()
        )
        if got.outcome != "stored":
            raise SystemExit(f"fact not stored: {got}")
    db.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stores", type=int, default=1000)
    ap.add_argument("--days", type=int, default=365)
    ap.add_argument("--learned", type=int, default=5)
    ap.add_argument("--workdir", type=Path, default=None)
    args = ap.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="adamm-bench-fleet-"))
    work.mkdir(parents=True, exist_ok=True)
    path = work / "hub.db"
    path.unlink(missing_ok=True)
    log(f"building {args.stores} stores x {args.days} days")
    t0 = time.perf_counter()
    build(path, args.stores, args.days)
    learn(path, args.learned)
    log(f"  built in {time.perf_counter() - t0:.0f} s ({path.stat().st_size / 1e6:.0f} MB)")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    now = (START + timedelta(days=args.days)).isoformat() + "T00:00:00+08:00"
    t0, c0 = time.perf_counter(), _child_cpu()
    run = subprocess.run(
        [sys.executable, "-m", "hub", "facts", "--db", str(path), "--now", now, "--json"],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )  # fmt: skip
    secs, cpu = time.perf_counter() - t0, _child_cpu() - c0
    if run.returncode != 0:
        raise SystemExit(f"adamm-hub facts failed: {run.stderr[-2000:]}")
    got = json.loads(run.stdout)
    (kind,) = got["fleet"]
    load = os.getloadavg()[0]
    print(
        f"{args.stores:,} stores x {args.days} days of rollups; {os.cpu_count()} CPUs, load average {load:.1f}\n"
    )
    print("| adamm-hub facts --json (whole process) | kinds | store tests (BH family) | holds | reversed | null | thin | seconds (wall) | CPU seconds | goal | share of goal (wall) |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(
        f"| {args.learned} stores learned {kind['kind']} | {len(got['fleet'])} | {got['tested']} | "
        f"{kind['holds_in']} | {kind['reversed_in']} | {kind['null_in']} | {kind['thin_in']} | {secs:.2f} | {cpu:.2f} | "
        f"< {GOAL_S:.0f} s | {secs / GOAL_S:.2f} |"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
