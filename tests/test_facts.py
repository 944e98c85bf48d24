"""Semantic facts: the facts step (edge.services.facts), ``adamm facts`` and the TUI's Learned tab.

Real memories (SQLite + sqlite-vec) built from the seeded simulator with planted effects: the
staff error rate falls on a training day, rain raises order value, footfall has a weekly cycle and
three spike days. Expected numbers are recomputed from the simulated events themselves.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import hashlib
import json
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import apsw
import pytest
from textual.widgets import DataTable

from edge.analysis import fleet as F
from edge.analysis.operators.base import fmt, fmt_p
from edge.cli import main
from edge.config import AdammConfig
from edge.contract import FACT_FIELDS
from edge.memory.db import migrations
from edge.memory.db.connect import load_vec
from edge.memory.semantic import facts as repo
from edge.memory.store import Store
from edge.services.ask import AskService
from edge.services.facts import STANDING_QUESTIONS, Evaluation, Finding, control, distil_facts
from edge.services.store_console import StoreBackend
from edge.sim import Effects, SimConfig, expected, simulate
from edge.tui.app import AdammApp

TRAINING = date(2025, 11, 24)
SIM = SimConfig(
    days=140,
    customers_per_day=150,
    with_text=False,
    effects=Effects(training_date=TRAINING, staff_error_rate_before=0.25, staff_error_rate_after=0.03),
)
TZ = ZoneInfo(SIM.timezone)
#: the run's clock: the night after the last simulated day
END = datetime.combine(SIM.start + timedelta(days=SIM.days), datetime.min.time(), TZ) + timedelta(hours=2)
#: questions whose facts rest on a significance test
TESTED_KINDS = {"compare", "profile", "trend", "correlation", "co_occurrence"}


@dataclass(frozen=True)
class Memory:
    path: Path
    events: tuple[dict[str, Any], ...]


def _root() -> Path:
    root = Path(tempfile.mkdtemp(prefix="adamm-facts-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    return root


def _local_day(event: dict[str, Any]) -> date:
    return datetime.fromisoformat(event["timestamp"].replace("Z", "+00:00")).astimezone(TZ).date()


@functools.cache
def events() -> tuple[dict[str, Any], ...]:
    return tuple(simulate(SIM))


@functools.cache
def catch_up() -> Memory:
    """All 140 days imported, then one facts run."""
    path = _root() / "once.db"
    with Store.open(path, timezone=SIM.timezone) as store:
        assert store.import_events(events()).rejected == 0
        distil_facts(store, AdammConfig(), END)
    return Memory(path, events())


def _facts(path: Path, *, current_only: bool = False) -> list[dict[str, Any]]:
    with Store.open(path, readonly=True, create=False) as store, store.read() as conn:
        return repo.list_facts(conn, current_only=current_only)


def _records(path: Path) -> list[repo.FactRecord]:
    with Store.open(path, readonly=True, create=False) as store, store.read() as conn:
        return repo.fact_records(conn)


def _marks(path: Path) -> list[tuple[Any, ...]]:
    with Store.open(path, readonly=True, create=False) as store, store.read() as conn:
        return [
            tuple(r)
            for r in conn.execute("SELECT store_id, question, high_water FROM fact_marks ORDER BY 1, 2")
        ]


def _of(path: Path, question: str) -> list[repo.FactRecord]:
    return [r for r in _records(path) if r.question == question]


# -- planted facts ---------------------------------------------------------------------------------


def _staff_rate(evs: tuple[dict[str, Any], ...], since: datetime, until: datetime) -> float:
    err = ops = 0
    for e in evs:
        t = datetime.fromisoformat(e["timestamp"].replace("Z", "+00:00"))
        if since <= t < until:
            err += e["event_type"] == "staff_error"
            ops += e["event_type"] == "staff_operation"
    return err / (err + ops)


def test_staff_error_change_closes_the_old_level_and_opens_the_new_one_at_the_training_day() -> None:
    mem = catch_up()
    staff = _of(mem.path, "staff_error_rate")
    current = [r for r in staff if r.valid_to is None]
    assert len(current) == 1
    new = current[0]
    assert new.valid_from == TRAINING.isoformat()
    assert new.signature == f"change:{TRAINING.isoformat()}"
    old = next(r for r in staff if r.fact_id == new.supersedes)
    assert old.valid_to == TRAINING.isoformat() and old.signature == "level"
    # every other staff fact is closed no later than the change
    assert all(r.valid_to is not None and r.valid_to <= TRAINING.isoformat() for r in staff if r is not new)
    # the numbers are the data's: the rate after the change over the plan's period, and the effect
    after = next(p for p in new.plan["compare"]["periods"] if p["label"] == "after")["time_range"]
    before = next(p for p in new.plan["compare"]["periods"] if p["label"] == "before")["time_range"]
    rate_after = _staff_rate(
        mem.events, datetime.fromisoformat(after["since"]), datetime.fromisoformat(after["until"])
    )
    rate_before = _staff_rate(
        mem.events, datetime.fromisoformat(before["since"]), datetime.fromisoformat(before["until"])
    )
    assert new.value == pytest.approx(rate_after, abs=5e-5)
    assert new.effect == pytest.approx((rate_after - rate_before) / rate_before, abs=1e-3)
    assert new.effect < 0 and new.p_value is not None and new.p_value < 0.05
    assert TRAINING.isoformat() in new.statement["en"] and TRAINING.isoformat() in new.statement["zh"]


def _aov(evs: tuple[dict[str, Any], ...], weather: str, since: datetime, until: datetime) -> float:
    revenue = 0.0
    bills: set[str] = set()
    for e in evs:
        t = datetime.fromisoformat(e["timestamp"].replace("Z", "+00:00"))
        st = e.get("stats") or {}
        if e["event_type"] == "purchase" and st.get("weather") == weather and since <= t < until:
            revenue += st["order_amount"]
            bills.add(st.get("bill_id") or e["event_id"])
    return revenue / len(bills)


def test_rain_raises_order_value_a_current_fact_that_equals_recomputation() -> None:
    mem = catch_up()
    rain = [r for r in _of(mem.path, "weather_order_value") if r.valid_to is None]
    assert len(rain) == 1
    fact = rain[0]
    rng = fact.plan["filters"]["time_range"]
    since, until = datetime.fromisoformat(rng["since"]), datetime.fromisoformat(rng["until"])
    rain_aov, sunny_aov = _aov(mem.events, "rain", since, until), _aov(mem.events, "sunny", since, until)
    assert fact.value == pytest.approx(rain_aov, abs=1e-4)
    assert fact.effect == pytest.approx((rain_aov - sunny_aov) / sunny_aov, abs=1e-4)
    assert fact.effect > 0 and fact.p_value is not None and fact.p_value < 0.05
    assert (fact.metric, fact.dimension) == ("avg_order_value", "weather")
    # the effect held from the first window on: one fact since the memory's first day
    assert fact.valid_from == SIM.start.isoformat()
    # the last window evaluated is the last full week the data reaches
    assert until.date() == date.fromisoformat(fact.evaluated_until)


def test_weekly_period_and_the_planted_spike_days() -> None:
    mem = catch_up()
    period = [r for r in _of(mem.path, "weekly_period") if r.valid_to is None]
    assert [r.value for r in period] == [7]
    spikes = {r.valid_from: r for r in _of(mem.path, "footfall_anomalies")}
    for day in expected(SIM)["footfall_anomaly_dates"]:
        fact = spikes[day]
        assert fact.valid_to == (date.fromisoformat(day) + timedelta(days=1)).isoformat()
        assert fact.effect is not None and fact.effect > 0


def test_peak_hour_moves_later_and_its_facts_never_overlap() -> None:
    mem = catch_up()
    peaks = sorted(_of(mem.path, "peak_hour"), key=lambda r: r.valid_from)
    assert [r.value for r in peaks] == sorted(r.value for r in peaks)
    assert peaks[0].value == SIM.effects.evening_peak_start_hour
    assert peaks[-1].value == SIM.effects.evening_peak_end_hour and peaks[-1].valid_to is None
    for older, newer in zip(peaks, peaks[1:], strict=False):
        assert older.valid_to is not None and older.valid_to <= newer.valid_from
        assert newer.supersedes in (None, older.fact_id)
    shift = [r for r in _of(mem.path, "peak_hour_shift")]
    assert shift and all(r.signature == "up" and r.effect is not None and r.effect > 0 for r in shift)


def test_effects_that_stop_close_their_facts_after_the_stop(tmp_path: Path) -> None:
    # twelve weeks with rain raising order value and a weekly cycle, then twelve weeks without
    stop = date(2025, 11, 24)
    first = SimConfig(days=84, customers_per_day=150, with_text=False)
    later = SimConfig(
        start=stop,
        days=84,
        seed=8,
        customers_per_day=150,
        with_text=False,
        effects=Effects(rain_aov_uplift=0.0, weekly_cycle=False),
    )
    with Store.open(tmp_path / "stop.db", timezone=SIM.timezone) as store:
        assert store.import_events([*simulate(first), *simulate(later)]).rejected == 0
        end = datetime.combine(stop + timedelta(days=84), datetime.min.time(), TZ)
        distil_facts(store, AdammConfig(), end)
        with store.read() as conn:
            records = repo.fact_records(conn)
    for question in ("weather_order_value", "weekly_period"):
        facts = [r for r in records if r.question == question]
        assert facts and all(r.valid_to is not None for r in facts), question
        last = max(facts, key=lambda r: r.valid_to or "")
        # it held while its window reached into the planted weeks, and closed within a window after
        assert last.valid_from < stop.isoformat() < str(last.valid_to)
        window = STANDING_QUESTIONS[question].window_days
        assert date.fromisoformat(str(last.valid_to)) <= stop + timedelta(days=window)


def _synthetic_co_occurrence(seed: int) -> list[dict[str, Any]]:
    """Nine weeks of seeded MEV: arrivals every open hour, checkout queues in some hours, and
    complaints far more often in an hour with a queue than without."""
    import random

    rnd = random.Random(seed)
    out: list[dict[str, Any]] = []
    start = date(2025, 9, 1)
    for d in range(63):
        day = start + timedelta(days=d)
        for hour in range(8, 22):
            at = datetime.combine(day, datetime.min.time(), TZ) + timedelta(hours=hour)
            kinds = ["customer_enter"]
            queue = rnd.random() < 0.3
            if queue:
                kinds.append("checkout_queue")
            if rnd.random() < (0.6 if queue else 0.05):
                kinds.append("complaint")
            for i, kind in enumerate(kinds):
                stats: dict[str, Any] = {"queue_length": 5} if kind == "checkout_queue" else {}
                out.append(
                    {
                        "event_id": f"co-{d}-{hour}-{i}",
                        "timestamp": (at + timedelta(minutes=10 * i)).isoformat(),
                        "store_id": "s_co",
                        "event_type": kind,
                        "modality": ["video"],
                        "raw_ref": [f"file:///m/{d}-{hour}-{i}.mp4"],
                        "stats": stats,
                    }
                )
    return out


def test_queues_and_complaints_in_the_same_hour_become_a_co_occurrence_fact(tmp_path: Path) -> None:
    from scipy import stats

    evs = _synthetic_co_occurrence(5)
    with Store.open(tmp_path / "co.db", timezone=SIM.timezone) as store:
        assert store.import_events(evs).rejected == 0
        only = {"queue_complaint_together": STANDING_QUESTIONS["queue_complaint_together"]}
        distil_facts(store, AdammConfig(), datetime(2025, 11, 4, tzinfo=TZ), questions=only)
        with store.read() as conn:
            records = repo.fact_records(conn)
    assert len(records) == 1
    fact = records[0]
    rng = fact.plan["filters"]["time_range"]
    since, until = datetime.fromisoformat(rng["since"]), datetime.fromisoformat(rng["until"])
    windows: dict[tuple[date, int], set[str]] = {}
    for e in evs:
        t = datetime.fromisoformat(e["timestamp"]).astimezone(TZ)
        if since <= t < until:
            windows.setdefault((t.date(), t.hour), set()).add(e["event_type"])
    w = len(windows)
    a = sum("checkout_queue" in k for k in windows.values())
    b = sum("complaint" in k for k in windows.values())
    ab = sum({"checkout_queue", "complaint"} <= k for k in windows.values())
    lift = (ab / w) / ((a / w) * (b / w))
    assert fact.value == pytest.approx(lift, abs=1e-3) and fact.value >= 1.5
    assert fact.n == ab and fact.valid_from == since.date().isoformat() and fact.valid_to is None
    p = stats.fisher_exact([[ab, a - ab], [b - ab, w - a - b + ab]], alternative="greater").pvalue
    assert fact.p_value is not None and fact.p_value < 0.05
    assert fact.p_value == pytest.approx(p, rel=1e-3)


def test_every_current_fact_equals_the_answer_to_its_own_plan() -> None:
    from edge.services.ask import AskService

    path = catch_up().path
    cap = AdammConfig().analysis.evidence_cap
    with Store.open(path, readonly=True, create=False) as store:
        for r in _records(path):
            if r.valid_to is not None:
                continue
            at = datetime.combine(date.fromisoformat(r.evaluated_until), datetime.min.time(), TZ)
            payload = AskService(store, AdammConfig(), now=at).run_plan(r.plan)
            assert payload["status"] == "ok" and not payload["low_confidence"], r
            assert r.evidence == [e["event_id"] for e in payload["evidence"]][:cap]
            assert r.evidence_count == payload["evidence_count"]
            assert r.confidence == payload["confidence"]
            p = payload["result"].get("p_value")
            if p is not None and r.p_value is not None:
                assert r.p_value == p


# -- incremental = once ----------------------------------------------------------------------------


def test_nightly_and_weekly_runs_give_the_facts_of_one_run_over_the_whole_history() -> None:
    once = catch_up()
    by_day: dict[date, list[dict[str, Any]]] = {}
    for e in events():
        by_day.setdefault(_local_day(e), []).append(e)
    root = _root()
    for name, every in (("nightly", 1), ("weekly", 7)):
        path = root / f"{name}.db"
        with Store.open(path, timezone=SIM.timezone) as store:
            for i, day in enumerate(sorted(by_day)):
                store.import_events(by_day[day])
                if i % every == every - 1 or i == len(by_day) - 1:
                    night = datetime.combine(day + timedelta(days=1), datetime.min.time(), TZ) + timedelta(
                        hours=2
                    )
                    distil_facts(store, AdammConfig(), night)
        assert _facts(path) == _facts(once.path), name
        assert _marks(path) == _marks(once.path), name
    assert len(_facts(once.path)) > len(_facts(once.path, current_only=True)) > 0


def test_a_rerun_with_no_new_data_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "copy.db"
    shutil.copy(catch_up().path, path)
    before = _facts(path), _marks(path)
    with Store.open(path, create=False) as store:
        for later in (END, END + timedelta(days=30)):
            report = distil_facts(store, AdammConfig(), later)
            assert report["evaluations"] == 0 and report["opened"] == report["closed"] == 0
    assert (_facts(path), _marks(path)) == before


def test_thin_memory_yields_no_fact_that_rests_on_a_test(tmp_path: Path) -> None:
    # a few customers a day (staff actions stay at their usual 60 a day)
    thin = SimConfig(days=70, customers_per_day=3, seed=3, with_text=False)
    with Store.open(tmp_path / "thin.db", timezone=thin.timezone) as store:
        store.import_events(simulate(thin))
        report = distil_facts(store, AdammConfig(), datetime(2025, 11, 11, tzinfo=TZ))
        with store.read() as conn:
            records = repo.fact_records(conn)
    assert report["evaluations"] > 0
    customers = [r.question for r in records if r.question != "staff_error_rate"]
    assert customers == []


def test_short_memory_has_no_window_to_evaluate(tmp_path: Path) -> None:
    short = SimConfig(days=14, customers_per_day=150, with_text=False)
    with Store.open(tmp_path / "short.db", timezone=short.timezone) as store:
        store.import_events(simulate(short))
        report = distil_facts(store, AdammConfig(), datetime(2025, 9, 16, tzinfo=TZ))
        with store.read() as conn:
            assert repo.list_facts(conn) == []
    assert report["evaluations"] == 0


#: the child: a facts run over the memory that SIGKILLs itself at the given write (a fact row
#: inside a question's transaction, or the commit of a question's mark)
_KILLED_RUN = """
import os, signal, sys
from datetime import datetime
from edge.config import AdammConfig
from edge.memory.semantic import facts as repo
from edge.memory.store import Store
from edge.services.facts import distil_facts

