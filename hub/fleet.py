"""Does a finding hold in every store: the hub's fleet check (CONTRACT.md section 7).

Owned by :mod:`hub`; called by ``adamm-hub facts`` (:mod:`hub.cli`). For every kind of fact that
any store has learned (its kind of statement, :func:`edge.presentation.facts.fact_kind`, with the
same metric, dimension, subject and baseline), the same test is run in every store through the
engine over the hub's rollups (:class:`hub.source.HubSource`): the store's effect, its 95%
interval and p-value, the events behind it. Kinds tested (:data:`TESTS`):

- ``compare``: two groups of one dimension ("rain lifts order value against sunny days"), the
  engine's comparison; effect relative to the baseline group;
- ``profile``: weekday footfall at the learned hour against the weekday hourly mean (two-sided
  binomial test on the arrivals); effect relative to the mean;
- ``peak``: footfall at the learned peak hour against the store's busiest other hour (two-sided
  binomial test); effect relative to that hour;
- ``trend``: the metric's trend over the last :data:`TREND_DAYS` days (the engine's trend test);
  effect the relative change over the window;
- ``correlation``: the two metrics by day (the engine's correlation test); effect ``r``.

The p-values of every store and kind are controlled together for false discoveries
(Benjamini-Hochberg) before any store is said to hold or reverse a finding; the stores that hold
a test pool into a random-effects estimate with its interval and I^2 (:mod:`edge.analysis.fleet`).
Facts of the other kinds are listed under ``untested`` with the reason (:data:`NOT_TESTED`): a
co-occurrence needs the events' own times, which the hub's daily rollups do not hold; a change,
an anomaly or an action's effect is said of one store's own date or action.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from statistics import median
from typing import Any

from edge.analysis import engine, labels
from edge.analysis import fleet as F
from edge.analysis.source import EventFilter, EventRow, Period
from edge.config import AnalysisConfig
from edge.presentation.facts import compare_groups, correlated_metric, fact_kind
from hub.db import HubDB
from hub.source import HubSource, _day_start

logger = logging.getLogger(__name__)

#: dimensions whose groups every store has (a comparison that can be run in each)
CATEGORICAL = ("weather", "is_weekend", "promotion", "zone", "product_category", "speech_emotion")
#: the evidence ids kept per store test (the engine's representative sample)
EVIDENCE_PER_STORE = 5


#: the window of a trend re-tested across the fleet (the standing question's, 12 weeks)
TREND_DAYS = 84
#: the kinds of fact the fleet check cannot re-test in every store, and why
NOT_TESTED = {
    "co_occurrence": "not testable from rollups: two events within the hour need the events' own times",
    "change": "a change at one store's own date: nothing to re-test in the other stores",
    "anomaly": "one store's unusual day: nothing to re-test in the other stores",
    "action_effect": "an action done in one store: the other stores did not do it",
    "periodicity": "a repetition strength with no significance test to control",
    "level": "a level, not a test",
}


@dataclass(frozen=True, order=True)
class Kind:
    """A kind of fact across the fleet: its statement's kind, metric, dimension, subject and
    baseline (a compare's groups as kinds of value; a profile's or peak's hour; a correlation's
    second metric)."""

    kind: str
    metric: str
    dimension: str
    subject: str
    baseline: str

    @property
    def name(self) -> str:
        head = f"{self.metric}/{self.dimension}/{self.subject}_vs_{self.baseline}"
        return head if self.kind == "compare" else f"{self.kind}:{head}"


class FleetSource(HubSource):
    """The hub's rollups as the fleet check reads them: the same answers as :class:`HubSource`,
    evidence cited from the latest days of the rows behind each test (one indexed query) instead
    of spread evenly over every day (two queries, one of them a numbered scan): a thousand stores
    are tested at a time, and each keeps only :data:`EVIDENCE_PER_STORE` event ids."""

    def sample_events(
        self, flt: EventFilter, limit: int, periods: Sequence[Period] = ()
    ) -> tuple[list[EventRow], int]:
        if limit <= 0:
            return super().sample_events(flt, limit, periods)
        q = self._compile(flt, (), periods)
        got = self.db.query(
            "SELECT store_id, local_date, event_type, last_event_id, events FROM hub_rollup "
            f"WHERE {q.where} ORDER BY store_id, local_date DESC LIMIT ?",
            (*q.params, limit),
        )
        zones = self.zones()
        out = [
            EventRow(
                event_id=str(eid),
                timestamp=_day_start(str(d), zones.get(str(s))).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                event_type=str(et),
                store_id=str(s),
            )
            for s, d, et, eid, _n in got
            if eid
        ]
        return out, int(sum(float(n or 0) for *_, n in got))


def store_facts(db: HubDB, *, include_closed: bool = False) -> list[dict[str, Any]]:
    """Every store's facts (contract shape plus ``store_id``), current first, by store."""
    out = []
    for store, body in db.query("SELECT store_id, body FROM hub_facts ORDER BY store_id, fact_id"):
        fact = {**json.loads(body), "store_id": store}
        if include_closed or not fact.get("valid_to"):
            out.append(fact)
    out.sort(key=lambda f: (f.get("valid_to") is not None, f["store_id"]))
    return out


