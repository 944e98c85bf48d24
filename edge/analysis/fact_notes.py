"""Notes on an answer from the facts the memory has learned on the same question.

Owned by :mod:`edge.analysis`; called by the store's ask use case
(:class:`edge.services.ask.AskService`) with the memory's current facts. A fact covers a plan when
it is about the same measure and the same kind of split: the same compared dimension, or a change
over time (its ``dimension`` is ``date``) for a plan that compares periods or follows a trend. The
note says so, with the fact's own numbers, its window and its test, so a reader who sees two
different numbers for one question knows why (CONTRACT.md section 4, payload ``notes``). Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from edge.analysis.operators import _words as W


def _covers(plan: Mapping[str, Any], fact: Mapping[str, Any]) -> bool:
    metric = plan.get("target_metric")
    if not metric or fact.get("metric") != metric:
        return False
    cmp = plan.get("compare") or {}
    dim = fact.get("dimension")
    if cmp.get("dimension"):
        return bool(dim == cmp["dimension"])
    if cmp.get("periods") or plan.get("intent") == "trend":
        return dim == "date"
    return False


def _window(fact: Mapping[str, Any], lang: str) -> str:
    start = fact.get("valid_from") or "?"
    until = fact.get("evaluated_until") or fact.get("valid_to")
    if lang == "zh":
        return f"自 {start} 起" + (f"，评估到 {str(until)[:10]}" if until else "")
    return f"since {start}" + (f", evaluated up to {str(until)[:10]}" if until else "")


def _test(fact: Mapping[str, Any], lang: str) -> str:
    fplan = fact.get("plan") or {}
    cmp = fplan.get("compare") or {}
    if cmp.get("dimension"):
        dim = str(cmp["dimension"])
        groups = " / ".join(W.value_label(dim, g, lang) for g in cmp.get("groups") or [])
        name = W.dimension_label(dim, lang)
        return f"按{name}对比 {groups}" if lang == "zh" else f"{name}: {groups} compared"
    if fact.get("dimension") == "date":
        return (
            "在检测到的变化日前后对比（逐日）"
            if lang == "zh"
            else "before against after the change day it found (daily)"
        )
    return str(fplan.get("intent") or "")


def notes_for(plan: Mapping[str, Any], facts: Iterable[Mapping[str, Any]], lang: str) -> list[str]:
    """One note per current fact that covers ``plan`` (facts as
    :meth:`edge.memory.semantic.facts.FactRecord` fields: the contract's plus ``plan`` and
    ``evaluated_until``)."""
    out: list[str] = []
    for fact in facts:
        if fact.get("valid_to") is not None or not _covers(plan, fact):
            continue
        statement = (fact.get("statement") or {}).get("zh" if lang == "zh" else "en") or ""
        p = fact.get("p_value")
        p_text = f"p={p:.2g}" if isinstance(p, (int, float)) else "p=-"
        # the numbers the statement does not already say
        stats = "" if f"n={fact.get('n')}" in statement else f"n={fact.get('n')}, {p_text}, "
        if lang == "zh":
            out.append(
                f"已学到的结论也回答这个问题：{statement}（{stats.replace(', ', '，')}{_window(fact, lang)}；"
                f"检验：{_test(fact, lang)}）。两者数字不同时，是因为时间窗口和检验不同：本回答只用解读中的时间段。"
            )
        else:
            out.append(
                f"A learned fact also answers this: {statement} ({stats}{_window(fact, lang)}; test: "
                f"{_test(fact, lang)}). Where the numbers differ, the windows and the tests differ: this "
                "answer uses only the period in its interpretation."
            )
    return out
