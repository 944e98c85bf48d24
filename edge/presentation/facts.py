"""Semantic facts in words: the zh and en statement of a fact, generated from its numbers, and the
readable table of ``adamm facts``.

Every number in a statement is one of the fact's own fields (``value``, ``effect``, ``n``,
``p_value``, ``valid_from``) formatted as the answers format them; the other words name the
metric and the groups (:mod:`edge.analysis.operators._words`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from edge.analysis.metrics import METRICS
from edge.analysis.operators import _words as W
from edge.analysis.operators.base import fmt, fmt_p


def metric_label(metric: str | None, lang: str) -> str:
    m = METRICS.get(metric or "")
    if m is None:
        return metric or ""
    return m.label_zh if lang == "zh" else m.label_en


def _pct(effect: float | None) -> str:
    return "-" if effect is None else f"{effect * 100:+.1f}%"


def _p(p: float | None) -> str:
    return "" if p is None else f", p={fmt_p(p)}"


def _value(metric: str | None, dim: str | None, value: Any, lang: str) -> str:
    if (metric == "peak_hour" or dim == "hour") and isinstance(value, int | float):
        return W.hour_label(int(value), lang)
    if metric in ("staff_error_rate", "negative_emotion_rate", "conversion_rate") and isinstance(
        value, int | float
    ):
        return f"{value * 100:.1f}%"
    return fmt(value)


def fact_statement(kind: str, fact: Mapping[str, Any], words: Mapping[str, Any]) -> dict[str, str]:
    """The zh and en statement of a fact of ``kind`` (a standing question's kind) from its fields;
    ``words`` names what is compared (``subject``, ``baseline``: dimension values; ``a``/``b``: a pair)."""
    metric = fact.get("metric")
    dim = fact.get("dimension")
    n = fact.get("n")
    p = fact.get("p_value")
    since = fact.get("valid_from")
    out: dict[str, str] = {}
    for lang in ("zh", "en"):
        m = metric_label(metric, lang)
        v = _value(metric, dim, fact.get("value"), lang)
        e = _pct(fact.get("effect"))
        subj = W.value_label(dim, words.get("subject"), lang) if "subject" in words else ""
        base = W.value_label(dim, words.get("baseline"), lang) if "baseline" in words else ""
        if kind == "compare":
            text = (
                f"{subj}{m} {v}，比{base} {e}（n={n}{_p(p)}）"
                if lang == "zh"
                else f"{m} on {subj}: {v}, {e} vs {base} (n={n}{_p(p)})"
            )
        elif kind == "profile":
            text = (
                f"工作日{v}{m}比工作日各时段平均 {e}（n={n}{_p(p)}）"
                if lang == "zh"
                else f"weekday {m} at {v} is {e} vs the weekday hourly mean (n={n}{_p(p)})"
            )
        elif kind == "peak":
            text = (
                f"高峰时段为 {v}，客流比次高时段 {e}（n={n}{_p(p)}）"
                if lang == "zh"
                else f"peak hour is {v}, footfall {e} vs the next busiest hour (n={n}{_p(p)})"
            )
        elif kind == "trend" and fact.get("metric") == "peak_hour":
            # an hour of the day moves by hours: no percent change is said of it
            text = (
                f"{m}在变化：最近为 {v}（n={n}{_p(p)}）"
                if lang == "zh"
                else f"{m} is shifting: now {v} (n={n}{_p(p)})"
            )
        elif kind == "trend":
            text = (
                f"{m}在变化：最近为 {v}（{e}，n={n}{_p(p)}）"
                if lang == "zh"
                else f"{m} is shifting: now {v} ({e} over the window, n={n}{_p(p)})"
            )
        elif kind == "level":
            text = f"{m}为 {v}（n={n}）" if lang == "zh" else f"{m} is {v} (n={n})"
        elif kind == "periodicity":
            text = f"{m}每 {v} 天重复一次（n={n}）" if lang == "zh" else f"{m} repeats every {v} days (n={n})"
        elif kind == "correlation":
            text = (
                f"{m}与{metric_label(words.get('second'), lang)}按天相关，r={v}（n={n} 天{_p(p)}）"
                if lang == "zh"
                else f"{m} and {metric_label(words.get('second'), lang)} correlate by day, r={v} (n={n} days{_p(p)})"
            )
        elif kind == "anomaly":
            text = (
                f"{since} {m}异常：{v}，比预期 {e}（n={n}）"
                if lang == "zh"
                else f"{m} on {since} was unusual: {v}, {e} vs expected (n={n})"
            )
        elif kind == "co_occurrence":
            a, b = words.get("a", ""), words.get("b", "")
            text = (
                f"{a} 与 {b} 常同时出现，提升度 {v}（n={n}{_p(p)}）"
                if lang == "zh"
                else f"{a} and {b} occur together more than by chance, lift {v} (n={n}{_p(p)})"
            )
        elif kind == "change":
            text = (
                f"自 {since} 起{m}为 {v}，比之前 {e}（n={n}{_p(p)}）"
                if lang == "zh"
                else f"{m} {v} since {since}, {e} vs before (n={n}{_p(p)})"
            )
        else:  # a level with no change seen yet
            text = f"{m}为 {v}（n={n}）" if lang == "zh" else f"{m} is {v} (n={n})"
        out[lang] = text
    return out


def facts_table(facts: Sequence[Mapping[str, Any]], lang: str, stores: Sequence[str] | None = None) -> str:
    """``adamm facts`` without ``--json``: one line per fact (validity, evidence count, statement).
    ``stores`` (one store id per fact): a store column first, for a memory of several stores."""
    if not facts:
        return "还没有学到的结论。" if lang == "zh" else "Nothing learned yet."
    head = (
        ("有效期", "证据数", "置信度", "结论")
        if lang == "zh"
        else ("valid", "evidence", "confidence", "statement")
    )
    store_head = ("门店" if lang == "zh" else "store") if stores else ""
    width = max((len(x) for x in [store_head, *(stores or ())]), default=0)
    lead = [f"{x:<{width}} " for x in stores] if stores else [""] * len(facts)
    lines = [
        (f"{store_head:<{width}} " if stores else "") + f"{head[0]:<25} {head[1]:>8} {head[2]:>10}  {head[3]}"
    ]
    for f, store in zip(facts, lead, strict=True):
        until = f.get("valid_to") or ("至今" if lang == "zh" else "now")
        valid = f"{f['valid_from']} .. {until}"
        statement = f["statement"].get(lang) or f["statement"].get("en", "")
        lines.append(f"{store}{valid:<25} {f['evidence_count']:>8} {fmt(f['confidence']):>10}  {statement}")
    return "\n".join(lines)


def tests_line(control: Mapping[str, Any], lang: str) -> str:
    """The false discovery control of the last maintain run in one line (``control``:
    :func:`edge.memory.semantic.facts.last_tests`)."""
    day = str(control.get("finished_at") or "")[:16].replace("T", " ")
    tested, passed, fdr = int(control["tested"]), int(control["passed"]), float(control["fdr"])
    if lang == "zh":
        return (
            f"上次维护（{day} UTC）：常设问题共检验 {tested} 项，{passed} 项通过错误发现率控制"
            f"（Benjamini-Hochberg，FDR {fdr * 100:g}%）"
        )
    return (
        f"Last maintain run ({day} UTC): {passed} findings passed of {tested} standing-question tests "
        f"(false discovery rate {fdr * 100:g}%, Benjamini-Hochberg)"
    )


#: what each kind of statement says in English (:func:`fact_statement`), most specific first
_KIND_MARKS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("profile", ("weekday ", " vs the weekday hourly mean (n=")),
    ("peak", ("peak hour is ", " vs the next busiest hour (n=")),
    ("trend", (" is shifting: now ",)),
    ("periodicity", (" repeats every ",)),
    ("correlation", (" correlate by day, r=",)),
    ("anomaly", (" was unusual: ",)),
    ("co_occurrence", (" occur together more than by chance",)),
    ("change", (" since ", " vs before (n=")),
    ("compare", (" on ", " vs ", " (n=")),
)


def fact_kind(fact: Mapping[str, Any]) -> str:
    """The kind of statement a fact in the contract's shape makes (a standing question's kind:
    compare, profile, peak, trend, periodicity, correlation, anomaly, co_occurrence, change;
    ``action_effect`` for an action's measured effect; ``level`` otherwise), read back from its
    English statement: the body (CONTRACT.md section 6) does not name its question."""
    if fact.get("action_id"):
        return "action_effect"
    en = str((fact.get("statement") or {}).get("en") or "")
    for kind, marks in _KIND_MARKS:
        if all(mark in en for mark in marks):
            return kind
    return "level"


def correlated_metric(fact: Mapping[str, Any]) -> str | None:
    """The second metric of a ``correlation`` fact (named in its English statement only)."""
    en = str((fact.get("statement") or {}).get("en") or "")
    head = en.split(" correlate by day", 1)[0]
    for name in sorted(METRICS, key=lambda n: -len(metric_label(n, "en"))):
        if head.endswith(" and " + metric_label(name, "en")):
            return name
    return None


def compare_groups(fact: Mapping[str, Any], candidates: Sequence[Any]) -> tuple[Any, Any] | None:
    """The (subject, baseline) of a ``compare`` fact, read back from its English statement among
    ``candidates`` (the dimension's values): the inverse of :func:`fact_statement` for that kind,
    whose body (CONTRACT.md section 6) names the groups only in words. None when no pair renders."""
    en = str((fact.get("statement") or {}).get("en") or "")
    dim = fact.get("dimension")
    labels = [(v, W.value_label(dim, v, "en")) for v in candidates]
    for a, la in labels:
        if f" on {la}: " not in en:
            continue
        for b, lb in labels:
            if b != a and f" vs {lb} (n=" in en:
                return a, b
    return None
