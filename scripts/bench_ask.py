#!/usr/bin/env python3
"""Benchmark: whole-process ``adamm ask`` latency vs DuckDB over the same events in Parquet.

For each memory size (default 100k and 1M events, simulated without text by :mod:`edge.sim` and
imported through :class:`edge.memory.store.Store`, the path ``adamm import`` uses) this times four
questions (trend, compare, anomaly, breakdown) as separate ``adamm ask --json`` processes (median of
``--repeats`` runs; the payload's ``elapsed_ms`` is the answer in process: parse, vocabulary and
analysis), the analysis step alone (``run_plan`` on the parsed plan, in one process, median), and
DuckDB running the equivalent aggregation SQL over the same events exported to Parquet (median,
in one process). The memory's hourly rollup is brought up to date first and its build time
reported separately (a one-time cost; later asks only fold in new events).
Prints a Markdown table on stdout; progress on stderr. Memories are cached in ``--workdir`` (a
finished one is reused), so the 1M case is built once.

Usage: ``python3 scripts/bench_ask.py [--sizes 100000,1000000] [--repeats 5] [--workdir DIR]``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from edge.sim import SimConfig, simulate
from edge.sim.simulator import (
    GUIDANCE_PER_DAY,
    INQUIRIES_PER_DAY,
    QUEUE_SAMPLE_MINUTES,
    STAFF_ACTIONS_PER_DAY,
)

logger = logging.getLogger("bench_ask")

DAYS = 92
#: events per simulated day that do not scale with footfall (queue samples, staff, speech)
_FIXED_PER_DAY = (
    (22 - 8) * 60 / QUEUE_SAMPLE_MINUTES + STAFF_ACTIONS_PER_DAY + INQUIRIES_PER_DAY + GUIDANCE_PER_DAY + 5
)
#: events per customer of footfall (entries, dwells, bill lines), measured on the default store
_PER_CUSTOMER = 2.12


@dataclass(frozen=True)
class Case:
    """One benchmarked question and the DuckDB SQL computing the same aggregation."""

    intent: str
    question: str
    sql: str
    params: tuple[Any, ...]


def sim_config(size: int) -> SimConfig:
    customers = max(10, round((size / DAYS - _FIXED_PER_DAY) / _PER_CUSTOMER))
    return SimConfig(days=DAYS, customers_per_day=customers, with_text=False, seed=11)


def now_of(config: SimConfig) -> datetime:
    end = config.start + timedelta(days=config.days)
    from zoneinfo import ZoneInfo

    return datetime(end.year, end.month, end.day, tzinfo=ZoneInfo(config.timezone))


def cases(now: datetime) -> list[Case]:
    utc_now = now.astimezone(UTC).replace(tzinfo=None)
    three_months = utc_now - timedelta(days=91)
    one_month = utc_now - timedelta(days=30)
    return [
        Case(
            "trend",
            "最近三个月每天客单价趋势怎么样？",
            "SELECT CAST(local_ts AS DATE) AS d, SUM(order_amount) / COUNT(DISTINCT bill_id) AS v, COUNT(*) AS n "
            "FROM ev WHERE event_type = 'purchase' AND ts >= ? AND ts < ? GROUP BY d ORDER BY d",
            (three_months, utc_now),
        ),
        Case(
            "compare",
            "下雨天和晴天相比，哪种天气客单价更高？",
            "WITH bills AS (SELECT weather, bill_id, SUM(order_amount) AS t FROM ev "
            "WHERE event_type = 'purchase' AND weather IN ('rain', 'sunny') GROUP BY weather, bill_id) "
            "SELECT weather, AVG(t), VAR_SAMP(t), COUNT(*) FROM bills GROUP BY weather",
            (),
        ),
        Case(
            "anomaly",
            "最近一个月客流量有没有异常的日子？",
            "SELECT CAST(local_ts AS DATE) AS d, SUM(COALESCE(person_count, 1)) AS footfall FROM ev "
            "WHERE event_type = 'customer_enter' AND ts >= ? AND ts < ? GROUP BY d ORDER BY d",
            (one_month, utc_now),
        ),
        Case(
            "breakdown",
            "按时段拆解一下销售额，哪个时段贡献最大？",
            "SELECT hour(local_ts) AS h, SUM(order_amount) AS revenue, COUNT(*) AS n FROM ev "
            "WHERE event_type = 'purchase' GROUP BY h ORDER BY revenue DESC",
            (),
        ),
    ]


def _lines(config: SimConfig, rows: list[dict[str, Any]]) -> Iterator[str]:
    for ev in simulate(config):
        ts = datetime.fromisoformat(ev["timestamp"])
        s = ev["stats"]
        rows.append(
            {
                "event_id": ev["event_id"],
                "ts": ts.astimezone(UTC).replace(tzinfo=None),
                "local_ts": ts.replace(tzinfo=None),
                "event_type": ev["event_type"],
                "weather": s.get("weather"),
                "person_count": s.get("person_count"),
                "order_amount": s.get("order_amount"),
                "bill_id": s.get("bill_id"),
                "product_id": s.get("product_id"),
                "product_category": s.get("product_category"),
                "queue_length": s.get("queue_length"),
            }
        )
        yield json.dumps(ev, ensure_ascii=False, separators=(",", ":"))


def build(size: int, workdir: Path) -> tuple[Path, Path, SimConfig, int]:
    """The memory and the Parquet file for ``size`` events (reused when already complete)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from edge.memory.store import Store

    config = sim_config(size)
    db = workdir / f"bench_{size}.db"
    parquet = workdir / f"bench_{size}.parquet"
    done = workdir / f"bench_{size}.done"
    if done.exists() and db.exists() and parquet.exists():
        n = int(done.read_text().strip())
        print(f"bench: reusing {db} ({n} events)", file=sys.stderr)
        return db, parquet, config, n
    for p in (db, parquet, done):
        p.unlink(missing_ok=True)
    rows: list[dict[str, Any]] = []
    started = time.monotonic()
    print(f"bench: simulating and importing ~{size} events into {db}", file=sys.stderr, flush=True)
    store = Store.open(db, timezone=config.timezone)
    try:
        report = store.import_lines(_lines(config, rows), on_reject=None, progress=None)
    finally:
        store.close()
    print(
        f"bench: imported {report.accepted} events in {time.monotonic() - started:.0f} s",
        file=sys.stderr,
        flush=True,
    )
    pq.write_table(pa.Table.from_pylist(rows), parquet)
    done.write_text(str(len(rows)))
    return db, parquet, config, len(rows)


