"""Slips of typing (edge.analysis.parser.spelling): a word no table and no stored value knows, one
edit from exactly one that they do, is read as it and said so in the answer; anything else is left
for the word accounting to name."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest
from test_parser_fields import _source

from edge.analysis.engine import answer
from edge.analysis.parser import parse_question
from edge.analysis.parser.spelling import correct
from edge.sim.catalog import VOCABULARY

NOW = datetime(2025, 12, 15, 10, 0)


@pytest.mark.parametrize(
    ("question", "read_as", "expect"),
    [
        ("top 5 products by revnue?", (("revnue", "revenue"),), {"intent": "top_k", "target_metric": "revenue"}),
        ("what was the convertion rate last week", (("convertion", "conversion"),), {"target_metric": "conversion_rate"}),
        ("How many complaints did we get in Octobr?", (("octobr", "october"),), {"target_metric": "complaint_count"}),
        ("avrage order value last month", (("avrage", "average"),), {"target_metric": "avg_order_value"}),
    ],
)  # fmt: skip
def test_a_slip_is_read_as_its_word_and_said(question: str, read_as: tuple, expect: dict) -> None:
    res = parse_question(question, VOCABULARY, NOW)
    assert res.status == "ok" and res.read_as == read_as, res.not_understood
    assert {k: res.plan.get(k) for k in expect} == expect


@pytest.mark.parametrize(
    "text",
    [
        "wich zone",  # short words are never guessed
        "braised pork",  # a slip keeps its first letter: braised is not raised
        "weathers minutes contribute correlates",  # inflections and the tables' word beginnings
        "shrinkage refunds energy",  # nothing one edit away
    ],
)
def test_what_is_not_a_slip_is_left_as_typed(text: str) -> None:
    assert correct(text, VOCABULARY) == (text, ())


def test_the_memorys_own_words_are_known() -> None:
    vocab = dataclasses.replace(VOCABULARY, attributes={**VOCABULARY.attributes, "zone": ("bakerie",)})
    assert correct("revenue in the bakerie", vocab) == ("revenue in the bakerie", ())


def test_the_answer_says_what_a_slip_was_read_as() -> None:
    p = answer("total revnue", _source(), now=datetime(2025, 12, 5, 12, tzinfo=UTC))
    assert p["status"] == "ok", p
    assert "“revnue” read as “revenue”" in p["interpretation"]["text"]
    p = answer("上个月的revnue", _source(), now=datetime(2025, 12, 5, 12, tzinfo=UTC))
    assert "“revnue”按“revenue”理解" in p["interpretation"]["text"]


def test_umlauts_are_folded_on_both_sides() -> None:
    """A German store's Getränke is the same word written getraenke, in a question or in the memory."""
    from edge.analysis.parser.text import normalize

    assert normalize("Getränke Größe Öl Übung") == "getraenke groesse oel uebung"
    for stored in ("getränke", "getraenke"):
        vocab = dataclasses.replace(
            VOCABULARY, attributes={**VOCABULARY.attributes, "product_category": (stored,)}
        )
        for question in ("Getränke revenue", "getraenke revenue"):
            res = parse_question(question, vocab, NOW)
            assert res.status == "ok", res.not_understood
            assert res.plan["filters"]["attributes"] == {"product_category": stored}


@pytest.mark.parametrize(
    ("question", "read_as", "expect"),
    [
        ("rev yday", [("rev", "revenue"), ("yday", "yesterday")], {"target_metric": "revenue"}),
        ("conv past 30d", [("30d", "30 days"), ("conv", "conversion")], {"target_metric": "conversion_rate"}),
        (
            "wkend vs wkday aov last month",
            [("wkend", "weekend"), ("wkday", "weekday")],
            {"intent": "compare"},
        ),
        (
            "split yday's rev by category",
            [("yday", "yesterday"), ("rev", "revenue")],
            {"intent": "breakdown"},
        ),
        ("conv rate有没有周期性", [("conv", "conversion")], {"intent": "periodicity"}),
    ],
)
def test_a_short_form_is_read_as_its_words_and_said(question: str, read_as: list, expect: dict) -> None:
    """Phone-typed short forms (rev, yday, 30d) were named, refused: read as their words, said."""
    r = parse_question(question, VOCABULARY, datetime(2025, 12, 15, 10))
    assert r.status == "ok", r.not_understood
    assert set(read_as) <= set(r.read_as)
    assert {k: r.plan[k] for k in expect} == expect


def test_store_codes_of_a_city_name_their_store() -> None:
    """ "bj vs sh": the initials of a listed city, a part of one store id, name that store."""
    plan = parse_question("bj vs sh aov this month", VOCABULARY, datetime(2025, 12, 15, 10)).plan
    assert plan["compare"]["groups"] == ["bj_chaoyang_02", "sh_xuhui_01"]


@pytest.mark.parametrize("question", ["revenue on sun", "footfall sun vs sat", "wed revenue"])
def test_a_short_form_that_is_a_word_is_named(question: str) -> None:
    """ "sun" was sunny weather ("revenue on sun": Sunday's, typed short): a short form that is a
    word too is named, never read as either."""
    r = parse_question(question, VOCABULARY, datetime(2025, 12, 15, 10))
    assert r.status != "ok"
    assert {"sun", "sat", "wed"} & set(r.not_understood)


@pytest.mark.parametrize("question", ["revenue when the sun is out", "rain vs sun revenue per day"])
def test_the_sun_beside_rain_or_as_the_sun_is_sunny_weather(question: str) -> None:
    plan = parse_question(question, VOCABULARY, datetime(2025, 12, 15, 10)).plan
    assert "sunny" in str(plan.get("filters", {}).get("attributes")) + str(plan.get("compare"))
