"""The numbers of a payload as a table: ``result_table(payload) -> (headers, rows)`` per intent.

Pure; used by the TUI's result DataTable, by :func:`edge.presentation.text.payload_text` and
later by the HQ console. Headers are result keys (stable, language-independent); callers label
them with :func:`edge.presentation.labels.t`. Cells are display strings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from edge.analysis import metrics as M
from edge.analysis.operators import _words
from edge.presentation.format import fmt_value, intent_of, payload_lang
from edge.presentation.labels import LABELS, t

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


def group_dimensions(payload: Mapping[str, Any]) -> list[str]:
    """The dimensions a compare / breakdown / top_k result's ``key`` values belong to (from the plan)."""
    plan = payload.get("plan")
    if not isinstance(plan, Mapping):
        return []
    cmp = plan.get("compare")
    if isinstance(cmp, Mapping):
        if cmp.get("periods"):
            return ["period"]
        if cmp.get("dimension"):
            return [str(cmp["dimension"])]
    group_by = plan.get("group_by")
    if isinstance(group_by, list):
        return [str(d) for d in group_by if d != "period"][:3]
    return []


def cell(key: str, value: Any, lang: str, dims: Sequence[str] = ()) -> str:
    """One result cell as the answer shows it: group values in words, booleans as yes/no."""
    if key == "key" and dims and not isinstance(value, (dict, list)):
        return _words.keys_label(list(dims), value, lang)
    if key == "partial":  # only the bucket that is not over yet says so
        return t("trend.partial", lang) if value else ""
    if key == "event_type" and isinstance(value, str):
        return _words.side_label(value, lang) if lang == "zh" else value
    return fmt_value(value, key, lang)


def _row_table(
    rows: Sequence[Any], columns: Sequence[str], lang: str, dims: Sequence[str]
) -> tuple[list[str], list[list[str]]]:
    cols = list(columns)
    # Extra keys an operator adds to its rows are shown after the contract's columns.
    for row in rows:
        if isinstance(row, Mapping):
            for k in row:
                if k not in cols:
                    cols.append(k)
    body = [[cell(c, row.get(c), lang, dims) for c in cols] for row in rows if isinstance(row, Mapping)]
    return cols, body


def result_table(payload: Mapping[str, Any], lang: str | None = None) -> tuple[list[str], list[list[str]]]:
    """Headers and rows of the payload's result in ``lang`` (default: the question's language);
    empty when the result is empty."""
    result = payload.get("result")
    if not isinstance(result, Mapping) or not result:
        return [], []
    lang = payload_lang(payload, lang)
    intent = intent_of(payload)
    spec = ROW_KEYS.get(intent or "")
    if spec is not None and isinstance(result.get(spec[0]), list):
        return _row_table(result[spec[0]], spec[1], lang, group_dimensions(payload))
    items = scalar_items(result, intent)
    return ["key", "value"], [[k, scalar_cell(k, v, lang, payload)] for k, v in items]


def scalar_cell(key: str, value: Any, lang: str, payload: Mapping[str, Any]) -> str:
    """A scalar result value as shown (``top_contributor`` as its group's words)."""
    if key == "method" and isinstance(value, str) and lang == "zh":
        return method_zh(value)
    if key == "top_contributor":
        dims = group_dimensions(payload)
        if dims:
            return _words.keys_label(dims, value, lang)
    return fmt_value(value, key, lang)


def evidence_role(payload: Mapping[str, Any], role: Any, lang: str | None = None) -> str:
    """An evidence role as shown: ``group:true`` on ``is_weekend`` -> "group: weekends" / "分组：周末"."""
    text = str(role or "")
    lang = payload_lang(payload, lang)
    prefix, sep, value = text.partition(":")
    if not sep:
        return t(f"role.{text}", lang) if f"role.{text}" in LABELS else text
    if prefix == "group":
        dims = group_dimensions(payload)
        word = _words.keys_label(dims, value, lang) if dims else value
    elif prefix == "metric":
        try:
            word = M.label(value, lang)
        except KeyError:
            word = value
    elif prefix == "anomaly" and ":" in value:
        etype, _, day = value.partition(":")
        word = f"{_words.side_label(etype, lang)} {day}"
    else:
        word = value
    name = t(f"role.{prefix}", lang) if f"role.{prefix}" in LABELS else prefix
    return f"{name}：{word}" if lang == "zh" else f"{name}: {word}"


#: the operators' method descriptions in Chinese (the result keeps the English text)
METHODS_ZH: tuple[tuple[str, str], ...] = (
    (
        "robust z-score (median/MAD) vs same-weekday baseline, |z| >= 3.5",
        "稳健 z 分数（中位数/MAD），与同一星期几的基线比较，|z| ≥ 3.5",
    ),
    (", per event type (daily counts)", "，按事件类型（每日计数）"),
    ("pearson", "皮尔逊"),
    ("spearman", "斯皮尔曼"),
)


def method_zh(text: str) -> str:
    """A result's ``method`` in Chinese, phrase by phrase (unknown text is kept)."""
    for en, zh in METHODS_ZH:
        text = text.replace(en, zh)
    return text
