"""One stored word in two fields: a zone and a product category both called "premium".

The parser keeps both readings and resolves them by the measure's events (purchases carry product
categories, not zones; dwells and entries carry zones), or by the field the question names beside
the word ("premium zone"); when the measure's events carry both, neither, or the memory does not
say, the question is refused naming the word and the fields, never answered with one picked. The
answer's ``interpretation`` says how such a word was read. The vocabulary each source builds
says which stats keys each event type carries (``Vocabulary.keys_by_type``).
"""

from __future__ import annotations

import dataclasses
import importlib.resources
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import jsonschema
import pytest
from engine_data import thin_memory

from edge.analysis.engine import answer
from edge.analysis.parser import parse_question
from edge.analysis.source import Vocabulary
from edge.analysis.testing import InMemorySource, MemEvent
from edge.memory.caches import vocabulary_from_json, vocabulary_json
from edge.memory.store import Store
from edge.sim.catalog import VOCABULARY

NOW = datetime(2025, 12, 15, 10)


def _two_fields(vocab: Vocabulary, *words: str) -> Vocabulary:
    attrs = dict(vocab.attributes)
    for key in ("zone", "product_category"):
        attrs[key] = (*attrs.get(key, ()), *words)
    return dataclasses.replace(vocab, attributes=attrs)


VOCAB = _two_fields(VOCABULARY, "premium", "精品")


def _filter(question: str, vocab: Vocabulary = VOCAB) -> tuple[dict[str, Any], Any]:
    r = parse_question(question, vocab, NOW)
    assert r.status == "ok", (question, r.explanation)
    return r.plan["filters"]["attributes"], r.matches


@pytest.mark.parametrize(
    ("question", "key", "events"),
    [
        ("revenue from premium last month", "product_category", ("purchase",)),
        ("dwell time in premium", "zone", ("dwell",)),
        ("How many people entered premium?", "zone", ("customer_enter",)),
        ("上个月精品的销售额是多少", "product_category", ("purchase",)),
        ("精品的平均停留时长", "zone", ("dwell",)),
    ],
)
def test_a_word_of_two_fields_is_read_as_the_field_the_measures_events_carry(
    question: str, key: str, events: tuple[str, ...]
) -> None:
    attrs, matches = _filter(question)
    other = "zone" if key == "product_category" else "product_category"
    assert set(attrs) == {key} and attrs[key] in ("premium", "精品")
    (m,) = matches
    assert (m.key, m.method, m.set_aside, m.by_events) == (key, "exact", (other,), events)


def test_each_field_alone_is_read_as_before() -> None:
    for key in ("zone", "product_category"):
        attrs = dict(VOCABULARY.attributes)
        attrs[key] = (*attrs[key], "premium")
        vocab = dataclasses.replace(VOCABULARY, attributes=attrs)
        got, matches = _filter("revenue from premium last month", vocab)
        assert got == {key: "premium"} and matches[0].set_aside == ()


@pytest.mark.parametrize(
    ("question", "key"),
    [("revenue in the premium zone", "zone"), ("dwell time in the premium category", "product_category"),
     ("精品品类的停留时长", "product_category")],
)  # fmt: skip
def test_the_field_named_beside_the_word_is_the_one_read(question: str, key: str) -> None:
    """The question says which: that field, even where the measure's events do not carry it (the
    engine then finds no events and says so), and even where the memory does not say."""
    for vocab in (VOCAB, dataclasses.replace(VOCAB, keys_by_type={})):
        attrs, matches = _filter(question, vocab)
        assert set(attrs) == {key} and matches[0].by_events == ()


@pytest.mark.parametrize(
    ("question", "lang", "why"),
    [
        (
            "how many events in premium",
            "en",
            "carry both",
        ),  # every type: entries carry zones, purchases categories
        ("staff error rate in premium", "en", "carry neither"),
        ("精品有多少次店员差错", "zh", "都不带"),
    ],
)
def test_a_word_the_measures_events_do_not_tell_apart_is_refused(question: str, lang: str, why: str) -> None:
    r = parse_question(question, VOCAB, NOW)
    assert r.status == "unsupported" and r.plan == {} and r.language == lang
    text = r.explanation or ""
    word = "精品" if lang == "zh" else "premium"
    fields = ("区域", "品类") if lang == "zh" else ("zone", "product category")
    assert word in text and all(f in text for f in fields) and why in text, text


