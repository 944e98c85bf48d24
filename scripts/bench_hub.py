#!/usr/bin/env python3
"""Benchmark: hub ingest (messages/s, end to end over MQTT) and whole-process ``adamm-hub ask``
latency at many stores x a year of daily rollups.

- Ingest: a real Mosquitto (tests/brokers.py, the project's config) and ``adamm-hub serve``
  workers as separate processes; a publisher sends ``--messages`` daily rollup summaries (QoS 1,
  ``total`` slice, several event types a row each) and the time until the last *receipt* (the
  hub's commit) is measured. SQLite with one worker; PostgreSQL (a server started in a temporary
  folder) with one and with two workers on the shared subscription. SQLite has one writer, so two
  SQLite workers are not measured (they would each receive everything).
- Ask: a hub database of ``--stores`` stores x ``--days`` days (``total`` and ``weather`` slices)
  written straight into ``hub_rollup`` and ``hub_catalog`` (the rows ingest writes), then each question is timed as a
  separate ``adamm-hub ask --json`` process (median of ``--repeats``), the goal being <= 1 s.

Prints a Markdown table on stdout; progress on stderr.
Usage: ``python3 scripts/bench_hub.py [--messages 2000] [--stores 1000] [--days 365] [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from brokers import running_mosquitto, running_postgres  # noqa: E402
from hub_data import Publisher, fresh_pg_dsn, row  # noqa: E402

from edge.sync import messages as m  # noqa: E402
from hub.db import open_hub  # noqa: E402
from hub.ingest import ROLLUP_COLUMNS, vkey_of  # noqa: E402

TYPES = ("customer_enter", "purchase", "dwell", "checkout_queue", "complaint")
WEATHER = ("sunny", "cloudy", "rain")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def summaries(n: int) -> list[m.Summary]:
    rng = random.Random(3)
    out = []
    stores = [f"st{i:03d}" for i in range(max(1, n // 365 + 1))]
    for i in range(n):
        store = stores[i % len(stores)]
        day = (date(2025, 1, 1) + timedelta(days=i // len(stores))).isoformat()
        rows = [row(None, t, events=rng.randint(10, 300), revenue=rng.uniform(0, 9000)) for t in TYPES]
        out.append(m.make_summary(store, "rollup", m.rollup_key(day, "total"), 1, {
            "day": day, "slice": "total", "tz": "Asia/Shanghai", "closed": True, "rows": rows}))  # fmt: skip
    return out


def ingest_rate(tmp: Path, target: str, workers: int, msgs: list[m.Summary]) -> float:
    with running_mosquitto(tmp / f"mq-{time.monotonic_ns()}") as broker:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        procs = []
        for w in range(1, workers + 1):
            err = tmp / f"hub-{w}-{time.monotonic_ns()}.log"
            with err.open("wb") as f:
                procs.append((subprocess.Popen(
                    [sys.executable, "-m", "hub", "-v", "serve", "--db", target, "--broker", broker.url,
                     "--worker", str(w)], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=f), err))  # fmt: skip
        for _p, err in procs:
            while "subscribed to" not in err.read_text(errors="replace"):
                time.sleep(0.05)
        pub = Publisher(broker.port, "bench-edge")
        t0 = time.perf_counter()
        for s in msgs:
            pub.client.publish(m.summary_topic(s.store_id), s.encode(), qos=1)
        ok = pub.wait_stored({s.msg_id for s in msgs}, timeout=600, resend=msgs)
        dt = time.perf_counter() - t0
        pub.close()
        for p, _err in procs:
            p.terminate()
            p.wait(30)
        if not ok:
            raise SystemExit("the hub did not receipt every message within 600 s")
        return len(msgs) / dt


def build_big(path: Path, stores: int, days: int) -> None:
    db = open_hub(str(path), create=True)
    rng = random.Random(11)
    zones = ("Asia/Shanghai", "Asia/Shanghai", "Asia/Shanghai", "Asia/Urumqi")
    sql = f"INSERT INTO hub_rollup ({', '.join(ROLLUP_COLUMNS)}) VALUES ({', '.join('?' * len(ROLLUP_COLUMNS))})"
    start = date(2025, 1, 1)
    t0 = time.perf_counter()
    for s in range(stores):
        sid = f"store_{s:04d}"
        with db.transaction():
            db.execute("INSERT INTO hub_stores (store_id, tz) VALUES (?, ?)", (sid, zones[s % len(zones)]))
            batch: list[tuple[Any, ...]] = []
            for d in range(days):
                day = start + timedelta(days=d)
                ds = day.isoformat()
                week = (day - timedelta(days=day.weekday())).isoformat()
                weather = WEATHER[rng.randrange(3)]
                for sl, value in (("total", None), ("weather", weather)):
                    for t in TYPES:
                        r = row(value, t)
                        if t == "customer_enter":
                            r.update(events=300, footfall=320, enter_events=300)
                        elif t == "purchase":
                            bills = rng.randint(80, 120)
                            r.update(events=bills * 2, purchase_events=bills * 2, bills=bills,
                                     revenue=bills * rng.uniform(60, 90), bill_sq=bills * 6000.0)  # fmt: skip
                        else:
                            r.update(events=rng.randint(5, 50))
                        r["first_event_id"], r["last_event_id"] = f"{sid}-{ds}-{t}-a", f"{sid}-{ds}-{t}-z"
                        batch.append((sid, ds, day.weekday(), week, ds[:7], sl, value, vkey_of(value), t,
                                      *(float(r[f]) for f in m.ROLLUP_FIELDS), r["first_event_id"],
                                      r["last_event_id"]))  # fmt: skip
            db.executemany(sql, batch)
        if s % 100 == 99:
            log(f"  {s + 1} stores written ({time.perf_counter() - t0:.0f} s)")
    with db.transaction():  # the catalog ingest keeps beside the rows
        db.execute(
            "INSERT INTO hub_catalog (store_id, slice, vkey, value, event_type, first_date, last_date, days, events) "
            "SELECT store_id, slice, vkey, value, event_type, min(local_date), max(local_date), count(*), sum(events) "
            "FROM hub_rollup GROUP BY store_id, slice, vkey, value, event_type"
        )
    db.execute("ANALYZE")
    db.close()


QUESTIONS = (
    "2025年10月哪个门店的销售额最高？",
    "Compare average order value across stores in November 2025",
    "store_0007 revenue in October 2025",
    "weekly revenue trend of store_0042",
)


def ask_latency(path: Path, repeats: int) -> list[tuple[str, float, str, float]]:
    out = []
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for q in QUESTIONS:
        times = []
        status = ""
        inner = 0.0
        for _ in range(repeats):
            t0 = time.perf_counter()
            r = subprocess.run(
                [sys.executable, "-m", "hub", "ask", "--db", str(path), "--now", "2026-01-01T00:00:00+08:00",
                 "--json", q], cwd=ROOT, env=env, capture_output=True, text=True)  # fmt: skip
            times.append(time.perf_counter() - t0)
            if r.returncode != 0:
                raise SystemExit(f"adamm-hub ask failed: {r.stderr}")
            import json

            p = json.loads(r.stdout)
            status, inner = p["status"], p["elapsed_ms"]
        out.append((q, statistics.median(times), status, inner))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--messages", type=int, default=2000)
    ap.add_argument("--stores", type=int, default=1000)
    ap.add_argument("--days", type=int, default=365)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--skip-ingest", action="store_true")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="adamm-bench-hub-"))
    lines = ["| hub ingest over MQTT (receipted messages/s) | workers | msg/s |", "|---|---:|---:|"]
    if not args.skip_ingest:
        msgs = summaries(args.messages)
        log(f"ingest: {len(msgs)} messages")
        rate = ingest_rate(tmp, str(tmp / "ingest.db"), 1, msgs)
        lines.append(f"| SQLite | 1 | {rate:,.0f} |")
        lines.append("| SQLite | 2 | n/a (one writer) |")
        with running_postgres(tmp / "pg") as pg:
            for w in (1, 2):
                rate = ingest_rate(tmp, fresh_pg_dsn(pg.dsn), w, msgs)
                lines.append(f"| PostgreSQL | {w} | {rate:,.0f} |")
    big = tmp / "big.db"
    log(f"ask: building {args.stores} stores x {args.days} days")
    t0 = time.perf_counter()
    build_big(big, args.stores, args.days)
    log(f"  built in {time.perf_counter() - t0:.0f} s ({big.stat().st_size / 1e6:.0f} MB)")
    lines += [
        "",
        f"| adamm-hub ask, {args.stores:,} stores x {args.days} days | status | whole process (median) | in-process analysis |",
        "|---|---|---:|---:|",
    ]
    for q, dt, status, inner in ask_latency(big, args.repeats):
        lines.append(f"| {q} | {status} | {dt:.2f} s | {inner:.0f} ms |")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