def effect_facts(db: HubDB) -> dict[str, dict[str, Any]]:
    """action_id -> the current ``action_effect`` fact a store synced for it (with ``store_id``)."""
    out: dict[str, dict[str, Any]] = {}
    for store, body in db.query("SELECT store_id, body FROM hub_facts ORDER BY store_id, fact_id"):
        fact = json.loads(body)
        if fact.get("action_id") and not fact.get("valid_to"):
            out[str(fact["action_id"])] = {**fact, "store_id": store}
    return out


def _candidates(dim: str, vocab_values: tuple[str, ...]) -> list[Any]:
    if dim == "is_weekend":
        return [True, False]
    return list(vocab_values)


def _kind(f: dict[str, Any], attributes: dict[str, tuple[str, ...]]) -> Kind | str | None:
    """The fleet kind of current fact ``f``; a string: the reason it is not tested; None: it
    cannot be placed (its groups are not among the fleet's values)."""
    kind = fact_kind(f)
    dim, metric = str(f.get("dimension") or ""), str(f.get("metric") or "")
    if kind in NOT_TESTED:
        return NOT_TESTED[kind]
    if kind == "compare":
        if dim not in CATEGORICAL or not metric or f.get("effect") is None:
            return "a comparison on a dimension the hub's rollups do not hold"
        groups = compare_groups(f, _candidates(dim, attributes.get(dim, ())))
        if groups is None:
            logger.debug("fact %s: its groups are not among the fleet's values", f.get("fact_id"))
            return None
        # stores name their values as they like (rain, rainy, 雨): a kind is the kind of value
        subject, base = (labels.kind_of(dim, g) or _key(g) for g in groups)
        return Kind(kind, metric, dim, subject, base)
    if kind in ("profile", "peak"):
        if not isinstance(f.get("value"), int | float):
            return None
        base = "hourly_mean" if kind == "profile" else "next_busiest_hour"
        return Kind(kind, metric, "hour", str(int(f["value"])), base)
    if kind == "trend":
        if metric == "peak_hour":  # an hour of the day moves by hours: no percent change to pool
            return "a peak hour moves by hours, not by a percentage: not pooled across stores"
        return Kind(kind, metric, dim, "change", f"{TREND_DAYS}_days")
    second = correlated_metric(f)
    return None if second is None else Kind(kind, metric, "date", second, "no_correlation")


