"""The store's memory is the record for its keys (CONTRACT.md section 5, ``kept_newer``): with
real ``adamm sync`` processes, a real Mosquitto and a real ``adamm-hub serve``, the hub converges
to what a store's memory says now after the memory is rebuilt from its JSON Lines or restored
from a backup (versions start again) and after a forged higher version, and ``adamm-hub status``
names the keys whose versions went backwards."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from brokers import mosquitto_available, running_mosquitto
from hub_data import Publisher
from test_hub_serve import Hub, hub_run

from edge.memory.store import Store
from edge.sim import SimConfig, simulate
from edge.sync import messages as m
from hub.db import open_hub

pytestmark = pytest.mark.skipif(not mosquitto_available(), reason="mosquitto is not installed")

ROOT = Path(__file__).resolve().parents[1]
SIM = SimConfig(
    store_id="sh_01", timezone="Asia/Shanghai", days=3, seed=5, customers_per_day=12, with_text=False
)


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Any]:
    with running_mosquitto(tmp_path / "mq") as b:
        yield b


def _memory(path: Path, events: list[dict[str, Any]]) -> Path:
    with Store.open(path, timezone=SIM.timezone) as store:
        assert store.import_events(events).rejected == 0
    return path


def _more(events: list[dict[str, Any]], tag: str) -> list[dict[str, Any]]:
    """Two more purchases on the last purchase's day (new event ids): that day's keys change."""
    last = [e for e in events if e["event_type"] == "purchase"][-1]
    return [{**last, "event_id": f"{last['event_id']}-{tag}{i}"} for i in range(2)]


def _sync(db: Path, url: str, cfg: Path) -> dict[str, int]:
    out = subprocess.run(
        [sys.executable, "-m", "edge", "sync", "--db", str(db), "--broker", url, "--once", "--json"]
        + ["--config", str(cfg), "--timeout", "90"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
        timeout=200,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return dict(json.loads(out.stdout))


def _store_keys(db: Path) -> dict[str, str]:
    """The store's current message per key (what its memory says now), all confirmed."""
    with Store.open(db, readonly=True) as store, store.read() as conn:
        rows = list(conn.execute("SELECT key, msg_id, state FROM outbox WHERE store_id = ?", (SIM.store_id,)))
    assert {r[2] for r in rows} == {"done"}, rows
    return {str(k): str(mid) for k, mid, _s in rows}


def _hub_keys(target: str) -> dict[str, str]:
    db = open_hub(target)
    try:
        return {str(k): str(mid) for k, mid in db.query("SELECT key, msg_id FROM hub_summaries")}
    finally:
        db.close()


def test_the_hub_converges_to_a_rebuilt_a_restored_and_a_forged_over_store(
    tmp_path: Path, broker: Any
) -> None:
    cfg = tmp_path / "edge.toml"
    cfg.write_text("[sync]\nresend_after_s = 3\n")
    hub_db = str(tmp_path / "hub.db")
    events = list(simulate(SIM))
    first = _memory(tmp_path / "a.db", events)
    hub = Hub(tmp_path, "--db", hub_db, "--broker", broker.url)
    pub = Publisher(broker.port)
    try:
        hub.wait_subscribed()
        _sync(first, broker.url, cfg)
        assert _hub_keys(hub_db) == _store_keys(first)
        backup = shutil.copy(first, tmp_path / "backup.db")
        # the store learns more (its last day's keys at version 2), then its memory is rebuilt
        # from its JSON Lines: every key at version 1 again, that day's with version 2's content
        update = _more(events, "u")
        with Store.open(first) as store:
            store.import_events(update)
        _sync(first, broker.url, cfg)
        rebuilt = _memory(tmp_path / "rebuilt.db", events + update)
        _sync(rebuilt, broker.url, cfg)
        assert _hub_keys(hub_db) == _store_keys(rebuilt)
        # a backup restored (before the update) that then learns something else
        other = _more(events, "o")
        with Store.open(backup) as store:
            store.import_events(other)
        _sync(backup, broker.url, cfg)
        assert _hub_keys(hub_db) == _store_keys(backup)
        # an outside client forges a higher version of the store's day; the store's true update
        # after it wins, and `adamm sync` says confirmed only once the hub holds it
        day_key = next(k for k in _store_keys(backup) if k.endswith("/total") and k.startswith("rollup/"))
        day = day_key.split("/")[1]
        body = {"day": day, "slice": "total", "tz": SIM.timezone, "closed": True, "rows": []}
        forged = m.make_summary(SIM.store_id, "rollup", day_key, 999, body)
        pub.send(forged)
        assert pub.wait_stored({forged.msg_id})
        assert _hub_keys(hub_db)[day_key] == forged.msg_id
        late = [{**e, "timestamp": day + e["timestamp"][10:]} for e in _more(events, "t")]
        with Store.open(backup) as store:
            assert store.import_events(late).rejected == 0
        _sync(backup, broker.url, cfg)
        assert _hub_keys(hub_db) == _store_keys(backup)
        db = open_hub(hub_db)
        try:
            (version,) = db.one("SELECT version FROM hub_summaries WHERE key = ?", (day_key,)) or (0,)
        finally:
            db.close()
        assert version == 1000
        st = hub_run("status", "--db", hub_db, "--json")
        assert st.returncode == 0, st.stderr
        (s,) = json.loads(st.stdout)["stores"]
        diverged = {(d["key"], d["hub_version"]) for d in s["diverged"]}
        assert (day_key, 999) in diverged
        assert any(v == 2 for _k, v in diverged)  # the rebuild: the hub held version 2
        text = hub_run("status", "--db", hub_db)
        assert "diverged: " + day_key in text.stdout
    finally:
        pub.close()
        assert hub.stop() == 0, hub.log()
