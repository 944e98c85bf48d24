"""The sync wire format (CONTRACT.md section 5): topics, summary messages, receipts, status.

Pure (no I/O): the edge's outbox builds messages with it and the hub parses them with it, so the
two sides cannot drift. The hub may import this module (and :mod:`edge.sync.mqtt`), nothing
else of the store.

A **summary** is full state for its key, never a delta, so re-sending or re-deriving it can
never double count::

    {"msg_id": "…", "schema_version": 1, "store_id": "sh_01", "kind": "rollup",
     "key": "rollup/2025-10-01/hour", "version": 7, "sent_at": "…", "body": {…}}

- ``key``: what the summary is the state of. ``rollup/{day}/{slice}`` for a daily rollup
  (``day`` the store-local date, ``slice`` one of :data:`ROLLUP_SLICES`); ``fact/{fact_id}``
  for a semantic fact. The hub keeps, per ``(store_id, key)``, the body of the highest
  ``version``.
- ``version``: an integer that grows each time the edge derives a *different* body for the key
  (the same body is not re-versioned).
- ``msg_id``: :func:`message_id` of everything but ``sent_at``: stable for the same content, so
  a re-sent message is recognised and stored once; a changed body (new version) has a new id.

Rollup body (:data:`ROLLUP_SLICES`, :data:`ROLLUP_FIELDS`): the store's rollup summed per
store-local day, per slice value and per event type::

    {"day": "2025-10-01", "slice": "hour", "tz": "Asia/Shanghai", "closed": true,
     "rows": [{"value": 14, "event_type": "purchase", "events": 31, "bills": 12,
               "revenue": 812.5, …, "first_event_id": "…", "last_event_id": "…"}]}

``value`` is the slice's value (``null`` for the ``total`` slice and for events without one);
every field of :data:`ROLLUP_FIELDS` is a component of the engine's port
(:data:`edge.analysis.source.COMPONENTS`) except ``bill_sq`` (the sum of squared bill totals, for
order-value variance); ``first_event_id``/``last_event_id`` are the store's event ids that the
hub cites as evidence. Fact body: the contract's fact object (section 6), statements scrubbed
(:func:`scrub`).

An **action** (edge or hub -> staff devices, ``action/{role}/{action_id}``, retained while it is
open; its issuer clears it with an empty retained message once it ends: :func:`action_clear`) is the contract's
``{"action_id", "type", "params", "summary", "evidence", "confidence", "issued_at"}``
(:func:`action_payload`, :func:`parse_action`); an action that expires carries its expiry in
``params.expires_at`` (UTC ISO 8601: a device on MQTT 3.1.1, where nothing else can carry it,
drops an action that arrives past it), in the MQTT 5 Message Expiry Interval (the broker drops it
once it passes) and in the ``expires_at`` user property (read by devices of earlier releases).
:func:`action_message` builds all of it from a row of either action outbox (the store's, the
hub's), and :func:`resend_gap` is their one re-send schedule. An **ack** (device -> issuer,
``ack/{action_id}``) is ``{"by", "at", "state"}`` (:func:`parse_ack`).

A **receipt** (hub -> edge) says what the hub has committed: ``{"stored": [msg_id, …]}``;
``"parked": [{"msg_id", "reason"}]`` lists what it kept but could not use (the edge stops
re-sending those and logs the reason; ``reason`` is one of :class:`~edge.sync.validate.Reason`);
``"kept_newer": [{"msg_id", "key", "version", "kept_msg_id"}]`` (:class:`KeptNewer`) says the hub
holds a higher or equal version of the key with other content (the edge sends its current
content again above it). Every message kind is checked against its JSON Schema and the range
rules of :mod:`edge.sync.validate`, on both sides. A **status** is ``{"state": "online"|"offline", "at": ISO}``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from edge.contract import ACK_STATES, ACTION_FIELDS, ACTION_TYPES, FACT_FIELDS, parse_iso, resend_gap
from edge.sync.validate import MessageError, Reason, check_ranges, check_schema, schema_problem

__all__ = ["MessageError", "Reason", "resend_gap"]  # resend_gap: both outboxes' (edge.contract's)

SCHEMA_VERSION = 1
#: schema versions this build can read
READABLE_VERSIONS = frozenset({1})
TOPIC_ROOT = "adamm/v1"
#: a summary larger than this is refused by the edge and parked by the hub (the bytes sent: with
#: its ``sent_at``, :data:`SENT_AT_LONGEST`)
MAX_MESSAGE_BYTES = 256 * 1024
#: the longest ``sent_at`` an edge stamps: a summary is measured with it before it is queued
SENT_AT_LONGEST = "2000-01-01T00:00:00.000000+00:00"
KINDS = ("rollup", "fact")
#: the slices of a daily rollup: ``total`` (the day as a whole) and one per dimension
ROLLUP_SLICES = ("total", "hour", "weather", "promotion", "zone", "product_category")
#: additive numeric fields of a rollup row (all summed across rows, days and stores)
ROLLUP_FIELDS = (
    "events",
    "footfall",
    "enter_events",
    "purchase_events",
    "bills",
    "revenue",
    "revenue_sq",
    "bill_sq",
    "dwell_sum",
    "dwell_sq",
    "dwell_n",
    "queue_sum",
    "queue_sq",
    "queue_n",
    "complaints",
    "emotion_n",
    "negative_n",
    "staff_error_n",
    "staff_op_n",
    "hour_sum",
    "hour_sq",
)
#: fields of a rollup row that are not numbers
ROLLUP_TEXT_FIELDS = ("event_type", "first_event_id", "last_event_id")
#: a store id usable as one topic level (no ``/``, ``+``, ``#``)
_STORE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_KEY = re.compile(
    r"^(rollup/(?P<day>\d{4}-\d{2}-\d{2})/(?P<slice>[a-z_]+)|fact/(?P<fact>[A-Za-z0-9_.:-]{1,128}))$"
)


# -- topics ---------------------------------------------------------------------------------


def valid_store_id(store_id: str) -> bool:
    """True when ``store_id`` can be one MQTT topic level."""
    return bool(_STORE_ID.match(store_id))


def status_topic(store_id: str) -> str:
    return f"{TOPIC_ROOT}/{store_id}/status"


def summary_topic(store_id: str) -> str:
    return f"{TOPIC_ROOT}/{store_id}/summary"


def receipt_topic(store_id: str) -> str:
    return f"{TOPIC_ROOT}/{store_id}/receipt"


def action_topic(store_id: str, role: str, action_id: str) -> str:
    """One action's topic: its retained message while it is open (CONTRACT.md section 5)."""
    return f"{TOPIC_ROOT}/{store_id}/action/{role}/{action_id}"


