"""What a question says, read once: the slots of every extractor and the cues derived from them.

:func:`read_slots`, the rule parser's first step (:mod:`.core`), runs the slot extractors of
:data:`REGISTRY` in order over one :class:`~.text.MaskedText`, derives the intent cues and the intent
they name by themselves, and returns a frozen :class:`Slots`; the stages fill a :class:`Draft`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from edge.analysis.parser import lexicon as lx
from edge.analysis.parser import vocabmatch as vm
from edge.analysis.parser.accounting import OWN_DIMENSION, known_zh, zh_taken
from edge.analysis.parser.extraction import Context, Reader
from edge.analysis.parser.refusal import PATTERNS, Refusal
from edge.analysis.parser.result import AttributeMatch
from edge.analysis.parser.spelling import correct
from edge.analysis.parser.text import Hit, MaskedText, has_cjk, normalize, overlaps, parse_number
from edge.analysis.parser.timecal import TimeInfo
from edge.analysis.parser.timekinds import extract_time
from edge.analysis.parser.valuekeys import TwoFields, resolve_fields
from edge.analysis.parser.vocabmatch import NEGATED, TypeHit, ValueHit
from edge.analysis.source import Vocabulary

#: question shapes (``FORMS`` and ``SHAPES`` of ``lexicon.toml``, whose comments say what each is)
CORRELATION_FORM = lx.FORMS["correlation_form"]
WILL_IT = lx.FORMS["will_it"]
CONDITIONAL_MORE = lx.FORMS["conditional_more"]
THAN_BEFORE = lx.FORMS["than_before"]
#: between "than it was" and the period that is the other side ("than it was in October")
_THAN_GAP = re.compile(r"\s*(?:(?:in|on|during|at|for)\s+)?(?:the\s+)?")
QUESTION_TAG = lx.FORMS["question_tag"]
PEAK_SHIFT = lx.SHAPES["peak_shift"]
MORE_LESS = lx.SHAPES["more_less"]
SELLERS = lx.SHAPES["sellers"]
#: "which" just before a word: the field it names is asked (哪个员工, "which staff member")
WHICH_BEFORE = PATTERNS["which_before"]
WHO = re.compile(r"谁|(?<![a-z])who(?![a-z])")
#: between a field's word and the measure it names (员工失误率, "staff's error rate")
NAME_GAP = re.compile(r"\s?(?:的|'s)?\s?")
#: the word just before a measure that a ranking is by ("by revenue", 按销售额)
BY_MEASURE = re.compile(r"(?:(?<![a-z])(?:by|in terms of|based on)\s|[按以用]\s?)$")


def find_top_k(mt: MaskedText) -> int | None:
    """The N of 前N / top N / 最高的N个 (consumed with its 前 / top / which and its unit), or None."""
    for pattern in lx.TOP_K:
        m = pattern.search(mt.view)
        n = parse_number(m.group("n")) if m else None
        if m and n is not None and 1 <= n <= 1000:
            start, end = m.span("n")
            pre = re.search(r"(?:排名?)?前\s?$|top[- ]?$|which $|哪$", mt.view[:start])
            post = re.match(r"\s?(?:个|名|家|款|种|位|大|样)", mt.view[end:])
            mt.consume(pre.start() if pre else start, end + (post.end() if post else 0))
            return n
    return None


def _in_vocab(match: Callable[[MaskedText, Vocabulary], Any]) -> Callable[[MaskedText, Context], Any]:
    return lambda mt, ctx: match(mt, ctx.vocab)


def _similar_values(mt: MaskedText, ctx: Context) -> list[ValueHit]:
    if ctx.embed is None or not ctx.vocab.attributes:
        return []
    return vm.similar_values(mt, ctx.vocab, ctx.embed, ctx.similarity_threshold)


#: the slot extractors in the order they run, each reading only what the earlier ones left: time
#: before the measure words (下午 is a time), stored values after them (投诉 is the measure)
REGISTRY: dict[str, Reader] = {
    r.name: r
    for r in (
        Reader("ids", "(store ids, entity ids) named literally", _in_vocab(vm.match_ids)),
        Reader("named", "(zone/product hits, store ids) named by a code (7号店)", _in_vocab(vm.match_named)),
        Reader("places", "store ids named by a place (南京路店)", _in_vocab(vm.match_place_stores)),
        Reader("time", "TimeInfo", lambda mt, ctx: extract_time(mt, ctx.now, ctx.vocab.timezone)),
        Reader("top_k", "the N of 前N / top N", lambda mt, ctx: find_top_k(mt)),
        Reader("about", "stored values a word of about names (关于排队)", _in_vocab(vm.match_about)),
        # reads without claiming: a measure word (投诉, queues) may name an event type too
        Reader("event_types", "event types named (not consumed)", _in_vocab(vm.match_event_types)),
        Reader("measures", "measure words", lambda mt, ctx: mt.find(lx.METRICS)),
        Reader("values", "stored values named literally or by a synonym", _in_vocab(vm.match_values)),
        Reader("promotions", "promotion-day words", lambda mt, ctx: mt.find(lx.PROMOTION_VALUES)),
        Reader("similar_values", "stored values by the text encoder's similarity", _similar_values),
        Reader("buckets", "time buckets (daily, 每小时)", lambda mt, ctx: mt.find(lx.TIME_BUCKETS)),
        Reader("dimensions", "dimension words (zone, 品类)", lambda mt, ctx: mt.find(lx.DIMENSIONS)),
    )
}
ORDER: tuple[str, ...] = tuple(REGISTRY)


@dataclass(frozen=True)
class Force:
    """What the exemplar classifier decided for the rules to build on."""

    intent: str | None
    metrics: tuple[str, ...]  # target (and second) metric; () keeps the rules' metric words


@dataclass(frozen=True)
class Slots:
    """Everything read from the question before a plan is built (the stages only read it)."""

    lang: str  # "zh" | "en"
    text: str  # the normalised question
    mt: MaskedText  # with every extractor's spans claimed
    stores: tuple[str, ...]
    entities: tuple[str, ...]
    info: TimeInfo
    top_n: int | None
    types: tuple[TypeHit, ...]
    metric_hits: tuple[Hit, ...]
    read_metrics: tuple[str, ...]  # the metric words read
    metrics: tuple[str, ...]  # the measures: the classifier's first when forced, then the words'
    values: tuple[ValueHit, ...]  # stored values, each of one field, in question order
    promo_hits: tuple[Hit, ...]
    post_view: str  # the question left once stored values and promotions were claimed
    cue: frozenset[str]  # the intent cues' names (:func:`_cues`)
    peak_shift: bool  # a peak hour moving earlier or later
    hint: str | None  # the intent strong cues name by themselves (:func:`_intent_hint`)
    two_fields: TwoFields | None  # a stored word of two fields nothing decides
    buckets: tuple[str, ...]
    bucket_hits: tuple[Hit, ...]  # the words of the buckets (named when the plan uses none)
    each_store: re.Match[str] | None  # each of several stores on its own ("store by store", 分店看)
    dim_hits: tuple[Hit, ...]
    dims: tuple[str, ...]  # dimension words, less a measure's own (店员差错率)
    read_as: tuple[tuple[str, str], ...] = ()  # slips of typing read as words (:mod:`.spelling`)
    held_stores: int = 1  # how many stores the memory holds (a hub's: several)
    told: tuple[tuple[int, int], ...] = ()  # stored values inside an event's name (named, unused)

    @property
    def hinted(self) -> str | None:
        """The intent the question's shape names (越…越: correlation), else None."""
        return "correlation" if CORRELATION_FORM.search(self.text) else None

    @property
    def understood(self) -> tuple[str, ...]:
        """What was read, one (zh, en)-labelled line per kind, as a refusal says it."""
        read = (
            ("指标", "metric", self.metrics),
            ("时间", "time", [r.label for r in self.info.ranges]),
            ("门店", "store", self.stores),
            ("对象", "entity", self.entities),
            ("属性", "attribute", list(dict.fromkeys(f"{v.key}={v.values[0]}" for v in self.values))),
            ("事件", "event", list(dict.fromkeys(t.event_type for t in self.types))),
        )
        return tuple(f"{zh if self.lang == 'zh' else en} {', '.join(i)}" for zh, en, i in read if i)


