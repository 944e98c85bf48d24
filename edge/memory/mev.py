"""MEV validation: one JSON Lines line in, either a checked event or a reason a person can act on.

Owns the rules an imported line must meet: ``edge/schemas/mev.schema.json`` (the project's copy of
the shared schema, checked with jsonschema's Draft 2020-12 validator with ``date-time`` format
checking) plus what a JSON Schema cannot say: timestamps carry an offset or ``Z`` and parse,
``end_timestamp`` is not before ``timestamp``, no NaN/Infinity (nor numbers so large they overflow),
vectors have the store's dimension (:data:`edge.memory.migrations.VECTOR_DIM`), a line is at most
:data:`MAX_LINE_BYTES`, and strings are valid Unicode (no unpaired surrogate escapes).

Valid lines are the common case, so :func:`check_line` first runs a hand-written check that only
*accepts* what the schema accepts; anything it does not accept goes through jsonschema, whose
errors become the reasons (``stats.order_amount must be a number, got "12元"``). Called by
:mod:`edge.memory.ingest` (import) on the importing thread.
"""

from __future__ import annotations

import json
import logging
import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from functools import lru_cache
from importlib import resources
from typing import Any

import orjson
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from edge.memory.migrations import MODALITY_VECTOR_TABLES, VECTOR_DIM

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
_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:(Z)|([+-])(\d{2}):(\d{2}))",
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


@dataclass(frozen=True)
class CheckedEvent:
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


def _may_hold_long_int(obj: Any) -> bool:
    """orjson reads integers beyond 64 bits as floats; stats numbers that large are re-read exactly."""
    if type(obj) is not dict:
        return False
    stats = obj.get("stats")
    if type(stats) is not dict:
        return False
    return any(type(v) is float and not -9.2e18 < v < 9.2e18 for v in stats.values())


