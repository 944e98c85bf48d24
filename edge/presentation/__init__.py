"""UI logic that is not Textual-specific: a payload as text, as a table, as a plot.

Shared by the CLI (``adamm ask``, ``adamm demo``), the store manager's TUI (:mod:`edge.tui`) and the
HQ console. Pure: no Textual, no SQLite, no I/O.
"""

from edge.presentation.labels import default_lang, t
from edge.presentation.plot import PlotSpec, choose_plot
from edge.presentation.tables import result_table
from edge.presentation.text import confidence_bar, daemon_warning, event_detail_text, payload_text

__all__ = [
    "PlotSpec",
    "choose_plot",
    "confidence_bar",
    "daemon_warning",
    "default_lang",
    "event_detail_text",
    "payload_text",
    "result_table",
    "t",
]
