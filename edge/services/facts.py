"""The facts step of maintenance: standing questions distilled into semantic facts, incrementally.

:data:`STANDING_QUESTIONS` is the registry (name -> :class:`StandingQuestion`): each is a plan
(plan.schema.json, without its time range) asked through the ask use case
(:meth:`edge.services.ask.AskService.run_plan`) over a sliding window, and a ``kind`` that says how
its payload becomes findings. Adding a standing question is adding one entry.

Evaluation points are a fixed calendar: every store-local Monday 00:00, each question over the
``window_days`` before it (absolute ``since``/``until``, ``now`` = the point). A question is
evaluated at the points after its high-water mark (``fact_marks``) up to the last one the data
reaches, so each run asks only what is new, and one run over months of history evaluates the same
points, in the same order, as weekly or nightly runs would have: the same facts and validity
windows (late events imported for an already evaluated week are not re-evaluated).

Only significant findings become facts (payload ``ok``, not ``low_confidence``; where a test
applies, its p-value passes the false discovery control: Benjamini-Hochberg at FDR 5% over one
family, every test of every standing question of the store at the same evaluation point, so that
a run over many questions finds no more chance facts than the rate allows; the operators' minimum
evidence holds since they answer ``insufficient_data`` below it). The family is the evaluation
point's, not the run's, so that one run over months of history and nightly runs control the same
families; the p-values each question tested at each point are kept (``fact_tests``), so a run
that resumes after an interruption controls the whole family too. Each fact keeps its p-value
and its adjusted one (``q_value``, beside the contract's fields). Per question and slot (what a fact is about: one comparison, one change, one anomalous day):

- a finding with no open fact opens one (``valid_from`` = the window's start, or after the last
  closed fact of the slot);
- a finding that makes the same claim (``signature``: direction, top hour, period, change date)
  refreshes the open fact's numbers and evidence;
- a different claim closes the open fact (``valid_to`` = the end of the last data that confirmed
  it) and opens a new one that ``supersedes`` it;
- an evaluation that answers but finds nothing significant closes the slot's open fact; an
  ``insufficient_data`` evaluation changes nothing;
- ``change`` questions (staff error rate): the day that splits the window's daily series best
  (binomial likelihood, at least :data:`MIN_SEGMENT_DAYS` each side), tested before vs after
  (compare over two periods); a significant change closes the open fact at that date and opens
  the new level from it; with no change in the window the open fact stands;
- ``anomaly`` questions record each unusual day once, valid that day.

Nothing is deleted. ``fact_id`` is a hash of store, question, slot, claim and ``valid_from``: the
same finding gets the same id on every run.
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, time, timedelta
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from edge.analysis import labels
from edge.analysis.parser.lexicon import VALUE_WORDS
from edge.analysis.source import EventFilter, Vocabulary
from edge.config import AdammConfig, AnalysisConfig
from edge.memory.semantic import facts as repo
from edge.memory.semantic.facts import FactRecord
from edge.presentation.facts import fact_statement
from edge.services.ask import AskService

if TYPE_CHECKING:
    from edge.memory.store import Store

logger = logging.getLogger(__name__)

#: significance level of every test a fact rests on
ALPHA = 0.05
#: the fewest days on each side of a change point
MIN_SEGMENT_DAYS = 14
#: the weakest repetition strength (0-1) that makes a periodicity a fact
MIN_PERIOD_STRENGTH = 0.3
#: the smallest lift that makes a co-occurrence a fact
MIN_LIFT = 1.5
#: a re-detected change within this many days of the open one is the same change
CHANGE_TOLERANCE_DAYS = 7
#: evaluation points: this store-local weekday (0 = Monday) at 00:00, every week
EVALUATION_WEEKDAY = 0


@dataclass(frozen=True)
class StandingQuestion:
    """One standing question: ``plan`` without ``filters.time_range`` (the window is added per
    evaluation point), ``kind`` (how findings are read: compare, profile, peak, trend,
    periodicity, correlation, anomaly, co_occurrence, change) and the window in days."""

    kind: str
    plan: dict[str, Any]
    window_days: int = 56


#: Compare groups on a dimension whose values a store names as it likes (weather) are written as
#: kinds (:mod:`edge.analysis.labels`: ``rain``, ``sunny``...) and asked in the memory's own labels
#: (:func:`in_memory_words`).
STANDING_QUESTIONS: dict[str, StandingQuestion] = {
    "weather_order_value": StandingQuestion(
        "compare",
        {
            "intent": "compare",
            "target_metric": "avg_order_value",
            "compare": {"dimension": "weather", "groups": [labels.RAIN, labels.CLEAR]},
        },
    ),
    "weather_footfall": StandingQuestion(
        "compare",
        {
            "intent": "compare",
            "target_metric": "footfall",
            "compare": {"dimension": "weather", "groups": [labels.RAIN, labels.CLEAR]},
        },
    ),
    "weekday_profile": StandingQuestion(
        "compare",
        {
            "intent": "compare",
            "target_metric": "footfall",
            "compare": {"dimension": "is_weekend", "groups": [True, False]},
        },
    ),
    "hourly_profile": StandingQuestion(
        "profile",
        {
            "intent": "breakdown",
            "target_metric": "footfall",
            "group_by": ["hour"],
            "filters": {"days_of_week": [0, 1, 2, 3, 4]},
        },
        window_days=21,
    ),
    "weekly_period": StandingQuestion(
        "periodicity", {"intent": "periodicity", "target_metric": "footfall", "time_bucket": "day"}
    ),
    "peak_hour": StandingQuestion(
        "peak", {"intent": "breakdown", "target_metric": "footfall", "group_by": ["hour"]}, window_days=28
    ),
    "peak_hour_shift": StandingQuestion(
        "trend", {"intent": "trend", "target_metric": "peak_hour", "time_bucket": "week"}, window_days=84
    ),
    "staff_error_rate": StandingQuestion(
        "change", {"intent": "trend", "target_metric": "staff_error_rate", "time_bucket": "day"}
    ),
    "footfall_anomalies": StandingQuestion(
        "anomaly", {"intent": "anomaly", "target_metric": "footfall", "time_bucket": "day"}
    ),
    "queue_complaints": StandingQuestion(
        "correlation",
        {
            "intent": "correlation",
            "target_metric": "queue_length",
            "second_metric": "complaint_count",
            "time_bucket": "day",
        },
    ),
    "queue_complaint_together": StandingQuestion(
        "co_occurrence",
        {
            "intent": "co_occurrence",
            "pair": {"a": "checkout_queue", "b": "complaint", "window_seconds": 3600},
        },
    ),
}


@dataclass
class Finding:
    """One significant result of a standing question at one evaluation point."""

    slot: str
    signature: str
    metric: str | None
    dimension: str | None
    value: Any
    effect: float | None
    n: int
    p_value: float | None
    confidence: float
    evidence: list[str]
    evidence_count: int
    plan: dict[str, Any]
    words: dict[str, Any] = field(default_factory=dict)
    starts: str | None = None  # a change's date, an anomaly's day
    #: the p-value that enters the false discovery control (``p_value``, or a change's
    #: Bonferroni-corrected one); None: the finding rests on no test
    family_p: float | None = None
    #: its Benjamini-Hochberg adjusted value over the store's tests at the evaluation point
    q_value: float | None = None


@dataclass
class Evaluation:
    """What one evaluation point gave: ``answered`` False for insufficient data (changes nothing).

    ``findings`` are the candidates: a finding whose ``family_p`` is set becomes a fact only if it
    passes the false discovery control (:func:`control`); ``tested`` holds the p-values of the
    tests that gave no candidate (they count in the family all the same); ``fallback`` is what the
    evaluation finds when no candidate passes (a change question's level)."""

    answered: bool
    findings: list[Finding] = field(default_factory=list)
    tested: list[float] = field(default_factory=list)
    fallback: list[Finding] = field(default_factory=list)

    def family(self) -> list[float]:
        """Every p-value this evaluation tested: its candidates' first, then the others."""
        return [f.family_p for f in self.findings if f.family_p is not None] + self.tested


# -- asking ---------------------------------------------------------------------------------------


def in_memory_words(q: StandingQuestion, vocab: Vocabulary) -> StandingQuestion | None:
    """``q`` with its compare groups written as kinds replaced by the memory's own labels: the
    subject by the most frequent label of its kind, the baseline by the most frequent label of
    its kind, else of another kind than the subject's (:func:`edge.analysis.labels.baseline`).
    ``None`` when the memory has no label of the subject's kind (nothing to ask). Groups of other
    dimensions (weekend or not) are asked as written."""
    cmp_ = q.plan.get("compare") or {}
    dim, groups = cmp_.get("dimension"), list(cmp_.get("groups") or [])
    if dim not in VALUE_WORDS or len(groups) != 2 or not all(isinstance(g, str) for g in groups):
        return q
    known = vocab.attributes.get(str(dim), ())
    subject = next(iter(labels.values_of(str(dim), str(groups[0]), known)), None)
    if subject is None:
        return None
    base = labels.baseline(str(dim), subject, known, str(groups[1]))
    if base is None:
        return None
    plan = {**q.plan, "compare": {**cmp_, "groups": [subject, base]}}
    return replace(q, plan=plan)


def _window_plan(q: StandingQuestion, store_id: str, since: datetime, until: datetime) -> dict[str, Any]:
    plan: dict[str, Any] = {k: (dict(v) if isinstance(v, dict) else v) for k, v in q.plan.items()}
    filters = dict(plan.get("filters") or {})
    filters["store_id"] = [store_id]
    filters["time_range"] = {"since": since.isoformat(), "until": until.isoformat()}
    plan["filters"] = filters
    return plan


def _usable(payload: dict[str, Any]) -> bool:
    """An answer a fact may rest on: ``ok`` and not ``low_confidence``."""
    return payload.get("status") == "ok" and not payload.get("low_confidence")


def _tested(p: Any) -> float | None:
    """``p`` as a p-value that enters the false discovery control (None when no test ran)."""
    if p is None:
        return None
    x = float(p)
    return x if math.isfinite(x) else None


def _read(payload: dict[str, Any], p: Any, found: Callable[[float | None], Finding | None]) -> Evaluation:
    """An answered evaluation of one test (p-value ``p``, None when none applies): the candidate
    ``found(p)`` gives (None: the answer makes no claim, the test still counts) or nothing."""
    tp = _tested(p)
    if not _usable(payload):
        return Evaluation(True)
    if p is not None and tp is None:
        return Evaluation(True)
    f = found(tp)
    if f is None:
        return Evaluation(True, tested=[] if tp is None else [tp])
    f.family_p = tp
    return Evaluation(True, [f])


def _finding(payload: dict[str, Any], cap: int, *, slot: str, signature: str, **kw: Any) -> Finding:
    ev = [str(e["event_id"]) for e in payload.get("evidence") or []][:cap]
    plan = payload.get("plan") or {}
    return Finding(
        slot=slot,
        signature=signature,
        metric=kw.pop("metric", plan.get("target_metric")),
        dimension=kw.pop("dimension", None),
        confidence=float(payload.get("confidence") or 0.0),
        evidence=ev,
        evidence_count=int(payload.get("evidence_count") or len(ev)),
        plan=plan,
        **kw,
    )


def _rel(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return round((a - b) / abs(b), 6)


def _read_compare(q: StandingQuestion, payload: dict[str, Any], cfg: AnalysisConfig) -> Evaluation:
    res = payload["result"]
    groups = {str(g["key"]).lower(): g for g in res.get("groups") or []}
    subject, baseline = (q.plan["compare"]["groups"] + [None, None])[:2]
    a, b = groups.get(str(subject).lower()), groups.get(str(baseline).lower())

    def found(p: float | None) -> Finding | None:
        if a is None or b is None or p is None:
            return None
        effect = _rel(a["value"], b["value"])
        return _finding(
            payload,
            cfg.evidence_cap,
            slot=f"{subject}_vs_{baseline}",
            signature="up" if (effect or 0) > 0 else "down",
            dimension=q.plan["compare"]["dimension"],
            value=a["value"],
            effect=effect,
            n=int(min(a["n"], b["n"])),
            p_value=p,
            words={"subject": subject, "baseline": baseline},
        )

    return _read(payload, res.get("p_value"), found)


def _read_profile(q: StandingQuestion, payload: dict[str, Any], cfg: AnalysisConfig) -> Evaluation:
    from scipy import stats

    parts = payload["result"].get("parts") or []
    total = sum(float(x["value"]) for x in parts)
    if len(parts) < 2 or total <= 0:
        return Evaluation(True)
    top = max(parts, key=lambda x: (float(x["value"]), -int(x["key"])))
    k = len(parts)
    # the test counts arrivals (events), which are independent; a group of persons is one arrival
    arrivals = sum(int(x["n"]) for x in parts)
    p = float(f"{stats.binomtest(int(top['n']), arrivals, 1.0 / k, alternative='greater').pvalue:.6g}")

    def found(p: float | None) -> Finding:
        return _finding(
            payload,
            cfg.evidence_cap,
            slot="top_hour",
            signature=str(top["key"]),
            dimension="hour",
            value=int(top["key"]),
            effect=_rel(float(top["value"]), total / k),
            n=int(top["n"]),
            p_value=p,
            words={"subject": top["key"]},
        )

    return _read(payload, p, found)


def _read_trend(q: StandingQuestion, payload: dict[str, Any], cfg: AnalysisConfig) -> Evaluation:
    res = payload["result"]
    change = res.get("change_pct")

    def found(p: float | None) -> Finding | None:
        if res.get("direction") in (None, "flat"):
            return None
        return _finding(
            payload,
            cfg.evidence_cap,
            slot="direction",
            signature=str(res["direction"]),
            dimension=q.plan.get("time_bucket"),
            value=res.get("end_value"),
            effect=None if change is None else round(float(change) / 100.0, 6),
            n=int(payload.get("evidence_count") or 0),
            p_value=p,
        )

    return _read(payload, res.get("p_value"), found)


def _read_peak(q: StandingQuestion, payload: dict[str, Any], cfg: AnalysisConfig) -> Evaluation:
    """The busiest hour of a breakdown by hour, tested against the runner-up (binomial test on
    the two hours' footfall: is the top one's share above one half?)."""
    from scipy import stats

    parts = sorted(payload["result"].get("parts") or [], key=lambda x: (-float(x["value"]), int(x["key"])))
    if len(parts) < 2:
        return Evaluation(True)
    top, second = parts[0], parts[1]
    a, b = int(top["n"]), int(second["n"])  # arrivals (events): independent, unlike persons
    if min(a, b) < cfg.min_events_per_group:
        return Evaluation(True)
    p = float(f"{stats.binomtest(a, a + b, 0.5, alternative='greater').pvalue:.6g}")

    def found(p: float | None) -> Finding:
        return _finding(
            payload,
            cfg.evidence_cap,
            slot="hour",
            signature=str(top["key"]),
            metric="peak_hour",
            dimension="hour",
            value=int(top["key"]),
            effect=_rel(float(top["value"]), float(second["value"])),
            n=int(min(int(top["n"]), int(second["n"]))),
            p_value=p,
            words={"subject": second["key"]},
        )

    return _read(payload, p, found)


def _read_periodicity(q: StandingQuestion, payload: dict[str, Any], cfg: AnalysisConfig) -> Evaluation:
    res = payload["result"]

    def found(p: float | None) -> Finding | None:
        if res.get("period") is None or float(res.get("strength") or 0) < MIN_PERIOD_STRENGTH:
            return None
        return _finding(
            payload,
            cfg.evidence_cap,
            slot="period",
            signature=str(res["period"]),
            dimension="date",
            value=res["period"],
            effect=None,
            n=int(payload.get("evidence_count") or 0),
            p_value=None,
        )

    return _read(payload, None, found)


def _read_correlation(q: StandingQuestion, payload: dict[str, Any], cfg: AnalysisConfig) -> Evaluation:
    res = payload["result"]

    def found(p: float | None) -> Finding | None:
        if res.get("r") is None or p is None:
            return None
        return _finding(
            payload,
            cfg.evidence_cap,
            slot="r",
            signature="positive" if float(res["r"]) > 0 else "negative",
            dimension="date",
            value=res["r"],
            effect=None,
            n=int(res.get("n") or 0),
            p_value=p,
            words={"second": q.plan.get("second_metric")},
        )

    return _read(payload, res.get("p_value"), found)


def _read_anomaly(q: StandingQuestion, payload: dict[str, Any], cfg: AnalysisConfig) -> Evaluation:
    if not _usable(payload):
        return Evaluation(True)
    out = []
    for a in payload["result"].get("anomalies") or []:
        if float(a.get("expected") or 0) < cfg.min_events_per_group:
            continue  # a day expected to hold fewer than the minimum evidence is thin data
        day = str(a["bucket"])[:10]
        out.append(
            _finding(
                payload,
                cfg.evidence_cap,
                slot=f"day:{day}",
                signature=str(a.get("direction") or ""),
                dimension="date",
                value=a["value"],
                effect=_rel(a.get("value"), a.get("expected")),
                n=int(payload.get("evidence_count") or 0),
                p_value=None,
                starts=day,
            )
        )
    return Evaluation(True, out)


def _read_co_occurrence(q: StandingQuestion, payload: dict[str, Any], cfg: AnalysisConfig) -> Evaluation:
    res = payload["result"]
    pairs = res.get("pairs") or []

    def found(p: float | None) -> Finding | None:
        if not pairs or p is None or float(pairs[0].get("lift") or 0) < MIN_LIFT:
            return None
        pair = pairs[0]
        return _finding(
            payload,
            cfg.evidence_cap,
            slot=f"{pair['a']}|{pair['b']}",
            signature="together",
            metric="event_count",
            dimension="event_type",
            value=pair["lift"],
            effect=round(float(pair["lift"]) - 1.0, 6),
            n=int(pair.get("count") or 0),
            p_value=p,
            words={"a": pair["a"], "b": pair["b"]},
        )

    return _read(payload, res.get("p_value") if pairs else None, found)


READERS: dict[str, Callable[[StandingQuestion, dict[str, Any], AnalysisConfig], Evaluation]] = {
    "compare": _read_compare,
    "profile": _read_profile,
    "trend": _read_trend,
    "peak": _read_peak,
    "periodicity": _read_periodicity,
    "correlation": _read_correlation,
    "anomaly": _read_anomaly,
    "co_occurrence": _read_co_occurrence,
}


def _best_split(series: list[dict[str, Any]]) -> tuple[int, float] | None:
    """The best change point of a daily proportion series: the index of the first day after it
    (binomial log-likelihood of two levels over every split) and its likelihood-ratio statistic
    (``2 * (LL_split - LL_one_level)``); None when the series has a gap."""
    days = [
        (round(float(s["value"]) * int(s["n"])), int(s["n"])) for s in series if s.get("value") is not None
    ]
    if len(days) != len(series) or len(days) < 2:
        return None

    def ll(e: int, n: int) -> float:
        if n == 0 or e == 0 or e == n:
            return 0.0
        p = e / n
        return e * math.log(p) + (n - e) * math.log(1 - p)

    tot_e = sum(e for e, _ in days)
    tot_n = sum(n for _, n in days)
    null = ll(tot_e, tot_n)
    best: tuple[float, int] | None = None
    run_e = run_n = 0
    for i in range(1, len(days)):
        run_e += days[i - 1][0]
        run_n += days[i - 1][1]
        score = ll(run_e, run_n) + ll(tot_e - run_e, tot_n - run_n)
        if best is None or score > best[0] + 1e-9:
            best = (score, i)
    return (best[1], 2.0 * (best[0] - null)) if best else None


def _evaluate_change(
    q: StandingQuestion, asker: AskService, store_id: str, since: datetime, until: datetime, tz: ZoneInfo
) -> Evaluation:
    from scipy import stats

    cfg = asker.config.analysis
    payload = asker.run_plan(_window_plan(q, store_id, since, until), cite=False)
    if payload.get("status") != "ok":
        return Evaluation(answered=False)
    metric = q.plan["target_metric"]
    series = payload["result"].get("series") or []
    best = _best_split(series)
    split = None
    if best is not None:
        split, lr = best
        if not MIN_SEGMENT_DAYS <= split <= len(series) - MIN_SEGMENT_DAYS:
            # the best split lies too near the window's edge to be tested: when it stands out (a
            # change that has just happened, or one the window is leaving) there is no verdict
            # yet; when it does not, the window holds one level
            if stats.chi2.sf(lr, 1) < ALPHA / max(1, len(series) - 1):
                return Evaluation(answered=False)
            split = None
    candidate: Finding | None = None
    tested: list[float] = []
    if split is not None:
        day = date.fromisoformat(str(series[split]["bucket"])[:10])
        at = datetime.combine(day, time(0), tz)
        plan = {
            "intent": "compare",
            "target_metric": metric,
            "compare": {
                "periods": [
                    {"label": "before", "time_range": {"since": since.isoformat(), "until": at.isoformat()}},
                    {"label": "after", "time_range": {"since": at.isoformat(), "until": until.isoformat()}},
                ]
            },
            "filters": {"store_id": [store_id]},
        }
        cmp = asker.run_plan(plan, cite=False)
        if cmp.get("status") == "ok":
            res = cmp["result"]
            groups = {str(g["key"]): g for g in res.get("groups") or []}
            before, after = groups.get("before"), groups.get("after")
            # the split was chosen as the best of many: Bonferroni over the candidate days, and
            # that corrected p-value enters the false discovery control
            candidates = max(1, len(series) - 2 * MIN_SEGMENT_DAYS + 1)
            p = _tested(res.get("p_value"))
            family_p = None if p is None else min(1.0, p * candidates)
            if before and after and family_p is not None and family_p < ALPHA and _usable(cmp):
                effect = _rel(after["value"], before["value"])
                candidate = _finding(
                    cmp,
                    cfg.evidence_cap,
                    slot="level",
                    signature=f"change:{day.isoformat()}",
                    metric=metric,
                    dimension="date",
                    value=after["value"],
                    effect=effect,
                    n=int(min(before["n"], after["n"])),
                    p_value=res.get("p_value"),
                    starts=day.isoformat(),
                    family_p=family_p,
                )
            elif family_p is not None and _usable(cmp):
                tested.append(family_p)
    level = asker.run_plan(
        _window_plan(
            StandingQuestion("level", {"intent": "aggregate", "target_metric": metric}),
            store_id,
            since,
            until,
        ),
        cite=False,
    )
    if level.get("status") != "ok" or level.get("low_confidence") or level["result"].get("value") is None:
        # no level to fall back on: a change that fails the control changes nothing
        return Evaluation(True, [candidate]) if candidate else Evaluation(answered=False)
    res = level["result"]
    held = _finding(
        level,
        cfg.evidence_cap,
        slot="level",
        signature="level",
        metric=metric,
        dimension="date",
        value=res["value"],
        effect=None,
        n=int(res.get("n") or 0),
        p_value=None,
    )
    if candidate is not None:
        return Evaluation(True, [candidate], fallback=[held])
    return Evaluation(True, [held], tested=tested)


def evaluate(
    q: StandingQuestion, asker: AskService, store_id: str, since: datetime, until: datetime, tz: ZoneInfo
) -> Evaluation:
    """Ask standing question ``q`` over [since, until) and read its significant findings."""
    if q.kind == "change":
        return _evaluate_change(q, asker, store_id, since, until, tz)
    payload = asker.run_plan(_window_plan(q, store_id, since, until), cite=False)
    if payload.get("status") != "ok":
        return Evaluation(answered=False)
    return READERS[q.kind](q, payload, asker.config.analysis)


def control(evaluations: Sequence[Evaluation], earlier: Sequence[float] = ()) -> tuple[int, int]:
    """The false discovery control over one family of tests (every standing question a store tests
    at one evaluation point, ``earlier``: the p-values of those an earlier run tested there):
    Benjamini-Hochberg adjusted p-values (``q_value``) for the candidates; a candidate with
    q >= :data:`ALPHA` is dropped (an evaluation left with no candidate takes its ``fallback``).
    Returns (tests in the family, candidates that passed)."""
    from edge.analysis.fleet import bh_adjust

    family = [p for ev in evaluations for p in ev.family()]
    adjusted = bh_adjust([*family, *earlier])
    passed = 0
    i = 0
    for ev in evaluations:
        kept: list[Finding] = []
        tested_candidates = 0
        for f in ev.findings:
            if f.family_p is None:
                kept.append(f)
                continue
            f.q_value = float(f"{adjusted[i]:.6g}")
            i += 1
            tested_candidates += 1
            if adjusted[i - 1] < ALPHA:
                kept.append(f)
                passed += 1
        i += len(ev.tested)
        if tested_candidates and not kept:
            kept = list(ev.fallback)
        ev.findings = kept
    return len(family) + len(earlier), passed


# -- the state of the facts -----------------------------------------------------------------------


def fact_id(store_id: str, question: str, slot: str, signature: str, valid_from: str) -> str:
    digest = hashlib.sha256(f"{store_id}|{question}|{slot}|{signature}|{valid_from}".encode()).hexdigest()
    return f"fact_{digest[:20]}"


def _record(
    store_id: str, question: str, kind: str, f: Finding, valid_from: str, until: str, supersedes: str | None
) -> FactRecord:
    rec = FactRecord(
        fact_id=fact_id(store_id, question, f.slot, f.signature, valid_from),
        store_id=store_id,
        question=question,
        slot=f.slot,
        signature=f.signature,
        statement={},
        metric=f.metric,
        dimension=f.dimension,
        value=f.value,
        effect=f.effect,
        n=f.n,
        p_value=f.p_value,
        confidence=f.confidence,
        evidence=f.evidence,
        evidence_count=f.evidence_count,
        valid_from=valid_from,
        valid_to=None,
        plan=f.plan,
        evaluated_until=until,
        supersedes=supersedes,
    )
    _refresh(rec, kind, f, until)
    return rec


def _refresh(rec: FactRecord, kind: str, f: Finding, until: str) -> None:
    rec.value, rec.effect, rec.n, rec.p_value, rec.q_value = f.value, f.effect, f.n, f.p_value, f.q_value
    rec.confidence, rec.evidence, rec.evidence_count = f.confidence, f.evidence, f.evidence_count
    rec.plan, rec.evaluated_until = f.plan, until
    rec.extra["uncited"] = True  # evaluated without sampling evidence: cited before it is written
    wording = "level" if kind == "change" and rec.signature == "level" else kind
    rec.statement = fact_statement(wording, rec.contract(), f.words)


@dataclass
class _Slots:
    """One question's facts while a run steps through its evaluation points."""

    open: dict[str, FactRecord]
    known: set[str]
    #: per slot, the latest ``valid_to`` of its closed facts (a new fact starts no earlier)
    ends: dict[str, str]
    changed: dict[str, FactRecord] = field(default_factory=dict)
    opened: int = 0
    closed: int = 0

    def close(self, rec: FactRecord, valid_to: str) -> None:
        rec.valid_to = max(valid_to, rec.valid_from)
        self.ends[rec.slot] = max(self.ends.get(rec.slot, rec.valid_to), rec.valid_to)
        self.changed[rec.fact_id] = rec
        self.open.pop(rec.slot, None)
        self.closed += 1

    def add(self, rec: FactRecord) -> None:
        self.changed[rec.fact_id] = rec
        self.known.add(rec.slot)
        if rec.valid_to is None:
            self.open[rec.slot] = rec
        self.opened += 1


def step(
    slots: _Slots, store_id: str, question: str, kind: str, ev: Evaluation, window_start: str, until: str
) -> None:
    """Apply one evaluation point's findings to the question's facts (module docstring)."""
    if not ev.answered:
        return
    if kind == "anomaly":
        for f in ev.findings:
            if f.slot in slots.known or f.starts is None:
                continue
            rec = _record(store_id, question, kind, f, f.starts, until, None)
            rec.valid_to = (date.fromisoformat(f.starts) + timedelta(days=1)).isoformat()
            slots.add(rec)
        return
    found = {f.slot: f for f in ev.findings}
    for slot, f in found.items():
        cur = slots.open.get(slot)
        if kind == "change":
            if f.starts is None:  # no change in the window: the open level stands
                if cur is None:
                    start = max(window_start, slots.ends.get(slot, window_start))
                    slots.add(_record(store_id, question, kind, f, start, until, None))
                elif cur.signature == "level":
                    _refresh(cur, kind, f, until)
                    slots.changed[cur.fact_id] = cur
                continue
            if cur is not None and cur.signature.startswith("change:"):
                seen = date.fromisoformat(cur.signature.split(":", 1)[1])
                if abs((date.fromisoformat(f.starts) - seen).days) <= CHANGE_TOLERANCE_DAYS:
                    _refresh(cur, kind, f, until)
                    slots.changed[cur.fact_id] = cur
                    continue
            if cur is not None and f.starts <= cur.valid_from:
                continue  # a change before the level that holds is old news
            if cur is not None:
                slots.close(cur, f.starts)
            slots.add(_record(store_id, question, kind, f, f.starts, until, cur.fact_id if cur else None))
            continue
        if cur is not None and cur.signature == f.signature:
            _refresh(cur, kind, f, until)
            slots.changed[cur.fact_id] = cur
            continue
        if cur is not None:
            slots.close(cur, cur.evaluated_until)
        start = max(window_start, slots.ends.get(slot, window_start))
        rec = _record(store_id, question, kind, f, start, until, cur.fact_id if cur else None)
        slots.add(rec)
    if kind != "change":
        for slot, cur in list(slots.open.items()):
            if slot not in found:
                slots.close(cur, cur.evaluated_until)


# -- the run ---------------------------------------------------------------------------------------


def cite(store: Store, config: AdammConfig, tz: ZoneInfo, records: Sequence[FactRecord]) -> None:
    """Cite the events behind each record refreshed in this run: its plan asked again as of its
    evaluation point, with evidence. The evaluations ask without sampling evidence (most of a
    run's answers make no fact, or are refreshed again a week later); the answer is the same, so
    the evidence is what the evaluation would have cited."""
    cap = config.analysis.evidence_cap
    for rec in records:
        if not rec.extra.pop("uncited", False):
            continue
        at = datetime.combine(date.fromisoformat(rec.evaluated_until), time(0), tz)
        got = AskService(store, config, now=at).run_plan(rec.plan)
        if got.get("status") == "ok":
            rec.evidence = [str(e["event_id"]) for e in got.get("evidence") or []][:cap]
            rec.evidence_count = int(got.get("evidence_count") or len(rec.evidence))


def _local_day(t: datetime | None, tz: ZoneInfo) -> date | None:
    if t is None:
        return None
    aware = t if t.tzinfo is not None else t.replace(tzinfo=UTC)
    return aware.astimezone(tz).date()


def _next_point(d: date) -> date:
    return d + timedelta(days=(EVALUATION_WEEKDAY - d.weekday()) % 7)


def evaluation_points(
    q: StandingQuestion, earliest: date, latest: date, today: date, high_water: str | None
) -> list[date]:
    """The evaluation dates of ``q`` after ``high_water`` whose window the data covers.

    A point is evaluated once the memory holds events of its own day (``latest`` >= the point), so
    no answer depends on how far the data reached when the run happened: the coverage rules see
    data past every window's end in a nightly run as in one run over months of history."""
    first = _next_point(earliest + timedelta(days=q.window_days))
    if high_water is not None:
        first = max(first, date.fromisoformat(high_water) + timedelta(days=7))
    last = min(today, latest)
    out = []
    d = first
    while d <= last:
        out.append(d)
        d += timedelta(days=7)
    return out


def _stores(store: Store) -> list[str]:
    with store.read() as conn:
        return [str(r[0]) for r in conn.execute("SELECT store_id FROM stores ORDER BY store_id")]


def distil_facts(
    store: Store,
    config: AdammConfig,
    now: datetime | None = None,
    *,
    questions: dict[str, StandingQuestion] | None = None,
) -> dict[str, Any]:
    """Distil the facts of every standing question from the data new since its high-water mark.

    ``now``: the run's clock (naive = store-local, as ``--now``; default: the clock); no point
    after it is evaluated.
    Each question's new facts, closings and high-water mark are written in one transaction.
    Every question is evaluated at all its points first; then the tests of each store and
    evaluation point (every standing question there, one family) pass the false discovery control
    (:func:`control`) before anything becomes a fact; then the facts are stepped and written.
    Returns ``{"evaluations", "tested", "passed", "fdr", "opened", "closed", "current",
    "high_water": {store: {question: date}}}``: ``tested`` the p-values this run tested, ``passed``
    the findings that passed the control at FDR ``fdr``."""
    ref = now or datetime.now(UTC)
    registry = STANDING_QUESTIONS if questions is None else questions
    report: dict[str, Any] = {
        "evaluations": 0,
        "tested": 0,
        "passed": 0,
        "fdr": ALPHA,
        "opened": 0,
        "closed": 0,
        "current": 0,
        "high_water": {},
    }
    source = store.event_source()
    vocab = source.vocabulary()
    for store_id in _stores(store):
        tz = ZoneInfo(store.timezone(store_id))
        cov = source.coverage(EventFilter(store_ids=(store_id,)))
        earliest, latest = _local_day(cov.earliest, tz), _local_day(cov.latest, tz)
        today = (ref if ref.tzinfo is not None else ref.replace(tzinfo=tz)).astimezone(tz).date()
        if earliest is None or latest is None:
            continue
        asked_now: list[tuple[str, StandingQuestion, str | None, _Slots, list[tuple[date, Evaluation]]]] = []
        for name, asked in registry.items():
            q = in_memory_words(asked, vocab)
            if q is None:
                logger.info(
                    "facts: %s not asked of %s: the memory has no label of its groups' kind", name, store_id
                )
                continue
            with store.read() as conn:
                mark = repo.high_water(conn, store_id, name)
                slots = _Slots(
                    repo.open_facts(conn, store_id, name),
                    repo.known_slots(conn, store_id, name),
                    repo.slot_ends(conn, store_id, name),
                )
            evals = []
            for point in evaluation_points(q, earliest, latest, today, mark):
                until = datetime.combine(point, time(0), tz)
                asker = AskService(store, config, now=until)
                evals.append(
                    (point, evaluate(q, asker, store_id, until - timedelta(days=q.window_days), until, tz))
                )
            asked_now.append((name, q, mark, slots, evals))
        # one family per evaluation point: every question tested there (earlier runs' too)
        families: dict[date, list[Evaluation]] = {}
        for *_, evals in asked_now:
            for point, ev in evals:
                families.setdefault(point, []).append(ev)
        # what each question tested at each point, kept (fact_tests) before the control drops any
        tests = {name: {d.isoformat(): ev.family() for d, ev in evals} for name, *_, evals in asked_now}
        with store.read() as conn:
            earlier = repo.tested_at(
                conn,
                store_id,
                [d.isoformat() for d in sorted(families)],
                {
                    d.isoformat(): {n for n, by_point in tests.items() if d.isoformat() in by_point}
                    for d in families
                },
            )
        for d, evs in sorted(families.items()):
            tested, passed = control(evs, earlier[d.isoformat()])
            report["tested"] += tested - len(earlier[d.isoformat()])
            report["passed"] += passed
        for name, q, mark, slots, evals in asked_now:
            points = [point for point, _ in evals]
            for point, ev in evals:
                since = datetime.combine(point, time(0), tz) - timedelta(days=q.window_days)
                step(slots, store_id, name, q.kind, ev, since.date().isoformat(), point.isoformat())
            if points:
                cite(store, config, tz, list(slots.changed.values()))
                repo.apply_run(
                    store,
                    store_id,
                    name,
                    list(slots.changed.values()),
                    points[-1].isoformat(),
                    tests[name],
                )
            report["evaluations"] += len(points)
            report["opened"] += slots.opened
            report["closed"] += slots.closed
            report["high_water"].setdefault(store_id, {})[name] = points[-1].isoformat() if points else mark
    with store.read() as conn:
        report["current"] = len(repo.list_facts(conn, current_only=True))
    logger.info("facts: %s", report)
    return report
