"""``retrieve``: hybrid retrieval of matching events (``events``). Registered in the registry."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from edge.analysis.honesty import say
from edge.analysis.operators.base import Context, Operator, Outcome, insufficient, safe_float
from edge.analysis.source import retrieval_of

logger = logging.getLogger(__name__)


class RetrieveOperator(Operator):
    name = "retrieve"
    intent = "retrieve"
    version = "1.0"
    description = "hard filters first, then vector ranking of the survivors (the store's hybrid retrieval)"
    output_keys = ("events",)
    min_evidence = {"events": "1 matching event"}
    default_params = {"k": 10}
    confidence_method = "n/(n+decay_base), n = events passing the hard filters"
    templates = {
        "zh": "最相关的事件如下，按相关度排序。",
        "en": "The most relevant events, best match first.",
    }

    def compute(self, ctx: Context) -> Outcome:
        k = int(ctx.plan.get("top_k") or self.default_params["k"])
        text = ctx.plan.get("semantic_query") or ctx.question
        searcher = retrieval_of(ctx.source)
        if searcher is None:  # a rollup-only memory (a hub, closed days) holds no events to search
            return insufficient(
                [
                    say(
                        ctx.language,
                        "event-level memory with vectors (this memory holds only summaries); "
                        "ask the store's own memory",
                        "带向量的事件级记忆（此记忆只保存汇总）；请向门店自己的记忆提问",
                    )
                ]
            )
        hits = searcher.retrieve(text, ctx.flt, k)
        _, total = ctx.source.sample_events(ctx.flt, 0)
        if not hits:
            return insufficient(
                [
                    say(
                        ctx.language,
                        "events matching the filters (none found); widen the time range or filters",
                        "符合条件的事件（一条也没有）；请放宽时间范围或条件",
                    )
                ]
            )
        events = [
            {
                "event_id": h.event_id,
                "score": round(safe_float(h.score) or 0.0, 4),
                "timestamp": h.timestamp,
                "event_type": h.event_type,
                "raw_ref": list(h.raw_ref),
            }
            for h in hits
        ]
        direct = [(h.event_id, "hit", min(1.0, max(0.0, safe_float(h.score) or 0.0))) for h in hits]
        n = max(total, len(hits))
        return Outcome(status="ok", result={"events": events}, n=n, evidence_count=n, direct=direct)

    def summarize(self, ctx: Context, result: Mapping[str, Any]) -> str:
        return self.templates[ctx.language]
