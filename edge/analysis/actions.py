"""Findings to actions: a rule table (data) turning an ok, confident payload into a
``recommendation`` / ``work_order`` / ``alert`` with parameters.

Owns :data:`RULES` and :func:`decide`. Called by :mod:`edge.analysis.engine` after the honesty
rules; the daemon pushes the actions to staff devices. No action comes from a payload that is not
``ok`` or is low-confidence. Pure.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from edge.analysis import labels

logger = logging.getLogger(__name__)

Payload = dict[str, Any]


@dataclass(frozen=True)
class Rule:
    """When ``intent`` and ``metric`` match and ``when(plan, result)`` holds, issue the action."""

    rule_id: str
    intent: str
    metric: str | None
    when: Callable[[dict[str, Any], dict[str, Any]], bool]
    type: str
    role: str
    title: dict[str, str]
    params: dict[str, Any] = field(default_factory=dict)
    extra: Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]] | None = None


def _rain_aov_higher(plan: dict[str, Any], r: dict[str, Any]) -> bool:
    dim = (plan.get("compare") or {}).get("dimension")
    groups = r.get("groups") or []
    return (
        dim == "weather"
        and bool(groups)
        and labels.is_kind("weather", labels.RAIN, groups[0]["key"])
        and bool(r.get("significant"))
    )


def _high_days(r: dict[str, Any]) -> list[str]:
    return sorted(str(a["bucket"]) for a in r.get("anomalies") or [] if a.get("direction") == "high")


def _three_running(dates: list[str]) -> bool:
    try:
        ds = sorted({date.fromisoformat(d[:10]) for d in dates})
    except ValueError:
        return False
    run = 1
    for a, b in zip(ds, ds[1:], strict=False):
        run = run + 1 if b - a == timedelta(days=1) else 1
        if run >= 3:
            return True
    return False


def _footfall_high(plan: dict[str, Any], r: dict[str, Any]) -> bool:
    days = _high_days(r)
    hours = (plan.get("filters") or {}).get("hours") or []
    evening = bool(hours) and min(hours) >= 17
    return _three_running(days) or (evening and bool(days))


def _staff_not_dropping(plan: dict[str, Any], r: dict[str, Any]) -> bool:
    periods = (plan.get("compare") or {}).get("periods") or []
    if len(periods) < 2:
        return False
    before, after = str(periods[0]["label"]), str(periods[-1]["label"])
    vals = {str(g["key"]): g["value"] for g in r.get("groups") or []}
    if before not in vals or after not in vals:
        return False
    return bool(vals[after] >= vals[before])


def _queue_complaints(plan: dict[str, Any], r: dict[str, Any]) -> bool:
    pair = {plan.get("target_metric"), plan.get("second_metric")}
    return (
        pair == {"queue_length", "complaint_count"}
        and (r.get("r") or 0) > 0
        and (r.get("p_value") or 1) < 0.05
    )


def _complaint_anomaly(plan: dict[str, Any], r: dict[str, Any]) -> bool:
    return bool(_high_days(r))


RULES: tuple[Rule, ...] = (
    Rule(
        "rain_aov_tasting",
        "compare",
        "avg_order_value",
        _rain_aov_higher,
        "recommendation",
        "store_manager",
        {"zh": "雨天安排高毛利商品试吃/试饮", "en": "Run tastings of high-margin items on rainy days"},
        {"when": "weather=rain", "activity": "tasting", "items": "topic=high_margin_product"},
    ),
    Rule(
        "evening_cashier",
        "anomaly",
        "footfall",
        _footfall_high,
        "work_order",
        "shift_lead",
        {"zh": "晚间加派一名收银员", "en": "Add an evening cashier"},
        {"task": "add_cashier", "shift": "evening", "count": 1},
        lambda plan, r: {"dates": _high_days(r)},
    ),
    Rule(
        "staff_retraining",
        "compare",
        "staff_error_rate",
        _staff_not_dropping,
        "work_order",
        "trainer",
        {
            "zh": "培训后失误率未下降，安排复训",
            "en": "Error rate did not drop after training: schedule retraining",
        },
        {"task": "retraining"},
    ),
    Rule(
        "open_checkout",
        "correlation",
        None,
        _queue_complaints,
        "recommendation",
        "store_manager",
        {"zh": "排队长时加开收银台", "en": "Open another checkout when the queue grows"},
        {"task": "open_checkout", "trigger": "queue_length"},
    ),
    Rule(
        "complaint_alert",
        "anomaly",
        "complaint_count",
        _complaint_anomaly,
        "alert",
        "store_manager",
        {"zh": "投诉异常增多，请排查原因", "en": "Complaints are unusually high: look into the cause"},
        {"severity": "high"},
        lambda plan, r: {"dates": _high_days(r)},
    ),
)


def decide(plan: dict[str, Any], payload: Payload) -> dict[str, Any] | None:
    """The first matching rule's action, or None (always None unless ok and not low-confidence)."""
    if payload.get("status") != "ok" or payload.get("low_confidence"):
        return None
    result = payload.get("result") or {}
    lang = str(plan.get("language") or "en")
    for rule in RULES:
        if rule.intent != plan.get("intent"):
            continue
        if rule.metric is not None and rule.metric != plan.get("target_metric"):
            continue
        try:
            if not rule.when(plan, result):
                continue
        except (KeyError, TypeError, ValueError) as exc:
            logger.info("action rule %s skipped: %s", rule.rule_id, exc)
            continue
        params = {
            "rule": rule.rule_id,
            "role": rule.role,
            "title": rule.title.get(lang, rule.title["en"]),
            **rule.params,
        }
        if rule.extra:
            params.update(rule.extra(plan, result))
        return {"type": rule.type, "params": params}
    return None
