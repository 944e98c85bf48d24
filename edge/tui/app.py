"""The store manager's terminal app: Ask, Events, Learned, Actions and Status tabs.

Started by :mod:`edge.cli.cmd_tui`. The app talks only to a
:class:`edge.services.console.ConsoleBackend` (answers from the ask use case, events, facts,
actions, status), never to a database. Every backend call runs in a ``@work(thread=True)`` worker
with a visible loading indicator; results come back as messages; errors become notifications.
The Actions tab says each done action's measured effect (or the days it still needs, or that it
has no measurable target) in :mod:`edge.presentation.effects`' words. Asking writes nothing; F7 sends the shown answer's action to a role (asked for, prefilled with the
action's own): it is queued in the store's action outbox, which the sync worker publishes. Formatting of
payloads and plot choice come from :mod:`edge.presentation`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Footer, Header, Input, LoadingIndicator, Static, TabbedContent, TabPane

from edge.analysis.source import EventFilter, EventRow, Scalar
from edge.errors import UsageError
from edge.presentation import choose_plot, daemon_warning, event_detail_text, payload_text, result_table, t
from edge.presentation.effects import effect_cell, effect_text
from edge.presentation.format import event_type_label, fmt_value, tier_label, zoned_time
from edge.presentation.labels import LABELS, ui_lang
from edge.presentation.tables import evidence_role
from edge.presentation.text import action_value
from edge.services.action_rules import default_role
from edge.services.console import ConsoleBackend, ConsoleStatus
from edge.tui.widgets import (
    ActionsTable,
    FactsTable,
    HistoryInput,
    ResultPlot,
    RoleScreen,
    SortableTable,
)

logger = logging.getLogger(__name__)

#: How many events the Events tab lists / the search returns.
EVENT_LIMIT = 200
SEARCH_K = 50
#: terminal columns of an event's text in the Events table (the detail below shows it whole)
TEXT_WIDTH = 40

#: the tab-switching keys, shown in the tab titles (the footer keeps to the keys that act)
TAB_KEYS = {
    "ask": "F1",
    "events_tab": "F2",
    "stores_tab": "F2",  # the HQ console's Stores tab takes the Events key
    "learned": "F3",
    "actions_tab": "F4",
    "status": "F6",
}


def tab_title(pane: str, label: str) -> str:
    """A tab's title with the key that shows it: ``F1 提问``."""
    key = TAB_KEYS.get(pane)
    return f"{key} {label}" if key else label


def component_line(row: dict[str, Any], lang: str) -> str:
    """A component of the Status tab in words: its name (an id), kind and state in ``lang``."""
    kind, state = str(row.get("kind") or ""), str(row.get("state") or "")
    kind_text = t(f"comp.kind.{kind}", lang) if f"comp.kind.{kind}" in LABELS else kind
    state_text = t(f"comp.state.{state}", lang) if f"comp.state.{state}" in LABELS else state
    return f"{row['name']}  {kind_text}  {state_text}  {row.get('provider') or ''}".rstrip()


class Answered(Message):
    """A worker finished answering a question."""

    def __init__(self, payload: dict[str, Any]) -> None:
        super().__init__()
        self.payload = payload


class EventsLoaded(Message):
    """A worker listed or searched events."""

    def __init__(self, rows: list[EventRow], total: int | None) -> None:
        super().__init__()
        self.rows = rows
        self.total = total


class DetailLoaded(Message):
    """A worker fetched one event's details for the Static with id ``target``."""

    def __init__(self, target: str, text: str) -> None:
        super().__init__()
        self.target = target
        self.text = text


class TableLoaded(Message):
    """A worker read the rows of the Learned or Actions table."""

    def __init__(self, target: str, rows: list[dict[str, Any]]) -> None:
        super().__init__()
        self.target = target
        self.rows = rows


class Failed(Message):
    """A worker failed; the message is shown as an error notification."""

    def __init__(self, msg: str) -> None:
        super().__init__()
        self.msg = msg


def _parse_day(text: str, tz: ZoneInfo, what: str, lang: str = "en") -> datetime | None:
    if not text.strip():
        return None
    try:
        day = date.fromisoformat(text.strip())
    except ValueError as exc:
        raise UsageError(t("bad_day", lang, what=t(f"what.{what}", lang), text=text)) from exc
    return datetime(day.year, day.month, day.day, tzinfo=tz).astimezone(UTC)


