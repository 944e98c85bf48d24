"""``anomaly``: unusual days by a robust z-score against the same weekday's history.

Each day of the asked window is scored ``(value - median) / (1.4826 * MAD)`` against the other
days of the memory with the same store-local weekday (all other days when fewer than three share
it); ``|z| >= 3.5`` is flagged. Without a metric, every event type's daily count is scored and the
types whose recent days are anomalous are reported. Registered in the registry.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import date, timedelta
from typing import Any

import numpy as np

from edge.analysis import metrics as M
from edge.analysis.honesty import say
from edge.analysis.operators import _words as W
from edge.analysis.operators._series import daily_values, whole_days
from edge.analysis.operators.base import (
    Context,
    EvidenceSpec,
    Operator,
    Outcome,
    fmt,
    insufficient,
    key_text,
    metric_types_filter,
)

logger = logging.getLogger(__name__)

#: group keys that are themselves time buckets: no per-group anomaly of days
TIME_KEYS = ("date", "week", "month", "period")
#: most values of a group key scored one by one (one query each)
MAX_GROUPS = 50


def _group_key(ctx: Context) -> str | None:
    """The plan's first ``group_by`` key other than ``event_type`` (None without one)."""
    for k in ctx.plan.get("group_by") or []:
        if k != "event_type":
            return str(k)
    return None


THRESHOLD = 3.5
MAD_SCALE = 1.4826
METHOD = "robust z-score (median/MAD) vs same-weekday baseline, |z| >= 3.5"


def _scale(values: np.ndarray, med: float) -> float:
    mad = float(np.median(np.abs(values - med))) * MAD_SCALE
    if mad > 0:
        return mad
    mean_ad = float(np.mean(np.abs(values - med))) * 1.2533
    return mean_ad if mean_ad > 0 else 1.0


def score_days(values: dict[str, float], window: set[str]) -> list[dict[str, Any]]:
    """Anomalies among the days in ``window``, each against the rest of ``values``."""
    days = sorted(values)
    weekday = {d: date.fromisoformat(d).weekday() for d in days}
    out = []
    for d in days:
        if d not in window:
            continue
        same = [values[o] for o in days if o != d and weekday[o] == weekday[d]]
        base = same if len(same) >= 3 else [values[o] for o in days if o != d]
        if len(base) < 3:
            continue
        arr = np.array(base, dtype=float)
        med = float(np.median(arr))
        z = (values[d] - med) / _scale(arr, med)
        if abs(z) >= THRESHOLD:
            out.append(
                {
                    "bucket": d,
                    "value": round(values[d], 4),
                    "expected": round(med, 4),
                    "score": round(float(z), 4),
                    "direction": "high" if z > 0 else "low",
                }
            )
    return out