@dataclass
class Draft:
    """The plan being built: what each stage leaves for the next."""

    intent: str
    plan: dict[str, Any]
    entities: list[str]  # ids the plan filters on (a co-occurrence's pair takes its own)
    compare: dict[str, Any] | None = None
    compare_from: str | None = None  # what the compare is by: a dimension, or "period"
    used_values: set[int] = field(default_factory=set)  # indexes of values the compare/pair use
    weak: bool = False  # the intent came from no cue at all (a metric word alone)
    metric: str | None = None
    counted: str | None = None  # the rate whose events are counted instead ("how many mistakes")
    filters: dict[str, Any] = field(default_factory=dict)
    matches: list[AttributeMatch] = field(default_factory=list)
    read_as: list[tuple[str, str]] = field(default_factory=list)  # words read as a default, said
    claimed: list[tuple[int, int]] = field(default_factory=list)  # words a stage used (excluding)


def read_slots(question: str, lang: str, ctx: Context, force: Force | None) -> Slots:
    """The slots of ``question``; raises :class:`~.refusal.Refusal` for an empty question."""
    text, read_as = correct(normalize(question).replace("甚麼", "什么").translate(lx.TRADITIONAL), ctx.vocab)
    if not re.search(r"[a-z\u3400-\u9fff]", text):
        raise Refusal("empty", final=True)
    mt = MaskedText(text)

    def run(name: str) -> Any:
        return REGISTRY[name].extract(mt, ctx)

    stores, entities = run("ids")
    named, named_stores = run("named")
    stores = list(dict.fromkeys(stores + named_stores + run("places")))
    info: TimeInfo = run("time")
    top_n: int | None = run("top_k")
    about: list[ValueHit] = run("about")
    pre_view = mt.view
    types: list[TypeHit] = run("event_types")
    metric_hits: list[Hit] = run("measures")
    if SELLERS.search(text) and any(BY_MEASURE.search(text[: h.start]) for h in metric_hits):
        # "best-selling category by revenue", 按销售额算卖得最好: the measure named ranks, the
        # best-selling word only says best (its words are the sellers cue's)
        sold = [h for h in metric_hits if SELLERS.search(text[h.start : h.end])]
        metric_hits = (
            [h for h in metric_hits if h not in sold] if len(sold) < len(metric_hits) else metric_hits
        )
    read = tuple(dict.fromkeys(str(h.value) for h in metric_hits))
    chosen = (force.metrics if force.intent == "correlation" else force.metrics[:1]) if force else ()
    metrics = (*chosen, *(m for m in read if m not in chosen))
    values: list[ValueHit] = run("values")
    promo_hits: list[Hit] = run("promotions")
    post_view = mt.view
    cue, peak_shift = _cues(pre_view, post_view, text, metrics)
    if info.pivot_dates and THAN_BEFORE.search(text):
        cue.add("change")  # "shorter since 1 December than before": the days after it against those before
    elif (than := THAN_BEFORE.search(text)) and any(
        _THAN_GAP.fullmatch(text, than.end(), r.start) for r in info.ranges
    ):
        cue.add("compare")  # "lower than it was in October": the period is the other side
    hint = _intent_hint(cue, peak_shift, info, metrics, entities, bool(types))
    similar: list[ValueHit] = [] if hint in ("forecast", "retrieve") else _similar(mt, ctx)
    values = _headed(sorted(values + about + named + similar, key=lambda v: v.start), text)
    values, two_fields = resolve_fields(text, values, ctx.vocab, metrics, types, hint)
    # "since the rain on Nov 3": a stored value inside the clause that names a date's event is
    # named (the rain day was meant, or rainy days since then: not told), never a filter
    told = [v for v in values if any(a <= v.start and v.end <= b for a, b in info.told)]
    values = [v for v in values if v not in told]
    bucket_hits: list[Hit] = run("buckets")
    buckets = tuple(dict.fromkeys(str(h.value) for h in bucket_hits))
    dim_hits: list[Hit] = run("dimensions")
    dims = list(dict.fromkeys(str(h.value) for h in dim_hits))
    if SELLERS.search(text) and "trend" not in cue and not lx.SHAPES["seller_not_product"].search(text):
        cue.add("top_rank")  # best-selling ranks ...
        if not dims and not buckets:
            dims = ["product_id"]  # ... the products, when nothing else is named ("our best sellers")
    if "day_of_week" in dims and any(h.value == "date" and lx.CUES["which"].match(h.text) for h in dim_hits):
        dims.remove("date")  # 按星期几拆分…哪天贡献最大: the day asked is a weekday
    for metric_name, own in OWN_DIMENSION.items():
        hits = [h for h in dim_hits if h.value == own]
        asked = [
            h
            for h in hits
            if lx.SHAPES["by_word"].search(text[: h.start]) or WHICH_BEFORE.search(text[: h.start])
        ]
        asked += [h for h in hits if own == "staff_id" and WHO.search(text)]  # 是谁: a person, of the staff
        named = [
            h
            for h in hits
            if any(m.start >= h.end and NAME_GAP.fullmatch(text[h.end : m.start]) for m in metric_hits)
        ]
        ranked = "top_rank" in cue and dims == [own]  # 上个月店员出错率排个名: the staff ranked
        if (
            own in dims
            and metric_name in metrics
            and not asked
            and not ranked
            and (named or not {"which", "top_rank"} & cue)
        ):
            dims.remove(own)  # 店员差错率, "customer mood", 哪个门店的员工失误率: the measure's name
    return Slots(
        lang=lang,
        text=text,
        mt=mt,
        stores=tuple(stores),
        entities=tuple(entities),
        info=info,
        top_n=top_n,
        types=tuple(types),
        metric_hits=tuple(metric_hits),
        read_metrics=read,
        metrics=metrics,
        values=tuple(values),
        promo_hits=tuple(promo_hits),
        post_view=post_view,
        cue=frozenset(cue),
        peak_shift=peak_shift,
        hint=hint,
        two_fields=two_fields,
        buckets=buckets,
        bucket_hits=tuple(bucket_hits),
        each_store=PATTERNS["each_store"].search(text) if len(ctx.vocab.store_ids) > 1 else None,
        dim_hits=tuple(dim_hits),
        dims=tuple(dims),
        read_as=read_as,
        held_stores=len(ctx.vocab.store_ids),
        told=tuple((v.start, v.end) for v in told),
    )


