"""Pilot tests of the Textual app (edge.tui) on a real store built from the simulator.

The store (real SQLite + sqlite-vec, real text encoder) is built once per module from
``simulate(SimConfig(days=40))``; expected values are derived from the simulated events.
"""

from __future__ import annotations

import asyncio
import html
import json
import os
import re
import shutil
from collections.abc import Awaitable, Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Static, TabbedContent

from edge.config import AdammConfig
from edge.memory.semantic import actions as action_rows
from edge.memory.semantic import events as event_rows
from edge.memory.semantic import facts as fact_rows
from edge.memory.store import Store
from edge.services.action_rules import action_summary
from edge.services.store_console import StoreBackend
from edge.sim import SimConfig
from edge.tui.app import AdammApp, Answered, build_filter
from edge.tui.widgets import HistoryInput, ResultPlot

SIM = SimConfig(days=40, customers_per_day=80)
DOCS = Path(__file__).parents[1] / "docs"

RAIN_QUESTION = "下雨天和晴天相比，哪种天气客单价更高？"


def _backend(store: Store, now: datetime | None = None) -> StoreBackend:
    return StoreBackend(store, AdammConfig(), now=now)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, sim_store_file: Path) -> Iterator[Store]:
    """A copy of the session's simulated store (conftest.sim_store_file), this module's own."""
    path = tmp_path_factory.mktemp("tui") / "store.db"
    shutil.copy(sim_store_file, path)
    s = Store.open(path, timezone=SIM.timezone)
    yield s
    s.close()


@pytest.fixture(scope="module")
def sim_now(sim_events: list[dict[str, Any]]) -> datetime:
    return max(datetime.fromisoformat(e["timestamp"]) for e in sim_events) + timedelta(hours=1)


def _drive(
    store: Store,
    steps: Callable[[AdammApp, Pilot[None]], Awaitable[Any]],
    size: tuple[int, int] = (100, 30),
    now: datetime | None = None,
    lang: str = "en",
    **kwargs: Any,
) -> Any:
    async def go() -> Any:
        app = AdammApp(_backend(store, now), lang, **kwargs)
        async with app.run_test(size=size) as pilot:
            await settle(app, pilot)
            return await steps(app, pilot)

    return asyncio.run(go())


async def settle(app: AdammApp, pilot: Pilot[None]) -> None:
    """Wait for every worker and for the messages they posted to be handled (twice: workers
    started by message handlers, e.g. the table refresh after an answer)."""
    for _ in range(3):
        await app.workers.wait_for_complete()
        await pilot.pause()


def _static(app: AdammApp, wid: str) -> str:
    return str(app.query_one(wid, Static).render())


def _column(table: DataTable[Any], key: str) -> list[str]:
    return [str(v) for v in table.get_column(key)]


def test_status_tab_says_daemon_not_running_and_save_without_answer(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "s.db")

    async def steps(app: AdammApp, pilot: Pilot[None]) -> str:
        await pilot.press("ctrl+s")
        await pilot.pause()
        return _static(app, "#status_text")

    try:
        text = _drive(store, steps, size=(80, 24), out_dir=tmp_path)
    finally:
        store.close()
    assert "daemon not running" in text
    assert not list(tmp_path.glob("adamm-answer-*.json"))


def test_build_filter_parses_types_local_days_and_attributes() -> None:
    flt = build_filter("purchase, 投诉", "2025-09-02", "2025-09-03", "weather=rainy", "Asia/Shanghai")
    assert flt.event_types == ("purchase", "complaint")
    assert flt.since is not None and flt.since.isoformat() == "2025-09-01T16:00:00+00:00"
    assert flt.until is not None and flt.until.isoformat() == "2025-09-03T16:00:00+00:00"
    assert flt.attributes == (("weather", ("rainy",)),)
    with pytest.raises(Exception, match="YYYY-MM-DD"):
        build_filter("", "yesterday", "", "", "Asia/Shanghai")


