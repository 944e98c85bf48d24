"""Pilot tests of the HQ console (``adamm-hub console``, hub.console) on a hub store filled
through the real ingest path with the summaries, facts and statuses two stores publish (built
with edge.sync.messages, as tests/test_hub_ask.py does): the Stores tab and its online/offline
flip, a cross-store question in the store console's answer view (equal to ``adamm-hub ask``),
every store's facts, send-as-action to a store's role, and end to end over a real Mosquitto:
the console sends, ``adamm-hub serve`` publishes, ``adamm-staff --ack done --once --json``
acknowledges, the console's action log shows ``done``."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import actions_helpers
import pytest
from actions_helpers import ROOT, Staff, env, eventually
from brokers import mosquitto_available, running_mosquitto
from hub_data import fact
from test_hub_ask import NOW, ZONES
from test_hub_serve import Hub
from test_tui import data_words, foreign_words, screen_text, settle, whole_cell
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Static

from edge.presentation import payload_text, result_table
from edge.sync import messages as m
from edge.tui.widgets import SortableTable
from hub import actions as ha
from hub.ask import ask
from hub.console.app import HubConsoleApp
from hub.console.backend import HubBackend
from hub.db import open_hub
from hub.ingest import ingest

QUESTION = "Which store had the highest revenue?"


@pytest.fixture
def hub_db(filled: Path, tmp_path: Path) -> Path:
    """A copy of the session's hub store (conftest.filled): two stores' rollups, facts (one
    closed) and online statuses."""
    path = tmp_path / "hub.db"
    shutil.copy(filled, path)
    return path


def _drive(
    target: Path,
    steps: Callable[[HubConsoleApp, Pilot[None]], Awaitable[Any]],
    lang: str = "en",
    size: tuple[int, int] = (120, 36),
) -> Any:
    async def go() -> Any:
        app = HubConsoleApp(HubBackend(str(target), now=NOW), lang)
        async with app.run_test(size=size) as pilot:
            await settle(app, pilot)  # type: ignore[arg-type]
            return await steps(app, pilot)

    return asyncio.run(go())


def _column(app: HubConsoleApp, table: str, key: str) -> list[str]:
    """A column's cells, whole (a cell too long for its column is shown cut, whole in the detail)."""
    shown = app.query_one(f"#{table}", SortableTable)
    index = list(shown.columns).index(key)
    return [shown.full_cells[row.key.value][index] for row in shown.ordered_rows]


async def _ask(app: HubConsoleApp, pilot: Pilot[None], question: str) -> None:
    await pilot.press("f1")
    box = app.query_one("#question", Input)
    box.value = question
    box.focus()
    await pilot.press("enter")
    await settle(app, pilot)  # type: ignore[arg-type]


def test_stores_tab_shows_status_and_last_summary_and_flips_offline(hub_db: Path) -> None:
    async def steps(app: HubConsoleApp, pilot: Pilot[None]) -> dict[str, Any]:
        await pilot.press("f2")
        out = {
            "stores": _column(app, "stores", "store"),
            "status": _column(app, "stores", "store.status"),
            "last": _column(app, "stores", "store.last_summary"),
            "facts": _column(app, "stores", "store.facts"),
            "days": _column(app, "stores", "store.days"),
        }
        db = open_hub(str(hub_db))  # s2's connection dies: the broker publishes its last will
        ingest(db, m.status_topic("s2"), m.status_payload("offline", "2025-12-10T09:00:00Z"))
        db.close()
        await pilot.press("f5")
        await settle(app, pilot)  # type: ignore[arg-type]
        out["after"] = _column(app, "stores", "store.status")
        return out

    out = _drive(hub_db, steps)
    assert out["stores"] == ["s1", "s2"]
    assert out["status"] == ["online", "online"]
    assert out["after"] == ["online", "offline"]
    assert out["facts"] == ["1", "2"]
    db = open_hub(str(hub_db))
    try:
        days = dict(
            db.query(
                "SELECT store_id, count(DISTINCT local_date) FROM hub_rollup GROUP BY store_id ORDER BY 1"
            )
        )
    finally:
        db.close()
    assert out["days"] == [str(days["s1"]), str(days["s2"])]
    assert all(x and x != "never" for x in out["last"])


