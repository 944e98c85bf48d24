"""``adamm maintain`` with its facts step (edge.services.maintain): the facts it opens are what
``adamm facts`` lists, a SIGKILL inside the facts step followed by a rerun gives the facts of an
uninterrupted run, and the facts it opens and closes reach the sync outbox through the marks of
migration ``0013_facts_sync`` (a closed fact is re-sent with its ``valid_to``, as a new version).

Commands run as ``python -m edge`` with this tree on ``PYTHONPATH`` (the tests exercise this
checkout, not an installed copy)."""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from edge.config import AdammConfig
from edge.memory.semantic import facts as repo
from edge.memory.store import Store
from edge.services.facts import distil_facts
from edge.sim import SimConfig, simulate
from edge.sync import messages as m
from edge.sync.outbox import Outbox, fact_body
from hub.db import open_hub
from hub.ingest import ingest

ROOT = Path(__file__).resolve().parents[1]
SIM = SimConfig(days=63, customers_per_day=40, with_text=False)
TZ = ZoneInfo(SIM.timezone)
#: the night after the last simulated day
END = datetime.combine(SIM.start + timedelta(days=SIM.days), datetime.min.time(), TZ) + timedelta(hours=2)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "edge", *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300
    )


@functools.cache
def _events() -> tuple[dict[str, Any], ...]:
    return tuple(simulate(SIM))


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("maintain-base") / "base.db"
    with Store.open(path, timezone=SIM.timezone) as store:
        assert store.import_events(_events()).rejected == 0
    return path


