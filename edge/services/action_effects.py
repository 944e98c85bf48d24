"""Did the action work: an action acknowledged ``done`` measured after against before (CONTRACT.md
section 7).

Owned by :mod:`edge.services`; run by ``adamm maintain`` after the facts step, and read by
``adamm actions``. For each action acknowledged ``done`` (the ack's ``at``) whose parameters name a
metric (``target_metric``, else the answer's ``subject``) and optionally a ``scope`` (``zone``,
``hours``, other attribute filters), the metric is compared over ``[actions] effect_window_days``
(default 14: whole weeks, so the same weekdays) after the ack against the same number of days
before it, in the same hours and zone, with the same operator and honesty rules as any
comparison of periods. Weather is a stratum: the comparison runs within each of the memory's
weather labels that both windows hold, and the strata combine by inverse variance (each stratum's
standard error from its test's p-value), so a rainy week after the action does not fake an effect.
The result is a fact of kind ``action_effect`` (question ``action_effect``, slot = the action id,
synced as every fact, with ``action_id`` beside the contract's fields); until the window after the
ack has passed, :func:`action_effects` says how many more days it needs, and an action with no
measurable target says so.
"""

from __future__ import annotations

import json
import logging
import math
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from edge.analysis import fleet as F
from edge.analysis import honesty
from edge.config import AdammConfig
from edge.contract import parse_iso
from edge.memory.semantic import facts as repo
from edge.memory.semantic.actions import list_actions
from edge.memory.store import Store
from edge.presentation.effects import target_metric, unmeasured_effect
from edge.services.ask import AskService

logger = logging.getLogger(__name__)

QUESTION = "action_effect"


def _target(params: dict[str, Any]) -> str | None:
    return target_metric(params)


def _scope_filters(params: dict[str, Any]) -> dict[str, Any]:
    scope = params.get("scope") or {}
    out: dict[str, Any] = {}
    if not isinstance(scope, dict):
        return out
    attrs = {k: v for k, v in scope.items() if k not in ("hours", "days_of_week", "store_id")}
    if attrs:
        out["attributes"] = attrs
    if scope.get("hours"):
        out["hours"] = [int(h) for h in scope["hours"]]
    return out


def _periods(at: datetime, days: int) -> list[dict[str, Any]]:
    return [
        {
            "label": "before",
            "time_range": {"since": (at - timedelta(days=days)).isoformat(), "until": at.isoformat()},
        },
        {
            "label": "after",
            "time_range": {"since": at.isoformat(), "until": (at + timedelta(days=days)).isoformat()},
        },
    ]


def _compare(
    asker: AskService, metric: str, filters: dict[str, Any], at: datetime, days: int
) -> dict[str, Any] | None:
    plan: dict[str, Any] = {
        "intent": "compare",
        "target_metric": metric,
        "compare": {"periods": _periods(at, days)},
        "language": "en",
    }
    if filters:
        plan["filters"] = filters
    p = asker.run_plan(plan)
    if p["status"] != "ok":
        return None
    groups = {str(g["key"]): g for g in p["result"].get("groups") or []}
    before, after = groups.get("before"), groups.get("after")
    if before is None or after is None or not before["value"]:
        return None
    effect = (float(after["value"]) - float(before["value"])) / abs(float(before["value"]))
    pv = p["result"].get("p_value")
    return {
        "effect": effect,
        "p_value": None if pv is None else float(pv),
        "n": int(min(before["n"], after["n"])),
        "before": float(before["value"]),
        "after": float(after["value"]),
        "evidence": [e["event_id"] for e in p["evidence"]],
        "evidence_count": int(p["evidence_count"]),
    }


def measure(store: Store, config: AdammConfig, action: dict[str, Any], now: datetime) -> dict[str, Any]:
    """One done action's effect: ``{"state": "measured" | "waiting" | "no_target" | "thin", ...}``."""
    params = json.loads(action.get("params_json") or "{}")
    metric = _target(params)
    if metric is None:
        return {"state": "no_target"}
    days = config.actions.effect_window_days
    at = parse_iso(str(action["acked_at"]))
    ready = at + timedelta(days=days)
    if now < ready:
        return {
            "state": "waiting",
            "days_needed": math.ceil((ready - now).total_seconds() / 86400),
            "metric": metric,
        }
    tz = ZoneInfo(store.timezone(action.get("store_id")))
    at_local = at.astimezone(tz)
    asker = AskService(store, config, now=ready)
    base = _scope_filters(params)
    weathers = [str(w) for w in asker.source().vocabulary().attributes.get("weather", ())]
    strata = []
    for w in weathers:  # weather as a stratum: within each label both windows hold
        flt = {**base, "attributes": {**base.get("attributes", {}), "weather": w}}
        got = _compare(asker, metric, flt, at_local, days)
        if got is not None and got["p_value"] is not None:
            strata.append(got)
    whole = _compare(asker, metric, base, at_local, days)
    if whole is None:
        return {"state": "thin", "metric": metric}
    pooled = _combine(strata) if len(strata) >= 1 else None
    effect, p_value = pooled if pooled is not None else (whole["effect"], whole["p_value"])
    n = sum(s["n"] for s in strata) if strata else whole["n"]  # each stratum's smaller side, summed
    conf = honesty.confidence(n, config.analysis.decay_base, p_value)
    return {
        "state": "measured",
        "metric": metric,
        "effect": effect,
        "p_value": p_value,
        "n": n,
        "confidence": conf,
        "before": whole["before"],
        "after": whole["after"],
        "strata": len(strata),
        "evidence": whole["evidence"],
        "evidence_count": whole["evidence_count"],
        "since": at_local.date().isoformat(),
        "plan_filters": base,
    }


