"""Tests of edge.memory.views on a real SQLite store: recording answers, acking actions, status."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from edge.memory import views
from edge.memory.store import Store


def _payload(**over: Any) -> dict[str, Any]:
    p: dict[str, Any] = {
        "status": "ok",
        "question": "rainy vs sunny order value",
        "plan": {"intent": "compare", "metric": "avg_order_value"},
        "summary": "rainy 128 vs sunny 96",
        "result": {"diff_pct": 33.3},
        "evidence": [{"event_id": "e1", "role": "rainy", "weight": 1.0}],
        "evidence_count": 2,
        "confidence": 0.9,
        "low_confidence": False,
        "missing": [],
        "action": {"type": "recommendation", "params": {"what": "tasting"}},
    }
    p.update(over)
    return p


def test_record_outcome_is_idempotent_and_ack_changes_state(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "s.db")
    try:
        aid = views.record_outcome(store, _payload())
        assert aid is not None and views.record_outcome(store, _payload()) == aid
        assert views.record_outcome(store, _payload(low_confidence=True, plan={"intent": "trend"})) is None
        with store.read() as conn:
            actions = views.list_actions(conn, "pending")
            facts = views.list_facts(conn)
        assert [a["action_id"] for a in actions] == [aid]
        assert [f["statement"] for f in facts] == ["rainy 128 vs sunny 96"]
        assert views.ack_action(store, aid, "done", "mgr") is True
        assert views.ack_action(store, "nope", "done", "mgr") is False
        with store.read() as conn:
            assert views.list_actions(conn, "pending") == []
            assert views.list_actions(conn, "done")[0]["acked_by"] == "mgr"
    finally:
        store.close()


def test_component_status_reports_daemon_not_running(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "s.db")
    try:
        with store.read() as conn:
            rows, warn = views.component_status(conn)
            assert rows == [] and warn is not None and "daemon not running" in warn
            assert views.outbox_depth(conn) == 0 and views.tier_counts(conn) == {}
        old = (datetime.now(UTC) - timedelta(seconds=300)).isoformat()
        store.writer.submit(
            lambda c: c.execute(
                "INSERT INTO components (name, kind, state, updated_at) VALUES ('cam0','camera','running',?)",
                (old,),
            )
        ).result()
        with store.read() as conn:
            rows, warn = views.component_status(conn)
            assert len(rows) == 1 and warn is not None and "not updated" in warn
            _, fresh = views.component_status(conn, now=datetime.fromisoformat(old) + timedelta(seconds=5))
            assert fresh is None
    finally:
        store.close()
