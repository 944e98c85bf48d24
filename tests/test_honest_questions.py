"""Questions that cannot be honoured are never answered ``ok`` (CONTRACT.md section 4).

A generated set: templates of every kind of question crossed with things the memory cannot
honour (a measure it has no data for, an attribute it does not record, a value it has never seen,
a period the parser does not read, a condition with no date), in Chinese and English. Each is
parsed and answered as ``adamm ask`` does (the store's text encoder, a real memory); none may come
back ``ok``, and each must name what it could not use. The words are this file's own, not the
held-out set's.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from engine_data import Memory, full_memory

from edge.analysis.engine import AnalysisConfig, answer
from edge.memory.store import Store

UNKNOWN: dict[str, dict[str, list[str]]] = {
    "measure": {
        "en": ["shrinkage", "energy use", "overtime hours", "staff turnover", "parking occupancy"],
        "zh": ["损耗", "用电量", "加班时长", "员工流失率", "停车位占用率"],
    },
    "attribute": {
        "en": ["first-time customers", "families with children", "card payments", "members", "tourists"],
        "zh": ["新顾客", "带孩子的家庭", "刷卡支付", "会员", "外地游客"],
    },
    "value": {
        "en": ["the mezzanine zone", "the pharmacy aisle", "the electronics category"],
        "zh": ["夹层区", "药品区", "家电品类"],
    },
    "period": {  # holidays of no fixed date (those of a fixed date, Christmas Eve or 双十一, are read)
        "en": ["over Easter", "during Ramadan", "around Thanksgiving"],
        "zh": ["中秋节那天", "端午节期间", "春节前后那阵子"],
    },
    "condition": {
        "en": ["after the new manager started", "during the renovation", "when the music was off"],
        "zh": ["换了店长以后", "装修期间", "停电的时候"],
    },
}
#: (template, kind-independent) per language: {x} is the thing that cannot be honoured
TEMPLATES = {
    "en": [
        "What was revenue for {x} last month?",
        "How did footfall trend for {x}?",
        "Average order value of {x} compared with the rest?",
        "Which zone had the most complaints for {x}?",
    ],
    "zh": [
        "上个月{x}的销售额是多少？",
        "{x}的客流趋势怎么样？",
        "{x}的客单价和平时比怎么样？",
        "{x}哪个区域投诉最多？",
    ],
}
MEASURE_TEMPLATES = {
    "en": [
        "What was our {x} last month?",
        "How has {x} trended over the past 3 months?",
        "Is {x} higher on rainy days?",
    ],
    "zh": ["上个月的{x}是多少？", "过去三个月{x}的趋势", "下雨天{x}是不是更高？"],
}


def _cases() -> list[tuple[str, str, str]]:
    out = []
    for kind, by_lang in UNKNOWN.items():
        for lang, things in by_lang.items():
            temps = MEASURE_TEMPLATES[lang] if kind == "measure" else TEMPLATES[lang]
            for x, tpl in itertools.product(things, temps):
                out.append((kind, lang, tpl.format(x=x)))
    return out


CASES = _cases()


def _cjk(text: str) -> bool:
    return any("\u4e00" <= c <= "\u9fff" for c in text)


@pytest.fixture(scope="module")
def memory() -> Iterator[tuple[Memory, Store]]:
    mem = full_memory()
    store = Store.open(mem.path)
    yield mem, store
    store.close()


def test_no_question_that_cannot_be_honoured_is_answered_ok(
    memory: tuple[Memory, Store], store_text_embed: Any
) -> None:
    mem, store = memory
    source = store.event_source()
    wrong = []
    for kind, lang, q in CASES:
        p = answer(q, source, now=mem.now, config=AnalysisConfig(), embed=store_text_embed)
        if p["status"] == "ok":
            wrong.append((kind, q, p["plan"], p["summary"][:80]))
            continue
        assert p["interpretation"]["text"], q
        assert p["missing"] or p["status"] == "refused", (q, p)
        # named in the question's language
        assert all(_cjk(m) == (lang == "zh") for m in p["missing"]), (q, p["missing"])
    # goal 0: every one of them refused or said to lack data, naming what it could not use
    assert not wrong, f"{len(wrong)} of {len(CASES)} answered ok:\n" + "\n".join(map(str, wrong))
