"""Why the rule parser refuses a question, in both languages.

Owned by :mod:`edge.analysis.parser`: the stages (:mod:`.slots`, ``stage_*``) raise :class:`Refusal`;
:mod:`.core` turns it into an ``unsupported`` result.
"""

from __future__ import annotations

#: the refusals' reasons as (zh, en), by name
REASONS: dict[str, tuple[str, str]] = {
    "empty": ("问题是空的", "the question is empty"),
    "out_of_domain": ("这不是关于门店数据的问题", "this is not a question about the store's data"),
    "two_metrics": ("相关性需要两个指标", "a correlation needs two metrics"),
    "no_groups": ("没有识别出要对比的两组", "I did not recognise which groups to compare"),
    "entities_compared": (
        "我不能把几个人或对象放在一起对比；请分别问每一个",
        "I cannot compare people or other ids with each other; ask about each one",
    ),
    "no_forecast_metric": (
        "没有识别出要预测的门店指标",
        "I did not recognise which store metric to forecast",
    ),
    "no_metric": ("没有识别出要计算的指标", "I did not recognise which metric to compute"),
    "no_pair": ("需要两件事才能算同时出现", "co-occurrence needs two things to pair"),
    "per_unit_average": (
        "我还不能算一个总数的平均每天（每周、每月、每小时）值：可以问总数，或者按天看走势",
        "I cannot compute the average per day (week, month, hour) of a total yet: ask for the total, "
        "or for its day-by-day trend",
    ),
    "internal": ("内部错误", "internal parser error"),
}


class Refusal(Exception):
    """The question is not answered: ``reason`` is a key of :data:`REASONS`, a (zh, en) pair or
    None (nothing more to say than what was understood); ``final`` when no other reading (the
    exemplar classifier's) may be tried."""

    def __init__(self, reason: str | tuple[str, str] | None = None, *, final: bool = False) -> None:
        super().__init__(reason)
        self.reason = REASONS[reason] if isinstance(reason, str) else reason
        self.final = final

    def said(self, lang: str) -> str | None:
        """The reason in ``lang``."""
        return None if self.reason is None else self.reason[0 if lang == "zh" else 1]
