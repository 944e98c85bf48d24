"""A payload as a readable multi-line answer: ``payload_text(payload, lang=None) -> str``.

Pure; called by ``adamm ask`` (without ``--json``), ``adamm demo`` and the TUI's plain-text views.
Shows the summary, the confidence (with a clear warning when low), the status explanation and
what is missing when the answer is not ``ok``, the key numbers of ``result``, the action and the
evidence ids.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Mapping
from typing import Any

from edge.analysis.operators._words import dimension_label, side_label, value_label
from edge.presentation.format import (
    event_type_label,
    fmt_value,
    intent_of,
    payload_lang,
    tier_label,
    zoned_time,
)
from edge.presentation.labels import LABELS, t
from edge.presentation.tables import ROW_KEYS, evidence_role, result_table, scalar_cell, scalar_items

#: How many evidence ids and result rows the text shows before saying "N more".
MAX_EVIDENCE = 10
MAX_ROWS = 12


def display_width(text: str) -> int:
    """Terminal columns of ``text`` (CJK characters take two)."""
    return sum(2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1 for ch in text)


def pad(text: str, width: int) -> str:
    """``text`` padded with spaces to ``width`` terminal columns."""
    return text + " " * max(0, width - display_width(text))


def confidence_bar(confidence: float, width: int = 10) -> str:
    """``[██████░░░░] 0.62`` for a confidence in [0, 1]."""
    c = min(max(float(confidence), 0.0), 1.0)
    filled = round(c * width)
    return "[" + "█" * filled + "░" * (width - filled) + f"] {c:.2f}"


def _result_lines(payload: Mapping[str, Any], lang: str) -> list[str]:
    result = payload.get("result")
    if not isinstance(result, Mapping) or not result:
        return []
    intent = intent_of(payload)
    lines = [f"{t('result', lang)}:"]
    for key, value in scalar_items(result, intent):
        lines.append(f"  {t(key, lang)}: {scalar_cell(key, value, lang, payload)}")
    if intent in ROW_KEYS and isinstance(result.get(ROW_KEYS[intent][0]), list):
        headers, rows = result_table(payload, lang)
        if rows:
            labels = [t(h, lang) for h in headers]
            widths = [
                max(display_width(labels[i]), *(display_width(r[i]) for r in rows[:MAX_ROWS]))
                for i in range(len(headers))
            ]
            lines.append(
                ("  " + "  ".join(pad(lbl, w) for lbl, w in zip(labels, widths, strict=True))).rstrip()
            )
            for row in rows[:MAX_ROWS]:
                lines.append(("  " + "  ".join(pad(c, w) for c, w in zip(row, widths, strict=True))).rstrip())
            if len(rows) > MAX_ROWS:
                lines.append("  … " + t("evidence_more", lang, n=len(rows) - MAX_ROWS))
    return lines if len(lines) > 1 else []


def action_value(value: Any, lang: str) -> str:
    """An action parameter's value in words (``weather=rain`` -> 雨天, ``shift_lead`` -> 值班主管)."""
    if isinstance(value, str):
        if f"value.{value}" in LABELS:
            return t(f"value.{value}", lang)
        if "=" in value:
            return side_label(value, lang)
        return value
    if isinstance(value, (list, tuple)):
        return ", ".join(action_value(v, lang) for v in value)
    return fmt_value(value, None, lang)


def _action_lines(action: Any, lang: str, with_rule: bool = True) -> list[str]:
    """The action: its title on the first line, then its parameters (the rule id last, unless
    ``with_rule`` is false: a screen says what to do, not which internal rule said it)."""
    if not isinstance(action, Mapping):
        return []
    kind = str(action.get("type", ""))
    params = action.get("params") or {}
    head = f"{t('action', lang)} ({t('action.' + kind, lang)})"
    if not isinstance(params, Mapping):
        return [head + ":", "  " + json.dumps(params, ensure_ascii=False)]
    title = params.get("title")
    lines = [f"{head}: {title}" if title else head + ":"]
    keys = [k for k in params if k not in ("title", "rule")] + (
        ["rule"] if "rule" in params and with_rule else []
    )
    for k in keys:
        label = t("action." + str(k), lang) if "action." + str(k) in LABELS else str(k)
        value = params[k] if k == "rule" else action_value(params[k], lang)
        lines.append(f"  {label}: {value}")
    return lines


def _evidence_lines(payload: Mapping[str, Any], lang: str) -> list[str]:
    evidence = payload.get("evidence") or []
    count = payload.get("evidence_count", len(evidence))
    lines = [f"{t('evidence', lang)} ({t('evidence_count', lang)}: {count}):"]
    if not evidence:
        lines.append(f"  {t('none', lang)}")
        return lines
    for item in evidence[:MAX_EVIDENCE]:
        if isinstance(item, Mapping):
            weight = fmt_value(item.get("weight"), "weight")
            role = evidence_role(payload, item.get("role", ""), lang)
            lines.append(f"  {item.get('event_id')}  {role}  {weight}")
    if len(evidence) > MAX_EVIDENCE:
        lines.append("  … " + t("evidence_more", lang, n=len(evidence) - MAX_EVIDENCE))
    return lines


