"""``adamm-hub demo`` end to end through the real processes (issue 26): the simulator, a
broker from ``broker-setup`` run by ``mosquitto -c``, ``adamm import`` / ``maintain`` / ``sync``
per store and ``adamm-hub serve``. The hub then holds every store's own totals, answers a
cross-store question that names the stores, and nothing the demo started is left running
(unless ``--keep``, whose printed command stops it); and the fleet's stores differ. One store's
action (sent, acknowledged done by ``adamm-staff --now`` at a simulated time) is measured by
``adamm maintain`` within its planted effect, synced to the hub and printed (issue 27)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from brokers import mosquitto_available, reachable_by_others
from test_sync_e2e import COMPONENTS, _own_totals

from edge.memory.store import Store
from edge.sim.fleet import fleet
from hub.db import open_hub

pytestmark = pytest.mark.skipif(not mosquitto_available(), reason="mosquitto is not installed")

ROOT = Path(__file__).resolve().parents[1]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def _demo(dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    dir.mkdir(parents=True, exist_ok=True)
    reachable_by_others(dir)  # Mosquitto started as root drops to its own user
    return subprocess.run(
        [sys.executable, "-m", "hub", "demo", "--dir", str(dir), *args],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=ROOT,
        timeout=300,
    )


def _pids(stderr: str) -> list[int]:
    return [int(p) for p in re.findall(r"\(pid (\d+)\)", stderr)]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie child of an exited parent is gone for our purposes
    try:
        return "Z" not in Path(f"/proc/{pid}/stat").read_text().split()[2]
    except OSError:
        return False


def _run_printed(line: str) -> dict[str, Any]:
    """Run a command the demo printed (``adamm-hub ...``) as this checkout's module, with --json."""
    argv = shlex.split(line.strip())
    assert argv[0] == "adamm-hub", line
    out = subprocess.run(
        [sys.executable, "-m", "hub", *argv[1:2], "--json", *argv[2:]],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=ROOT,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return dict(json.loads(out.stdout))


def test_the_fleet_in_one_command_holds_each_stores_totals_and_answers_across_stores(tmp_path: Path) -> None:
    dir = tmp_path / "fleet"
    t0 = time.monotonic()
    out = _demo(dir, "--stores", "2")
    elapsed = time.monotonic() - t0
    assert out.returncode == 0, out.stderr[-3000:]
    assert all(line.startswith("adamm-hub demo: ") for line in out.stderr.splitlines()), out.stderr
    stores = [s.config.store_id for s in fleet(2)]
    # the hub's totals equal each store's own, per store-local day and event type
    db = open_hub(str(dir / "hub.db"))
    try:
        for sid in stores:
            with Store.open(dir / "stores" / f"{sid}.db", readonly=True, create=False) as store:
                own = _own_totals(store, sid)
            got = {}
            cols = ", ".join(COMPONENTS)
            for row in db.query(
                f"SELECT local_date, event_type, {cols} FROM hub_rollup WHERE store_id = ? AND slice = 'total'",
                (sid,),
            ):
                got[(str(row[0]), str(row[1]))] = dict(zip(COMPONENTS, map(float, row[2:]), strict=True))
            assert set(got) == set(own) and len({d for d, _ in own}) == 92, sid
            for key, values in own.items():
                for c in COMPONENTS:
                    assert got[key][c] == pytest.approx(values[c], rel=1e-9, abs=1e-9), (sid, key, c)
            (facts,) = db.one("SELECT count(*) FROM hub_facts WHERE store_id = ?", (sid,)) or (0,)
            assert int(facts) > 0, sid
        effect = _the_actions_effect(dir, db, out.stdout)
    finally:
        db.close()
    # the printed cross-store question, asked as printed: every store named, with different values
    asks = [line for line in out.stdout.splitlines() if line.strip().startswith("adamm-hub ask")]
    assert len(asks) >= 2 and all("--now 2025-12-02T00:00:00+08:00" in a for a in asks), out.stdout
    payload = _run_printed(asks[0])
    assert payload["status"] == "ok", payload
    items = payload["result"]["items"]
    assert {i["key"] for i in items} == set(stores)
    assert len({round(i["value"], 2) for i in items}) == len(stores)
    assert all(sid in payload["summary"] for sid in stores)
    assert "adamm-hub console --db" in out.stdout and "--now 2025-12-02T00:00:00+08:00" in out.stdout
    # nothing left running
    pids = _pids(out.stderr)
    assert len(pids) == 2, out.stderr
    assert not [p for p in pids if _alive(p)]
    print(f"adamm-hub demo --stores 2: {elapsed:.1f} s; the action's effect {effect['effect']:+.3f}")


def _the_actions_effect(dir: Path, db: Any, stdout: str) -> dict[str, Any]:
    """One store did an action whose effect the simulator planted: ``adamm maintain`` measured
    it (significant, the planted change inside its 95% interval), the hub holds its fact, and the
    demo printed it in ``adamm actions``' words."""
    from datetime import datetime

    from edge.config import AdammConfig
    from edge.presentation.effects import effect_interval, effect_text
    from edge.services.action_effects import action_effects

    (acting,) = [s for s in fleet(2) if s.action() is not None]
    sid, action = acting.config.store_id, acting.action()
    assert action is not None
    with Store.open(dir / "stores" / f"{sid}.db", readonly=True, create=False) as store:
        effects = action_effects(store, AdammConfig(), datetime.fromisoformat(acting.describe()["now"]))
    (eff,) = effects.values()
    assert eff["state"] == "measured" and eff["metric"] == "queue_length", eff
    assert eff["p_value"] < 0.01 and eff["valid_from"] == action["done_at"][:10], eff
    ci = effect_interval(eff["effect"], eff["p_value"])
    assert ci is not None and ci[0] <= action["planted_effect"] <= ci[1], (ci, action["planted_effect"])
    bodies = [json.loads(b) for (b,) in db.query("SELECT body FROM hub_facts WHERE store_id = ?", (sid,))]
    assert [b["fact_id"] for b in bodies if b.get("action_id") == eff["action_id"]] == [eff["fact_id"]]
    assert f"One action's measured effect ({sid}" in stdout and effect_text(eff, "en") in stdout, stdout
    return eff


def test_keep_leaves_the_broker_and_the_hub_running_and_says_how_to_stop_them(tmp_path: Path) -> None:
    dir = tmp_path / "fleet"
    out = _demo(dir, "--stores", "1", "--days", "14", "--keep")
    assert out.returncode == 0, out.stderr[-3000:]
    pids = _pids(out.stderr)
    try:
        assert len(pids) == 2 and all(_alive(p) for p in pids), out.stderr
        kill = [line.strip() for line in out.stdout.splitlines() if line.strip().startswith("kill ")]
        assert kill == [f"kill {pids[1]} {pids[0]}"], out.stdout
        subprocess.run(shlex.split(kill[0]), check=True)
        deadline = time.monotonic() + 20
        while any(_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [p for p in pids if _alive(p)]
    finally:
        for p in pids:
            if _alive(p):
                os.kill(p, 9)
    # a second demo into the same folder is refused, the fleet untouched
    again = _demo(dir, "--stores", "1")
    assert again.returncode == 2 and "already holds a fleet" in again.stderr


def test_the_fleets_stores_differ() -> None:
    stores = fleet(6)
    for field in ("store_id", "city", "zones", "effects"):
        values = [json.dumps(s.describe()[field], sort_keys=True) for s in stores]
        assert len(set(values)) == len(values), field
    assert len({s.config.timezone for s in stores}) >= 3
    assert len({s.config.climate for s in stores}) == 3
    assert stores[0].config.store_id == "sh_xuhui_01"
    assert len({s.config.store_id for s in fleet(13)}) == 13


def test_sigterm_midway_stops_everything_the_demo_started(tmp_path: Path) -> None:
    dir = tmp_path / "fleet"
    dir.mkdir()
    reachable_by_others(dir)
    err = tmp_path / "demo.err"
    with err.open("wb") as f:
        proc = subprocess.Popen(
            [sys.executable, "-m", "hub", "demo", "--dir", str(dir), "--stores", "2"],
            stdout=subprocess.DEVNULL,
            stderr=f,
            env=_env(),
            cwd=ROOT,
        )
    try:
        deadline = time.monotonic() + 60
        while "adamm-hub serve into" not in err.read_text() and time.monotonic() < deadline:
            assert proc.poll() is None, err.read_text()
            time.sleep(0.1)
        time.sleep(2)  # the stores' processes are running now
        proc.terminate()
        assert proc.wait(60) == 130, err.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
    text = err.read_text()
    assert "interrupted: stopping what it started" in text
    pids = _pids(text)
    assert len(pids) == 2 and not [p for p in pids if _alive(p)]
    left = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert str(dir) not in left, left
