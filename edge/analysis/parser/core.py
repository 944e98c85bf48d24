"""The rule-based bilingual question parser: a zh/en question becomes a schema-valid plan.

Owned by :mod:`edge.analysis.parser` (re-exported as :func:`edge.analysis.parser.parse_question`);
called by ``adamm ask``, the hub's ask and :class:`edge.llm.LLMPlanParser` (as its fallback).
The rules read the question's slots once (:mod:`.slots`: ids -> time expressions -> top-k count
-> event types -> metric words -> stored values (literal, synonym, text-encoder similarity) ->
time buckets -> dimension words, and the intent cues), then build the plan in stages, each a
module: the intent (:mod:`.stage_intent`), the measure (:mod:`.stage_measure`), the intent's
fields (:mod:`.stage_fields`), the filters (:mod:`.stage_filters`) and the check that every word
is used (:mod:`.stage_words`). A stage that cannot go on raises a :class:`~.refusal.Refusal`: the
question is ``unsupported`` with an explanation; the parser never guesses. This module combines
the rules with the exemplar classifier (:mod:`.exemplars`).
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from datetime import datetime

from edge.analysis.parser.accounting import residual
from edge.analysis.parser.exemplars import Guess, classify
from edge.analysis.parser.extractors import Context
from edge.analysis.parser.refusal import Refusal, unsupported
from edge.analysis.parser.result import ParseResult
from edge.analysis.parser.slots import Force, Slots, read_slots
from edge.analysis.parser.stage_fields import effect_within, fill_fields
from edge.analysis.parser.stage_filters import fill_filters
from edge.analysis.parser.stage_intent import choose_intent
from edge.analysis.parser.stage_measure import choose_measure
from edge.analysis.parser.stage_words import CUE_PATTERNS, account
from edge.analysis.parser.text import has_cjk
from edge.analysis.parser.vocabmatch import Embed
from edge.analysis.plan import plan_errors
from edge.analysis.source import Vocabulary

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Rules:
    result: ParseResult
    final: bool  # empty or out-of-domain: nothing to classify
    metrics: tuple[str, ...]  # the metric words the rules read
    weak: bool  # the intent came from no cue at all (a metric word alone)
    #: the intent the question's very shape names (only ``correlation``:
    #: :data:`.intents.CORRELATION_FORM`), None otherwise
    hinted: str | None


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
                forced = _parse_rules(question, vocab, now, embed, threshold, Force(r_intent, g_metrics))
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
        forced = _parse_rules(question, vocab, now, embed, threshold, Force(guess.intent, metrics))
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
    force: Force | None,
) -> _Rules:
    """The rule parser; ``force`` sets the intent and metrics the classifier decided."""
    lang = "zh" if has_cjk(question) else "en"
    try:
        slots = read_slots(question, lang, Context(vocab, now, embed, similarity_threshold), force)
    except Refusal as refusal:  # an empty question
        return _Rules(unsupported(lang, question, (), refusal.said(lang)), refusal.final, (), False, None)
    try:
        result, weak = _rules_plan(question, slots, force, vocab, now)
    except Refusal as refusal:
        result = unsupported(lang, question, slots.understood, refusal.said(lang))
        words = residual(slots.mt, CUE_PATTERNS, {})
        if words:  # refused before a plan was built: still name the words nothing could use
            result = dataclasses.replace(result, not_understood=tuple(words))
        return _Rules(result, refusal.final, slots.read_metrics, False, slots.hinted)
    return _Rules(result, False, slots.read_metrics, weak, slots.hinted)


def _rules_plan(
    question: str, s: Slots, force: Force | None, vocab: Vocabulary, now: datetime
) -> tuple[ParseResult, bool]:
    """The plan's stages in order over the slots: the result, and whether its intent came from no
    cue at all; raises :class:`~.refusal.Refusal`."""
    d = choose_intent(s, force, vocab.timezone, now)
    choose_measure(s, d)
    fill_fields(s, d, now)
    fill_filters(s, d)
    effect_within(d.plan, s.cue, vocab)
    errors = plan_errors(d.plan)
    if errors:  # a parser bug: say so rather than emit an invalid plan
        logger.error("rule parser built an invalid plan for %r: %s (%s)", question, errors, d.plan)
        raise Refusal("internal")
    return account(question, s, d), d.weak
