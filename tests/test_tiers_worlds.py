"""The tiers on two independent worlds: every intent the rollup can express answers the same over
a memory that is all hot, hot + warm + cold, all cold, all cold with some days restored, and
after ``adamm maintain`` was SIGKILLed and rerun (CONTRACT.md section 6).

The worlds: the simulator's store (Asia/Shanghai, ``rain``/``sunny``, its own id format) and
:mod:`world2` (Europe/Berlin across the end of summer time, hex ids, ``rainy``/``clear``/
``overcast``/``snow``, German zones, a closed week, duplicate lines), each written as JSON Lines
and imported through ``adamm import``. Over all-cold days the evidence cites archived event ids
(each restorable by ``adamm restore``), and what the rollup cannot express (retrieval,
co-occurrence within minutes) is ``insufficient_data`` naming ``adamm restore``.

Each world's memories are built once per module (import and maintain are subprocesses, as a user
runs them); the answers are asked in-process.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import world2

from edge.config import AdammConfig
from edge.memory.semantic import facts as repo
from edge.memory.store import Store
from edge.services.ask import AskService
from edge.sim.simulator import SimConfig, simulate

ROOT = Path(__file__).resolve().parents[1]
ADDITIVE = {"event_count", "footfall", "order_count", "revenue", "complaint_count"}

#: (question template, its intent): ``{a}``/``{b}`` are the world's first and last asked dates
QUESTIONS: list[tuple[str, str]] = [
    ("What was the revenue between {a} and {b}?", "aggregate"),
    ("2025年10月的销售额是多少？", "aggregate"),
    ("How many orders were there between {a} and {b}?", "aggregate"),
    ("What was the average queue length between {a} and {b}?", "aggregate"),
    ("What was the footfall on 2025-10-26?", "aggregate"),  # world2: the 25-hour day
    ("Compare average order value on rainy and sunny days between {a} and {b}", "compare"),
    ("Compare footfall on weekends and weekdays between {a} and {b}", "compare"),
    ("How did daily revenue trend between {a} and {b}?", "trend"),
    ("Break down footfall by weather between {a} and {b}", "breakdown"),
    ("Break down footfall by hour between 2025-10-20 and 2025-11-02", "breakdown"),
    ("Which product categories had the highest revenue between {a} and {b}?", "top_k"),
    ("Were there any unusual days for footfall between {a} and {b}?", "anomaly"),
    ("Is there a weekly pattern in footfall between {a} and {b}?", "periodicity"),
    ("Is queue length correlated with complaints between {a} and {b}?", "correlation"),
    (
        "Do complaints and checkout queues happen together between {a} and {b}?",
        "co_occurrence",
    ),  # by the hour
]
#: what the rollup cannot express over archived days
BEYOND_ROLLUP: list[tuple[str, str]] = [
    ("pull up video clips of complaints between {a} and {b}", "retrieve"),
    ("Do complaints and negative emotion co-occur within 10 minutes between {a} and {b}?", "co_occurrence"),
]
CRASH_POINTS = ["warm_batch:2", "archive_written:2", "days_closed:1", "cold_deleted:1", "cold_committed:1"]


@dataclass
class World:
    name: str
    tz: str
    first: date  # the first and the last day asked about
    last: date
    lines: Callable[[], list[str]]
    late_day: date  # a day that late events arrive for, after it closed
    built: dict[str, Path] = field(default_factory=dict)
    answers: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)

    def q(self, template: str) -> str:
        return template.format(a=self.first.isoformat(), b=self.last.isoformat())

    @property
    def now_cold(self) -> str:  # nine months after the last day: every day cold
        return (self.last + timedelta(days=270)).isoformat() + "T00:00:00"

    @property
    def now_mixed(self) -> str:  # the day after the last: hot, warm and cold (the config below)
        return (self.last + timedelta(days=2)).isoformat() + "T00:00:00"


def _sim_lines() -> list[str]:
    sim = SimConfig(start=date(2025, 9, 1), days=92, customers_per_day=120, seed=7)
    return [json.dumps(e, ensure_ascii=False) for e in simulate(sim)]


def _world2_lines() -> list[str]:
    return world2.generate().lines


WORLDS = {
    "sim": World("sim", "Asia/Shanghai", date(2025, 9, 1), date(2025, 11, 30), _sim_lines, date(2025, 10, 8)),
    "world2": World(
        "world2", world2.TZ, date(2025, 8, 11), date(2025, 11, 30), _world2_lines, date(2025, 10, 8)
    ),
}


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "edge", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        cwd=ROOT,
        timeout=600,
    )


def _mixed_config(folder: Path) -> Path:
    conf = folder / "edge.toml"
    conf.write_text(
        f'[tiers]\nwarm_after_days = 20\ncold_after_days = 50\nbatch_events = 2000\nwarm_media_dir = "{folder / "media"}"\n',
        encoding="utf-8",
    )
    return conf


def _cold_config(folder: Path) -> Path:
    conf = folder / "edge.toml"
    conf.write_text(
        f'[tiers]\nbatch_events = 2000\nwarm_media_dir = "{folder / "media"}"\n', encoding="utf-8"
    )
    return conf


def _copy(src: Path, dest: Path) -> Path:
    """The memory's folder (database and archive) copied: each state has its own."""
    shutil.copytree(src.parent, dest, ignore=shutil.ignore_patterns("*.toml", "media"))
    return dest / src.name