def test_cross_store_question_uses_the_store_answer_view(hub_db: Path) -> None:
    expected = ask(str(hub_db), QUESTION, now=NOW)
    assert expected["status"] == "ok" and not expected["low_confidence"]

    async def steps(app: HubConsoleApp, pilot: Pilot[None]) -> dict[str, Any]:
        await _ask(app, pilot, QUESTION)
        ev = app.query_one("#evidence", DataTable)
        out: dict[str, Any] = {
            "payload": app.payload,
            "answer": str(app.query_one("#answer", Static).render()),
            "evidence": _column(app, "evidence", "event_id"),
            "result_rows": app.query_one("#result", DataTable).row_count,
            "plot": app.query_one("#plot").display,
        }
        ev.focus()
        await pilot.press("enter")
        await settle(app, pilot)  # type: ignore[arg-type]
        out["detail"] = str(app.query_one("#evidence_detail", Static).render())
        return out

    out = _drive(hub_db, steps)
    payload = out["payload"]
    same = {k: v for k, v in payload.items() if k != "elapsed_ms"}
    assert same == {k: v for k, v in expected.items() if k != "elapsed_ms"}  # as adamm-hub ask
    assert out["answer"] == payload_text(payload, "en", compact=True)
    assert f"{payload['confidence']:.2f}" in out["answer"]
    assert out["evidence"] == [e["event_id"] for e in payload["evidence"]]
    assert out["result_rows"] == len(result_table(payload, "en")[1]) == len(payload["result"]["items"])
    assert out["plot"] is True
    first = payload["evidence"][0]["event_id"]
    assert first in out["detail"] and "cited by the hub's daily summary" in out["detail"]


def test_learned_tab_lists_every_store_facts_and_c_shows_closed(hub_db: Path) -> None:
    async def steps(app: HubConsoleApp, pilot: Pilot[None]) -> dict[str, Any]:
        await pilot.press("f3")
        out = {"stores": _column(app, "facts", "store"), "text": _column(app, "facts", "fact.statement")}
        await pilot.press("c")
        await settle(app, pilot)  # type: ignore[arg-type]
        out["all"] = _column(app, "facts", "fact.statement")
        return out

    out = _drive(hub_db, steps)
    assert out["stores"] == ["s1", "s2"]
    assert out["text"] == ["rainy-day order value +33% vs sunny", "queues longer on promotion days"]
    assert sorted(out["all"]) == sorted([*out["text"], "an old finding"])


def _actions(target: Path) -> list[dict[str, Any]]:
    db = open_hub(str(target))
    try:
        return ha.list_actions(db)
    finally:
        db.close()


async def _send(app: HubConsoleApp, pilot: Pilot[None], role: str | None = None) -> dict[str, str]:
    await pilot.press("f7")
    await pilot.pause()
    prefilled = {
        "store": app.screen.query_one("#store_input", Input).value,
        "role": app.screen.query_one("#role_input", Input).value,
    }
    if role is not None:
        app.screen.query_one("#role_input", Input).value = role
    await pilot.press("enter")
    await settle(app, pilot)  # type: ignore[arg-type]
    return prefilled


