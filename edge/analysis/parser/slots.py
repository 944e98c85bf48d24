"""What a question says, read once: the slots of every extractor and the cues derived from them.

Owned by :mod:`edge.analysis.parser`; :func:`read_slots` is the first step of the rule parser
(:mod:`.core`). It runs the slot extractors of :mod:`.extractors` in their :data:`~.extractors.ORDER`
over one :class:`~.text.MaskedText` (ids, named codes, places, time, top-k, event types, measure
words, stored values, promotions, similar values, buckets, dimension words), derives the intent
cues (:mod:`.intents`) and the intent they name by themselves, resolves stored words of several
fields (:mod:`.valuekeys`) and returns them as one frozen :class:`Slots`. The stages that build the
plan read it and fill a :class:`Draft`: ``stage_intent`` -> ``stage_measure`` -> ``stage_fields``
-> ``stage_filters`` -> ``stage_words``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from edge.analysis.parser.accounting import OWN_DIMENSION, known_zh, zh_function_taken
from edge.analysis.parser.extractors import REGISTRY, Context
from edge.analysis.parser.intents import CORRELATION_FORM, CUES, THAN_BEFORE, cues
from edge.analysis.parser.lexicon import EN_FUNCTION
from edge.analysis.parser.refusal import Refusal
from edge.analysis.parser.result import AttributeMatch
from edge.analysis.parser.spelling import correct
from edge.analysis.parser.text import Hit, MaskedText, has_cjk, normalize
from edge.analysis.parser.timecal import TimeInfo
from edge.analysis.parser.valuekeys import TwoFields, resolve_fields
from edge.analysis.parser.vocabmatch import NEGATED, TypeHit, ValueHit

PEAK_SHIFT = re.compile(
    r"提前|推后|推迟|延后|往后推|往前推|变早|变晚|早了|晚了|前移|后移|往前|往后|挪|移动|变化|变了|"
    r"(?<![a-z])(?:earlier|later|sooner|mov(?:ed|ing|es?)|shift(?:ed|ing|s)?|pushed (?:back|forward)|brought forward|drift\w*)(?![a-z])"
)
MORE_LESS = re.compile(
    r"更(?:高|低|多|少|好|差|大|小|长|短|久|快|慢)|(?<![a-z])(?:higher|lower|more|less|better|worse|bigger|smaller|longer|shorter)(?![a-z])"
)
#: "A 比 B 人多": 比 with a word of more or less after it, read before the metric words are taken
#: (人多 is a footfall word too); not 比例 / 比率 / 比重 / 比较 / 比起
_BI_MORE = re.compile(r"比(?!例|率|重|较|起)[^比，。？?]{0,12}?(?:高|低|多|少|好|差|大|小|长|短|久|快|慢)")
#: words that rank products by themselves (a best seller is a product)
SELLERS = re.compile(r"畅销|热销|卖得最好|(?<![a-z])(?:best|top)[- ]?sell(?:ers?|ing)(?![a-z])")
#: best-selling said of something that is not a product (a day, a store, a salesperson) or counted
_SELLER_NOT_PRODUCT = re.compile(
    r"(?:best|top)[- ]?selling (?:day|week|month|hour|time|year|season|store|shop|branch|location)s?"
    r"|sales ?(?:person|people|rep)s?|staff|cashiers?|employees?|店员|员工|收银|门店|"
    r"how many (?:best|top)[- ]?sellers|多少(?:个|款|种)?畅销"
)


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
    cue: frozenset[str]  # the intent cues' names (:func:`.intents.cues`, adjusted)
    peak_shift: bool  # a peak hour moving earlier or later
    hint: str | None  # the intent strong cues name by themselves (:func:`_intent_hint`)
    two_fields: TwoFields | None  # a stored word of two fields nothing decides
    hinted: str | None  # "correlation" when the question's shape names it (越…越), else None
    buckets: tuple[str, ...]
    dim_hits: tuple[Hit, ...]
    dims: tuple[str, ...]  # dimension words, less a measure's own (店员差错率)
    understood: tuple[str, ...]  # what was read, as said in a refusal
    read_as: tuple[tuple[str, str], ...] = ()  # slips of typing read as words (:mod:`.spelling`)


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


def read_slots(question: str, lang: str, ctx: Context, force: Force | None) -> Slots:
    """The slots of ``question``; raises :class:`~.refusal.Refusal` for an empty question."""
    text, read_as = correct(normalize(question), ctx.vocab)
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
    pre_view = mt.view
    types: list[TypeHit] = run("event_types")
    metric_hits: list[Hit] = run("measures")
    read = tuple(dict.fromkeys(str(h.value) for h in metric_hits))
    metrics = read
    if force is not None and force.metrics:
        chosen = force.metrics if force.intent == "correlation" else force.metrics[:1]
        metrics = (*chosen, *(m for m in read if m not in chosen))
    values: list[ValueHit] = run("values")
    promo_hits: list[Hit] = run("promotions")
    post_view = mt.view
    cue, peak_shift = _cues(pre_view, post_view, text, metrics)
    hint = _intent_hint(cue, peak_shift, info, metrics, entities, bool(types))
    similar: list[ValueHit] = [] if hint in ("forecast", "retrieve") else _similar(mt, ctx)
    values = sorted(values + named + similar, key=lambda v: v.start)
    values, two_fields = resolve_fields(text, values, ctx.vocab, metrics, types, hint)
    buckets = tuple(dict.fromkeys(str(h.value) for h in run("buckets")))
    dim_hits: list[Hit] = run("dimensions")
    dims = list(dict.fromkeys(str(h.value) for h in dim_hits))
    if SELLERS.search(text) and "trend" not in cue and not _SELLER_NOT_PRODUCT.search(text):
        cue.add("top_rank")  # best-selling ranks ...
        if not dims and not buckets:
            dims = ["product_id"]  # ... the products, when nothing else is named ("our best sellers")
    for metric_name, own in OWN_DIMENSION.items():
        if own in dims and metric_name in metrics and not {"which", "breakdown_by", "top_rank"} & cue:
            dims.remove(own)  # 店员差错率, "customer mood": the measure's name, not a grouping
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
        hinted="correlation" if CORRELATION_FORM.search(text) else None,
        buckets=buckets,
        dim_hits=tuple(dim_hits),
        dims=tuple(dims),
        understood=_understood(lang, metrics, info, stores, entities, values, types),
        read_as=read_as,
    )


def _similar(mt: MaskedText, ctx: Context) -> list[ValueHit]:
    """Stored values read by similarity in what no extractor and no intent cue claimed (负相关 is
    a correlation's word, never the negative speech emotion); their spans are claimed."""
    shielded = mt.copy()
    for pattern in CUES.values():
        for m in pattern.finditer(shielded.view):
            shielded.consume(*m.span())
    hits: list[ValueHit] = REGISTRY["similar_values"].extract(shielded, ctx)
    hits = [h for h in hits if _whole_content(mt.text, h.start, h.end)]
    for h in hits:
        mt.consume(h.start, h.end)
    return hits


#: a word just before a phrase that asks by its field ("哪个货架区", "which shelf"): not one value
_ASKS_BY = re.compile(r"(?:哪个|哪些|哪|各个|各|每个|每|(?<![a-z])(?:which|each|every|per) )$")


#: particles, pronouns and verbs of direction: never the first or last character of a stored value's name
_PARTICLES = frozenset(
    "的地得了着过吗呢吧啊呀嘛么哦哈啦咯嗯是都也还就又再才在和与跟及或而并但对从到自至向往我你他她它这那其些请给来去把被"
)


def _whole_content(text: str, start: int, end: int) -> bool:
    """A phrase a similarity reading may take as a stored value: content of its own, not function
    words ("check", 特别高), not a fragment cut across a known word (气下 of 天气下, 品下单 of
    商品下单) and not the field a question asks by (哪个货架区)."""
    phrase = text[start:end]
    if _ASKS_BY.search(text[:start].rstrip()) or NEGATED.search(text[:start]):
        return False  # 哪个货架区 asks by the field; 不下雨, "no rain" name the other values
    if not has_cjk(phrase):
        return not all(w in EN_FUNCTION for w in re.findall(r"[a-z0-9']+", phrase))
    if all(zh_function_taken(phrase)) or phrase[0] in _PARTICLES or phrase[-1] in _PARTICLES:
        return False  # 特别高; 铁口过 of 从地铁口过来: a phrase does not begin or end on a particle
    for w in known_zh():
        i = text.find(w, max(0, start - len(w) + 1))
        while 0 <= i < end:
            inside = i <= start and end <= i + len(w)  # 入口 of 入口处 is whole
            if not inside and (i < start < i + len(w) or i < end < i + len(w)):
                return False
            i = text.find(w, i + 1)
    return True


_AROUND = re.compile(r"(?<![a-z])before and after(?![a-z])")


def _cues(pre_view: str, post_view: str, text: str, metrics: Sequence[str]) -> tuple[set[str], bool]:
    """The intent cues' names (:func:`.intents.cues` of the question before the measure words were
    claimed, a compare's read after the stored values were), and whether a peak hour moves."""
    cue = cues(pre_view)
    cue.discard("compare")
    if "breakdown" in cue and not CUES["breakdown"].search(post_view):
        cue.discard("breakdown")  # 占比 / share of was part of a metric's name (负面情绪占比)
    peak_shift = "peak_hour" in metrics and bool(PEAK_SHIFT.search(text))
    if peak_shift:
        # a peak "moving earlier or later" is the trend of peak_hour, not an hour comparison
        cue -= {"compare", "change", "pivot", "correlation"}
        cue.add("trend")
    if (
        CUES["compare"].search(post_view)
        or MORE_LESS.search(post_view)
        or _BI_MORE.search(pre_view)
        or _AROUND.search(text)  # "before and after November 1": its date was read as a range
    ) and not THAN_BEFORE.search(text):  # "longer than they used to": over time, not two groups
        cue.add("compare")
    return cue, peak_shift


#: cues that ask for a figure of the events, not the events themselves
_FIGURE_CUES = frozenset(
    {
        "aggregate",
        "top_rank",
        "which",
        "trend",
        "compare",
        "anomaly",
        "breakdown",
        "periodicity",
        "correlation",
    }
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
    if "periodicity" in cue:
        return "periodicity"
    if "anomaly" in cue:
        return "anomaly"
    if "breakdown" in cue:
        return "breakdown"
    return None


def _understood(
    lang: str,
    metrics: Sequence[str],
    info: TimeInfo,
    stores: Sequence[str],
    entities: Sequence[str],
    values: Sequence[ValueHit],
    types: Sequence[TypeHit],
) -> tuple[str, ...]:
    """What was read, one (zh, en)-labelled line per kind, as a refusal says it."""
    read = (
        ("指标", "metric", metrics),
        ("时间", "time", [r.label for r in info.ranges]),
        ("门店", "store", stores),
        ("对象", "entity", entities),
        ("属性", "attribute", [f"{v.key}={v.values[0]}" for v in values]),
        ("事件", "event", list(dict.fromkeys(t.event_type for t in types))),
    )
    return tuple(f"{zh if lang == 'zh' else en} {', '.join(items)}" for zh, en, items in read if items)
