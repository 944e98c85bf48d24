"""``forecast``: always refused; the engine does not extrapolate. Registered in the registry."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from edge.analysis import metrics as M
from edge.analysis.operators.base import Context, Operator, Outcome

logger = logging.getLogger(__name__)


class ForecastOperator(Operator):
    name = "forecast"
    intent = "forecast"
    version = "1.0"
    description = "refuses to extrapolate and offers the trend so far instead"
    output_keys = ()
    confidence_method = "always 0 (refused)"
    templates = {
        "zh": "系统不做外推预测：历史数据无法保证未来。可以改问{metric}到目前为止的趋势，例如“最近{metric}的趋势怎么样？”。",
        "en": "The engine does not extrapolate: past data cannot promise the future. "
        'Ask for the {metric} trend so far instead, e.g. "How has {metric} trended lately?"',
    }

    def compute(self, ctx: Context) -> Outcome:
        return Outcome(status="refused", summary=self.summarize(ctx, {}))

    def summarize(self, ctx: Context, result: Mapping[str, Any]) -> str:
        metric = M.label(ctx.metric or "footfall", ctx.language)
        return self.templates[ctx.language].format(metric=metric)