def test_send_as_action_goes_to_the_finding_store_and_shows_in_the_log(hub_db: Path) -> None:
    async def steps(app: HubConsoleApp, pilot: Pilot[None]) -> dict[str, Any]:
        await pilot.press("f7")  # nothing asked yet: nothing to send
        await pilot.pause()
        out: dict[str, Any] = {"before": _actions(hub_db)}
        await _ask(app, pilot, QUESTION)
        out["prefilled"] = await _send(app, pilot, role="cash ier")  # not a topic level
        out["bad_role"] = str(app.screen.query_one("#target_error", Static).render())
        app.screen.query_one("#role_input", Input).value = "store_manager"
        await pilot.press("enter")
        await settle(app, pilot)  # type: ignore[arg-type]
        out["sent"] = _actions(hub_db)
        await _send(app, pilot)  # the same open action again: queued once
        out["again"] = _actions(hub_db)
        await pilot.press("f7")
        await pilot.pause()
        await pilot.press("escape")  # cancelled
        await settle(app, pilot)  # type: ignore[arg-type]
        out["cancelled"] = _actions(hub_db)
        await pilot.press("f4")
        out["log"] = {k: _column(app, "actions", k) for k in ("store", "role", "action.state", "title")}
        return out

    out = _drive(hub_db, steps)
    top = ask(str(hub_db), QUESTION, now=NOW)["result"]["items"][0]["key"]
    assert out["before"] == []
    assert out["prefilled"] == {"store": top, "role": "store_manager"}
    assert out["bad_role"] != ""
    assert [(a["store_id"], a["role"], a["type"], a["state"]) for a in out["sent"]] == [
        (top, "store_manager", "recommendation", "pending")
    ]
    assert json.loads(out["sent"][0]["params_json"])["title"] == QUESTION
    assert out["again"] == out["sent"] == out["cancelled"]
    assert out["log"] == {
        "store": [top],
        "role": ["store manager"],
        "action.state": ["pending"],
        "title": [QUESTION],
    }


def test_weak_answers_are_not_sent(hub_db: Path) -> None:
    async def steps(app: HubConsoleApp, pilot: Pilot[None]) -> Any:
        await _ask(app, pilot, "revenue trend by week")
        assert app.payload is not None and app.payload["status"] != "ok"
        await pilot.press("f7")
        await settle(app, pilot)  # type: ignore[arg-type]
        return type(app.screen).__name__

    assert _drive(hub_db, steps) != "TargetScreen"
    assert _actions(hub_db) == []