def payload_text(payload: Mapping[str, Any], lang: str | None = None, *, compact: bool = False) -> str:
    """The payload as a multi-line answer in ``lang`` (default: the question's language).

    ``compact`` leaves out what a UI shows beside the text (the result's numbers, the evidence
    list and the low-confidence line, which it styles on its own) and keeps the evidence count."""
    lang = payload_lang(payload, lang)
    status = str(payload.get("status", "ok"))
    lines: list[str] = []
    question = payload.get("question")
    if question:
        lines.append(f"? {question}")
    reading = payload.get("interpretation")
    if isinstance(reading, Mapping) and reading.get("text"):
        # what was computed leads the answer, so a misreading shows before any number
        lines.append(f"{t('interpretation', lang)}: {reading['text']}")
    if status != "ok":
        lines.append(f"{t('status', lang)}: {t('status.' + status, lang)}")
    lines.append(f"{t('summary', lang)}: {payload.get('summary', '')}")
    confidence = payload.get("confidence")
    if isinstance(confidence, (int, float)):
        lines.append(f"{t('confidence', lang)}: {confidence_bar(float(confidence))}")
    # a refused, unsupported or insufficient answer explains itself in its status line: it is no
    # "low confidence result" (its payload's low_confidence is still true, confidence being 0)
    if status == "ok" and payload.get("low_confidence") and not compact:
        lines.append(t("low_confidence", lang))
    missing = payload.get("missing") or []
    if missing:
        lines.append(f"{t('missing', lang)}:")
        lines.extend(f"  - {m}" for m in missing)
    for note in payload.get("notes") or []:
        lines.append(f"{t('note', lang)}: {note}")
    if not compact:
        lines.extend(_result_lines(payload, lang))
    lines.extend(_action_lines(payload.get("action"), lang, with_rule=not compact))
    if compact:
        if status == "ok" or payload.get("evidence"):
            count = payload.get("evidence_count", len(payload.get("evidence") or []))
            lines.append(f"{t('evidence', lang)} ({t('evidence_count', lang)}: {count})")
        return "\n".join(lines)
    if status == "ok" or payload.get("evidence"):
        lines.extend(_evidence_lines(payload, lang))
    operator = payload.get("operator")
    if isinstance(operator, Mapping) and operator.get("name"):
        tail = f"{t('operator', lang)}: {operator['name']} {operator.get('version', '')}".rstrip()
        elapsed = payload.get("elapsed_ms")
        if isinstance(elapsed, (int, float)):
            tail += f"  {t('elapsed', lang)}: {elapsed:.0f} ms"
        lines.append(tail)
    return "\n".join(lines)


def event_detail_text(
    ev: Mapping[str, Any] | None, lang: str, event_id: str, timezone: str | None = None
) -> str:
    """One event (as :func:`edge.memory.semantic.events.get_event` returns it) as readable lines; its time
    in the store's ``timezone`` (UTC when not given), the zone said."""
    if ev is None:
        return f"{event_id}: {t('none', lang)}"
    lines = [
        f"{t('detail', lang)}: {ev['event_id']}",
        f"{t('timestamp', lang)}: {zoned_time(ev.get('ts'), timezone)}   {t('event_type', lang)}: {event_type_label(ev.get('event_type'), lang)}"
        f"   {t('tier', lang)}: {tier_label(ev.get('tier'), lang)}",
        f"{t('media', lang)}: {', '.join(ev.get('raw_refs') or []) or t('no_media', lang)}",
    ]
    if ev.get("text"):
        lines.append(f"{t('text', lang)}: {ev['text']}")
    stats = ev.get("stats") or {}
    if stats:
        # each attribute by its name in words and its value's word where it has one (topic=高毛利商品)
        lines.append(
            f"{t('stats', lang)}: "
            + ", ".join(
                f"{dimension_label(k, lang)}={value_label(k, v, lang) if isinstance(v, (str, bool)) else fmt_value(v, k, lang)}"
                for k, v in stats.items()
            )
        )
    if ev.get("entities"):
        lines.append(f"{t('entities', lang)}: {', '.join(ev['entities'])}")
    return "\n".join(lines)


def daemon_warning(code: str, age_s: float | None, lang: str) -> str | None:
    """The Status tab's warning for a daemon state code (``running``, ``stale``, ``down``, as
    :func:`edge.memory.semantic.components.component_status` reports it): None while running."""
    if code == "down":
        return t("status.daemon_down", lang)
    if code == "stale":
        return t("status.daemon_stale", lang, age=f"{age_s or 0:.0f}")
    return None
