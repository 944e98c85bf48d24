"""The honesty rules of CONTRACT.md section 4, applied by the engine to every operator's outcome.

Owns the confidence formula (``n / (n + decay_base)``, capped at 0.5 when p >= 0.05), the
low-confidence wording, and the coverage check (a requested time range the memory does not hold
is ``insufficient_data`` with ``missing`` naming the span). Called by :mod:`edge.analysis.engine`.
Pure.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from edge.analysis.source import EventFilter, EventSource

logger = logging.getLogger(__name__)

#: slack allowed between the requested start and the memory's first event
COVERAGE_TOLERANCE = timedelta(days=1)

WEAK = {"zh": "（结果较弱，置信度低，仅供参考）", "en": " (weak result: low confidence, treat with care)"}


def confidence(n: int, decay_base: float, p_value: float | None = None) -> float:
    """``n/(n+decay_base)``; at most 0.5 when a test gave p >= 0.05."""
    if n <= 0:
        return 0.0
    c = n / (n + decay_base)
    if p_value is not None and p_value >= 0.05:
        c = min(c, 0.5)
    return round(c, 6)


def is_low(conf: float) -> bool:
    """The low-confidence rule: confidence below 0.5."""
    return conf < 0.5


def weak_note(lang: str) -> str:
    """What a summary adds when the result is weak."""
    return WEAK.get(lang, WEAK["en"])


def coverage_gaps(
    source: EventSource, flt: EventFilter, windows: list[tuple[datetime | None, datetime | None]], lang: str
) -> list[str]:
    """``missing`` lines for requested windows that start before the memory's first event."""
    starts = [s for s, _ in windows if s is not None]
    if not starts:
        return []
    cov = source.coverage(flt)
    since = min(starts)
    if cov.earliest is None:
        return [
            f"no events match the filters at all; collect events from {since.date().isoformat()} on"
            if lang != "zh"
            else f"记忆中没有符合条件的事件；需要从 {since.date().isoformat()} 起的数据"
        ]
    if cov.earliest - since <= COVERAGE_TOLERANCE:
        return []
    held = (cov.latest or cov.earliest) - cov.earliest
    asked_end = max((u for _, u in windows if u is not None), default=cov.latest or cov.earliest)
    asked = asked_end - since
    if lang == "zh":
        return [
            f"需要 {since.date().isoformat()} 到 {cov.earliest.date().isoformat()} 的数据："
            f"问题要求约 {asked.days} 天，记忆只保存了约 {held.days} 天（从 {cov.earliest.date().isoformat()} 起）"
        ]
    return [
        f"events from {since.date().isoformat()} to {cov.earliest.date().isoformat()}: the question asks for "
        f"about {asked.days} days, the memory holds about {held.days} days (from {cov.earliest.date().isoformat()})"
    ]