def test_console_command_refuses_what_is_not_a_hub_store(tmp_path: Path) -> None:
    other = tmp_path / "notes.txt"
    other.write_text("hello")
    for target, code in ((other, 3), (tmp_path / "missing.db", 3)):
        r = subprocess.run(
            [sys.executable, "-m", "hub", "console", "--db", str(target)],
            capture_output=True, text=True, cwd=ROOT, env=env(tmp_path), timeout=60,
        )  # fmt: skip
        assert r.returncode == code, r.stderr
        assert r.stdout == "" and "adamm-hub console:" in r.stderr
    assert other.read_text() == "hello"
    r = subprocess.run([sys.executable, "-m", "hub", "console"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2


@pytest.mark.skipif(not mosquitto_available(), reason="mosquitto is not installed")
def test_console_sends_serve_publishes_staff_acks_console_shows_done(
    hub_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def send(app: HubConsoleApp, pilot: Pilot[None]) -> None:
        await _ask(app, pilot, QUESTION)
        await _send(app, pilot, role="cashier")

    _drive(hub_db, send)
    (action,) = _actions(hub_db)
    assert action["state"] == "pending"
    store = action["store_id"]
    monkeypatch.setattr(actions_helpers, "STORE", store)  # the device of the finding's store
    with running_mosquitto(tmp_path / "mq") as broker:
        device = Staff(
            broker.url, env(tmp_path), "--json", "--ack", "done", "--once", "--by", "ann"
        ).wait_listening()
        hub = Hub(tmp_path, "--db", str(hub_db), "--broker", broker.url)
        try:
            hub.wait_subscribed()
            rc, shown, err = device.finish()
            assert rc == 0, err
            assert [(a["action_id"], a["type"]) for a in shown] == [(action["action_id"], "recommendation")]
            assert shown[0]["summary"] == action["summary"]
            assert eventually(lambda: _actions(hub_db)[0]["state"] == "done"), hub.log()
        finally:
            assert hub.stop() == 0, hub.log()

    async def log(app: HubConsoleApp, pilot: Pilot[None]) -> dict[str, list[str]]:
        await pilot.press("f4")
        return {k: _column(app, "actions", k) for k in ("store", "action.state", "action.by")}

    assert _drive(hub_db, log) == {"store": [store], "action.state": ["done"], "action.by": ["ann"]}
    (done,) = _actions(hub_db)
    assert done["acked_by"] == "ann" and ha.parse_iso(done["acked_at"]) <= datetime.now(UTC)


def test_a_store_console_sends_only_to_its_own_store(tmp_path: Path) -> None:
    from edge.config import AdammConfig
    from edge.errors import UsageError
    from edge.memory.store import Store
    from edge.services.store_console import StoreBackend

    payload = {
        "status": "ok",
        "summary": "queues are long",
        "confidence": 0.9,
        "low_confidence": False,
        "plan": {"target_metric": "queue_length"},
        "evidence": [{"event_id": "e1"}],
        "action": {"type": "work_order", "params": {"title": "Open checkout 3"}},
    }
    with Store.open(actions_helpers.make_memory(tmp_path / "m.db")) as store:
        backend = StoreBackend(store, AdammConfig())
        with pytest.raises(UsageError):
            backend.propose_action(payload, "cashier", store_id="sh_02")
        assert backend.list_actions() == []
        aid = backend.propose_action(payload, "cashier", store_id=actions_helpers.STORE)
        assert [(a["action_id"], a["store_id"]) for a in backend.list_actions()] == [
            (aid, actions_helpers.STORE)
        ]


EDGE_WITH_WILL = """
import sys, time
import paho.mqtt.client as mqtt
from edge.sync import messages as m
port, store = int(sys.argv[1]), sys.argv[2]
c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"edge-{store}", protocol=mqtt.MQTTv5)
c.will_set(m.status_topic(store), m.status_payload("offline", "2025-12-10T09:00:00Z"), qos=1, retain=True)
c.connect("127.0.0.1", port)
c.loop_start()
c.publish(m.status_topic(store), m.status_payload("online", "2025-12-10T08:30:00Z"), qos=1, retain=True).wait_for_publish(10)
print("online", flush=True)
time.sleep(600)
"""


@pytest.mark.skipif(not mosquitto_available(), reason="mosquitto is not installed")
def test_a_store_whose_connection_dies_shows_offline(hub_db: Path, tmp_path: Path) -> None:
    """The edge's last will (retained ``offline``) reaches the hub when its process is SIGKILLed."""

    def status(store: str) -> str | None:
        db = open_hub(str(hub_db))
        try:
            row = db.one("SELECT status, status_at FROM hub_stores WHERE store_id = ?", (store,))
            return f"{row[0]} {row[1]}" if row else None
        finally:
            db.close()

    with running_mosquitto(tmp_path / "mq") as broker:
        hub = Hub(tmp_path, "--db", str(hub_db), "--broker", broker.url)
        edge = subprocess.Popen(
            [sys.executable, "-c", EDGE_WITH_WILL, str(broker.port), "s2"],
            stdout=subprocess.PIPE, text=True, cwd=ROOT, env=env(tmp_path),
        )  # fmt: skip
        try:
            hub.wait_subscribed()
            assert edge.stdout is not None and edge.stdout.readline().strip() == "online"
            assert eventually(lambda: status("s2") == "online 2025-12-10T08:30:00Z"), hub.log()
            edge.kill()  # SIGKILL: no DISCONNECT, the broker publishes the will
            edge.wait(30)
            assert eventually(lambda: status("s2") == "offline 2025-12-10T09:00:00Z"), hub.log()
        finally:
            if edge.poll() is None:
                edge.kill()
                edge.wait(30)
            assert hub.stop() == 0, hub.log()

    async def steps(app: HubConsoleApp, pilot: Pilot[None]) -> list[str]:
        await pilot.press("f2")
        return _column(app, "stores", "store.status")

    assert _drive(hub_db, steps) == ["online", "offline"]


def test_console_now_counts_relative_questions_from_the_given_time(
    hub_db: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``adamm-hub console --now ISO``, like the store's ``adamm tui --now``: the backend answers
    relative questions from that time; a bad value is a usage error before the app starts."""
    from hub.cli import main

    seen: list[datetime | None] = []

    def fake_run(self: HubConsoleApp) -> None:
        seen.append(self.backend.now)  # type: ignore[attr-defined]

    monkeypatch.setattr(HubConsoleApp, "run", fake_run)
    assert main(["console", "--db", str(hub_db), "--now", "2025-12-02T00:00:00+08:00"]) == 0
    assert seen == [datetime(2025, 12, 1, 16, tzinfo=UTC)]
    assert main(["console", "--db", str(hub_db), "--now", "yesterday"]) == 2
    assert "--now 'yesterday'" in capsys.readouterr().err
    assert len(seen) == 1


# -- one language, one clock, the Actions tab live (issue 26) -------------------------------------

ZH_QUESTION = "哪个门店的销售额最高？"


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_every_console_tab_keeps_to_one_language_at_100x30(hub_db: Path, lang: str) -> None:
    async def steps(app: HubConsoleApp, pilot: Pilot[None]) -> dict[str, str]:
        await _ask(app, pilot, ZH_QUESTION if lang == "zh" else QUESTION)
        assert app.payload is not None and app.payload["status"] == "ok", app.payload
        await _send(app, pilot)  # an action in the log
        shots = {"ask": screen_text(app)}
        ev = app.query_one("#evidence", DataTable)
        ev.focus()
        await pilot.press("enter")
        await settle(app, pilot)  # type: ignore[arg-type]
        shots["evidence"] = str(app.query_one("#evidence_detail", Static).render())
        for key in ("f2", "f3", "f4"):
            await pilot.press(key)
            await settle(app, pilot)  # type: ignore[arg-type]
            shots[key] = screen_text(app)
        await pilot.press("ctrl+c")
        await pilot.pause()
        shots["ctrl+c"] = " ".join(f"{n.title} {n.message}" for n in app._notifications)
        keep = data_words(app) | {"est", "edt", "cst"}  # the stores' zones (Shanghai, New York)
        return {k: " ".join(foreign_words(v, lang, keep)) for k, v in shots.items()}

    found = _drive(hub_db, steps, lang, size=(100, 30))
    assert not any(found.values()), found


def test_console_times_are_each_store_local_with_the_zone_said(hub_db: Path) -> None:
    async def steps(app: HubConsoleApp, pilot: Pilot[None]) -> dict[str, list[str]]:
        await pilot.press("f2")
        return {k: _column(app, "stores", k) for k in ("store", "store.since")}

    out = _drive(hub_db, steps)
    # both stores said online at 08:00Z: 16:00 in Shanghai, 03:00 in New York, each zone said
    assert out == {
        "store": ["s1", "s2"],
        "store.since": ["2025-12-10 16:00:00 CST", "2025-12-10 03:00:00 EST"],
    }


def test_the_actions_tab_shows_state_changes_as_they_happen(
    hub_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(HubConsoleApp, "ACTIONS_REFRESH_S", 0.2)

    async def steps(app: HubConsoleApp, pilot: Pilot[None]) -> dict[str, Any]:
        await _ask(app, pilot, QUESTION)
        await _send(app, pilot)
        await pilot.press("f4")
        await settle(app, pilot)  # type: ignore[arg-type]
        out: dict[str, Any] = {"before": _column(app, "actions", "action.state")}
        (action,) = _actions(hub_db)
        db = open_hub(str(hub_db))  # a staff device acknowledges; serve records it
        try:
            topic = m.ack_topic(action["store_id"], action["action_id"])
            assert (
                ha.record_ack(db, topic, m.ack_payload("ann", "2025-12-10T08:05:00Z", "done")) == "recorded"
            )
        finally:
            db.close()
        for _ in range(30):  # no key pressed: the tab refreshes on its own
            await pilot.pause(0.1)
            await app.workers.wait_for_complete()
            if _column(app, "actions", "action.state") == ["done"]:
                break
        out["after"] = _column(app, "actions", "action.state")
        out["by"] = _column(app, "actions", "action.by")
        return out

    out = _drive(hub_db, steps)
    assert out["before"] == ["pending"]
    assert out["after"] == ["done"] and out["by"] == ["ann"]


@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")
def test_adamm_hub_console_in_a_real_terminal_at_100x30(hub_db: Path) -> None:
    """``adamm-hub console`` in a real terminal (tmux, 100x30, English): the footer's keys whole,
    F2 lists every store with its own zone's time, the screen in one language, Ctrl+Q quits."""
    import re

    from actions_helpers import Tmux

    argv = [
        sys.executable,
        "-m",
        "hub",
        "console",
        "--db",
        str(hub_db),
        "--lang",
        "en",
        "--now",
        NOW.isoformat(),
    ]
    with Tmux(argv) as term:
        first = term.wait_for("f7 Send as action")  # the footer, drawn last, whole
        assert "^q Quit" in first and "F2 Stores" in first, first
        term.keys("F2")
        stores = term.wait_for("s2")
        assert "s1" in stores
        assert re.search(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} [A-Z]{2,5}", stores), (
            stores
        )  # local, zone said
        assert not re.search(r"[\u4e00-\u9fff]", stores), stores  # one language

        # each store's row fits the terminal: its last column (the zone) whole or cut with "…"
        # (read again until the table has laid its columns out: a capture can fall between the
        # rows' first draw and the fitted one)
        def fitted(screen: str) -> list[str]:
            bad = []
            for sid, zone in (("s1", ZONES["s1"]), ("s2", ZONES["s2"])):
                (row,) = [line for line in screen.splitlines() if line.startswith(f" {sid} ")]
                last = row.split()[-1]
                if not (last == zone or (last.endswith("…") and zone.startswith(last[:-1]))):
                    bad.append(row)
            return bad

        deadline = time.monotonic() + 10
        while (bad := fitted(stores)) and time.monotonic() < deadline:
            time.sleep(0.5)
            stores = term.screen()
        assert not bad, bad
        term.keys("C-q")
        assert term.gone("F2 Stores")  # it quit


# -- did it work, does it hold everywhere (issue 27) -----------------------------------------------

STORE_ACTION = "ab" * 32


@pytest.fixture
def effects_db(hub_db: Path) -> dict[str, Any]:
    """The hub with a store's own action known by its synced ``action_effect`` fact, and a
    hub-issued action a staff device acknowledged done three days before ``NOW``."""
    from datetime import timedelta

    from edge.contract import iso

    effect = fact(
        "s1",
        "f_effect",
        action_id=STORE_ACTION,
        metric="queue_length",
        dimension="date",
        effect=-0.31,
        p_value=2e-6,
        n=240,
        statement={
            "zh": "行动“加开收银台”完成后排队长度变化 -31%",
            "en": "after 'second checkout', queue length -31%",
        },
        valid_from="2025-11-10",
    )
    from edge.presentation.facts import fact_statement

    body = {"metric": "avg_order_value", "dimension": "weather", "effect": 0.3, "n": 400, "p_value": 1e-6}
    learned = fact(
        "s1",
        "f_learned",
        statement=fact_statement("compare", body, {"subject": "rain", "baseline": "sunny"}),
        **body,
    )  # fmt: skip  (as a store's maintenance words a compare fact)
    db = open_hub(str(hub_db))
    try:
        for s in (effect, learned):
            assert ingest(db, m.summary_topic("s1"), s.encode()).outcome == "stored"
        done_at = NOW - timedelta(days=3)
        hub_action = ha.issue_action(
            db, store_id="s2", role="shift_lead", type="work_order",
            params={"title": "tasting stand", "target_metric": "avg_order_value"}, summary="tasting stand",
            confidence=1.0, expires_at=NOW + timedelta(days=1), now=done_at - timedelta(hours=1),
        )  # fmt: skip
        ack = m.ack_payload("dev-1", iso(done_at), "done")
        assert ha.record_ack(db, m.ack_topic("s2", hub_action), ack, now=done_at) == "recorded"
    finally:
        db.close()
    return {"db": hub_db, "hub_action": hub_action, "fact": effect.body}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_actions_tab_says_each_done_actions_effect_and_learned_tab_links_a_fact_to_its_fleet_row(
    effects_db: dict[str, Any], lang: str
) -> None:
    from edge.presentation.effects import effect_cell, effect_text
    from hub.fleet import kind_head, store_lines

    backend = HubBackend(str(effects_db["db"]), now=NOW)
    rows = {a["action_id"]: a for a in backend.list_actions()}
    fleet = backend.fleet()

    async def steps(app: HubConsoleApp, pilot: Pilot[None]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        await pilot.press("f4")
        table = app.query_one("#actions", DataTable)
        for aid in (STORE_ACTION, effects_db["hub_action"]):
            table.move_cursor(row=table.get_row_index(aid))
            await pilot.pause()
            out[aid] = (
                whole_cell(table, aid, "action.effect"),
                str(app.query_one("#act_effect", Static).render()),
            )
        await pilot.press("f3")
        await settle(app, pilot)  # type: ignore[arg-type]
        facts = app.query_one("#facts", DataTable)
        out["fleet"] = str(app.query_one("#fleet_text", Static).render())
        for key in ("s1/f_learned", "s1/f_effect"):
            facts.move_cursor(row=facts.get_row_index(key))
            await pilot.pause()
            out[key] = str(app.query_one("#fact_fleet", Static).render())
        out["screen"] = screen_text(app)
        out["keep"] = data_words(app)
        return out

    out = _drive(effects_db["db"], steps, lang, size=(100, 30))
    # the store's own action, known at the hub by its synced fact: measured, in the shared words
    measured = rows[STORE_ACTION]["effect"]
    assert measured["state"] == "measured" and measured["effect"] == effects_db["fact"]["effect"]
    colon, label = ("：", "效果") if lang == "zh" else (": ", "Effect")
    for aid in (STORE_ACTION, effects_db["hub_action"]):
        eff = rows[aid]["effect"]
        assert out[aid] == (effect_cell(eff, lang), f"{label}{colon}{effect_text(eff, lang)}")
    assert out[STORE_ACTION][0] == "-31.0%" and "n=240" in out[STORE_ACTION][1]
    # an action the hub sent is in no store's memory: said not to be measured, not "N more days"
    assert rows[effects_db["hub_action"]]["effect"] == {"state": "not_measured", "window_days": 14}
    assert ("不测量" if lang == "zh" else "not measured") in out[effects_db["hub_action"]][1]
    # the fleet rows adamm-hub facts computes, and a store fact linked to its own
    (row,) = [k for k in fleet["fleet"] if "s1" in k["learned_in"]]
    assert kind_head(row, lang) in out["fleet"].replace("\n", "")
    linked = out["s1/f_learned"]
    assert kind_head(row, lang) in linked.replace("\n", "")
    assert all(line in linked for line in store_lines(row, lang))
    assert row["of"] == 2 and {s["store_id"] for s in row["stores"]} == {"s1", "s2"}
    not_tested = "不跨门店检验" if lang == "zh" else "not tested across stores"
    assert not_tested in out["s1/f_effect"]
    assert not foreign_words(out["screen"], lang, out["keep"])  # the Learned tab in one language
