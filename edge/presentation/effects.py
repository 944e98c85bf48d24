"""Did the action work, in words: a done action's measured effect, the days it still needs, or
that it has no measurable target (CONTRACT.md section 7), in one language.

Shared by ``adamm actions`` (:mod:`edge.cli.cmd_actions`), the store manager's Actions tab
(:mod:`edge.tui`) and the HQ console's (:mod:`hub.console`), so that the three say it alike. The
effect is what :func:`edge.services.action_effects.action_effects` returns for one action:
``{"state": "measured", ...the action_effect fact...}``, ``{"state": "waiting", "days_needed"}``
or ``{"state": "no_target"}``. Pure: no I/O.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Any

from edge.analysis import fleet as F
from edge.analysis.metrics import METRICS
from edge.contract import parse_iso
from edge.presentation.facts import metric_label

#: the days of each window when the effect does not say (``[actions] effect_window_days``' default)
DEFAULT_WINDOW_DAYS = 14


def target_metric(params: dict[str, Any]) -> str | None:
    """The metric a done action is measured by: ``params.target_metric``, else the answer's
    ``subject``; None when neither names a metric (no measurable target)."""
    metric = params.get("target_metric") or params.get("subject")
    return str(metric) if metric in METRICS else None


def unmeasured_effect(
    params: dict[str, Any], acked_at: str, now: datetime, window_days: int, *, in_store: bool = True
) -> dict[str, Any]:
    """What is said of a done action that has no ``action_effect`` fact: no measurable target, or
    the days until its window after the ack has passed (0 once it has: the next maintenance
    measures it). ``in_store=False``: an action no store's memory holds (one the hub sent), which
    nothing will measure."""
    if target_metric(params) is None:
        return {"state": "no_target"}
    if not in_store:
        return {"state": "not_measured"}
    ready = parse_iso(acked_at) + timedelta(days=window_days)
    return {"state": "waiting", "days_needed": max(0, math.ceil((ready - now).total_seconds() / 86400))}


def effect_interval(effect: float | None, p_value: float | None) -> list[float] | None:
    """The 95% interval of a relative effect, its standard error from its test's p-value (None
    when it cannot be had: no p-value, or p = 1)."""
    if effect is None or p_value is None:
        return None
    return F.interval(float(effect), F.se_from_p(float(effect), float(p_value)))


def _pct(x: float) -> str:
    return f"{x * 100:+.1f}%"


def effect_cell(eff: dict[str, Any] | None, lang: str) -> str:
    """The effect in a table cell: the change, the days still needed, or no target."""
    if not eff:
        return ""
    zh = lang == "zh"
    if eff.get("state") == "measured":
        e = eff.get("effect")
        return "-" if e is None else _pct(float(e))
    if eff.get("state") == "waiting":
        days = int(eff.get("days_needed") or 0)
        if days <= 0:
            return "下次维护时测量" if zh else "at next maintain"
        return f"还需 {days} 天" if zh else f"{days} more days"
    if eff.get("state") == "not_measured":
        return "门店不测量" if zh else "not measured"
    return "无可测目标" if zh else "no target"


def effect_text(eff: dict[str, Any] | None, lang: str, window_days: int | None = None) -> str:
    """One line: the measured change with its interval (else its p-value), n and window; how many
    more days it needs; or that it has no measurable target. Empty for no effect (an action not
    done). ``window_days``: the days of each window (default the effect's ``window_days``, else
    the config's default)."""
    if not eff:
        return ""
    window_days = window_days or int(eff.get("window_days") or DEFAULT_WINDOW_DAYS)
    zh = lang == "zh"
    state = eff.get("state")
    if state == "waiting" and int(eff.get("days_needed") or 0) <= 0:
        return (
            f"确认完成后已满 {window_days} 天，下次 adamm maintain 时测量"
            if zh
            else f"its {window_days} days after the ack have passed: the next `adamm maintain` measures it"
        )
    if state == "not_measured":
        return (
            "不测量：从总部下发的行动不在门店的记忆里，门店不会测量它；要测量效果，请在门店用 adamm action send 下发"
            if zh
            else "not measured: an action sent from the hub is not in the store's memory, so no store "
            "measures it; send it from the store (`adamm action send`) to have its effect measured"
        )
    if state == "waiting":
        days = int(eff.get("days_needed") or 0)
        return (
            f"还需 {days} 天才能测量（确认完成前后各 {window_days} 天）"
            if zh
            else f"measured after {days} more days (a window of {window_days} days on each side of the ack)"
        )
    if state != "measured":
        return (
            "无可测量的目标（该动作未指定要改变的指标）"
            if zh
            else "no measurable target (the action names no metric to change)"
        )
    effect, p = eff.get("effect"), eff.get("p_value")
    metric = metric_label(eff.get("metric"), lang)
    change = "-" if effect is None else _pct(float(effect))
    ci = effect_interval(effect, p)
    p_text = "" if p is None else f"p={float(p):.2g}"
    spread = (
        (
            f"95% 区间 [{_pct(ci[0])}, {_pct(ci[1])}]，{p_text}"
            if zh
            else f"95% CI [{_pct(ci[0])}, {_pct(ci[1])}], {p_text}"
        )
        if ci
        else p_text
    )
    since, n = eff.get("valid_from") or "", eff.get("n")
    if zh:
        return (
            f"{metric}变化 {change}（{spread}，n={n}；{since} 完成后 {window_days} 天对比之前 {window_days} 天，"
            "同星期同时段，按天气分层）"
        )
    return (
        f"{metric} changed {change} ({spread}, n={n}; {window_days} days after {since} against the "
        f"{window_days} days before, same weekdays and hours, weather-stratified)"
    )