def parse_line(line: str) -> Any:
    """Parse one line as JSON, rejecting oversized lines, NaN/Infinity and invalid Unicode."""
    if len(line) > MAX_LINE_BYTES // 4 and len(line.encode("utf-8", "surrogatepass")) > MAX_LINE_BYTES:
        raise LineRejected(
            f"line is longer than {MAX_LINE_BYTES // 1_000_000} MB; split the event or shorten its text"
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
    """An RFC 3339 date-time with an offset or Z as an aware UTC datetime."""
    m = _RFC3339.fullmatch(value)
    if m is None:
        if _RFC3339.fullmatch(value + "Z") is not None or _RFC3339.fullmatch(value[:19] + "Z"):
            raise LineRejected(
                f"{field} {value!r} has no UTC offset; add Z or one like +08:00 (e.g. 2025-11-01T09:30:00+08:00)"
            )
        raise LineRejected(
            f"{field} {value!r} is not an RFC 3339 date-time with an offset (e.g. 2025-11-01T09:30:00+08:00)"
        )
    if m.group(6) != "60":
        try:
            return datetime.fromisoformat(value).astimezone(UTC)
        except (ValueError, OverflowError):
            pass  # the detailed parse below says why
    year, month, day, hour, minute, second = (int(m.group(i)) for i in range(1, 7))
    frac = m.group(7) or ""
    micro = int((frac + "000000")[:6]) if frac else 0
    try:
        if m.group(8):
            tz = UTC
        else:
            oh, om = int(m.group(10)), int(m.group(11))
            if oh > 23 or om > 59:
                raise ValueError("offset out of range")
            delta = timedelta(hours=oh, minutes=om)
            tz = timezone(-delta if m.group(9) == "-" else delta)
        if second == 60:
            raise ValueError("leap seconds are not supported")
        dt = datetime(year, month, day, hour, minute, second, micro, tzinfo=tz)
        return dt.astimezone(UTC)
    except (ValueError, OverflowError) as exc:
        raise LineRejected(f"{field} {value!r} is not a valid date-time: {exc}") from None


# -- the fast accepting check ----------------------------------------------------------------------


def _is_num(v: Any) -> bool:
    return (isinstance(v, int | float)) and not isinstance(v, bool)


def _stat_ok(kind: str, v: Any) -> bool:
    if kind == "str":
        return isinstance(v, str)
    if kind == "str_or_bool":
        return isinstance(v, str | bool)
    if not _is_num(v):
        return False
    if kind == "count":
        return (isinstance(v, int) or float(v).is_integer()) and v >= 0
    if kind == "nonneg":
        return bool(v >= 0)
    if kind == "unit":
        return bool(0 <= v <= 1)
    return True  # "num"


def _fast_ok(obj: Any) -> bool:
    """True only when ``obj`` certainly satisfies the schema (False means: ask jsonschema)."""
    if type(obj) is not dict:
        return False
    for k in REQUIRED_KEYS:
        if k not in obj:
            return False
    if not TOP_LEVEL_KEYS.issuperset(obj):
        return False
    eid, sid, etype = obj["event_id"], obj["store_id"], obj["event_type"]
    if not (isinstance(eid, str) and _EVENT_ID.fullmatch(eid)):
        return False
    if not (isinstance(sid, str) and _STORE_ID.fullmatch(sid)):
        return False
    if not (isinstance(etype, str) and _EVENT_TYPE.fullmatch(etype)):
        return False
    for key in ("timestamp", "end_timestamp"):
        if key in obj and not (isinstance(obj[key], str) and _RFC3339.fullmatch(obj[key])):
            return False
    mod = obj["modality"]
    if not (type(mod) is list and mod and len(set(map(str, mod))) == len(mod)):
        return False
    if not all(isinstance(m, str) and m in MODALITIES for m in mod):
        return False
    refs = obj["raw_ref"]
    if not (type(refs) is list and refs and all(isinstance(r, str) and r for r in refs)):
        return False
    if "source" in obj and not isinstance(obj["source"], str):
        return False
    if "text" in obj and not (isinstance(obj["text"], str) and len(obj["text"]) <= MAX_TEXT_CHARS):
        return False
    if "entities" in obj:
        ents = obj["entities"]
        if not (type(ents) is list and all(isinstance(e, str) and len(e) <= 128 for e in ents)):
            return False
        if len(set(ents)) != len(ents):
            return False
    if "relations" in obj:
        rels = obj["relations"]
        if type(rels) is not list:
            return False
        for r in rels:
            if not (type(r) is dict and len(r) == 3 and all(isinstance(r.get(k), str) for k in _REL_KEYS)):
                return False
    if "stats" in obj:
        stats = obj["stats"]
        if type(stats) is not dict:
            return False
        for k, v in stats.items():
            kind = _WELL_KNOWN.get(k)
            if kind is None:
                if not (v is None or isinstance(v, str | int | float)):
                    return False
            elif not _stat_ok(kind, v):
                return False
    if "embedding" in obj:
        emb = obj["embedding"]
        if type(emb) is not dict:
            return False
        for k, vec in emb.items():
            if k not in MODALITY_VECTOR_TABLES or type(vec) is not list or len(vec) < 2:
                return False
            if not all(_is_num(x) for x in vec):
                return False
    return True


_REL_KEYS = ("head", "type", "tail")


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
        if isinstance(inst, str) and _RFC3339.fullmatch(inst[:19] + "Z") and len(inst) <= 26:
            if not re.search(r"(Z|[+-]\d{2}:\d{2})$", inst):
                return f"{where} {_show(inst)} has no UTC offset; add Z or one like +08:00"
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


def check_object(obj: Any) -> CheckedEvent:
    """Validate a parsed line; raises :class:`LineRejected` with the reason."""
    if not _fast_ok(obj):
        reasons = schema_reasons(obj)
        if reasons:
            raise LineRejected("; ".join(reasons))
        strict = _strict_reason(obj)
        if strict:
            raise LineRejected(strict)
    _check_numbers(obj)
    ts = parse_timestamp(obj["timestamp"], "timestamp")
    end_ts = None
    if "end_timestamp" in obj:
        end_ts = parse_timestamp(obj["end_timestamp"], "end_timestamp")
        if end_ts < ts:
            raise LineRejected(f"end_timestamp {obj['end_timestamp']} is before timestamp {obj['timestamp']}")
    return CheckedEvent(obj, ts, end_ts)


def check_line(line: str) -> CheckedEvent:
    """Parse and validate one line; raises :class:`LineRejected` with the reason."""
    return check_object(parse_line(line))