@pytest.fixture(scope="module")
def maintained(base: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A copy of the base memory after one uninterrupted ``adamm maintain --json``."""
    path = tmp_path_factory.mktemp("maintained") / "store.db"
    shutil.copy(base, path)
    out = cli("maintain", "--db", str(path), "--now", END.isoformat(), "--json")
    assert out.returncode == 0, out.stderr
    return path, json.loads(out.stdout)


def _facts(path: Path, *, current_only: bool = False) -> list[dict[str, Any]]:
    with Store.open(path, readonly=True, create=False) as store, store.read() as conn:
        return repo.list_facts(conn, current_only=current_only)


def _marks(path: Path) -> list[tuple[Any, ...]]:
    with Store.open(path, readonly=True, create=False) as store, store.read() as conn:
        return [
            tuple(r)
            for r in conn.execute("SELECT store_id, question, high_water FROM fact_marks ORDER BY 1, 2")
        ]


def _fact_payloads(path: Path) -> dict[str, bytes]:
    """Derive the outbox and return its pending fact messages: key -> encoded summary."""
    with Store.open(path, create=False) as store:
        Outbox(store).derive()
        with store.read() as conn:
            rows = conn.execute(
                "SELECT o.key, p.payload FROM outbox AS o JOIN outbox_payloads AS p ON p.seq = o.seq "
                "WHERE o.kind = 'fact' AND o.state = 'pending'"
            ).fetchall()
    return {str(k): bytes(p) for k, p in rows}


def _fact_summaries(path: Path) -> dict[str, tuple[int, dict[str, Any]]]:
    """Derive the outbox and return its fact summaries: key -> (version, body)."""
    out = {}
    for k, p in _fact_payloads(path).items():
        msg = json.loads(p)
        out[k] = (int(msg["version"]), msg["body"])
    return out


def test_maintain_json_reports_the_facts_step_before_the_tiers_and_adamm_facts_lists_them(
    maintained: tuple[Path, dict[str, Any]],
) -> None:
    path, report = maintained
    assert report["ok"] is True
    assert [k for k in report if k in ("facts", "tiers")] == ["facts", "tiers"]
    facts = report["facts"]
    assert facts["opened"] > 0 and facts["evaluations"] > 0
    assert set(facts["high_water"]) == {SIM.store_id}
    out = cli("facts", "--db", str(path), "--json")
    assert out.returncode == 0, out.stderr
    listed = json.loads(out.stdout)
    assert listed == _facts(path, current_only=True) and len(listed) == facts["current"] > 0
    every = json.loads(cli("facts", "--db", str(path), "--all", "--json").stdout)
    assert len(every) == facts["opened"]
    # the run is logged with its report
    with Store.open(path, readonly=True, create=False) as store, store.read() as conn:
        (logged,) = conn.execute(
            "SELECT report_json FROM maintain_runs WHERE finished_at IS NOT NULL"
        ).fetchone()
    assert json.loads(logged)["facts"] == facts
    # the false discovery control of the run: its counts in the report, and adamm facts says them
    assert facts["tested"] >= facts["passed"] > 0 and facts["fdr"] == 0.05
    said = f"共检验 {facts['tested']} 项，{facts['passed']} 项通过"  # the store is in Asia/Shanghai: zh
    assert said in out.stderr
    assert said in cli("facts", "--db", str(path)).stdout.splitlines()[0]


def test_a_second_maintain_has_no_new_facts_to_distil(maintained: tuple[Path, dict[str, Any]]) -> None:
    path = maintained[0]  # in place: the memory's archive is beside it
    before = _facts(path)
    out = cli("maintain", "--db", str(path), "--now", END.isoformat(), "--json")
    assert out.returncode == 0, out.stderr
    again = json.loads(out.stdout)["facts"]
    assert (again["evaluations"], again["opened"], again["closed"]) == (0, 0, 0)
    assert _facts(path) == before


#: the child: ``adamm maintain`` whose facts step SIGKILLs the process at the given question's
#: transaction (before it commits)
_KILLED_MAINTAIN = """
import os, signal, sys
from edge.cli import main
from edge.memory.semantic import facts as repo

at = int(sys.argv[1])
calls = {"n": 0}
original = repo.apply_run
def counted(*args, **kwargs):
    calls["n"] += 1
    if calls["n"] == at:
        os.kill(os.getpid(), signal.SIGKILL)
    return original(*args, **kwargs)
repo.apply_run = counted
sys.exit(main(["maintain", *sys.argv[2:]]))
"""


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")
@pytest.mark.parametrize("at", [1, 5])
def test_sigkill_in_the_facts_step_then_a_rerun_gives_the_facts_of_an_uninterrupted_run(
    base: Path, maintained: tuple[Path, dict[str, Any]], tmp_path: Path, at: int
) -> None:
    path = tmp_path / "killed.db"
    shutil.copy(base, path)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            _KILLED_MAINTAIN,
            str(at),
            "--db",
            str(path),
            "--now",
            END.isoformat(),
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=300,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert proc.stdout == ""
    once = maintained[0]
    assert len(_marks(path)) == at - 1 < len(_marks(once))
    with Store.open(path, readonly=True, create=False) as store, store.read() as conn:
        (unfinished,) = conn.execute(
            "SELECT count(*) FROM maintain_runs WHERE finished_at IS NULL"
        ).fetchone()
    assert unfinished == 1
    out = cli("maintain", "--db", str(path), "--now", END.isoformat(), "--json")
    assert out.returncode == 0, out.stderr
    assert _facts(path) == _facts(once)
    assert _marks(path) == _marks(once)
    # and the hub would get the same facts from both
    assert _fact_summaries(path) == _fact_summaries(tmp_copy(once, tmp_path))


def tmp_copy(path: Path, tmp_path: Path) -> Path:
    out = tmp_path / f"copy-{path.name}"
    shutil.copy(path, out)
    return out


def test_facts_reach_the_outbox_and_a_closed_fact_is_sent_again_with_its_valid_to(
    base: Path, tmp_path: Path
) -> None:
    path = tmp_path / "sync.db"
    shutil.copy(base, path)
    mid = END - timedelta(days=21)
    with Store.open(path, create=False) as store:
        distil_facts(store, AdammConfig(), mid)
        with store.read() as conn:
            first = {f["fact_id"]: f for f in repo.list_facts(conn)}
            (marked,) = conn.execute("SELECT count(*) FROM sync_dirty_facts").fetchone()
    assert first and marked == len(first)
    first_payloads = _fact_payloads(path)
    sent = _fact_summaries(path)
    assert sent == {m.fact_key(fid): (1, fact_body(f)) for fid, f in first.items()}
    for _v, body in sent.values():
        assert set(body) == set(m.FACT_FIELDS)
    with Store.open(path, create=False) as store:
        with store.read() as conn:
            assert conn.execute("SELECT count(*) FROM sync_dirty_facts").fetchone() == (0,)
            ids = [str(r[0]) for r in conn.execute("SELECT msg_id FROM outbox WHERE kind = 'fact'")]
        # the hub confirms them all
        assert Outbox(store).mark_done(SIM.store_id, ids) == len(first)
        distil_facts(store, AdammConfig(), END)
        with store.read() as conn:
            later = {f["fact_id"]: f for f in repo.list_facts(conn)}
    closed = {
        fid for fid, f in later.items() if fid in first and first[fid]["valid_to"] is None and f["valid_to"]
    }
    assert closed, "the later run closes a fact the first one opened"
    again_payloads = _fact_payloads(path)
    again = _fact_summaries(path)
    changed = {fid for fid, f in later.items() if fid not in first or f != first[fid]}
    assert set(again) == {m.fact_key(fid) for fid in changed}
    for fid in changed:
        version, body = again[m.fact_key(fid)]
        assert body == fact_body(later[fid])
        assert version == (2 if fid in first else 1)
    for fid in closed:
        assert again[m.fact_key(fid)][1]["valid_to"] == later[fid]["valid_to"] is not None
    # the hub keeps the highest version per fact, whatever the order it gets them in
    hub = open_hub(str(tmp_path / "hub.db"), create=True)
    try:
        for payload in [*again_payloads.values(), *first_payloads.values(), *again_payloads.values()]:
            # an older version after a newer one: kept_newer (CONTRACT.md section 5's receipt)
            assert ingest(hub, m.summary_topic(SIM.store_id), payload).outcome in (
                "stored",
                "kept",
                "kept_newer",
            )
        held = {str(f): json.loads(str(b)) for f, b in hub.query("SELECT fact_id, body FROM hub_facts")}
    finally:
        hub.close()
    assert held == {fid: fact_body(f) for fid, f in later.items()}
    # a rerun with nothing new sends nothing
    with Store.open(path, create=False) as store:
        distil_facts(store, AdammConfig(), END)
    assert set(_fact_summaries(path)) == set(again)


def test_statements_are_scrubbed_of_phone_and_id_numbers_before_they_are_queued(tmp_path: Path) -> None:
    path = tmp_path / "scrub.db"
    with Store.open(path, timezone=SIM.timezone) as store:
        store.import_events(list(simulate(SimConfig(days=1, customers_per_day=5, with_text=False))))
        rec = repo.FactRecord(
            fact_id="f-scrub",
            store_id=SIM.store_id,
            question="manual",
            slot="s",
            signature="x",
            statement={"zh": "顾客 13812345678 投诉", "en": "customer 13812345678 complained"},
            metric="complaint_count",
            dimension=None,
            value=1,
            effect=None,
            n=1,
            p_value=None,
            confidence=0.02,
            evidence=[],
            evidence_count=0,
            valid_from="2025-09-01",
            valid_to=None,
            plan={},
            evaluated_until="2025-09-02",
        )
        repo.apply_run(store, SIM.store_id, "manual", [rec], "2025-09-01")
    (summary,) = (v for k, v in _fact_summaries(path).items() if k == m.fact_key("f-scrub"))
    assert "13812345678" not in json.dumps(summary[1], ensure_ascii=False)
    assert summary[1]["statement"]["en"].startswith("customer ")
