"""The parser's word tables (a store's everyday words, zh and en), read once at import from
``lexicon.toml`` (package data; its comments say what each table holds). A bad entry stops the import
with a :class:`LexiconError` naming its table, entry and fault; the shipped file, checked whole ahead
(:data:`CHECKED`), compiles its word tables as questions need them.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edge.analysis.parser.text import CN_NUM, EN_NUM, Words, alternatives, word

#: ``(pattern, value)`` rows, one per alternative of an entry (:func:`~.text.alternatives`).
Table = list[tuple[Words, object]]


class LexiconError(ValueError):
    """A lexicon file that cannot be used; the message names the file, the table and the entry."""


@dataclass(frozen=True)
class Lexicon:
    """Every table of one lexicon file, checked and compiled (named as its sections and keys)."""

    metrics: Table
    dimensions: Table
    time_buckets: Table
    event_type_words: Table
    promotion_values: Table
    #: stats key -> [(question words, tokens a stored value may be made of)]
    value_words: dict[str, list[tuple[str, tuple[str, ...]]]]
    #: metric -> (zh words, en words) describing its own events
    measure_context: dict[str, tuple[tuple[str, ...], tuple[str, ...]]]
    intent_context: dict[str, re.Pattern[str]]
    cues: dict[str, re.Pattern[str]]
    forms: dict[str, re.Pattern[str]]
    shapes: dict[str, re.Pattern[str]]
    stop_split: str
    value_edges: frozenset[str]
    en_stopwords: frozenset[str]
    en_function: frozenset[str]
    zh_function: frozenset[str]
    #: characters and nouns that side by side make a content word (:func:`.accounting.zh_taken`)
    zh_compound: frozenset[str]
    condition_zh: str  # the English one not yet bounded as words
    condition_en: str
    acts_zh: str  # the acts that start an event, their object after them (加了收银员, moved the bakery)
    acts_en: str
    #: the words of an aside clause (:func:`.accounting.residual`), and what makes a clause none
    aside_en: frozenset[str]
    aside_zh: frozenset[str]
    aside_never: str
    aside_frame: str
    aside_lead: str
    #: traditional characters -> simplified ones (a ``str.translate`` table)
    traditional: dict[int, str]
    top_k: list[re.Pattern[str]]
    #: an id field -> the patterns of its codes (vocabmatch.py's), each as written
    named_by_code: dict[str, tuple[re.Pattern[str], ...]]
    naming: dict[str, re.Pattern[str]]
    naming_words: dict[str, frozenset[str]]
    #: valuekeys.py's message on a word of two fields: language -> part -> template
    two_fields: dict[str, dict[str, str]]
    #: short forms -> their words, and unit letters after a number -> their unit (spelling.py)
    abbreviations: dict[str, str]
    abbreviated_units: dict[str, str]


@dataclass
class TomlReader:
    """The checks of one parsed lexicon file; every fault is raised naming ``where`` it is."""

    name: str
    data: dict[str, Any]

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
        joined = "|".join(line.strip() for line in text.splitlines() if line.strip())
        if joined and not all(alternatives(joined)):  # a line's bar left dangling: 异常|\n|突然
            raise self.fail(
                f"{where}.{key}", "an empty alternative (a bar with nothing on one side) matches everywhere"
            )
        return joined

    def pattern(self, entry: dict[str, Any], where: str, *other: str) -> str:
        """The ``zh`` pattern as written, or'ed with the ``en`` pattern bounded as whole words."""
        if not isinstance(entry, dict) or not {"zh", "en"} & set(entry):
            raise self.fail(where, "an entry needs zh or en words")
        if unknown := set(entry) - {"zh", "en", *other}:
            raise self.fail(where, f"unknown keys {sorted(unknown)}")
        zh = [self.text(entry, "zh", where)] if "zh" in entry else []
        en = [word(self.text(entry, "en", where))] if "en" in entry else []
        return "|".join(zh + en)

    def compiled(self, entry: dict[str, Any], where: str, pattern: str) -> re.Pattern[str]:
        """``pattern`` compiled; a fault is named by the key (zh or en) of ``entry`` it is in."""
        try:
            return re.compile(pattern)
        except re.error as e:
            fault, key = e, ""
        for k in [k for k in ("zh", "en") if k in entry]:
            try:
                re.compile(self.text(entry, k, where))
            except re.error as e:
                fault, key = e, f".{k}"
                break
        raise self.fail(where + key, f"bad regex {fault.pattern!r}: {fault}")

    def regex(self, entry: dict[str, Any], key: str, where: str) -> re.Pattern[str]:
        """``entry[key]``, a pattern matched as written, compiled."""
        return self.compiled({}, f"{where}.{key}", self.text(entry, key, where))

    def table(self, name: str, check: bool) -> Table:
        """A word table: each entry's alternatives, each compiled to check it when ``check``."""
        rows: Table = []
        for v, e in self.section(name).items():
            words: Table = [(Words(a), v) for a in alternatives(self.pattern(e, f"{name}.{v}")) if a]
            for w, _ in words if check else []:
                self.compiled(e, f"{name}.{v}", w.pattern)
            rows += words
        return rows

    def patterns(self, name: str) -> dict[str, re.Pattern[str]]:
        return {
            k: self.compiled(e, f"{name}.{k}", self.pattern(e, f"{name}.{k}"))
            for k, e in self.section(name).items()
        }

    def ordered(self, name: str, key: str) -> list[re.Pattern[str]]:
        """``[name].key``: patterns tried in order, each as written or (a table) a zh / en pattern,
        ``{CN_NUM}`` and ``{EN_NUM}`` the numerals of :mod:`.text`."""
        rows = self.section(name).get(key)
        if not isinstance(rows, list):
            raise self.fail(f"{name}.{key}", "missing patterns (a list)")
        out = []
        for i, e in enumerate(rows):
            where = f"{name}.{key}[{i}]"
            p = e if isinstance(e, str) else self.pattern(e, where)
            p = p.replace("{CN_NUM}", CN_NUM).replace("{EN_NUM}", EN_NUM)
            out.append(self.compiled(e if isinstance(e, dict) else {}, where, p))
        return out

    def words(self, entry: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
        """``entry[key]``: plain words, a list or one whitespace-separated string."""
        value = entry.get(key)
        if isinstance(value, str):
            return tuple(value.split())
        if isinstance(value, list) and all(isinstance(w, str) for w in value):
            return tuple(value)
        raise self.fail(f"{where}.{key}", "missing words (a string or a list of strings)")

    def templates(self, name: str) -> dict[str, dict[str, str]]:
        """``[name]``: a table per language of message templates (strings)."""
        out: dict[str, dict[str, str]] = {}
        for lang, parts in self.section(name).items():
            if not isinstance(parts, dict) or not all(isinstance(t, str) for t in parts.values()):
                raise self.fail(f"{name}.{lang}", "missing templates (a table of strings)")
            out[lang] = dict(parts)
        return out

    def synonyms(self, entry: dict[str, Any], where: str) -> tuple[str, tuple[str, ...]]:
        """A ``VALUE_WORDS`` entry: its pattern, checked, and its ``tokens``."""
        pattern = self.compiled(entry, where, self.pattern(entry, where, "tokens")).pattern
        return pattern, self.words(entry, "tokens", where)


#: package data: the :func:`digest` of the ``lexicon.toml`` whose word tables were last checked
#: whole (``scripts/refresh_exemplars.py`` writes it)
CHECKED = "lexicon.checked"


def digest(text: str) -> str:
    """What :data:`CHECKED` holds for a lexicon file's ``text``."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


#: the word tables and the (zh, en) pattern tables, by section
_WORD_TABLES = ("METRICS", "DIMENSIONS", "TIME_BUCKETS", "EVENT_TYPE_WORDS", "PROMOTION_VALUES")
_PATTERN_TABLES = ("INTENT_CONTEXT", "CUES", "FORMS")
#: the fields that are one key of a section: a pattern matched as written (its text), or words
_KEYS = {
    "stop_split": ("SIMILARITY", "split", "regex"),
    "value_edges": ("SIMILARITY", "edges", "words"),
    "en_stopwords": ("SIMILARITY", "stopwords", "words"),
    "en_function": ("FUNCTION_WORDS", "en", "words"),
    "zh_function": ("FUNCTION_WORDS", "zh", "words"),
    "zh_compound": ("FUNCTION_WORDS", "compound", "words"),
    "condition_zh": ("CONDITION", "zh", "regex"),
    "condition_en": ("CONDITION", "en", "regex"),
    "acts_zh": ("CONDITION", "acts_zh", "regex"),
    "acts_en": ("CONDITION", "acts_en", "regex"),
    "aside_en": ("ASIDES", "en", "words"),
    "aside_zh": ("ASIDES", "zh", "words"),
    "aside_never": ("ASIDES", "never", "regex"),
    "aside_frame": ("ASIDES", "frame", "regex"),
    "aside_lead": ("ASIDES", "lead", "regex"),
}


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
        check = path is not None or package.joinpath(CHECKED).read_text("utf-8").strip() != digest(text)
    except OSError:
        check = True
    r = TomlReader(source.name, data)
    fields: dict[str, Any] = {s.lower(): r.table(s, check) for s in _WORD_TABLES}
    fields |= {s.lower(): r.patterns(s) for s in _PATTERN_TABLES}
    for f, (s, k, kind) in _KEYS.items():
        entry = r.section(s)
        fields[f] = r.regex(entry, k, s).pattern if kind == "regex" else frozenset(r.words(entry, k, s))
    fields["shapes"] = {k: r.regex(r.section("SHAPES"), k, "SHAPES") for k in r.section("SHAPES")}
    fields["value_words"] = {
        key: [r.synonyms(e, f"VALUE_WORDS.{key}[{i}]") for i, e in enumerate(entries)]
        for key, entries in r.section("VALUE_WORDS").items()
    }
    fields["measure_context"] = {
        k: (r.words(e, "zh", f"MEASURE_CONTEXT.{k}"), r.words(e, "en", f"MEASURE_CONTEXT.{k}"))
        for k, e in r.section("MEASURE_CONTEXT").items()
    }
    fields["top_k"] = r.ordered("TOP_K", "patterns")
    fields["named_by_code"] = {}
    for k, v in r.section("NAMED_BY_CODE").items():
        if not isinstance(v, list):
            raise r.fail(f"NAMED_BY_CODE.{k}", "missing patterns (a list)")
        fields["named_by_code"][k] = tuple(r.regex({k: p}, k, f"NAMED_BY_CODE[{i}]") for i, p in enumerate(v))
    fields["naming"] = {k: r.regex(r.section("NAMING"), k, "NAMING") for k in r.section("NAMING")}
    fields["naming_words"] = {
        k: frozenset(r.words(r.section("NAMING_WORDS"), k, "NAMING_WORDS")) for k in r.section("NAMING_WORDS")
    }
    fields["two_fields"] = r.templates("TWO_FIELDS")
    short = r.section("ABBREVIATIONS")
    fields["abbreviations"], fields["abbreviated_units"] = dict(short["en"]), dict(short["units"])
    trad = r.section("TRADITIONAL")
    src, dst = (trad.get(k) for k in ("from", "to"))
    if not (isinstance(src, str) and isinstance(dst, str) and len(src) == len(dst)):
        raise r.fail("TRADITIONAL", "from and to must be strings of the same length")
    fields["traditional"] = str.maketrans(src, dst)
    return Lexicon(**fields)


#: the package's lexicon, its tables by name
_LEXICON = load()
METRICS = _LEXICON.metrics
DIMENSIONS = _LEXICON.dimensions
TIME_BUCKETS = _LEXICON.time_buckets
EVENT_TYPE_WORDS = _LEXICON.event_type_words
PROMOTION_VALUES = _LEXICON.promotion_values
VALUE_WORDS = _LEXICON.value_words
MEASURE_CONTEXT = _LEXICON.measure_context
INTENT_CONTEXT = _LEXICON.intent_context
CUES = _LEXICON.cues
FORMS = _LEXICON.forms
SHAPES = _LEXICON.shapes
STOP_SPLIT = _LEXICON.stop_split
VALUE_EDGES = _LEXICON.value_edges
EN_STOPWORDS = _LEXICON.en_stopwords
EN_FUNCTION = _LEXICON.en_function
ZH_FUNCTION = _LEXICON.zh_function
ZH_COMPOUND = _LEXICON.zh_compound
CONDITION_ZH = _LEXICON.condition_zh
CONDITION_EN = _LEXICON.condition_en
ACTS_ZH = _LEXICON.acts_zh
ACTS_EN = _LEXICON.acts_en
ASIDE_EN = _LEXICON.aside_en
ASIDE_ZH = _LEXICON.aside_zh
ASIDE_NEVER = _LEXICON.aside_never
ASIDE_FRAME = _LEXICON.aside_frame
ASIDE_LEAD = _LEXICON.aside_lead
TOP_K = _LEXICON.top_k

NAMED_BY_CODE = _LEXICON.named_by_code
NAMING = _LEXICON.naming
NAMING_WORDS = _LEXICON.naming_words
TWO_FIELDS = _LEXICON.two_fields
ABBREVIATIONS = _LEXICON.abbreviations
ABBREVIATED_UNITS = _LEXICON.abbreviated_units
TRADITIONAL = _LEXICON.traditional
