"""The rule-based bilingual question parser: a zh/en question becomes a schema-valid plan.

Owned by :mod:`edge.analysis.parser` (re-exported as :func:`edge.analysis.parser.parse_question`);
called by ``adamm ask``, the hub's ask and :class:`edge.llm.LLMPlanParser` (as its fallback).
Stages, each reading only what earlier stages left: ids -> time expressions -> top-k count ->
event types -> metric words -> stored values (literal, synonym, text-encoder similarity) ->
time buckets -> dimension words; then intent cues decide the plan's shape. A question with no
understood intent or metric is ``unsupported`` with an explanation; the parser never guesses.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from edge.analysis import labels
from edge.analysis.metrics import METRIC_EVENT_TYPES
from edge.analysis.parser import pairs
from edge.analysis.parser.accounting import residual
from edge.analysis.parser.exemplars import Guess, classify
from edge.analysis.parser.extractors import Context, runner
from edge.analysis.parser.intents import CORRELATION_FORM, CUES, THAN_BEFORE, WILL_IT, cues
from edge.analysis.parser.pairs import CO_WINDOW, CONJ, METRIC_ITEM, co_items, co_window
from edge.analysis.parser.refusal import unsupported
from edge.analysis.parser.result import AttributeMatch, ParseResult
from edge.analysis.parser.text import Hit, MaskedText, has_cjk, normalize
from edge.analysis.parser.timeexpr import TimeInfo, pivot_periods
from edge.analysis.parser.valuekeys import resolve_fields, two_fields_reason
from edge.analysis.parser.vocabmatch import (
    Embed,
    TypeHit,
    ValueHit,
)
from edge.analysis.plan import plan_errors
from edge.analysis.source import Vocabulary

logger = logging.getLogger(__name__)

#: stats keys that are plan dimensions too (compare / group by them directly)
_KEY_DIMENSIONS = {
    "weather",
    "zone",
    "product_category",
    "product_id",
    "staff_id",
    "promotion",
    "speech_emotion",
    "source",
    "event_type",
    "store_id",
}
_BUCKET_DIM = {"day": "date", "week": "week", "month": "month", "hour": "hour"}
_OUT_OF_DOMAIN = re.compile(
    r"股票|股价|基金|彩票|写一首|作诗|写诗|讲个笑话|笑话|翻译|天气预报|"
    r"(?<![a-z])(?:poem|poetry|joke|stock price|stock market|translate|weather forecast|write me|bitcoin|recipe)(?![a-z])"
)
_FORECAST_SUBJECT = re.compile(
    r"趋势|库存|备.{0,3}货|进货|订货|补货|预测|(?<![a-z])(?:trend|stock|inventory|restock|order(?:ing)? more|forecast|predict\w*)(?![a-z])"
)
_TENDENCY = re.compile(
    r"倾向|偏向|更常|更爱|喜欢在|习惯|更晚|更早|(?<![a-z])(?:tend|prefer|later|earlier|habit)"
)
#: words that rank products by themselves (a best seller is a product)
_SELLERS = re.compile(r"畅销|热销|卖得最好|(?<![a-z])(?:best|top)[- ]?sell(?:ers?|ing)(?![a-z])")
#: best-selling said of something that is not a product (a day, a store, a salesperson) or counted
_SELLER_NOT_PRODUCT = re.compile(
    r"(?:best|top)[- ]?selling (?:day|week|month|hour|time|year|season|store|shop|branch|location)s?"
    r"|sales ?(?:person|people|rep)s?|staff|cashiers?|employees?|店员|员工|收银|门店|"
    r"how many (?:best|top)[- ]?sellers|多少(?:个|款|种)?畅销"
)
_PEAK_SHIFT = re.compile(
    r"提前|推后|推迟|延后|往后推|往前推|变早|变晚|早了|晚了|前移|后移|往前|往后|挪|移动|变化|变了|"
    r"(?<![a-z])(?:earlier|later|sooner|mov(?:ed|ing|es?)|shift(?:ed|ing|s)?|pushed (?:back|forward)|brought forward|drift\w*)(?![a-z])"
)
_MORE_LESS = re.compile(
    r"更(?:高|低|多|少|好|差|大|小|长|短|久|快|慢)|(?<![a-z])(?:higher|lower|more|less|better|worse|bigger|smaller|longer|shorter)(?![a-z])"
)
#: "A 比 B 人多": 比 with a word of more or less after it, read before the metric words are taken
#: (人多 is a footfall word too); not 比例 / 比率 / 比重 / 比较 / 比起
_BI_MORE = re.compile(r"比(?!例|率|重|较|起)[^比，。？?]{0,12}?(?:高|低|多|少|好|差|大|小|长|短|久|快|慢)")
#: the largest bucket that still gives a series of at least this many points is chosen
_MIN_BUCKETS = 8
_BUCKET_DAYS = (("month", 365.25 / 12), ("week", 7.0), ("day", 1.0), ("hour", 1.0 / 24))
_ANOMALY_DAYS = re.compile(r"日子|哪几天|哪天|哪些天|(?<![a-z])days?(?![a-z])")
#: the dimension a measure's own name mentions (店员差错率, "negative mood"): not a grouping
_OWN_DIMENSION = {"staff_error_rate": "staff_id", "negative_emotion_rate": "speech_emotion"}
#: "which days": asks for days, so only a plan that answers day by day uses it
_WHICH_DAYS = re.compile(
    r"哪几天|哪天|哪些天|哪一天|哪些日子|(?<![a-z])(?:which|what) (?:days?|dates?)(?![a-z])"
)
_DAYS = re.compile(r"日子|(?<![a-z])days?(?![a-z])")
#: which way an outlier went ("abnormally low"): the anomaly operator reports each outlier's side
_OUTLIER_SIDE = re.compile(
    r"少|多|偏(?:高|低|多|少)|(?<![a-z])(?:low|high|up|down|dip(?:s|ped)?|drops?|dropped|jumps?|jumped)(?![a-z])"
)
_RETRIEVE_STRIP = re.compile(
    r"^(?:请|帮我|麻烦)?(?:找一下|找出|找找|查找|搜索|搜一下|调出|调取|给我看|找|查一下|查)|视频|录像|片段|画面|监控|截图|录音"
    r"|(?<![a-z])(?:show me|find me|find|search for|search|look up|get me|pull up|any|clips?|footage|videos?|recordings?|snapshots?)(?![a-z])"
)

#: every cue the rules read: claimed words when the residual is taken (:mod:`.accounting`)
_CUE_PATTERNS = (
    *CUES.values(),
    CORRELATION_FORM,
    WILL_IT,
    _PEAK_SHIFT,
    _TENDENCY,
    CONJ,
    _SELLERS,
    _MORE_LESS,
    _DAYS,
    CO_WINDOW,
    _FORECAST_SUBJECT,
)


#: the events a rate counts (its numerator): asked "how many", the count of these is answered
_COUNT_OF: dict[str, tuple[str, tuple[str, ...]]] = {
    "staff_error_rate": ("event_type", ("staff_error",)),
    "negative_emotion_rate": ("speech_emotion", ("negative", "angry")),
}
_COUNT_ASKED = re.compile(
    r"多少次|几次|多少起|多少个|多少回|几回|(?<![a-z])(?:how many|number of|count of|how often)(?![a-z])"
)
_RATE_ASKED = re.compile(r"率|比例|比率|占比|(?<![a-z])(?:rate|share|percent\w*|proportion|ratio)(?![a-z])")


def _unique(items: list[Any]) -> list[Any]:
    out: list[Any] = []
    for x in items:
        if x not in out:
            out.append(x)
    return out


def _time_range(info: TimeInfo) -> dict[str, str] | None:
    if not info.ranges:
        return None
    first = dict(info.ranges[0].time_range)
    if info.ranges[0].kind in ("since", "until"):
        for r in info.ranges[1:]:
            if r.kind in ("since", "until"):
                for k, v in r.time_range.items():
                    first.setdefault(k, v)
    return first


def _semantic_query(question_norm: str, info: TimeInfo) -> str | None:
    """The descriptive rest of a retrieval question: no time words, verbs of finding, media words."""
    text = question_norm
    for label in (
        [r.label for r in info.ranges] + [h.label for h in info.hours] + [d.label for d in info.days]
    ):
        text = re.sub(
            r"(?:(?<![a-z])(?:on|in|at|during|from|since|over|for|of)(?: the)? )?" + re.escape(label),
            " ",
            text,
        )
    text = _RETRIEVE_STRIP.sub(" ", text)
    text = re.sub(r"[?？!！。.,，、]+", " ", text)
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r"^(?:(?:of|from|with|showing|where|that|the)\s+)+", "", text)
    text = re.sub(r"(?:\s+(?:on|in|at|the|of|during))+$", "", text)
    text = re.sub(r"^(?:一下|下|的)+|(?:的)+$", "", text)
    text = re.sub(r"\s+", " ", text).strip(" 的")
    return text or None


@dataclass(frozen=True)
class _Force:
    """What the exemplar classifier decided for the rules to build on."""

    intent: str | None
    metrics: tuple[str, ...]  # target (and second) metric; () keeps the rules' metric words


@dataclass(frozen=True)
class _Rules:
    result: ParseResult
    final: bool  # empty or out-of-domain: nothing to classify
    metrics: tuple[str, ...]  # the metric words the rules read
    weak: bool  # the intent came from no cue at all (a metric word alone)
    #: the intent the question's very shape names (only ``correlation``: :data:`CORRELATION_FORM`),
    #: None otherwise
    hinted: str | None = None


def parse_question(
    question: str,
    vocab: Vocabulary,
    now: datetime,
    *,
    embed: Embed | None = None,
    similarity_threshold: float = 0.55,
) -> ParseResult:
    """Turn a zh/en question into a plan valid under ``plan.schema.json``, or ``unsupported``.

    ``now`` anchors relative times (naive = store-local); ``vocab`` supplies the store's own
    words; ``embed`` (unit-norm text vectors) enables matching stored values by similarity at or
    above ``similarity_threshold`` cosine, and the exemplar classifier (:mod:`.exemplars`) for
    the intent and the metric: where it agrees with the rules, or the rules found nothing and it
    is confident, or it is confident and the rules only guessed, its labels are used (the rules
    still fill every slot); where the rules found nothing and it is unsure, the question is
    ``unsupported`` with a request to rephrase. Without ``embed`` the rules alone decide.
    """
    rules = _parse_rules(question, vocab, now, embed, similarity_threshold, None)
    if embed is None or rules.final:
        return rules.result
    guess = classify(question, embed)
    if guess is None:
        return rules.result
    return _combine(question, vocab, now, embed, similarity_threshold, rules, guess)


def _combine(
    question: str,
    vocab: Vocabulary,
    now: datetime,
    embed: Embed,
    threshold: float,
    rules: _Rules,
    guess: Guess,
) -> ParseResult:
    res = rules.result
    lang = res.language
    r_intent = res.plan.get("intent") if res.status == "ok" else None
    r_metric = res.plan.get("target_metric") if res.status == "ok" else None
    logger.debug("exemplar guess for %r: %s (rules: %s %s)", question, guess, r_intent, r_metric)
    g_metrics = tuple(m for m in (guess.target_metric, guess.second_metric) if m)
    if r_intent is not None and not rules.weak:
        # the rules read a cue: the classifier overrides only a metric they did not read in words
        if guess.intent == r_intent and guess.metric_confident and not rules.metrics and g_metrics:
            if r_metric != guess.target_metric:
                forced = _parse_rules(question, vocab, now, embed, threshold, _Force(r_intent, g_metrics))
                if forced.result.status == "ok":
                    return forced.result
        return res
    if (
        r_intent is not None
        and guess.intent == r_intent
        and (r_metric == guess.target_metric or not g_metrics)
    ):
        return res  # a weak rule reading that the classifier confirms
    if r_intent is None and rules.hinted is not None and guess.intent != rules.hinted:
        # the question's shape names its kind ("越 X 越 Y") and the rules could not build it: an
        # answer of another kind would be a number for a question nobody asked
        return res
    if guess.intent_confident:
        metrics = rules.metrics or (g_metrics if guess.metric_confident else ())
        forced = _parse_rules(question, vocab, now, embed, threshold, _Force(guess.intent, metrics))
        if forced.result.status == "ok":
            return forced.result
    if r_intent is not None or (res.not_understood and res.plan):
        return res  # a plain "metric + when" reading, or words no reading uses: nothing better
    return _rephrase(lang, question, res)


def _rephrase(lang: str, question: str, res: ParseResult) -> ParseResult:
    logger.info("question %r: neither the rules nor the examples are sure; asking to rephrase", question)
    if lang == "zh":
        text = (
            "我不确定这个问题要问什么，请换个说法再问一次，"
            "说清楚要看的指标（如客流、销售额、客单价）和问题类型（多少、趋势、对比、异常、排名……），"
            "例如“过去三个月客单价的趋势”。"
        )
    else:
        text = (
            "I am not sure what this question asks; please rephrase it, naming the metric "
            "(footfall, revenue, average order value...) and the kind of answer (how much, trend, "
            'comparison, anomalies, ranking...), e.g. "average order value trend over the last 3 months".'
        )
    if res.status != "ok" and res.explanation:
        text = f"{text} {res.explanation}" if lang == "en" else f"{text}{res.explanation}"
    return ParseResult(
        plan={}, status="unsupported", explanation=text, language=lang, not_understood=res.not_understood
    )


def _parse_rules(
    question: str,
    vocab: Vocabulary,
    now: datetime,
    embed: Embed | None,
    similarity_threshold: float,
    force: _Force | None,
) -> _Rules:
    """The rule parser; ``force`` sets the intent and metrics the classifier decided."""
    meta: dict[str, Any] = {}
    res = _rules_plan(question, vocab, now, embed, similarity_threshold, force, meta)
    mt = meta.get("masked")
    if res.status != "ok" and not res.not_understood and isinstance(mt, MaskedText):
        # refused before a plan was built: still name the words nothing could use
        words = residual(mt, _CUE_PATTERNS, {})
        if words:
            res = dataclasses.replace(res, not_understood=tuple(words))
    return _Rules(
        res,
        bool(meta.get("final")),
        tuple(meta.get("metrics", ())),
        bool(meta.get("weak")),
        meta.get("hinted"),
    )


def _rules_plan(
    question: str,
    vocab: Vocabulary,
    now: datetime,
    embed: Embed | None,
    similarity_threshold: float,
    force: _Force | None,
    meta: dict[str, Any],
) -> ParseResult:
    lang = "zh" if has_cjk(question) else "en"
    text = normalize(question)
    if not text or not re.search(r"[a-z\u3400-\u9fff]", text):
        meta["final"] = True
        return unsupported(lang, question, [], "问题是空的" if lang == "zh" else "the question is empty")
    mt = MaskedText(text)
    meta["masked"] = mt

    run = runner(Context(vocab, now, embed, similarity_threshold))
    stores, entities = run("ids", mt)
    named, named_stores = run("named", mt)
    stores = _unique(stores + named_stores + run("places", mt))
    info: TimeInfo = run("time", mt)
    top_n: int | None = run("top_k", mt)
    pre_view = mt.view
    types: list[TypeHit] = run("event_types", mt)
    metric_hits: list[Hit] = run("measures", mt)
    metrics = _unique([str(h.value) for h in metric_hits])
    meta["metrics"] = tuple(metrics)
    if force is not None and force.metrics:
        chosen = list(force.metrics if force.intent == "correlation" else force.metrics[:1])
        metrics = chosen + [m for m in metrics if m not in chosen]
    values: list[ValueHit] = run("values", mt)
    promo_hits: list[Hit] = run("promotions", mt)
    post_view = mt.view
    cue = cues(pre_view)
    cue.discard("compare")
    if "breakdown" in cue and not CUES["breakdown"].search(post_view):
        cue.discard("breakdown")  # 占比 / share of was part of a metric's name (负面情绪占比)
    if "peak_hour" in metrics and _PEAK_SHIFT.search(text):
        # a peak "moving earlier or later" is the trend of peak_hour, not an hour comparison
        cue -= {"compare", "change", "pivot", "correlation"}
        cue.add("trend")
        peak_shift = True
    else:
        peak_shift = False
    if (
        CUES["compare"].search(post_view) or _MORE_LESS.search(post_view) or _BI_MORE.search(pre_view)
    ) and not THAN_BEFORE.search(text):  # "longer than they used to": over time, not two groups
        cue.add("compare")

    intent_hint = (
        "trend" if peak_shift and "forecast" not in cue else _intent_hint(cue, info, metrics, types, entities)
    )
    sim: list[ValueHit] = run("similar_values", mt) if intent_hint != "forecast" else []
    values = sorted(values + named + sim, key=lambda v: v.start)
    values, two_fields = resolve_fields(text, values, vocab, metrics, types, intent_hint)
    if intent_hint == "correlation_single":
        # "is there a link between rain and inquiries": non-metric sides are a co-occurrence
        things = [it for it in co_items(values, types, entities, text, metric_hits) if it[3] > 0]
        if pairs.pair(things, text) is not None:
            intent_hint = "co_occurrence"
    if CORRELATION_FORM.search(text):
        meta["hinted"] = "correlation"  # named by the question's shape (越…越, the more…the more)
    bucket_hits: list[Hit] = run("buckets", mt)
    buckets = _unique([str(h.value) for h in bucket_hits])
    dim_hits: list[Hit] = run("dimensions", mt)
    dims = _unique([str(h.value) for h in dim_hits])
    if _SELLERS.search(text) and "trend" not in cue and not _SELLER_NOT_PRODUCT.search(text):
        cue.add("top_rank")  # best-selling ranks ...
        if not dims and not buckets:
            dims = ["product_id"]  # ... the products, when nothing else is named ("our best sellers")
    for metric_name, own in _OWN_DIMENSION.items():
        if own in dims and metric_name in metrics and not {"which", "breakdown_by", "top_rank"} & cue:
            dims.remove(own)  # 店员差错率, "customer mood": the measure's name, not a grouping

    understood = _understood(lang, metrics, info, stores, entities, values, types)
    if info.errors:  # a date, week, month or span no calendar has: say so, never re-read it
        en, zh = info.errors[0]
        return unsupported(lang, question, understood, zh if lang == "zh" else en[:1].upper() + en[1:])
    if _OUT_OF_DOMAIN.search(text):
        meta["final"] = True
        return unsupported(
            lang,
            question,
            understood,
            "这不是关于门店数据的问题" if lang == "zh" else "this is not a question about the store's data",
        )
    if two_fields is not None:  # one word, two fields, and the measure's events do not decide
        meta["final"] = True
        return unsupported(lang, question, understood, two_fields_reason(two_fields)[lang != "zh"])

    plan: dict[str, Any] = {}
    filters: dict[str, Any] = {}
    used_values: set[int] = set()
    compare_dim_from: str | None = None
    intent = intent_hint

    # ---- compare: what is compared
    compare: dict[str, Any] | None = None
    forced = force.intent if force is not None else None
    if forced == "forecast" and info.ranges and not info.horizon:
        return unsupported(lang, question, understood)  # a range in the past is not a forecast
    if forced is not None and forced != "compare":
        intent = forced
        if forced == "correlation" and len(metrics) < 2:
            return unsupported(
                lang,
                question,
                understood,
                "相关性需要两个指标" if lang == "zh" else "a correlation needs two metrics",
            )
    elif forced == "compare" and intent != "compare_periods":
        compare, compare_dim_from, used_values = _compare_spec(
            cue | {"compare"}, None, info, values, promo_hits, stores, dims
        )
        if compare is None or not (compare.get("groups") or compare.get("periods")):
            return unsupported(
                lang,
                question,
                understood,
                "没有识别出要对比的两组" if lang == "zh" else "I did not recognise which groups to compare",
            )
        intent = "compare"
    elif intent == "compare_periods":
        pivot = info.pivot_dates[0][0]
        compare = {"periods": pivot_periods(pivot, info.window_days or 7, now, vocab.timezone)}
        intent = "compare"
    elif intent is None and top_n is not None:
        intent = "top_k"
    elif intent in (None, "correlation_single"):
        compare, compare_dim_from, used_values = _compare_spec(
            cue, intent, info, values, promo_hits, stores, dims
        )
        if compare is not None:
            intent = "compare"
        elif intent == "correlation_single":
            return unsupported(
                lang,
                question,
                understood,
                "相关性需要两个指标" if lang == "zh" else "a correlation needs two metrics",
            )
        else:
            intent = _fallback_intent(cue, top_n, metrics, buckets, dims, types)
            if intent == "aggregate" and _WHICH_DAYS.search(text):
                intent = "anomaly"  # "which days was revenue low": the days that stood out
            if (
                intent == "aggregate"
                and "change" in cue
                and any(r.kind in ("since", "last") for r in info.ranges)
            ):
                intent = "trend"  # "has X improved since October / in the last 2 months": its course
            meta["weak"] = intent == "aggregate" and "aggregate" not in cue

    if intent == "breakdown" and not dims and not buckets and metrics and metrics[0].endswith("_rate"):
        intent = "aggregate"  # "what share of staff actions were mistakes": the rate itself
    if intent is None:
        return unsupported(lang, question, understood)
    if intent == "forecast" and not metrics and not _FORECAST_SUBJECT.search(text):
        return unsupported(
            lang,
            question,
            understood,
            "没有识别出要预测的门店指标"
            if lang == "zh"
            else "I did not recognise which store metric to forecast",
        )

    plan["intent"] = intent
    matches: list[AttributeMatch] = []

    # ---- metric
    metric: str | None = metrics[0] if metrics else None
    if intent == "trend" and _TENDENCY.search(text) and info.hours:
        metric = "peak_hour"
    if intent in ("retrieve", "co_occurrence"):
        metric = None
    elif "event_count" in metrics and types and intent != "correlation":
        metric = "event_count"
        filters["event_type"] = _unique([t.event_type for t in types])
    if intent == "correlation":
        plan["target_metric"], plan["second_metric"] = metrics[0], metrics[1]
    elif metric is None and intent not in ("retrieve", "co_occurrence", "forecast"):
        if types:
            metric = "event_count"
            filters["event_type"] = _unique([t.event_type for t in types])
        elif intent in ("anomaly", "periodicity") or (intent == "trend" and (entities or values)):
            metric = "event_count"
        else:
            return unsupported(
                lang,
                question,
                understood,
                "没有识别出要计算的指标" if lang == "zh" else "I did not recognise which metric to compute",
            )
    if (
        metric in _COUNT_OF
        and intent in ("aggregate", "trend", "compare", "top_k", "breakdown", "anomaly")
        and _COUNT_ASKED.search(text)
        and not _RATE_ASKED.search(text)
    ):
        # "how many staff mistakes": a count is asked, so a count is answered, not the rate
        key, counted = _COUNT_OF[str(metric)]
        meta["counted"] = metric
        metric = "event_count"
        if key == "event_type":
            filters["event_type"] = _unique([*filters.get("event_type", []), *counted])
        else:
            filters.setdefault("attributes", {})[key] = list(counted) if len(counted) > 1 else counted[0]
    if metric is not None and intent != "correlation":
        plan["target_metric"] = metric

    # ---- intent-specific fields
    if intent == "compare" and compare is not None:
        plan["compare"] = compare
    if intent == "co_occurrence":
        items = co_items(values, types, entities, text, metric_hits)
        pair = pairs.pair(items, text)
        if pair is None:
            return unsupported(
                lang,
                question,
                understood,
                "需要两件事才能算同时出现" if lang == "zh" else "co-occurrence needs two things to pair",
            )
        plan["pair"] = {"a": pair[0], "b": pair[1]}
        window = co_window(text)
        if window:
            plan["pair"]["window_seconds"] = window
        used_values = {
            i for i, v in enumerate(values) if any(v.start < it[1] and it[0] < v.end for it in items)
        }
        entities = [e for e in entities if e not in pair]
    if intent == "top_k" and top_n is not None:
        plan["top_k"] = top_n
    if intent == "top_k" and metric == "peak_hour":  # "the 3 busiest hours": footfall ranked by hour
        plan["target_metric"] = "footfall"
        dims = _unique(["hour", *dims])
    if intent in ("breakdown", "top_k", "anomaly", "trend"):
        group = [d for d in dims if d != compare_dim_from]
        if intent in ("breakdown", "top_k"):
            group = _unique(group + [_BUCKET_DIM[b] for b in buckets])
            if not group and len({d.weekend for d in info.days if d.weekend is not None}) == 2:
                group, compare_dim_from = ["is_weekend"], "is_weekend"
        else:
            group = [d for d in group if d not in ("date", "week", "month", "hour")]
        if group:
            plan["group_by"] = group[:3]
    if intent in ("trend", "anomaly") and buckets:
        plan["time_bucket"] = buckets[0]
    elif intent in ("trend", "anomaly") and {"date", "week", "month", "hour"} & set(dims):
        # "which week looked off": the series is read in the buckets it names
        named = next(d for d in dims if d in ("date", "week", "month", "hour"))
        plan["time_bucket"] = "day" if named == "date" else named
    elif intent == "anomaly" and _ANOMALY_DAYS.search(post_view):
        plan["time_bucket"] = "day"
    if intent in ("trend", "anomaly") and "time_bucket" not in plan:
        chosen_bucket = _auto_bucket(tr_for_bucket(info), now)
        if chosen_bucket:
            plan["time_bucket"] = chosen_bucket
    if intent == "periodicity" and buckets:
        plan["time_bucket"] = "day" if buckets[0] in ("week", "month") else "hour"
    if intent == "forecast":
        if info.horizon:
            plan["horizon"] = info.horizon
    if intent == "retrieve":
        types_r = _unique([t.event_type for t in types])
        if types_r:
            filters["event_type"] = types_r
        sq = _semantic_query(text, info)
        if sq:
            plan["semantic_query"] = sq

    # ---- filters
    if stores and compare_dim_from != "store_id":
        filters["store_id"] = _unique(stores)
    if entities:
        filters["entities"] = _unique(entities)
    tr = _time_range(info)
    if tr and not (compare and "periods" in compare):  # periods carry their own windows
        filters["time_range"] = tr
    hours = sorted({h for m in info.hours for h in m.hours})
    if compare_dim_from == "hour" and info.hours:
        # "7-9 pm vs daytime": the first named range is the group under test, the engine compares
        # it against the other hours (the schema has no way to write hour ranges as groups)
        explicit = [m for m in info.hours if m.kind != "daypart"] or list(info.hours)
        filters["hours"] = sorted(set(explicit[0].hours))
    elif hours and not (
        intent == "trend" and metric == "peak_hour" and (_TENDENCY.search(text) or peak_shift)
    ):
        filters["hours"] = hours
    days = sorted({d for m in info.days for d in m.days})
    if days and compare_dim_from != "is_weekend":
        filters["days_of_week"] = days
    if intent != "forecast":
        attrs: dict[str, Any] = dict(filters.get("attributes") or {})
        for i, v in enumerate(values):
            if i in used_values:
                continue
            for val in v.values:
                matches.append(_match(v, val))
                existing = attrs.get(v.key)
                if existing is None:
                    attrs[v.key] = val
                elif isinstance(existing, list):
                    if val not in existing:
                        existing.append(val)
                elif existing != val:
                    attrs[v.key] = [existing, val]
        if intent not in ("compare",) and promo_hits and compare_dim_from != "promotion":
            attrs.setdefault("promotion", str(promo_hits[0].value))
        if attrs:
            filters["attributes"] = attrs
    for i in used_values:
        v = values[i]
        for val in v.values:
            matches.append(_match(v, val))
    if filters:
        plan["filters"] = filters
    plan["language"] = lang

    _effect_within(plan, cue, vocab)
    errors = plan_errors(plan)
    if errors:  # a parser bug: say so rather than emit an invalid plan
        logger.error("rule parser built an invalid plan for %r: %s (%s)", question, errors, plan)
        return unsupported(
            lang, question, understood, "内部错误" if lang == "zh" else "internal parser error"
        )
    if intent not in ("retrieve", "forecast"):  # a retrieval's free words are its query; forecasts refuse
        words = residual(
            mt,
            _cues_for(plan),
            plan,
            claimed=_used_type_spans(plan, types),
            unclaimed=_unused_dimension_spans(plan, dim_hits),
            asked=[
                *_asked_by(text, _unused_dimension_spans(plan, dim_hits)),
                *_unused_metric_spans(plan, metric_hits, meta.get("counted")),
                *_unused_range_spans(plan, info, text),
                # a forecast keeps no filter: a value it read ("雨天") is not forecast
                *([(v.start, v.end) for v in values] if intent == "forecast" else []),
            ],
        )
        if words:
            return _not_understood(lang, question, plan, words, understood, matches)
    return ParseResult(plan=plan, status="ok", explanation=None, language=lang, matches=tuple(matches))


def _match(v: ValueHit, value: str) -> AttributeMatch:
    return AttributeMatch(v.phrase, v.key, value, v.method, v.score, v.set_aside, v.by_events)


def _not_understood(
    lang: str,
    question: str,
    plan: dict[str, Any],
    words: list[str],
    understood: list[str],
    matches: list[AttributeMatch],
) -> ParseResult:
    """A reading that leaves words of the question unused: never answered (CONTRACT.md section 4),
    whatever the rest says; another measure, period or value is never put in their place."""
    logger.info("question %r: not understood %s (reading %s)", question, words, plan)
    if lang == "zh":
        got = "、".join(understood) if understood else "无"
        text = (
            f"这个问题里有我不能用的内容：{'、'.join(f'“{w}”' for w in words)}"
            f"（没有读懂，或者门店数据里没有）。我不会拿别的指标、时间或条件来代替。我读懂的：{got}。"
        )
    else:
        got = ", ".join(understood) if understood else "nothing"
        text = (
            f"This question holds words I cannot use: {', '.join(repr(w) for w in words)} (not understood, "
            f"or not in the store's data). I will not answer another measure, period or condition "
            f"in their place. What I understood: {got}."
        )
    return ParseResult(
        plan=plan,
        status="unsupported",
        explanation=text,
        language=lang,
        matches=tuple(matches),
        not_understood=tuple(words),
    )


def _unused_dimension_spans(plan: dict[str, Any], dim_hits: list[Hit]) -> list[tuple[int, int]]:
    """Dimension words ("staff", 区域) the plan neither groups nor compares by: "staff turnover"
    is not revenue because "staff" was read as a dimension and then left out."""
    used = set(plan.get("group_by") or ()) | {str((plan.get("compare") or {}).get("dimension"))}
    if (plan.get("filters") or {}).get("store_id"):
        used.add("store_id")
    own = _OWN_DIMENSION.get(str(plan.get("target_metric")))
    if own:
        used.add(own)  # 店员差错率: the staff word is part of the measure's name
    f = plan.get("filters") or {}
    used |= set(f.get("attributes") or {})  # "rainy weather": the key of a value it filters on
    pair = plan.get("pair") or {}
    used |= {str(v).split("=", 1)[0] for v in pair.values() if "=" in str(v)}
    if plan.get("time_bucket"):  # "which week": the buckets of a series
        used.add(_BUCKET_DIM.get(str(plan["time_bucket"]), str(plan["time_bucket"])))
    if f.get("time_range") or (plan.get("compare") or {}).get("periods"):
        used.add("date")  # 日期 of a date the plan reads
    return [(h.start, h.end) for h in dim_hits if str(h.value) not in used]


#: cue words of change over time: a plan of one level (a value, a ranking, a breakdown) does not
#: use them ("which store's complaints rose most" is not the store with the most complaints)
_CHANGE_CUES = (CUES["trend"], CUES["change"], CUES["effect"], _PEAK_SHIFT)
_LEVEL_INTENTS = frozenset({"aggregate", "top_k", "breakdown"})


def _cues_for(plan: dict[str, Any]) -> tuple[re.Pattern[str], ...]:
    """The cue patterns whose words a plan uses: change words only a plan over time, "which
    days" only a plan that answers day by day."""
    intent = str(plan.get("intent"))
    cues = _CUE_PATTERNS
    if intent in _LEVEL_INTENTS:
        cues = tuple(p for p in cues if p not in _CHANGE_CUES)
    if intent == "anomaly":
        cues = (*cues, _OUTLIER_SIDE)
    if intent == "anomaly" or plan.get("time_bucket") == "day" or "date" in (plan.get("group_by") or ()):
        cues = (*cues, _WHICH_DAYS)
    return cues