class AnomalyOperator(Operator):
    name = "anomaly"
    intent = "anomaly"
    version = "1.0"
    description = METHOD + "; the baseline is the memory's whole history up to the window's end"
    output_keys = ("anomalies", "method")
    group_keys = None
    min_evidence = {"buckets": "min_buckets days of history (default 8)"}
    default_params = {"time_bucket": "day", "threshold": THRESHOLD, "recent_days_without_range": 7}
    confidence_method = "n/(n+decay_base), n = days in the baseline"
    templates = {
        "zh": "发现 {k} 个异常日：{items}。",
        "en": "Unusual days: {items}.",
    }

    def compute(self, ctx: Context) -> Outcome:
        metric = ctx.metric
        by = _group_key(ctx)
        by_type = by is None and ((ctx.plan.get("group_by") or []) == ["event_type"] or metric is None)
        history = ctx.flt.narrowed(since=None)
        if by_type and metric in (None, "event_count"):
            return self._by_type(ctx, history)
        metric = metric or "event_count"
        if by in TIME_KEYS:
            return insufficient(
                [
                    say(
                        ctx.language,
                        f"a grouping other than {by}: anomalies are days scored against their weekday",
                        f"{W.dimension_label(str(by), 'zh')}以外的分组：异常是按星期基准打分的日子",
                    )
                ]
            )
        if metric == "peak_hour":
            return insufficient(
                [
                    say(
                        ctx.language,
                        "a daily metric to score (peak_hour has no daily anomaly); ask about footfall",
                        "一个按天计算的指标（高峰时段没有按天的异常）；可以改问客流",
                    )
                ]
            )
        if by is not None:
            return self._per_group(ctx, metric, history, by)
        vals = whole_days(ctx, metric, daily_values(ctx, metric, history))
        if len(vals) < ctx.config.min_buckets:
            return insufficient(
                [
                    say(
                        ctx.language,
                        f"at least {ctx.config.min_buckets} days of {metric} history (found {len(vals)})",
                        f"至少 {ctx.config.min_buckets} 天的{M.label(metric, 'zh')}历史（现有 {len(vals)} 天）",
                    )
                ]
            )
        window = self._window(ctx, vals)
        anomalies = score_days({d: v for d, (v, _) in vals.items()}, window)
        anomalies.sort(key=lambda a: a["bucket"])
        base = metric_types_filter(ctx.flt.narrowed(since=None, until=None), metric)
        if anomalies:
            top = max(abs(a["score"]) for a in anomalies)
            specs = [
                EvidenceSpec(
                    f"anomaly:{a['bucket']}",
                    base.narrowed(key_equals=(*base.key_equals, ("date", (a["bucket"],)))),
                    round(abs(a["score"]) / top, 4),
                )
                for a in anomalies
            ]
        else:
            specs = [EvidenceSpec("window", metric_types_filter(ctx.flt, metric), 1.0)]
        return Outcome(
            status="ok",
            result={"anomalies": anomalies, "method": METHOD},
            n=len(vals),
            evidence=specs,
            evidence_count=sum(n for _, n in vals.values()),
        )

    def _per_group(self, ctx: Context, metric: str, history: Any, by: str) -> Outcome:
        """Each value of ``by`` (a store, a zone...) scored on its own days; anomalies carry the
        value as ``key``, ``checked`` lists the values scored."""
        values = sorted(
            {r[by] for r in ctx.rows([by], M.components(metric), history) if r[by] is not None}, key=key_text
        )
        if len(values) > MAX_GROUPS:
            return insufficient(
                [
                    say(
                        ctx.language,
                        f"at most {MAX_GROUPS} {by} values to score one by one (found {len(values)})",
                        f"最多 {MAX_GROUPS} 个{W.dimension_label(by, 'zh')}逐个打分（现有 {len(values)} 个）",
                    )
                ]
            )
        anomalies: list[dict[str, Any]] = []
        checked: list[Any] = []
        ns: list[int] = []
        count = 0
        for v in values:
            flt = history.narrowed(key_equals=(*history.key_equals, (by, (v,))))
            vals = whole_days(ctx, metric, daily_values(ctx, metric, flt))
            if len(vals) < ctx.config.min_buckets:
                continue
            checked.append(v)
            ns.append(len(vals))
            count += sum(n for _, n in vals.values())
            scored = score_days({d: x for d, (x, _) in vals.items()}, self._window(ctx, vals))
            anomalies.extend({**a, "key": v} for a in scored)
        if not checked:
            return insufficient(
                [
                    say(
                        ctx.language,
                        f"some {by} with at least {ctx.config.min_buckets} days of {metric} history",
                        f"至少一个{W.dimension_label(by, 'zh')}有 {ctx.config.min_buckets} 天以上的"
                        f"{M.label(metric, 'zh')}历史",
                    )
                ]
            )
        anomalies.sort(key=lambda a: (-abs(a["score"]), a["bucket"], key_text(a["key"])))
        base = metric_types_filter(ctx.flt.narrowed(since=None, until=None), metric)
        specs = [
            EvidenceSpec(
                f"anomaly:{key_text(a['key'])}:{a['bucket']}",
                base.narrowed(key_equals=(*base.key_equals, (by, (a["key"],)), ("date", (a["bucket"],)))),
                1.0,
            )
            for a in anomalies[: ctx.config.evidence_cap]
        ] or [EvidenceSpec("window", metric_types_filter(ctx.flt, metric), 1.0)]
        return Outcome(
            status="ok",
            result={"anomalies": anomalies, "method": METHOD + f", per {by}", "by": by, "checked": checked},
            n=min(ns),
            evidence=specs,
            evidence_count=count,
        )

    def _window(self, ctx: Context, vals: Mapping[str, Any]) -> set[str]:
        days = sorted(vals)
        if ctx.flt.since is None:
            if (ctx.plan.get("group_by") or []) == ["event_type"] or ctx.metric is None:
                last = date.fromisoformat(days[-1])
                first = (
                    last - timedelta(days=int(self.default_params["recent_days_without_range"]) - 1)
                ).isoformat()
                return {d for d in days if d >= first}
            return set(days)
        from zoneinfo import ZoneInfo

        start = ctx.flt.since.astimezone(ZoneInfo(ctx.timezone)).date().isoformat()
        return {d for d in days if d >= start}

    def _by_type(self, ctx: Context, history: Any) -> Outcome:
        rows = ctx.rows(["event_type", "date"], ["events"], history)
        per: dict[str, dict[str, float]] = {}
        for r in rows:
            if r["event_type"] is not None and r["date"] is not None:
                per.setdefault(str(r["event_type"]), {})[str(r["date"])] = float(r["events"])
        all_days = sorted(whole_days(ctx, None, {d: 0 for v in per.values() for d in v}))
        if len(all_days) < ctx.config.min_buckets:
            return insufficient(
                [
                    say(
                        ctx.language,
                        f"at least {ctx.config.min_buckets} days of events (found {len(all_days)})",
                        f"至少 {ctx.config.min_buckets} 天的事件（现有 {len(all_days)} 天）",
                    )
                ]
            )
        window = self._window(ctx, {d: 0 for d in all_days})
        anomalies: list[dict[str, Any]] = []
        for et, series_ in sorted(per.items()):
            filled = {d: series_.get(d, 0.0) for d in all_days}
            for a in score_days(filled, window):
                anomalies.append({**a, "event_type": et})
        anomalies.sort(key=lambda a: (-abs(a["score"]), a["bucket"]))
        base = ctx.flt.narrowed(since=None, until=None)
        specs = [
            EvidenceSpec(
                f"anomaly:{a['event_type']}:{a['bucket']}",
                base.narrowed(
                    event_types=(a["event_type"],), key_equals=(*base.key_equals, ("date", (a["bucket"],)))
                ),
                1.0,
            )
            for a in anomalies[: ctx.config.evidence_cap]
        ] or [EvidenceSpec("window", ctx.flt, 1.0)]
        return Outcome(
            status="ok",
            result={"anomalies": anomalies, "method": METHOD + ", per event type (daily counts)"},
            n=len(all_days),
            evidence=specs,
            evidence_count=int(sum(sum(v.values()) for v in per.values())),
        )

    def summarize(self, ctx: Context, result: Mapping[str, Any]) -> str:
        lang = "zh" if ctx.language == "zh" else "en"
        anomalies = result["anomalies"]
        by = result.get("by")
        if not anomalies:
            if by:
                names = ("、" if lang == "zh" else ", ").join(
                    W.keys_label([by], v, lang) for v in result.get("checked") or []
                )
                return (
                    f"所选时间内没有发现异常的日子（已检查：{names}）。"
                    if lang == "zh"
                    else f"No unusual days in the asked time (checked: {names})."
                )
            return "所选时间内没有发现异常的日子。" if lang == "zh" else "No unusual days in the asked time."
        shown = anomalies[:5]
        sep = "；" if lang == "zh" else "; "
        parts = []
        for a in shown:
            day = str(a["bucket"])
            try:
                wd = W.weekday_label(date.fromisoformat(day).weekday(), lang)
                day = f"{day}（{wd}）" if lang == "zh" else f"{day} ({wd})"
            except ValueError:
                pass
            who = ""
            if "event_type" in a:
                who = W.side_label(str(a["event_type"]), lang) + (" " if lang == "en" else "：")
            elif by:
                who = W.keys_label([by], a["key"], lang) + (" " if lang == "en" else "：")
            if lang == "zh":
                dirw = "偏高" if a["direction"] == "high" else "偏低"
                parts.append(
                    f"{who}{day}{dirw}，为 {fmt(a['value'])}（通常 {fmt(a['expected'])}，z={fmt(a['score'])}）"
                )
            else:
                dirw = "above usual" if a["direction"] == "high" else "below usual"
                parts.append(
                    f"{who}{day} {dirw}: {fmt(a['value'])} (usual {fmt(a['expected'])}, z={fmt(a['score'])})"
                )
        more = ""
        if len(anomalies) > len(shown):
            more = "；其余见结果表" if lang == "zh" else "; more in the result table"
        text = sep.join(parts) + more
        if "event_type" in shown[0]:
            return f"近期异常的事件类型：{text}。" if lang == "zh" else f"Unusual event counts: {text}."
        metric = M.label(ctx.metric or "event_count", lang)
        return f"{metric}异常：{text}。" if lang == "zh" else f"Unusual {metric}: {text}."
