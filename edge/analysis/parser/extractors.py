"""The slot extractors of the rule parser, behind one small contract and registered by name.

Owned by :mod:`edge.analysis.parser`; run in :data:`ORDER` by :func:`.slots.read_slots`
(the time extractor before the measure words, so "下午" is a time and not a word of a measure;
stored values after the measure words, so 投诉 is the measure and not a value). Each extractor
claims spans of the question through the shared :class:`~.text.MaskedText` (what one claims, no
later one reads again) and returns its slot. Its contract (:mod:`.extraction`) is checked for every
registered extractor by one test (``tests/test_parser_extractors.py``).

What no extractor claims is read by :mod:`.accounting` (intent cues, function words) and what is
left then is ``not_understood``.
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

REGISTRY: dict[str, Extractor] = {}


def register(cls: type[Extractor]) -> type[Extractor]:
    """Class decorator: one instance per name, like the operators' registry."""
    if cls.name in REGISTRY:
        raise ValueError(f"slot extractor {cls.name!r} registered twice")
    REGISTRY[cls.name] = cls()
    return cls


def _table(name: str, slot: str, table: Any) -> type[Extractor]:
    """An extractor that claims the longest matches of a word table (measures, buckets...)."""

    def extract(self: Extractor, mt: MaskedText, ctx: Context) -> Any:
        return mt.find(table)

    return type(
        f"{name.title().replace('_', '')}Extractor",
        (Extractor,),
        {"name": name, "slot": slot, "extract": extract},
    )


@register
class IdsExtractor(Extractor):
    name = "ids"
    slot = "(store ids, entity ids) named literally"

    def extract(self, mt: MaskedText, ctx: Context) -> Any:
        stores, entities = match_ids(mt, ctx.vocab)
        return (stores, entities)


@register
class NamedExtractor(Extractor):
    name = "named"
    slot = "(zone/product value hits, store ids) named by a code (zone Z9, 7号店)"

    def extract(self, mt: MaskedText, ctx: Context) -> Any:
        hits, stores = match_named(mt, ctx.vocab)
        return (hits, stores)


@register
class PlacesExtractor(Extractor):
    name = "places"
    slot = "store ids named by a place (the Xuhui store, 南京路店)"

    def extract(self, mt: MaskedText, ctx: Context) -> Any:
        return match_place_stores(mt, ctx.vocab)


@register
class TimeExtractor(Extractor):
    name = "time"
    slot = "TimeInfo: ranges, dates, hours, weekdays, pivots, horizons"

    def extract(self, mt: MaskedText, ctx: Context) -> Any:
        return extract_time(mt, ctx.now, ctx.vocab.timezone)


@register
class TopKExtractor(Extractor):
    name = "top_k"
    slot = "the N of 前N / top N"

    def extract(self, mt: MaskedText, ctx: Context) -> Any:
        return find_top_k(mt)


@register
class EventTypesExtractor(Extractor):
    """Reads without claiming: a measure word (投诉, queues) may name an event type too; the
    accounting claims the type words the plan uses."""

    name = "event_types"
    slot = "event types named (not consumed)"

    def extract(self, mt: MaskedText, ctx: Context) -> Any:
        return match_event_types(mt, ctx.vocab)


register(_table("measures", "measure words (plan target_metric)", METRICS))


@register
class ValuesExtractor(Extractor):
    name = "values"
    slot = "stored attribute values named literally or by a synonym"

    def extract(self, mt: MaskedText, ctx: Context) -> Any:
        return match_values(mt, ctx.vocab)


register(_table("promotions", "promotion-day words", PROMOTION_VALUES))


@register
class SimilarValuesExtractor(Extractor):
    name = "similar_values"
    slot = "stored values matched by the text encoder's similarity (with an encoder only)"

    def extract(self, mt: MaskedText, ctx: Context) -> Any:
        if ctx.embed is None or not ctx.vocab.attributes:
            return []
        return similar_values(mt, ctx.vocab, ctx.embed, ctx.similarity_threshold)


register(_table("buckets", "time buckets (daily, weekly, 每小时)", TIME_BUCKETS))
register(_table("dimensions", "dimension words (zone, 品类, which store)", DIMENSIONS))

#: the order the parser runs them in (each reads only what the earlier ones left)
ORDER: tuple[str, ...] = tuple(REGISTRY)

Run = Callable[[str, MaskedText], Any]


def runner(ctx: Context) -> Run:
    """``run(name, mt)``: the registered extractor ``name`` over ``mt`` in ``ctx``."""

    def run(name: str, mt: MaskedText) -> Any:
        return REGISTRY[name].extract(mt, ctx)

    return run
