"""Reusable widgets of the store manager's app: sortable tables, an input with history, the plot.

Used by :mod:`edge.tui.app`. Textual-specific; the data they show comes from
:mod:`edge.presentation` (pure) and the console backend (:mod:`edge.services.console`).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import DataTable, Input, Static
from textual.widgets.data_table import RowKey
from textual_plotext import PlotextPlot

from edge.presentation import PlotSpec, t
from edge.presentation.fit import cut_lines, fit_table, table_room
from edge.services.action_rules import ROLE_PATTERN

logger = logging.getLogger(__name__)


def sort_key(value: Any) -> tuple[int, float, str]:
    """Numbers (also formatted as text) sort numerically before text; text sorts as text."""
    text = str(value)
    try:
        return (0, float(text.replace(",", "")), "")
    except ValueError:
        return (1, 0.0, text)


class SortableTable(DataTable[Any]):
    """A DataTable whose columns sort on a header click or on ``s`` (the cursor's column), and that
    fits its width: filled with :meth:`set_columns` and :meth:`set_rows`, its columns are capped
    so it never runs past its edge nor scrolls sideways (:func:`edge.presentation.fit.fit_table`),
    a cut cell ends in ``…``, and the whole text of the cut cells of the row under the cursor is
    shown in the Static ``detail`` (its id), wrapped, when one is given. ``full_cells`` keeps each
    row's whole text by row key."""

    BINDINGS = [Binding("s", "sort_cursor", "Sort", show=True)]

    #: (key, action, label key) of the bindings whose footer text follows the app's language
    LOCAL_BINDINGS: tuple[tuple[str, str, str], ...] = (("s", "sort_cursor", "bind.sort"),)

    def __init__(
        self, lang: str = "en", detail: str | None = None, share: float | None = None, **kwargs: Any
    ) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.lang = lang
        #: the id of the Static that shows the cut cells of the row under the cursor
        self.detail_id = detail
        #: the part of its container's width the table may take (``width: auto`` tables)
        self.share = share
        self._sorted: tuple[Any, bool] | None = None
        self._spec: list[tuple[str, str]] = []
        self._keep: set[str] = set()
        self._caps: dict[str, int] = {}
        self.full_cells: dict[Any, list[str]] = {}
        self._fitted_to = -1
        # the class's English descriptions are replaced, not shadowed (the footer shows the first)
        for key, action, label in self.LOCAL_BINDINGS:
            self._bindings.key_to_bindings[key] = [Binding(key, action, t(label, lang), show=True)]

    # -- fitting ---------------------------------------------------------------------------------

    def set_columns(
        self,
        columns: Sequence[tuple[str, str]],
        keep: Collection[str] = (),
        caps: Mapping[str, int] | None = None,
    ) -> None:
        """The table's columns as ``(key, label)``: those in ``keep`` (short values: times, states,
        numbers) are cut only when nothing else makes room; ``caps`` cut a column's text further."""
        self._spec = list(columns)
        self._keep, self._caps = set(keep), dict(caps or {})
        self.full_cells = {}
        self._rebuild()

    def set_rows(self, rows: Iterable[tuple[str | None, Sequence[str]]]) -> None:
        """The table's rows as ``(key, cells)``, in order (a sort chosen before is kept)."""
        self.full_cells = {}
        for n, (key, cells) in enumerate(rows):
            self.full_cells[key if key is not None else f"#{n}"] = [str(c) for c in cells]
        self._rebuild()

    def available_width(self) -> int:
        """The terminal columns the table's cells may take (0 while it is not laid out)."""
        parent = self.parent
        if self.share is not None and isinstance(parent, Widget):
            room = int(parent.content_region.width * self.share) - self.styles.gutter.width
        else:
            room = self.content_region.width
        return table_room(
            room,
            self.content_region.height,
            len(self.full_cells),
            self.show_header,
            self.styles.scrollbar_size_vertical,
        )

    def _rebuild(self) -> None:
        width = self.available_width()
        self._fitted_to = width
        keys = [k for k, _ in self._spec]
        labels = [label for _, label in self._spec]
        rows = list(self.full_cells.values())
        widths: list[int | None] = [None] * len(keys)
        if width > 0:
            fitted = fit_table(
                labels,
                rows,
                width,
                keep=[i for i, k in enumerate(keys) if k in self._keep],
                caps={i: self._caps[k] for i, k in enumerate(keys) if k in self._caps},
            )
            shown_labels, shown = fitted.labels, fitted.rows
            widths = list(fitted.widths)
        else:  # not laid out yet (a tab not shown): whole, fitted once it has a size
            shown_labels, shown = labels, rows
        cursor = self.cursor_row
        self.clear(columns=True)
        for key, label, w in zip(keys, shown_labels, widths, strict=True):
            self.add_column(label, key=key, width=w)
        for key, cells in zip(self.full_cells, shown, strict=True):
            self.add_row(*(Text(c) for c in cells), key=key)  # data, never markup
        if self._sorted is not None:
            self.sort(self._sorted[0], key=sort_key, reverse=self._sorted[1])
        if self.row_count:
            self.move_cursor(row=min(cursor, self.row_count - 1))
            if self.has_focus:  # the detail is the focused table's (two tables may share one)
                self.show_detail(self.coordinate_to_cell_key(self.cursor_coordinate).row_key)

    def on_focus(self, event: events.Focus) -> None:
        if self.row_count:
            self.show_detail(self.coordinate_to_cell_key(self.cursor_coordinate).row_key)

    def refit(self) -> None:
        """Fit the table again when the room it may take has changed."""
        if self._spec and self.available_width() != self._fitted_to:
            self._rebuild()

    def on_resize(self, event: events.Resize) -> None:
        self.refit()
        # a table that takes a share of its container (``width: auto``) is not resized when the
        # container is: its neighbour is, and says so
        for other in self.parent.children if self.parent is not None else ():
            if isinstance(other, SortableTable) and other.share is not None and other is not self:
                other.refit()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table is self:
            self.show_detail(event.row_key)

    def show_detail(self, row_key: RowKey) -> None:
        """The whole text of the row's cut cells in the detail (nothing when none was cut)."""
        if self.detail_id is None:
            return
        whole = self.full_cells.get(row_key.value)
        shown = [str(c) for c in self.get_row(row_key)] if whole is not None else []
        labels = [label for _, label in self._spec]
        for target in self.app.query(f"#{self.detail_id}"):
            if isinstance(target, Static):
                width = max(20, target.content_region.width or self.app.size.width - 4)
                lines = cut_lines(labels, whole, shown, width, self.lang) if whole is not None else []
                target.update(Text("\n".join(lines)))

    # -- sorting ---------------------------------------------------------------------------------

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