def _headed(values: list[ValueHit], text: str) -> list[ValueHit]:
    """``values`` less a word of a field right after one of its values that it holds (A区货架: 货架,
    every shelf, is the head noun of shelf A, not the other shelves too)."""
    out: list[ValueHit] = []
    for v in values:
        prev = out[-1] if out else None
        between = text[prev.end : v.start].strip(" 的") if prev else "-"
        if prev and not between and prev.key == v.key and set(prev.values) < set(v.values):
            continue
        out.append(v)
    return out


def _similar(mt: MaskedText, ctx: Context) -> list[ValueHit]:
    """Stored values read by similarity in what no extractor and no intent cue claimed (负相关 is
    a correlation's word, never the negative speech emotion); their spans are claimed."""
    shielded = mt.copy()
    for pattern in lx.CUES.values():
        for m in pattern.finditer(shielded.view):
            shielded.consume(*m.span())
    hits: list[ValueHit] = REGISTRY["similar_values"].extract(shielded, ctx)
    hits = [h for h in hits if _whole_content(mt.text, h.start, h.end)]
    for h in hits:
        mt.consume(h.start, h.end)
    return hits


def _whole_content(text: str, start: int, end: int) -> bool:
    """A phrase a similarity reading may take as a stored value: content of its own, not function
    words ("check", 特别高), not a fragment cut across a known word (气下 of 天气下, 品下单 of
    商品下单) and not the field a question asks by (哪个货架区)."""
    phrase = text[start:end]
    if lx.SHAPES["asks_by"].search(text[:start].rstrip()) or NEGATED.search(text[:start]):
        return False  # 哪个货架区 asks by the field; 不下雨, "no rain" name the other values
    if not has_cjk(phrase):
        return not all(w in lx.EN_FUNCTION for w in re.findall(r"[a-z0-9']+", phrase))
    if all(zh_taken(phrase)) or phrase[0] in lx.VALUE_EDGES or phrase[-1] in lx.VALUE_EDGES:
        return False  # 特别高; 铁口过 of 从地铁口过来: a phrase does not begin or end on a particle
    for w in known_zh():
        for i in overlaps(text, w, start, end):
            inside = i <= start and end <= i + len(w)  # 入口 of 入口处 is whole
            if not inside and (i < start < i + len(w) or i < end < i + len(w)):
                return False
    return True


