"""The daemon's sync worker (``[sync]`` in the daemon's config): a POS replay lands in the store
and its day's summaries reach a test responder over a real Mosquitto, with the store's totals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from brokers import mosquitto_available, running_mosquitto
from sync_responder import Responder

from edge.cli import main
from edge.memory.store import Store
from edge.sync.outbox import Outbox

pytestmark = pytest.mark.skipif(not mosquitto_available(), reason="mosquitto is not installed")

POS = [
    {
        "bill_id": "B1",
        "timestamp": "2026-03-01T10:00:03+08:00",
        "order_amount": 259.0,
        "product_category": "shoes",
    },
    {
        "bill_id": "B3",
        "timestamp": "2026-03-01T10:00:04+08:00",
        "order_amount": 20.0,
        "product_category": "socks",
    },
    {
        "bill_id": "B2",
        "timestamp": "2026-03-01T11:30:00+08:00",
        "order_amount": 39.5,
        "product_category": "socks",
    },
]


def _config(tmp_path: Path, sync: str) -> Path:
    drop = tmp_path / "pos"
    drop.mkdir()
    (drop / "a.jsonl").write_text("\n".join(json.dumps(r) for r in POS) + "\n", encoding="utf-8")
    cfg = tmp_path / "edge.toml"
    cfg.write_text(
        f'store_id = "s1"\ntimezone = "Asia/Shanghai"\ndb = "{tmp_path / "store.db"}"\n'
        f'media_dir = "{tmp_path / "media"}"\nmodels_dir = "{tmp_path / "models"}"\n'
        f'[detector]\nenabled = false\n[pos]\nenabled = true\ndrop_folder = "{drop}"\n[sync]\n{sync}',
        encoding="utf-8",
    )
    return cfg


def test_the_daemon_syncs_what_it_stores(tmp_path: Path) -> None:
    with running_mosquitto(tmp_path / "mq") as mq:
        hub = Responder(mq.port).start()
        try:
            cfg = _config(tmp_path, f'broker = "{mq.url}"\ninterval_s = 0.2\n')
            assert main(["run", "--config", str(cfg), "--until-eof"]) == 0
            rows = hub.rows("s1", "total")
            assert {k: (r["events"], r["bills"], r["revenue"]) for k, r in rows.items()} == {
                ("2026-03-01", None, "purchase"): (3, 3, 318.5)
            }
            assert rows[("2026-03-01", None, "purchase")]["bill_sq"] == pytest.approx(
                259.0**2 + 20.0**2 + 39.5**2
            )
            cats = hub.rows("s1", "product_category")
            assert {k[1]: r["revenue"] for k, r in cats.items()} == {"shoes": 259.0, "socks": 59.5}
            assert hub.wait(lambda: hub.statuses.get("s1", {}).get("state") == "offline")
        finally:
            hub.stop()
    with Store.open(tmp_path / "store.db", readonly=True) as store:
        assert Outbox(store).counts() == {"pending": 0, "done": 6, "parked": 0}
        with store.read() as conn:
            (state,) = conn.execute("SELECT state FROM components WHERE name = 'sync'").fetchone()
    assert state == "stopped"


def test_refused_credentials_stop_the_sync_worker_not_the_daemon(tmp_path: Path) -> None:
    with running_mosquitto(tmp_path / "mq", users={"s1": "right"}) as mq:
        cfg = _config(
            tmp_path, f'broker = "{mq.url}"\ninterval_s = 0.2\n[mqtt]\nusername = "s1"\npassword = "wrong"\n'
        )
        assert main(["run", "--config", str(cfg), "--until-eof"]) == 0
    with Store.open(tmp_path / "store.db", readonly=True) as store:
        with store.read() as conn:
            (n,) = conn.execute("SELECT count(*) FROM events").fetchone()
            state, detail = conn.execute(
                "SELECT state, detail_json FROM components WHERE name = 'sync'"
            ).fetchone()
        assert n == 3  # captured and stored all the same
        assert state == "failed" and "refused" in json.loads(detail)["error"]
        ob = Outbox(store)
        counts = ob.counts()
        # nothing confirmed: the day waits, as its six pending summaries or as its dirty mark
        assert counts["done"] == 0 and counts["pending"] + 6 * len(ob.dirty_days()) == 6