def _ask_all(db: Path, world: World, questions: list[tuple[str, str]]) -> dict[str, dict[str, Any]]:
    with Store.open(db) as store:
        asker = AskService(store, AdammConfig(), now=datetime.fromisoformat(world.now_cold))
        return {world.q(t): asker.ask(world.q(t)) for t, _ in questions}


def _same(before: dict[str, Any], after: dict[str, Any], what: str) -> None:
    """Equal results: additive metrics exactly, means and ratios within 1%."""
    additive = str(before["plan"].get("target_metric", "")) in ADDITIVE

    def walk(a: Any, b: Any, path: str) -> None:
        if isinstance(a, dict):
            assert isinstance(b, dict) and set(a) == set(b), (what, path, a, b)
            for k in a:
                if k not in ("p_value", "slope_per_bucket"):  # a test statistic over means
                    walk(a[k], b[k], f"{path}.{k}")
        elif isinstance(a, list):
            assert isinstance(b, list) and len(a) == len(b), (what, path)
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                walk(x, y, f"{path}[{i}]")
        elif isinstance(a, bool) or a is None or isinstance(a, str):
            assert a == b, (what, path, a, b)
        elif isinstance(a, int | float):
            if additive or path.endswith(".n"):
                assert a == pytest.approx(b, rel=1e-9, abs=1e-6), (what, path, a, b)
            else:
                assert math.isclose(a, b, rel_tol=0.01, abs_tol=1e-9), (what, path, a, b)

    assert after["status"] == before["status"], (what, after["summary"], after.get("missing"))
    walk(before["result"], after["result"], "result")


def _held_or_archived(db: Path, ids: list[str]) -> dict[str, str]:
    """event id -> ``hot``/``warm`` (held) or ``archived`` (only in the archive); unknown ids missing."""
    out: dict[str, str] = {}
    with Store.open(db) as store, store.read() as conn:
        for eid in ids:
            held = conn.execute("SELECT tier FROM events WHERE event_id = ?", (eid,)).fetchone()
            archived = conn.execute("SELECT 1 FROM archive_index WHERE event_id = ?", (eid,)).fetchone()
            if held:
                out[eid] = str(held[0])
            elif archived:
                out[eid] = "archived"
    return out


# -- the memories, built once per world ------------------------------------------------------------


@pytest.fixture(scope="module", params=list(WORLDS))
def world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> World:
    w = WORLDS[request.param]
    if "hot" in w.built:
        return w
    root = tmp_path_factory.mktemp(w.name)
    src = root / "events.jsonl"
    src.write_text("\n".join(w.lines()) + "\n", encoding="utf-8")
    hot = root / "hot" / "store.db"
    hot.parent.mkdir()
    out = _cli("import", "--db", str(hot), "--tz", w.tz, "--json", str(src))
    assert out.returncode == 0, out.stderr[-2000:]
    w.built["hot"] = hot
    w.answers["hot"] = _ask_all(hot, w, QUESTIONS + BEYOND_ROLLUP)
    for t, intent in QUESTIONS + BEYOND_ROLLUP:
        p = w.answers["hot"][w.q(t)]
        assert p["plan"].get("intent") == intent, (t, p["plan"])
        assert p["status"] == "ok" and p["tiers"] == ["hot"], (w.name, t, p["summary"], p.get("missing"))
    return w


def _state(world: World, name: str, root: Path) -> Path:
    """The memory of ``world`` in state ``name`` (built on first use)."""
    if name in world.built:
        return world.built[name]
    if name == "cold":
        db = _copy(world.built["hot"], root / f"{world.name}-cold")
        out = _cli(
            "maintain", "--db", str(db), "--now", world.now_cold, "--config", str(_cold_config(db.parent))
        )
    elif name == "mixed":
        db = _copy(world.built["hot"], root / f"{world.name}-mixed")
        out = _cli(
            "maintain", "--db", str(db), "--now", world.now_mixed, "--config", str(_mixed_config(db.parent))
        )
    else:
        raise AssertionError(name)
    assert out.returncode == 0, out.stderr[-2000:]
    world.built[name] = db
    return db


