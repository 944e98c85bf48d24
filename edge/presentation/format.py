"""Formatting of single values and the payload's language, shared by text, tables and plots.

Pure helpers used by :mod:`edge.presentation.text`, :mod:`edge.presentation.tables` and the TUI.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from edge.presentation.labels import LABELS, has_cjk, normalize_lang, t

#: result keys whose string values have a label (``direction.up`` -> "up" / "上升")
WORDED = frozenset({"direction", "period_unit", "per", "test"})


def payload_lang(payload: Mapping[str, Any], lang: str | None) -> str:
    """The display language: ``lang`` if given, else the question's (CJK -> zh), else the locale."""
    if lang is not None:
        return normalize_lang(lang)
    question = payload.get("question")
    if isinstance(question, str) and question.strip():
        return "zh" if has_cjk(question) else "en"
    return normalize_lang(None)


def fmt_value(value: Any, key: str | None = None, lang: str | None = None) -> str:
    """A compact, readable rendering of one result value (booleans as yes/no in ``lang``)."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return t("yes" if value else "no", normalize_lang(lang) if lang else "en")
    if isinstance(value, str) and key in WORDED:
        return (
            t(f"{key}.{value}", normalize_lang(lang) if lang else "en")
            if f"{key}.{value}" in LABELS
            else value
        )
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        if key == "p_value" or (0 < abs(value) < 0.01):
            return f"{value:.3g}"
        if key in {"share", "support", "strength", "weight", "score", "r", "lift"}:
            return f"{value:.3f}"
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        if abs(value) < 1:
            return f"{value:.3g}"  # rates and shares keep three significant digits
        return f"{value:.2f}"
    if isinstance(value, (list, tuple)):
        return ", ".join(fmt_value(v, None, lang) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return str(value)


def as_float(value: Any) -> float | None:
    """``value`` as a float for plotting, or ``None`` when it is not a finite number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    f = float(value)
    return f if math.isfinite(f) else None


def intent_of(payload: Mapping[str, Any]) -> str | None:
    """The plan's intent, else guessed from the result's keys (for payloads with an empty plan)."""
    plan = payload.get("plan")
    if isinstance(plan, Mapping) and isinstance(plan.get("intent"), str):
        return str(plan["intent"])
    result = payload.get("result")
    if not isinstance(result, Mapping):
        return None
    for key, intent in (
        ("series", "trend"),
        ("groups", "compare"),
        ("anomalies", "anomaly"),
        ("period", "periodicity"),
        ("pairs", "co_occurrence"),
        ("parts", "breakdown"),
        ("items", "top_k"),
        ("events", "retrieve"),
        ("r", "correlation"),
        ("value", "aggregate"),
    ):
        if key in result:
            return intent
    return None


def metric_of(payload: Mapping[str, Any]) -> str | None:
    """The plan's metric name, if any."""
    plan = payload.get("plan")
    if isinstance(plan, Mapping):
        for key in ("target_metric", "metric"):
            metric = plan.get(key)
            if isinstance(metric, str):
                return metric
    return None


def local_time(ts: Any, tz: str | None) -> str:
    """A stored UTC timestamp (``...T07:15:24.000000Z``) as ``2025-10-03 15:15:24`` in zone ``tz``."""
    if not isinstance(ts, str) or not ts:
        return "" if ts is None else str(ts)
    from datetime import UTC, datetime
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        when = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return ts
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    try:
        zone = ZoneInfo(tz) if tz else UTC
    except (ZoneInfoNotFoundError, ValueError):
        zone = UTC
    return when.astimezone(zone).strftime("%Y-%m-%d %H:%M:%S")


def zoned_time(ts: Any, tz: str | None) -> str:
    """A stored timestamp as people read it: local to zone ``tz`` with the zone said
    (``2025-10-03 15:15:24 CST``; the zone's abbreviation, else its UTC offset). JSON keeps ISO."""
    text = local_time(ts, tz)
    if not isinstance(ts, str) or text == ts or not text:
        return text
    from datetime import UTC, datetime
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    when = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    try:
        zone = ZoneInfo(tz) if tz else UTC
    except (ZoneInfoNotFoundError, ValueError):
        zone = UTC
    local = when.astimezone(zone)
    name = local.tzname() or ""
    if not name or name[0] in "+-":  # no abbreviation (Asia/Singapore's is "+08"): the offset
        name = local.strftime("%z")
        name = f"UTC{name[:3]}:{name[3:]}" if name else "UTC"
    return f"{text} {name}"


def event_type_label(event_type: Any, lang: str) -> str:
    """An event type as the app lists it: its Chinese name in ``zh`` (``complaint`` -> 投诉), else as stored."""
    from edge.analysis.operators._words import VALUES

    text = "" if event_type is None else str(event_type)
    return VALUES["event_type"]["zh"].get(text, text) if lang == "zh" else text


def tier_label(tier: Any, lang: str) -> str:
    """A storage tier (hot / warm / cold) in ``lang``."""
    text = "" if tier is None else str(tier)
    return t(f"tier.{text}", lang) if f"tier.{text}" in LABELS else text


def machine_zone() -> str | None:
    """This machine's IANA zone (``$TZ``, else ``/etc/localtime``'s), None when unknown (UTC): the
    zone a hub or a staff device shows its own times in."""
    import os
    from zoneinfo import ZoneInfo

    names = [os.environ.get("TZ", "").lstrip(":")]
    try:
        link = os.readlink("/etc/localtime")
        names.append(link.split("zoneinfo/", 1)[1] if "zoneinfo/" in link else "")
    except OSError:
        pass
    for name in names:
        if name:
            try:
                ZoneInfo(name)
                return name
            except (ValueError, KeyError, OSError):
                continue
    return None
