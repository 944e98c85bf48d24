"""The HQ analyst's terminal app (``adamm-hub console``): Ask, Stores, Learned and Actions tabs.

:class:`HubConsoleApp` is the store manager's app (:class:`edge.tui.app.AdammApp`) over a
:class:`hub.console.backend.HubBackend`: the Ask tab is the store's answer view unchanged
(numbers, evidence, confidence, plots, Ctrl+S to save the payload), answering cross-store
questions with the hub's engine. The hub's own tabs: Stores (each store's online/offline status
and its last summary, from ``hub_stores``), Learned (every store's facts, ``c`` shows closed
ones; under them the highlighted fact's fleet row, and every fleet row of ``adamm-hub facts``:
holds in k of n stores, reversed, null or too thin, pooled effect with its interval and I^2,
:func:`hub.fleet.fleet_check`) and Actions (the actions the hub issued, across stores, with their
state and who acknowledged, and the stores' own actions known by their synced ``action_effect``
facts; a done action's effect, the days it still needs or no target, in the words of
:mod:`edge.presentation.effects`). F7 sends the shown finding as an action to a store's role (asked for, prefilled
with the store the finding points at and the action's own role): it is queued in the hub's
action outbox, which ``adamm-hub serve`` publishes. Every backend call runs in a
``@work(thread=True)`` worker; F5 refreshes.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime
from pathlib import Path
from typing import Any

from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Header, Input, Static, TabbedContent, TabPane

from edge.config.hub import HubConfig
from edge.presentation import t
from edge.presentation.effects import effect_cell
from edge.presentation.format import fmt_value, zoned_time
from edge.presentation.text import action_value
from edge.sync import messages as m
from edge.tui.app import AdammApp, TableLoaded, action_title, tab_title
from edge.tui.widgets import FactsTable, SortableTable
from hub import actions as hub_actions
from hub.console.backend import HubBackend

logger = logging.getLogger(__name__)

#: the hub console's own labels (the rest are the store console's, edge.presentation)
LABELS: dict[str, dict[str, str]] = {
    "subtitle": {"zh": "总部控制台", "en": "HQ console"},
    "tab.stores": {"zh": "门店", "en": "Stores"},
    "store": {"zh": "门店", "en": "store"},
    "store.zone": {"zh": "时区", "en": "zone"},
    "store.status": {"zh": "连接", "en": "status"},
    "store.since": {"zh": "自", "en": "since"},
    "store.last_summary": {"zh": "最近汇总", "en": "last summary"},
    "store.days": {"zh": "天数", "en": "days"},
    "store.span": {"zh": "日期", "en": "span"},
    "store.facts": {"zh": "结论数", "en": "facts"},
    "store.parked": {"zh": "搁置", "en": "parked"},
    "status.online": {"zh": "在线", "en": "online"},
    "status.offline": {"zh": "离线", "en": "offline"},
    "status.none": {"zh": "未知", "en": "no status"},
    "action.acked": {"zh": "确认于", "en": "acked"},
    "action.store_own": {"zh": "门店自发", "en": "store's own"},
    "fleet.loading": {"zh": "正在每家门店检验各条结论…", "en": "testing each kind of fact in every store..."},
    "fleet.of_fact": {"zh": "此结论在各门店", "en": "This fact across the fleet"},
    "fleet.not_tested": {
        "zh": "不跨门店检验，它说的是该门店自己的日期、时段或动作",
        "en": "not tested across stores: it is about this store's own dates, hours or actions",
    },
    "action.role": {"zh": "角色", "en": "role"},
    "target.prompt": {"zh": "发送到哪个门店的哪个角色？", "en": "Send to which store and role?"},
    "target.bad_store": {"zh": "未知门店", "en": "not a store the hub knows"},
    "target.bad_role": {"zh": "角色只能包含字母、数字和 _ . : -", "en": "a role is letters, digits, _ . : -"},
    "queued": {
        "zh": "动作 {id} 已排队发送给 {store} 的 {role}",
        "en": "action {id} queued for {role} at {store}",
    },
    "none_yet": {"zh": "从未", "en": "never"},
    "stores.empty": {
        "zh": "还没有门店。门店的同步进程（adamm sync）连上代理、adamm-hub serve 收到它的汇总后出现在这里。",
        "en": "No stores yet. A store appears here once its sync (adamm sync) reaches the broker and "
        "adamm-hub serve has received its summaries.",
    },
    "facts.empty": {
        "zh": "还没有门店的结论。门店运行 adamm maintain 得出结论、同步到总部后出现在这里。",
        "en": "No store facts yet. They appear here after a store has run adamm maintain and synced.",
    },
    "actions.empty": {
        "zh": "总部还没有发出动作。在提问页按 F7 把结论发给某个门店的岗位。",
        "en": "HQ has sent no actions yet. Press F7 on an answer in the Ask tab to send it to a store's role.",
    },
}


def ht(key: str, lang: str, **fmt: object) -> str:
    """A hub console label (English as the fallback)."""
    entry = LABELS[key]
    text = entry.get(lang) or entry["en"]
    return text.format(**fmt) if fmt else text


class StoresLoaded(Message):
    """A worker read the stores."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        super().__init__()
        self.rows = rows


