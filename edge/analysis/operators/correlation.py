"""``correlation``: Pearson (and Spearman) correlation of two metrics' daily series.

Registered in the registry; the days where both metrics are defined are paired.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import numpy as np

from edge.analysis import metrics as M
from edge.analysis import stats_fast
from edge.analysis.honesty import say
from edge.analysis.operators._series import daily_values
from edge.analysis.operators.base import (
    Context,
    EvidenceSpec,
    Operator,
    Outcome,
    fmt,
    fmt_p,
    insufficient,
    metric_types_filter,
    safe_float,
)

logger = logging.getLogger(__name__)

#: the correlation method as a Chinese summary names it
METHOD_ZH = {"pearson": "皮尔逊", "spearman": "斯皮尔曼"}


class CorrelationOperator(Operator):
    name = "correlation"
    intent = "correlation"
    version = "1.0"
    description = "pair two metrics by store-local day; scipy.stats.pearsonr (spearmanr alongside)"
    output_keys = ("r", "p_value", "method", "n")
    min_evidence = {"buckets": "min_buckets paired days (default 8)"}
    default_params = {"time_bucket": "day", "method": "pearson"}
    confidence_method = "n/(n+decay_base), n = paired days; capped at 0.5 when p >= 0.05"
    templates = {
        "zh": "{a}与{b}按天{sign}，相关系数 r={r}（{method}，p={p}，{n} 天）{sig}。",
        "en": "{a} and {b} correlate by day: {sign}, r={r} ({method}, p={p}, {n} days){sig}.",
    }

    def compute(self, ctx: Context) -> Outcome:
        a = ctx.metric or "event_count"
        b = str(ctx.plan.get("second_metric") or "event_count")
        if "peak_hour" in (a, b):
            return insufficient(
                [
                    say(
                        ctx.language,
                        "two daily metrics (peak_hour has no daily value to correlate)",
                        "两个按天计算的指标（高峰时段没有按天的数值可以计算相关）",
                    )
                ]
            )
        va, vb = daily_values(ctx, a), daily_values(ctx, b)
        days = sorted(set(va) & set(vb))
        if len(days) < ctx.config.min_buckets:
            return insufficient(
                [
                    say(
                        ctx.language,
                        f"at least {ctx.config.min_buckets} days with both {a} and {b} (found {len(days)})",
                        f"至少 {ctx.config.min_buckets} 天同时有{M.label(a, 'zh')}和{M.label(b, 'zh')}的数据（现有 {len(days)} 天）",
                    )
                ]
            )
        x = np.array([va[d][0] for d in days])
        y = np.array([vb[d][0] for d in days])
        if np.allclose(x, x[0]) or np.allclose(y, y[0]):
            return insufficient(
                [
                    say(
                        ctx.language,
                        f"days on which {a} and {b} vary (one of them is constant)",
                        f"{M.label(a, 'zh')}和{M.label(b, 'zh')}都有变化的日子（其中一个是常数）",
                    )
                ]
            )
        pr = stats_fast.pearsonr(x, y)  # = scipy.stats.pearsonr / spearmanr, without their import
        sr = stats_fast.spearmanr(x, y)
        r, p = safe_float(pr.statistic) or 0.0, safe_float(pr.pvalue)
        result = {
            "r": round(r, 4),
            "p_value": None if p is None else float(f"{p:.6g}"),
            "method": "pearson",
            "n": len(days),
            "spearman_r": round(safe_float(sr.statistic) or 0.0, 4),
            "spearman_p": safe_float(sr.pvalue),
        }
        specs = [
            EvidenceSpec(f"metric:{m}", metric_types_filter(ctx.flt, m), 1.0) for m in dict.fromkeys((a, b))
        ]
        return Outcome(
            status="ok",
            result=result,
            n=len(days),
            p_value=p,
            evidence=specs,
            evidence_count=sum(va[d][1] + vb[d][1] for d in days),
        )

    def summarize(self, ctx: Context, result: Mapping[str, Any]) -> str:
        lang = "zh" if ctx.language == "zh" else "en"
        p = result["p_value"]
        if p is not None and p < 0.05:
            sig = "，相关显著" if lang == "zh" else "; significant"
        else:
            sig = "，相关不显著" if lang == "zh" else "; not significant"
        r = float(result["r"])
        size = abs(r)
        if r == 0:
            sign = "不相关" if lang == "zh" else "no correlation"
        else:
            if size < 0.1:
                grade = "极弱的" if lang == "zh" else "very weak "
            elif size < 0.3:
                grade = "弱" if lang == "zh" else "weak "
            elif size < 0.7:
                grade = "中等" if lang == "zh" else "moderate "
            else:
                grade = "强" if lang == "zh" else "strong "
            if lang == "zh":
                sign = f"呈{grade}{'正' if r > 0 else '负'}相关"
            else:
                sign = f"{grade}{'positive' if r > 0 else 'negative'} correlation"
        method = str(result["method"])
        if lang == "zh":
            method = METHOD_ZH.get(method, method)
        return self.templates[lang].format(
            a=M.label(ctx.metric or "event_count", lang),
            b=M.label(str(ctx.plan.get("second_metric") or "event_count"), lang),
            sign=sign,
            r=fmt(result["r"], 3),
            method=method,
            p=fmt_p(p),
            n=result["n"],
            sig=sig,
        )