path, where, at, now = sys.argv[1], sys.argv[2], int(sys.argv[3]), datetime.fromisoformat(sys.argv[4])
calls = {"n": 0}
def counted(fn):
    def wrapper(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == at:
            os.kill(os.getpid(), signal.SIGKILL)
        return fn(*args, **kwargs)
    return wrapper
if where == "fact":
    repo._upsert = counted(repo._upsert)
else:
    repo.apply_run = counted(repo.apply_run)
store = Store.open(path, create=False)
distil_facts(store, AdammConfig(), now)
"""


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")
@pytest.mark.parametrize(("where", "at"), [("fact", 1), ("fact", 9), ("question", 6)])
def test_sigkill_during_a_facts_run_then_a_rerun_gives_the_facts_of_an_uninterrupted_run(
    tmp_path: Path, where: str, at: int
) -> None:
    once = catch_up()
    path = tmp_path / "killed.db"
    with Store.open(path, timezone=SIM.timezone) as store:
        store.import_events(events())
    proc = subprocess.run(
        [sys.executable, "-c", _KILLED_RUN, str(path), where, str(at), END.isoformat()],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    survived = _facts(path)
    assert len(survived) < len(_facts(once.path))
    # what survived is whole questions: each question's facts all there, or none of them
    done = {q for _store, q, _mark in _marks(path)}
    assert {r.question for r in _records(path)} <= done
    with Store.open(path, create=False) as store:
        distil_facts(store, AdammConfig(), END)
    assert _facts(path) == _facts(once.path)
    assert _marks(path) == _marks(once.path)


# -- the contract's fields -------------------------------------------------------------------------


def _numbers(text: str) -> list[str]:
    return re.findall(r"\d+(?:\.\d+)?", text)


def _rendered(f: dict[str, Any]) -> str:
    """Every way a statement may write the fact's own fields."""
    parts = [str(f["n"]), f["valid_from"]]
    v = f["value"]
    if isinstance(v, int | float):
        parts += [fmt(v), f"{v * 100:.1f}", f"{int(v):02d}:00-{int(v) + 1:02d}:00"]
    if f["effect"] is not None:
        parts.append(f"{f['effect'] * 100:+.1f}")
    if f["p_value"] is not None:
        parts.append(fmt_p(f["p_value"]))
    return " ".join(parts)


def test_every_fact_has_exactly_the_contract_fields_and_cites_real_events() -> None:
    mem = catch_up()
    facts = _facts(mem.path)
    assert facts
    ids = {e["event_id"] for e in mem.events}
    cap = AdammConfig().analysis.evidence_cap
    for f in facts:
        assert list(f) == list(FACT_FIELDS)
        assert set(f["statement"]) == {"zh", "en"} and all(f["statement"].values())
        assert 0 < len(f["evidence"]) <= cap and f["evidence_count"] >= len(f["evidence"])
        assert set(f["evidence"]) <= ids
        assert 0 <= f["confidence"] <= 1 and f["n"] > 0
        assert f["valid_to"] is None or f["valid_to"] >= f["valid_from"]
        allowed = set(_numbers(_rendered(f)))
        for lang in ("zh", "en"):
            stray = [x for x in _numbers(f["statement"][lang]) if x not in allowed]
            assert stray == [], (f["statement"][lang], stray)
    assert len({f["fact_id"] for f in facts}) == len(facts)
    # current first
    held = [f["valid_to"] is None for f in facts]
    assert held == sorted(held, reverse=True)


def test_significant_facts_meet_the_honesty_rules() -> None:
    for r in _records(catch_up().path):
        if STANDING_QUESTIONS[r.question].kind in TESTED_KINDS | {"change"} and r.signature != "level":
            assert r.p_value is not None and r.p_value < 0.05, r
        assert r.confidence >= 0.5, r


def test_every_tested_fact_passed_benjamini_hochberg_over_its_evaluation_points_family() -> None:
    """Each fact resting on a test keeps its p-value and its adjusted one (q), which is the
    Benjamini-Hochberg value of its p-value among every test the store ran at that evaluation
    point (all standing questions, recomputed here from the kept p-values), and below 5%."""
    path = catch_up().path
    with Store.open(path, readonly=True, create=False) as store, store.read() as conn:
        families: dict[str, list[float]] = {}
        for point, ps in conn.execute("SELECT point, p_values_json FROM fact_tests ORDER BY point, question"):
            families.setdefault(str(point), []).extend(json.loads(ps))
    assert sum(map(len, families.values())) > len(families) > 10  # many questions, many points
    tested = [r for r in _records(path) if r.p_value is not None]
    assert tested
    for r in tested:
        assert r.q_value is not None and r.p_value <= r.q_value < 0.05, r
        if r.signature.startswith("change:"):
            continue  # its family p-value is Bonferroni-corrected over the candidate days
        family = families[r.evaluated_until]
        q = F.bh_adjust(family)[family.index(r.p_value)]
        assert r.q_value == pytest.approx(q, rel=1e-5), r


def _t_test_evaluations(rng: random.Random, planted: int, null: int) -> list[Evaluation]:
    """One evaluation point's family: ``planted`` compare tests with a true effect (1.2 sd,
    30 days a group) and ``null`` without, each a Welch t-test on simulated daily values."""
    from scipy import stats

    out = []
    for i in range(planted + null):
        shift = 1.2 if i < planted else 0.0
        a = [rng.gauss(shift, 1.0) for _ in range(30)]
        b = [rng.gauss(0.0, 1.0) for _ in range(30)]
        p = float(stats.ttest_ind(a, b, equal_var=False).pvalue)
        f = Finding(f"q{i}", "up" if i < planted else "null", "m", "d", 0.0, 0.0, 30, p, 0.9, [], 0, {})
        f.family_p = p
        out.append(Evaluation(True, [f]))
    return out


def test_the_false_discovery_control_keeps_chance_findings_at_the_nominal_rate() -> None:
    """Over 300 seeded evaluation points: in a null world (40 questions, no effect) a point yields
    a false fact in at most about 5% of the points (Benjamini-Hochberg controls the family-wise
    rate under the complete null), where p < 0.05 alone would yield one in most points; with 10
    planted effects among 30 null questions the share of false facts among facts stays at or below
    5% and the planted effects are still found."""
    rng = random.Random(27)
    seeds = 300
    null_points_with_a_false_fact = uncorrected = 0
    false = found = planted_found = 0
    for _ in range(seeds):
        evs = _t_test_evaluations(rng, 0, 40)
        uncorrected += any(e.findings[0].p_value < 0.05 for e in evs)  # type: ignore[operator]
        tested, passed = control(evs)
        assert tested == 40
        null_points_with_a_false_fact += passed > 0
        evs = _t_test_evaluations(rng, 10, 30)
        control(evs)
        kept = [e.findings[0] for e in evs if e.findings]
        found += len(kept)
        false += sum(f.signature == "null" for f in kept)
        planted_found += sum(f.signature == "up" for f in kept)
    assert null_points_with_a_false_fact / seeds <= 0.08  # nominal 5%, binomial noise over 300
    assert uncorrected / seeds > 0.5  # without the control most points would hold a chance fact
    assert false / found <= 0.05
    assert planted_found / (10 * seeds) >= 0.8  # the planted effects are still found


def test_a_change_that_fails_the_control_falls_back_to_the_level() -> None:
    level = Finding("level", "level", "m", "date", 0.1, None, 100, None, 0.9, [], 0, {})
    change = Finding("level", "change:2025-11-24", "m", "date", 0.03, -0.8, 100, 0.001, 0.9, [], 0, {})
    change.family_p = 0.04  # Bonferroni-corrected over its candidate days
    ev = Evaluation(True, [change], fallback=[level])
    others = [Evaluation(True, tested=[0.5, 0.7, 0.9])]
    assert control([ev, *others]) == (4, 0)  # 0.04 * 4 / 1 = 0.16: fails
    assert ev.findings == [level]
    ev = Evaluation(True, [change], fallback=[level])
    assert control([ev]) == (1, 1) and ev.findings == [change] and change.q_value == pytest.approx(0.04)


# -- adamm facts -----------------------------------------------------------------------------------


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_cli_lists_current_facts_or_all_as_json_and_a_table_and_writes_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = catch_up().path
    digest = _sha(path)
    assert main(["facts", "--db", str(path), "--json"]) == 0
    current = json.loads(capsys.readouterr().out)
    assert current == _facts(path, current_only=True) and all(f["valid_to"] is None for f in current)
    assert main(["facts", "--db", str(path), "--all", "--json"]) == 0
    every = json.loads(capsys.readouterr().out)
    assert every == _facts(path) and len(every) > len(current)
    assert main(["facts", "--db", str(path)]) == 0
    table = capsys.readouterr().out
    lang = "zh"  # the store is in Asia/Shanghai and the test environment names no language
    for f in current:
        assert f["statement"][lang] in table or f["statement"]["en"] in table
    assert _sha(path) == digest


def test_cli_tells_the_stores_of_a_memory_apart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A memory of two stores: the table has a store column, --store lists one store's facts
    (JSON keeps exactly the contract's fields), an unknown store is an error naming the stores."""
    path = tmp_path / "two.db"
    shutil.copy(catch_up().path, path)
    conn = apsw.Connection(str(path))
    (store,) = conn.execute("SELECT store_id FROM stores").fetchone()
    cols = [str(r[1]) for r in conn.execute("PRAGMA table_info(facts)")]
    picked = ", ".join(
        "'other_02'" if c == "store_id" else "'o-' || fact_id" if c == "fact_id" else c for c in cols
    )
    with conn:
        conn.execute(
            "INSERT INTO stores(store_id, timezone, created_at) VALUES ('other_02', 'Europe/London', 'x')"
        )
        conn.execute(
            f"INSERT INTO facts ({', '.join(cols)}) SELECT {picked} FROM facts WHERE valid_to IS NULL"
        )
    conn.close()
    mine = _facts(catch_up().path, current_only=True)
    assert len(mine) >= 2
    assert main(["facts", "--db", str(path), "--store", store, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == mine
    assert main(["facts", "--db", str(path), "--store", "other_02", "--json"]) == 0
    theirs = json.loads(capsys.readouterr().out)
    assert [f["fact_id"] for f in theirs] == ["o-" + f["fact_id"] for f in mine]
    assert all(list(f) == list(FACT_FIELDS) for f in theirs)
    assert main(["facts", "--db", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 + 2 * len(mine)
    assert sorted(line.split()[0] for line in lines[1:]) == sorted(
        [store] * len(mine) + ["other_02"] * len(mine)
    )
    assert main(["facts", "--db", str(path), "--store", store]) == 0
    assert all(
        not line.startswith(store) for line in capsys.readouterr().out.splitlines()
    )  # one store: no column
    assert main(["facts", "--db", str(path), "--store", "nowhere_09"]) == 2
    err = capsys.readouterr().err
    assert "nowhere_09" in err and store in err and "other_02" in err


def test_cli_refuses_a_file_that_is_not_a_memory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "other.db"
    conn = apsw.Connection(str(other))
    conn.execute("CREATE TABLE t (x)")
    conn.close()
    digest = _sha(other)
    assert main(["facts", "--db", str(other), "--json"]) == 3
    assert capsys.readouterr().out == ""
    assert _sha(other) == digest


def test_old_facts_rows_survive_the_migration_as_closed_facts(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = apsw.Connection(str(path))
    load_vec(conn)
    migrations.applied(conn)
    for name, sql in migrations.MIGRATIONS:
        if name == "0009_facts_contract":
            break
        with conn:
            conn.execute(sql)
            conn.execute("INSERT INTO _migrations(name, applied_at) VALUES (?, 'x')", (name,))
    conn.execute(
        "INSERT INTO facts (fact_id, store_id, kind, subject, statement, confidence, evidence_json,"
        " created_at, updated_at) VALUES ('f1', 's1', 'compare', 'aov', 'rain sells more', 0.7,"
        " '[\"e1\",\"e2\"]', '2025-10-01T00:00:00Z', '2025-10-05T00:00:00Z')"
    )
    migrations.migrate(conn)
    got = repo.list_facts(conn)
    conn.close()
    assert [
        (f["fact_id"], f["statement"]["en"], f["evidence"], f["valid_from"], f["valid_to"]) for f in got
    ] == [("f1", "rain sells more", ["e1", "e2"], "2025-10-01", "2025-10-05")]


# -- the Learned tab -------------------------------------------------------------------------------


def test_learned_tab_lists_current_facts_first_and_closed_ones_on_c() -> None:
    path = catch_up().path
    current, every = _facts(path, current_only=True), _facts(path)

    async def go() -> dict[str, Any]:
        with Store.open(path, readonly=True, create=False) as store:
            app = AdammApp(StoreBackend(store, AdammConfig()), "en")
            async with app.run_test(size=(120, 40)) as pilot:
                for _ in range(3):
                    await app.workers.wait_for_complete()
                    await pilot.pause()
                await pilot.press("f3")
                table = app.query_one("#facts", DataTable)
                out: dict[str, Any] = {"before": _table(table)}
                table.focus()
                await pilot.press("c")
                for _ in range(3):
                    await app.workers.wait_for_complete()
                    await pilot.pause()
                out["after"] = _table(table)
                await pilot.press("c")
                for _ in range(3):
                    await app.workers.wait_for_complete()
                    await pilot.pause()
                out["again"] = _table(table)
                return out

    out = asyncio.run(go())

    def rows(facts: list[dict[str, Any]]) -> list[list[str]]:
        return [
            [
                "closed" if f["valid_to"] else "holds",
                f"{f['valid_from']} .. {f['valid_to'] or 'now'}",
                str(f["evidence_count"]),
                f["statement"]["en"],
            ]
            for f in facts
        ]

    assert out["before"] == rows(current)
    assert out["after"] == rows(every)
    assert out["again"] == rows(current)


def _table(table: DataTable[Any]) -> list[list[str]]:
    """The rows as listed, each cell whole (a statement too long for its column is shown cut with
    "…", whole in the detail below the table)."""
    keys = ("fact.state", "fact.valid", "fact.evidence", "fact.statement")
    index = [list(table.columns).index(k) for k in keys]
    whole = table.full_cells  # type: ignore[attr-defined]
    return [[whole[rk.value][i] for i in index] for rk in table.rows]


def test_an_answer_on_a_question_a_fact_covers_notes_the_fact_and_why_numbers_differ() -> None:
    mem = catch_up()
    now = END
    with Store.open(mem.path, readonly=True, create=False) as store:
        for q, lang in (
            (f"Did the staff error rate change after {TRAINING.isoformat()}?", "en"),
            (f"{TRAINING.month}月{TRAINING.day}日之后员工失误率有没有变化", "zh"),
        ):
            payload = AskService(store, AdammConfig(), now=now).ask(q)
            assert payload["status"] == "ok", payload["missing"]
            notes = payload.get("notes") or []
            fact = next(r for r in _of(mem.path, "staff_error_rate") if r.valid_to is None)
            # the fact's own statement, numbers and window, and the reason numbers may differ
            assert any(fact.statement[lang] in n and f"n={fact.n}" in n for n in notes), notes
            assert any(("窗口" in n) if lang == "zh" else ("windows" in n) for n in notes)
            # the answer says which days it used
            assert payload["interpretation"]["period"]["from"] < payload["interpretation"]["period"]["to"]
    # a question no fact covers has no such note
    with Store.open(mem.path, readonly=True, create=False) as store:
        other = AskService(store, AdammConfig(), now=now).ask("What was the footfall last week?")
        assert not [n for n in other.get("notes") or [] if "fact" in n]