def action_filter(store_id: str, role: str) -> str:
    """What a staff device of ``role`` subscribes to: every action of its role (``.../#``)."""
    return f"{TOPIC_ROOT}/{store_id}/action/{role}/#"


def topic_action(topic: str) -> tuple[str, str, str] | None:
    """(store, role, action_id) of an ``adamm/v1/{store}/action/{role}/{action_id}`` topic, else None."""
    parts = topic.split("/")
    if len(parts) == 6 and "/".join(parts[:2]) == TOPIC_ROOT and parts[3] == "action":
        return parts[2], parts[4], parts[5]
    return None


def ack_topic(store_id: str, action_id: str) -> str:
    return f"{TOPIC_ROOT}/{store_id}/ack/{action_id}"


def topic_store(topic: str) -> str | None:
    """The store id of an ``adamm/v1/{store_id}/...`` topic (``None`` for any other topic)."""
    parts = topic.split("/")
    if len(parts) >= 4 and "/".join(parts[:2]) == TOPIC_ROOT:
        return parts[2]
    return None


# -- summaries ------------------------------------------------------------------------------


def canonical(obj: Any) -> bytes:
    """Canonical JSON bytes (sorted keys, no spaces, UTF-8): what ids are computed over."""
    return json.dumps(
        obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode()


def message_id(store_id: str, kind: str, key: str, version: int, body: dict[str, Any]) -> str:
    """The stable id of a summary's content (32 hex digits)."""
    content = {
        "schema_version": SCHEMA_VERSION,
        "store_id": store_id,
        "kind": kind,
        "key": key,
        "version": version,
        "body": body,
    }
    return hashlib.sha256(canonical(content)).hexdigest()[:32]


def rollup_key(day: str, slice_: str) -> str:
    return f"rollup/{day}/{slice_}"


def fact_key(fact_id: str) -> str:
    return f"fact/{fact_id}"


@dataclass(frozen=True)
class Summary:
    """A parsed, validated summary message."""

    msg_id: str
    store_id: str
    kind: str
    key: str
    version: int
    body: dict[str, Any]
    sent_at: str | None = None

    def to_message(self) -> dict[str, Any]:
        msg: dict[str, Any] = {
            "msg_id": self.msg_id,
            "schema_version": SCHEMA_VERSION,
            "store_id": self.store_id,
            "kind": self.kind,
            "key": self.key,
            "version": self.version,
            "body": self.body,
        }
        if self.sent_at is not None:
            msg["sent_at"] = self.sent_at
        return msg

    def encode(self) -> bytes:
        return canonical(self.to_message())


def make_summary(
    store_id: str, kind: str, key: str, version: int, body: dict[str, Any], *, now: datetime | None = None
) -> Summary:
    """A summary with its ``msg_id``, checked as the hub will check it (raises MessageError):
    the same range rules and schema (:mod:`edge.sync.validate`; ``now``: the clock), and the size
    it will have as sent, with the longest ``sent_at``."""
    if kind in KINDS:
        check_ranges(kind, body, now)
    _check_summary(Summary("", store_id, kind, key, version, body))
    try:
        mid = message_id(store_id, kind, key, version, body)
    except ValueError:  # a NaN or infinity the range rules do not look at (inside a fact's value)
        raise MessageError(Reason.NON_FINITE, f"summary {key} holds a number JSON does not allow") from None
    s = Summary(mid, store_id, kind, key, version, body)
    check_schema(kind, s.to_message())
    size = len(dataclasses.replace(s, sent_at=SENT_AT_LONGEST).encode())
    if size > MAX_MESSAGE_BYTES:
        raise MessageError(
            Reason.TOO_LARGE, f"summary {key} is {size} bytes as sent (limit {MAX_MESSAGE_BYTES})"
        )
    return s


def _no_constants(name: str) -> float:
    raise MessageError(Reason.NON_FINITE, f"{name} is not a number JSON allows")


def _loads(payload: bytes, what: str) -> Any:
    """JSON of a payload; ``NaN``/``Infinity`` refused (``non_finite``), not read as numbers."""
    try:
        return json.loads(payload.decode("utf-8"), parse_constant=_no_constants)
    except MessageError:
        raise
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise MessageError(Reason.NOT_JSON, f"{what} is not JSON: {exc}") from None


def parse_summary(topic: str, payload: bytes, *, now: datetime | None = None) -> Summary:
    """Validate a received summary (raises :class:`MessageError` with the reason to park it): the
    envelope, the range rules (``now``: the receiver's clock), the body's shape, its kind's JSON
    Schema, then that ``msg_id`` is the content's."""
    if len(payload) > MAX_MESSAGE_BYTES:
        raise MessageError(Reason.TOO_LARGE, f"{len(payload)} bytes, the limit is {MAX_MESSAGE_BYTES}")
    msg = _loads(payload, "a summary")
    if not isinstance(msg, dict):
        raise MessageError(Reason.NOT_OBJECT, "a summary must be a JSON object")
    version = msg.get("schema_version")
    if version not in READABLE_VERSIONS or isinstance(version, bool):
        raise MessageError(
            Reason.UNKNOWN_SCHEMA_VERSION, f"schema_version {version!r} is not one this hub reads"
        )
    missing = [k for k in ("msg_id", "store_id", "kind", "key", "version", "body") if k not in msg]
    if missing:
        raise MessageError(Reason.MISSING_FIELD, f"missing {', '.join(missing)}")
    extra = set(msg) - {"msg_id", "schema_version", "store_id", "kind", "key", "version", "body", "sent_at"}
    if extra:
        raise MessageError(Reason.UNKNOWN_FIELD, f"unknown fields {', '.join(sorted(extra))}")
    store = msg["store_id"]
    if not isinstance(store, str) or not valid_store_id(store):
        raise MessageError(Reason.BAD_STORE_ID, f"store_id {store!r} is not a valid store id")
    if topic_store(topic) != store:
        raise MessageError(Reason.WRONG_STORE, f"store_id {store!r} published on {topic!r}")
    if not isinstance(msg["version"], int) or isinstance(msg["version"], bool) or msg["version"] < 0:
        raise MessageError(Reason.BAD_FIELD, "version must be a non-negative integer")
    if (
        not isinstance(msg["body"], dict)
        or not isinstance(msg["key"], str)
        or not isinstance(msg["kind"], str)
    ):
        raise MessageError(Reason.BAD_FIELD, "kind and key must be strings, body an object")
    sent_at = msg.get("sent_at")
    if sent_at is not None and not isinstance(sent_at, str):
        raise MessageError(Reason.BAD_FIELD, "sent_at must be a string")
    if not isinstance(msg["msg_id"], str):
        raise MessageError(Reason.BAD_FIELD, "msg_id must be a string")
    s = Summary(msg["msg_id"], store, msg["kind"], msg["key"], msg["version"], msg["body"], sent_at)
    if s.kind in KINDS:
        check_ranges(s.kind, s.body, now)
    _check_summary(s)
    check_schema(s.kind, msg)
    if s.msg_id != message_id(s.store_id, s.kind, s.key, s.version, s.body):
        raise MessageError(Reason.BAD_MSG_ID, "msg_id does not match the message's content")
    return s


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _check_summary(s: Summary) -> None:
    if s.kind not in KINDS:
        raise MessageError(Reason.BAD_KIND, f"kind {s.kind!r} is not one of {', '.join(KINDS)}")
    m = _KEY.match(s.key)
    if not m or (s.kind == "rollup") != s.key.startswith("rollup/"):
        raise MessageError(Reason.BAD_KEY, f"key {s.key!r} does not fit kind {s.kind!r}")
    if s.kind == "rollup":
        _check_rollup(s.body, m.group("day"), m.group("slice"))
    else:
        _check_fact(s.body, m.group("fact"))


def _valid_day(day: Any) -> bool:
    if not isinstance(day, str) or not _DAY.match(day):
        return False
    try:
        date.fromisoformat(day)
    except ValueError:
        return False
    return True


def _check_rollup(body: dict[str, Any], day: str, slice_: str) -> None:
    if set(body) != {"day", "slice", "tz", "closed", "rows"}:
        raise MessageError(Reason.BAD_BODY, "a rollup body has exactly day, slice, tz, closed, rows")
    if body["day"] != day or not _valid_day(day):
        raise MessageError(Reason.BAD_BODY, f"day {body['day']!r} does not match the key's day {day!r}")
    if body["slice"] != slice_ or slice_ not in ROLLUP_SLICES:
        raise MessageError(
            Reason.BAD_BODY, f"slice {body['slice']!r} is not the key's or not one of {ROLLUP_SLICES}"
        )
    if not isinstance(body["tz"], str) or not body["tz"]:
        raise MessageError(Reason.BAD_BODY, "tz must be the store's IANA time zone name")
    if not isinstance(body["closed"], bool) or not isinstance(body["rows"], list):
        raise MessageError(Reason.BAD_BODY, "closed must be a boolean and rows a list")
    seen: set[tuple[Any, Any]] = set()
    for i, row in enumerate(body["rows"]):
        if not isinstance(row, dict) or set(row) != {"value", *ROLLUP_FIELDS, *ROLLUP_TEXT_FIELDS}:
            raise MessageError(
                Reason.BAD_ROW,
                f"row {i} must have exactly value, {', '.join(ROLLUP_FIELDS + ROLLUP_TEXT_FIELDS)}",
            )
        bad = [f for f in ROLLUP_FIELDS if not _number(row[f]) or row[f] < 0]
        if bad:
            raise MessageError(
                Reason.BAD_ROW, f"row {i}: {', '.join(bad)} must be finite non-negative numbers"
            )
        if not isinstance(row["event_type"], str):
            raise MessageError(Reason.BAD_ROW, f"row {i}: event_type must be a string")
        if not all(row[f] is None or isinstance(row[f], str) for f in ("first_event_id", "last_event_id")):
            raise MessageError(Reason.BAD_ROW, f"row {i}: first/last_event_id must be strings or null")
        value = row["value"]
        if isinstance(value, bool) or (value is not None and not isinstance(value, str | int)):
            raise MessageError(Reason.BAD_ROW, f"row {i}: value must be a string, an integer or null")
        if (value, row["event_type"]) in seen:
            raise MessageError(Reason.BAD_ROW, f"row {i}: ({value!r}, {row['event_type']!r}) appears twice")
        seen.add((value, row["event_type"]))


def _check_fact(body: dict[str, Any], fact_id: str) -> None:
    if set(body) - {"action_id"} != set(FACT_FIELDS) or not isinstance(body.get("action_id", ""), str):
        raise MessageError(
            Reason.BAD_BODY,
            f"a fact body has exactly {', '.join(FACT_FIELDS)} (and action_id for an action's effect)",
        )
    if body["fact_id"] != fact_id:
        raise MessageError(Reason.BAD_BODY, "fact_id does not match the key")
    st = body["statement"]
    if (
        not isinstance(st, dict)
        or set(st) != {"zh", "en"}
        or not all(isinstance(v, str) for v in st.values())
    ):
        raise MessageError(Reason.BAD_BODY, "statement must be {zh, en} strings")
    if scrub(st["zh"]) != st["zh"] or scrub(st["en"]) != st["en"]:
        raise MessageError(Reason.IDENTIFYING, "a fact statement carries a phone or ID number")
    if not isinstance(body["evidence"], list) or not all(isinstance(e, str) for e in body["evidence"]):
        raise MessageError(Reason.BAD_BODY, "evidence must be a list of event ids")
    if not isinstance(body["evidence_count"], int) or body["evidence_count"] < len(body["evidence"]):
        raise MessageError(Reason.BAD_BODY, "evidence_count must be an integer >= len(evidence)")
    for f in ("valid_from", "valid_to"):
        v = body[f]
        if v is not None and not _iso(v):
            raise MessageError(Reason.BAD_BODY, f"{f} must be an ISO date or date-time or null")
    if body["valid_from"] is None:
        raise MessageError(Reason.BAD_BODY, "valid_from must be set")


def _iso(v: Any) -> bool:
    if not isinstance(v, str):
        return False
    try:
        datetime.fromisoformat(v)
    except ValueError:
        return False
    return True


# -- scrubbing ------------------------------------------------------------------------------

#: mainland China ID card numbers (18 characters, the last may be X), mobile numbers (with or
#: without +86, spaced or dashed 3-4-4), landlines with an area code, and any run of 10+ digits
_IDENTIFYING = (
    re.compile(r"(?<![\dA-Za-z])\d{17}[\dXx](?![\dA-Za-z])"),
    re.compile(r"\+?86[ -]?1\d{2}[ -]?\d{4}[ -]?\d{4}(?!\d)"),
    re.compile(r"(?<!\d)1[3-9]\d[ -]?\d{4}[ -]?\d{4}(?!\d)"),
    re.compile(r"(?<!\d)0\d{2,3}-\d{7,8}(?!\d)"),
    re.compile(r"(?<!\d)\d{10,}(?!\d)"),
)


def scrub(text: str) -> str:
    """``text`` with ID-card and phone numbers replaced by ``***``: nothing that identifies a
    person leaves the store (dates, percentages and counts are kept)."""
    for pattern in _IDENTIFYING:
        text = pattern.sub("***", text)
    return text


# -- actions and acks -----------------------------------------------------------------------

#: the fields of an action message (CONTRACT.md section 5), and the states a staff device acks
#: an action id or a role usable as one topic level
_TOPIC_LEVEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")
#: the MQTT 5 user property that carries an action's expiry (the broker enforces the Message
#: Expiry Interval; devices of earlier releases read this to drop one that waited past it)
EXPIRES_AT_PROPERTY = "expires_at"
#: the action param that carries its expiry in the payload (the contract's fields only: ``params``
#: is the action's open object), so that it survives MQTT 3.1.1, which has no properties
EXPIRES_AT_PARAM = "expires_at"


def valid_topic_level(text: str) -> bool:
    """True when ``text`` (an action id, a role) can be one MQTT topic level."""
    return bool(_TOPIC_LEVEL.match(text))


def topic_action_id(topic: str) -> str | None:
    """The action id of an ``adamm/v1/{store}/ack/{action_id}`` topic (else ``None``)."""
    parts = topic.split("/")
    if len(parts) == 5 and "/".join(parts[:2]) == TOPIC_ROOT and parts[3] == "ack":
        return parts[4]
    return None


@dataclass(frozen=True)
class Action:
    """A parsed action message (what a staff device receives)."""

    action_id: str
    type: str
    params: dict[str, Any]
    summary: str
    evidence: tuple[str, ...]
    confidence: float
    issued_at: str

    def to_message(self) -> dict[str, Any]:
        return {
            "action_id": self.action_id,
            "type": self.type,
            "params": self.params,
            "summary": self.summary,
            "evidence": list(self.evidence),
            "confidence": self.confidence,
            "issued_at": self.issued_at,
        }

    @property
    def expires_at(self) -> str | None:
        """When the action expires (``params.expires_at``), None when it does not say."""
        v = self.params.get(EXPIRES_AT_PARAM)
        return v if isinstance(v, str) and v else None


def action_payload(
    action_id: str,
    type: str,
    params: dict[str, Any],
    summary: str,
    evidence: list[str] | tuple[str, ...],
    confidence: float,
    issued_at: str,
    expires_at: str | None = None,
) -> bytes:
    """The action message of the contract, canonical JSON (raises :class:`MessageError` for a
    value a device could not read). The summary and text params are scrubbed (:func:`scrub`);
    ``expires_at`` (an ISO 8601 time) becomes ``params.expires_at`` (replacing one in ``params``)."""
    clean = {k: scrub(v) if isinstance(v, str) else v for k, v in params.items()}
    if expires_at is not None:
        if not _iso(expires_at):
            raise MessageError(Reason.BAD_FIELD, "expires_at must be an ISO 8601 time")
        clean[EXPIRES_AT_PARAM] = expires_at
    a = Action(action_id, type, clean, scrub(summary), tuple(evidence), float(confidence), issued_at)
    _check_action(a)
    out = canonical(a.to_message())
    if len(out) > MAX_MESSAGE_BYTES:
        raise MessageError(
            Reason.TOO_LARGE, f"action {action_id} is {len(out)} bytes (limit {MAX_MESSAGE_BYTES})"
        )
    return out


def action_message(row: Any, now: datetime) -> tuple[str, bytes, int | None, list[tuple[str, str]]]:
    """The topic, payload, expiry (MQTT 5 Message Expiry Interval: seconds left, None when the
    action never expires) and user properties of a row of an action outbox (the store's
    ``actions`` and the hub's ``hub_actions`` share these columns)."""
    expires_at = row["expires_at"] or None
    payload = action_payload(
        row["action_id"],
        row["type"],
        json.loads(row["params_json"] or "{}"),
        row["summary"],
        json.loads(row["evidence_json"] or "[]"),
        max(0.0, min(1.0, float(row["confidence"]))),
        row["issued_at"],
        expires_at,
    )
    topic = action_topic(row["store_id"], row["role"], row["action_id"])
    if expires_at is None:
        return topic, payload, None, []
    expiry = max(1, math.ceil((parse_iso(expires_at) - now).total_seconds()))
    return topic, payload, expiry, [(EXPIRES_AT_PROPERTY, expires_at)]


def action_clear(row: Any) -> tuple[str, bytes, int | None, list[tuple[str, str]]]:
    """The message that clears an ended action's retained message (an empty payload, retained,
    on its topic), in :func:`action_message`'s shape."""
    return action_topic(row["store_id"], row["role"], row["action_id"]), b"", None, []


def parse_action(payload: bytes) -> Action:
    """A received action (raises :class:`MessageError` with a reason: ``not_json``,
    ``not_object``, ``missing_field``, ``bad_field``, ``too_large``). Unknown extra fields are
    ignored (a newer issuer may add some)."""
    if len(payload) > MAX_MESSAGE_BYTES:
        raise MessageError(Reason.TOO_LARGE, f"{len(payload)} bytes, the limit is {MAX_MESSAGE_BYTES}")
    obj = _json_object(payload, "an action")
    missing = [k for k in ACTION_FIELDS if k not in obj]
    if missing:
        raise MessageError(Reason.MISSING_FIELD, f"missing {', '.join(missing)}")
    conf = obj["confidence"]
    if not _number(conf) or isinstance(conf, bool):
        raise MessageError(Reason.BAD_FIELD, "confidence must be a number")
    evidence = obj["evidence"]
    if not isinstance(evidence, list) or not all(isinstance(e, str) for e in evidence):
        raise MessageError(Reason.BAD_FIELD, "evidence must be a list of event ids")
    for k in ("action_id", "type", "summary", "issued_at"):
        if not isinstance(obj[k], str):
            raise MessageError(Reason.BAD_FIELD, f"{k} must be a string")
    if not isinstance(obj["params"], dict):
        raise MessageError(Reason.BAD_FIELD, "params must be an object")
    a = Action(
        obj["action_id"],
        obj["type"],
        obj["params"],
        obj["summary"],
        tuple(evidence),
        float(conf),
        obj["issued_at"],
    )
    _check_action(a)
    check_schema("action", obj, Reason.BAD_FIELD)
    return a


def _check_action(a: Action) -> None:
    if not valid_topic_level(a.action_id):
        raise MessageError(Reason.BAD_FIELD, f"action_id {a.action_id!r} is not a valid id")
    if a.type not in ACTION_TYPES:
        raise MessageError(Reason.BAD_FIELD, f"type {a.type!r} is not one of {', '.join(ACTION_TYPES)}")
    if not _iso(a.issued_at):
        raise MessageError(Reason.BAD_FIELD, "issued_at must be an ISO 8601 time")
    if not _number(a.confidence) or not 0 <= a.confidence <= 1:
        raise MessageError(Reason.BAD_FIELD, "confidence must be a number from 0 to 1")


@dataclass(frozen=True)
class Ack:
    """A staff device's acknowledgement of one action."""

    action_id: str
    by: str
    at: str
    state: str

    def encode(self) -> bytes:
        return ack_payload(self.by, self.at, self.state)


def ack_payload(by: str, at: str, state: str) -> bytes:
    """The ack message of the contract: ``{"by", "at", "state"}``."""
    if state not in ACK_STATES:
        raise MessageError(Reason.BAD_STATE, f"state {state!r} is not one of {', '.join(ACK_STATES)}")
    if not by or not isinstance(by, str):
        raise MessageError(Reason.BAD_FIELD, "by must name who acknowledged")
    if not _iso(at):
        raise MessageError(Reason.BAD_FIELD, "at must be an ISO 8601 time")
    return canonical({"by": by, "at": at, "state": state})


def parse_ack(topic: str, payload: bytes) -> Ack:
    """A received ack (raises :class:`MessageError` with a reason: ``bad_topic``, ``not_json``,
    ``not_object``, ``missing_field``, ``bad_state``, ``bad_field``, ``too_large``)."""
    action_id = topic_action_id(topic)
    if action_id is None or not valid_topic_level(action_id):
        raise MessageError(Reason.BAD_TOPIC, f"{topic!r} is not an adamm/v1/STORE/ack/ACTION_ID topic")
    if len(payload) > MAX_MESSAGE_BYTES:
        raise MessageError(Reason.TOO_LARGE, f"{len(payload)} bytes, the limit is {MAX_MESSAGE_BYTES}")
    obj = _json_object(payload, "an ack")
    missing = [k for k in ("by", "at", "state") if k not in obj]
    if missing:
        raise MessageError(Reason.MISSING_FIELD, f"missing {', '.join(missing)}")
    if obj["state"] not in ACK_STATES:
        raise MessageError(Reason.BAD_STATE, f"state {obj['state']!r} is not one of {', '.join(ACK_STATES)}")
    if not isinstance(obj["by"], str) or not obj["by"].strip():
        raise MessageError(Reason.BAD_FIELD, "by must name who acknowledged")
    if not _iso(obj["at"]):
        raise MessageError(Reason.BAD_FIELD, "at must be an ISO 8601 time")
    check_schema("ack", obj, Reason.BAD_FIELD)
    return Ack(action_id, obj["by"], obj["at"], obj["state"])


def _json_object(payload: bytes, what: str) -> dict[str, Any]:
    obj = _loads(payload, what)
    if not isinstance(obj, dict):
        raise MessageError(Reason.NOT_OBJECT, f"{what} must be a JSON object")
    return obj


# -- receipts and status --------------------------------------------------------------------


@dataclass(frozen=True)
class KeptNewer:
    """A receipt's ``kept_newer`` entry: the hub holds ``version`` of ``key`` (``kept_msg_id``),
    higher than the store's ``msg_id``."""

    msg_id: str
    key: str
    version: int
    kept_msg_id: str


@dataclass(frozen=True)
class Receipt:
    stored: tuple[str, ...] = ()
    parked: tuple[tuple[str, str], ...] = ()
    up_to_seq: int | None = None
    kept_newer: tuple[KeptNewer, ...] = ()

    def encode(self) -> bytes:
        obj: dict[str, Any] = {}
        if self.up_to_seq is not None:
            obj["up_to_seq"] = self.up_to_seq
        else:
            obj["stored"] = list(self.stored)
        if self.parked:
            obj["parked"] = [{"msg_id": m, "reason": r} for m, r in self.parked]
        if self.kept_newer:
            obj["kept_newer"] = [dataclasses.asdict(k) for k in self.kept_newer]
        return canonical(obj)


def parse_receipt(payload: bytes) -> Receipt:
    """A hub's receipt (raises :class:`MessageError` when it is not one): ``stored``, ``parked``,
    ``kept_newer`` (any of them) or ``up_to_seq``, by ``receipt.schema.json``."""
    obj = _json_object(payload, "a receipt")
    check_schema("receipt", obj, Reason.BAD_FIELD)
    up_to = obj.get("up_to_seq")
    if isinstance(up_to, bool):
        raise MessageError(Reason.BAD_FIELD, "up_to_seq must be an integer")
    return Receipt(
        tuple(obj.get("stored", [])),
        tuple((p["msg_id"], p["reason"]) for p in obj.get("parked", [])),
        up_to,
        tuple(
            KeptNewer(k["msg_id"], k["key"], int(k["version"]), k["kept_msg_id"])
            for k in obj.get("kept_newer", [])
        ),
    )


def status_payload(state: str, at: str) -> bytes:
    if state not in ("online", "offline"):
        raise ValueError(f"unknown status state {state!r}")
    return canonical({"state": state, "at": at})


def parse_status(payload: bytes) -> dict[str, str]:
    """A store's status message (raises :class:`MessageError`)."""
    obj = _loads(payload, "a status")
    if (
        not isinstance(obj, dict)
        or schema_problem("status", obj) is not None
        or obj.get("state") not in ("online", "offline")
        or not _iso(obj.get("at"))
    ):
        raise MessageError(Reason.BAD_STATUS, 'a status is {"state": "online"|"offline", "at": ISO}')
    return {"state": obj["state"], "at": obj["at"]}
