"""MEV validation: one JSON Lines line in, either a checked event or a reason a person can act on.

Owns the rules an imported line must meet: ``edge/schemas/mev.schema.json`` (the project's copy of
the shared schema, checked with jsonschema's Draft 2020-12 validator with ``date-time`` format
checking) plus what a JSON Schema cannot say: timestamps carry an offset or ``Z`` and parse,
``end_timestamp`` is not before ``timestamp``, no NaN/Infinity (nor numbers so large they overflow),
vectors have the store's dimension (:data:`edge.memory.db.migrations.VECTOR_DIM`), a line is at most
:data:`MAX_LINE_BYTES`, and strings are valid Unicode (no unpaired surrogate escapes).

Valid lines are the common case, so :func:`check_line` first runs a hand-written check that only
*accepts* what the schema accepts; anything it does not accept goes through jsonschema, whose
errors become the reasons (``stats.order_amount must be a number, got "12元"``). Called by
:mod:`edge.memory.ingest.build` (import) on the importing thread.
"""

from __future__ import annotations

import itertools
import json
import logging
import math
import re
from datetime import UTC, datetime
from functools import lru_cache
from importlib import resources
from typing import Any, NamedTuple

import numpy as np
import orjson
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from edge.memory.db.migrations import MODALITY_VECTOR_TABLES, VECTOR_DIM

logger = logging.getLogger(__name__)

#: a longer line is rejected before it is parsed
MAX_LINE_BYTES = 1_000_000
MAX_TEXT_CHARS = 20_000
INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)

MODALITIES = ("video", "image", "audio", "text", "pos")
TOP_LEVEL_KEYS = frozenset(
    {
        "event_id",
        "timestamp",
        "end_timestamp",
        "store_id",
        "source",
        "event_type",
        "modality",
        "embedding",
        "text",
        "entities",
        "relations",
        "stats",
        "raw_ref",
    }
)
REQUIRED_KEYS = ("event_id", "timestamp", "store_id", "event_type", "modality", "raw_ref")

_EVENT_ID = re.compile(r"[A-Za-z0-9_.:-]{1,128}")
_STORE_ID = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_EVENT_TYPE = re.compile(r"[a-z][a-z0-9_]{0,63}")
#: the shape of an RFC 3339 date-time (section 5.6; ``T`` and ``Z`` in either case, as its ABNF
#: and the schema's ``date-time`` format read them; no space separator); :func:`parse_timestamp`
#: checks the ranges of the fields
_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))",
    re.ASCII,
)
_NO_OFFSET = re.compile(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d+)?", re.ASCII)
_OFFSET_FORM = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d+)?[+-]\d{1,4}(?::\d{1,2})?", re.ASCII
)
#: the same with every field in range except the day of the month and the year 0 (which
#: ``datetime`` checks): what the fast path accepts by shape; anything else takes the full path
_RFC3339_STRICT = re.compile(
    r"\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])[Tt](?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d+)?"
    r"(?:[Zz]|[+-](?:[01]\d|2[0-3]):[0-5]\d)",
    re.ASCII,
)

_WELL_KNOWN: dict[str, str] = {
    "person_count": "count",
    "dwell_seconds": "nonneg",
    "queue_length": "count",
    "order_amount": "nonneg",
    "bill_id": "str",
    "product_id": "str",
    "product_category": "str",
    "gross_margin": "num",
    "weather": "str",
    "speech_emotion": "str",
    "staff_id": "str",
    "zone": "str",
    "promotion": "str_or_bool",
    "quality": "unit",
}


