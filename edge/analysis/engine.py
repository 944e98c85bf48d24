"""The analysis engine: a question (or a plan) in, a payload (payload.schema.json) out.

Owns :func:`answer` (parse, then :func:`run_plan`) and :func:`run_plan` (plan filters to an
:class:`~edge.analysis.source.EventFilter`, the coverage check, the registered operator, the
honesty rules of :mod:`edge.analysis.honesty`, evidence sampling and the action rules of
:mod:`edge.analysis.actions`). Called by ``adamm ask`` (:mod:`edge.cli.cmd_ask`), ``adamm demo``,
the TUI and the hub. Pure: everything about the memory goes through the EventSource port.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np

from edge.analysis import actions, honesty, interpretation
from edge.analysis.operators import base
from edge.analysis.operators.base import Context, Outcome
from edge.analysis.parser import ParseResult, parse_question
from edge.analysis.plan import resolve_time_range, validate_plan
from edge.analysis.source import EventFilter, EventSource, Scalar, sample_many_of
from edge.config import AnalysisConfig
from edge.errors import AdammError, NotInRecordError, TimeRangeError

__all__ = ["AnalysisConfig", "answer", "build_filter", "run_plan"]

logger = logging.getLogger(__name__)

INSUFFICIENT = {
    "zh": "数据不足，目前还不能下结论；需要补充的数据见 missing。",
    "en": "Not enough data to answer yet; what would settle it is listed under missing.",
}
UNSUPPORTED = {
    "zh": "这个问题无法对应到已支持的分析。",
    "en": "This question does not map onto a supported analysis.",
}


def build_filter(plan: dict[str, Any], now: datetime, tz: str, *, wall_clock: bool = False) -> EventFilter:
    """The plan's ``filters`` as an :class:`EventFilter` (time range resolved in the store's zone;
    ``wall_clock``: the plan's stores are in several zones, so the window is read on ``tz``'s wall
    clock and each store applies it in its own zone: ``EventFilter.wall_clock_zone``)."""
    f = plan.get("filters") or {}
    since, until = resolve_time_range(f.get("time_range"), now, tz, wall_clock=wall_clock)
    attrs: list[tuple[str, tuple[Scalar, ...]]] = []
    for k, v in (f.get("attributes") or {}).items():
        vals = tuple(v) if isinstance(v, list) else (v,)
        attrs.append((str(k), vals))
    return EventFilter(
        store_ids=tuple(f.get("store_id") or ()),
        event_types=tuple(f.get("event_type") or ()),
        since=since,
        until=until,
        hours=tuple(int(h) for h in f.get("hours") or ()),
        days_of_week=tuple(int(d) for d in f.get("days_of_week") or ()),
        attributes=tuple(attrs),
        entities=tuple(f.get("entities") or ()),
        wall_clock_zone=tz if wall_clock else None,
    )


def _payload(
    question: str,
    plan: dict[str, Any],
    status: str,
    summary: str,
    *,
    result: dict[str, Any] | None = None,
    evidence: list[dict[str, Any]] | None = None,
    evidence_count: int = 0,
    conf: float = 0.0,
    missing: Sequence[str] = (),
    action: dict[str, Any] | None = None,
    operator: dict[str, str] | None = None,
    started: float | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "status": status,
        "question": question,
        "plan": plan,
        "summary": summary,
        "result": result or {},
        "evidence": evidence or [],
        "evidence_count": int(evidence_count),
        "confidence": conf,
        "low_confidence": honesty.is_low(conf),
        "missing": list(missing),
        "action": action,
    }
    if operator:
        out["operator"] = operator
    out["elapsed_ms"] = round((time.perf_counter() - started) * 1000, 3) if started is not None else 0.0
    return out


def answer(
    question: str,
    source: EventSource,
    *,
    now: datetime | None = None,
    config: AnalysisConfig | None = None,
    embed: Callable[[Sequence[str]], np.ndarray | None] | None = None,
    parser: Callable[..., ParseResult] | None = None,
    language: str | None = None,
) -> dict[str, Any]:
    """Answer ``question`` from ``source``: parse it, run the plan, apply the honesty rules.

    ``language`` (``zh`` / ``en``): the answer's language whatever the question's (a screen keeps
    to one language); None: the question's.

    The payload's ``elapsed_ms`` is the analysis step (:func:`run_plan`: coverage, operator,
    evidence, actions), measured after the question is parsed; for an unsupported question, the
    parse."""
    started = time.perf_counter()
    cfg = config or AnalysisConfig()
    ref = now or datetime.now(UTC)
    vocab = source.vocabulary()
    parse = parser or parse_question
    parsed = parse(question, vocab, ref, embed=embed, similarity_threshold=cfg.similarity_threshold)
    asked = language if language in ("zh", "en") else None
    if parsed.status != "ok" or not parsed.plan:
        lang = asked or (parsed.language if parsed.language in ("zh", "en") else "en")
        words = list(parsed.not_understood)
        # the parser explains itself in the question's language
        explanation = parsed.explanation if asked in (None, parsed.language) else None
        out = _payload(
            question,
            {},
            "unsupported",
            explanation or UNSUPPORTED[lang],
            missing=[honesty.say(lang, f"not understood: {w}", f"未能理解：{w}") for w in words],
            started=started,
        )
        out["interpretation"] = _interpretation(
            parsed.plan,
            source,
            ref,
            lang,
            vocab.timezone,
            words,
            read_as=parsed.read_as,
            set_aside=parsed.set_aside,
        )
        return out
    plan = parsed.plan if asked in (None, parsed.language) else {**parsed.plan, "language": asked}
    payload = run_plan(
        plan,
        source,
        question=question,
        now=ref,
        config=cfg,
        language=asked or parsed.language,
        matches=parsed.matches,
        timezone=vocab.timezone,
        read_as=parsed.read_as,
        set_aside=parsed.set_aside,
    )
    return payload


def _interpretation(
    plan: dict[str, Any],
    source: EventSource,
    now: datetime,
    lang: str,
    tz: str,
    not_understood: Sequence[str] = (),
    *,
    resolved: Sequence[tuple[str, str, Sequence[str], Sequence[str]]] = (),
    read_as: Sequence[tuple[str, str]] = (),
    set_aside: Sequence[str] = (),
) -> dict[str, Any]:
    """What ``plan`` computes (or would have), as the payload's ``interpretation``."""
    vocab = source.vocabulary()
    since = until = None
    if plan:
        try:
            since, until = resolve_time_range(
                (plan.get("filters") or {}).get("time_range"), now, tz, wall_clock=False
            )
        except TimeRangeError:
            since = until = None
    periods: list[tuple[str, datetime | None, datetime | None]] = []
    for p in (plan.get("compare") or {}).get("periods") or []:
        try:
            periods.append((str(p.get("label") or ""), *resolve_time_range(p.get("time_range"), now, tz)))
        except TimeRangeError:
            continue
    latest = vocab.latest
    ref = _aware(now, tz)
    if latest is not None and (latest.tzinfo is None or latest > ref):
        latest = latest if latest.tzinfo is None else min(latest, ref)
    return interpretation.build(
        plan,
        lang,
        tz=tz,
        since=since,
        until=until,
        earliest=vocab.earliest,
        latest=latest,
        not_understood=not_understood,
        periods=periods,
        resolved=resolved,
        read_as=read_as,
        set_aside=set_aside,
    )


