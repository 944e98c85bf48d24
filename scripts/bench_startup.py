#!/usr/bin/env python3
"""Benchmark: where a whole ``adamm ask`` process spends its time outside the analysis step.

For one memory (``--db``, else the ``--size`` memory that :mod:`bench_ask` builds and caches in
``--workdir``) this measures, each as separate processes (median of ``--repeats``):

- the bare interpreter (``python -c pass``) and the import of the ``adamm ask`` path;
- ``import scipy.stats`` for reference (what the ask path no longer imports);
- the first ``adamm ask`` of each question after the start-up caches are emptied (vocabulary rebuilt, text encoder
  loaded for the question's phrases) and warm ones, per question: whole process, the payload's
  ``elapsed_ms`` (the analysis step) and the difference (start-up, parse, output).

Bytecode is written to a private ``PYTHONPYCACHEPREFIX`` under the workdir so every import is
timed as an installed package runs it (``PYTHONDONTWRITEBYTECODE`` would recompile every module
each time); ``--no-bytecode`` keeps the environment as it is. Prints a Markdown table on stdout
with the load average; progress on stderr.

Usage: ``python3 scripts/bench_startup.py [--db PATH | --size 100000] [--repeats 5]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_ask  # the sibling script: memory building and the questions

ASK_IMPORTS = (
    "import edge.cli, edge.cli.cmd_ask, edge.cli.cmd_search, edge.analysis.engine, edge.memory.store"
)


def _env(bytecode: bool, workdir: Path) -> dict[str, str]:
    env = dict(os.environ)
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(workdir / "pycache")
    return env


def _median_wall(cmd: list[str], env: dict[str, str], repeats: int) -> float:
    walls = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run(cmd, env=env, capture_output=True, check=True)
        walls.append(time.perf_counter() - t0)
    return statistics.median(walls)


def _cpu_children() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _ask(db: Path, question: str, now: str, env: dict[str, str]) -> tuple[float, float, str, float]:
    """Whole-process wall seconds, the payload's elapsed_ms, its status, and the process's CPU
    seconds (user + system: less sensitive than wall time to other work on a shared machine)."""
    cmd = [sys.executable, "-m", "edge", "ask", "--db", str(db), "--now", now, "--json", question]
    cpu0 = _cpu_children()
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    cpu = _cpu_children() - cpu0
    if proc.returncode != 0:
        return wall, float("nan"), f"error rc={proc.returncode}: {proc.stderr.strip()[-200:]}", cpu
    payload = json.loads(proc.stdout)
    return wall, float(payload.get("elapsed_ms") or "nan"), str(payload.get("status")), cpu


def _empty_caches(db: Path) -> None:
    from edge.memory.store import Store

    with Store.open(db) as store:
        store.writer.submit(
            lambda c: c.execute("DELETE FROM vocabulary_cache; DELETE FROM text_vector_cache")
        ).result()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--db", type=Path, help="an existing memory (else --size is built by bench_ask)")
    parser.add_argument("--size", type=int, default=100_000, help="events of the simulated memory")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--workdir", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "adamm-bench"
    )
    parser.add_argument("--no-bytecode", action="store_true", help="keep PYTHONDONTWRITEBYTECODE as set")
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    config = bench_ask.sim_config(args.size)
    db = args.db
    if db is None:
        db, _parquet, config, _n = bench_ask.build(args.size, args.workdir)
    now = bench_ask.now_of(config)
    env = _env(not args.no_bytecode, args.workdir)
    py = sys.executable
    subprocess.run([py, "-c", ASK_IMPORTS], env=env, check=True)  # write the bytecode once
    print("bench: interpreter and imports", file=sys.stderr, flush=True)
    bare = _median_wall([py, "-c", "pass"], env, args.repeats)
    imports = _median_wall([py, "-c", ASK_IMPORTS], env, args.repeats)
    scipy_stats = _median_wall([py, "-c", "import numpy, scipy.stats"], env, args.repeats)
    numpy_only = _median_wall([py, "-c", "import numpy"], env, args.repeats)
    load = os.getloadavg()
    out = [
        f"memory `{db.name}`; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
        f"bytecode {'cached' if not args.no_bytecode else 'as the environment says'}",
        "",
        "| step | median s |",
        "|---|---:|",
        f"| `python -c pass` | {bare:.3f} |",
        f"| import the `adamm ask` path | {imports:.3f} |",
        f"| `import scipy.stats` (not on the ask path; numpy alone {numpy_only:.3f}) | {scipy_stats:.3f} |",
        "",
        "| intent | question | status | first ask s (CPU s), caches empty | warm ask s (CPU s), median "
        "| analysis ms | outside analysis s |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for case in bench_ask.cases(now):
        print(f"bench: {case.intent}", file=sys.stderr, flush=True)
        _empty_caches(db)
        first, _first_ms, status, first_cpu = _ask(db, case.question, now.isoformat(), env)
        runs = [_ask(db, case.question, now.isoformat(), env) for _ in range(args.repeats)]
        wall = statistics.median(r[0] for r in runs)
        ms = statistics.median(r[1] for r in runs)
        cpu = statistics.median(r[3] for r in runs)
        status = runs[-1][2] if runs else status
        out.append(
            f"| {case.intent} | {case.question} | {status} | {first:.2f} ({first_cpu:.2f}) | {wall:.2f} "
            f"({cpu:.2f}) | {ms:.0f} | {wall - ms / 1000:.2f} |"
        )
    load = os.getloadavg()
    out.append("")
    out.append(f"load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
