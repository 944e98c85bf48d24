"""The rule-based bilingual question parser, combined with the exemplar classifier (:mod:`.exemplars`).

Re-exported as :func:`edge.analysis.parser.parse_question` (``adamm ask``, the hub, :mod:`edge.llm`).
The rules read the slots once (:mod:`.slots`) and build the plan in stages (``stage_intent`` ->
``stage_fields`` -> ``stage_words``); a stage that cannot go on raises a :class:`~.refusal.Refusal`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from edge.analysis.parser.accounting import residual
from edge.analysis.parser.exemplars import Guess, classify
from edge.analysis.parser.extraction import Context
from edge.analysis.parser.refusal import Refusal, said
from edge.analysis.parser.result import ParseResult
from edge.analysis.parser.slots import Force, read_slots
from edge.analysis.parser.stage_fields import effect_within, fill_fields, fill_filters, promotion_labels
from edge.analysis.parser.stage_intent import choose_intent, choose_measure
from edge.analysis.parser.stage_words import CUE_PATTERNS, account
from edge.analysis.parser.text import has_cjk
from edge.analysis.parser.vocabmatch import Embed
from edge.analysis.plan import plan_errors
from edge.analysis.source import Vocabulary

logger = logging.getLogger(__name__)


#: the intents whose cues decide the kind by themselves (a refused reading of them is not re-read)
_STRONG = frozenset({"co_occurrence", "correlation", "forecast", "periodicity"})


@dataclass(frozen=True)
class _Rules:
    result: ParseResult
    final: bool  # empty or out-of-domain: nothing to classify
    metrics: tuple[str, ...] = ()  # the metric words the rules read
    weak: bool = False  # the intent came from no cue at all (a metric word alone)
    hinted: str | None = None  # the intent the question's shape names (越…越: correlation), else None


def parse_question(
    question: str,
    vocab: Vocabulary,
    now: datetime,
    *,
    embed: Embed | None = None,
    similarity_threshold: float = 0.55,
) -> ParseResult:
    """Turn a zh/en question into a plan valid under ``plan.schema.json``, or ``unsupported``.

    ``now`` anchors relative times (naive = store-local); ``vocab`` supplies the store's own words;
    ``embed`` (unit-norm text vectors) enables matching stored values by similarity (at least
    ``similarity_threshold`` cosine) and the exemplar classifier (:func:`_combine`); without it the
    rules alone decide.
    """
    ctx = Context(vocab, now, embed, similarity_threshold)
    rules = _parse_rules(question, ctx, None)
    guess = None if embed is None or rules.final else classify(question, embed)
    return rules.result if guess is None else _combine(question, ctx, rules, guess)


def _combine(question: str, ctx: Context, rules: _Rules, guess: Guess) -> ParseResult:
    """The classifier's intent and metric, filled by the rules, where it agrees with them, or is sure
    and they found nothing or only guessed; a request to rephrase where neither is sure."""
    res = rules.result
    r_intent = res.plan.get("intent") if res.status == "ok" else None
    r_metric = res.plan.get("target_metric") if res.status == "ok" else None
    logger.debug("exemplar guess for %r: %s (rules: %s %s)", question, guess, r_intent, r_metric)
    g_metrics = tuple(m for m in (guess.target_metric, guess.second_metric) if m)

    def forced(intent: str | None, metrics: tuple[str, ...]) -> ParseResult | None:
        result = _parse_rules(question, ctx, Force(intent, metrics)).result
        return result if result.status == "ok" else None

    if r_intent is not None and not rules.weak:
        # the rules read a cue: the classifier overrides only a metric they did not read in words
        other_metric = guess.metric_confident and g_metrics and r_metric != guess.target_metric
        if guess.intent == r_intent and other_metric and not rules.metrics:
            return forced(r_intent, g_metrics) or res
        return res
    if guess.intent == r_intent and (r_metric == guess.target_metric or not g_metrics):
        return res  # a weak rule reading that the classifier confirms
    if r_intent == "aggregate" and guess.intent in _STRONG | {"anomaly"}:
        return res  # "complaints last 7 days": every word read as a value; outliers nobody asked for
    if r_intent is None and rules.hinted is not None and guess.intent != rules.hinted:
        # the question's shape names its kind ("越 X 越 Y") and the rules could not build it: an
        # answer of another kind would be a number for a question nobody asked
        return res
    if guess.intent_confident:
        result = forced(guess.intent, rules.metrics or (g_metrics if guess.metric_confident else ()))
        if result is not None:
            return result
    if r_intent is not None or (res.not_understood and res.plan):
        return res  # a plain "metric + when" reading, or words no reading uses: nothing better
    # neither the rules nor the classifier are sure: ask to rephrase, with what the rules could not use
    logger.info("question %r: neither the rules nor the examples are sure; asking to rephrase", question)
    text = said("rephrase", res.language)
    if res.status != "ok" and res.explanation:
        text = f"{text} {res.explanation}" if res.language == "en" else f"{text}{res.explanation}"
    return replace(res, plan={}, status="unsupported", explanation=text)


def _parse_rules(question: str, ctx: Context, force: Force | None) -> _Rules:
    """The rule parser; ``force`` sets the intent and metrics the classifier decided."""
    lang = "zh" if has_cjk(question) else "en"
    try:
        s = read_slots(question, lang, ctx, force)
    except Refusal as refusal:  # an empty question
        return _Rules(unsupported(lang, question, (), refusal.said(lang)), refusal.final)
    try:  # the plan's stages in order over the slots
        d = choose_intent(s, force, ctx.vocab.timezone, ctx.now)
        choose_measure(s, d)
        fill_fields(s, d, ctx.now)
        fill_filters(s, d, ctx.now)
        effect_within(d.plan, s, ctx.vocab)
        promotion_labels(d.plan, ctx.vocab)
        if errors := plan_errors(d.plan):  # a parser bug: say so rather than emit an invalid plan
            logger.error("rule parser built an invalid plan for %r: %s (%s)", question, errors, d.plan)
            raise Refusal("internal")
        return _Rules(account(question, s, d), False, s.read_metrics, d.weak, s.hinted)
    except Refusal as refusal:  # refused before a plan was built: still name the words nothing could use
        words = tuple(residual(s.mt, CUE_PATTERNS, {}))
        result = unsupported(lang, question, s.understood, refusal.said(lang), words)
        # a kind the cues name by themselves (同时出现: a pairing) is never answered as another kind
        hinted = s.hinted or (s.hint if s.hint in _STRONG else None)
        return _Rules(result, refusal.final, s.read_metrics, hinted=hinted)


def unsupported(
    lang: str, question: str, understood: Sequence[str], reason: str | None, words: tuple[str, ...] = ()
) -> ParseResult:
    """The ``unsupported`` result: the reason, what was understood and can be asked, ``words`` unused."""
    got = said("list", lang).join(understood) if understood else said("nothing_computed", lang)
    text = said("unsupported", lang, why=said("why", lang, why=reason) if reason else "", got=got)
    logger.info("unsupported question %r: %s", question, reason or "nothing understood")
    return ParseResult(plan={}, status="unsupported", explanation=text, language=lang, not_understood=words)
