"""The slot extractors of the rule parser, behind one small contract and registered by name.

Owned by :mod:`edge.analysis.parser`; run in :data:`ORDER` by :func:`.slots.read_slots` (the time
extractor before the measure words, so "下午" is a time and not a word of a measure; stored values
after the measure words, so 投诉 is the measure and not a value). Each claims spans of the shared
:class:`~.text.MaskedText` (what one claims, no later one reads again) and returns its slot; its
contract (:mod:`.extraction`) is checked by ``tests/test_parser_extractors.py``. What no extractor
claims is read by :mod:`.accounting`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from edge.analysis.parser.extraction import Context, Extractor
from edge.analysis.parser.intents import find_top_k
from edge.analysis.parser.lexicon import DIMENSIONS, METRICS, PROMOTION_VALUES, TIME_BUCKETS
from edge.analysis.parser.text import MaskedText
from edge.analysis.parser.timekinds import extract_time
from edge.analysis.parser.vocabmatch import (
    match_event_types,
    match_ids,
    match_named,
    match_place_stores,
    match_values,
    similar_values,
)
from edge.analysis.source import Vocabulary

REGISTRY: dict[str, Extractor] = {}


def register(name: str, slot: str, read: Callable[[MaskedText, Context], Any]) -> None:
    """Register the extractor ``name`` whose slot is what ``read(mt, ctx)`` claims and returns."""
    if name in REGISTRY:
        raise ValueError(f"slot extractor {name!r} registered twice")
    namespace = {"name": name, "slot": slot, "extract": lambda self, mt, ctx: read(mt, ctx)}
    REGISTRY[name] = type(f"{name.title().replace('_', '')}Extractor", (Extractor,), namespace)()


def _in_vocab(match: Callable[[MaskedText, Vocabulary], Any]) -> Callable[[MaskedText, Context], Any]:
    return lambda mt, ctx: match(mt, ctx.vocab)


register("ids", "(store ids, entity ids) named literally", _in_vocab(match_ids))
register(
    "named", "(zone/product value hits, store ids) named by a code (zone Z9, 7号店)", _in_vocab(match_named)
)
register("places", "store ids named by a place (the Xuhui store, 南京路店)", _in_vocab(match_place_stores))
register(
    "time",
    "TimeInfo: ranges, dates, hours, weekdays, pivots, horizons",
    lambda mt, ctx: extract_time(mt, ctx.now, ctx.vocab.timezone),
)
register("top_k", "the N of 前N / top N", lambda mt, ctx: find_top_k(mt))
# reads without claiming: a measure word (投诉, queues) may name an event type too; the accounting
# claims the type words the plan uses
register("event_types", "event types named (not consumed)", _in_vocab(match_event_types))
register("measures", "measure words (plan target_metric)", lambda mt, ctx: mt.find(METRICS))
register("values", "stored attribute values named literally or by a synonym", _in_vocab(match_values))
register("promotions", "promotion-day words", lambda mt, ctx: mt.find(PROMOTION_VALUES))
register(
    "similar_values",
    "stored values matched by the text encoder's similarity (with an encoder only)",
    lambda mt, ctx: (
        similar_values(mt, ctx.vocab, ctx.embed, ctx.similarity_threshold)
        if ctx.embed is not None and ctx.vocab.attributes
        else []
    ),
)
register("buckets", "time buckets (daily, weekly, 每小时)", lambda mt, ctx: mt.find(TIME_BUCKETS))
register("dimensions", "dimension words (zone, 品类, which store)", lambda mt, ctx: mt.find(DIMENSIONS))

#: the order the parser runs them in (each reads only what the earlier ones left)
ORDER: tuple[str, ...] = tuple(REGISTRY)