def test_a_memory_that_does_not_say_what_its_events_carry_is_not_guessed_from() -> None:
    vocab = dataclasses.replace(VOCAB, keys_by_type={})
    for q in ("revenue from premium last month", "上个月精品的销售额是多少"):
        r = parse_question(q, vocab, NOW)
        assert r.status == "unsupported", r.plan
        assert ("premium" in (r.explanation or "")) or ("精品" in (r.explanation or ""))


# -- the answer says how it read the word ------------------------------------------------------------


def _source() -> InMemorySource:
    t0 = datetime(2025, 12, 1, 2, tzinfo=UTC)
    evs = []
    for i in range(90):
        ts = t0 + timedelta(hours=i)
        evs.append(
            MemEvent(
                f"d{i}",
                "s1",
                ts,
                "dwell",
                {"zone": "premium" if i % 2 else "fresh", "dwell_seconds": 30.0 + i},
            )
        )
        evs.append(MemEvent(f"p{i}", "s1", ts, "purchase", {"product_category": "premium" if i % 3 else "dairy",
                                                           "order_amount": 10.0 + i, "bill_id": f"b{i}"}))  # fmt: skip
    return InMemorySource(evs, {"s1": "Asia/Shanghai"}, timezone="Asia/Shanghai")


def _schema() -> dict[str, Any]:
    text = (
        importlib.resources.files("edge").joinpath("schemas/payload.schema.json").read_text(encoding="utf-8")
    )
    return dict(json.loads(text))


@pytest.mark.parametrize(
    ("question", "clause"),
    [
        ("total revenue from premium", "“premium” read as the product category (purchases carry product category, not zone)"),
        ("average dwell time in premium", "“premium” read as the zone (dwells carry zone, not product category)"),
        ("premium的销售额是多少", "“premium”按品类理解（购买带有品类，不带区域）"),
        ("revenue in the premium zone", "“premium” read as the zone (as the question names it)"),
    ],
)  # fmt: skip
def test_the_interpretation_says_how_a_word_of_two_fields_was_read(question: str, clause: str) -> None:
    src = _source()
    assert src.vocabulary().keys_by_type["purchase"] == ("bill_id", "order_amount", "product_category")
    p = answer(question, src, now=datetime(2025, 12, 5, 12, tzinfo=UTC))
    jsonschema.validate(p, _schema())
    assert clause in p["interpretation"]["text"], p["interpretation"]
    if "names it" not in clause:
        assert p["status"] == "ok", p


def test_an_interpretation_without_such_a_word_says_nothing_of_it() -> None:
    p = answer("total revenue", _source(), now=datetime(2025, 12, 5, 12, tzinfo=UTC))
    assert p["status"] == "ok" and "read as" not in p["interpretation"]["text"]


# -- the vocabulary says what each event type carries --------------------------------------------------


def test_a_real_memory_says_which_keys_each_event_type_carries() -> None:
    mem = thin_memory()
    with Store.open(mem.path) as store:
        vocab = store.event_source().vocabulary()
    carried: dict[str, set[str]] = {}
    for e in mem.events:
        carried.setdefault(e["event_type"], set()).update(
            k for k, v in (e.get("stats") or {}).items() if v is not None
        )
    assert set(vocab.keys_by_type) == set(carried)
    for t, keys in carried.items():
        assert set(vocab.keys_by_type[t]) == keys, t
    assert (
        "product_category" in vocab.keys_by_type["purchase"] and "zone" not in vocab.keys_by_type["purchase"]
    )
    assert "zone" in vocab.keys_by_type["dwell"]
    # the stored vocabulary keeps it; one stored before it existed reads as not known
    again = vocabulary_from_json(vocabulary_json(vocab), vocab.timezone)
    assert again.keys_by_type == vocab.keys_by_type
    old = json.loads(vocabulary_json(vocab))
    del old["keys_by_type"]
    assert vocabulary_from_json(json.dumps(old), vocab.timezone).keys_by_type == {}