def _aware(now: datetime, tz: str) -> datetime:
    """``now`` as an aware UTC instant (a naive ``now`` is store-local)."""
    return (now if now.tzinfo is not None else now.replace(tzinfo=honesty.zone_of(tz))).astimezone(UTC)


def _windows(
    plan: dict[str, Any], flt: EventFilter, now: datetime, tz: str
) -> list[tuple[datetime | None, datetime | None]]:
    wins = [(flt.since, flt.until)]
    wall = flt.wall_clock_zone is not None
    for p in (plan.get("compare") or {}).get("periods") or []:
        wins.append(resolve_time_range(p.get("time_range"), now, tz, wall_clock=wall))
    return wins


def _several_zones(plan: dict[str, Any], source: EventSource) -> bool:
    """True when the plan's stores (those it names, else every store of the source) are in more
    than one zone: its windows are then per-store local windows (``EventFilter.wall_clock_zone``)."""
    stores = tuple(str(s) for s in (plan.get("filters") or {}).get("store_id") or ())
    if len(set(stores)) == 1:
        return False
    return source.vocabulary().is_multi_zone(stores)


def _zone_for(plan: dict[str, Any], source: EventSource, timezone: str | None) -> str:
    """The zone relative windows resolve in: the one store's the plan names (a source may hold
    stores in several zones), else ``timezone``, else the source's default."""
    stores = set((plan.get("filters") or {}).get("store_id") or ())
    if len(stores) == 1 or timezone is None:
        vocab = source.vocabulary()
        return vocab.zone_of(str(next(iter(stores)))) if len(stores) == 1 else vocab.timezone
    return timezone