def build_filter(types: str, since: str, until: str, where: str, tz: str, lang: str = "en") -> EventFilter:
    """An EventFilter from the Events tab's inputs (``until`` is inclusive, days are store-local);
    a bad input is a UsageError in ``lang``."""
    zone = ZoneInfo(tz)
    from edge.analysis.operators._words import VALUES

    # a type by its id or by the name the app shows it by (购买 -> purchase)
    by_name = {name: key for key, name in VALUES["event_type"]["zh"].items()}
    event_types = tuple(
        by_name.get(s.strip(), s.strip())
        for s in types.replace("，", ",").replace("、", ",").split(",")
        if s.strip()
    )
    start = _parse_day(since, zone, "since", lang)
    end = _parse_day(until, zone, "until", lang)
    attrs: list[tuple[str, tuple[Scalar, ...]]] = []
    for part in where.replace("，", ",").split(","):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise UsageError(t("bad_where", lang, text=part))
        attrs.append((key.strip(), (value.strip(),)))
    return EventFilter(
        event_types=event_types,
        since=start,
        until=end + timedelta(days=1) if end else None,
        attributes=tuple(attrs),
    )


def action_title(row: dict[str, Any]) -> str:
    """An action's title (its params' ``title``; else its rule), as the Actions tab lists it."""
    try:
        params = json.loads(row.get("params_json") or "{}")
    except ValueError:
        params = {}
    if isinstance(params, dict):
        for key in ("title", "rule"):
            if params.get(key):
                return str(params[key])
    return ""


