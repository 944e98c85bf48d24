"""What an answer computed, said so a reader can see a misreading (payload ``interpretation``).

Owned by :mod:`edge.analysis`; built by the engine (:mod:`.engine`) for every payload, ``ok`` or
not, from the plan as run: the measure, the period as store-local dates (the plan's range, or the
span of the memory when it names none), the filters, the groups, the stores and the words of the
question that the plan does not use. Its ``text`` leads every readable answer (CLI, TUI, the HQ
console, the action a staff device receives). Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from edge.analysis.metrics import METRICS
from edge.analysis.operators._words import dimension_label, value_label
from edge.analysis.source import zone

_INTENTS = {
    "aggregate": ("the value of", "数值"),
    "trend": ("the trend of", "趋势"),
    "compare": ("a comparison of", "对比"),
    "anomaly": ("anomalies in", "异常"),
    "periodicity": ("the cycle of", "周期"),
    "co_occurrence": ("how often two things occur together", "同时出现的次数"),
    "breakdown": ("the breakdown of", "构成"),
    "top_k": ("a ranking by", "排名"),
    "correlation": ("the correlation of", "相关性"),
    "retrieve": ("a search for events", "事件检索"),
    "forecast": ("a forecast of", "预测"),
}


def _local_date(t: datetime, tz: str) -> str:
    aware = t if t.tzinfo is not None else t.replace(tzinfo=zone(tz))
    return aware.astimezone(zone(tz)).date().isoformat()


def _offset(day: str, tz: str) -> str:
    """The store zone's UTC offset on ``day`` (``+08:00``): what a person reads the dates in."""
    off = datetime.fromisoformat(day).replace(tzinfo=zone(tz)).utcoffset() or timedelta(0)
    minutes = int(off.total_seconds() // 60)
    sign = "+" if minutes >= 0 else "-"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


_PERIOD_WORDS = {"before": ("之前", "before"), "after": ("之后", "after")}


def _period_label(label: str, lang: str) -> str:
    zh, en = _PERIOD_WORDS.get(label, (label, label))
    return zh if lang == "zh" else en


def period(
    since: datetime | None,
    until: datetime | None,
    tz: str,
    *,
    earliest: datetime | None = None,
    latest: datetime | None = None,
) -> dict[str, str] | None:
    """``{"from", "to", "tz"}``: store-local dates, ``to`` inclusive; an open end is the memory's
    own first or last event (``earliest`` / ``latest``); None when neither end is known."""
    start = since or earliest
    end = (until - timedelta(microseconds=1)) if until is not None else latest
    if start is None or end is None:
        return None
    return {"from": _local_date(start, tz), "to": _local_date(end, tz), "tz": tz}


def _filters(plan: dict[str, Any]) -> dict[str, Any]:
    f = dict(plan.get("filters") or {})
    f.pop("time_range", None)
    return f


def _groups(plan: dict[str, Any]) -> list[str]:
    out = [str(g) for g in plan.get("group_by") or []]
    cmp = plan.get("compare") or {}
    if cmp.get("dimension"):
        out.insert(0, str(cmp["dimension"]))
    elif cmp.get("periods"):
        out.insert(0, "period")
    if plan.get("time_bucket") and plan.get("intent") in ("trend", "anomaly"):
        bucket = str(plan["time_bucket"])
        out.append("date" if bucket == "day" else bucket)
    return list(dict.fromkeys(out))


def _measure(plan: dict[str, Any]) -> str | None:
    m = plan.get("target_metric")
    if plan.get("intent") == "co_occurrence" and plan.get("pair"):
        return f"{plan['pair'].get('a')} & {plan['pair'].get('b')}"
    return str(m) if m else None


def _metric_words(name: str | None, lang: str) -> str:
    if name is None:
        return ""
    m = METRICS.get(name)
    if m is None:
        return name
    return m.label_zh if lang == "zh" else m.label_en


def _filter_words(filters: dict[str, Any], lang: str) -> list[str]:
    zh = lang == "zh"
    out: list[str] = []
    for key, val in (filters.get("attributes") or {}).items():
        vals = val if isinstance(val, list) else [val]
        shown = ("、" if zh else ", ").join(value_label(key, v, lang) for v in vals)
        out.append(f"{dimension_label(key, lang)}={shown}")
    if filters.get("event_type"):
        out.append(("事件类型=" if zh else "event type=") + ",".join(map(str, filters["event_type"])))
    if filters.get("hours"):
        hours = sorted({int(h) for h in filters["hours"]})
        runs: list[list[int]] = []  # 17, 18, 20: 17:00-19:00 and 20:00-21:00, never 17:00-21:00
        for h in hours:
            if runs and h == runs[-1][-1] + 1:
                runs[-1].append(h)
            else:
                runs.append([h])
        spans = [f"{r[0]:02d}:00-{r[-1] + 1:02d}:00" for r in runs]
        out.append(("时段 " if zh else "hours ") + ("、" if zh else ", ").join(spans))
    if filters.get("days_of_week"):
        out.append(
            ("星期 " if zh else "weekdays ")
            + ",".join(value_label("day_of_week", d, lang) for d in filters["days_of_week"])
        )
    if filters.get("entities"):
        out.append(("对象 " if zh else "entity ") + ",".join(map(str, filters["entities"])))
    return out


def _resolved_words(
    resolved: Sequence[tuple[str, str, Sequence[str], Sequence[str]]], lang: str
) -> list[str]:
    """One clause per word of several fields: which it was read as, and why."""
    zh = lang == "zh"
    out: list[str] = []
    for phrase, key, aside, events in resolved:
        field, others = dimension_label(key, lang), [dimension_label(k, lang) for k in aside]
        if zh:
            why = (
                f"{'、'.join(value_label('event_type', t, lang) for t in events)}带有{field}，不带{'、'.join(others)}"
                if events
                else "问题中指明"
            )
            out.append(f"“{phrase}”按{field}理解（{why}）")
        else:
            why = (
                f"{', '.join(value_label('event_type', t, lang) for t in events)} carry {field}, not {', '.join(others)}"
                if events
                else "as the question names it"
            )
            out.append(f"“{phrase}” read as the {field} ({why})")
    return out


def build(
    plan: dict[str, Any],
    lang: str,
    *,
    tz: str,
    since: datetime | None = None,
    until: datetime | None = None,
    earliest: datetime | None = None,
    latest: datetime | None = None,
    not_understood: Sequence[str] = (),
    periods: Sequence[tuple[str, datetime | None, datetime | None]] = (),
    resolved: Sequence[tuple[str, str, Sequence[str], Sequence[str]]] = (),
    read_as: Sequence[tuple[str, str]] = (),
    set_aside: Sequence[str] = (),
) -> dict[str, Any]:
    """The payload's ``interpretation`` for ``plan`` (``{}`` for a question no plan was built for);
    ``periods``: a comparison of periods' windows, resolved (label, since, until): the period said
    is then theirs, each named with its dates. ``resolved``: words of the question that name a
    stored value of several fields, as (word, the field read, the fields set aside, the measure's
    event types that carry the field read; none when the question named the field itself).
    ``read_as``: slips of typing in the question and the words they were read as (revnue, revenue);
    ``set_aside``: clauses of the question about the asking, not the data ("my boss wants to
    know"), said as not computed."""
    zh = lang == "zh"
    words = [str(w) for w in not_understood]
    if not plan:
        text = (
            ("没有对应到任何计算" if zh else "No computation matched this question")
            + (("；未能理解：" + "、".join(words)) if zh and words else "")
            + (("; not understood: " + ", ".join(words)) if not zh and words else "")
            + ("。" if zh else ".")
        )
        return {
            "text": text,
            "measure": None,
            "period": None,
            "filters": {},
            "groups": [],
            "stores": [],
            "not_understood": words,
        }
    filters = _filters(plan)
    spans: list[tuple[str, dict[str, str]]] = []
    for label, a, b in periods:
        sp = period(a, b, tz, earliest=earliest, latest=latest)
        if sp is not None:
            spans.append((label, sp))
    if spans:  # the windows compared, not the memory's span
        span: dict[str, str] | None = {
            "from": min(sp["from"] for _, sp in spans),
            "to": max(sp["to"] for _, sp in spans),
            "tz": tz,
        }
    else:
        span = period(since, until, tz, earliest=earliest, latest=latest)
    groups = _groups(plan)
    stores = [str(s) for s in filters.get("store_id") or []]
    measure = _measure(plan)
    intent = str(plan.get("intent") or "")
    what_en, what_zh = _INTENTS.get(intent, (intent, intent))
    second = plan.get("second_metric")
    if zh:
        parts = [f"计算的是{_metric_words(measure, lang) if intent != 'co_occurrence' else measure}"]
        if second:
            parts[0] += f"与{_metric_words(str(second), lang)}"
        parts[0] += f"的{what_zh}"
        if spans:
            parts.append(
                "对比 "
                + "、".join(f"{_period_label(lb, lang)} {sp['from']} 至 {sp['to']}" for lb, sp in spans)
                + f"（门店时间 {_offset(spans[0][1]['from'], tz)}）"
            )
        elif span:
            parts.append(f"时间 {span['from']} 至 {span['to']}（门店时间 {_offset(span['from'], tz)}）")
        if stores:
            parts.append("门店 " + "、".join(stores))
        fw = _filter_words(filters, lang)
        if fw:
            parts.append("条件 " + "；".join(fw))
        if groups:
            parts.append("按" + "、".join(dimension_label(g, lang) for g in groups) + "分组")
        parts += _resolved_words(resolved, lang)
        parts += [f"“{typed}”按“{word}”理解" for typed, word in read_as]
        if set_aside:
            parts.append("与数据无关、未计入：" + "、".join(f"“{a}”" for a in set_aside))
        if words:
            parts.append("未能理解：" + "、".join(words))
        text = "，".join(parts) + "。"
    else:
        subject = measure if intent == "co_occurrence" else _metric_words(measure, lang)
        if second:
            subject = f"{subject} and {_metric_words(str(second), lang)}"
        parts = (
            [f"Computed {what_en} {subject}".strip()]
            if intent != "co_occurrence"
            else [f"Computed {what_en}: {subject}"]
        )
        if spans:
            parts.append(
                ", ".join(f"{_period_label(lb, lang)} {sp['from']} to {sp['to']}" for lb, sp in spans)
                + f" (store time, UTC{_offset(spans[0][1]['from'], tz)})"
            )
        elif span:
            parts.append(f"from {span['from']} to {span['to']} (store time, UTC{_offset(span['from'], tz)})")
        if stores:
            parts.append("stores " + ", ".join(stores))
        fw = _filter_words(filters, lang)
        if fw:
            parts.append("where " + "; ".join(fw))
        if groups:
            parts.append("by " + ", ".join(dimension_label(g, lang) for g in groups))
        parts += _resolved_words(resolved, lang)
        parts += [f"“{typed}” read as “{word}”" for typed, word in read_as]
        if set_aside:
            parts.append("set aside as not about the data: " + ", ".join(f"“{a}”" for a in set_aside))
        if words:
            parts.append("not understood: " + ", ".join(words))
        text = ", ".join(parts) + "."
    return {
        "text": text,
        "measure": measure,
        "period": span,
        "filters": filters,
        "groups": groups,
        "stores": stores,
        "not_understood": words,
    }