def kinds_of(
    facts: list[dict[str, Any]], attributes: dict[str, tuple[str, ...]]
) -> tuple[dict[Kind, list[dict[str, Any]]], dict[str, list[dict[str, Any]]]]:
    """Current facts grouped by :class:`Kind`, and those not tested by their kind of statement
    (with the reason in :data:`NOT_TESTED`)."""
    kinds: dict[Kind, list[dict[str, Any]]] = {}
    untested: dict[str, list[dict[str, Any]]] = {}
    for f in facts:
        if f.get("valid_to"):
            continue
        k = _kind(f, attributes)
        if isinstance(k, Kind):
            kinds.setdefault(k, []).append(f)
        elif k is not None:
            untested.setdefault(fact_kind(f), []).append({**f, "reason": k})
    return kinds, untested


def _labels(dim: str, kind: str, known: tuple[str, ...]) -> list[str]:
    """The fleet's own values of ``kind`` for ``dim`` (most frequent first), else the kind itself."""
    return labels.values_of(dim, kind, known) or [kind]


def _key(v: Any) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)


def _raw(v: str, dim: str) -> Any:
    return {"true": True, "false": False}.get(v, v) if dim == "is_weekend" else v


def _store_test(
    src: HubSource, store: str, kind: Kind, now: datetime, config: AnalysisConfig
) -> dict[str, Any]:
    """The kind's test in ``store`` (:data:`TESTS`)."""
    return TESTS[kind.kind](src, store, kind, now, config)


def _empty(store: str) -> dict[str, Any]:
    return {"store_id": store, "effect": None, "ci": None, "p_value": None, "n": 0}


def _ask(
    src: HubSource, store: str, plan: dict[str, Any], now: datetime, config: AnalysisConfig
) -> dict[str, Any]:
    plan = {**plan, "filters": {**plan.get("filters", {}), "store_id": [store]}, "language": "en"}
    return engine.run_plan(plan, src, question=f"fleet check {store}", now=now, config=config)


def _tested(
    row: dict[str, Any], payload: dict[str, Any], effect: float, p: float | None, n: int
) -> dict[str, Any]:
    row.update(
        effect=effect,
        p_value=p,
        n=n,
        evidence=[e["event_id"] for e in payload.get("evidence") or []][:EVIDENCE_PER_STORE],
    )
    if p is not None:
        row["ci"] = F.interval(effect, F.se_from_p(effect, float(p)))
    return row


def _hours(
    src: HubSource, store: str, kind: Kind, now: datetime, config: AnalysisConfig, weekdays: bool
) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
    plan: dict[str, Any] = {"intent": "breakdown", "target_metric": "footfall", "group_by": ["hour"]}
    if weekdays:
        plan["filters"] = {"days_of_week": [0, 1, 2, 3, 4]}
    payload = _ask(src, store, plan, now, config)
    row = _empty(store)
    if payload["status"] != "ok":
        row["missing"] = payload.get("missing") or []
        return row, payload, []
    return row, payload, list(payload["result"].get("parts") or [])


def _profile_test(
    src: HubSource, store: str, kind: Kind, now: datetime, config: AnalysisConfig
) -> dict[str, Any]:
    """Weekday footfall at the hour against the weekday hourly mean: two-sided binomial test of
    the hour's arrivals against an even share."""
    from scipy import stats

    row, payload, parts = _hours(src, store, kind, now, config, weekdays=True)
    hour = next((x for x in parts if _key(x["key"]) == kind.subject), None)
    total = sum(float(x["value"]) for x in parts)
    if hour is None or len(parts) < 2 or total <= 0:
        return row
    k = len(parts)
    arrivals = sum(int(x["n"]) for x in parts)
    p = float(stats.binomtest(int(hour["n"]), arrivals, 1.0 / k).pvalue)
    effect = (float(hour["value"]) - total / k) / (total / k)
    return _tested(row, payload, effect, p, int(hour["n"]))


