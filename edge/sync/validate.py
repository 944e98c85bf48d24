"""What a sync message must be to be believed: the JSON Schemas and the range rules, one module.

Owned here, used on both sides so they cannot drift: the edge checks every summary with it
before it queues it (:func:`edge.sync.messages.make_summary`), the hub checks every message it
receives (:func:`edge.sync.messages.parse_summary`, ``parse_status``, ``parse_action``,
``parse_ack``, ``parse_receipt``), and the tests check both against the same files. Store-free
and pure (no I/O but reading the schemas), so the hub may import it.

- :class:`Reason`: the closed list of reasons a message is refused (parked by the hub, kept out
  by the edge); every :class:`MessageError` carries one;
- :func:`schema` / :func:`schema_problem`: one JSON Schema per message kind,
  ``edge/schemas/messages/{kind}.schema.json`` (rollup, fact, status, action, ack, receipt);
- :func:`check_ranges`: what the schemas cannot say or should say more precisely (CONTRACT.md
  section 5): a day after the clock + 1 day or before 2000-01-01, a negative or non-integer
  count, a non-finite number, a confidence or p-value outside [0, 1], an ``n`` that is not a
  non-negative integer, ``valid_from`` after ``valid_to``.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, date, datetime
from enum import StrEnum
from functools import cache
from importlib import resources
from typing import Any

from jsonschema import Draft202012Validator

from edge.contract import EARLIEST_DAY, MAX_AHEAD
from edge.errors import AdammError

#: the message kinds that have a schema (``edge/schemas/messages/{kind}.schema.json``)
SCHEMA_KINDS = ("rollup", "fact", "status", "action", "ack", "receipt")
#: the fields of a rollup row that count things (non-negative integers); the other
#: ``ROLLUP_FIELDS`` are sums (non-negative finite numbers)
ROLLUP_COUNT_FIELDS = (
    "events",
    "footfall",
    "enter_events",
    "purchase_events",
    "bills",
    "dwell_n",
    "queue_n",
    "complaints",
    "emotion_n",
    "negative_n",
    "staff_error_n",
    "staff_op_n",
)


class Reason(StrEnum):
    """Why a message is refused: the closed list (the hub parks with one of these, the edge keeps
    a summary out with one of these). The values are what receipts and ``adamm-hub status`` show.
    """

    #: the message is larger than ``MAX_MESSAGE_BYTES`` as sent
    TOO_LARGE = "too_large"
    #: not UTF-8 JSON
    NOT_JSON = "not_json"
    #: JSON, but not an object
    NOT_OBJECT = "not_object"
    #: a ``schema_version`` this build cannot read
    UNKNOWN_SCHEMA_VERSION = "unknown_schema_version"
    #: an envelope field is missing, unknown or of the wrong type
    MISSING_FIELD = "missing_field"
    UNKNOWN_FIELD = "unknown_field"
    BAD_FIELD = "bad_field"
    #: the topic names no valid store, or another store than the message, or not a summary topic
    BAD_STORE_ID = "bad_store_id"
    WRONG_STORE = "wrong_store"
    WRONG_TOPIC = "wrong_topic"
    BAD_TOPIC = "bad_topic"
    #: ``msg_id`` is not the hash of the content
    BAD_MSG_ID = "bad_msg_id"
    #: the kind is unknown, or the key does not fit the kind
    BAD_KIND = "bad_kind"
    BAD_KEY = "bad_key"
    #: the body (a rollup's or a fact's) or a rollup row breaks its shape
    BAD_BODY = "bad_body"
    BAD_ROW = "bad_row"
    #: the message breaks its kind's JSON Schema where no reason below is more precise
    BREAKS_SCHEMA = "breaks_schema"
    #: a fact statement carries a phone or ID number
    IDENTIFYING = "identifying"
    #: a day (a rollup's, a fact's ``valid_from``/``valid_to``) after the receiver's clock + 1 day
    DAY_AHEAD = "day_ahead"
    #: a day before 2000-01-01
    DAY_TOO_EARLY = "day_too_early"
    #: a count (rollup row counts, a fact's ``n`` or ``evidence_count``) that is negative or not
    #: an integer
    BAD_COUNT = "bad_count"
    #: a sum that is negative
    NEGATIVE_SUM = "negative_sum"
    #: a number that is NaN or infinite
    NON_FINITE = "non_finite"
    #: a fact's ``confidence`` or ``p_value`` that is not a number in [0, 1]
    NOT_PROBABILITY = "not_probability"
    #: a fact's ``valid_from`` after its ``valid_to``
    VALID_FROM_AFTER_TO = "valid_from_after_valid_to"
    #: a status, an ack that is not one
    BAD_STATUS = "bad_status"
    BAD_STATE = "bad_state"


class MessageError(AdammError):
    """A message that cannot be used; ``reason`` (a :class:`Reason`) says which rule it breaks,
    the message says what is wrong."""

    def __init__(self, reason: Reason, message: str) -> None:
        super().__init__(message)
        self.reason = Reason(reason)


# -- schemas ---------------------------------------------------------------------------------


@cache
def schema(kind: str) -> dict[str, Any]:
    """The JSON Schema of one message kind (:data:`SCHEMA_KINDS`)."""
    if kind not in SCHEMA_KINDS:
        raise ValueError(f"no schema for message kind {kind!r}")
    text = (
        resources.files("edge").joinpath(f"schemas/messages/{kind}.schema.json").read_text(encoding="utf-8")
    )
    loaded: dict[str, Any] = json.loads(text)
    return loaded


@cache
def _validator(kind: str) -> Draft202012Validator:
    return Draft202012Validator(schema(kind), format_checker=Draft202012Validator.FORMAT_CHECKER)


def schema_problem(kind: str, obj: Any) -> str | None:
    """The first way ``obj`` breaks the schema of ``kind`` (where, and what), ``None`` when it fits."""
    err = next(iter(_validator(kind).iter_errors(obj)), None)
    if err is None:
        return None
    where = ".".join(str(p) for p in err.absolute_path) or "the message"
    return f"{where}: {err.message[:300]}"


def check_schema(kind: str, obj: Any, reason: Reason = Reason.BREAKS_SCHEMA) -> None:
    """Raise :class:`MessageError` (``reason``) when ``obj`` breaks the schema of ``kind``."""
    problem = schema_problem(kind, obj)
    if problem is not None:
        raise MessageError(reason, f"breaks the {kind} schema at {problem}")


# -- range rules -----------------------------------------------------------------------------


def finite(v: Any) -> bool:
    """A JSON number (not a bool) that is finite."""
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _count(v: Any) -> bool:
    return finite(v) and v >= 0 and float(v).is_integer()


def _non_finite(v: Any) -> bool:
    return isinstance(v, float) and not math.isfinite(v)


def day_of(text: Any) -> date | None:
    """The date an ISO date or date-time names (its own calendar date), ``None`` when unreadable."""
    if not isinstance(text, str) or len(text) < 10:
        return None
    try:
        return date.fromisoformat(text[:10])
    except ValueError:
        return None


def instant(text: Any) -> datetime | None:
    """An ISO date or date-time as an aware instant (a date is its UTC midnight; no zone is UTC),
    ``None`` when unreadable: what times are compared as, never their text."""
    if not isinstance(text, str):
        return None
    try:
        t = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)


def check_day(day: date, what: str, now: datetime | None = None) -> None:
    """A day is believed from :data:`EARLIEST_DAY` to the clock's (UTC) date + :data:`MAX_AHEAD`."""
    clock = (now or datetime.now(UTC)).astimezone(UTC)
    latest = (clock + MAX_AHEAD).date()
    if day > latest:
        raise MessageError(
            Reason.DAY_AHEAD, f"{what} {day.isoformat()} is after {latest.isoformat()} (the clock + 1 day)"
        )
    if day < EARLIEST_DAY:
        raise MessageError(
            Reason.DAY_TOO_EARLY, f"{what} {day.isoformat()} is before {EARLIEST_DAY.isoformat()}"
        )


