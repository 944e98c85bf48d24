"""The store's outbox without a broker: dirty-day marks written with the events, derivation
through the rollup port, versions only on change, the bound (latest version per key, days wait
marked), and a day held back by the caller."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from edge.analysis.source import EventFilter
from edge.memory.store import Store
from edge.sim import SimConfig, simulate
from edge.sync import messages as m
from edge.sync.outbox import Outbox

TZ = "Asia/Shanghai"


@pytest.fixture(scope="module")
def events() -> list[dict[str, Any]]:
    return list(simulate(SimConfig(days=8, seed=21)))


def _days(store: Store) -> list[str]:
    with store.read() as conn:
        return [str(d) for (d,) in conn.execute("SELECT DISTINCT local_date FROM events ORDER BY 1")]


def test_marks_versions_and_the_rollup_port(tmp_path: Path, events: list[dict[str, Any]]) -> None:
    with Store.open(tmp_path / "m.db", timezone=TZ) as store:
        ob = Outbox(store)
        assert ob.dirty_days() == []
        assert store.import_events(events).accepted == len(events)
        days = _days(store)
        assert [d for _s, d, _g in ob.dirty_days()] == days  # marked in the import's transactions
        rep = ob.derive()
        assert (rep.days, rep.new, rep.replaced, rep.unchanged) == (len(days), 6 * len(days), 0, 0)
        assert ob.dirty_days() == []
        # the total slice equals the events source's per-day aggregate (SQL over the events)
        agg = store.event_source().events.aggregate(
            EventFilter(), ("date", "event_type"), ("events", "revenue")
        )
        want = {(d, t): (n, r) for d, t, n, r in agg.rows}
        with store.read() as conn:
            bodies = [
                json.loads(bytes(p))["body"]
                for (p,) in conn.execute(
                    "SELECT p.payload FROM outbox AS o JOIN outbox_payloads AS p USING (seq) WHERE o.key LIKE '%/total'"
                )
            ]
        got = {(b["day"], r["event_type"]): (r["events"], r["revenue"]) for b in bodies for r in b["rows"]}
        assert got.keys() == want.keys()
        assert all(got[k][0] == want[k][0] and got[k][1] == pytest.approx(want[k][1]) for k in want)
        # the same events again: duplicates mark nothing
        assert store.import_events(events[:100]).duplicates == 100
        assert ob.dirty_days() == []
        # one new event on one day: that day's six keys, version 2 where the body changed
        extra = dict(events[0], event_id="extra-1")
        store.import_events([extra])
        assert len(ob.dirty_days()) == 1
        rep = ob.derive()
        assert rep.days == 1 and rep.replaced + rep.unchanged == 6 and rep.replaced >= 1
        with store.read() as conn:
            versions = dict(
                conn.execute("SELECT key, version FROM outbox WHERE key LIKE ?", (f"rollup/{days[0]}/%",))
            )
        assert versions[m.rollup_key(days[0], "total")] == 2
        assert set(versions.values()) <= {1, 2}
        assert ob.counts()["pending"] == 6 * len(days)  # replaced, not added


def test_a_full_outbox_keeps_days_marked_and_a_held_day_waits(
    tmp_path: Path, events: list[dict[str, Any]]
) -> None:
    with Store.open(tmp_path / "m.db", timezone=TZ) as store:
        store.import_events(events)
        days = _days(store)
        ob = Outbox(store, max_pending=20)
        rep = ob.derive()
        assert rep.days == 3 and rep.deferred == len(days) - 3  # 3 days x 6 keys fit under 20
        assert [d for _s, d, _g in ob.dirty_days()] == days[3:]  # the newest wait, nothing lost
        assert ob.counts()["pending"] == 18
        # a change to a pending day still gets in: it replaces, it does not add
        store.import_events([dict(events[0], event_id="extra-2")])
        rep = ob.derive()
        assert rep.days == 1 and rep.new == 0 and rep.replaced >= 1
        assert ob.counts()["pending"] == 18
        # the hub confirms: room again, the waiting days come next; a held day waits
        with store.read() as conn:
            ids = [str(i) for (i,) in conn.execute("SELECT msg_id FROM outbox WHERE state = 'pending'")]
        # a receipt naming an id twice, and one of another store or unknown, closes each row once
        assert ob.mark_done("another_store", ids[:3]) == 0
        assert ob.mark_done(ob.store_ids()[0], ids[:2] + ids[:2] + ["0" * 32]) == 2
        assert ob.counts()["pending"] == 16
        assert ob.mark_done(ob.store_ids()[0], ids) == 16
        rep = Outbox(store, max_pending=1000).derive(wait=lambda s, d: d == days[-1])
        assert rep.deferred == 0 and [d for _s, d, _g in ob.dirty_days()] == [days[-1]]


def test_a_summary_too_large_to_send_is_parked_and_the_rest_goes(tmp_path: Path) -> None:
    events = [
        {
            "event_id": f"p{i}",
            "store_id": "s1",
            "timestamp": f"2025-10-01T0{2 + i % 8}:00:{i % 60:02d}Z",
            "event_type": "purchase",
            "modality": ["pos"],
            "stats": {"order_amount": 1.0 + i, "bill_id": f"b{i}", "product_category": f"category_{i:04d}"},
            "raw_ref": [f"pos://t/b{i}"],
        }
        for i in range(700)
    ]
    with Store.open(tmp_path / "m.db", timezone=TZ) as store:
        assert store.import_events(events).accepted == 700
        ob = Outbox(store)
        rep = ob.derive()
        assert rep.days == 1 and rep.new == 5 and rep.unsendable == 1
        with store.read() as conn:
            parked = list(conn.execute("SELECT key, reason FROM outbox WHERE state = 'parked'"))
        assert len(parked) == 1 and parked[0][0].endswith("/product_category") and "too_large" in parked[0][1]
        assert ob.counts() == {"pending": 5, "done": 0, "parked": 1} and ob.dirty_days() == []
