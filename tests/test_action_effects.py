"""Did the action work: an action acknowledged done, measured after against before (CONTRACT.md
section 7), on memories with planted truths imported through the real import path.

- a planted effect (order value up 25% from the day the action was done) is found, within its
  interval, as an ``action_effect`` fact that names the action and syncs like every fact;
- a rainy fortnight after a null action (rain lifts order value, the action does nothing) does not
  fake an effect: weather is a stratum;
- until the window after the ack has passed, ``adamm actions`` says how many days it needs; an
  action that names no metric says so.
"""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from edge.config import AdammConfig
from edge.memory.semantic.actions import ack_action
from edge.memory.store import Store
from edge.services import action_effects as AE
from edge.services.actions import queue_action
from edge.sync.outbox import fact_body

ROOT = Path(__file__).resolve().parents[1]
TZ = ZoneInfo("Europe/Berlin")
START = datetime(2025, 3, 3, tzinfo=TZ)  # a Monday
DAYS = 28
STORE = "berlin-7"


def _events(rng: random.Random, lift: float, rainy_after: bool) -> list[dict[str, Any]]:
    """Four weeks of bills; from day 14 order value is ``lift`` higher; rain lifts it 30% on its own.
    ``rainy_after``: ten of the last fourteen days rain (four before), else rain every third day."""
    out = []
    for d in range(DAYS):
        after = d >= 14
        rain = (d % 14 < 10) if rainy_after and after else ((d % 14 >= 10) if rainy_after else d % 3 == 0)
        for i in range(30):
            base = 40.0 * (1.3 if rain else 1.0) * (1 + lift if after else 1.0)
            ts = START + timedelta(days=d, hours=9 + i % 10, minutes=i)
            out.append(
                {
                    "event_id": f"b{d:02d}{i:02d}",
                    "timestamp": ts.isoformat(),
                    "store_id": STORE,
                    "event_type": "purchase",
                    "modality": ["pos"],
                    "raw_ref": [f"pos://till/B{d:02d}{i:02d}"],
                    "stats": {
                        "weather": "regen" if rain else "klar",
                        "bill_id": f"B{d:02d}{i:02d}",
                        "order_amount": round(base * math.exp(rng.gauss(0, 0.3)), 2),
                    },
                }
            )
    return out


def _memory(path: Path, lift: float, rainy_after: bool, metric: str | None, seed: int = 3) -> str:
    with Store.open(path, timezone="Europe/Berlin") as store:
        report = store.import_events(_events(random.Random(seed), lift, rainy_after))
        assert report.rejected == 0
        params: dict[str, Any] = {"title": "tasting stand at the entrance"}
        if metric:
            params["target_metric"] = metric
        aid = queue_action(store, store_id=STORE, type="recommendation", role="shift_lead", params=params,
                           summary="put a tasting stand up", confidence=0.9)  # fmt: skip
        assert ack_action(store, aid, "done", "dev-1", at=START + timedelta(days=14))
    return aid


NOW = START + timedelta(days=DAYS, hours=1)


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    path = tmp_path_factory.mktemp("effects") / "planted.db"
    yield path, _memory(path, 0.25, False, "avg_order_value")


def test_a_planted_effect_is_found_within_its_interval_as_a_fact_that_names_the_action(
    planted: tuple[Path, str],
) -> None:
    path, aid = planted
    with Store.open(path) as store:
        report = AE.measure_all(store, AdammConfig(), NOW)
        assert report["measured"] == 1
        effects = AE.action_effects(store, AdammConfig(), NOW)
    fact = effects[aid]
    assert fact["state"] == "measured" and fact["action_id"] == aid
    assert fact["p_value"] < 0.05 and fact["confidence"] > 0.5
    se = AE.F.se_from_p(fact["effect"], fact["p_value"])
    assert se is not None and abs(fact["effect"] - 0.25) < AE.F.Z95 * se + 0.02  # planted within its interval
    assert fact["evidence"] and fact["valid_from"] == (START + timedelta(days=14)).date().isoformat()
    # it syncs like every fact, with its action id
    body = fact_body(fact)
    assert body["action_id"] == aid
    from edge.sync import messages as m

    m.make_summary(STORE, "fact", m.fact_key(fact["fact_id"]), 1, body)  # the hub's rules accept it
    # a rerun writes the same fact again, not a second one
    with Store.open(path) as store:
        AE.measure_all(store, AdammConfig(), NOW)
        again = AE.action_effects(store, AdammConfig(), NOW)
    assert again[aid]["fact_id"] == fact["fact_id"]
    # adamm actions says it in the words the TUI and the HQ console use (edge.presentation.effects)
    from edge.presentation.effects import effect_text

    out = subprocess.run(
        [sys.executable, "-m", "edge", "actions", "--db", str(path), "--now", NOW.isoformat()],
        capture_output=True, text=True, cwd=ROOT, check=True,
    )  # fmt: skip
    line = out.stdout.splitlines()[-1].strip()
    assert line == f"effect: {effect_text(again[aid], 'en')}" and "95% CI [" in line, out.stdout


