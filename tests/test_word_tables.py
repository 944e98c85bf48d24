"""The parser's word tables as data (edge/analysis/parser/lexicon.toml): every table loads and
compiles, the names it uses are the plan schema's, and a broken entry stops the load with an error
that names its table, its entry and the regex fault."""

from __future__ import annotations

import importlib.resources
import json
import re
from pathlib import Path

import pytest

from edge.analysis.parser import lexicon
from edge.analysis.parser.lexicon import LexiconError, load
from edge.analysis.parser.text import Words, alternatives, needs, normalize, word

PLAN_SCHEMA = json.loads(
    importlib.resources.files("edge").joinpath("schemas", "plan.schema.json").read_text(encoding="utf-8")
)
SHIPPED = Path(lexicon.__file__).with_name("lexicon.toml")


def test_every_table_loads_and_compiles() -> None:
    lex = load(SHIPPED)
    tables = [lex.metrics, lex.dimensions, lex.time_buckets, lex.event_type_words, lex.promotion_values]
    assert all(tables)
    assert all(isinstance(p, Words) and re.compile(p.pattern) for table in tables for p, _ in table)
    assert lex.value_words and all(
        re.compile(p) and tokens for groups in lex.value_words.values() for p, tokens in groups
    )
    assert lex.cues and lex.forms and lex.en_stopwords and lex.en_function and lex.zh_function
    re.compile(lex.stop_split)
    # the module's tables are the shipped file's
    assert [p.pattern for p, _ in lexicon.METRICS] == [p.pattern for p, _ in lex.metrics]


def test_the_shipped_lexicon_was_checked_whole_ahead() -> None:
    """A process reads the shipped file without compiling its word tables only while
    lexicon.checked names it (else it checks them at import: slower, never wrong)."""
    stored = SHIPPED.with_name(lexicon.CHECKED).read_text(encoding="utf-8").strip()
    assert stored == lexicon.digest(SHIPPED.read_text(encoding="utf-8")), (
        "run python3 scripts/refresh_exemplars.py"
    )


def test_names_are_the_plan_schema_enums() -> None:
    metrics = set(PLAN_SCHEMA["$defs"]["metric"]["enum"])
    dimensions = set(PLAN_SCHEMA["$defs"]["dimension"]["enum"])
    buckets = set(PLAN_SCHEMA["properties"]["time_bucket"]["enum"])
    assert {v for _, v in lexicon.METRICS} == metrics
    assert {v for _, v in lexicon.DIMENSIONS} <= dimensions
    assert {v for _, v in lexicon.TIME_BUCKETS} == buckets
    assert set(lexicon.MEASURE_CONTEXT) <= metrics


def test_lines_of_a_pattern_are_alternatives_and_en_words_are_bounded() -> None:
    found = {v for p, v in lexicon.METRICS if p.regex.fullmatch("平均订单金额")}  # on a continuation line
    assert found == {"avg_order_value"}
    assert not [v for p, v in lexicon.TIME_BUCKETS if p.spans("dailyness")]  # "daily" is a whole word
    assert {v for p, v in lexicon.TIME_BUCKETS if p.spans("daily visits")} == {"day"}