def _peak_test(
    src: HubSource, store: str, kind: Kind, now: datetime, config: AnalysisConfig
) -> dict[str, Any]:
    """Footfall at the hour against the store's busiest other hour: two-sided binomial test of the
    two hours' arrivals (is the hour's share one half?)."""
    from scipy import stats

    row, payload, parts = _hours(src, store, kind, now, config, weekdays=False)
    hour = next((x for x in parts if _key(x["key"]) == kind.subject), None)
    others = sorted((x for x in parts if x is not hour), key=lambda x: (-float(x["value"]), int(x["key"])))
    if hour is None or not others or not float(others[0]["value"]):
        return row
    a, b = int(hour["n"]), int(others[0]["n"])
    p = float(stats.binomtest(a, a + b, 0.5).pvalue) if a + b else None
    effect = (float(hour["value"]) - float(others[0]["value"])) / float(others[0]["value"])
    return _tested(row, payload, effect, p, min(a, b))


def _engine_test(
    src: HubSource,
    store: str,
    plan: dict[str, Any],
    effect_of: Callable[[dict[str, Any], dict[str, Any]], tuple[float | None, int]],
    now: datetime,
    config: AnalysisConfig,
) -> dict[str, Any]:
    """``plan`` asked of ``store``, tested as the engine tests it: ``effect_of(result, payload)``
    is the effect and n; a store whose answer is not ``ok``, or has no effect or p-value, gives
    an untested row with what was missing."""
    payload = _ask(src, store, plan, now, config)
    row = _empty(store)
    res = payload.get("result") or {}
    effect, n = effect_of(res, payload) if payload["status"] == "ok" else (None, 0)
    if effect is None or res.get("p_value") is None:
        row["missing"] = payload.get("missing") or []
        return row
    return _tested(row, payload, effect, float(res["p_value"]), n)


def _trend_test(
    src: HubSource, store: str, kind: Kind, now: datetime, config: AnalysisConfig
) -> dict[str, Any]:
    """The metric's trend over the last :data:`TREND_DAYS` days (the engine's trend test); the
    effect is the change, as a fraction."""
    since = now - timedelta(days=TREND_DAYS)
    plan = {
        "intent": "trend",
        "target_metric": kind.metric,
        "time_bucket": kind.dimension if kind.dimension in ("day", "week", "month") else "week",
        "filters": {"time_range": {"since": since.isoformat(), "until": now.isoformat()}},
    }

    def change(res: dict[str, Any], payload: dict[str, Any]) -> tuple[float | None, int]:
        pct = res.get("change_pct")
        return (None if pct is None else float(pct) / 100.0), int(payload.get("evidence_count") or 0)

    return _engine_test(src, store, plan, change, now, config)


def _correlation_test(
    src: HubSource, store: str, kind: Kind, now: datetime, config: AnalysisConfig
) -> dict[str, Any]:
    """The two metrics by day (the engine's correlation test); the effect is ``r``."""
    plan = {
        "intent": "correlation",
        "target_metric": kind.metric,
        "second_metric": kind.subject,
        "time_bucket": "day",
    }

    def r_of(res: dict[str, Any], payload: dict[str, Any]) -> tuple[float | None, int]:
        r = res.get("r")
        return (None if r is None else float(r)), int(res.get("n") or 0)

    return _engine_test(src, store, plan, r_of, now, config)


def _compare_test(
    src: HubSource, store: str, kind: Kind, now: datetime, config: AnalysisConfig
) -> dict[str, Any]:
    """The kind's comparison in ``store``, in the store's own labels for the two kinds of value
    (the first pair of the fleet's labels the store has data for)."""
    metric, dim, subject_kind, base_kind = kind.metric, kind.dimension, kind.subject, kind.baseline
    known = src.vocabulary().attributes.get(dim, ())
    row: dict[str, Any] = _empty(store)
    for subject in _labels(dim, subject_kind, known):
        for baseline in _labels(dim, base_kind, known):
            row = _store_pair(src, store, (metric, dim, subject, baseline), now, config)
            if row["p_value"] is not None:
                return row
    return row