_KINDS_OF_DOES = frozenset({"periodicity", "co_occurrence", "correlation", "anomaly"})


def _cues(pre_view: str, post_view: str, text: str, metrics: Sequence[str]) -> tuple[set[str], bool]:
    """The intent cues' names (read before the measure words were claimed; a compare's, after the
    stored values were) and whether a peak hour moves."""
    cue = {name for name, p in lx.CUES.items() if p.search(pre_view) and name != "compare"}
    if CORRELATION_FORM.search(pre_view):
        cue.add("correlation")
    if WILL_IT.search(pre_view) and not CONDITIONAL_MORE.search(pre_view) and not cue & _KINDS_OF_DOES:
        cue.add("forecast")  # 会不会 asks "will", unless it compares or asks "does" (repeat weekly?)
    if "breakdown" in cue and not lx.CUES["breakdown"].search(post_view):
        cue.discard("breakdown")  # 占比 / share of was part of a metric's name (负面情绪占比)
    peak_shift = "peak_hour" in metrics and bool(PEAK_SHIFT.search(text))
    if peak_shift:
        # a peak "moving earlier or later" is the trend of peak_hour, not an hour comparison
        cue -= {"compare", "change", "pivot", "correlation"}
        cue.add("trend")
    if (
        lx.CUES["compare"].search(post_view)
        or MORE_LESS.search(post_view)
        or lx.SHAPES["bi_more"].search(pre_view)
        or lx.SHAPES["measure_more"].search(pre_view)
        or lx.SHAPES["around"].search(text)
    ) and not THAN_BEFORE.search(text):  # "longer than they used to": over time, not two groups
        cue.add("compare")
    return cue, peak_shift