def run_plan(
    plan: dict[str, Any],
    source: EventSource,
    *,
    question: str,
    now: datetime,
    config: AnalysisConfig,
    language: str = "en",
    matches: Sequence[Any] = (),
    timezone: str | None = None,
    cite: bool = True,
    read_as: Sequence[tuple[str, str]] = (),
    set_aside: Sequence[str] = (),
) -> dict[str, Any]:
    """Compute a plan (valid under plan.schema.json) into a payload. ``timezone``: the store's
    (read from the source's vocabulary when the caller does not already have it); a plan about one
    store resolves its windows in that store's zone (:meth:`Vocabulary.zone_of`). ``cite`` False:
    no events are sampled for ``evidence`` (empty; ``evidence_count`` still counts them), for a
    caller that runs many plans and cites the events of the few answers it keeps by running those
    plans again (the facts step of maintenance); never for an answer shown to anyone. ``read_as``:
    the question's slips of typing and the words they were read as, said in the interpretation
    with the words ``matches`` read by similarity; ``set_aside``: the question's clauses about the
    asking, said as not computed."""
    started = time.perf_counter()
    lang = str(plan.get("language") or language)
    lang = lang if lang in ("zh", "en") else "en"
    validate_plan(plan)
    # a word read by its meaning (apples as the fruit category) is said, like a slip of typing
    read_as = [
        *read_as,
        *((str(m.phrase), str(m.value)) for m in matches if getattr(m, "method", "") == "similarity"),
    ]
    op = base.get(str(plan["intent"]))
    if op is None:
        out = _payload(question, plan, "unsupported", UNSUPPORTED[lang], started=started)
        out["interpretation"] = _interpretation(
            plan, source, now, lang, source.vocabulary().timezone, resolved=_resolved(matches)
        )
        return out
    ident = {"name": op.name, "version": op.version}
    tz = _zone_for(plan, source, timezone)
    try:
        flt = build_filter(plan, now, tz, wall_clock=_several_zones(plan, source))
        windows = _windows(plan, flt, now, tz)
    except TimeRangeError as exc:
        out = _payload(question, plan, "unsupported", exc.reasons[lang], operator=ident, started=started)
        out["interpretation"] = _interpretation(
            plan, source, now, lang, tz, resolved=_resolved(matches), read_as=read_as, set_aside=set_aside
        )
        return out
    dim = (plan.get("compare") or {}).get("dimension")
    asked = tuple(str(m.value) for m in matches if dim is not None and getattr(m, "key", None) == dim)
    ctx = Context(plan, source, question, now, config, lang, tz, flt, asked)
    try:
        out = _run(op, ctx, windows, ident, started, cite=cite)
    except NotInRecordError as exc:  # a strict source's record of closed days cannot say it
        out = _payload(
            question,
            plan,
            "insufficient_data",
            INSUFFICIENT[lang],
            missing=[exc.reasons[lang]],
            operator=ident,
            started=started,
        )
    out["interpretation"] = _interpretation(
        op.as_run(plan),
        source,
        now,
        lang,
        tz,
        resolved=_resolved(matches),
        read_as=read_as,
        set_aside=set_aside,
    )
    return out


def _resolved(matches: Sequence[Any]) -> list[tuple[str, str, Sequence[str], Sequence[str]]]:
    """The parser's matches of a word that names a stored value of several fields (see
    :class:`edge.analysis.parser.AttributeMatch`), as :func:`interpretation.build` says them."""
    out: list[tuple[str, str, Sequence[str], Sequence[str]]] = []
    for m in matches:
        aside = tuple(getattr(m, "set_aside", ()) or ())
        if aside:
            out.append((str(m.phrase), str(m.key), aside, tuple(getattr(m, "by_events", ()) or ())))
    return out