def _store_pair(
    src: HubSource, store: str, kind: tuple[str, ...], now: datetime, config: AnalysisConfig
) -> dict[str, Any]:
    metric, dim, subject, baseline = kind
    plan = {
        "intent": "compare",
        "target_metric": metric,
        "compare": {"dimension": dim, "groups": [_raw(subject, dim), _raw(baseline, dim)]},
        "filters": {"store_id": [store]},
        "language": "en",
    }
    p = engine.run_plan(plan, src, question=f"fleet check {store}", now=now, config=config)
    row: dict[str, Any] = {"store_id": store, "effect": None, "ci": None, "p_value": None, "n": 0}
    if p["status"] != "ok":
        row["missing"] = p.get("missing") or []
        return row
    groups = {_key(g["key"]).lower(): g for g in p["result"].get("groups") or []}
    a, b = groups.get(subject.lower()), groups.get(baseline.lower())
    if a is None or b is None or not b["value"]:
        return row
    effect = (float(a["value"]) - float(b["value"])) / abs(float(b["value"]))
    pv = p["result"].get("p_value")
    row.update(
        effect=effect,
        p_value=pv,
        n=int(min(a["n"], b["n"])),
        test=p["result"].get("test"),
        evidence=[e["event_id"] for e in p["evidence"][:EVIDENCE_PER_STORE]],
    )
    if pv is not None:
        row["ci"] = F.interval(effect, F.se_from_p(effect, float(pv)))
    return row


#: the test of each kind of fact in one store (effect, interval, p-value, n, evidence)
TESTS: dict[str, Callable[[HubSource, str, Kind, datetime, AnalysisConfig], dict[str, Any]]] = {
    "compare": _compare_test,
    "profile": _profile_test,
    "peak": _peak_test,
    "trend": _trend_test,
    "correlation": _correlation_test,
}


def _title(k: Kind, lang: str) -> str:
    """A fleet row's kind in words."""
    from edge.analysis.operators import _words as W
    from edge.presentation.facts import metric_label

    zh = lang == "zh"
    m = metric_label(k.metric, lang)
    if k.kind == "compare":
        subj = W.value_label(k.dimension, _raw(k.subject, k.dimension), lang)
        base = W.value_label(k.dimension, _raw(k.baseline, k.dimension), lang)
        return f"{m}：{subj}对比{base}" if zh else f"{m}, {subj} vs {base}"
    hour = W.hour_label(int(k.subject), lang) if k.subject.isdigit() else k.subject
    if k.kind == "profile":
        return (
            f"工作日 {hour} {m}对比各时段平均" if zh else f"weekday {m} at {hour} vs the weekday hourly mean"
        )
    if k.kind == "peak":
        return f"高峰时段 {hour} 对比次高时段" if zh else f"peak hour {hour} vs the next busiest hour"
    if k.kind == "trend":
        return f"{m}近 {TREND_DAYS} 天的变化" if zh else f"{m} shifting over the last {TREND_DAYS} days"
    second = metric_label(k.subject, lang)
    return f"{m}与{second}按天相关" if zh else f"{m} and {second} correlate by day"


