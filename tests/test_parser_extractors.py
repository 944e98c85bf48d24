"""One contract test over every registered slot extractor of the parser (like the operators'),
and over every kind of time mention the time extractor runs.

Each extractor only claims (blanks) characters, only ones that were free, inside the question;
claims nothing on a question already claimed whole; and gives the same slot for the same question.
Run over the public sample questions, the exemplar bank's training split and the parser tests'
own questions, each through the extractors (and time kinds) that run before it (as the parser
runs them).
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from edge.analysis.parser.exemplars import load_bank
from edge.analysis.parser.extraction import Context, Extractor
from edge.analysis.parser.slots import ORDER, REGISTRY
from edge.analysis.parser.text import MaskedText, normalize
from edge.analysis.parser.timekinds import TIME_KINDS
from edge.sim.catalog import VOCABULARY

NOW = datetime(2025, 12, 15, 10, 0)
PUBLIC = Path(__file__).resolve().parents[2] / "shared" / "eval" / "questions_public.jsonl"
OWN = [
    "上周客流是多少？",
    "Compare average order value on rainy and sunny days between 2025-09-01 and 2025-11-30",
    "rank stores by revenue last month",
    "Which zone Z9 products sold best in the 7号店 last week?",
    "晚上7点到9点的负面情绪比例是不是比白天高？",
    "top 3 product categories by revenue on promotion days",
    "2025年10月的销售额是多少？",
]


def _questions() -> list[str]:
    qs = list(OWN)
    if PUBLIC.exists():
        qs += [json.loads(x)["q"] for x in PUBLIC.read_text(encoding="utf-8").splitlines() if x.strip()]
    qs += [e.q for e in load_bank() if e.split == "train"][::7]
    return qs


QUESTIONS = _questions()
CTX = Context(VOCABULARY, NOW)
KINDS = [f"time.{k}" for k in TIME_KINDS]
#: every extractor, and every time kind as ``time.<kind>``
EXTRACTORS: dict[str, Extractor] = {**REGISTRY, **{f"time.{k}": v for k, v in TIME_KINDS.items()}}


def _earlier(name: str) -> list[Extractor]:
    """What runs before ``name``: the extractors before it; for a time kind, the extractors before
    the time extractor and the time kinds before it."""
    if name in KINDS:
        return _earlier("time") + [EXTRACTORS[k] for k in KINDS[: KINDS.index(name)]]
    return [REGISTRY[n] for n in ORDER[: ORDER.index(name)]]


def _before(name: str, question: str) -> MaskedText:
    """The question as the extractor ``name`` meets it: after every extractor before it."""
    mt = MaskedText(normalize(question))
    for earlier in _earlier(name):
        earlier.extract(mt, CTX)
    return mt


def test_every_extractor_is_registered_in_order() -> None:
    assert set(ORDER) == set(REGISTRY)
    assert ORDER.index("time") < ORDER.index("measures") < ORDER.index("values") < ORDER.index("dimensions")
    for name, ex in EXTRACTORS.items():
        assert ex.name == name.removeprefix("time.") and ex.slot
    # a forecast's horizon before the calendar words (下个月 is not 上个月), clock hours before
    # durations (晚上7点到9点), dates before bare months (11月10号 is a day)
    assert KINDS.index("time.horizon") < KINDS.index("time.calendar")
    assert KINDS.index("time.clock_hours") < KINDS.index("time.recent")
    assert KINDS.index("time.dates") < KINDS.index("time.months")


def test_the_time_kinds_claim_what_the_time_extractor_claims() -> None:
    last = KINDS[-1]
    for q in QUESTIONS:
        by_kinds = _before(last, q)
        EXTRACTORS[last].extract(by_kinds, CTX)
        by_time = _before("time", q)
        REGISTRY["time"].extract(by_time, CTX)
        assert by_kinds.view == by_time.view, q


@pytest.mark.parametrize("name", EXTRACTORS)
def test_an_extractor_only_claims_free_text_and_is_deterministic(name: str) -> None:
    ex = EXTRACTORS[name]
    for q in QUESTIONS:
        mt = _before(name, q)
        before = mt.view
        slot = ex.extract(mt, CTX)
        after = mt.view
        assert len(after) == len(before) == len(mt.text), q
        for b, a in zip(before, after, strict=True):
            # a character stays as it was or becomes blank; a blank never comes back
            assert a == b or a == MaskedText.BLANK, (name, q)
            if b == MaskedText.BLANK:
                assert a == MaskedText.BLANK, (name, q)
        again = _before(name, q)
        assert _plain(ex.extract(again, CTX)) == _plain(slot), (name, q)
        assert again.view == after, (name, q)


@pytest.mark.parametrize("name", EXTRACTORS)
def test_an_extractor_claims_nothing_of_a_question_claimed_whole(name: str) -> None:
    ex = EXTRACTORS[name]
    for q in QUESTIONS[:20]:
        mt = MaskedText(normalize(q))
        mt.consume(0, len(mt.text))
        slot = ex.extract(mt, CTX)
        assert ex.is_empty(slot), (name, q, slot)
        assert set(mt.view) <= {MaskedText.BLANK}


def test_the_parser_reads_the_question_through_the_registry() -> None:
    """The extractors claim spans of the question; after all of them and the accounting, a plain
    question has nothing left (it is answered), an unknown word is left (it is named)."""
    from edge.analysis.parser import parse_question

    ok = parse_question("上周客流是多少？", VOCABULARY, NOW)
    assert ok.status == "ok" and ok.not_understood == ()
    left = parse_question("上周客流和损耗是多少？", VOCABULARY, NOW)
    assert left.status == "unsupported" and "损耗" in left.not_understood


def _plain(slot: Any) -> Any:
    return repr(slot)
