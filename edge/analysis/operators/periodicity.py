"""``periodicity``: the dominant cycle of a daily (or hourly) series by its autocorrelation.

The series is filled (missing days count 0 for additive metrics, the mean otherwise), the
biased ACF is computed up to half the length with numpy, and the lag with the highest ACF
(at least 2) is the period; its ACF (clipped to 0-1) is the strength. Registered in the registry.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import date, datetime, timedelta
from typing import Any

import numpy as np

from edge.analysis import metrics as M
from edge.analysis.honesty import say
from edge.analysis.operators._series import bucket_value, series
from edge.analysis.operators.base import (
    Context,
    EvidenceSpec,
    Operator,
    Outcome,
    fmt,
    insufficient,
    metric_types_filter,
)

logger = logging.getLogger(__name__)


def acf(x: np.ndarray, max_lag: int) -> np.ndarray:
    """Biased autocorrelation for lags 0..max_lag."""
    y = x - x.mean()
    denom = float(np.dot(y, y))
    if denom == 0:
        return np.zeros(max_lag + 1)
    return np.array([float(np.dot(y[: len(y) - k], y[k:])) / denom for k in range(max_lag + 1)])


def _fill(buckets: list[str], hourly: bool) -> list[str]:
    if not buckets:
        return []
    if hourly:
        start = datetime.strptime(buckets[0], "%Y-%m-%dT%H")
        end = datetime.strptime(buckets[-1], "%Y-%m-%dT%H")
        n = int((end - start).total_seconds() // 3600) + 1
        return [(start + timedelta(hours=i)).strftime("%Y-%m-%dT%H") for i in range(n)]
    d0, d1 = date.fromisoformat(buckets[0]), date.fromisoformat(buckets[-1])
    return [(d0 + timedelta(days=i)).isoformat() for i in range((d1 - d0).days + 1)]


def best_period(r: np.ndarray) -> int:
    """The lag (>= 2) whose multiples carry the highest mean autocorrelation, so a weekly cycle
    is 7 rather than 14 or 21; the shortest such lag wins near-ties (within 10%)."""
    max_lag = len(r) - 1
    scores: dict[int, float] = {}
    for lag in range(2, max(3, max_lag // 2 + 1)):
        mult = [r[k] for k in range(lag, max_lag + 1, lag)]
        scores[lag] = float(np.mean(mult)) if mult else -1.0
    if not scores:
        return 2
    top = max(scores.values())
    for lag in sorted(scores):
        if scores[lag] >= top - 0.1 * abs(top) and r[lag] > 0:
            return lag
    return max(scores, key=lambda k: scores[k])


def _clean(x: np.ndarray) -> np.ndarray:
    """Outliers clipped to median +- 3.5 robust sd, then a linear trend removed (so a spike or a
    drift does not masquerade as a short cycle)."""
    med = float(np.median(x))
    mad = float(np.median(np.abs(x - med))) * 1.4826
    if mad > 0:
        x = np.clip(x, med - 3.5 * mad, med + 3.5 * mad)
    t = np.arange(len(x), dtype=float)
    if len(x) >= 3:
        slope, intercept = np.polyfit(t, x, 1)
        x = x - (slope * t + intercept)
    return x


class PeriodicityOperator(Operator):
    name = "periodicity"
    intent = "periodicity"
    version = "1.0"
    description = "autocorrelation (numpy) of the daily series up to half its length; period = best lag >= 2"
    output_keys = ("period", "period_unit", "strength")
    min_evidence = {"buckets": "min_buckets (default 8), and at least two full cycles"}
    default_params = {"time_bucket": "day"}
    confidence_method = "n/(n+decay_base), n = points in the series"
    templates = {
        "zh": "{metric}存在周期约为 {period} {unit}的规律，强度 {strength}{clear}。",
        "en": "{metric} repeats about every {period} {unit}s, strength {strength}{clear}.",
    }

    def compute(self, ctx: Context) -> Outcome:
        metric = ctx.metric or "event_count"
        hourly = ctx.plan.get("time_bucket") == "hour"
        key = "date_hour" if hourly else "date"
        buckets, comps, hours = series(ctx, metric, key)
        values = {b: bucket_value(metric, comps[b], hours.get(b)) for b in buckets}
        known = {b: v for b, v in values.items() if v is not None}
        full = _fill(sorted(known), hourly)
        if len(known) < ctx.config.min_buckets or len(full) < 4:
            return insufficient(
                [
                    say(
                        ctx.language,
                        f"at least {ctx.config.min_buckets} {'hours' if hourly else 'days'} of {metric} (found {len(known)})",
                        f"至少 {ctx.config.min_buckets} {'小时' if hourly else '天'}的{M.label(metric, 'zh')}数据（现有 {len(known)}）",
                    )
                ]
            )
        fill = 0.0 if metric in M.ADDITIVE else float(np.mean(list(known.values())))
        x = np.array([known.get(b, fill) for b in full], dtype=float)
        x = _clean(x)
        max_lag = len(x) // 2
        if max_lag < 2:
            return insufficient(
                [
                    say(
                        ctx.language,
                        f"a longer series of {metric} (two cycles at least)",
                        f"更长的{M.label(metric, 'zh')}序列（至少两个周期）",
                    )
                ]
            )
        r = acf(x, max_lag)
        lag = best_period(r)
        strength = float(min(1.0, max(0.0, r[lag])))
        result = {"period": lag, "period_unit": "hour" if hourly else "day", "strength": round(strength, 4)}
        flt = metric_types_filter(ctx.flt, metric)
        picks = full[-lag:] if lag <= len(full) else full
        specs = [
            EvidenceSpec(f"bucket:{b}", flt.narrowed(key_equals=(*flt.key_equals, (key, (b,)))), 1.0)
            for b in picks[: ctx.config.evidence_cap]
        ]
        return Outcome(
            status="ok",
            result=result,
            n=len(known),
            evidence=specs,
            evidence_count=sum(M.n_of(metric, comps[b]) for b in buckets),
        )

    def summarize(self, ctx: Context, result: Mapping[str, Any]) -> str:
        lang = "zh" if ctx.language == "zh" else "en"
        weak = result["strength"] < 0.2
        clear = ("，但规律不明显" if lang == "zh" else ", but the cycle is not clear") if weak else ""
        unit = {"day": "天", "hour": "小时"}[result["period_unit"]] if lang == "zh" else result["period_unit"]
        return self.templates[lang].format(
            metric=M.label(ctx.metric or "event_count", lang),
            period=result["period"],
            unit=unit,
            strength=fmt(result["strength"]),
            clear=clear,
        )
