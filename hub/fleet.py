"""Does a finding hold in every store: the hub's fleet check (CONTRACT.md section 7).

Owned by :mod:`hub`; called by ``adamm-hub facts`` (:mod:`hub.cli`). For every kind of fact that
any store has learned and that compares two groups of one dimension (same metric, dimension,
subject and baseline: "rain lifts order value against sunny days"), the same comparison is run in
every store through the engine over the hub's rollups (:class:`hub.source.HubSource`): the store's
effect, its 95% interval and p-value, the events behind it. The p-values of every store and kind
are controlled for false discoveries (Benjamini-Hochberg) before any store is said to hold or
reverse the finding; the stores that hold a test pool into a random-effects estimate with its
interval and I^2 (:mod:`edge.analysis.fleet`). Facts of other kinds (a change at a date, a peak, a
trend) are listed with the store's facts but are not tested across stores: they are said of one
store's own dates and hours.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime
from statistics import median
from typing import Any

from edge.analysis import engine, labels
from edge.analysis import fleet as F
from edge.config import AnalysisConfig
from edge.presentation.facts import compare_groups
from hub.db import HubDB
from hub.source import HubSource

logger = logging.getLogger(__name__)

#: dimensions whose groups every store has (a comparison that can be run in each)
CATEGORICAL = ("weather", "is_weekend", "promotion", "zone", "product_category", "speech_emotion")
#: the evidence ids kept per store test (the engine's representative sample)
EVIDENCE_PER_STORE = 5


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


def kinds_of(
    facts: list[dict[str, Any]], attributes: dict[str, tuple[str, ...]]
) -> dict[tuple[str, ...], list[dict[str, Any]]]:
    """Current facts grouped by kind ``(metric, dimension, subject, baseline)``."""
    kinds: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for f in facts:
        dim, metric = f.get("dimension"), f.get("metric")
        if f.get("valid_to") or dim not in CATEGORICAL or not metric or f.get("effect") is None:
            continue
        groups = compare_groups(f, _candidates(str(dim), attributes.get(str(dim), ())))
        if groups is None:
            logger.debug("fact %s: its groups are not among the fleet's values", f.get("fact_id"))
            continue
        # stores name their values as they like (rain, rainy, 雨): a kind is the kind of value
        subject, base = (labels.kind_of(str(dim), g) or _key(g) for g in groups)
        kinds.setdefault((str(metric), str(dim), subject, base), []).append(f)
    return kinds


def _labels(dim: str, kind: str, known: tuple[str, ...]) -> list[str]:
    """The fleet's own values of ``kind`` for ``dim`` (most frequent first), else the kind itself."""
    return labels.values_of(dim, kind, known) or [kind]


def _key(v: Any) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)


def _raw(v: str, dim: str) -> Any:
    return {"true": True, "false": False}.get(v, v) if dim == "is_weekend" else v


def _store_test(
    src: HubSource, store: str, kind: tuple[str, ...], now: datetime, config: AnalysisConfig
) -> dict[str, Any]:
    """The kind's comparison in ``store``, in the store's own labels for the two kinds of value
    (the first pair of the fleet's labels the store has data for)."""
    metric, dim, subject_kind, base_kind = kind
    known = src.vocabulary().attributes.get(dim, ())
    row: dict[str, Any] = {}
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


def fleet_check(db: HubDB, *, now: datetime, config: AnalysisConfig | None = None) -> dict[str, Any]:
    """``{"facts": [...], "fleet": [...], "tested": N}`` (CONTRACT.md section 7's
    ``adamm-hub facts --json`` plus ``tested``: the size of the family the FDR control ran over)."""
    cfg = config or AnalysisConfig()
    src = HubSource(db)
    vocab = src.vocabulary()
    facts = store_facts(db)
    kinds = kinds_of(facts, vocab.attributes)
    rows: list[tuple[tuple[str, ...], list[dict[str, Any]]]] = []
    for kind in sorted(kinds):
        tests = [_store_test(src, s, kind, now, cfg) for s in sorted(vocab.store_ids)]
        rows.append((kind, tests))
    # one family: every store of every kind with a test, controlled together
    flat = [t for _, tests in rows for t in tests if t["p_value"] is not None]
    for t, adj in zip(flat, F.bh_adjust([float(t["p_value"]) for t in flat]), strict=True):
        t["p_adjusted"] = adj
    fleet = []
    for kind, tests in rows:
        metric, dim, subject, baseline = kind
        learned = [float(f["effect"]) for f in kinds[kind]]
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
            f["fleet_kind"] = f"{metric}/{dim}/{subject}_vs_{baseline}"  # the store's fact -> its fleet row
        fleet.append(
            {
                "kind": f"{metric}/{dim}/{subject}_vs_{baseline}",
                "metric": metric,
                "dimension": dim,
                "subject": subject,
                "baseline": baseline,
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
    return {"facts": facts, "fleet": fleet, "tested": len(flat)}


_VERDICT = {
    "en": {"holds": "holds", "reversed": "reversed", "null": "no effect", "thin": "too little data"},
    "zh": {"holds": "成立", "reversed": "相反", "null": "无显著差异", "thin": "数据太少"},
}


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
        lines.append(
            "  （没有可以跨门店检验的结论）"
            if zh
            else "  (no fact that compares groups to test across stores)"
        )
    for k in result["fleet"]:
        lines += ["  " + kind_head(k, lang)] + ["    " + line for line in store_lines(k, lang)]
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
    from edge.analysis.operators import _words as W
    from edge.presentation.facts import metric_label

    zh = lang == "zh"
    dim = k["dimension"]
    subj, base = (
        W.value_label(dim, _raw(k["subject"], dim), lang),
        W.value_label(dim, _raw(k["baseline"], dim), lang),
    )
    m = metric_label(k["metric"], lang)
    pooled = k["pooled"]
    pool_text = (
        (
            f"合并效应 {_pct(pooled['effect'])} {_ci(pooled['ci'])}，I² {pooled['i2'] * 100:.0f}%"
            if zh
            else f"pooled {_pct(pooled['effect'])} {_ci(pooled['ci'])}, I² {pooled['i2'] * 100:.0f}%"
        )
        if pooled
        else ("门店太少，无法合并" if zh else "too few stores to pool")
    )
    reversed_ids = [t["store_id"] for t in k["stores"] if t["verdict"] == "reversed"]
    if zh:
        head = f"{m}：{subj}对比{base}（学自 {'、'.join(k['learned_in'])}）：{k['of']} 家中 {k['holds_in']} 家成立"
        if reversed_ids:
            head += f"，{'、'.join(reversed_ids)} 相反"
        head += f"，{k['null_in']} 家无显著差异，{k['thin_in']} 家数据太少；{pool_text}。"
    else:
        head = f"{m}, {subj} vs {base} (learned in {', '.join(k['learned_in'])}): holds in {k['holds_in']} of {k['of']} stores"
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
            f"{t['store_id']:<16} {_pct(t['effect']):>8} {_ci(t['ci']):<20} {p_text:<28} n={t['n']:<6} {_VERDICT[lang][t['verdict']]}"
        )
    return lines
