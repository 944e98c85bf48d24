#!/usr/bin/env python3
"""Benchmark: years of one store in the memory with and without tiering (``adamm maintain``).

Simulates one store (:mod:`edge.sim`, transcripts included, so text events carry the text
encoder's vectors when it is installed) at ``--scale`` customers a day and grows two memories
side by side through :class:`edge.memory.store.Store` (``adamm import``'s path): one never
maintained (all hot), one maintained at the end of every simulated month with the default tiers
(warm after 30 days, cold after 180), as a store running ``adamm run`` would be. At each of
``--checkpoints`` (months, default 12, 24, 36) both are compacted (VACUUM) and measured:

- memory size (database plus archive) with and without tiering, and the tiered memory's growth
  per month since the previous checkpoint;
- at the last checkpoint, per store-month of each tier: the database pages of the event tables
  (events and their children, by event count), of the vectors (float32 vec0 tables: hot; int8
  tables: warm) and of the archive index, plus the archive files of that tier's months; the
  rollup per month (the same with and without tiering) is a line of its own;
- ``adamm ask`` latency (whole process, median of ``--repeats``) of questions over the whole span
  on the tiered memory against the same questions over its last month on a memory holding only
  that month, hot;
- warm-tier recall@10: the top 10 of hybrid search over the warm months with int8 vectors against
  float32 (the untiered memory), for ``--queries`` query vectors (stored vectors of hot events).

The goals it checks: a cold store-month at most 1/8 of a hot one; the growth per month once the
memory is older than 180 days equal to a cold month's cost (hot and warm stay flat); ``adamm ask``
over any span within 2x of a month's.

Prints a Markdown table on stdout (progress on stderr); ``--docs`` also writes it into
``docs/benchmarks.md`` (between the ``bench_tiering`` markers). Memories are built in ``--workdir``.

Usage: ``python3 scripts/bench_tiering.py [--checkpoints 12,24,36] [--scale 60] [--repeats 3] [--docs]``.
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
#: asked over the whole span (tiered) and over the last month (a memory of that month only)
QUESTIONS = (
    "What was the revenue between {a} and {b}?",
    "How did daily average order value trend between {a} and {b}?",
    "Compare average order value on rainy and sunny days between {a} and {b}",
)


def _import(db: Path, sim: SimConfig) -> int:
    with Store.open(db, timezone=TZ) as store:
        report = store.import_events(simulate(sim))
        from edge.memory.rollup import build as rollup

        store.writer.submit(rollup.refresh).result()  # the rollup, brought up to date (as adamm import does)
    return report.accepted


def _add_months(d: date, months: int) -> date:
    return date(d.year + (d.month - 1 + months) // 12, (d.month - 1 + months) % 12 + 1, 1)


def _local_midnight(d: date) -> datetime:
    return datetime(d.year, d.month, d.day, tzinfo=ZoneInfo(TZ))


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


def _tiers(tiered: Path, months: int) -> dict[str, float]:
    """Bytes per store-month of each tier of the tiered memory (module docstring)."""
    tb = _table_bytes(tiered)
    files = sorted(tiered.parent.glob("store.db.*.mev.jsonl.gz"))
    archive_total = sum(f.stat().st_size for f in files)
    with Store.open(tiered, readonly=True) as store, store.read() as conn:
        per_tier = {
            str(t): int(c) for t, c in conn.execute("SELECT tier, count(*) FROM events GROUP BY tier")
        }
        (indexed,) = conn.execute("SELECT count(*) FROM archive_index").fetchone()
        cold_by_month = {
            str(m): (int(c), int(k))
            for m, c, k in conn.execute(
                "SELECT substr(local_date, 1, 7), count(*), sum(NOT EXISTS (SELECT 1 FROM events AS e "
                "WHERE e.event_id = a.event_id)) FROM archive_index AS a GROUP BY 1"
            )
        }
        days_of = {
            name: int(conn.execute(sql).fetchone()[0])
            for name, sql in (
                ("hot", "SELECT count(DISTINCT local_date) FROM events WHERE tier = 'hot'"),
                ("warm", "SELECT count(DISTINCT local_date) FROM events WHERE tier = 'warm'"),
                ("cold", "SELECT count(*) FROM rollup_days WHERE state = 'closed'"),
            )
        }
    cold_events = sum(k for _, k in cold_by_month.values())
    hot_n, warm_n = per_tier.get("hot", 0), per_tier.get("warm", 0)
    event_bytes = sum(tb.get(t, 0) for t in EVENT_TABLES)
    vec_hot = sum(v for k, v in tb.items() if k.startswith("vec_") and not k.endswith("_warm"))
    vec_warm = sum(v for k, v in tb.items() if k.startswith("vec_") and k.endswith("_warm"))
    index_bytes = sum(tb.get(t, 0) for t in ("archive_index", "archive_members", "archive_files"))
    rollup_bytes = sum(v for k, v in tb.items() if k.startswith("rollup_"))
    arch_by_month = {f.name.split(".")[-4]: f.stat().st_size for f in files}
    # each month's archive file goes to the cold and the warm tier by its share of cold events
    arch_cold = sum(
        size * cold_by_month.get(m, (1, 0))[1] / max(1, cold_by_month.get(m, (1, 0))[0])
        for m, size in arch_by_month.items()
    )
    ev_total = hot_n + warm_n
    month_days = 365.25 / 12
    return {
        "hot_n": hot_n,
        "warm_n": warm_n,
        "cold_n": cold_events,
        "hot_months": days_of["hot"] / month_days,
        "warm_months": days_of["warm"] / month_days,
        "cold_months": days_of["cold"] / month_days,
        "hot": event_bytes * hot_n / max(1, ev_total) + vec_hot,
        "warm": event_bytes * warm_n / max(1, ev_total)
        + vec_warm
        + index_bytes * warm_n / max(1, indexed)
        + archive_total
        - arch_cold,
        "cold": arch_cold + index_bytes * cold_events / max(1, indexed),
        "rollup": rollup_bytes,
        "rollup_month": rollup_bytes / months,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoints", default="12,24,36", help="months at which to measure (default 12,24,36)")
    ap.add_argument("--scale", type=int, default=60, help="customers per simulated day (default 60)")
    ap.add_argument("--repeats", type=int, default=3, help="adamm ask runs per question (median)")
    ap.add_argument("--queries", type=int, default=100, help="query vectors for warm recall@10")
    ap.add_argument(
        "--workdir", type=Path, default=None, help="where the memories are built (default: a temp dir)"
    )
    ap.add_argument("--docs", action="store_true", help="write the table into docs/benchmarks.md")
    args = ap.parse_args()
    checkpoints = sorted({int(x) for x in str(args.checkpoints).split(",") if x.strip()})
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s: %(message)s")
    logging.getLogger("edge").setLevel(logging.WARNING)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench_tiering_"))
    work.mkdir(parents=True, exist_ok=True)
    started = datetime.now(UTC)

    plain = work / "plain" / "store.db"
    tiered = work / "tiered" / "store.db"
    month_db = work / "month" / "store.db"
    for p in (plain, tiered, month_db):
        if p.parent.exists():
            shutil.rmtree(p.parent)
        p.parent.mkdir(parents=True)

    rows: list[dict[str, Any]] = []
    total_n = 0
    maintain_s = 0.0
    done = 0
    prev_total = 0
    for cp in checkpoints:
        t0 = time.perf_counter()
        for m in range(done, cp):  # month by month: imported, then maintained at its end
            lo, hi = _add_months(START, m), _add_months(START, m + 1)
            sim = SimConfig(start=lo, days=(hi - lo).days, customers_per_day=args.scale, seed=13 + m)
            total_n += _import(plain, sim)
            _import(tiered, sim)
            t1 = time.perf_counter()
            with Store.open(tiered) as store:
                maintain(store, AdammConfig(), _local_midnight(hi))
            maintain_s += time.perf_counter() - t1
        done = cp
        logger.info("%d months (%d events) in %.1f s", cp, total_n, time.perf_counter() - t0)
        compact(plain, 0.0)
        compact(tiered, 0.0)
        plain_b = plain.stat().st_size
        tiered_b = tiered.stat().st_size + sum(
            f.stat().st_size for f in tiered.parent.glob("store.db.*.mev.jsonl.gz")
        )
        rows.append(
            {
                "months": cp,
                "events": total_n,
                "plain": plain_b,
                "tiered": tiered_b,
                "growth": (tiered_b - prev_total) / (cp - (rows[-1]["months"] if rows else 0)),
            }
        )
        prev_total = tiered_b
    months = checkpoints[-1]
    end = _add_months(START, months)
    now = _local_midnight(end)
    tiers = _tiers(tiered, months)

    # -- latency: the whole span on the tiered memory, the last month on a memory of it alone -------
    last_month = _add_months(START, months - 1)
    _import(
        month_db,
        SimConfig(start=last_month, days=(end - last_month).days, customers_per_day=args.scale, seed=13),
    )
    compact(month_db, 0.0)
    lat_rows = []
    for template in QUESTIONS:
        qy = template.format(a=START.isoformat(), b=(end - timedelta(days=1)).isoformat())
        qm = template.format(a=last_month.isoformat(), b=(end - timedelta(days=1)).isoformat())
        ty, py = _ask(tiered, qy, now, args.repeats)
        tm, pm = _ask(month_db, qm, now, args.repeats)
        lat_rows.append((qy, py, ty, qm, pm, tm))
        logger.info("%s %.2f s (%s) vs %.2f s", qy, ty, py.get("tiers"), tm)

    # -- recall ----------------------------------------------------------------------------------
    warm_since = now - timedelta(days=180)
    warm_until = now - timedelta(days=30)
    recall, nq = _recall(plain, tiered, warm_since, warm_until, args.queries)
    finished = datetime.now(UTC)
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = float("nan")

    hot_m = tiers["hot"] / max(1e-9, tiers["hot_months"])
    warm_m = tiers["warm"] / max(1e-9, tiers["warm_months"])
    cold_m = tiers["cold"] / max(1e-9, tiers["cold_months"])
    roll_m = tiers["rollup_month"]
    plain_m = rows[-1]["plain"] / months
    lines = [
        f"Benchmark (`python3 scripts/bench_tiering.py --checkpoints {','.join(map(str, checkpoints))} "
        f"--scale {args.scale} --repeats {args.repeats}`, {started:%Y-%m-%d %H:%M} UTC, "
        f"{str(finished - started).split('.')[0]} total, load average {load:.1f} at the end): one simulated store "
        f"({args.scale} customers a day, transcripts with text vectors) grown month by month in two memories: "
        "one never maintained (all hot), one maintained at the end of every month with the default tiers "
        f"(warm after 30 days, cold after 180; {maintain_s:.0f} s of `maintain` in all); both compacted "
        "(VACUUM) before each measurement. Sizes are database plus archive.",
        "",
        "| months | events | all hot MiB | tiered MiB | all hot / tiered | tiered growth per month since the previous row, MiB |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['months']} | {r['events']:,} | {_mib(r['plain'])} | {_mib(r['tiered'])} | "
            f"{r['plain'] / r['tiered']:.1f}x | {_mib(r['growth'])} |"
        )
    lines += [
        "",
        f"Per store-month at {months} months (the rollup, the same with or without tiering, on a line of its own):",
        "",
        "| tier | months | events | MiB per store-month |",
        "|---|---:|---:|---:|",
        f"| hot | {tiers['hot_months']:.1f} | {int(tiers['hot_n']):,} | {_mib(hot_m)} |",
        f"| warm | {tiers['warm_months']:.1f} | {int(tiers['warm_n']):,} | {_mib(warm_m)} |",
        f"| cold | {tiers['cold_months']:.1f} | {int(tiers['cold_n']):,} | {_mib(cold_m)} |",
        f"| rollup (every month) | {months} | | {_mib(roll_m)} |",
        f"| all hot, untiered (for reference) | {months} | {rows[-1]['events']:,} | {_mib(plain_m)} |",
        "",
        f"Goals: a cold store-month is 1/{hot_m / max(1.0, cold_m):.1f} of a hot one (goal at most 1/8; "
        f"{'met' if hot_m >= 8 * cold_m else 'not met'}), 1/{hot_m / max(1.0, cold_m + roll_m):.1f} with its "
        "rollup rows.",
    ]
    late = [r for r in rows if r["months"] > 6]
    if len(late) >= 2:
        g = late[-1]["growth"]
        lines[-1] += (
            f" Growth per month after 180 days: {_mib(g)} MiB between the last two checkpoints, against "
            f"{_mib(cold_m + roll_m)} MiB for a cold month with its rollup rows ({g / max(1.0, cold_m + roll_m):.2f}x; "
            "goal: equal, hot and warm flat)."
        )
    lines += [
        "",
        f"| `adamm ask` over {months} months, tiered | tiers | status | median s | over its last month, hot only | status | median s | ratio |",
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
            text = text.rstrip("\n") + "\n\n## Tiers: years in the memory\n\n" + block + "\n"
        doc.write_text(text, encoding="utf-8")
        logger.info("wrote the table into %s", doc)
    if args.workdir is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