@pytest.fixture(scope="module")
def states(world: World, tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    root = tmp_path_factory.mktemp(f"{world.name}-states")
    return lambda name: _state(world, name, root)


def _answers(world: World, state: str, db: Path) -> dict[str, dict[str, Any]]:
    if state not in world.answers:
        world.answers[state] = _ask_all(db, world, QUESTIONS + BEYOND_ROLLUP)
    return world.answers[state]


# -- all cold --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("template", "intent"), QUESTIONS, ids=[f"{i}-{n}" for n, (_, i) in enumerate(QUESTIONS)]
)
def test_all_cold_answers_as_all_hot(
    world: World, states: Callable[[str], Path], template: str, intent: str
) -> None:
    db = states("cold")
    q = world.q(template)
    before, after = world.answers["hot"][q], _answers(world, "cold", db)[q]
    assert after["status"] == "ok", (world.name, q, after["summary"], after.get("missing"))
    assert after["tiers"] == ["cold"] and after["plan"]["intent"] == intent
    _same(before, after, f"{world.name}: {q}")
    ids = [e["event_id"] for e in after["evidence"]]
    assert ids
    where = _held_or_archived(db, ids)
    assert all(where.get(i) == "archived" for i in ids), (q, where)  # nothing hot is left to cite


def test_an_all_cold_memory_checks_sound(world: World, states: Callable[[str], Path]) -> None:
    check = _cli("check", "--db", str(states("cold")))
    assert check.returncode == 0, check.stdout + check.stderr


def test_restore_by_day_refuses_what_it_cannot_read(world: World, states: Callable[[str], Path]) -> None:
    db = str(states("cold"))
    bad = _cli("restore", "--db", db, "--day", "2025-10-12..2025-10-06")
    assert bad.returncode == 2 and "ends before it starts" in bad.stderr
    assert _cli("restore", "--db", db, "--day", "2025-13-01").returncode == 2
    assert _cli("restore", "--db", db).returncode == 2  # neither ids nor days


@pytest.mark.parametrize(("template", "intent"), BEYOND_ROLLUP, ids=[i for _, i in BEYOND_ROLLUP])
def test_what_the_rollup_cannot_say_over_cold_days_names_restore(
    world: World, states: Callable[[str], Path], template: str, intent: str
) -> None:
    q = world.q(template)
    after = _answers(world, "cold", states("cold"))[q]
    assert after["plan"]["intent"] == intent
    assert after["status"] == "insufficient_data" and after["result"] == {}
    assert any("adamm restore" in m for m in after["missing"]), after["missing"]


def test_evidence_of_a_cold_answer_restores_as_imported(
    world: World, states: Callable[[str], Path], tmp_path: Path
) -> None:
    db = _copy(states("cold"), tmp_path / "r")
    payload = _answers(world, "cold", states("cold"))[world.q(QUESTIONS[5][0])]  # the weather compare
    ids = [e["event_id"] for e in payload["evidence"]][:5]
    out = _cli("restore", "--db", str(db), "--json", *ids)
    assert out.returncode == 0, out.stderr
    got = [json.loads(line) for line in out.stdout.splitlines()]
    imported = {}
    for line in world.lines():
        e = json.loads(line)
        imported[e["event_id"]] = e
    assert [g["event_id"] for g in got] == ids
    for g in got:
        assert g == imported[g["event_id"]]


# -- hot + warm + cold -----------------------------------------------------------------------------


def test_hot_warm_and_cold_answer_as_all_hot(world: World, states: Callable[[str], Path]) -> None:
    db = states("mixed")
    after = _answers(world, "mixed", db)
    for t, _ in QUESTIONS:
        q = world.q(t)
        _same(world.answers["hot"][q], after[q], f"{world.name} mixed: {q}")
        assert after[q]["evidence"] and len(
            _held_or_archived(db, [e["event_id"] for e in after[q]["evidence"]])
        ) == len(after[q]["evidence"])
    assert after[world.q(QUESTIONS[0][0])]["tiers"] == ["hot", "warm", "cold"]
    check = _cli("check", "--db", str(db))
    assert check.returncode == 0, check.stdout + check.stderr


# -- all cold, then some days restored -------------------------------------------------------------


