"""Reusable widgets of the store manager's app: sortable tables, an input with history, the plot.

Used by :mod:`edge.tui.app`. Textual-specific; the data they show comes from
:mod:`edge.presentation` (pure) and the console backend (:mod:`edge.services.console`).
"""

from __future__ import annotations

import logging
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import DataTable, Input, Static
from textual_plotext import PlotextPlot

from edge.presentation import PlotSpec, t
from edge.services.action_rules import ROLE_PATTERN

logger = logging.getLogger(__name__)


def clip(text: str, width: int) -> str:
    """``text`` cut to ``width`` terminal columns (CJK take two), ending in ``…`` when cut, at a
    word boundary when one is near: a cell never hides that it was shortened."""
    from edge.presentation.text import display_width

    text = " ".join(text.split())
    if display_width(text) <= width:
        return text
    out, used = [], 0
    for ch in text:
        w = display_width(ch)
        if used + w > width - 1:
            break
        out.append(ch)
        used += w
    cut = "".join(out)
    space = cut.rfind(" ")
    if space >= width // 2:
        cut = cut[:space]
    return cut.rstrip() + "…"


def sort_key(value: Any) -> tuple[int, float, str]:
    """Numbers (also formatted as text) sort numerically before text; text sorts as text."""
    text = str(value)
    try:
        return (0, float(text.replace(",", "")), "")
    except ValueError:
        return (1, 0.0, text)


class SortableTable(DataTable[Any]):
    """A DataTable whose columns sort on a header click or on ``s`` (the cursor's column)."""

    BINDINGS = [Binding("s", "sort_cursor", "Sort", show=True)]

    #: (key, action, label key) of the bindings whose footer text follows the app's language
    LOCAL_BINDINGS: tuple[tuple[str, str, str], ...] = (("s", "sort_cursor", "bind.sort"),)

    def __init__(self, lang: str = "en", **kwargs: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self._sorted: tuple[Any, bool] | None = None
        # the class's English descriptions are replaced, not shadowed (the footer shows the first)
        for key, action, label in self.LOCAL_BINDINGS:
            self._bindings.key_to_bindings[key] = [Binding(key, action, t(label, lang), show=True)]

    def sort_by(self, column_key: Any) -> None:
        """Sort by ``column_key``; sorting the same column again reverses the order."""
        reverse = self._sorted is not None and self._sorted[0] == column_key and not self._sorted[1]
        self.sort(column_key, key=sort_key, reverse=reverse)
        self._sorted = (column_key, reverse)

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        self.sort_by(event.column_key)

    def action_sort_cursor(self) -> None:
        if not self.columns:
            return
        keys = list(self.columns)
        self.sort_by(keys[min(self.cursor_column, len(keys) - 1)])


class FactsTable(SortableTable):
    """The Learned table: ``c`` shows or hides the facts that no longer hold."""

    BINDINGS = [Binding("c", "toggle_closed", "Closed facts")]
    LOCAL_BINDINGS = (("s", "sort_cursor", "bind.sort"), ("c", "toggle_closed", "bind.closed_facts"))

    class ToggleClosed(Message):
        """The manager asked to show or hide closed facts."""

    def action_toggle_closed(self) -> None:
        self.post_message(self.ToggleClosed())


class ActionsTable(SortableTable):
    """The Actions table: ``a`` accepts, ``d`` marks done, ``x`` rejects the action under the cursor."""

    BINDINGS = [
        Binding("a", "ack('accepted')", "Accept"),
        Binding("d", "ack('done')", "Done"),
        Binding("x", "ack('rejected')", "Reject"),
    ]
    LOCAL_BINDINGS = (
        ("s", "sort_cursor", "bind.sort"),
        ("a", "ack('accepted')", "bind.accept"),
        ("d", "ack('done')", "bind.done"),
        ("x", "ack('rejected')", "bind.reject"),
    )

    class AckRequested(Message):
        """The manager asked to move action ``action_id`` to ``state``."""

        def __init__(self, action_id: str, state: str) -> None:
            super().__init__()
            self.action_id = action_id
            self.state = state

    def action_ack(self, state: str) -> None:
        if self.row_count == 0:
            return
        row_key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        if row_key is not None:
            self.post_message(self.AckRequested(str(row_key), state))


class HistoryInput(Input):
    """An Input that recalls earlier submissions with up/down."""

    BINDINGS = [
        Binding("up", "history(-1)", "Previous", show=False),
        Binding("down", "history(1)", "Next", show=False),
    ]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.history: list[str] = []
        self._pos = 0

    def remember(self, text: str) -> None:
        """Add ``text`` to the history (no consecutive duplicates) and reset the position."""
        if text and (not self.history or self.history[-1] != text):
            self.history.append(text)
        self._pos = len(self.history)

    def action_history(self, step: int) -> None:
        if not self.history:
            return
        self._pos = max(0, min(len(self.history), self._pos + step))
        self.value = self.history[self._pos] if self._pos < len(self.history) else ""
        self.cursor_position = len(self.value)


class ResultPlot(PlotextPlot):
    """Draws a :class:`edge.presentation.PlotSpec`: a line or bars, anomalies marked in red, a
    bucket not over yet as a point of its own. The legend is said in the title (plotext draws
    its own over the data), the axes are labelled."""

    def show_spec(self, spec: PlotSpec) -> None:
        plt = self.plt
        plt.clear_figure()
        legend = []
        if spec.kind != "bar":
            if spec.y2 is not None and spec.y2_label:
                legend.append(f"┄ {spec.y2_label}")
            if spec.marks and spec.marks_label:
                legend.append(f"x {spec.marks_label}")
            if spec.partial and spec.partial_label:
                legend.append(f"● {spec.partial_label}")
        plt.title("   ".join([spec.title, *legend]))
        if spec.x_label:
            plt.xlabel(spec.x_label)
        if spec.y_label:
            plt.ylabel(spec.y_label)
        idx = list(range(len(spec.x)))
        if spec.kind == "bar":
            plt.bar(list(spec.x), list(spec.y))
        else:
            # a bucket that is not over yet is a point of its own, not the end of the line: a
            # half-counted day drawn as the line's last step would read as a fall
            done = [i for i in idx if i not in spec.partial]
            plt.plot(done, [spec.y[i] for i in done], marker="braille")
            if spec.partial:
                plt.scatter(list(spec.partial), [spec.y[i] for i in spec.partial], marker="●", color="yellow")
            if spec.y2 is not None:
                plt.plot(idx, list(spec.y2), color="gray")
            if spec.marks:
                plt.scatter(list(spec.marks), [spec.y[i] for i in spec.marks], marker="x", color="red")
            step = max(1, len(idx) // 6)
            plt.xticks([float(i) for i in idx[::step]], list(spec.x)[::step])
        self.refresh()


class RoleScreen(ModalScreen[str | None]):
    """Asks which role an action goes to (prefilled with the action's own): Enter sends, Esc cancels."""

    DEFAULT_CSS = """
    RoleScreen { align: center middle; }
    RoleScreen > Vertical { width: 70; height: auto; border: thick $accent; padding: 1 2; background: $surface; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, role: str, lang: str = "en") -> None:
        super().__init__()
        self.role = role
        self.lang = lang

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(t("role.prompt", self.lang))
            yield Input(value=self.role, id="role_input")
            yield Static("", id="role_error")

    def on_mount(self) -> None:
        self.query_one("#role_input", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        role = event.value.strip()
        if not ROLE_PATTERN.match(role):
            self.query_one("#role_error", Static).update(t("role.bad", self.lang))
            return
        self.dismiss(role)

    def action_cancel(self) -> None:
        self.dismiss(None)