def check_ranges(kind: str, body: Any, now: datetime | None = None) -> None:
    """The range rules of a summary body of ``kind`` (``rollup`` or ``fact``); raises
    :class:`MessageError` with the :class:`Reason`. Values of the wrong type are left to the
    shape checks, except where a rule names them (counts, ``n``, confidence, p-value)."""
    if not isinstance(body, dict):
        return
    if kind == "rollup":
        _check_rollup_ranges(body, now)
    elif kind == "fact":
        _check_fact_ranges(body, now)


def _check_rollup_ranges(body: dict[str, Any], now: datetime | None) -> None:
    day = day_of(body.get("day"))
    if day is not None:
        check_day(day, "day", now)
    rows = body.get("rows")
    if not isinstance(rows, list):
        return
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            continue
        for f, v in row.items():
            if _non_finite(v):
                raise MessageError(Reason.NON_FINITE, f"row {i}: {f} is {v} (not a finite number)")
        for f in ROLLUP_COUNT_FIELDS:
            v = row.get(f)
            if f in row and not _count(v):
                raise MessageError(
                    Reason.BAD_COUNT, f"row {i}: {f} {v!r} is not a non-negative integer count"
                )
        for f, v in row.items():
            if f not in ROLLUP_COUNT_FIELDS and finite(v) and f != "value" and v < 0:
                raise MessageError(Reason.NEGATIVE_SUM, f"row {i}: {f} {v!r} is negative")


def _check_fact_ranges(body: dict[str, Any], now: datetime | None) -> None:
    for f in ("value", "effect"):
        if _non_finite(body.get(f)):
            raise MessageError(Reason.NON_FINITE, f"{f} is {body[f]} (not a finite number)")
    for f in ("n", "evidence_count"):
        if f in body and not (_count(body[f]) and not isinstance(body[f], float)):
            raise MessageError(Reason.BAD_COUNT, f"{f} {body[f]!r} is not a non-negative integer")
    for f in ("confidence", "p_value"):
        if f not in body or (f == "p_value" and body[f] is None):
            continue
        v = body[f]
        if _non_finite(v):
            raise MessageError(Reason.NON_FINITE, f"{f} is {v} (not a finite number)")
        if not finite(v) or not 0 <= v <= 1:
            raise MessageError(Reason.NOT_PROBABILITY, f"{f} {v!r} is not a number from 0 to 1")
    for f in ("valid_from", "valid_to"):
        day = day_of(body.get(f))
        if day is not None:
            check_day(day, f, now)
    start, end = instant(body.get("valid_from")), instant(body.get("valid_to"))
    if start is not None and end is not None and start > end:
        raise MessageError(
            Reason.VALID_FROM_AFTER_TO,
            f"valid_from {body['valid_from']} is after valid_to {body['valid_to']}",
        )