def test_events_tab_lists_filters_searches_and_shows_details(
    store: Store, sim_events: list[dict[str, Any]]
) -> None:
    purchases = [e for e in sim_events if e["event_type"] == "purchase"]
    by_id = {e["event_id"]: e for e in sim_events}

    async def steps(app: AdammApp, pilot: Pilot[None]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        table = app.query_one("#events", DataTable)
        out["all_rows"] = table.row_count
        out["all_total"] = _static(app, "#ev_total")
        table.focus()  # a focused widget in another tab must not pull the tab back
        await pilot.press("f6")
        await pilot.press("f2")
        out["tab"] = app.query_one("#tabs", TabbedContent).active
        app.query_one("#ev_type", Input).value = "purchase"
        app.query_one("#ev_type", Input).focus()
        await pilot.press("enter")
        await settle(app, pilot)
        out["purchase_types"] = set(_column(table, "event_type"))
        out["purchase_total"] = _static(app, "#ev_total")
        app.query_one("#ev_type", Input).value = ""
        app.query_one("#ev_search", Input).value = "车厘子优惠"
        app.query_one("#ev_search", Input).focus()
        await pilot.press("enter")
        await settle(app, pilot)
        out["hits"] = _column(table, "event_id")
        table.focus()
        await pilot.press("enter")
        await settle(app, pilot)
        out["detail"] = _static(app, "#ev_detail")
        return out

    out = _drive(store, steps)
    assert out["tab"] == "events_tab"
    assert out["all_rows"] == 200
    assert f"{len(sim_events)} match" in out["all_total"]
    assert out["purchase_types"] == {"purchase"}
    assert f"{len(purchases)} match" in out["purchase_total"]
    assert 0 < len(out["hits"]) <= 50
    top = by_id[out["hits"][0]]
    assert top["event_id"] in out["detail"]
    assert top["raw_ref"][0] in out["detail"]


def test_actions_tab_acknowledges_and_learned_tab_lists_facts(store: Store, sim_now: datetime) -> None:
    # a fact as maintenance would write it (asking never writes facts), and a real answer's action
    # proposed through the backend
    statement = "rainy days sell more per bill"
    fact = fact_rows.FactRecord(
        fact_id="f-test",
        store_id=SIM.store_id,
        question="weather_order_value",
        slot="rain_vs_sunny",
        signature="up",
        statement={"zh": statement, "en": statement},
        metric="avg_order_value",
        dimension="weather",
        value=120.0,
        effect=0.25,
        n=80,
        p_value=0.01,
        confidence=0.8,
        evidence=[],
        evidence_count=0,
        valid_from="2025-10-01",
        valid_to=None,
        plan={},
        evaluated_until="2025-10-01",
    )
    fact_rows.apply_run(store, SIM.store_id, "weather_order_value", [fact], "2025-10-01")
    backend = _backend(store, sim_now)
    payload = backend.ask(RAIN_QUESTION)
    assert payload["status"] == "ok" and payload["action"], payload
    action_id = backend.propose_action(payload)
    assert action_id is not None

    def state() -> str:
        with store.read() as conn:
            return next(a["state"] for a in action_rows.list_actions(conn) if a["action_id"] == action_id)

    async def steps(app: AdammApp, pilot: Pilot[None]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        await pilot.press("f3")
        out["facts"] = _column(app.query_one("#facts", DataTable), "fact.statement")
        await pilot.press("f4")
        out["tab"] = app.query_one("#tabs", TabbedContent).active
        table = app.query_one("#actions", DataTable)
        table.focus()
        table.move_cursor(row=table.get_row_index(action_id))
        await pilot.press("a")
        await settle(app, pilot)
        out["after_a"] = state()
        out["shown_a"] = str(table.get_cell(action_id, "action.state"))
        table.move_cursor(row=table.get_row_index(action_id))
        await pilot.press("d")
        await settle(app, pilot)
        out["after_d"] = state()
        out["shown_d"] = str(table.get_cell(action_id, "action.state"))
        return out

    out = _drive(store, steps, size=(80, 24))
    assert out["tab"] == "actions_tab"
    assert statement in out["facts"]
    assert (out["after_a"], out["shown_a"]) == ("accepted", "accepted")
    assert (out["after_d"], out["shown_d"]) == ("done", "done")


def test_question_history_recalls_with_up_and_down(tmp_path: Path) -> None:
    async def go() -> list[str]:
        store = Store.open(tmp_path / "h.db")
        app = AdammApp(_backend(store), "en")
        try:
            async with app.run_test(size=(80, 24)) as pilot:
                box = app.query_one("#question", HistoryInput)
                box.remember("first")
                box.remember("second")
                seen = []
                for key in ("up", "up", "up", "down", "down"):
                    await pilot.press(key)
                    seen.append(box.value)
                return seen
        finally:
            store.close()

    assert asyncio.run(go()) == ["second", "first", "first", "second", ""]


async def _ask(app: AdammApp, pilot: Pilot[None], question: str) -> None:
    await pilot.press("f1")
    box = app.query_one("#question", Input)
    box.value = question
    box.focus()
    await pilot.press("enter")
    await settle(app, pilot)


def _svg_text(svg: str) -> str:
    """The visible text of a Textual SVG screenshot (spans joined, entities decoded)."""
    body = re.sub(r"<[^>]+>", "", svg)
    return html.unescape(body).replace("\xa0", " ")


def _semantic_rows(store: Store) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    with store.read() as conn:
        return fact_rows.list_facts(conn), action_rows.list_actions(conn)


def test_ask_shows_summary_confidence_evidence_writes_nothing_and_f7_saves_the_action(
    store: Store, sim_now: datetime, tmp_path: Path
) -> None:
    store.writer.submit(lambda c: c.execute("DELETE FROM actions")).result()  # another test's

    async def steps(app: AdammApp, pilot: Pilot[None]) -> dict[str, Any]:
        before = _semantic_rows(store)
        await _ask(app, pilot, RAIN_QUESTION)
        out: dict[str, Any] = {"payload": app.payload, "answer": _static(app, "#answer")}
        out["written_by_ask"] = (before, _semantic_rows(store))
        svg_path = tmp_path / "ask.svg"
        app.save_screenshot(svg_path.name, str(tmp_path))
        out["svg"] = svg_path.read_text(encoding="utf-8")
        if os.environ.get("ADAMM_UPDATE_SCREENSHOTS"):  # regenerate the README's screenshots
            DOCS.mkdir(exist_ok=True)
            app.save_screenshot("tui.svg", str(DOCS))
        ev = app.query_one("#evidence", DataTable)
        out["evidence_rows"] = _column(ev, "event_id") if ev.columns else []
        if ev.row_count:
            ev.focus()
            await pilot.press("enter")
            await settle(app, pilot)
        out["detail"] = _static(app, "#evidence_detail")
        out["result_rows"] = app.query_one("#result", DataTable).row_count
        await pilot.press("ctrl+s")
        await pilot.pause()
        await pilot.press("f7")  # send as action: the role chooser opens with the action's own role
        await pilot.pause()
        out["role_prefilled"] = app.screen.query_one("#role_input", Input).value
        await pilot.press("enter")
        await settle(app, pilot)
        out["actions_after_f7"] = _semantic_rows(store)[1]
        out["actions_table"] = _column(app.query_one("#actions", DataTable), "summary")
        await pilot.press("f7")
        await pilot.pause()
        await pilot.press("escape")  # cancelled: nothing sent
        await settle(app, pilot)
        out["actions_after_escape"] = _semantic_rows(store)[1]
        await pilot.press("f7")
        await pilot.pause()
        app.screen.query_one("#role_input", Input).value = "cash ier"  # not a topic level
        await pilot.press("enter")
        await pilot.pause()
        out["bad_role_error"] = str(app.screen.query_one("#role_error", Static).render())
        app.screen.query_one("#role_input", Input).value = "cashier"
        await pilot.press("enter")
        await settle(app, pilot)
        out["actions_after_cashier"] = _semantic_rows(store)[1]
        if os.environ.get("ADAMM_UPDATE_SCREENSHOTS"):
            await pilot.press("f6")
            await pilot.pause()
            app.save_screenshot("tui-status.svg", str(DOCS))
        return out

    size = (110, 48) if os.environ.get("ADAMM_UPDATE_SCREENSHOTS") else (100, 30)
    out = _drive(store, steps, size=size, now=sim_now, out_dir=tmp_path)
    payload = out["payload"]
    assert payload is not None and payload["status"] == "ok", payload
    assert payload["summary"] in out["answer"]
    assert f"{payload['confidence']:.2f}" in out["answer"]
    ids = [e["event_id"] for e in payload["evidence"]]
    assert ids and out["evidence_rows"] == ids
    assert ids[0] in out["detail"]
    assert out["result_rows"] > 0
    saved = list(tmp_path.glob("adamm-answer-*.json"))
    assert len(saved) == 1 and json.loads(saved[0].read_text(encoding="utf-8")) == payload
    assert payload["summary"][:12] in _svg_text(out["svg"])
    # asking wrote no fact and no action
    before, after = out["written_by_ask"]
    assert after == before and before[1] == []
    # the simulator makes rainy days' order value clearly higher: a confident answer with an action,
    # which F7 queues in the outbox as one pending action of this store, for the role chosen
    # (prefilled with the action's own), expiring after [actions] default_expires_in (4 h)
    assert not payload["low_confidence"] and payload["action"]
    assert out["role_prefilled"] == payload["action"]["params"]["role"]
    saved_actions = out["actions_after_f7"]
    assert len(saved_actions) == 1
    row = saved_actions[0]
    # the device reads how the question was read, then the answer
    assert row["summary"] == action_summary(payload) and row["state"] == "pending"
    assert row["summary"].startswith(payload["interpretation"]["text"])
    assert row["store_id"] == SIM.store_id and row["role"] == payload["action"]["params"]["role"]
    assert json.loads(row["params_json"])["subject"] == payload["plan"]["target_metric"]
    span = datetime.fromisoformat(row["expires_at"]) - datetime.fromisoformat(row["issued_at"])
    assert span == timedelta(hours=4)
    assert out["actions_table"] == [action_summary(payload)]
    assert out["actions_after_escape"] == saved_actions
    assert "letters, digits" in out["bad_role_error"]
    cashier = [r for r in out["actions_after_cashier"] if r["action_id"] != row["action_id"]]
    assert [(r["role"], r["state"], r["summary"]) for r in cashier] == [
        ("cashier", "pending", action_summary(payload))
    ]


def test_thin_data_question_shows_insufficient_data(store: Store, sim_now: datetime) -> None:
    async def steps(app: AdammApp, pilot: Pilot[None]) -> tuple[Any, str, bool]:
        await _ask(app, pilot, "过去一年客流趋势")
        return app.payload, _static(app, "#answer"), app.query_one("#warning").display

    payload, text, warned = _drive(store, steps, now=sim_now)
    assert payload["status"] == "insufficient_data", payload
    assert "insufficient data" in text
    assert payload["summary"] in text
    assert payload["missing"] and all(m in text for m in payload["missing"])
    assert not warned  # the status line explains it; no tentative-result warning


def test_unsupported_question_shows_parser_explanation(store: Store, sim_now: datetime) -> None:
    async def steps(app: AdammApp, pilot: Pilot[None]) -> tuple[Any, str]:
        await _ask(app, pilot, "写一首诗")
        return app.payload, _static(app, "#answer")

    payload, text = _drive(store, steps, size=(80, 24), now=sim_now)
    assert payload["status"] == "unsupported", payload
    assert "unsupported" in text
    assert payload["summary"] in text


def test_low_confidence_warning_plot_with_anomalies_and_sortable_columns(store: Store) -> None:
    values = [10.0, 12.0, 11.0, 40.0, 9.0, 13.0]
    flagged = (5, 3, 1)  # listed out of value order, so sorting has work to do
    payload = {
        "status": "ok",
        "question": "any footfall anomalies?",
        "plan": {"intent": "anomaly", "metric": "footfall"},
        "summary": "one spike on day 4",
        "result": {
            "method": "robust_z",
            "series": [{"bucket": f"2025-09-0{i + 1}", "value": v, "n": 1} for i, v in enumerate(values)],
            "anomalies": [
                {
                    "bucket": f"2025-09-0{i + 1}",
                    "value": values[i],
                    "expected": 11.0,
                    "score": 2.0,
                    "direction": "up",
                }
                for i in flagged
            ],
        },
        "evidence": [],
        "evidence_count": 0,
        "confidence": 0.3,
        "low_confidence": True,
        "missing": ["more days"],
        "action": None,
    }

    async def steps(app: AdammApp, pilot: Pilot[None]) -> dict[str, Any]:
        app.post_message(Answered(payload))
        await settle(app, pilot)
        out: dict[str, Any] = {
            "warning_shown": app.query_one("#warning").display,
            "warning": _static(app, "#warning"),
            "plot_shown": app.query_one("#plot", ResultPlot).display,
            "answer": _static(app, "#answer"),
        }
        table = app.query_one("#result", DataTable)
        out["columns"] = [str(c.value) for c in table.columns]
        table.focus()
        table.move_cursor(column=out["columns"].index("value"))
        await pilot.press("s")
        out["asc"] = _column(table, "value")
        await pilot.press("s")
        out["desc"] = _column(table, "value")
        return out

    out = _drive(store, steps, size=(80, 24))
    assert out["warning_shown"] and "LOW CONFIDENCE" in out["warning"]
    assert "LOW CONFIDENCE" not in out["answer"] and payload["summary"] in out["answer"]
    assert out["plot_shown"]
    assert out["columns"][:2] == ["bucket", "value"]
    expected = sorted(values[i] for i in flagged)
    assert [float(v) for v in out["asc"]] == expected
    assert [float(v) for v in out["desc"]] == expected[::-1]


def test_cli_reports_missing_database_and_bad_now(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from edge.cli import main

    assert main(["tui", "--db", str(tmp_path / "absent.db")]) == 3
    assert "adamm import" in capsys.readouterr().err
    Store.open(tmp_path / "s.db").close()
    assert main(["tui", "--db", str(tmp_path / "s.db"), "--now", "yesterday"]) == 2
    assert "--now" in capsys.readouterr().err


def test_status_tab_lists_running_components_with_dropped_frames(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "s.db")
    from edge.daemon.workers import component_row

    row = component_row("cam_entrance", "camera", {"state": "running", "dropped": 17, "last_error": None})
    row["provider"] = "CUDAExecutionProvider"
    store.writer.submit(
        lambda c: c.execute(
            "INSERT INTO components (name, kind, state, provider, detail_json, updated_at)"
            " VALUES (:name, :kind, :state, :provider, :detail_json, :updated_at)",
            row,
        )
    ).result()

    async def steps(app: AdammApp, pilot: Pilot[None]) -> str:
        await pilot.press("f6")
        return _static(app, "#status_text")

    try:
        text = _drive(store, steps, size=(80, 24))
    finally:
        store.close()
    assert "daemon not running" not in text
    assert "cam_entrance  camera  running  CUDAExecutionProvider" in text
    assert "dropped frames: 17" in text


def test_bad_filter_becomes_a_notification_not_a_crash(store: Store) -> None:
    async def steps(app: AdammApp, pilot: Pilot[None]) -> list[str]:
        await pilot.press("f2")
        box = app.query_one("#ev_since", Input)
        box.value = "yesterday"
        box.focus()
        await pilot.press("enter")
        await settle(app, pilot)
        assert not app.query_one("#ev_loading").display
        return [n.message for n in app._notifications]

    messages = _drive(store, steps)
    assert any("YYYY-MM-DD" in m for m in messages)


def test_chinese_labels(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "s.db")

    async def go() -> tuple[str, str]:
        app = AdammApp(_backend(store), "zh")
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(app, pilot)
            app.save_screenshot("zh.svg", str(tmp_path))
            return _static(app, "#status_text"), _static(app, "#answer")

    try:
        status, answer = asyncio.run(go())
    finally:
        store.close()
    assert "守护进程未运行" in status
    assert answer == "还没有回答。输入问题后回车。"
    assert "提问" in _svg_text((tmp_path / "zh.svg").read_text(encoding="utf-8"))


@pytest.mark.parametrize("size", [(80, 24), (100, 30)])
def test_answer_view_tables_and_plot_do_not_overlap(
    store: Store, sim_now: datetime, size: tuple[int, int]
) -> None:
    """A trend answer shows its series table, evidence table and sparkline side by side or one
    under the other, never drawn over each other, on a small terminal."""

    async def steps(app: AdammApp, pilot: Pilot[None]) -> dict[str, Any]:
        await _ask(app, pilot, "How has daily footfall trended?")
        shown = {}
        for wid in ("#answer", "#result", "#evidence", "#plot"):
            w = app.query_one(wid)
            if w.display:
                shown[wid] = w.region
        return {"payload": app.payload, "regions": shown}

    out = _drive(store, steps, size=size, now=sim_now)
    assert out["payload"]["status"] == "ok", out["payload"]
    regions = out["regions"]
    assert {"#result", "#evidence", "#plot"} <= set(regions)
    names = sorted(regions)
    for i, a in enumerate(names):
        assert regions[a].width > 0 and regions[a].height > 0, a
        for b in names[i + 1 :]:
            assert not regions[a].overlaps(regions[b]), (a, regions[a], b, regions[b])


def test_events_tab_shows_store_local_times(store: Store) -> None:
    from zoneinfo import ZoneInfo

    async def steps(app: AdammApp, pilot: Pilot[None]) -> tuple[list[str], list[str]]:
        await pilot.press("f2")
        await settle(app, pilot)
        table = app.query_one("#events", DataTable)
        return _column(table, "event_id"), _column(table, "timestamp")

    ids, times = _drive(store, steps)
    assert ids and len(ids) == len(times)
    with store.read() as conn:
        ev = event_rows.get_event(conn, ids[0])
    assert ev is not None
    utc = datetime.fromisoformat(ev["ts"].replace("Z", "+00:00"))
    # store-local with the zone said (China Standard Time)
    assert times[0] == utc.astimezone(ZoneInfo(SIM.timezone)).strftime("%Y-%m-%d %H:%M:%S CST")
    assert not any("T" in t.removesuffix(" CST") or t.endswith("Z") for t in times)


# -- one language per screen, the app at work (issue 26) ----------------------------------------

#: words a screen may show in either language: commands, formats, units, zones, math
SCREEN_KEEP = {
    "adamm",
    "adamm-hub",
    "maintain",
    "run",
    "config",
    "sync",
    "serve",
    "hub",
    "json",
    "cst",
    "utc",
    "p",
    "r",
    "n",
    "t",
    "ms",
    "s",
    "a",
    "b",
    "d",
    "x",
    "c",
    "q",
    "ctrl",
    "esc",
    "f",
    "id",
    "benjamini-hochberg",
}  # fmt: skip  (a method's name, said so in both languages)


def screen_text(app: Any) -> str:
    """The visible text of the app's screen as one string (Textual's SVG export, tags dropped)."""
    svg = re.sub(r"<style.*?</style>", "", app.export_screenshot(), flags=re.S)
    return _svg_text(svg)


def foreign_words(text: str, lang: str, keep: set[str] = frozenset()) -> list[str]:  # type: ignore[assignment]
    """What on a ``lang`` screen is in the other language: English words on a Chinese screen
    (ids with digits, SCREEN_KEEP and the data in ``keep`` aside), CJK on an English one."""
    if lang == "en":
        return [w for w in re.findall(r"[\u4e00-\u9fff]+", text) if not any(w in k for k in keep)]
    bad = []
    for tok in re.findall(r"[A-Za-z][A-Za-z0-9_\-]*", text):
        low = tok.lower()
        # ids carry digits (event, store and action ids); a snake_case word is a field, topic or
        # test name and needs a label, unless it is the data's own (a stored value)
        if low in SCREEN_KEEP or any(c.isdigit() for c in tok) or any(low in k for k in keep):
            continue  # (a data cell cut at the screen's edge shows part of a word)
        bad.append(tok)
    return bad


def whole_cell(table: Any, row: str, column: str) -> str:
    """A cell's whole text (a cut cell shows its start and "…"; the detail pane shows it whole)."""
    shown = str(table.get_cell(row, column))
    cols = [c.value for c in table.columns]
    whole = table.full_cells[row][cols.index(column)]
    assert shown == whole or (shown.endswith("…") and whole.startswith(shown[:-1])), (shown, whole)
    return whole


def data_words(app: Any) -> set[str]:
    """Words of the stored data on screen (event ids and texts, fact statements): not the UI's."""
    words: set[str] = set()
    for table in app.query(DataTable):
        # the whole text of the cells a table shows cut (its detail shows them whole)
        whole = getattr(table, "full_cells", {})
        for row_key in table.rows:
            for cell in [*table.get_row(row_key), *whole.get(row_key.value, [])]:
                if table.id in ("events", "facts", "actions", "stores", "evidence"):
                    words |= {w.lower() for w in re.findall(r"[A-Za-z][A-Za-z0-9_\-]*", str(cell))}
                    words.add(str(cell).lower())  # a question asked in the other language, as data
    return words


async def _all_tabs(app: AdammApp, pilot: Pilot[None], keys: tuple[str, ...]) -> dict[str, str]:
    shots = {}
    for key in keys:
        await pilot.press(key)
        await settle(app, pilot)
        shots[key] = screen_text(app)
    return shots


TREND_QUESTION = {"en": "How has daily footfall trended?", "zh": "每天客流的趋势怎样？"}
COMPARE_QUESTION = {"en": "Was the average order value higher on rainy days than on sunny days?",
                    "zh": RAIN_QUESTION}  # fmt: skip


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_every_tab_keeps_to_one_language(store: Store, sim_now: datetime, lang: str) -> None:
    """Every tab of the store's app, with answers shown (a trend, a comparison), at 100x30: in
    Chinese no English words beyond ids, commands and units; in English no Chinese."""

    async def go() -> dict[str, str]:
        app = AdammApp(_backend(store, sim_now), lang)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(app, pilot)
            shots: dict[str, str] = {}
            for name, question in (("trend", TREND_QUESTION), ("compare", COMPARE_QUESTION)):
                await _ask(app, pilot, question[lang])
                assert app.payload is not None and app.payload["status"] == "ok", app.payload
                shots[name] = screen_text(app)
                shots[name + "-answer"] = _static(app, "#answer")
            # events without the shoppers' words, the type as the manager reads it
            app.query_one("#ev_type", Input).value = "购买" if lang == "zh" else "purchase"
            app.load_events()
            shots |= await _all_tabs(app, pilot, ("f2", "f3", "f4", "f6"))
            await pilot.press("ctrl+c")  # Textual's own "how to quit" hint, in the app's language
            await pilot.pause()
            shots["ctrl+c"] = " ".join(f"{n.title} {n.message}" for n in app._notifications)
            keep = data_words(app)
        return {k: " ".join(foreign_words(v, lang, keep)) for k, v in shots.items()}

    found = asyncio.run(go())
    assert not any(found.values()), found


def test_the_learned_and_actions_tabs_say_how_rows_appear(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "s.db")

    async def go() -> dict[str, str]:
        app = AdammApp(_backend(store), "zh")
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(app, pilot)
            return await _all_tabs(app, pilot, ("f3", "f4"))

    try:
        shots = asyncio.run(go())
    finally:
        store.close()
    assert "还没有学到的结论" in shots["f3"] and "adamm maintain" in shots["f3"]
    assert "F7" in shots["f4"]


def test_the_question_box_clears_and_keeps_focus_after_an_answer(store: Store, sim_now: datetime) -> None:
    async def steps(app: AdammApp, pilot: Pilot[None]) -> dict[str, Any]:
        await _ask(app, pilot, TREND_QUESTION["en"])
        box = app.query_one("#question", HistoryInput)
        out = {"value": box.value, "focused": app.focused is box, "answer": _static(app, "#answer")}
        await pilot.press("up")
        out["recalled"] = box.value
        return out

    out = _drive(store, steps, now=sim_now)
    assert out["value"] == "" and out["focused"]
    assert out["recalled"] == TREND_QUESTION["en"]
    # what was computed leads the answer
    lines = out["answer"].splitlines()
    assert lines[0].startswith("? ") and lines[1].startswith("Read as: ")


def test_a_partial_last_bucket_is_marked_not_drawn_as_a_fall(store: Store, sim_now: datetime) -> None:
    from edge.presentation import choose_plot

    async def steps(app: AdammApp, pilot: Pilot[None]) -> dict[str, Any]:
        await _ask(app, pilot, TREND_QUESTION["en"])
        table = app.query_one("#result", DataTable)
        app.query_one("#plot").scroll_visible(animate=False)
        await pilot.pause()
        return {"payload": app.payload, "partial": _column(table, "partial"), "screen": screen_text(app)}

    # an hour after the last event: its day is not over
    out = _drive(store, steps, now=sim_now)
    series = out["payload"]["result"]["series"]
    assert series[-1].get("partial") is True and not any(r.get("partial") for r in series[:-1])
    assert out["partial"][-1] == "not over" and set(out["partial"][:-1]) == {""}
    spec = choose_plot(out["payload"], "en")
    assert spec is not None and spec.partial == (len(series) - 1,) and spec.partial_label == "not over"
    assert spec.x_label == "bucket" and spec.y_label
    # the legend is said in the plot's title, not drawn over the line
    assert f"{spec.title}   ● not over" in out["screen"], out["screen"]


def test_evidence_rows_are_labelled_by_their_own_group(store: Store, sim_now: datetime) -> None:
    from edge.analysis.operators._words import keys_label
    from edge.presentation.tables import group_dimensions

    async def steps(app: AdammApp, pilot: Pilot[None]) -> dict[str, Any]:
        await _ask(app, pilot, COMPARE_QUESTION["zh"])
        table = app.query_one("#evidence", DataTable)
        return {"payload": app.payload, "ids": _column(table, "event_id"), "roles": _column(table, "role")}

    out = _drive(store, steps, now=sim_now, lang="zh")
    payload = out["payload"]
    dims = group_dimensions(payload)
    roles = {e["event_id"]: e["role"] for e in payload["evidence"]}
    assert len({r for r in roles.values()}) >= 2  # rows of both groups
    for event_id, shown in zip(out["ids"], out["roles"], strict=True):
        group = roles[event_id].partition(":")[2]
        assert shown == f"分组：{keys_label(dims, group, 'zh')}", (event_id, roles[event_id], shown)


def test_every_tab_is_reachable_by_keys_at_100x30_and_nothing_is_cut_unsaid(store: Store) -> None:
    async def steps(app: AdammApp, pilot: Pilot[None]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, pane, widget in (("f2", "events_tab", "events"), ("f3", "learned", "facts"),
                                  ("f4", "actions_tab", "actions"), ("f6", "status", None),
                                  ("f1", "ask", "question")):  # fmt: skip
            await pilot.press(key)
            await settle(app, pilot)
            focused = app.focused.id if app.focused is not None else None
            out[key] = (app.query_one("#tabs", TabbedContent).active, focused, widget)
            out[f"{key}-footer"] = screen_text(app).rstrip().splitlines()[-1]
            out[f"{key}-pane"] = pane
        table = app.query_one("#events", DataTable)
        out["texts"] = _column(table, "text")
        return out

    out = _drive(store, steps)
    for key in ("f1", "f2", "f3", "f4", "f6"):
        active, focused, widget = out[key]
        assert active == out[f"{key}-pane"]
        assert widget is None or focused == widget, (key, focused)
        # the footer's keys fit: its last one (quit... send as action) is shown whole
        assert "Send as action" in out[f"{key}-footer"], out[f"{key}-footer"]
    from edge.presentation.text import display_width
    from edge.tui.app import TEXT_WIDTH

    assert all(display_width(t) <= TEXT_WIDTH for t in out["texts"])


def test_a_cut_cell_says_so_and_cuts_between_words() -> None:
    from edge.presentation.fit import clip
    from edge.presentation.text import display_width

    assert clip("short", 20) == "short"
    cut = clip("Hello, the mineral water is on the second shelf of aisle B", 30)
    assert cut == "Hello, the mineral water is…" and display_width(cut) <= 30
    zh = clip("您要的薯片在B区货架最里面，靠近冷柜的那一排", 20)
    assert zh.endswith("…") and display_width(zh) <= 20


def test_events_are_listed_newest_first(store: Store, sim_events: list[dict[str, Any]]) -> None:
    async def steps(app: AdammApp, pilot: Pilot[None]) -> list[str]:
        await pilot.press("f2")
        return _column(app.query_one("#events", DataTable), "event_id")

    ids = _drive(store, steps)
    when = {e["event_id"]: datetime.fromisoformat(e["timestamp"]) for e in sim_events}
    shown = [when[i] for i in ids]
    assert len(ids) == 200 and shown == sorted(shown, reverse=True)
    assert shown[-1] >= sorted(when.values())[-200]  # the latest 200, not a sample over the months


def test_missing_data_is_said_in_words_not_field_names(store: Store, sim_now: datetime) -> None:
    """What a refused comparison or an unknown value needs, in Chinese, names the dimension and
    its values in words (天气「冰雹」), never ``weather=hail``."""
    from edge.analysis import honesty
    from edge.analysis.engine import run_plan
    from edge.analysis.source import EventFilter
    from edge.config import AnalysisConfig

    src = store.event_source()
    unknown = honesty.unknown_values(src, EventFilter(attributes=(("weather", ("hail",)),)), "zh")
    plan = {"intent": "compare", "target_metric": "avg_order_value",
            "compare": {"dimension": "weather", "groups": ["rain", "hail"]}}  # fmt: skip
    p = run_plan(plan, src, question="q", now=sim_now, config=AnalysisConfig(), language="zh")
    assert p["status"] == "insufficient_data" and p["missing"], p
    for line in [*unknown, *p["missing"]]:
        assert not foreign_words(line, "zh", {"hail", "rain", "sunny", "cloudy"}), line
    assert unknown and unknown[0].startswith("天气「hail」的事件")


def test_an_answer_keeps_to_the_app_language_whatever_the_question(store: Store, sim_now: datetime) -> None:
    """A Chinese question in the English app is answered in English (and the reverse): the
    screen keeps to one language; only the question's echo is in the words typed."""

    async def steps(app: AdammApp, pilot: Pilot[None]) -> tuple[Any, str]:
        await _ask(app, pilot, RAIN_QUESTION)
        return app.payload, _static(app, "#answer")

    payload, text = _drive(store, steps, now=sim_now)
    assert payload["status"] == "ok" and payload["question"] == RAIN_QUESTION
    assert not re.search(r"[\u4e00-\u9fff]", payload["interpretation"]["text"])
    body = "\n".join(text.splitlines()[1:])  # the first line echoes the question
    assert not re.search(r"[\u4e00-\u9fff]", body), body
    assert not re.search(r"[\u4e00-\u9fff]", payload["summary"] + json.dumps(payload["action"]))


@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")
def test_adamm_tui_in_a_real_terminal_at_100x30(tmp_path: Path) -> None:
    """``adamm tui`` in a real terminal (tmux, 100x30, Chinese): the tab keys in the titles, the
    footer's keys whole, an empty Learned tab saying how facts appear, F-keys and Ctrl+Q work."""
    import sys

    from actions_helpers import Tmux, make_memory

    db = make_memory(tmp_path / "m.db")
    with Tmux([sys.executable, "-m", "edge", "tui", "--db", str(db), "--lang", "zh"]) as term:
        first = term.wait_for("f7 发送为动作")  # the footer, drawn last, whole
        assert "F1 提问" in first and "F6 状态" in first and "^q 退出" in first, first
        term.keys("F3")
        learned = term.wait_for("还没有学到的结论")
        assert "adamm maintain" in learned
        assert not foreign_words(learned, "zh"), learned
        term.keys("C-q")
        assert term.gone("F1 提问")  # it quit


@pytest.fixture(scope="module")
def done_actions(store: Store, sim_now: datetime) -> dict[str, str]:
    """Three done actions, as staff would acknowledge them: one with a target whose windows have
    passed (measured by maintenance's step), one acknowledged three days ago (waiting), one with
    no metric to change."""
    from zoneinfo import ZoneInfo

    from edge.services.action_effects import measure_all
    from edge.services.actions import queue_action

    tz = ZoneInfo(SIM.timezone)
    day20 = datetime(SIM.start.year, SIM.start.month, SIM.start.day, 8, tzinfo=tz) + timedelta(days=20)
    out: dict[str, str] = {}
    for name, params, at in (
        ("measured", {"title": "second checkout", "target_metric": "queue_length", "scope": {"hours": [18, 19, 20]}}, day20),
        ("waiting", {"title": "tasting stand", "target_metric": "avg_order_value"}, sim_now - timedelta(days=3)),
        ("no_target", {"title": "tidy the shelves"}, day20),
    ):  # fmt: skip
        aid = queue_action(store, store_id=SIM.store_id, type="work_order", role="shift_lead", params=params,
                           summary=str(params["title"]), confidence=1.0, now=at - timedelta(hours=1))  # fmt: skip
        assert action_rows.ack_action(store, aid, "done", "dev-1", at=at)
        out[name] = aid
    assert measure_all(store, AdammConfig(), sim_now)["measured"] == 1
    return out


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_actions_tab_says_each_done_actions_effect_or_the_days_it_needs(
    store: Store, sim_now: datetime, done_actions: dict[str, str], lang: str
) -> None:
    from edge.presentation.effects import effect_cell, effect_text
    from edge.services.action_effects import action_effects

    ids = done_actions
    effects = action_effects(store, AdammConfig(), sim_now)

    async def steps(app: AdammApp, pilot: Pilot[None]) -> dict[str, tuple[str, str]]:
        await pilot.press("f4")
        table = app.query_one("#actions", DataTable)
        shown: dict[str, tuple[str, str]] = {}
        for name, aid in ids.items():
            table.move_cursor(row=table.get_row_index(aid))
            await pilot.pause()
            shown[name] = (whole_cell(table, aid, "action.effect"), _static(app, "#act_effect"))
        return shown

    shown = _drive(store, steps, now=sim_now, lang=lang)
    measured = effects[ids["measured"]]
    assert measured["state"] == "measured" and measured["n"] > 0
    colon = "：" if lang == "zh" else ": "
    label = "效果" if lang == "zh" else "Effect"
    for name, aid in ids.items():  # the cell and the line are the shared presentation's words
        assert shown[name] == (
            effect_cell(effects[aid], lang),
            f"{label}{colon}{effect_text(effects[aid], lang)}",
        )
    cell, line = shown["measured"]
    assert cell == f"{measured['effect'] * 100:+.1f}%" and f"n={measured['n']}" in line
    if lang == "en":
        assert "95% CI [" in line and "14 days after" in line and "weather-stratified" in line
        assert shown["waiting"][0] == "11 more days" and "11 more days" in shown["waiting"][1]
        assert shown["no_target"][1].startswith("Effect: no measurable target")
    else:
        assert "95% 区间 [" in line and "完成后 14 天" in line and "按天气分层" in line
        assert shown["waiting"][0] == "还需 11 天" and "还需 11 天" in shown["waiting"][1]
        assert shown["no_target"][1].startswith("效果：无可测量的目标")
        assert not re.search(r"[A-Za-z]{4,}", line.replace("CI", "")), line  # one language per screen