def _combine(strata: list[dict[str, Any]]) -> tuple[float, float] | None:
    """Inverse-variance (fixed-effect) combination of the strata's relative effects, each
    standard error from its test's p-value; the pooled p from the combined z."""
    from scipy.stats import norm

    pairs: list[tuple[float, float]] = []
    for s in strata:
        se = F.se_from_p(s["effect"], s["p_value"])
        if se:
            pairs.append((float(s["effect"]), se))
    if not pairs:
        return None
    w = [1.0 / (se * se) for _, se in pairs]
    effect = sum(wi * e for wi, (e, _) in zip(w, pairs, strict=True)) / sum(w)
    se = math.sqrt(1.0 / sum(w))
    return effect, float(2 * norm.sf(abs(effect) / se))


def _statement(action: dict[str, Any], res: dict[str, Any]) -> dict[str, str]:
    from edge.presentation.facts import metric_label

    title = json.loads(action.get("params_json") or "{}").get("title") or action.get("summary", "")[:40]
    e, p, n = f"{res['effect'] * 100:+.1f}%", f"{res['p_value']:.2g}", res["n"]
    return {
        "zh": f"行动“{title}”于 {res['since']} 完成后，{metric_label(res['metric'], 'zh')}变化 {e}（n={n}，p={p}，按天气分层）",
        "en": f"after the action '{title}' was done on {res['since']}, {metric_label(res['metric'], 'en')} changed {e} "
        f"(n={n}, p={p}, weather-stratified)",
    }


def measure_all(store: Store, config: AdammConfig, now: datetime) -> dict[str, Any]:
    """Measure every done action that can be measured and write its ``action_effect`` fact (one
    per action, rewritten with the same id on a rerun). Returns ``{"measured", "waiting",
    "no_target", "thin"}`` counts."""
    with store.read() as conn:
        done = [a for a in list_actions(conn, now=now) if a["state"] == "done" and a.get("acked_at")]
    report = {"measured": 0, "waiting": 0, "no_target": 0, "thin": 0}
    by_store: dict[str, list[repo.FactRecord]] = {}
    for action in done:
        res = measure(store, config, action, now)
        report[res["state"]] += 1
        if res["state"] != "measured":
            continue
        store_id = str(action.get("store_id") or "")
        plan = {
            "intent": "compare",
            "target_metric": res["metric"],
            "compare": {"periods": []},
            "filters": res["plan_filters"],
        }
        rec = repo.FactRecord(
            fact_id=repo_fact_id(store_id, action["action_id"], res["since"]),
            store_id=store_id,
            question=QUESTION,
            slot=str(action["action_id"]),
            signature="up" if res["effect"] > 0 else "down",
            statement=_statement(action, res),
            metric=res["metric"],
            dimension="date",
            value=res["after"],
            effect=res["effect"],
            n=int(res["n"]),
            p_value=res["p_value"],
            confidence=res["confidence"],
            evidence=list(res["evidence"]),
            evidence_count=int(res["evidence_count"]),
            valid_from=res["since"],
            valid_to=None,
            plan=plan,
            evaluated_until=now.date().isoformat(),
        )
        by_store.setdefault(store_id, []).append(rec)
    for store_id, records in by_store.items():
        repo.apply_run(store, store_id, QUESTION, records, now.date().isoformat())
    logger.info("action effects: %s", report)
    return report


def repo_fact_id(store_id: str, action_id: str, since: str) -> str:
    from edge.services.facts import fact_id

    return fact_id(store_id, QUESTION, action_id, "effect", since)


def action_effects(store: Store, config: AdammConfig, now: datetime) -> dict[str, dict[str, Any]]:
    """action_id -> what ``adamm actions`` says of a done action: its measured effect (the fact),
    the days it still needs, or that it has no measurable target. Reads only."""
    out: dict[str, dict[str, Any]] = {}
    with store.read() as conn:
        done = [a for a in list_actions(conn, now=now) if a["state"] == "done" and a.get("acked_at")]
        facts = {r.slot: r for r in repo.fact_records(conn, current_only=True) if r.question == QUESTION}
    for action in done:
        rec = facts.get(str(action["action_id"]))
        if rec is not None:
            out[action["action_id"]] = {"state": "measured", **rec.contract(), "action_id": rec.slot}
            continue
        params = json.loads(action.get("params_json") or "{}")
        window = config.actions.effect_window_days
        out[action["action_id"]] = unmeasured_effect(params, str(action["acked_at"]), now, window)
    return out