def test_a_rainy_fortnight_after_a_null_action_fakes_no_effect(tmp_path: Path) -> None:
    path = tmp_path / "null.db"
    aid = _memory(path, 0.0, True, "avg_order_value")
    with Store.open(path) as store:
        res = AE.measure(store, AdammConfig(), _done(store, aid), NOW)
    assert res["state"] == "measured" and res["strata"] == 2
    # unstratified, the rainy fortnight looks like a lift; within each weather it is not one
    assert res["p_value"] >= 0.05 and abs(res["effect"]) < 0.08, res


@pytest.mark.slow
def test_null_actions_over_many_seeds_are_found_at_the_nominal_rate(tmp_path: Path) -> None:
    """30 null actions (no lift, rain every third day), each on its own seeded memory: the share
    called significant at 5% stays at the nominal level (binomial(30, 0.05) exceeds 5 with
    probability under 1%), and the interval covers 0 as often."""
    significant = covered = 0
    for seed in range(30):
        path = tmp_path / f"null{seed}.db"
        aid = _memory(path, 0.0, False, "avg_order_value", seed=seed)
        with Store.open(path) as store:
            res = AE.measure(store, AdammConfig(), _done(store, aid), NOW)
        assert res["state"] == "measured", res
        significant += res["p_value"] < 0.05
        se = AE.F.se_from_p(res["effect"], res["p_value"])
        covered += se is None or abs(res["effect"]) <= AE.F.Z95 * se
    print(f"null actions: {significant} of 30 significant, {covered} of 30 intervals cover 0")
    assert significant <= 5, significant
    assert covered >= 25, covered


def test_until_the_window_has_passed_the_action_says_how_many_days_it_needs(tmp_path: Path) -> None:
    path = tmp_path / "wait.db"
    aid = _memory(path, 0.25, False, "avg_order_value")
    early = START + timedelta(days=20, hours=1)
    with Store.open(path) as store:
        assert AE.measure_all(store, AdammConfig(), early)["waiting"] == 1
        eff = AE.action_effects(store, AdammConfig(), early)[aid]
    assert eff == {"state": "waiting", "days_needed": 8}
    out = subprocess.run(
        [sys.executable, "-m", "edge", "actions", "--db", str(path), "--now", early.isoformat(), "--json"],
        capture_output=True, text=True, cwd=ROOT, check=True,
    )  # fmt: skip
    (row,) = json.loads(out.stdout)["actions"]
    assert row["state"] == "done" and row["effect"] == {"state": "waiting", "days_needed": 8}


def test_an_action_with_no_metric_says_it_has_no_measurable_target(tmp_path: Path) -> None:
    path = tmp_path / "none.db"
    aid = _memory(path, 0.0, False, None)
    with Store.open(path) as store:
        assert AE.measure_all(store, AdammConfig(), NOW)["no_target"] == 1
        assert AE.action_effects(store, AdammConfig(), NOW)[aid] == {"state": "no_target"}


def _done(store: Store, aid: str) -> dict[str, Any]:
    from edge.memory.semantic.actions import get_action

    with store.read() as conn:
        got = get_action(conn, aid, NOW)
    assert got is not None
    return got


def test_an_action_whose_window_has_passed_is_said_to_be_measured_next() -> None:
    """Zero days left is not "0 more days": the next maintenance measures it."""
    from edge.presentation.effects import effect_cell, effect_text

    eff = {"state": "waiting", "days_needed": 0}
    assert effect_cell(eff, "en") == "at next maintain" and "adamm maintain" in effect_text(eff, "en")
    assert effect_cell(eff, "zh") == "下次维护时测量" and "adamm maintain" in effect_text(eff, "zh")
    assert effect_cell({"state": "waiting", "days_needed": 3}, "en") == "3 more days"