class LineRejected(Exception):
    """One line is not a valid MEV; ``reason`` says why in words a person can act on."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class CheckedEvent(NamedTuple):
    """A line that passed every check: the parsed object and its parsed times (aware, UTC)."""

    obj: dict[str, Any]
    ts: datetime
    end_ts: datetime | None


@lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    """The project's copy of the MEV schema."""
    text = resources.files("edge").joinpath("schemas/mev.schema.json").read_text(encoding="utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


@lru_cache(maxsize=1)
def validator() -> Draft202012Validator:
    return Draft202012Validator(schema(), format_checker=Draft202012Validator.FORMAT_CHECKER)


def _reject_constant(name: str) -> float:
    raise LineRejected(f"{name} is not a number JSON allows; use a finite number or null")


#: orjson reads integers beyond 64 bits as floats; floats this large take the full path
_FLOAT_LIMIT = 9.2e18


def _may_hold_long_int(obj: Any) -> bool:
    """orjson reads integers beyond 64 bits as floats; stats numbers that large are re-read exactly."""
    if type(obj) is not dict:
        return False
    stats = obj.get("stats")
    if type(stats) is not dict:
        return False
    return any(type(v) is float and not -_FLOAT_LIMIT < v < _FLOAT_LIMIT for v in stats.values())


_TOO_LONG = f"line is longer than {MAX_LINE_BYTES // 1_000_000} MB; split the event or shorten its text"
_BOM = "\ufeff"


def decode_line(data: bytes) -> str:
    """The text of one line read as bytes; :class:`LineRejected` when it is not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LineRejected(
            f"not valid UTF-8 (byte {exc.start + 1} of the line is 0x{data[exc.start]:02x}); "
            "save the file as UTF-8"
        ) from None


def parse_line(line: str) -> Any:
    """Parse one line as JSON, rejecting oversized lines, NaN/Infinity and invalid Unicode."""
    if len(line) > MAX_LINE_BYTES // 4 and len(line.encode("utf-8", "surrogatepass")) > MAX_LINE_BYTES:
        raise LineRejected(_TOO_LONG)
    if line.startswith(_BOM):
        raise LineRejected(
            "the line starts with a byte-order mark (U+FEFF); only the very start of the file may "
            "have one: remove it"
        )
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        pass  # the standard parser says why (or accepts what orjson refuses, e.g. lone surrogates)
    else:
        if not _may_hold_long_int(obj):
            return obj
    try:
        return json.loads(line, parse_constant=_reject_constant)
    except LineRejected:
        raise
    except RecursionError:
        raise LineRejected("not valid JSON: nested too deeply") from None
    except ValueError as exc:
        msg = getattr(exc, "msg", str(exc))
        col = getattr(exc, "colno", None)
        where = f" at column {col}" if col else ""
        raise LineRejected(f"not valid JSON: {msg}{where}") from None


def parse_timestamp(value: str, field: str) -> datetime:
    """An RFC 3339 date-time with an offset or Z as an aware UTC datetime; :class:`LineRejected`
    saying what is wrong otherwise.

    Strict, as the schema's ``date-time`` format: month 01-12, a day the month has, hour 00-23,
    minute and second 00-59 (no leap second), an offset of at most 23:59 (``+08:60`` is not read
    as ``+09:00``), ``T`` and ``Z`` in either case, no space separator, a year from 0001.
    """
    m = _RFC3339.fullmatch(value)
    if m is None:
        if value[10:11] == " " and _RFC3339.fullmatch(value[:10] + "T" + value[11:]):
            raise LineRejected(
                f"{field} {_show(value)} separates date and time with a space; use T (e.g. 2025-11-01T09:30:00+08:00)"
            )
        if _OFFSET_FORM.fullmatch(value):
            raise LineRejected(
                f"{field} {_show(value)} has its UTC offset written wrongly; write it as +HH:MM "
                "(e.g. 2025-11-01T09:30:00+08:00)"
            )
        if _NO_OFFSET.fullmatch(value):
            raise LineRejected(
                f"{field} {_show(value)} has no UTC offset; add Z or one like +08:00 (e.g. 2025-11-01T09:30:00+08:00)"
            )
        raise LineRejected(
            f"{field} {_show(value)} is not an RFC 3339 date-time with an offset (e.g. 2025-11-01T09:30:00+08:00)"
        )
    month, hour, minute, second = (int(m.group(i)) for i in (2, 4, 5, 6))
    problem = None
    if not 1 <= month <= 12:
        problem = f"month {m.group(2)} is not 01-12"
    elif hour > 23:
        problem = f"hour {m.group(4)} is not 00-23 (midnight is 00 of the next day)"
    elif minute > 59:
        problem = f"minute {m.group(5)} is not 00-59"
    elif second == 60:
        problem = "leap seconds are not supported; use :59"
    elif second > 59:
        problem = f"second {m.group(6)} is not 00-59"
    elif not m.group(8) and (int(m.group(10)) > 23 or int(m.group(11)) > 59):
        problem = f"offset {m.group(9)}{m.group(10)}:{m.group(11)} is not a UTC offset (at most 23:59)"
    if problem is not None:
        raise LineRejected(f"{field} {_show(value)} is not a valid date-time: {problem}")
    return _to_utc(value, field)


def _to_utc(value: str, field: str) -> datetime:
    """The UTC datetime of ``value``, whose fields other than the day and year are in range."""
    text = value if value[10] == "T" and value[-1] != "z" else value.upper()
    try:
        return datetime.fromisoformat(text).astimezone(UTC)
    except ValueError as exc:  # a day the month does not have, the year 0
        raise LineRejected(f"{field} {_show(value)} is not a valid date-time: {exc}") from None
    except OverflowError:
        raise LineRejected(
            f"{field} {_show(value)} is not a valid date-time: it is outside the years 0001-9999 in UTC"
        ) from None


# -- the fast accepting check ----------------------------------------------------------------------

_REL_KEY_SET = frozenset(("head", "type", "tail"))
#: every valid ``modality`` value (non-empty, no repeats) as a tuple: one set lookup checks it
_VALID_MODALITIES = frozenset(
    perm for n in range(1, len(MODALITIES) + 1) for perm in itertools.permutations(MODALITIES, n)
)
_EVENT_ID_MATCH = _EVENT_ID.fullmatch
_RFC3339_STRICT_MATCH = _RFC3339_STRICT.fullmatch
#: store ids / event types already seen to match their pattern (they repeat on almost every line)
_known_store_ids: set[str] = set()
_known_event_types: set[str] = set()
_KNOWN_LIMIT = 4096


def _remember(value: str, pattern: re.Pattern[str], known: set[str]) -> bool:
    """Whether ``value`` matches ``pattern``; a match is remembered in ``known`` (bounded) so the
    next line with the same store id or event type skips the regex."""
    if pattern.fullmatch(value) is None:
        return False
    if len(known) >= _KNOWN_LIMIT:
        known.clear()
    known.add(value)
    return True


def _is_num(v: Any) -> bool:
    return (isinstance(v, int | float)) and not isinstance(v, bool)


def _num_in_range(v: Any) -> bool:
    """A JSON number (not a bool) that :func:`_check_numbers` accepts as it is."""
    t = type(v)
    if t is int:
        return bool(INT64_MIN <= v <= INT64_MAX)
    if t is float:
        return bool(-_FLOAT_LIMIT < v < _FLOAT_LIMIT)
    return False


def _stat_ok(kind: str, v: Any) -> bool:
    """``v`` is valid for a well-known stats key of ``kind`` (and a number in range)."""
    if kind == "str":
        return type(v) is str
    if kind == "str_or_bool":
        return type(v) is str or type(v) is bool
    if not _num_in_range(v):
        return False
    if kind == "count":
        return bool(v >= 0 and (type(v) is int or v.is_integer()))
    if kind == "nonneg":
        return bool(v >= 0)
    if kind == "unit":
        return bool(0 <= v <= 1)
    return True  # "num"


def _vector_ok(vec: Any) -> bool:
    """A list of ``VECTOR_DIM`` JSON numbers, each a finite float32 value."""
    if type(vec) is not list or len(vec) != VECTOR_DIM:
        return False
    if not {float, int}.issuperset(map(type, vec)):
        return False
    try:
        a = np.array(vec, dtype=np.float64)
    except (OverflowError, ValueError, TypeError):
        return False
    return bool((np.abs(a) < 3.4e38).all())  # NaN compares False


def _fast_ok(obj: Any) -> bool:
    """True only when ``obj`` certainly satisfies the schema *and* every number check of
    :func:`_check_numbers` (False means: take the full path, which gives the reason).

    Timestamps are checked here by their shape with every field in range
    (:data:`_RFC3339_STRICT`); :func:`_checked` parses them (a day the month lacks is rejected there).
    """
    if type(obj) is not dict:
        return False
    try:
        eid = obj["event_id"]
        sid = obj["store_id"]
        etype = obj["event_type"]
        ts = obj["timestamp"]
        mod = obj["modality"]
        refs = obj["raw_ref"]
    except KeyError:
        return False
    n_keys = len(obj)
    if n_keys > 6 and not TOP_LEVEL_KEYS.issuperset(obj):
        return False
    if type(eid) is not str or _EVENT_ID_MATCH(eid) is None:
        return False
    if type(sid) is not str:
        return False
    if sid not in _known_store_ids and not _remember(sid, _STORE_ID, _known_store_ids):
        return False
    if type(etype) is not str:
        return False
    if etype not in _known_event_types and not _remember(etype, _EVENT_TYPE, _known_event_types):
        return False
    if type(ts) is not str or _RFC3339_STRICT_MATCH(ts) is None:
        return False
    if type(mod) is not list:
        return False
    try:
        if tuple(mod) not in _VALID_MODALITIES:
            return False
    except TypeError:  # an unhashable item
        return False
    if type(refs) is not list or not refs:
        return False
    for r in refs:
        if type(r) is not str or not r:
            return False
    if n_keys == 6:
        return True
    keys = obj.keys()
    if "end_timestamp" in keys:
        end = obj["end_timestamp"]
        if type(end) is not str or _RFC3339_STRICT_MATCH(end) is None:
            return False
    if "source" in keys and type(obj["source"]) is not str:
        return False
    if "text" in keys:
        text = obj["text"]
        if type(text) is not str or len(text) > MAX_TEXT_CHARS:
            return False
    if "stats" in keys:
        stats = obj["stats"]
        if type(stats) is not dict:
            return False
        for k, v in stats.items():
            kind = _WELL_KNOWN.get(k)
            t = type(v)
            if kind is None:
                if not (t is str or v is None or t is bool or _num_in_range(v)):
                    return False
            elif kind == "str":
                if t is not str:
                    return False
            elif kind == "count" and t is int:
                if not 0 <= v <= INT64_MAX:
                    return False
            elif not _stat_ok(kind, v):
                return False
    if "entities" in keys:
        ents = obj["entities"]
        if type(ents) is not list:
            return False
        for e in ents:
            if type(e) is not str or len(e) > 128:
                return False
        if len(set(ents)) != len(ents):
            return False
    if "relations" in keys:
        rels = obj["relations"]
        if type(rels) is not list:
            return False
        for r in rels:
            if type(r) is not dict or r.keys() != _REL_KEY_SET:
                return False
            if type(r["head"]) is not str or type(r["type"]) is not str or type(r["tail"]) is not str:
                return False
    if "embedding" in keys:
        emb = obj["embedding"]
        if type(emb) is not dict:
            return False
        for k, vec in emb.items():
            if k not in MODALITY_VECTOR_TABLES or not _vector_ok(vec):
                return False
    return True


# -- reasons from jsonschema -----------------------------------------------------------------------

_TYPE_WORDS = {
    "number": "a number",
    "integer": "an integer",
    "string": "a string",
    "boolean": "true or false",
    "object": "an object",
    "array": "an array",
    "null": "null",
}


def _path(err: ValidationError) -> str:
    out = ""
    for part in err.absolute_path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "the line"


def _show(value: Any, limit: int = 60) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _describe(err: ValidationError) -> str:
    where = _path(err)
    kind = err.validator
    inst = err.instance
    if kind == "type":
        wanted = err.validator_value
        types = [wanted] if isinstance(wanted, str) else list(wanted)
        words = " or ".join(_TYPE_WORDS.get(t, t) for t in types)
        return f"{where} must be {words}, got {_show(inst)}"
    if kind == "required":
        missing = [k for k in err.validator_value if isinstance(inst, dict) and k not in inst]
        name = missing[0] if missing else err.message
        place = "" if where == "the line" else f" in {where}"
        return f"missing required field {name}{place}"
    if kind == "additionalProperties":
        allowed = set(err.schema.get("properties", {}))
        extra = sorted(k for k in inst if k not in allowed) if isinstance(inst, dict) else []
        names = ", ".join(repr(k) for k in extra)
        if where == "the line":
            return f"unknown top-level key {names} (allowed: {', '.join(sorted(allowed))})"
        return f"unknown key {names} in {where} (allowed: {', '.join(sorted(allowed))})"
    if kind == "pattern":
        return f"{where} {_show(inst)} is not allowed: it must match {err.validator_value}"
    if kind == "enum":
        allowed_values = ", ".join(str(v) for v in err.validator_value)
        return f"{where}: unknown value {_show(inst)} (allowed: {allowed_values})"
    if kind == "format":
        if isinstance(inst, str):
            try:
                parse_timestamp(inst, where)
            except LineRejected as exc:  # says which field is out of range
                return exc.reason
        return (
            f"{where} {_show(inst)} is not an RFC 3339 date-time with an offset "
            "(e.g. 2025-11-01T09:30:00+08:00)"
        )
    if kind == "maxLength":
        return f"{where} is {len(inst)} characters long; at most {err.validator_value} are allowed"
    if kind == "minLength":
        return f"{where} must not be empty"
    if kind == "minItems":
        return f"{where} needs at least {err.validator_value} item(s)"
    if kind == "uniqueItems":
        return f"{where} lists an item twice: {_show(inst)}"
    if kind in ("minimum", "maximum"):
        word = "at least" if kind == "minimum" else "at most"
        return f"{where} must be {word} {err.validator_value}, got {_show(inst)}"
    return f"{where}: {err.message}"


def schema_reasons(obj: Any, limit: int = 3) -> list[str]:
    """Reasons ``obj`` fails the schema (at most ``limit``, most specific first); empty when valid."""
    errors = sorted(
        validator().iter_errors(obj), key=lambda e: (list(map(str, e.absolute_path)), e.validator)
    )
    out: list[str] = []
    for err in errors:
        reason = _describe(err)
        if reason not in out:
            out.append(reason)
        if len(out) >= limit:
            break
    return out


# -- what the schema cannot say --------------------------------------------------------------------


def _strict_reason(obj: dict[str, Any]) -> str | None:
    """Checks the schema (as Python's regex engine reads it) lets through but import does not."""
    for key, rx in (("event_id", _EVENT_ID), ("store_id", _STORE_ID), ("event_type", _EVENT_TYPE)):
        if not rx.fullmatch(obj[key]):
            return f"{key} {_show(obj[key])} is not allowed: it must match {rx.pattern} (no trailing newline)"
    return None


def _check_numbers(obj: dict[str, Any]) -> None:
    stats = obj.get("stats")
    if stats:
        for k, v in stats.items():
            if _is_num(v):
                if isinstance(v, float) and not math.isfinite(v):
                    raise LineRejected(f"stats.{k} is too large to be a number ({_show(v)})")
                if isinstance(v, int) and not (INT64_MIN <= v <= INT64_MAX):
                    raise LineRejected(f"stats.{k} {v} is out of range (at most 2^63-1 in magnitude)")
    emb = obj.get("embedding")
    if emb:
        for k, vec in emb.items():
            if len(vec) != VECTOR_DIM:
                raise LineRejected(
                    f"embedding.{k} has {len(vec)} dimensions; this store keeps {VECTOR_DIM}-d vectors "
                    f"(omit it to have it computed, or supply a {VECTOR_DIM}-d vector)"
                )
            for i, x in enumerate(vec):
                try:
                    ok = math.isfinite(x) and abs(x) < 3.4e38
                except OverflowError:
                    ok = False
                if not ok:
                    raise LineRejected(f"embedding.{k}[{i}] is not a finite float32 value ({_show(x)})")


def _checked(obj: dict[str, Any], fast: bool = True) -> CheckedEvent:
    """The event of an object that passed the schema and number checks (times still to parse;
    ``fast``: :func:`_fast_ok` has checked their shape and the ranges of their fields)."""
    parse = _to_utc if fast else parse_timestamp
    ts = parse(obj["timestamp"], "timestamp")
    end_ts = None
    if "end_timestamp" in obj:
        end_ts = parse(obj["end_timestamp"], "end_timestamp")
        if end_ts < ts:
            raise LineRejected(f"end_timestamp {obj['end_timestamp']} is before timestamp {obj['timestamp']}")
    return CheckedEvent(obj, ts, end_ts)


def check_object(obj: Any) -> CheckedEvent:
    """Validate a parsed line; raises :class:`LineRejected` with the reason.

    The hand-written :func:`_fast_ok` accepts the common valid object; anything it does not
    accept goes through jsonschema and the checks a schema cannot express, which give the reason.
    """
    if _fast_ok(obj):
        return _checked(obj)
    return _check_slow(obj)


def _check_slow(obj: Any) -> CheckedEvent:
    """What :func:`check_object` does once :func:`_fast_ok` declined ``obj``."""
    reasons = schema_reasons(obj)
    if reasons:
        raise LineRejected("; ".join(reasons))
    strict = _strict_reason(obj)
    if strict:
        raise LineRejected(strict)
    _check_numbers(obj)
    return _checked(obj, fast=False)


def check_line(line: str | bytes) -> CheckedEvent:
    """Parse and validate one line (text, or UTF-8 bytes as read from a file, without its line
    break); raises :class:`LineRejected` with the reason (invalid UTF-8 included)."""
    if isinstance(line, bytes):
        if len(line) > MAX_LINE_BYTES:
            raise LineRejected(_TOO_LONG)
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            return check_object(parse_line(decode_line(line)))
        if _fast_ok(obj):
            return _checked(obj)
        if not _may_hold_long_int(obj):
            return _check_slow(obj)
        return check_object(parse_line(line.decode("utf-8")))
    if len(line) <= MAX_LINE_BYTES // 4:  # longer lines: parse_line checks their size first
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            pass
        else:
            if _fast_ok(obj):
                return _checked(obj)
            if not _may_hold_long_int(obj):  # parse_line would give the same object
                return _check_slow(obj)
    return check_object(parse_line(line))