def time_ask(db: Path, question: str, now: datetime, repeats: int) -> tuple[float, float, str]:
    """Median whole-process seconds, median payload elapsed_ms, and the last status."""
    walls: list[float] = []
    analysis: list[float] = []
    status = "?"
    cmd = [sys.executable, "-m", "edge", "ask", "--db", str(db), "--now", now.isoformat(), "--json", question]
    for _ in range(repeats):
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=ask_env())
        walls.append(time.perf_counter() - t0)
        if proc.returncode != 0 or not proc.stdout.strip():
            status = f"error rc={proc.returncode}: {proc.stderr.strip()[-200:]}"
            continue
        payload = json.loads(proc.stdout)
        status = str(payload.get("status"))
        if isinstance(payload.get("elapsed_ms"), int | float):
            analysis.append(float(payload["elapsed_ms"]))
    return statistics.median(walls), statistics.median(analysis) if analysis else float("nan"), status


def build_rollup(db: Path) -> float:
    """Seconds of a full build of the memory's hourly rollup (what the first question pays once)."""
    from edge.memory.store import Store

    store = Store.open(db)
    try:
        store.writer.submit(lambda conn: conn.execute("UPDATE rollup_state SET stale = 1")).result()
        t0 = time.perf_counter()
        store.event_source().rollup_state()  # type: ignore[attr-defined]
        return time.perf_counter() - t0
    finally:
        store.close()


def time_run_plan(db: Path, question: str, now: datetime, repeats: int) -> float:
    """Median milliseconds of the analysis step alone (``run_plan`` on the parsed plan, in process)."""
    from edge.analysis.engine import AnalysisConfig, answer, run_plan
    from edge.memory.store import Store

    store = Store.open(db)
    try:
        src = store.event_source()
        payload = answer(question, src, now=now, embed=store.embed_texts)
        plan = payload["plan"]
        times = []
        for _ in range(repeats + 1):
            t0 = time.perf_counter()
            run_plan(plan, src, question=question, now=now, config=AnalysisConfig())
            times.append((time.perf_counter() - t0) * 1000)
        return statistics.median(times[1:])  # the first run warms the caches
    finally:
        store.close()


def ask_env() -> dict[str, str]:
    """The environment of the timed ``adamm ask`` processes: bytecode cached (in a private
    ``PYTHONPYCACHEPREFIX``), as an installed package runs, even where the shell sets
    ``PYTHONDONTWRITEBYTECODE`` (every module would be compiled again in every process)."""
    env = dict(os.environ)
    if env.pop("PYTHONDONTWRITEBYTECODE", None) is not None:
        env.setdefault("PYTHONPYCACHEPREFIX", str(Path(os.environ.get("TMPDIR", "/tmp")) / "adamm-pycache"))
    return env


def time_duckdb(parquet: Path, case: Case, repeats: int) -> float:
    """Median milliseconds of DuckDB computing the aggregation over the Parquet file."""
    import duckdb

    con = duckdb.connect()
    con.execute(f"CREATE VIEW ev AS SELECT * FROM read_parquet('{parquet.as_posix()}')")
    times = []
    for _ in range(repeats + 1):
        t0 = time.perf_counter()
        con.execute(case.sql, list(case.params)).fetchall()
        times.append((time.perf_counter() - t0) * 1000)
    con.close()
    return statistics.median(times[1:])  # the first run warms the file cache


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", default="100000,1000000", help="comma-separated event counts")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--workdir", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "adamm-bench"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    args.workdir.mkdir(parents=True, exist_ok=True)
    out = [
        "| events | intent | question | status | `adamm ask` process (median s) | answer in process (ms) "
        "| analysis step `run_plan` (ms) | DuckDB SQL (ms) | `run_plan` / DuckDB |",
        "|---:|---|---|---|---:|---:|---:|---:|---:|",
    ]
    builds: list[str] = []
    for size in (int(s) for s in args.sizes.split(",") if s.strip()):
        db, parquet, config, n = build(size, args.workdir)
        now = now_of(config)
        build_s = build_rollup(db)
        builds.append(f"- {n:,} events: full build of the hourly rollup {build_s:.1f} s")
        for case in cases(now):
            print(f"bench: {n} events, {case.intent}", file=sys.stderr, flush=True)
            wall, analysis_ms, status = time_ask(db, case.question, now, args.repeats)
            plan_ms = time_run_plan(db, case.question, now, args.repeats)
            duck_ms = time_duckdb(parquet, case, args.repeats)
            ratio = plan_ms / duck_ms if duck_ms > 0 else float("nan")
            out.append(
                f"| {n:,} | {case.intent} | {case.question} | {status} | {wall:.2f} | {analysis_ms:.0f} | "
                f"{plan_ms:.0f} | {duck_ms:.1f} | {ratio:.1f}x |"
            )
    print("\n".join([*out, "", *builds]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
