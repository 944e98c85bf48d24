"""``adamm-staff`` on a terminal: a Textual app that lists this role's actions as they arrive.

Started by :func:`edge.staff.cli.run` when a person is at the terminal (no ``--json``, ``--ack``
or ``--plain``). It talks to a :class:`StaffSource` (the device's link and state,
:class:`edge.staff.cli.Device`): a ``@work(thread=True)`` worker waits for actions and posts each
as a message; single keys act at once on the action under the cursor (``a`` accept, ``d`` done,
``r`` reject), in a worker, and the app says what they did. One language on the screen
(``--lang``, else the locale, else the device's zone), times local with the zone said, short
action ids, text wrapped at word boundaries (:mod:`edge.staff.view`).
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Protocol

from rich.text import Text
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Footer, Header, Static

from edge.errors import AdammError
from edge.presentation.fit import clip, fit_table, table_room
from edge.presentation.format import zoned_time
from edge.presentation.labels import ui_lang
from edge.presentation.text import action_value
from edge.staff.view import action_lines, local_zone, short_id, st, state_label, title_of, type_label

logger = logging.getLogger(__name__)

#: the order of acknowledgement states: an action never goes back
RANK = {None: 0, "accepted": 1, "done": 2, "rejected": 2}


class StaffSource(Protocol):
    """What the app needs of the device (:class:`edge.staff.cli.Device`)."""

    store: str
    role: str

    def next_action(self, timeout: float = 0.5) -> dict[str, Any] | None: ...

    def ack(self, action_id: str, ack_state: str) -> str: ...


class Arrived(Message):
    """A new action arrived."""

    def __init__(self, action: dict[str, Any]) -> None:
        super().__init__()
        self.action = action


class Acked(Message):
    """An acknowledgement was published."""

    def __init__(self, action_id: str, state: str) -> None:
        super().__init__()
        self.action_id = action_id
        self.state = state


class Failed(Message):
    """The link failed (refused credentials, a lost broker): shown, then the app ends."""

    def __init__(self, error: BaseException) -> None:
        super().__init__()
        self.error = error


#: the list's columns; a title too long for its column is cut with "…" (the detail shows it whole)
COLUMNS = ("id", "state", "type", "title", "issued", "expires")


class ActionList(DataTable[Any]):
    """The list of actions, fitted to its width (:func:`edge.presentation.fit.fit_table`):
    ``full_cells`` keeps each row's whole text, the detail (``detail_id``) shows the row whole."""

    def __init__(self, labels: list[str], **kwargs: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.labels = labels
        self.full_cells: dict[str, list[str]] = {}
        self.detail_id = "detail_text"
        self._fitted_to = -1

    def put(self, key: str, cells: list[str]) -> None:
        """Add the row ``key`` or change its cells, then fit the list again."""
        self.full_cells[key] = cells
        self.refit()

    def refit(self) -> None:
        room = table_room(self.content_region.width, self.content_region.height, len(self.full_cells),
                          scrollbar=self.styles.scrollbar_size_vertical)  # fmt: skip
        self._fitted_to = room
        keep = [i for i, k in enumerate(COLUMNS) if k != "title"]
        fitted = fit_table(self.labels, list(self.full_cells.values()), room or 10**6, keep=keep)
        cursor = self.cursor_row
        self.clear(columns=True)
        for key, label, width in zip(COLUMNS, fitted.labels, fitted.widths, strict=True):
            self.add_column(label, key=key, width=width if room else None)
        for key, cells in zip(self.full_cells, fitted.rows, strict=True):
            self.add_row(*(Text(c) for c in cells), key=key)  # data, never markup
        if self.row_count:
            self.move_cursor(row=min(cursor, self.row_count - 1))

    def on_resize(self) -> None:
        if self.full_cells and self._fitted_to != table_room(
            self.content_region.width, self.content_region.height, len(self.full_cells),
            scrollbar=self.styles.scrollbar_size_vertical,
        ):  # fmt: skip
            self.refit()


class StaffApp(App[None]):
    """A staff device's actions: the list, the one under the cursor in full, keys that act."""

    ENABLE_COMMAND_PALETTE = False  # its commands are Textual's English
    CSS = """
    #actions { height: 1fr; min-height: 5; }
    #detail { height: auto; max-height: 12; padding: 0 1; border-top: solid $accent; }
    #said { height: 1; padding: 0 1; background: $boost; }
    #waiting { height: auto; padding: 1 1; color: $text-muted; }
    """

    def __init__(self, device: StaffSource, lang: str | None = None, once: bool = False) -> None:
        super().__init__()
        self.device = device
        self.zone = local_zone()
        self.lang = ui_lang(lang, self.zone)
        self.once = once
        self.actions: dict[str, dict[str, Any]] = {}
        self.states: dict[str, str | None] = {}
        #: the link's fatal error, raised again by the CLI after the app ends (exit 3)
        self.failure: BaseException | None = None
        self._stop = threading.Event()
        self.title = "adamm-staff"
        role = action_value(device.role, self.lang)
        self.sub_title = f"{st('title', self.lang)} · {device.store} · {role}"
        lang = self.lang
        for key, action, label in (
            ("a", "ack('accepted')", "bind.accept"),
            ("d", "ack('done')", "bind.done"),
            ("r", "ack('rejected')", "bind.reject"),
            ("q", "quit", "bind.quit"),
        ):
            self._bindings.key_to_bindings[key] = [Binding(key, action, st(label, lang), show=True)]

    def compose(self) -> ComposeResult:
        yield Header()
        role = action_value(self.device.role, self.lang)
        yield Static(st("waiting", self.lang, role=role, store=self.device.store), id="waiting")
        yield ActionList([st(f"col.{key}", self.lang) for key in COLUMNS], id="actions")
        with VerticalScroll(id="detail"):
            yield Static("", id="detail_text")
        yield Static("", id="said")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#actions", ActionList)
        table.display = False
        table.focus()
        self.listen()

    def on_unmount(self) -> None:
        self._stop.set()

    def action_help_quit(self) -> None:
        self.notify(st("bind.quit", self.lang) + ": q")

    # -- receiving -------------------------------------------------------------------------------

    @work(thread=True, group="listen")
    def listen(self) -> None:
        while not self._stop.is_set():
            try:
                action = self.device.next_action(0.2)
            except (AdammError, OSError) as exc:
                self.post_message(Failed(exc))
                return
            if action is not None:
                self.post_message(Arrived(action))

    def on_arrived(self, message: Arrived) -> None:
        a = message.action
        aid = str(a["action_id"])
        self.actions[aid] = a
        self.states[aid] = None
        table = self.query_one("#actions", ActionList)
        self.query_one("#waiting").display = False
        table.display = True
        lang, zone = self.lang, self.zone
        expires = zoned_time(a.get("expires_at"), zone) if a.get("expires_at") else st("never", lang)
        cells = [
            short_id(aid),
            state_label(None, lang),
            type_label(str(a.get("type", "")), lang),
            title_of(a, lang),
            zoned_time(a.get("issued_at"), zone),
            expires,
        ]
        table.put(aid, cells)
        table.move_cursor(row=table.row_count - 1)  # the newest is the one to act on
        self.show_detail(aid)
        self.say(st("arrived", lang, id=short_id(aid), title=title_of(a, lang)))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key.value is not None:
            self.show_detail(str(event.row_key.value))

    def show_detail(self, action_id: str) -> None:
        width = max(30, self.size.width - 4)
        lines = action_lines(self.actions[action_id], self.lang, self.zone, width)
        self.query_one("#detail_text", Static).update(Text("\n".join(lines)))  # "[work order]" is text

    def say(self, text: str) -> None:
        """The status line: what the last key or message did, on its one line (cut with "…"; the
        detail shows the action whole)."""
        said = self.query_one("#said", Static)
        said.update(Text(clip(text, max(10, (said.content_region.width or self.size.width - 2)))))

    def on_failed(self, message: Failed) -> None:
        self.failure = message.error
        self.exit()

    # -- acknowledging -----------------------------------------------------------------------------

    def selected(self) -> str | None:
        table = self.query_one("#actions", DataTable)
        if table.row_count == 0:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return None if key is None else str(key)

    def action_ack(self, state: str) -> None:
        aid = self.selected()
        if aid is None:
            self.say(st("nothing", self.lang))
            return
        current = self.states.get(aid)
        if current is not None and RANK[state] <= RANK[current]:
            self.say(st("already", self.lang, id=short_id(aid), state=state_label(current, self.lang)))
            return
        self.states[aid] = state  # at once: a second key press does not send it twice
        self.send_ack(aid, state)

    @work(thread=True, group="ack")
    def send_ack(self, action_id: str, state: str) -> None:
        try:
            self.device.ack(action_id, state)
        except (AdammError, OSError) as exc:
            self.post_message(Failed(exc))
            return
        self.post_message(Acked(action_id, state))

    def on_acked(self, message: Acked) -> None:
        aid, lang = message.action_id, self.lang
        table = self.query_one("#actions", ActionList)
        table.put(aid, [state_label(message.state, lang) if k == "state" else c
                        for k, c in zip(COLUMNS, table.full_cells[aid], strict=True)])  # fmt: skip
        text = st("did", lang, id=short_id(aid), state=state_label(message.state, lang))
        self.say(text)
        self.notify(text)
        if self.once and message.state != "accepted":
            self.exit()