#: cues that ask for a figure of the events, not the events themselves
_FIGURE_CUES = frozenset(
    "aggregate top_rank which trend compare anomaly breakdown periodicity correlation".split()
)


def _intent_hint(
    cue: set[str],
    peak_shift: bool,
    info: TimeInfo,
    metrics: Sequence[str],
    entities: Sequence[str],
    events: bool,
) -> str | None:
    """The intents decided by strong cues alone; None leaves it to what was compared/ranked."""
    if peak_shift and "forecast" not in cue:
        return "trend"  # the peak hour's course
    if "forecast" in cue or info.horizon:
        return "forecast"
    # "show me every complaint customer_123 made": a person's events are listed, not counted; so are
    # the events a retrieval verb names with no word of a figure ("pull up the complaints about X")
    figure = bool(cue & _FIGURE_CUES)
    if "retrieve_media" in cue or (
        "retrieve_verb" in cue and (entities or not figure and (events or not metrics))
    ):
        return "retrieve"
    if ("correlation" in cue or "conditional" in cue) and len(metrics) >= 2:
        return "correlation"  # two measures "correlated", "moving together": not events paired
    if "co_occurrence" in cue:
        return "co_occurrence"
    pivoted = "pivot" in cue or info.window_days or any(r.kind == "since" for r in info.ranges)
    if info.pivot_dates and ("change" in cue or "compare" in cue) and pivoted:
        return "compare_periods"
    if "correlation" in cue:
        return "correlation" if len(metrics) >= 2 else "correlation_single"
    return next((c for c in ("periodicity", "anomaly", "breakdown") if c in cue), None)