def fleet_check(db: HubDB, *, now: datetime, config: AnalysisConfig | None = None) -> dict[str, Any]:
    """``{"facts": [...], "fleet": [...], "tested": N}`` (CONTRACT.md section 7's
    ``adamm-hub facts --json`` plus ``tested``: the size of the family the FDR control ran over,
    and ``untested``: the kinds of the stores' facts not tested across stores, each with its
    reason and facts)."""
    cfg = config or AnalysisConfig()
    src = FleetSource(db)
    vocab = src.vocabulary()
    facts = store_facts(db)
    kinds, untested = kinds_of(facts, vocab.attributes)
    rows: list[tuple[Kind, list[dict[str, Any]]]] = []
    for kind in sorted(kinds):
        tests = [_store_test(src, s, kind, now, cfg) for s in sorted(vocab.store_ids)]
        rows.append((kind, tests))
    # one family: every store of every kind with a test, controlled together
    flat = [t for _, tests in rows for t in tests if t["p_value"] is not None]
    for t, adj in zip(flat, F.bh_adjust([float(t["p_value"]) for t in flat]), strict=True):
        t["p_adjusted"] = adj
    fleet = []
    for kind, tests in rows:
        learned = [float(f["effect"] if kind.kind != "correlation" else f["value"]) for f in kinds[kind]]
        direction = 1 if median(learned) > 0 else -1
        for t in tests:
            thin = t["p_value"] is None or t["n"] < cfg.min_events_per_group
            t["verdict"] = F.verdict(t["effect"], t.get("p_adjusted"), direction, thin=thin)
        pool = [
            (t["effect"], F.se_from_p(t["effect"], float(t["p_value"])))
            for t in tests
            if t["verdict"] != "thin"
        ]
        pooled = F.random_effects([e for e, s in pool if s], [s for _, s in pool if s])
        for f in kinds[kind]:
            f["fleet_kind"] = kind.name  # the store's fact -> its fleet row
        fleet.append(
            {
                "kind": kind.name,
                "fact_kind": kind.kind,
                "title": {lang: _title(kind, lang) for lang in ("zh", "en")},
                "metric": kind.metric,
                "dimension": kind.dimension,
                "subject": kind.subject,
                "baseline": kind.baseline,
                "learned_in": sorted({str(f["store_id"]) for f in kinds[kind]}),
                "stores": tests,
                "pooled": None
                if pooled is None
                else {"effect": pooled.effect, "ci": pooled.ci, "i2": pooled.i2, "tau2": pooled.tau2},
                "holds_in": sum(t["verdict"] == "holds" for t in tests),
                "reversed_in": sum(t["verdict"] == "reversed" for t in tests),
                "null_in": sum(t["verdict"] == "null" for t in tests),
                "thin_in": sum(t["verdict"] == "thin" for t in tests),
                "of": len(tests),
            }
        )
    not_tested = [
        {
            "fact_kind": k,
            "reason": fs[0]["reason"],
            "facts": [{"store_id": f["store_id"], "fact_id": f["fact_id"]} for f in fs],
        }
        for k, fs in sorted(untested.items())
    ]
    return {"facts": facts, "fleet": fleet, "tested": len(flat), "untested": not_tested}


_VERDICT = {
    "en": {"holds": "holds", "reversed": "reversed", "null": "no effect", "thin": "too little data"},
    "zh": {"holds": "成立", "reversed": "相反", "null": "无显著差异", "thin": "数据太少"},
}


def _eff(k: dict[str, Any], x: float | None) -> str:
    """A row's effect as its kind reads: a correlation's r, else a relative change in percent."""
    if k.get("fact_kind") == "correlation":
        return "-" if x is None else f"r={x:+.2f}"
    return _pct(x)


def _eff_ci(k: dict[str, Any], ci: list[float] | None) -> str:
    if k.get("fact_kind") == "correlation":
        return "" if not ci else f"[{ci[0]:+.2f}, {min(1.0, ci[1]):+.2f}]"
    return _ci(ci)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:+.1f}%"


def _ci(ci: list[float] | None) -> str:
    return "" if not ci else f"[{ci[0] * 100:+.1f}%, {ci[1] * 100:+.1f}%]"


