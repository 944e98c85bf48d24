"""Every tab of the three terminal apps at 100x30, in Chinese and in English (issue 26): reachable
by its key, and no table cell cut without saying so.

The store manager's app (``adamm tui``) over the simulator's store, the HQ console (``adamm-hub
console``) over a hub store filled through the real ingest path, the staff device's app over a
fake device (as tests/test_staff_app.py). Each app runs once per language and visits its tabs by
their keys; the screen is read as a terminal shows it (Textual's own render, as text), and for
every table on it every cell must be on the screen whole, in its row, or end in ``…`` with its
whole text shown in the detail below the table once its row is under the cursor.
"""

from __future__ import annotations

import asyncio
import io
import shutil
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from test_staff_app import SUMMARY_EN, SUMMARY_ZH, FakeDevice, action
from test_tui import COMPARE_QUESTION, SIM, TREND_QUESTION, _ask, _backend, settle, sim_now  # noqa: F401
from textual.pilot import Pilot
from textual.widgets import DataTable, Static, TabbedContent

from edge.memory.semantic import facts as fact_rows
from edge.memory.store import Store
from edge.presentation.text import display_width

LANGS = ("zh", "en")

#: a statement longer than any Learned column at 100 columns
LONG_FACT = {
    "zh": "下雨天的客单价比晴天高三成左右，主要来自热饮和雨具的连带购买，傍晚下班时段最明显，周末不明显",
    "en": "rainy days sell about a third more per bill than sunny days, mostly hot drinks and umbrellas "
    "bought together, most of all in the evening commute and hardly at weekends",
}
#: a staff action's title longer than its column
LONG_TITLE = {
    "zh": "在晚高峰之前加开 3 号收银台，并请第二名收银员到前台帮忙装袋和引导排队的顾客",
    "en": "Open checkout 3 before the evening rush and call a second cashier to the front to bag and guide the queue",
}

ANOMALY_QUESTION = {"en": "Any anomalies in daily footfall?", "zh": "每天客流有异常吗？"}

#: (app, tab): the tab's key, the pane it shows, the widget it focuses
TABS: dict[tuple[str, str], tuple[str, str, str | None]] = {
    ("tui", "ask-trend"): ("f1", "ask", "question"),
    ("tui", "ask-compare"): ("f1", "ask", "question"),
    ("tui", "ask-anomaly"): ("f1", "ask", "question"),
    ("tui", "events"): ("f2", "events_tab", "events"),
    ("tui", "learned"): ("f3", "learned", "facts"),
    ("tui", "actions"): ("f4", "actions_tab", "actions"),
    ("tui", "status"): ("f6", "status", None),
    ("console", "ask"): ("f1", "ask", "question"),
    ("console", "stores"): ("f2", "stores_tab", "stores"),
    ("console", "learned"): ("f3", "learned", "facts"),
    ("console", "actions"): ("f4", "actions_tab", "actions"),
    ("staff", "actions"): ("", "", "actions"),
}


# -- the screen as a terminal shows it --------------------------------------------------------------