def _run(
    op: base.Operator,
    ctx: Context,
    windows: list[tuple[datetime | None, datetime | None]],
    ident: dict[str, str],
    started: float,
    *,
    cite: bool = True,
) -> dict[str, Any]:
    """The coverage check, the operator, evidence, confidence and actions of :func:`run_plan`."""
    plan, source, question, now, config, lang, tz, flt = (
        ctx.plan,
        ctx.source,
        ctx.question,
        ctx.now,
        ctx.config,
        ctx.language,
        ctx.timezone,
        ctx.flt,
    )
    if op.intent not in ("forecast",):
        cov_flt = base.metric_types_filter(flt, ctx.metric)
        gaps = honesty.coverage_gaps(source, cov_flt, windows, lang, now=_aware(now, tz), tz=tz)
        if gaps:
            return _payload(
                question,
                plan,
                "insufficient_data",
                INSUFFICIENT[lang],
                missing=gaps,
                operator=ident,
                started=started,
            )
    try:
        outcome = op.compute(ctx)
    except AdammError:
        raise
    except (ValueError, ZeroDivisionError, FloatingPointError) as exc:
        logger.warning("operator %s failed on plan %s: %s", op.name, plan, exc)
        outcome = Outcome(
            status="insufficient_data",
            missing=[
                honesty.say(
                    lang,
                    f"data the {op.name} operator can compute on ({exc})",
                    f"{op.name} 算子可以计算的数据（{exc}）",
                )
            ],
        )
    if outcome.status == "refused":
        return _payload(
            question, plan, "refused", outcome.summary or INSUFFICIENT[lang], operator=ident, started=started
        )
    if outcome.status != "ok":
        return _payload(
            question,
            plan,
            "insufficient_data",
            outcome.summary or INSUFFICIENT[lang],
            missing=outcome.missing
            or [honesty.say(lang, "more events matching the question", "更多符合问题条件的事件")],
            operator=ident,
            started=started,
        )
    # the invariants at the engine's exit: an ok answer stands on a result and on cited events
    # a filter of the plan the source did not apply: the answer would be about other events
    ignored = honesty.unapplied(source, flt, lang) + honesty.ungrouped(plan, op.group_keys, lang)
    if ignored:
        logger.warning(
            "operator %s answered %s without every filter or group applied: %s", op.name, plan, ignored
        )
        return _payload(
            question,
            plan,
            "insufficient_data",
            INSUFFICIENT[lang],
            missing=ignored,
            operator=ident,
            started=started,
        )
    evidence: list[dict[str, Any]] = []
    lacking: tuple[str, str] | None = None
    if honesty.empty_result(op.intent, outcome.result):
        logger.warning("operator %s returned ok with an empty result for %s", op.name, plan)
        lacking = (
            "events matching every condition of the question (the result is empty)",
            "符合问题全部条件的事件（结果为空）",
        )
    else:
        evidence = _evidence(source, outcome, config.evidence_cap) if cite else []
        if cite and not evidence:
            lacking = ("events behind the result (none could be cited)", "结果背后的事件（无法引用任何一条）")
    summary = "" if lacking is not None else op.summarize(ctx, outcome.result)
    invented = [] if lacking is not None else honesty.numbers_outside(summary, outcome.result)
    if invented:  # an operator's wording at fault: never shown as an answer
        logger.error("operator %s wrote numbers not in its result %s: %r", op.name, invented, summary)
        lacking = (
            f"a summary whose every number is in the result (it wrote {', '.join(invented)})",
            f"每个数字都出自结果的摘要（摘要写了 {'、'.join(invented)}）",
        )
    elif lacking is None and honesty.stores_unnamed(
        plan, summary, outcome.result, source.vocabulary().store_ids
    ):
        logger.warning("operator %s answered which store without naming one: %r", op.name, summary)
        lacking = ("an answer that names the stores asked about", "点名所问门店的答案")
    if lacking is not None:  # one exit for every check on the outcome
        return _payload(
            question,
            plan,
            "insufficient_data",
            INSUFFICIENT[lang],
            missing=[honesty.say(lang, *lacking)],
            operator=ident,
            started=started,
        )
    conf = honesty.confidence(outcome.n, config.decay_base, outcome.p_value)
    if honesty.is_low(conf):
        summary += honesty.weak_note(lang)
    payload = _payload(
        question,
        plan,
        "ok",
        summary,
        result=outcome.result,
        evidence=evidence,
        evidence_count=max(outcome.evidence_count, len(evidence)),
        conf=conf,
        operator=ident,
        started=started,
    )
    payload["action"] = actions.decide(plan, payload)
    return payload


#: most evidence groups per answer (each is one filtered scan of the memory unless the source
#: samples them together)
MAX_EVIDENCE_QUERIES = 5


def _evidence(source: EventSource, outcome: Outcome, cap: int) -> list[dict[str, Any]]:
    """Representative events per evidence group, at most ``cap`` in all, no id twice."""
    seen: set[str] = set()
    out: list[dict[str, Any]] = []
    for event_id, role, weight in outcome.direct:
        if event_id not in seen and len(out) < cap:
            seen.add(event_id)
            out.append({"event_id": event_id, "role": role, "weight": round(min(1.0, max(0.0, weight)), 4)})
    specs = outcome.evidence
    if not specs:
        return out
    if len(specs) > MAX_EVIDENCE_QUERIES:
        # each spec is one filtered query over the memory: sample the groups/buckets evenly
        # (first and last kept) instead of querying every one of a 90-bucket series
        step = (len(specs) - 1) / (MAX_EVIDENCE_QUERIES - 1)
        specs = [specs[round(i * step)] for i in range(MAX_EVIDENCE_QUERIES)]
    per = max(1, cap // len(specs))
    many = sample_many_of(source)
    # a source that can (the rollup source) samples every group in one query
    batches = many.sample_many([(spec.flt, spec.periods, per) for spec in specs]) if many else None
    for i, spec in enumerate(specs):
        if len(out) >= cap:
            break
        limit = min(per, cap - len(out))
        if batches is not None:
            rows = batches[i][:limit]
        else:
            rows, _total = source.sample_events(spec.flt, limit, spec.periods)
        for r in rows:
            if r.event_id not in seen:
                seen.add(r.event_id)
                out.append(
                    {
                        "event_id": r.event_id,
                        "role": spec.role,
                        "weight": round(min(1.0, max(0.0, spec.weight)), 4),
                    }
                )
    return out