def render(result: dict[str, Any], lang: str) -> str:
    """``adamm-hub facts`` for a terminal, in one language."""
    zh = lang == "zh"
    lines = ["各门店已学到的结论：" if zh else "What the stores have learned:"]
    if not result["facts"]:
        lines.append(
            "  （还没有：门店运行 adamm maintain 后得出结论，再经 adamm sync 同步到总部）"
            if zh
            else "  (none yet: a store learns facts in adamm maintain and sends them with adamm sync)"
        )
    for f in result["facts"]:
        closed = (
            f" （至 {f['valid_to']} 止）"
            if zh and f.get("valid_to")
            else (f" (until {f['valid_to']})" if f.get("valid_to") else "")
        )
        lines.append(f"  {f['store_id']}  {(f.get('statement') or {}).get(lang, '')}{closed}")
    lines.append("")
    lines.append(tested_line(result, lang))
    if not result["fleet"]:
        lines.append("  （没有可以跨门店检验的结论）" if zh else "  (no fact to test across stores)")
    for k in result["fleet"]:
        lines += ["  " + kind_head(k, lang)] + ["    " + line for line in store_lines(k, lang)]
    for u in result.get("untested") or []:
        stores = sorted({f["store_id"] for f in u["facts"]})
        lines.append(
            f"  未跨门店检验：{u['fact_kind']}（{'、'.join(stores)}）：{u['reason']}"
            if zh
            else f"  not tested across stores: {u['fact_kind']} ({', '.join(stores)}): {u['reason']}"
        )
    return "\n".join(lines)


def tested_line(result: dict[str, Any], lang: str) -> str:
    """The fleet section's heading: how many tests, under which false-discovery control."""
    return (
        f"在每家门店检验（共 {result['tested']} 项检验，按 Benjamini-Hochberg 控制错误发现率 5%）："
        if lang == "zh"
        else f"Tested in every store ({result['tested']} tests, false discoveries controlled at 5%, Benjamini-Hochberg):"
    )


def kind_head(k: dict[str, Any], lang: str) -> str:
    """One fleet row in a sentence: the kind, where it holds, is reversed, null or too thin, and
    the pooled effect with its interval and I² (``adamm-hub facts`` and the HQ console's Learned tab)."""
    zh = lang == "zh"
    title = k["title"][lang]
    pooled = k["pooled"]
    pool_text = (
        (
            f"合并效应 {_eff(k, pooled['effect'])} {_eff_ci(k, pooled['ci'])}，I² {pooled['i2'] * 100:.0f}%"
            if zh
            else f"pooled {_eff(k, pooled['effect'])} {_eff_ci(k, pooled['ci'])}, I² {pooled['i2'] * 100:.0f}%"
        )
        if pooled
        else ("门店太少，无法合并" if zh else "too few stores to pool")
    )
    reversed_ids = [t["store_id"] for t in k["stores"] if t["verdict"] == "reversed"]
    if zh:
        head = f"{title}（学自 {'、'.join(k['learned_in'])}）：{k['of']} 家中 {k['holds_in']} 家成立"
        if reversed_ids:
            head += f"，{'、'.join(reversed_ids)} 相反"
        head += f"，{k['null_in']} 家无显著差异，{k['thin_in']} 家数据太少；{pool_text}。"
    else:
        head = (
            f"{title} (learned in {', '.join(k['learned_in'])}): holds in {k['holds_in']} of {k['of']} stores"
        )
        if reversed_ids:
            head += f"; reversed in {', '.join(reversed_ids)}"
        head += f"; no effect in {k['null_in']}, too little data in {k['thin_in']}; {pool_text}."
    return head


def store_lines(k: dict[str, Any], lang: str) -> list[str]:
    """A fleet row's stores, one line each: effect, interval, p (and adjusted), n, verdict."""
    zh = lang == "zh"
    lines: list[str] = []
    for t in k["stores"]:
        p = t.get("p_value")
        p_text = (
            ""
            if p is None
            else (
                f"p={p:.2g}（校正后 {t['p_adjusted']:.2g}）"
                if zh
                else f"p={p:.2g} (adjusted {t['p_adjusted']:.2g})"
            )
        )
        lines.append(
            f"{t['store_id']:<16} {_eff(k, t['effect']):>8} {_eff_ci(k, t['ci']):<20} {p_text:<28} n={t['n']:<6} {_VERDICT[lang][t['verdict']]}"
        )
    return lines