_ASKED_BY = re.compile(
    r"(?:哪|各|每|按|(?<![a-z])(?:which|each|every|per|by|rank|ranked|ranking)(?![a-z]))[^\u0000]{0,4}$"
)


def _asked_by(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The unused dimension words the question asks the answer by ("which store", 各区域): a plan
    that does not group by them answers another question."""
    return [(s, e) for s, e in spans if _ASKED_BY.search(text[max(0, s - 10) : s])]


def _unused_metric_spans(plan: dict[str, Any], hits: list[Hit], counted: str | None) -> list[tuple[int, int]]:
    """Measure words the plan does not compute ("when the queue is long are angry customers more
    common" read as the queue alone): another measure is never answered in their place."""
    if plan.get("intent") == "co_occurrence":
        return []  # its measure words name the things paired
    used = {plan.get("target_metric"), plan.get("second_metric"), counted}
    if plan.get("target_metric") == "footfall" and "hour" in (plan.get("group_by") or []):
        used.add("peak_hour")  # "the 3 busiest hours": footfall ranked by hour
    if plan.get("target_metric") == "event_count":
        used |= set(METRIC_ITEM)  # "how many complaints" counted as events of that type
    return [(h.start, h.end) for h in hits if str(h.value) not in used]


def _unused_range_spans(plan: dict[str, Any], info: TimeInfo, text: str) -> list[tuple[int, int]]:
    """Periods read but not in the plan ("this week's revenue against last week's" as this week
    alone): only a comparison of periods uses more than one range (or a since/until pair)."""
    if (plan.get("compare") or {}).get("periods") or len(info.ranges) < 2:
        return []
    first = info.ranges[0]
    spans = []
    for r in info.ranges[1:]:
        if first.kind in ("since", "until") and r.kind in ("since", "until"):
            continue  # merged into one range
        pos = text.find(r.label)
        if pos >= 0:
            spans.append((pos, pos + len(r.label)))
    return spans


def _used_type_spans(plan: dict[str, Any], types: list[TypeHit]) -> list[tuple[int, int]]:
    """The event-type words the plan uses (its event-type filter, a co-occurrence's items and what
    they are said of): matched without being consumed, since a metric word may name a type too."""
    if plan.get("intent") == "co_occurrence":
        return [(t.start, t.end) for t in types]
    used = set((plan.get("filters") or {}).get("event_type") or ())
    for m in (plan.get("target_metric"), plan.get("second_metric")):
        used |= set(
            METRIC_EVENT_TYPES.get(str(m), ())
        )  # "operations that were mistakes": the measure's own events
    return [(t.start, t.end) for t in types if t.event_type in used]


def _effect_within(plan: dict[str, Any], cue: set[str], vocab: Vocabulary) -> None:
    """ "Which store's rainy-day order value rose most": a ranking of stores by the change one
    weather brings. Rewritten (in place) to a compare of that weather against a baseline weather
    within each store (``group_by: [store_id]``, which the compare operator ranks by effect). The
    baseline is the memory's own clear-sky label when it has one, else its most frequent other
    weather (:func:`edge.analysis.labels.baseline`)."""
    f = plan.get("filters") or {}
    attrs = f.get("attributes") or {}
    cond = attrs.get("weather")
    ranks_stores = (plan.get("intent") == "top_k" and plan.get("group_by") == ["store_id"]) or (
        plan.get("intent") == "compare" and plan.get("compare") == {"dimension": "store_id"}
    )
    if not (ranks_stores and isinstance(cond, str) and "change" in cue and plan.get("target_metric")):
        return
    known = [str(v) for v in vocab.attributes.get("weather", ()) if str(v) != cond]
    if not known:
        return
    base = labels.baseline("weather", cond, known) or known[0]
    del attrs["weather"]
    if not attrs:
        f.pop("attributes", None)
    if not f:
        plan.pop("filters", None)
    plan.pop("top_k", None)
    plan["intent"] = "compare"
    plan["compare"] = {"dimension": "weather", "groups": [cond, base]}
    plan["group_by"] = ["store_id"]


def _intent_hint(
    cue: set[str], info: TimeInfo, metrics: list[str], types: list[TypeHit], entities: Sequence[str] = ()
) -> str | None:
    """The intents decided by strong cues alone; None leaves it to what was compared/ranked."""
    if "forecast" in cue or info.horizon:
        return "forecast"
    # "show me every complaint customer_123 made": a person's events are listed, not counted
    if "retrieve_media" in cue or ("retrieve_verb" in cue and (not metrics or entities)):
        return "retrieve"
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


def _compare_spec(
    cue: set[str],
    hint: str | None,
    info: TimeInfo,
    values: list[ValueHit],
    promo_hits: list[Hit],
    stores: list[str],
    dims: list[str],
) -> tuple[dict[str, Any] | None, str | None, set[int]]:
    """The ``compare`` object when the question compares groups or periods, else None."""
    by_key: dict[str, list[int]] = {}
    for i, v in enumerate(values):
        by_key.setdefault(v.key, []).append(i)
    categorical = bool(promo_hits) or "weather" in by_key or bool({"promotion", "weather"} & set(dims))
    effect = "effect" in cue and categorical and not info.ranges
    wants = "compare" in cue or hint == "correlation_single" or effect
    if len(_unique(stores)) >= 2 and wants:
        return {"dimension": "store_id", "groups": _unique(stores)}, "store_id", set()
    for key, idx in by_key.items():
        vals = _unique([values[i].values[0] for i in idx])
        if len(vals) >= 2 and key in _KEY_DIMENSIONS:
            return {"dimension": key, "groups": vals}, key, set(idx)
    weekend = _unique([d.weekend for d in info.days if d.weekend is not None])
    if len(weekend) >= 2 or (weekend and wants):
        spec: dict[str, Any] = {"dimension": "is_weekend"}
        if len(weekend) >= 2:
            spec["groups"] = weekend
        return spec, "is_weekend", set()
    named = _unique([d.days[0] for d in info.days if d.weekend is None and len(d.days) == 1])
    if len(named) >= 2 and wants:
        return {"dimension": "day_of_week", "groups": named}, "day_of_week", set()
    promos = _unique([str(h.value) for h in promo_hits])
    if len(promos) >= 2 or (promos and wants):
        spec = {"dimension": "promotion"}
        if len(promos) >= 2:
            spec["groups"] = promos
        return spec, "promotion", set()
    if not wants:
        return None, None, set()
    if len(info.ranges) >= 2:
        periods = [{"label": r.label, "time_range": dict(r.time_range)} for r in info.ranges]
        return {"periods": periods}, "period", set()
    if len(info.hours) >= 2 or (info.hours and any(h.kind == "daypart" for h in info.hours)):
        return {"dimension": "hour"}, "hour", set()
    for d in dims:
        if d not in ("date",):
            return {"dimension": d}, d, set()
    for key, idx in by_key.items():
        if key in _KEY_DIMENSIONS:
            return {"dimension": key}, key, set(idx)
    return None, None, set()


def _fallback_intent(
    cue: set[str],
    top_n: int | None,
    metrics: list[str],
    buckets: list[str],
    dims: list[str],
    types: list[TypeHit],
) -> str | None:
    if top_n is not None or ("top_rank" in cue and ("which" in cue or dims)):
        return "top_k"
    if "breakdown_by" in cue and dims and not buckets and (metrics or types) and "trend" not in cue:
        return "breakdown"
    if buckets == ["hour"] and (metrics or types) and "trend" not in cue:
        return "breakdown"
    if "trend" in cue or (buckets and (metrics or types)):
        return "trend"
    if metrics or (types and "aggregate" in cue):
        return "aggregate"
    return None


def tr_for_bucket(info: TimeInfo) -> dict[str, str] | None:
    """The asked range, as the plan will carry it."""
    return _time_range(info)


def _range_days(tr: dict[str, str] | None, now: datetime) -> float | None:
    if not tr:
        return None
    if "last" in tr:
        m = re.fullmatch(r"P(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+)W)?(?:(\d+)D)?", tr["last"])
        if not m:
            return None
        y, mo, w, d = (int(g) if g else 0 for g in m.groups())
        return y * 365.25 + mo * 365.25 / 12 + w * 7 + d
    try:
        since = datetime.fromisoformat(tr["since"]) if "since" in tr else None
        until = datetime.fromisoformat(tr["until"]) if "until" in tr else None
    except ValueError:
        return None
    if since is None:
        return None
    if until is None:
        ref = now if now.tzinfo is not None or since.tzinfo is None else now.replace(tzinfo=since.tzinfo)
        until = ref
    if (since.tzinfo is None) != (until.tzinfo is None):
        since, until = since.replace(tzinfo=None), until.replace(tzinfo=None)
    return max((until - since).total_seconds() / 86400.0, 0.0)


def _auto_bucket(tr: dict[str, str] | None, now: datetime) -> str | None:
    """The largest of month / week / day / hour that still gives at least ``_MIN_BUCKETS``
    buckets over the asked range (days for a month, weeks for three months); None without a
    range (the operator's default)."""
    days = _range_days(tr, now)
    if days is None or days <= 0:
        return None
    for name, length in _BUCKET_DAYS:
        if days / length >= _MIN_BUCKETS - 1e-9:
            return name
    return "hour"


def _understood(
    lang: str,
    metrics: list[str],
    info: TimeInfo,
    stores: list[str],
    entities: list[str],
    values: list[ValueHit],
    types: list[TypeHit],
) -> list[str]:
    zh = lang == "zh"
    out = []
    if metrics:
        out.append(("指标 " if zh else "metric ") + ", ".join(metrics))
    if info.ranges:
        out.append(("时间 " if zh else "time ") + ", ".join(r.label for r in info.ranges))
    if stores:
        out.append(("门店 " if zh else "store ") + ", ".join(stores))
    if entities:
        out.append(("对象 " if zh else "entity ") + ", ".join(entities))
    if values:
        out.append(("属性 " if zh else "attribute ") + ", ".join(f"{v.key}={v.values[0]}" for v in values))
    if types:
        out.append(("事件 " if zh else "event ") + ", ".join(_unique([t.event_type for t in types])))
    return out