def screen_lines(app: Any) -> list[str]:
    """The app's screen as text, one string a terminal row (what ``export_screenshot`` draws)."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True,
                      color_system="truecolor", record=True, legacy_windows=False, safe_box=False)  # fmt: skip
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text(styles=False).splitlines()


def columns(line: str, x0: int, x1: int) -> str:
    """The characters of ``line`` that lie in terminal columns ``x0`` to ``x1`` (CJK take two)."""
    out, x = [], 0
    for ch in line:
        w = display_width(ch)
        if x >= x0 and x + w <= x1:
            out.append(ch)
        x += w
    return "".join(out)


def cut_cells(app: Any, lines: list[str]) -> list[str]:
    """Each cell of a table on the screen that is not shown whole in its row (cut by its column or
    by the screen's edge), and each one the table shortened without ending it in ``…``."""
    problems: list[str] = []
    for table in app.screen.query(DataTable):
        region = table.content_region
        if not table.display or region.area == 0 or table.row_count == 0:
            continue
        seen = app.screen.find_widget(table).visible_region.intersection(region)  # on the screen
        name = table.id
        if table.virtual_size.width > table.scrollable_content_region.width:
            problems.append(
                f"{name}: {table.virtual_size.width} columns wide in {region.width}: scrolls sideways"
            )
        header = table.header_height if table.show_header else 0
        header_line = (
            columns(lines[region.y], region.x, region.right) if header and seen.y == region.y else ""
        )
        pos = 0
        for col in table.ordered_columns:
            label = str(col.label).strip() if header_line else ""
            found = header_line.find(label, pos)
            if label and found < 0:
                problems.append(f"{name}: header {label!r} not whole in {header_line!r}")
            pos = max(pos, found + len(label))
        full = getattr(table, "full_cells", None)
        for i, row in enumerate(table.ordered_rows):
            y = region.y + header + i - int(table.scroll_y)
            if not max(region.y + header, seen.y) <= y < seen.bottom:
                continue  # scrolled out of view (up and down is how a table shows more rows)
            shown = columns(lines[y], region.x, region.right)
            pos = 0
            cells = [str(c) for c in table.get_row(row.key)]
            for k, cell in enumerate(cells):
                text = " ".join(cell.split())
                found = shown.find(text, pos)
                if text and found < 0:
                    problems.append(f"{name} row {i}: {text!r} not whole in {shown!r}")
                    continue
                pos = max(pos, found + len(text))
                whole = full.get(row.key.value, cells)[k] if full is not None else cell
                if " ".join(whole.split()) != text and not text.endswith("…"):
                    problems.append(f"{name} row {i}: {whole!r} shortened to {text!r} without an ellipsis")
    return problems


async def clipped_detail(app: Any, pilot: Pilot[None]) -> list[str]:
    """For each table on the screen with a shortened cell: its row under the cursor (by keys), the
    shortened cells' whole text must be in the detail below the table (wrapped as it may be)."""
    problems: list[str] = []
    for table in list(app.screen.query(DataTable)):
        full = getattr(table, "full_cells", None)
        if not table.display or table.content_region.area == 0 or not full:
            continue
        rows = [r.key for r in table.ordered_rows]
        for index, key in enumerate(rows):
            cut = [w for w, c in zip(full[key.value], table.get_row(key), strict=True) if w != str(c)]
            if not cut:
                continue
            for _ in range(12):  # by keys: Tab moves the focus on to the table
                if app.focused is table:
                    break
                await pilot.press("tab")
            if app.focused is not table:
                problems.append(f"{table.id}: not reached with Tab")
                break
            await pilot.press("ctrl+home", *["down"] * index)
            await pilot.pause()
            detail = app.query_one(f"#{table.detail_id}", Static)
            said = "".join(str(detail.render()).split())
            for whole in cut:
                if "".join(whole.split()) not in said:
                    problems.append(f"{table.id}: {whole!r} not in its detail {said!r}")
            break
    return problems


# -- the apps at work -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, sim_store_file: Path) -> Iterator[Store]:
    """A copy of the session's simulated store with a long fact (maintenance's); each app's run
    adds the rain answer's action."""
    path = tmp_path_factory.mktemp("fit") / "store.db"
    shutil.copy(sim_store_file, path)
    s = Store.open(path, timezone=SIM.timezone)
    facts = [
        fact_rows.FactRecord(fact_id=f"f-{n}", store_id=SIM.store_id, question="weather_order_value",
                             slot=f"rain_vs_sunny_{n}", signature="up", statement=LONG_FACT, metric="avg_order_value",
                             dimension="weather", value=120.0, effect=0.25, n=80, p_value=0.01, confidence=0.8,
                             evidence=[], evidence_count=0, valid_from="2025-10-01", valid_to=None, plan={},
                             evaluated_until="2025-10-01")
        for n in range(2)
    ]  # fmt: skip
    fact_rows.apply_run(s, SIM.store_id, "weather_order_value", facts, "2025-10-01")
    yield s
    s.close()


Shot = dict[str, Any]


async def visit(app: Any, pilot: Pilot[None], app_name: str, tab: str) -> Shot:
    """Show ``tab`` by its key; what is then active, focused, cut, and said in detail."""
    key, pane, _ = TABS[(app_name, tab)]
    if key:
        await pilot.press(key)
        await settle(app, pilot)
    shot: Shot = {"pane": app.query_one("#tabs", TabbedContent).active if key else ""}
    shot["focused"] = app.focused.id if app.focused is not None else None
    lines = screen_lines(app)
    shot["screen"] = "\n".join(lines)
    shot["cut"] = cut_cells(app, lines)
    shot["detail"] = await clipped_detail(app, pilot)
    return shot


async def ask(app: Any, pilot: Pilot[None], question: str) -> None:
    await _ask(app, pilot, question)  # the TUI tests' own way of asking
    assert app.payload is not None and app.payload["status"] == "ok", app.payload


def run_tui(store: Store, now: datetime, lang: str) -> dict[str, Shot]:
    from edge.tui.app import AdammApp

    backend = _backend(store, now)
    payload = backend.ask(COMPARE_QUESTION[lang], lang)
    backend.propose_action(payload)  # an action with its whole summary in the Actions tab

    async def go() -> dict[str, Shot]:
        app = AdammApp(_backend(store, now), lang)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(app, pilot)
            shots = {}
            for tab in ("events", "learned", "actions", "status"):
                shots[tab] = await visit(app, pilot, "tui", tab)
            for name, question in (
                ("ask-trend", TREND_QUESTION),
                ("ask-compare", COMPARE_QUESTION),
                ("ask-anomaly", ANOMALY_QUESTION),  # the widest result beside its evidence
            ):
                await ask(app, pilot, question[lang])
                shots[name] = await visit(app, pilot, "tui", name)
            return shots

    return asyncio.run(go())


def run_console(hub_db: Path, lang: str) -> dict[str, Shot]:
    from test_hub_console import NOW, QUESTION, ZH_QUESTION, _send

    from hub.console.app import HubConsoleApp
    from hub.console.backend import HubBackend

    async def go() -> dict[str, Shot]:
        app = HubConsoleApp(HubBackend(str(hub_db), now=NOW), lang)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(app, pilot)  # type: ignore[arg-type]
            await ask(app, pilot, ZH_QUESTION if lang == "zh" else QUESTION)
            await _send(app, pilot)  # an action in the log
            shots = {"ask": await visit(app, pilot, "console", "ask")}
            for tab in ("stores", "learned", "actions"):
                shots[tab] = await visit(app, pilot, "console", tab)
            return shots

    return asyncio.run(go())


def run_staff(lang: str) -> dict[str, Shot]:
    from edge.staff.app import StaffApp

    summary = SUMMARY_ZH if lang == "zh" else SUMMARY_EN
    # the long one last: its arrival is said on the status line
    device = FakeDevice([action(1, summary, LONG_TITLE[lang][:12]), action(2, summary, LONG_TITLE[lang])])

    async def go() -> dict[str, Shot]:
        app = StaffApp(device, lang=lang)
        async with app.run_test(size=(100, 30)) as pilot:
            table = app.query_one("#actions", DataTable)
            for _ in range(100):
                await pilot.pause(0.05)
                if table.row_count == 2:
                    break
            shot = await visit(app, pilot, "staff", "actions")
            said = str(app.query_one("#said", Static).render())
            if said not in shot["screen"]:  # its one line, whole (the app cuts only with "…")
                shot["cut"].append(f"the status line {said!r} is not whole on the screen")
            return {"actions": shot}

    return asyncio.run(go())


@pytest.fixture(scope="module")
def screens(
    store: Store,
    sim_now: datetime,  # noqa: F811
    filled: Path,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch_module: pytest.MonkeyPatch,
) -> dict[tuple[str, str], dict[str, Shot]]:
    """Each app's tabs in each language, each app run once per language (as the tests ask)."""
    hub_db = tmp_path_factory.mktemp("fit-hub") / "hub.db"
    shutil.copy(filled, hub_db)

    class Lazy(dict[tuple[str, str], dict[str, Shot]]):
        def __missing__(self, key: tuple[str, str]) -> dict[str, Shot]:
            app_name, lang = key
            if app_name == "tui":
                self[key] = run_tui(store, sim_now, lang)
            elif app_name == "console":
                self[key] = run_console(hub_db, lang)
            else:
                self[key] = run_staff(lang)
            return self[key]

    return Lazy()


@pytest.fixture(scope="module")
def monkeypatch_module() -> Iterator[pytest.MonkeyPatch]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TZ", "Asia/Shanghai")  # the staff device stands in a Shanghai store
        yield mp


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize(("app_name", "tab"), list(TABS))
def test_every_tab_is_reachable_by_keys_and_cuts_nothing_unsaid_at_100x30(
    screens: dict[tuple[str, str], dict[str, Shot]], app_name: str, tab: str, lang: str
) -> None:
    shot = screens[(app_name, lang)][tab]
    _, pane, widget = TABS[(app_name, tab)]
    assert shot["pane"] == pane, shot["pane"]
    assert widget is None or shot["focused"] == widget, shot["focused"]
    assert not shot["cut"], "\n".join([*shot["cut"], shot["screen"]])
    assert not shot["detail"], "\n".join([*shot["detail"], shot["screen"]])