class FleetLoaded(Message):
    """A worker tested the stores' facts across the fleet (:meth:`HubBackend.fleet`)."""

    def __init__(self, result: dict[str, Any]) -> None:
        super().__init__()
        self.result = result


class TargetScreen(ModalScreen[tuple[str, str] | None]):
    """Asks which store and role an action goes to: Enter (on the role) sends, Esc cancels."""

    DEFAULT_CSS = """
    TargetScreen { align: center middle; }
    TargetScreen > Vertical { width: 70; height: auto; border: thick $accent; padding: 1 2; background: $surface; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, store: str, role: str, stores: list[str], lang: str = "en") -> None:
        super().__init__()
        self.store, self.role, self.stores, self.lang = store, role, stores, lang

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(ht("target.prompt", self.lang))
            yield Input(value=self.store, placeholder=ht("store", self.lang), id="store_input")
            yield Input(value=self.role, placeholder=ht("action.role", self.lang), id="role_input")
            yield Static("", id="target_error")

    def on_mount(self) -> None:
        self.query_one("#role_input", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        store = self.query_one("#store_input", Input).value.strip()
        role = self.query_one("#role_input", Input).value.strip()
        if store not in self.stores:
            self.query_one("#target_error", Static).update(ht("target.bad_store", self.lang))
            self.query_one("#store_input", Input).focus()
            return
        if not m.valid_topic_level(role):
            self.query_one("#target_error", Static).update(ht("target.bad_role", self.lang))
            self.query_one("#role_input", Input).focus()
            return
        self.dismiss((store, role))

    def action_cancel(self) -> None:
        self.dismiss(None)


class HubConsoleApp(AdammApp):
    """Ask cross-store questions, see the stores, their facts and the hub's actions."""

    CSS = (
        AdammApp.CSS
        + """
    #stores { height: 1fr; min-height: 6; }
    #fact_fleet, #fleet { height: auto; max-height: 8; padding: 0 1; }
    #fleet { border-top: solid $primary; }
    """
    )

    #: seconds between refreshes of the Actions tab while it is shown (a staff device's ack shows
    #: as it happens)
    ACTIONS_REFRESH_S = 2.0

    def __init__(self, backend: HubBackend, lang: str | None = None, out_dir: Path | None = None) -> None:
        super().__init__(backend, lang, out_dir)
        self.hub = backend
        backend.lang = self.lang
        self.store_ids: list[str] = []
        #: each store's zone (its times are shown in it); the hub's own for fleet-wide times
        self.store_zones: dict[str, str] = {}
        #: the fleet check (:meth:`HubBackend.fleet`): its rows by kind, and each store fact's kind
        self.fleet_rows: dict[str, dict[str, Any]] = {}
        self.fact_kinds: dict[str, str] = {}
        self.title = "adamm-hub"
        self.sub_title = ht("subtitle", self.lang)
        keys = self._bindings.key_to_bindings
        for key in ("f2", "f6"):  # the store's Events and Status tabs: the hub has Stores instead
            keys.pop(key, None)
        self.bind("f2", "tab('stores')", description=ht("tab.stores", self.lang), show=False)

    def compose(self) -> ComposeResult:
        lang = self.lang
        yield Header()
        with TabbedContent(id="tabs"):
            # the store console's answer view: the same widgets, filled by AdammApp.on_answered
            yield from self.answer_view()
            with TabPane(tab_title("stores_tab", ht("tab.stores", lang)), id="stores_tab"):
                yield SortableTable(lang=lang, id="stores", detail="stores_detail")
                yield Static("", id="stores_detail", classes="detail")
                yield Static(ht("stores.empty", lang), id="stores_empty", classes="empty")
            with TabPane(tab_title("learned", t("tab.learned", lang)), id="learned"):
                yield FactsTable(lang=lang, id="facts", detail="facts_detail")
                yield Static("", id="facts_detail", classes="detail")
                yield Static(ht("facts.empty", lang), id="facts_empty", classes="empty")
                yield Static("", id="fact_fleet")  # the highlighted store fact's fleet row
                with VerticalScroll(id="fleet"):
                    yield Static(ht("fleet.loading", lang), id="fleet_text")
            with TabPane(tab_title("actions_tab", t("tab.actions", lang)), id="actions_tab"):
                yield SortableTable(lang=lang, id="actions", detail="actions_detail")
                yield Static("", id="act_effect", classes="detail")
                yield Static("", id="actions_detail", classes="detail")
                yield Static(ht("actions.empty", lang), id="actions_empty", classes="empty")
        yield Footer()

    def on_mount(self, event: events.Mount | None = None) -> None:
        if event is not None:  # instead of the store app's (its Events and Status tabs)
            event.prevent_default()
        for wid in ("#loading", "#warning", "#plot", "#result", "#evidence"):
            self.query_one(wid).display = False
        lang = self.lang
        # what a column keeps whole while others are cut (the detail below shows a cut cell whole)
        stores = ("store", "store.status", "store.since", "store.last_summary", "store.days", "store.span",
                  "store.facts", "store.parked", "store.zone")  # fmt: skip
        self.query_one("#stores", SortableTable).set_columns(
            [(k, ht(k, lang)) for k in stores],
            keep=("store", "store.status", "store.since", "store.last_summary", "store.facts"),
        )
        facts = ("fact.state", "fact.valid", "fact.evidence", "confidence", "fact.statement")
        self.query_one("#facts", SortableTable).set_columns(
            [("store", ht("store", lang)), *((k, t(k, lang)) for k in facts)],
            keep=("store", "fact.state", "fact.valid", "confidence"),
        )
        actions = (
            "action.state",
            "action.type",
            "title",
            "summary",
            "confidence",
            "action.issued",
            "action.by",
        )
        self.query_one("#actions", SortableTable).set_columns(
            [("store", ht("store", lang)), ("role", ht("action.role", lang)), *((k, t(k, lang)) for k in actions),
             ("acked", ht("action.acked", lang)), ("action.effect", t("action.effect", lang))],
            keep=("store", "action.state", "action.issued", "action.effect"),
        )  # fmt: skip
        self.query_one("#question", Input).focus()
        self.action_refresh()
        self.set_interval(self.ACTIONS_REFRESH_S, self._refresh_actions)

    def _refresh_actions(self) -> None:
        """While the Actions tab is shown, re-read it: state changes appear as they happen.

        The timer can tick while the app is closing and its widgets are already gone (or while a
        dialog is on top): then there is nothing to refresh.
        """
        tabs = self.screen.query("#tabs")
        if tabs and tabs.first(TabbedContent).active == "actions_tab":
            self.load_tables()

    def action_tab(self, tab: str) -> None:
        pane = {"stores": "stores_tab", "actions": "actions_tab"}.get(tab, tab)
        self.screen.set_focus(None)
        self.query_one("#tabs", TabbedContent).active = pane
        target = {"ask": "#question", "stores_tab": "#stores", "learned": "#facts", "actions_tab": "#actions"}
        if pane in target:
            self.query_one(target[pane]).focus()

    def load_events(self) -> None:
        """The hub holds no events (it has no Events tab)."""

    # -- stores ----------------------------------------------------------------------------------

    @work(thread=True, group="status")
    def action_refresh(self) -> None:
        def body() -> None:
            self.post_message(StoresLoaded(self.hub.stores()))
            self.call_from_thread(self.load_tables)
            self.call_from_thread(self.load_fleet)

        self._guard("stores", body)

    @work(thread=True, exclusive=True, group="fleet")
    def load_fleet(self) -> None:
        """Test the stores' facts in every store (the engine over the hub's rollups: a while)."""

        def body() -> None:
            self.post_message(FleetLoaded(self.hub.fleet()))

        self._guard("fleet", body)

    def on_stores_loaded(self, message: StoresLoaded) -> None:
        lang, tz = self.lang, self.tz
        self.store_ids = [str(s["store_id"]) for s in message.rows]
        self.store_zones = {str(s["store_id"]): str(s.get("tz") or tz) for s in message.rows}
        if (table := self.main_table("stores")) is None:
            return
        self.show_empty("stores", not message.rows)
        rows: list[tuple[str, list[str]]] = []
        for s in message.rows:
            state = s.get("status")
            span = f"{s['first_day']} .. {s['last_day']}" if s.get("days") else ""
            cells = [
                s["store_id"],
                ht(f"status.{state}", lang) if state in ("online", "offline") else ht("status.none", lang),
                zoned_time(s.get("status_at"), s.get("tz") or tz),
                zoned_time(s.get("last_summary_at"), s.get("tz") or tz) or ht("none_yet", lang),
                str(s.get("days") or 0),
                span,
                str((s.get("counts") or {}).get("fact", 0)),
                str(s.get("parked") or 0),
                s.get("tz") or "",
            ]
            rows.append((s["store_id"], cells))
        table.set_rows(rows)

    # -- learned and actions across stores ----------------------------------------------------------

    def on_table_loaded(self, message: TableLoaded) -> None:
        message.prevent_default()  # instead of the store app's (a store column; the hub's actions)
        if (table := self.main_table(message.target)) is None:
            return
        lang = self.lang
        self.show_empty(message.target, not message.rows)
        if message.target == "actions":
            self.effects = {r["action_id"]: r["effect"] for r in message.rows if r.get("effect")}
            if self._same_rows(table, message.rows):
                return  # the periodic refresh keeps the cursor where it is when nothing changed
        rows: list[tuple[str, list[str]]] = []
        for row in message.rows:
            if message.target == "facts":
                until = row.get("valid_to") or t("fact.until_now", lang)
                statement = row.get("statement") or {}
                cells = [
                    row["store_id"],
                    t("fact.closed" if row.get("valid_to") else "fact.current", lang),
                    f"{row.get('valid_from')} .. {until}",
                    str(row.get("evidence_count", "")),
                    fmt_value(row.get("confidence"), "score"),
                    statement.get(lang) or statement.get("en", ""),
                ]
                rows.append((f"{row['store_id']}/{row['fact_id']}", cells))
            elif row.get("origin") == "store":  # a store's own action, known by its measured effect
                cells = [
                    row["store_id"],
                    "",
                    t("state.done", lang),
                    ht("action.store_own", lang),
                    "",
                    (row.get("statement") or {}).get(lang) or row["summary"],
                    fmt_value(row["confidence"], "score"),
                    "",
                    "",
                    str(row.get("done_on") or ""),
                    effect_cell(row.get("effect"), lang),
                ]
                rows.append((row["action_id"], cells))
            else:
                zone = self.store_zones.get(str(row["store_id"]), self.tz)  # the store's clock
                cells = [
                    row["store_id"],
                    action_value(row["role"], lang),
                    t(f"state.{row['state']}", lang),
                    t(f"action.{row['type']}", lang),
                    action_title(row),
                    row["summary"],
                    fmt_value(row["confidence"], "score"),
                    zoned_time(row["issued_at"], zone),
                    row.get("acked_by") or "",
                    zoned_time(row.get("acked_at"), zone),
                    effect_cell(row.get("effect"), lang),
                ]
                rows.append((row["action_id"], cells))
        table.set_rows(rows)
        if message.target == "actions":
            self.show_effect_line(table)
        else:
            self.show_fact_fleet(table)

    def _same_rows(self, table: SortableTable, rows: list[dict[str, Any]]) -> bool:
        """Whether the Actions table already shows exactly these actions in these states."""
        seen = [
            (
                r["action_id"],
                r["state"],
                r.get("acked_by"),
                r.get("acked_at"),
                json.dumps(r.get("effect"), default=str),
            )
            for r in rows
        ]
        same = seen == getattr(table, "_adamm_seen", None)
        table._adamm_seen = seen  # type: ignore[attr-defined]
        return same and table.row_count == len(rows)

    # -- the fleet: how each kind of fact holds in every store ----------------------------------

    def on_fleet_loaded(self, message: FleetLoaded) -> None:
        from hub.fleet import kind_head, tested_line

        lang = self.lang
        result = message.result
        self.fleet_rows = {k["kind"]: k for k in result["fleet"]}
        self.fact_kinds = {
            f"{f['store_id']}/{f['fact_id']}": str(f["fleet_kind"])
            for f in result["facts"]
            if f.get("fleet_kind")
        }
        lines = [tested_line(result, lang)]
        lines += [f"  {kind_head(k, lang)}" for k in result["fleet"]] or ["  " + t("none", lang)]
        self.query_one("#fleet_text", Static).update("\n".join(lines))
        self.show_fact_fleet(self.query_one("#facts", SortableTable))

    def fact_fleet_text(self, key: str | None) -> str:
        """The fleet row of the store fact ``key`` (``store/fact_id``): its sentence and its stores."""
        from hub.fleet import kind_head, store_lines

        if key is None or not self.fleet_rows:
            return ""
        kind = self.fleet_rows.get(self.fact_kinds.get(key, ""))
        colon = "：" if self.lang == "zh" else ": "
        if kind is None:
            return f"{ht('fleet.of_fact', self.lang)}{colon}{ht('fleet.not_tested', self.lang)}"
        lines = [f"{ht('fleet.of_fact', self.lang)}{colon}{kind_head(kind, self.lang)}"]
        return "\n".join(lines + [f"  {line}" for line in store_lines(kind, self.lang)])

    def show_fact_fleet(self, table: DataTable[Any]) -> None:
        key = None
        if table.row_count:
            key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        self.query_one("#fact_fleet", Static).update(self.fact_fleet_text(key))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """(The store app's handler, run as well, says the highlighted action's effect.)"""
        if event.data_table.id == "facts":
            self.query_one("#fact_fleet", Static).update(
                self.fact_fleet_text(event.row_key.value if event.row_key is not None else None)
            )

    # -- send as action --------------------------------------------------------------------------

    def action_propose(self) -> None:
        """Send the shown finding as an action: asks which store and role (prefilled with the
        store the finding points at and the action's own role), then queues it in the hub's
        outbox (``adamm-hub serve`` publishes it)."""
        payload = self.payload
        if payload is None:
            self.notify(t("nothing_to_save", self.lang), severity="warning")
            return
        if hub_actions.answer_is_weak(payload):
            self.notify(t("no_action", self.lang), severity="warning")
            return
        store = hub_actions.finding_store(payload, self.store_ids) or ""

        def chosen(target: tuple[str, str] | None) -> None:
            if target:
                self.send_action(payload, *target)

        self.push_screen(
            TargetScreen(store, hub_actions.default_role(payload), self.store_ids, self.lang), chosen
        )

    @work(thread=True, group="propose")
    def send_action(self, payload: dict[str, Any], store: str, role: str) -> None:
        def body() -> None:
            action_id = self.backend.propose_action(payload, role, store_id=store)
            if action_id is None:
                self.call_from_thread(self.notify, t("no_action", self.lang), severity="warning")
                return
            text = ht("queued", self.lang, id=action_id[:8], store=store, role=action_value(role, self.lang))
            self.call_from_thread(self.notify, text)
            self.call_from_thread(self.load_tables)

        self._guard("send as action", body)


def run_console(
    target: str, config: HubConfig | None = None, lang: str | None = None, *, now: datetime | None = None
) -> int:
    """``adamm-hub console``: open the hub store (exit 3 when it is not one), run the app;
    ``now``: the time relative questions count back from (``--now``), else the clock."""
    HubConsoleApp(HubBackend(target, config, now=now), lang).run()
    return 0
