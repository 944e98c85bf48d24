"""The numbers of a payload as a table: ``result_table(payload) -> (headers, rows)`` per intent.

Pure; used by the TUI's result DataTable, by :func:`edge.presentation.text.payload_text` and
later by the HQ console. Headers are result keys (stable, language-independent); callers label
them with :func:`edge.presentation.labels.t`. Cells are display strings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from edge.presentation.format import fmt_value, intent_of

#: For each intent: the list-valued result key and the columns of its rows (CONTRACT.md section 3).
ROW_KEYS: dict[str, tuple[str, tuple[str, ...]]] = {
    "trend": ("series", ("bucket", "value", "n")),
    "compare": ("groups", ("key", "value", "n")),
    "anomaly": ("anomalies", ("bucket", "value", "expected", "score", "direction")),
    "co_occurrence": ("pairs", ("a", "b", "count", "support", "lift")),
    "breakdown": ("parts", ("key", "value", "n", "share")),
    "top_k": ("items", ("key", "value", "n")),
    "retrieve": ("events", ("event_id", "score", "timestamp", "event_type", "raw_ref")),
}

#: Scalar keys shown for intents without a row list, in display order.
SCALAR_KEYS: dict[str, tuple[str, ...]] = {
    "aggregate": ("value", "n"),
    "periodicity": ("period", "period_unit", "strength"),
    "correlation": ("r", "p_value", "method", "n"),
    "trend": (
        "direction",
        "slope_per_bucket",
        "p_value",
        "start_value",
        "end_value",
        "change_pct",
        "shift_hours",
    ),
    "compare": ("diff_pct", "p_value", "test", "significant", "per"),
    "anomaly": ("method",),
    "co_occurrence": ("window_seconds",),
    "breakdown": ("top_contributor",),
}


def scalar_items(result: Mapping[str, Any], intent: str | None) -> list[tuple[str, Any]]:
    """The result's scalar (non-list) entries: the intent's known keys first, then any others."""
    known = SCALAR_KEYS.get(intent or "", ())
    items = [(k, result[k]) for k in known if k in result]
    seen = set(known)
    row_key = ROW_KEYS.get(intent or "", ("", ()))[0]
    for k, v in result.items():
        if k in seen or k == row_key or isinstance(v, (list, dict)):
            continue
        items.append((k, v))
    return items


def _row_table(rows: Sequence[Any], columns: Sequence[str]) -> tuple[list[str], list[list[str]]]:
    cols = list(columns)
    # Extra keys an operator adds to its rows are shown after the contract's columns.
    for row in rows:
        if isinstance(row, Mapping):
            for k in row:
                if k not in cols:
                    cols.append(k)
    body = [[fmt_value(row.get(c), c) for c in cols] for row in rows if isinstance(row, Mapping)]
    return cols, body


def result_table(payload: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Headers and rows of the payload's result; empty when the result is empty."""
    result = payload.get("result")
    if not isinstance(result, Mapping) or not result:
        return [], []
    intent = intent_of(payload)
    spec = ROW_KEYS.get(intent or "")
    if spec is not None and isinstance(result.get(spec[0]), list):
        return _row_table(result[spec[0]], spec[1])
    items = scalar_items(result, intent)
    return ["key", "value"], [[k, fmt_value(v, k)] for k, v in items]
