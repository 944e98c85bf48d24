#!/usr/bin/env python3
"""Benchmark: a year of one store in the memory with and without tiering (``adamm maintain``).

Simulates ``--months`` (default 12) of one store (:mod:`edge.sim`, transcripts included, so text
events carry the text encoder's vectors when it is installed) at ``--scale`` customers a day, imports
it through :class:`edge.memory.store.Store` (``adamm import``'s path) and measures:

- memory size (database plus archive) with every event hot, and after ``maintain`` at the end of
  the data (defaults: warm after 30 days, cold after 180): in total and per store-month of each
  tier. Per tier: the database pages of the event tables (events and their children, by event
  count), of the vectors (float32 vec0 tables: hot; int8 tables: warm) and of the archive index,
  plus the archive files of that tier's months; the rollup and the other tables (the same with
  and without tiering) are one more line. Both databases are compacted (VACUUM) before measuring.
- ``adamm ask`` latency (whole process, median of ``--repeats``) of questions over the 12 months
  on the tiered memory against the same questions over 1 month on a memory holding only that
  month, hot;
- warm-tier recall@10: the top 10 of hybrid search over the warm months with int8 vectors against
  float32 (the untiered memory), for ``--queries`` query vectors (stored vectors of hot events).

Prints a Markdown table on stdout (progress on stderr); ``--docs`` also writes it into
``docs/benchmarks.md`` (between the ``bench_tiering`` markers). Memories are built in ``--workdir``.

Usage: ``python3 scripts/bench_tiering.py [--months 12] [--scale 150] [--repeats 3] [--docs]``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from edge.analysis.source import EventFilter  # noqa: E402
from edge.config import AdammConfig  # noqa: E402
from edge.memory.db.connect import connect  # noqa: E402
from edge.memory.search.retrieval import hybrid_search  # noqa: E402
from edge.memory.store import Store  # noqa: E402
from edge.memory.tiers.steps import compact  # noqa: E402
from edge.services.maintain import maintain  # noqa: E402
from edge.sim import SimConfig, simulate  # noqa: E402

logger = logging.getLogger("bench_tiering")

START = date(2025, 1, 1)
TZ = "Asia/Shanghai"
MARK = ("<!-- bench_tiering -->", "<!-- /bench_tiering -->")
EVENT_TABLES = ("events", "event_attrs", "raw_refs", "entities", "relations")
YEAR_QUESTIONS = ("过去一年客单价趋势", "过去12个月的营业额是多少？", "雨天和晴天的客单价差多少？")
MONTH_QUESTIONS = ("过去一个月客单价趋势", "过去一个月的营业额是多少？", "雨天和晴天的客单价差多少？")


def _import(db: Path, sim: SimConfig) -> int:
    with Store.open(db, timezone=TZ) as store:
        report = store.import_events(simulate(sim))
        from edge.memory.rollup import build as rollup

        store.writer.submit(rollup.refresh).result()  # the rollup, built once (as adamm import does)
    return report.accepted


def _table_bytes(db: Path) -> dict[str, int]:
    """Bytes per table, its indexes included (dbstat)."""
    conn = connect(db)
    try:
        owner = {str(n): str(t) for n, t in conn.execute("SELECT name, tbl_name FROM sqlite_schema")}
        out: dict[str, int] = {}
        for name, size in conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name"):
            table = owner.get(str(name), str(name))
            out[table] = out.get(table, 0) + int(size)
        return out
    finally:
        conn.close()


def _ask(db: Path, question: str, now: datetime, repeats: int) -> tuple[float, dict[str, Any]]:
    times = []
    payload: dict[str, Any] = {}
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "edge",
                "ask",
                "--db",
                str(db),
                "--now",
                now.isoformat(),
                "--json",
                question,
            ],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        times.append(time.perf_counter() - t0)
        payload = json.loads(out.stdout)
    return statistics.median(times), payload


def _recall(plain: Path, tiered: Path, since: datetime, until: datetime, queries: int) -> tuple[float, int]:
    rng = np.random.default_rng(1)
    with Store.open(plain, readonly=True) as a, Store.open(tiered, readonly=True) as b:
        with a.read() as conn:
            blobs = [bytes(r[0]) for r in conn.execute("SELECT embedding FROM vec_text LIMIT 5000")]
        if not blobs:
            return float("nan"), 0
        picks = rng.choice(len(blobs), min(queries, len(blobs)), replace=False)
        flt = EventFilter(since=since, until=until)
        hits = total = 0
        for i in picks:
            q = np.frombuffer(blobs[int(i)], dtype=np.float32)
            truth = {r.event_id for r in hybrid_search(a, None, flt, 10, query_vector=q)}
            got = {r.event_id for r in hybrid_search(b, None, flt, 10, query_vector=q)}
            hits += len(truth & got)
            total += len(truth)
    return hits / max(1, total), len(picks)


def _mib(n: float) -> str:
    return f"{n / 2**20:.2f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--months", type=int, default=12, help="months of history (default 12)")
    ap.add_argument("--scale", type=int, default=150, help="customers per simulated day (default 150)")
    ap.add_argument("--repeats", type=int, default=3, help="adamm ask runs per question (median)")
    ap.add_argument("--queries", type=int, default=100, help="query vectors for warm recall@10")
    ap.add_argument(
        "--workdir", type=Path, default=None, help="where the memories are built (default: a temp dir)"
    )
    ap.add_argument("--docs", action="store_true", help="write the table into docs/benchmarks.md")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s: %(message)s")
    logging.getLogger("edge").setLevel(logging.WARNING)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench_tiering_"))
    work.mkdir(parents=True, exist_ok=True)
    started = datetime.now(UTC)

    end = date(
        START.year + (START.month - 1 + args.months) // 12, (START.month - 1 + args.months) % 12 + 1, 1
    )
    days = (end - START).days
    now = datetime(end.year, end.month, end.day, tzinfo=ZoneInfo(TZ))
    sim = SimConfig(start=START, days=days, customers_per_day=args.scale, seed=13)

    plain = work / "plain" / "store.db"
    tiered = work / "tiered" / "store.db"
    month_db = work / "month" / "store.db"
    for p in (plain, tiered, month_db):
        if p.parent.exists():
            shutil.rmtree(p.parent)
        p.parent.mkdir(parents=True)
    t0 = time.perf_counter()
    n = _import(plain, sim)
    logger.info("imported %d events (%d days) in %.1f s", n, days, time.perf_counter() - t0)
    compact(plain, 0.0)
    shutil.copy(plain, tiered)
    last_month = end - timedelta(days=1)
    month_start = date(last_month.year, last_month.month, 1)
    month_sim = SimConfig(
        start=month_start, days=(end - month_start).days, customers_per_day=args.scale, seed=13
    )
    _import(month_db, month_sim)
    compact(month_db, 0.0)

    t0 = time.perf_counter()
    with Store.open(tiered) as store:
        report = maintain(store, AdammConfig(), now)["tiers"]
    maintain_s = time.perf_counter() - t0
    compact(tiered, 0.0)
    logger.info("maintain in %.1f s: %s", maintain_s, {k: report[k] for k in ("events", "vectors")})

    # -- sizes -----------------------------------------------------------------------------------
    plain_db = plain.stat().st_size
    tiered_db = tiered.stat().st_size
    files = sorted(tiered.parent.glob("store.db.*.mev.jsonl.gz"))
    archive_total = sum(f.stat().st_size for f in files)
    cold_cut = (now - timedelta(days=180)).date().isoformat()
    with Store.open(tiered, readonly=True) as store, store.read() as conn:
        per_tier = {
            str(t): int(c) for t, c in conn.execute("SELECT tier, count(*) FROM events GROUP BY tier")
        }
        (cold_events,) = conn.execute(
            "SELECT count(*) FROM archive_index AS a WHERE NOT EXISTS (SELECT 1 FROM events AS e WHERE e.event_id = a.event_id)"
        ).fetchone()
        (indexed,) = conn.execute("SELECT count(*) FROM archive_index").fetchone()
        cold_by_month = {
            str(m): (int(c), int(k))
            for m, c, k in conn.execute(
                "SELECT substr(local_date, 1, 7), count(*), sum(NOT EXISTS (SELECT 1 FROM events AS e "
                "WHERE e.event_id = a.event_id)) FROM archive_index AS a GROUP BY 1"
            )
        }
    hot_n, warm_n = per_tier.get("hot", 0), per_tier.get("warm", 0)
    tb = _table_bytes(tiered)
    event_bytes = sum(tb.get(t, 0) for t in EVENT_TABLES)
    vec_hot = sum(v for k, v in tb.items() if k.startswith("vec_") and not k.endswith("_warm"))
    vec_warm = sum(v for k, v in tb.items() if k.startswith("vec_") and k.endswith("_warm"))
    index_bytes = sum(tb.get(t, 0) for t in ("archive_index", "archive_members", "archive_files"))
    rollup_bytes = sum(v for k, v in tb.items() if k.startswith("rollup_"))
    counted = event_bytes + vec_hot + vec_warm + index_bytes + rollup_bytes
    other_bytes = max(0, tiered_db - counted)
    arch_by_month = {f.name.split(".")[-4]: f.stat().st_size for f in files}
    # each month's archive file goes to the cold and the warm tier by its share of cold events
    arch_cold = sum(
        size * cold_by_month.get(m, (1, 0))[1] / max(1, cold_by_month.get(m, (1, 0))[0])
        for m, size in arch_by_month.items()
    )
    arch_warm = archive_total - arch_cold
    ev_total = hot_n + warm_n
    hot_bytes = event_bytes * hot_n / max(1, ev_total) + vec_hot
    warm_bytes = (
        event_bytes * warm_n / max(1, ev_total)
        + vec_warm
        + index_bytes * warm_n / max(1, indexed)
        + arch_warm
    )
    cold_bytes = arch_cold + index_bytes * int(cold_events) / max(1, indexed)
    month_days = 365.25 / 12
    hot_months = min(30, days) / month_days
    n_warm_months = max(1e-9, min(150, days - 30) / month_days)
    n_cold_months = max(1e-9, (days - 180) / month_days)
    tiered_total = tiered_db + archive_total
    ratio = plain_db / tiered_total
    plain_per_month = plain_db / args.months

    # -- latency ---------------------------------------------------------------------------------
    lat_rows = []
    for qy, qm in zip(YEAR_QUESTIONS, MONTH_QUESTIONS, strict=True):
        ty, py = _ask(tiered, qy, now, args.repeats)
        tm, pm = _ask(month_db, qm, now, args.repeats)
        lat_rows.append((qy, py, ty, qm, pm, tm))
        logger.info("%s %.2f s (%s) vs %s %.2f s", qy, ty, py.get("tiers"), qm, tm)

    # -- recall ----------------------------------------------------------------------------------
    warm_since = datetime.fromisoformat(cold_cut).replace(tzinfo=ZoneInfo(TZ))
    warm_until = now - timedelta(days=30)
    recall, nq = _recall(plain, tiered, warm_since, warm_until, args.queries)
    finished = datetime.now(UTC)
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = float("nan")

    lines = [
        f"Benchmark (`python3 scripts/bench_tiering.py --months {args.months} --scale {args.scale} "
        f"--repeats {args.repeats}`, {started:%Y-%m-%d %H:%M} UTC, {finished - started} total, load average "
        f"{load:.1f} at the end): {n:,} events of one simulated store over {args.months} months "
        f"({days} days, {args.scale} customers a day, transcripts with text vectors), `maintain` at the end "
        f"of the data with the default tiers (warm after 30 days, cold after 180) in {maintain_s:.1f} s; both "
        "memories compacted (VACUUM) before measuring.",
        "",
        "| memory | events | database MiB | archive MiB | total MiB | MiB per store-month |",
        "|---|---:|---:|---:|---:|---:|",
        f"| without tiering (all hot) | {n:,} | {_mib(plain_db)} | 0 | {_mib(plain_db)} | {_mib(plain_per_month)} |",
        f"| with tiering | {n:,} | {_mib(tiered_db)} | {_mib(archive_total)} | {_mib(tiered_total)} | "
        f"{_mib(tiered_total / args.months)} |",
        f"| - hot tier ({hot_months:.1f} months) | {hot_n:,} | | | {_mib(hot_bytes)} | {_mib(hot_bytes / hot_months)} |",
        f"| - warm tier ({n_warm_months:.1f} months) | {warm_n:,} | | | {_mib(warm_bytes)} | "
        f"{_mib(warm_bytes / n_warm_months)} |",
        f"| - cold tier ({n_cold_months:.1f} months) | {int(cold_events):,} | | | {_mib(cold_bytes)} | "
        f"{_mib(cold_bytes / n_cold_months)} |",
        f"| - rollup (all months, the same without tiering) | | {_mib(rollup_bytes)} | | {_mib(rollup_bytes)} | |",
        f"| - other tables (caches, schema) | | {_mib(other_bytes)} | | {_mib(other_bytes)} | |",
        "",
        f"Tiering makes the {args.months}-month memory {ratio:.1f}x smaller (goal >= 5x). Per store-month a cold "
        f"month costs {plain_per_month / max(1.0, cold_bytes / n_cold_months):.1f}x less than an untiered one, a warm "
        f"month {plain_per_month / max(1.0, warm_bytes / n_warm_months):.1f}x less; from the measured per-month "
        f"costs, cold after 30 days would make it "
        f"{plain_db / (hot_bytes / hot_months + (args.months - 1) * cold_bytes / n_cold_months + rollup_bytes + other_bytes):.1f}x "
        f"smaller, and the rollup alone bounds the ratio at {plain_db / max(1, rollup_bytes):.1f}x.",
        "",
        "| `adamm ask` over 12 months, tiered | tiers | status | median s | over 1 month, hot only | status | median s | ratio |",
        "|---|---|---|---:|---|---|---:|---:|",
    ]
    for qy, py, ty, qm, pm, tm in lat_rows:
        lines.append(
            f"| {qy} | {', '.join(py.get('tiers') or [])} | {py['status']} | {ty:.2f} | {qm} | {pm['status']} | "
            f"{tm:.2f} | {ty / tm:.2f}x |"
        )
    lines += [
        "",
        f"Warm-tier recall@10 (int8 vectors with a per-vector scale against float32, hybrid search over the warm "
        f"months, {nq} query vectors): {recall:.3f} (goal >= 0.95).",
    ]
    table = "\n".join(lines)
    print(table)
    if args.docs:
        doc = ROOT / "docs" / "benchmarks.md"
        text = doc.read_text(encoding="utf-8")
        block = f"{MARK[0]}\n{table}\n{MARK[1]}"
        if MARK[0] in text:
            head, rest = text.split(MARK[0], 1)
            _, tail = rest.split(MARK[1], 1)
            text = head + block + tail
        else:
            text = text.rstrip("\n") + "\n\n## Tiers: a year in the memory\n\n" + block + "\n"
        doc.write_text(text, encoding="utf-8")
        logger.info("wrote the table into %s", doc)
    if args.workdir is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
