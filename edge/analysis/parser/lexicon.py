"""The everyday words of a store, in Chinese and English: the parser's word tables, read from data.

Owned by :mod:`edge.analysis.parser`. The words live in ``lexicon.toml`` (package data), so that a
manager's vocabulary is edited without touching code; this module reads the file once at import,
checks every pattern by compiling it (a plain word of a word table needs none: it is found without
a regex, :class:`~.text.Words`; a bad entry stops the import with a :class:`LexiconError` naming
its table, entry and fault) and exposes the tables. The shipped file, unchanged since it was
checked whole (:data:`CHECKED`), is not checked again: its word tables compile as questions need
them. The metric and dimension names are the enums of
``plan.schema.json``; the words are what a store manager says. Store-specific words (event types,
stats values, ids) are not here: they come from the memory's :class:`Vocabulary` at parse time.
Tables are regexes over the normalised (NFKC, lower-cased) question; the longest match wins.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from edge.analysis.parser.text import Words, compile_table, word

#: ``(pattern, value)`` rows, one per alternative (:func:`~.text.compile_table`).
Table = list[tuple[Words, object]]
_A = TypeVar("_A")
_T = TypeVar("_T")


class LexiconError(ValueError):
    """A lexicon file that cannot be used; the message names the file, the table and the entry."""


@dataclass(frozen=True)
class Lexicon:
    """Every table of one lexicon file, checked and compiled."""

    metrics: Table
    dimensions: Table
    time_buckets: Table
    event_type_words: Table
    promotion_values: Table
    value_words: dict[str, list[tuple[str, tuple[str, ...]]]]
    measure_context: dict[str, tuple[tuple[str, ...], tuple[str, ...]]]
    intent_context: dict[str, re.Pattern[str]]
    cues: dict[str, re.Pattern[str]]
    forms: dict[str, re.Pattern[str]]
    stop_split: str
    en_stopwords: frozenset[str]
    en_function: frozenset[str]
    zh_function: frozenset[str]
    condition_zh: str
    condition_en: str


class _Reader:
    """The checks of one parsed lexicon file; every fault is raised naming ``where`` it is."""

    def __init__(self, name: str, data: dict[str, Any], *, check_tables: bool = True) -> None:
        self.name = name
        self.data = data
        self.check_tables = check_tables

    def fail(self, where: str, fault: str) -> LexiconError:
        return LexiconError(f"{self.name}: {where}: {fault}")

    def section(self, name: str) -> dict[str, Any]:
        table = self.data.get(name)
        if not isinstance(table, dict):
            raise self.fail(name, "missing table")
        return table

    def text(self, entry: dict[str, Any], key: str, where: str) -> str:
        """``entry[key]``: a pattern, the alternation of its non-blank lines (not yet compiled)."""
        text = entry.get(key)
        if not isinstance(text, str):
            raise self.fail(f"{where}.{key}", "missing pattern (a string)")
        return "|".join(line.strip() for line in text.splitlines() if line.strip())

    def regex(self, entry: dict[str, Any], key: str, where: str) -> str:
        """``entry[key]`` as a pattern, checked."""
        return self.compiled({}, f"{where}.{key}", re.compile, self.text(entry, key, where)).pattern

    def pattern(self, entry: dict[str, Any], where: str, *other: str) -> str:
        """The ``zh`` pattern as written, or'ed with the ``en`` pattern bounded as whole words."""
        if not isinstance(entry, dict) or not {"zh", "en"} & set(entry):
            raise self.fail(where, "an entry needs zh or en words")
        if unknown := set(entry) - {"zh", "en", *other}:
            raise self.fail(where, f"unknown keys {sorted(unknown)}")
        zh = [self.text(entry, "zh", where)] if "zh" in entry else []
        en = [word(self.text(entry, "en", where))] if "en" in entry else []
        return "|".join(zh + en)

    def compiled(self, entry: dict[str, Any], where: str, build: Callable[[_A], _T], arg: _A) -> _T:
        """``build(arg)``; a regex fault is named by the key (zh or en) of ``entry`` it is in."""
        try:
            return build(arg)
        except re.error as e:
            fault, key = e, ""
            for k in ("zh", "en"):
                if k not in entry:
                    continue
                try:
                    re.compile(self.text(entry, k, where))
                except re.error as e_key:
                    fault, key = e_key, f".{k}"
                    break
            raise self.fail(where + key, f"bad regex {fault.pattern!r}: {fault}") from None

    def checked(self, entry: dict[str, Any], where: str) -> str:
        """The pattern of a synonym entry (with its ``tokens``), compiled once to check it."""
        return self.compiled(entry, where, re.compile, self.pattern(entry, where, "tokens")).pattern

    def table(self, name: str) -> Table:
        """A word table: each entry's alternatives, each checked (compiled unless a plain word)
        when the tables are checked."""
        rows: Table = []
        for v, e in self.section(name).items():
            words = compile_table([(self.pattern(e, f"{name}.{v}"), v)])
            if self.check_tables:
                for w, _ in words:
                    self.compiled(e, f"{name}.{v}", Words.check, w)
            rows += words
        return rows

    def patterns(self, name: str) -> dict[str, re.Pattern[str]]:
        return {
            k: self.compiled(e, f"{name}.{k}", re.compile, self.pattern(e, f"{name}.{k}"))
            for k, e in self.section(name).items()
        }

    def words(self, entry: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
        """``entry[key]``: plain words, a list or one whitespace-separated string."""
        value = entry.get(key)
        if isinstance(value, str):
            return tuple(value.split())
        if isinstance(value, list) and all(isinstance(w, str) for w in value):
            return tuple(value)
        raise self.fail(f"{where}.{key}", "missing words (a string or a list of strings)")


#: package data: the :func:`digest` of the ``lexicon.toml`` whose word tables were last checked
#: whole (``scripts/refresh_exemplars.py`` writes it); that file, unchanged, is read without
#: compiling its word tables' patterns again, which compile when a question first needs them
CHECKED = "lexicon.checked"


def digest(text: str) -> str:
    """What :data:`CHECKED` holds for a lexicon file's ``text``."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def load(path: Path | None = None) -> Lexicon:
    """The lexicon of the TOML file at ``path`` (default: the package's ``lexicon.toml``, whose
    word tables are checked unless :data:`CHECKED` names it)."""
    package = importlib.resources.files("edge.analysis.parser")
    source = path or package.joinpath("lexicon.toml")
    text = source.read_text("utf-8")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise LexiconError(f"{source.name}: {e}") from None
    try:
        checked = path is None and package.joinpath(CHECKED).read_text("utf-8").strip() == digest(text)
    except OSError:
        checked = False
    r = _Reader(source.name, data, check_tables=not checked)
    values = r.section("VALUE_WORDS")
    measures = r.section("MEASURE_CONTEXT")
    similarity = r.section("SIMILARITY")
    function = r.section("FUNCTION_WORDS")
    condition = r.section("CONDITION")
    return Lexicon(
        metrics=r.table("METRICS"),
        dimensions=r.table("DIMENSIONS"),
        time_buckets=r.table("TIME_BUCKETS"),
        event_type_words=r.table("EVENT_TYPE_WORDS"),
        promotion_values=r.table("PROMOTION_VALUES"),
        value_words={
            key: [
                (
                    r.checked(e, f"VALUE_WORDS.{key}[{i}]"),
                    r.words(e, "tokens", f"VALUE_WORDS.{key}[{i}]"),
                )
                for i, e in enumerate(entries)
            ]
            for key, entries in values.items()
        },
        measure_context={
            k: (r.words(e, "zh", f"MEASURE_CONTEXT.{k}"), r.words(e, "en", f"MEASURE_CONTEXT.{k}"))
            for k, e in measures.items()
        },
        intent_context=r.patterns("INTENT_CONTEXT"),
        cues=r.patterns("CUES"),
        forms=r.patterns("FORMS"),
        stop_split=r.regex(similarity, "split", "SIMILARITY"),
        en_stopwords=frozenset(r.words(similarity, "stopwords", "SIMILARITY")),
        en_function=frozenset(r.words(function, "en", "FUNCTION_WORDS")),
        zh_function=frozenset(r.words(function, "zh", "FUNCTION_WORDS")),
        condition_zh=r.regex(condition, "zh", "CONDITION"),
        condition_en=r.regex(condition, "en", "CONDITION"),
    )


_LEXICON = load()

#: Words naming a metric.
METRICS = _LEXICON.metrics
#: Words naming a dimension (what to group or compare by). Values of a dimension (雨天, 周末) are
#: matched elsewhere.
DIMENSIONS = _LEXICON.dimensions
#: Words that set a trend's time bucket.
TIME_BUCKETS = _LEXICON.time_buckets
#: Well-known event types of the MEV contract and the words for them.
EVENT_TYPE_WORDS = _LEXICON.event_type_words
#: Synonyms for stats values: key -> [(question words, tokens a stored value may be made of)].
#: A stored value matches when it equals one of the tokens or one of its ``_``-separated parts does.
VALUE_WORDS = _LEXICON.value_words
#: Words that describe a measure's own events: metric -> (zh words, en words); claimed only when
#: the plan computes that measure, never a cue for it.
MEASURE_CONTEXT = _LEXICON.measure_context
#: Words a question of one kind uses to say what it asks (a correlation's levels, "when X is high,
#: is Y high too"; a co-occurrence's "turn up"): intent -> pattern; claimed only when the plan
#: has that intent, never a cue for it.
INTENT_CONTEXT = _LEXICON.intent_context
#: Day-attribute values with a fixed meaning: promotion days (values of ``promotion``).
PROMOTION_VALUES = _LEXICON.promotion_values
#: Intent cue patterns by cue name (read by :mod:`.intents`).
CUES = _LEXICON.cues
#: Question shapes that steer the intent, by name (read by :mod:`.intents`).
FORMS = _LEXICON.forms
#: Characters and words that separate phrases (split points for similarity candidates).
STOP_SPLIT = _LEXICON.stop_split
#: English words never a similarity candidate of their own.
EN_STOPWORDS = _LEXICON.en_stopwords
#: Words that ask, point or join, in English and Chinese: never content (read by :mod:`.accounting`).
EN_FUNCTION = _LEXICON.en_function
ZH_FUNCTION = _LEXICON.zh_function
#: A pivot's condition nouns (patterns, the English one not yet bounded as words).
CONDITION_ZH = _LEXICON.condition_zh
CONDITION_EN = _LEXICON.condition_en
