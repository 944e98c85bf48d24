"""``trend``: a metric per time bucket, a linear fit, and the first vs last third of the range.

``start_value`` / ``end_value`` are the metric recomputed over the first and last third of the
buckets (not fitted); additive metrics as the mean per bucket. Without a target metric, a trend of
an entity is its mean store-local visit hour. Registered in the registry.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import numpy as np

from edge.analysis import metrics as M
from edge.analysis import stats_fast
from edge.analysis.honesty import say
from edge.analysis.operators import _words as W
from edge.analysis.operators._series import BUCKET_KEYS, bucket_value, merged, partial_buckets, series
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

_BUCKET_ZH = {"hour": "小时", "day": "天", "week": "周", "month": "月"}


class TrendOperator(Operator):
    name = "trend"
    intent = "trend"
    version = "1.0"
    group_keys = frozenset({"date", "week", "month", "hour", "date_hour"})  # the series' own buckets
    description = (
        "aggregate by time bucket (default week), linregress on the bucket index, first vs last third"
    )
    output_keys = (
        "series",
        "slope_per_bucket",
        "p_value",
        "direction",
        "start_value",
        "end_value",
        "change_pct",
    )
    min_evidence = {"buckets": "min_buckets (default 8)"}
    default_params = {"time_bucket": "week", "fit": "scipy.stats.linregress", "alpha": 0.05}
    confidence_method = "n/(n+decay_base), n = events in the thinnest bucket; capped at 0.5 when p >= 0.05"
    templates = {
        "zh": "{metric}趋势{dir}：从前三分之一的 {start} 到后三分之一的 {end}（{change}），每{unit}斜率 {slope}，p={p}{shift}。",
        "en": "{metric} is {dir}: from {start} in the first third to {end} in the last third ({change}), "
        "slope {slope} per {unit}, p={p}{shift}.",
    }

    @staticmethod
    def metric_of(ctx: Context) -> str:
        m = ctx.metric
        if ctx.flt.entities and m in (None, "peak_hour"):
            return "mean_hour"
        return m or "event_count"

    def compute(self, ctx: Context) -> Outcome:
        metric = self.metric_of(ctx)
        bucket = str(ctx.plan.get("time_bucket") or self.default_params["time_bucket"])
        key = BUCKET_KEYS.get(bucket, "week")
        buckets, comps, hours = series(ctx, metric, key)
        cut = partial_buckets(ctx, metric, key, buckets)
        points: list[dict[str, Any]] = []
        for b in buckets:
            v = bucket_value(metric, comps[b], hours.get(b))
            n = M.n_of(metric, comps[b]) if metric != "mean_hour" else int(comps[b].get("events", 0))
            if v is not None and n > 0:
                point: dict[str, Any] = {"bucket": b, "value": round(v, 4), "n": n}
                if b in cut:
                    point["partial"] = True
                points.append(point)
        series_out = points
        # a bucket cut short (by the range, the memory's first or last day, or today) is shown,
        # marked partial, but neither fitted nor compared: it holds fewer days than the others
        points = [pt for pt in points if not pt.get("partial")]
        if len(points) < ctx.config.min_buckets:
            cut_note_en = (
                f", {len(series_out) - len(points)} more cut short" if len(series_out) > len(points) else ""
            )
            cut_note_zh = (
                f"，另有 {len(series_out) - len(points)} 个不完整" if len(series_out) > len(points) else ""
            )
            return insufficient(
                [
                    say(
                        ctx.language,
                        f"at least {ctx.config.min_buckets} whole {bucket} buckets with {metric} data "
                        f"(found {len(points)}{cut_note_en})",
                        f"至少 {ctx.config.min_buckets} 个完整的{_BUCKET_ZH.get(bucket, bucket)}的"
                        f"{M.label(metric, 'zh')}数据（现有 {len(points)} 个{cut_note_zh}）",
                    )
                ]
            )
        x = np.arange(len(points), dtype=float)
        y = np.array([p["value"] for p in points], dtype=float)
        if np.allclose(y, y[0]):
            slope, p = 0.0, 1.0
        else:
            fit = stats_fast.linregress(x, y)  # = scipy.stats.linregress, without its import
            slope, p = float(fit.slope), safe_float(fit.pvalue) or 1.0
        third = max(1, len(points) // 3)
        used = [pt["bucket"] for pt in points]
        start = merged(metric, used[:third], comps, hours)
        end = merged(metric, used[-third:], comps, hours)
        direction = "flat" if p >= 0.05 else ("up" if slope > 0 else "down")
        change = (end - start) / abs(start) * 100 if start not in (None, 0) and end is not None else None
        result: dict[str, Any] = {
            "series": series_out,
            "slope_per_bucket": round(slope, 6),
            "p_value": float(f"{p:.6g}"),
            "direction": direction,
            "start_value": None if start is None else round(start, 4),
            "end_value": None if end is None else round(end, 4),
            "change_pct": None if change is None else round(change, 4),
        }
        if metric in ("peak_hour", "mean_hour") and start is not None and end is not None:
            result["shift_hours"] = round(end - start, 4)
        base = metric_types_filter(ctx.flt, None if metric == "mean_hour" else metric)
        top_n = max(pt["n"] for pt in points)
        specs = [
            EvidenceSpec(
                f"bucket:{pt['bucket']}",
                base.narrowed(key_equals=(*base.key_equals, (key, (pt["bucket"],)))),
                round(pt["n"] / top_n, 4),
            )
            for pt in (points[:third] + points[-third:])
        ]
        return Outcome(
            status="ok",
            result=result,
            n=min(pt["n"] for pt in points),
            p_value=p,
            evidence=specs,
            evidence_count=sum(pt["n"] for pt in points),
        )

    def summarize(self, ctx: Context, result: Mapping[str, Any]) -> str:
        lang = "zh" if ctx.language == "zh" else "en"
        metric = self.metric_of(ctx)
        dirs = {
            "zh": {"up": "上升", "down": "下降", "flat": "无显著变化"},
            "en": {"up": "rising", "down": "falling", "flat": "flat (no significant change)"},
        }
        units = {
            "zh": {"hour": "小时", "day": "天", "week": "周", "month": "月"},
            "en": {"hour": "hour", "day": "day", "week": "week", "month": "month"},
        }
        bucket = str(ctx.plan.get("time_bucket") or "week")
        shift = ""
        if "shift_hours" in result and result["shift_hours"] is not None:
            hrs = float(result["shift_hours"])
            what = (
                ("高峰" if metric == "peak_hour" else "到店时刻")
                if lang == "zh"
                else ("the peak" if metric == "peak_hour" else "visits")
            )
            if round(hrs, 2) == 0:
                shift = f"，{what}没有移动" if lang == "zh" else f"; {what} did not move"
            elif lang == "zh":
                shift = f"，{what}{'推迟' if hrs > 0 else '提前'}了 {fmt(abs(hrs))} 小时"
            else:
                unit_h = "hour" if abs(hrs) == 1 else "hours"
                shift = f"; {what} moved {fmt(abs(hrs))} {unit_h} {'later' if hrs > 0 else 'earlier'}"
        return self.templates[lang].format(
            metric=M.label(metric, lang),
            dir=dirs[lang][result["direction"]],
            start=fmt(result["start_value"]),
            end=fmt(result["end_value"]),
            change=W.signed_pct(result["change_pct"], lang),
            unit=units[lang].get(bucket, bucket),
            slope=fmt(result["slope_per_bucket"], 3),
            p=fmt_p(result["p_value"]),
            shift=shift,
        )