class AdammApp(App[None]):
    """Ask questions of the store's memory, browse events, facts, actions and what is running."""

    #: the command palette's commands are Textual's own English: one language per screen
    ENABLE_COMMAND_PALETTE = False

    CSS = """
    LoadingIndicator { height: 1; }
    #answer, .detail { height: auto; padding: 0 1; }
    #warning { height: auto; background: $error; color: $text; text-style: bold; padding: 0 1; }
    #result, #evidence { height: auto; max-height: 12; }
    #result { width: auto; max-width: 60%; margin-right: 2; }
    #evidence { width: 1fr; }
    #plot { height: 12; }
    .filters Input { width: 1fr; }
    .filters { height: auto; }
    #events, #facts, #actions { height: 1fr; min-height: 6; }
    #ev_detail, #act_help, #act_effect, #facts_detail, #actions_detail, #stores_detail { height: auto; max-height: 8; }
    .empty { height: auto; padding: 1 1; color: $text-muted; }
    """

    def __init__(self, backend: ConsoleBackend, lang: str | None = None, out_dir: Path | None = None) -> None:
        super().__init__()
        self.backend = backend
        self.tz = backend.timezone()
        #: one language for every label, header, tab, status line and answer view
        self.lang = ui_lang(lang, self.tz)
        self.out_dir = out_dir or Path.cwd()
        self.payload: dict[str, Any] | None = None
        #: each done action's effect (measured, days still needed, no target), by action id
        self.effects: dict[str, dict[str, Any]] = {}
        #: the Learned tab also lists facts that no longer hold (``c`` toggles)
        self.show_closed = False
        self.title = "adamm"
        self.sub_title = "门店记忆" if self.lang == "zh" else "store memory"
        # the tab keys are said in the tab titles; the footer keeps to what acts, so it fits 100 columns
        for key, action, label, show in (
            ("f1", "tab('ask')", "bind.ask", False),
            ("f2", "tab('events')", "bind.events", False),
            ("f3", "tab('learned')", "bind.learned", False),
            ("f4", "tab('actions')", "bind.actions", False),
            ("f6", "tab('status')", "bind.status", False),
            ("f5", "refresh", "bind.refresh", True),
            ("ctrl+s", "save", "bind.save", True),
            ("f7", "propose", "bind.propose", True),
        ):
            self.bind(key, action, description=t(label, self.lang), show=show)
        self._bindings.key_to_bindings["ctrl+q"] = [
            Binding("ctrl+q", "quit", t("bind.quit", self.lang), show=True, priority=True)
        ]

    def action_help_quit(self) -> None:
        """Ctrl+C does not quit (Textual's own hint, in the app's language)."""
        self.notify(t("quit.hint", self.lang, keys="Ctrl+Q"), title=t("quit.title", self.lang))

    # -- layout ----------------------------------------------------------------------------------

    def answer_view(self) -> ComposeResult:
        """The Ask tab: question, answer, result and evidence tables, plot (the HQ console's too)."""
        lang = self.lang
        with TabPane(tab_title("ask", t("tab.ask", lang)), id="ask"), VerticalScroll():
            yield HistoryInput(placeholder=t("ask.placeholder", lang), id="question")
            yield LoadingIndicator(id="loading")
            yield Static("", id="warning")
            yield Static(t("ask.empty", lang), id="answer")
            with Horizontal(classes="filters"):
                yield SortableTable(lang=lang, id="result", detail="evidence_detail", share=0.6)
                yield SortableTable(lang=lang, id="evidence", detail="evidence_detail")
            yield ResultPlot(id="plot")
            yield Static("", id="evidence_detail", classes="detail")

    def compose(self) -> ComposeResult:
        lang = self.lang
        yield Header()
        with TabbedContent(id="tabs"):
            yield from self.answer_view()
            with TabPane(tab_title("events_tab", t("tab.events", lang)), id="events_tab"):
                with Horizontal(classes="filters"):
                    yield Input(placeholder=t("events.type", lang), id="ev_type")
                    yield Input(placeholder=t("events.since", lang), id="ev_since")
                    yield Input(placeholder=t("events.until", lang), id="ev_until")
                    yield Input(placeholder=t("events.where", lang), id="ev_where")
                yield Input(placeholder=t("events.search", lang), id="ev_search")
                yield LoadingIndicator(id="ev_loading")
                yield Static("", id="ev_total")
                yield SortableTable(lang=lang, id="events", detail="ev_detail")
                yield Static("", id="ev_detail", classes="detail")
            with TabPane(tab_title("learned", t("tab.learned", lang)), id="learned"):
                yield FactsTable(lang=lang, id="facts", detail="facts_detail")
                yield Static("", id="facts_detail", classes="detail")
                yield Static(t("facts.empty", lang), id="facts_empty", classes="empty")
            with TabPane(tab_title("actions_tab", t("tab.actions", lang)), id="actions_tab"):
                yield Static(
                    f"a: {t('bind.accept', lang)}   d: {t('bind.done', lang)}   x: {t('bind.reject', lang)}",
                    id="act_help",
                )
                yield ActionsTable(lang=lang, id="actions", detail="actions_detail")
                yield Static("", id="act_effect", classes="detail")
                yield Static("", id="actions_detail", classes="detail")
                yield Static(t("actions.empty", lang), id="actions_empty", classes="empty")
            with TabPane(tab_title("status", t("tab.status", lang)), id="status"), VerticalScroll():
                yield Static("", id="status_text", classes="detail")
        yield Footer()

    def on_mount(self) -> None:
        for wid in ("#loading", "#ev_loading", "#warning", "#plot", "#result", "#evidence"):
            self.query_one(wid).display = False
        lang = self.lang
        # timestamp: store-local, zone said; an event's text is cut short (the detail shows it whole)
        self.query_one("#events", SortableTable).set_columns(
            [(k, t(k, lang)) for k in ("event_id", "timestamp", "event_type", "score", "text")],
            keep=("event_id", "timestamp", "score"),
            caps={"text": TEXT_WIDTH},
        )
        self.query_one("#facts", SortableTable).set_columns(
            [
                (k, t(k, lang))
                for k in ("fact.state", "fact.valid", "fact.evidence", "confidence", "fact.statement")
            ],
            keep=("fact.state", "fact.valid", "fact.evidence", "confidence"),
        )
        keys = (
            "action.state",
            "action.type",
            "title",
            "summary",
            "confidence",
            "action.issued",
            "action.by",
            "action.effect",
        )
        self.query_one("#actions", SortableTable).set_columns(
            [(k, t(k, lang)) for k in keys],
            keep=("action.state", "confidence", "action.issued", "action.effect"),
        )
        self.query_one("#question", Input).focus()
        self.action_refresh()
        self.load_events()

    def action_tab(self, tab: str) -> None:
        """Show a tab and focus its main widget (focus left in another tab would pull it back)."""
        pane = {"events": "events_tab", "actions": "actions_tab"}.get(tab, tab)
        self.screen.set_focus(None)
        self.query_one("#tabs", TabbedContent).active = pane
        target = {"ask": "#question", "events_tab": "#events", "learned": "#facts", "actions_tab": "#actions"}
        if pane in target:
            self.query_one(target[pane]).focus()

    def on_failed(self, message: Failed) -> None:
        for wid in ("#loading", "#ev_loading"):
            self.query_one(wid).display = False
        self.notify(t("error", self.lang, msg=message.msg), severity="error")

    def _guard(self, what: str, fn: Callable[[], None]) -> None:
        """Run a worker body; any error becomes a Failed message (a notification)."""
        try:
            fn()
        except Exception as exc:  # shown to the user, never a crash
            logger.exception("%s failed", what)
            self.post_message(Failed(str(exc)))

    # -- ask -------------------------------------------------------------------------------------

    def on_input_submitted(self, event: Input.Submitted) -> None:
        value = event.value.strip()
        if event.input.id == "question":
            if value:
                self.query_one("#question", HistoryInput).remember(value)
                self.query_one("#loading").display = True
                self.ask(value)
        elif event.input.id and event.input.id.startswith("ev_"):
            self.load_events()

    @work(thread=True, exclusive=True, group="ask")
    def ask(self, question: str) -> None:
        def body() -> None:
            # answered in the app's language, whatever the question's: one language per screen
            self.post_message(Answered(self.backend.ask(question, self.lang)))

        self._guard("answer", body)

    def on_answered(self, message: Answered) -> None:
        payload = self.payload = message.payload
        lang = self.lang
        self.query_one("#loading").display = False
        # the next question starts on a clear box (up recalls this one); focus stays here unless
        # the manager went to another tab while it was computed
        box = self.query_one("#question", HistoryInput)
        box.value = ""
        if self.query_one("#tabs", TabbedContent).active == "ask":
            box.focus()
        warning = self.query_one("#warning", Static)
        # a non-ok answer explains itself in its status line; the warning is for weak ok answers
        warning.display = payload.get("status") == "ok" and bool(payload.get("low_confidence"))
        warning.update(t("low_confidence", lang))
        self.query_one("#answer", Static).update(payload_text(payload, lang, compact=True))
        self.query_one("#evidence_detail", Static).update("")
        table = self.query_one("#result", SortableTable)
        headers, rows = result_table(payload, lang)
        table.display = bool(headers)
        table.set_columns([(h, t(h, lang)) for h in headers], keep=headers)
        table.set_rows((None, row) for row in rows)
        ev_table = self.query_one("#evidence", SortableTable)
        evidence = [e for e in payload.get("evidence") or [] if isinstance(e, dict)]
        ev_table.display = bool(evidence)
        ev_table.set_columns(
            [("event_id", t("evidence", lang)), ("role", t("role", lang)), ("weight", t("weight", lang))],
            keep=("weight",),
        )
        ev_table.set_rows(
            (
                str(e.get("event_id")),
                [
                    str(e.get("event_id")),
                    evidence_role(payload, e.get("role", ""), lang),
                    fmt_value(e.get("weight"), "weight", lang),
                ],
            )
            for e in evidence
        )
        plot = self.query_one("#plot", ResultPlot)
        spec = choose_plot(payload, lang)
        plot.display = spec is not None
        if spec is not None:
            plot.show_spec(spec)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        table_id = event.data_table.id
        key = event.row_key.value
        if key is None:
            return
        if table_id == "evidence":
            self.load_detail(str(key), "evidence_detail")
        elif table_id == "events":
            self.load_detail(str(key), "ev_detail")

    @work(thread=True, group="detail")
    def load_detail(self, event_id: str, target: str) -> None:
        def body() -> None:
            ev = self.backend.get_event(event_id)
            self.post_message(DetailLoaded(target, event_detail_text(ev, self.lang, event_id, self.tz)))

        self._guard("event details", body)

    def on_detail_loaded(self, message: DetailLoaded) -> None:
        self.query_one(f"#{message.target}", Static).update(message.text)

    # -- events ----------------------------------------------------------------------------------

    def load_events(self) -> None:
        """Read the Events tab's inputs and list (or search) events in a worker."""
        values = {
            wid: self.query_one(f"#{wid}", Input).value
            for wid in ("ev_type", "ev_since", "ev_until", "ev_where")
        }
        search = self.query_one("#ev_search", Input).value.strip()
        self.query_one("#ev_loading").display = True
        self._events_worker(values, search)

    @work(thread=True, exclusive=True, group="events")
    def _events_worker(self, values: dict[str, str], search: str) -> None:
        def body() -> None:
            flt = build_filter(
                values["ev_type"],
                values["ev_since"],
                values["ev_until"],
                values["ev_where"],
                self.tz,
                self.lang,
            )
            if search:
                self.post_message(EventsLoaded(self.backend.search_events(search, flt, SEARCH_K), None))
            else:
                rows, total = self.backend.list_events(flt, EVENT_LIMIT)
                self.post_message(EventsLoaded(rows, total))

        self._guard("events", body)

    def on_events_loaded(self, message: EventsLoaded) -> None:
        self.query_one("#ev_loading").display = False
        table = self.query_one("#events", SortableTable)
        table.set_rows(
            (
                r.event_id,
                [
                    r.event_id,
                    zoned_time(r.timestamp, self.tz),
                    event_type_label(r.event_type, self.lang),
                    fmt_value(r.score, "score"),
                    r.text or "",
                ],
            )
            for r in message.rows
        )
        total = message.total if message.total is not None else len(message.rows)
        self.query_one("#ev_total", Static).update(
            t("events.total", self.lang, total=total, shown=len(message.rows))
        )

    # -- learned and actions ---------------------------------------------------------------------

    @work(thread=True, group="tables")
    def load_tables(self) -> None:
        def body() -> None:
            facts = self.backend.list_facts(include_closed=self.show_closed)
            actions = self.backend.list_actions()
            self.post_message(TableLoaded("facts", facts))
            self.post_message(TableLoaded("actions", actions))

        self._guard("tables", body)

    def main_table(self, target: str) -> SortableTable | None:
        """The table ``target`` of the main screen (under any dialog), or None once the app is
        closing: a load that finishes after its widgets are gone is dropped."""
        found = self.screen_stack[0].query(f"#{target}") if self.screen_stack else None
        return found.first(SortableTable) if found else None

    def show_empty(self, target: str, empty: bool) -> None:
        """The Learned or Actions tab says how its rows appear when it has none."""
        for wid in (f"#{target}_empty",):
            for w in self.query(wid):
                w.display = empty

    def effect_line(self, action_id: str | None) -> str:
        """The Actions tab's line under the table: the highlighted action's effect in words."""
        eff = self.effects.get(action_id or "")
        colon = "：" if self.lang == "zh" else ": "
        return f"{t('action.effect_of', self.lang)}{colon}{effect_text(eff, self.lang)}" if eff else ""

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "actions":
            key = event.row_key.value if event.row_key is not None else None
            for w in self.query("#act_effect").results(Static):
                w.update(self.effect_line(key))

    def on_table_loaded(self, message: TableLoaded) -> None:
        if (table := self.main_table(message.target)) is None:
            return
        lang = self.lang
        if message.target == "actions":
            self.effects = {r["action_id"]: r["effect"] for r in message.rows if r.get("effect")}
        self.show_empty(message.target, not message.rows)
        rows: list[tuple[str, list[str]]] = []
        for row in message.rows:
            if message.target == "facts":
                until = row["valid_to"] or t("fact.until_now", lang)
                cells = [
                    t("fact.closed" if row["valid_to"] else "fact.current", lang),
                    f"{row['valid_from']} .. {until}",
                    str(row["evidence_count"]),
                    fmt_value(row["confidence"], "score"),
                    row["statement"].get(lang) or row["statement"].get("en", ""),
                ]
                rows.append((row["fact_id"], cells))
            else:
                cells = [
                    t(f"state.{row['state']}", lang),
                    t(f"action.{row['type']}", lang),
                    action_title(row),
                    row["summary"],
                    fmt_value(row["confidence"], "score"),
                    zoned_time(row["issued_at"], self.tz),
                    row.get("acked_by") or "",
                    effect_cell(row.get("effect"), lang),
                ]
                rows.append((row["action_id"], cells))
        table.set_rows(rows)
        if message.target == "actions":
            self.show_effect_line(table)

    def show_effect_line(self, table: DataTable[Any]) -> None:
        """Say the effect of the action under the Actions table's cursor (after a reload)."""
        key = None
        if table.row_count:
            key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        for w in self.query("#act_effect").results(Static):
            w.update(self.effect_line(key))

    def on_facts_table_toggle_closed(self, message: FactsTable.ToggleClosed) -> None:
        self.show_closed = not self.show_closed
        self.notify(t("facts.closed_shown" if self.show_closed else "facts.closed_hidden", self.lang))
        self.load_tables()

    def on_actions_table_ack_requested(self, message: ActionsTable.AckRequested) -> None:
        self.ack(message.action_id, message.state)

    @work(thread=True, group="ack")
    def ack(self, action_id: str, state: str) -> None:
        def body() -> None:
            if self.backend.ack_action(action_id, state, "tui"):
                self.call_from_thread(
                    self.notify, t("acked", self.lang, id=action_id[:8], state=t(f"state.{state}", self.lang))
                )
            self.call_from_thread(self.load_tables)

        self._guard("acknowledge", body)

    # -- status ----------------------------------------------------------------------------------

    @work(thread=True, group="status")
    def action_refresh(self) -> None:
        def body() -> None:
            self.post_message(DetailLoaded("status_text", self._status_text(self.backend.status())))
            self.call_from_thread(self.load_tables)

        self._guard("status", body)

    def _status_text(self, status: ConsoleStatus) -> str:
        lang = self.lang
        rows, tiers, depth = status.components, status.tiers, status.outbox
        warn = daemon_warning(status.daemon, status.age_s, lang)
        lines = [f"⚠ {warn}"] if warn else []
        lines.append(f"{t('status.components', lang)}:")
        for r in rows:
            detail = json.loads(r.get("detail_json") or "{}")
            dropped = detail.get("dropped", detail.get("dropped_frames"))
            extra = f"  {t('status.dropped', lang)}: {dropped}" if dropped is not None else ""
            if detail.get("last_error"):
                extra += f"  {t('error', lang, msg=detail['last_error'])}"
            lines.append(f"  {component_line(r, lang)}{extra}".rstrip())
        if not rows:
            lines.append(f"  {t('none', lang)}")
        lines.append(f"{t('status.outbox', lang)}: {depth}")
        tier_text = ", ".join(f"{tier_label(k, lang)}={v}" for k, v in sorted(tiers.items())) or t(
            "none", lang
        )
        lines.append(f"{t('status.tiers', lang)}: {tier_text}")
        return "\n".join(lines)

    def action_save(self) -> None:
        if self.payload is None:
            self.notify(t("nothing_to_save", self.lang), severity="warning")
            return
        path = self.out_dir / f"adamm-answer-{datetime.now().strftime('%Y%m%dT%H%M%S')}.json"
        path.write_text(json.dumps(self.payload, ensure_ascii=False, indent=2), encoding="utf-8")
        self.notify(t("saved", self.lang, path=str(path)))

    def action_propose(self) -> None:
        """Send the shown answer's action to a role: asks which (prefilled with the action's own),
        then queues it in the store's action outbox (the sync worker publishes it)."""
        if self.payload is None:
            self.notify(t("nothing_to_save", self.lang), severity="warning")
            return
        if not isinstance(self.payload.get("action"), dict):
            self.notify(t("no_action", self.lang), severity="warning")
            return
        payload = self.payload

        def chosen(role: str | None) -> None:
            if role:
                self.propose(payload, role)

        self.push_screen(RoleScreen(default_role(payload), self.lang), chosen)

    @work(thread=True, group="propose")
    def propose(self, payload: dict[str, Any], role: str | None = None) -> None:
        def body() -> None:
            action_id = self.backend.propose_action(payload, role)
            if action_id is None:
                self.call_from_thread(self.notify, t("no_action", self.lang), severity="warning")
                return
            role_text = action_value(role or default_role(payload), self.lang)
            self.call_from_thread(self.notify, t("proposed", self.lang, id=action_id[:8], role=role_text))
            self.call_from_thread(self.load_tables)

        self._guard("save as action", body)
