"""The ask use case, proposing actions and the console backend on a real memory
(tests/engine_data.py: simulated, real SQLite with sqlite-vec and the real text encoder), and the
semantic repositories (edge.memory.semantic) on a real store."""

from __future__ import annotations

import importlib.resources
import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from engine_data import full_memory

from edge.config import AdammConfig, AnalysisConfig
from edge.errors import UsageError
from edge.memory.semantic import actions, components, facts, status
from edge.memory.store import Store
from edge.presentation import daemon_warning
from edge.services.actions import own_store_id, propose_action
from edge.services.ask import AskService
from edge.services.store_console import StoreBackend

RAIN = "下雨天和晴天相比，哪种天气客单价更高？"


def _copy(tmp_path: Path) -> Path:
    src = full_memory().path
    dst = tmp_path / "store.db"
    for suffix in ("", "-wal", "-shm"):
        if Path(f"{src}{suffix}").exists():
            shutil.copy(f"{src}{suffix}", f"{dst}{suffix}")
    return dst


def _schema() -> dict[str, Any]:
    text = importlib.resources.files("edge").joinpath("schemas/payload.schema.json").read_text("utf-8")
    return json.loads(text)


def _semantic(store: Store) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    with store.read() as conn:
        procs = int(next(iter(conn.execute("SELECT COUNT(*) FROM procedures")))[0])
        return facts.list_facts(conn), actions.list_actions(conn), procs


@pytest.fixture()
def store(tmp_path: Path) -> Any:
    s = Store.open(_copy(tmp_path))
    yield s
    s.close()


def test_ask_writes_nothing_and_propose_writes_one_action_with_store_role_subject(store: Store) -> None:
    before = _semantic(store)
    payload = AskService(store, AdammConfig(), now=full_memory().now).ask(RAIN)
    jsonschema.validate(payload, _schema())
    assert payload["status"] == "ok" and payload["action"], payload
    assert _semantic(store) == before  # asking changes nothing the memory knows
    store_id = full_memory().config.store_id
    aid = propose_action(store, payload, role="shift_lead", store_id=store_id)
    assert aid is not None
    assert propose_action(store, payload, role="shift_lead", store_id=store_id) == aid  # idempotent
    rows = _semantic(store)[1]
    assert [r["action_id"] for r in rows] == [aid]
    row = rows[0]
    assert (row["store_id"], row["role"], row["type"], row["state"]) == (
        store_id,
        "shift_lead",
        payload["action"]["type"],
        "pending",
    )
    params = json.loads(row["params_json"])
    assert params["subject"] == payload["plan"]["target_metric"] == "avg_order_value"
    assert json.loads(row["evidence_json"]) == [e["event_id"] for e in payload["evidence"]]
    # another role is another action
    other = propose_action(store, payload, role="store_manager", store_id=store_id)
    assert other not in (None, aid)
    assert actions.ack_action(store, aid, "done", "mgr") is True
    assert actions.ack_action(store, "nope", "done", "mgr") is False
    with store.read() as conn:
        assert [r["action_id"] for r in actions.list_actions(conn, "pending")] == [other]
        assert actions.list_actions(conn, "done")[0]["acked_by"] == "mgr"
    with pytest.raises(ValueError, match="accepted, done, rejected"):
        actions.ack_action(store, aid, "pending", "mgr")


def test_an_answer_without_action_is_not_proposed(store: Store) -> None:
    payload = AskService(store, AdammConfig(), now=full_memory().now).ask("Predict next month's footfall.")
    assert payload["action"] is None
    assert propose_action(store, payload, role="store_manager", store_id="x") is None
    assert _semantic(store)[1] == []


def test_backend_proposes_for_the_actions_role_and_the_memorys_own_store(store: Store) -> None:
    backend = StoreBackend(store, AdammConfig(), now=full_memory().now)
    payload = backend.ask(RAIN)
    aid = backend.propose_action(payload)
    row = next(r for r in backend.list_actions() if r["action_id"] == aid)
    assert row["role"] == payload["action"]["params"]["role"]
    assert row["store_id"] == own_store_id(store) == full_memory().config.store_id
    assert own_store_id(store, "configured_store") == "configured_store"


def test_own_store_id_of_an_empty_memory_is_a_usage_error(tmp_path: Path) -> None:
    with Store.open(tmp_path / "empty.db") as s, pytest.raises(UsageError, match="no store"):
        own_store_id(s)


def test_ask_service_honours_the_analysis_config(store: Store) -> None:
    now = full_memory().now
    default = AskService(store, AdammConfig(), now=now).ask(RAIN)
    strict = AdammConfig(analysis=AnalysisConfig(min_events_per_group=10**6))
    refused = AskService(store, strict, now=now).ask(RAIN)
    assert default["status"] == "ok"
    assert refused["status"] == "insufficient_data", refused
    assert StoreBackend(store, strict, now=now).ask(RAIN)["status"] == "insufficient_data"


def test_run_plan_answers_a_plan_without_parsing(store: Store) -> None:
    asker = AskService(store, AdammConfig(), now=full_memory().now)
    asked = asker.ask(RAIN)
    planned = asker.run_plan(asked["plan"], question=RAIN)
    assert planned["status"] == "ok"
    assert planned["result"] == asked["result"] and planned["confidence"] == asked["confidence"]


def test_component_status_codes_follow_the_heartbeat(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.db") as store:
        with store.read() as conn:
            st = components.component_status(conn)
            assert (st.rows, st.code, st.age_s) == ([], "down", None)
            assert status.outbox_depth(conn) == 0 and status.tier_counts(conn) == {}
        old = datetime.now(UTC) - timedelta(seconds=100)
        row = {
            "name": "cam0",
            "kind": "camera",
            "state": "running",
            "provider": None,
            "detail_json": "{}",
            "updated_at": old.isoformat(),
        }
        components.upsert_components(store, [row])
        components.upsert_components(store, [{**row, "state": "degraded"}])  # an update, not a row more
        with store.read() as conn:
            st = components.component_status(conn, heartbeat_seconds=5)
            assert [r["state"] for r in st.rows] == ["degraded"]
            assert st.code == "stale" and st.age_s is not None and st.age_s >= 100
            # a slow heartbeat (60 s: stale after 180 s) still counts 100 s as alive
            assert components.component_status(conn, heartbeat_seconds=60).code == "running"
            fresh = components.component_status(conn, now=old + timedelta(seconds=5), heartbeat_seconds=5)
            assert fresh.code == "running"
    assert "not updated for 100 s" in (daemon_warning("stale", 100.4, "en") or "")
    assert "daemon not running" in (daemon_warning("down", None, "en") or "")
    assert daemon_warning("running", 1.0, "en") is None
    assert "守护进程未运行" in (daemon_warning("down", None, "zh") or "")


def test_backend_status_uses_the_configured_heartbeat(tmp_path: Path) -> None:
    from edge.config import DaemonConfig

    with Store.open(tmp_path / "s.db") as store:
        old = (datetime.now(UTC) - timedelta(seconds=100)).isoformat()
        row = {"name": "mic0", "kind": "microphone", "state": "running", "provider": None}
        components.upsert_components(store, [{**row, "detail_json": "{}", "updated_at": old}])
        assert StoreBackend(store, AdammConfig()).status().daemon == "stale"
        slow = DaemonConfig(store_id="s1", heartbeat_seconds=60)
        assert StoreBackend(store, slow).status().daemon == "running"