def test_restored_days_answer_the_same_and_are_searchable(
    world: World, states: Callable[[str], Path], tmp_path: Path
) -> None:
    db = _copy(states("cold"), tmp_path / "rd")
    lo, hi = date(2025, 10, 6), date(2025, 10, 12)
    out = _cli("restore", "--db", str(db), "--day", f"{lo}..{hi}")
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("to the hot tier") > 0
    check = _cli("check", "--db", str(db))
    assert check.returncode == 0, check.stdout + check.stderr
    after = _ask_all(db, world, QUESTIONS)
    for t, _ in QUESTIONS:
        q = world.q(t)
        _same(world.answers["hot"][q], after[q], f"{world.name} restored: {q}")
    # the restored days' events are searchable again
    with Store.open(db) as store:
        asker = AskService(store, AdammConfig(), now=datetime.fromisoformat(world.now_cold))
        got = asker.ask(f"pull up video clips of complaints between {lo} and {hi}")
    assert got["status"] == "ok" and got["evidence"], (got["summary"], got.get("missing"))
    assert "notes" not in got  # nothing of these days is left only in the archive


# -- SIGKILL during maintain, then rerun -----------------------------------------------------------


def test_sigkill_during_maintain_then_rerun(world: World, tmp_path: Path) -> None:
    db = _copy(world.built["hot"], tmp_path / "k")
    conf = _cold_config(db.parent)
    for point in CRASH_POINTS:
        out = _cli(
            "maintain",
            "--db",
            str(db),
            "--now",
            world.now_cold,
            "--config",
            str(conf),
            env={"ADAMM_MAINTAIN_CRASH": point},
        )
        assert out.returncode == -signal.SIGKILL, (point, out.returncode, out.stderr[-2000:])
    out = _cli("maintain", "--db", str(db), "--now", world.now_cold, "--config", str(conf), "--json")
    assert out.returncode == 0, out.stderr[-2000:]
    check = _cli("check", "--db", str(db))
    assert check.returncode == 0, check.stdout + check.stderr
    after = _ask_all(db, world, QUESTIONS)
    for t, _ in QUESTIONS:
        q = world.q(t)
        _same(world.answers["hot"][q], after[q], f"{world.name} killed: {q}")
        assert after[q]["tiers"] == ["cold"]
    with Store.open(db) as store, store.read() as conn:
        (held,) = conn.execute("SELECT count(*) FROM events").fetchone()
        (archived,) = conn.execute("SELECT count(*) FROM archive_index").fetchone()
    assert held == 0 and archived == len({json.loads(x)["event_id"] for x in world.lines()})


# -- late events after a day closed ----------------------------------------------------------------


def test_late_events_for_a_closed_day_are_kept_and_the_memory_stays_sound(
    world: World, states: Callable[[str], Path], tmp_path: Path
) -> None:
    db = _copy(states("cold"), tmp_path / "late")
    late = tmp_path / "late.jsonl"
    w2 = world2.generate() if world.name == "world2" else None
    rows = world2.late_lines(w2, world.late_day) if w2 else []
    if not rows:  # the simulator's store: the same kind of event, its own store and zone
        rows = [
            {
                "event_id": f"late-{i}",
                "timestamp": f"{world.late_day}T19:0{i}:00+08:00",
                "store_id": "sh_xuhui_01",
                "event_type": "customer_enter",
                "modality": ["image"],
                "stats": {"person_count": 1, "zone": "entrance"},
                "raw_ref": [f"cam://late/{i}"],
            }
            for i in range(5)
        ]
    late.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    out = _cli("import", "--db", str(db), "--json", str(late))
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["accepted"] == len(rows)
    after = _ask_all(db, world, QUESTIONS[:1])
    q = world.q(QUESTIONS[0][0])
    _same(world.answers["hot"][q], after[q], "revenue is untouched by late visitors")
    # the answer says that the late events are kept but not in that day's figures
    assert after[q]["notes"] == [
        f"{len(rows)} events arrived after their day ({world.late_day}) was closed and archived: they are "
        "kept but not counted in that day's figures."
    ]
    assert "notes" not in _answers(world, "cold", states("cold"))[q]
    check = _cli("check", "--db", str(db))
    assert check.returncode == 0, check.stdout + check.stderr
    with Store.open(db) as store, store.read() as conn:
        (n,) = conn.execute(
            "SELECT late_events FROM rollup_days WHERE local_date = ?", (world.late_day.isoformat(),)
        ).fetchone()
    assert n == len(rows)


# -- standing questions in the memory's own words --------------------------------------------------


def test_standing_questions_compare_the_memorys_own_weather_labels(
    world: World, states: Callable[[str], Path]
) -> None:
    db = states("cold")  # maintain distilled the facts, then archived every day
    with Store.open(db) as store, store.read() as conn:
        recs = [r for r in repo.fact_records(conn) if r.question == "weather_order_value"]
    expected = {"sim": "rain_vs_sunny", "world2": "rainy_vs_clear"}[world.name]
    assert recs and {r.slot for r in recs} == {expected}
    ids = [e for r in recs for e in r.evidence]
    assert ids and len(_held_or_archived(db, ids)) == len(set(ids))