@pytest.mark.parametrize(
    ("old", "new", "error"),
    [
        (
            "zh = '''\n  客流量?|",
            "zh = '''\n  客流(量?|",
            r"lexicon\.toml: METRICS\.footfall\.zh: bad regex .*missing \)",
        ),
        (
            "en = 'daily|",
            "en = 'daily|(",
            r"TIME_BUCKETS\.day\.en: bad regex",
        ),
        ("zh = '雾天|有雾|", "zh = '雾天|(有雾|", r"VALUE_WORDS\.weather\[4\]\.zh: bad regex"),
        ("[CUES.which]\nzh =", "[CUES.which]\nzhh =", r"CUES\.which: unknown keys \['zhh'\]"),
        (
            "[DIMENSIONS.is_weekend]\nzh =",
            "[DIMENSIONS.is_weekend]\nzz =",
            r"is_weekend: an entry needs zh or en",
        ),
        ("zh = '是否周末|是不是周末|周末与否'", "zh = 1", r"is_weekend\.zh: missing pattern"),
        ('tokens = ["rain",', "tokens = [1,", r"VALUE_WORDS\.weather\[0\]\.tokens: missing words"),
        ("[CONDITION]", "[CONDITIONS]", r"CONDITION: missing table"),
        (
            "[CUES.anomaly]\nzh = '''\n",
            "[CUES.anomaly]\nzh = '''\n  离谱|\n",
            r"CUES\.anomaly\.zh: an empty alternative",
        ),
        ("person = '^(?:customer|", "person = '^(?:(customer|", r"NAMING\.person: bad regex"),
        ("store = [\n  '(?<!", "store = [\n  '(?<!(", r"NAMED_BY_CODE\[0\]\.store: bad regex"),
        ("field = '{}的取值'", "field = 1", r"TWO_FIELDS\.zh: missing templates"),
        ("[CONDITION]", "[CONDITION", r"lexicon\.toml: .*line"),
    ],
)
def test_a_broken_entry_names_its_table_entry_and_fault(
    tmp_path: Path, old: str, new: str, error: str
) -> None:
    text = SHIPPED.read_text(encoding="utf-8")
    assert old in text
    broken = tmp_path / "lexicon.toml"
    broken.write_text(text.replace(old, new, 1), encoding="utf-8")
    with pytest.raises(LexiconError, match=error):
        load(broken)


def test_alternatives_split_only_top_level_bars() -> None:
    assert alternatives("a|(?:b|c)|[|]|d\\|e") == ["a", "(?:b|c)", "[|]", "d\\|e"]
    assert alternatives(word("ab|c[]|]")) == [word("ab"), word("c[]|]")]  # "]" first in a class
    # a group that only looks like a word group is kept whole
    assert alternatives(word("a") + "x" + word("b")) == [word("a") + "x" + word("b")]


def test_what_every_match_of_a_pattern_holds() -> None:
    assert needs("客流量?") == ("客流",)
    assert needs(word("(?:store )?visits")) == ("visits",)
    assert needs("(?:每|一|单)(?:单|笔)(?:的)?(?:金额|钱)") == ("单", "笔")
    assert needs("ab+c|x(?=abc)yz|avg\\.?q") == ("ab", "yz", "avg")
    assert needs("[abc]def") == ("def",)
    # none known: a branch that may be empty, a flag, a named group, an escape not read
    assert needs("ab|c?") == needs("(?i)abc") == needs("(?P<n>ab)") == needs("\\x41bc") == ()


def test_a_table_alternative_matches_as_its_regex() -> None:
    """Every alternative of every word table finds what its compiled pattern finds (a plain word
    by str.find, the others only when the text holds what each of their matches holds), on the
    exemplar bank's questions and on its own required words in Latin and CJK company."""
    bank = importlib.resources.files("edge.analysis.parser").joinpath("exemplars.jsonl").read_text("utf-8")
    questions = [normalize(json.loads(x)["q"]) for x in bank.splitlines()[::3] if x.strip()]
    tables = [lexicon.METRICS, lexicon.DIMENSIONS, lexicon.TIME_BUCKETS, lexicon.EVENT_TYPE_WORDS]
    for w, _ in [*(row for table in tables for row in table), *lexicon.PROMOTION_VALUES]:
        regex = re.compile(w.pattern)
        texts = questions + [
            f"{a}{n}{b}" for n in needs(w.pattern) for a in ("", "x", "的 ") for b in ("", "s", " 了")
        ]
        for text in texts:
            expected = [m.span() for m in regex.finditer(text)]
            assert w.spans(text) == expected, (w.pattern, text)
            assert w.cut(text) == regex.sub("", text), (w.pattern, text)
