"""What the hub believes, as unit tests: one JSON Schema per message kind, the range rules, a closed
list of reasons, the same rules on the edge (before it sends) as on the hub (when it receives)."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hub_data import fact_body
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from edge.sync import messages as m
from edge.sync import validate as v

ROOT = Path(__file__).resolve().parents[1]
NOW = datetime(2025, 11, 1, 12, 0, tzinfo=UTC)
TOPIC = m.summary_topic("sh_01")


def _row(value: object = None, **over: object) -> dict[str, Any]:
    r: dict[str, Any] = {f: 0 for f in m.ROLLUP_FIELDS}
    r.update({"value": value, "event_type": "purchase", "first_event_id": "e1", "last_event_id": "e2"})
    r.update(over)
    return r


def _rollup(day: str = "2025-10-01", **row_over: object) -> dict[str, Any]:
    return {"day": day, "slice": "total", "tz": "Asia/Shanghai", "closed": True, "rows": [_row(**row_over)]}


def _fact(**over: object) -> dict[str, Any]:
    return fact_body(**{"evidence": ["e1"], **over})


def forge(kind: str, body: dict[str, Any], version: int = 1, store: str = "sh_01") -> bytes:
    """A message as an attacker or a faulty store writes it: a correct envelope and ``msg_id``
    (where the body can be hashed) around a body nothing checked (NaN written as JSON's ``NaN``)."""
    key = m.rollup_key(body["day"], body["slice"]) if kind == "rollup" else m.fact_key(body["fact_id"])
    try:
        mid = m.message_id(store, kind, key, version, body)
    except ValueError:  # NaN: the id cannot be computed; the hub refuses before it looks
        mid = "0" * 32
    msg = {"msg_id": mid, "schema_version": 1, "store_id": store, "kind": kind, "key": key}
    return json.dumps({**msg, "version": version, "body": body}).encode()


#: the issue's probes and each range rule: (kind, body, reason)
FORGED: list[tuple[str, str, dict[str, Any], v.Reason]] = [
    ("day 2099", "rollup", _rollup("2099-01-15", revenue=5_000_000.0), v.Reason.DAY_AHEAD),
    ("day 1999", "rollup", _rollup("1999-12-31"), v.Reason.DAY_TOO_EARLY),
    ("negative count", "rollup", _rollup(events=-1), v.Reason.BAD_COUNT),
    ("fractional count", "rollup", _rollup(bills=1.5), v.Reason.BAD_COUNT),
    ("count as text", "rollup", _rollup(events="many"), v.Reason.BAD_COUNT),
    ("negative sum", "rollup", _rollup(revenue=-3.0), v.Reason.NEGATIVE_SUM),
    ("NaN sum", "rollup", _rollup(revenue=math.nan), v.Reason.NON_FINITE),
    ("infinite sum", "rollup", _rollup(dwell_sum=math.inf), v.Reason.NON_FINITE),
    ("n -5", "fact", _fact(n=-5), v.Reason.BAD_COUNT),
    ("n many", "fact", _fact(n="many"), v.Reason.BAD_COUNT),
    ("n 2.5", "fact", _fact(n=2.5), v.Reason.BAD_COUNT),
    ("confidence 7.5", "fact", _fact(confidence=7.5), v.Reason.NOT_PROBABILITY),
    ("confidence high", "fact", _fact(confidence="high"), v.Reason.NOT_PROBABILITY),
    ("p_value -0.3", "fact", _fact(p_value=-0.3), v.Reason.NOT_PROBABILITY),
    ("NaN effect", "fact", _fact(effect=math.nan), v.Reason.NON_FINITE),
    ("NaN inside a value", "fact", _fact(value={"rain": math.nan}), v.Reason.NON_FINITE),
    (
        "valid_from after valid_to",
        "fact",
        _fact(valid_from="2025-10-05", valid_to="2025-10-01"),
        v.Reason.VALID_FROM_AFTER_TO,
    ),
    ("fact from the future", "fact", _fact(valid_from="2031-01-01"), v.Reason.DAY_AHEAD),
]


@pytest.mark.parametrize(("kind", "body", "reason"), [f[1:] for f in FORGED], ids=[f[0] for f in FORGED])
def test_the_hub_refuses_what_it_cannot_believe_with_a_reason_from_the_list(
    kind: str, body: dict[str, Any], reason: v.Reason
) -> None:
    with pytest.raises(v.MessageError) as err:
        m.parse_summary(TOPIC, forge(kind, body), now=NOW)
    assert err.value.reason is reason
    assert isinstance(err.value.reason, v.Reason)


@pytest.mark.parametrize(("kind", "body", "reason"), [f[1:] for f in FORGED], ids=[f[0] for f in FORGED])
def test_the_edge_applies_the_same_rules_before_it_sends(
    kind: str, body: dict[str, Any], reason: v.Reason
) -> None:
    key = m.rollup_key(body["day"], body["slice"]) if kind == "rollup" else m.fact_key(body["fact_id"])
    with pytest.raises(v.MessageError) as err:
        m.make_summary("sh_01", kind, key, 1, body, now=NOW)
    assert err.value.reason is reason


def test_a_day_up_to_one_day_ahead_and_from_2000_is_believed() -> None:
    for day in ("2025-11-02", "2000-01-01"):
        s = m.make_summary("sh_01", "rollup", m.rollup_key(day, "total"), 1, _rollup(day), now=NOW)
        assert m.parse_summary(TOPIC, s.encode(), now=NOW) == s
    with pytest.raises(v.MessageError):
        m.parse_summary(TOPIC, forge("rollup", _rollup("2025-11-03")), now=NOW)


def test_valid_times_compare_as_instants() -> None:
    # 08:00+08:00 is midnight UTC: not after a valid_to of 00:30Z, though it sorts after it as text
    body = _fact(valid_from="2025-10-02T08:00:00+08:00", valid_to="2025-10-02T00:30:00Z")
    assert m.parse_summary(TOPIC, forge("fact", body), now=NOW).body == body


# -- the schemas --------------------------------------------------------------------------------


def test_one_schema_per_message_kind_each_a_valid_schema_in_the_package() -> None:
    files = sorted(p.name for p in (ROOT / "edge" / "schemas" / "messages").glob("*.schema.json"))
    assert files == sorted(f"{k}.schema.json" for k in v.SCHEMA_KINDS)
    for kind in v.SCHEMA_KINDS:
        Draft202012Validator.check_schema(v.schema(kind))
    assert "schemas/messages/*.json" in (ROOT / "pyproject.toml").read_text()


def test_what_the_builders_write_fits_the_schemas() -> None:
    s = m.make_summary("sh_01", "rollup", "rollup/2025-10-01/total", 2, _rollup(), now=NOW)
    assert v.schema_problem("rollup", {**s.to_message(), "sent_at": "2025-10-02T00:00:00Z"}) is None
    f = m.make_summary("sh_01", "fact", "fact/f1", 1, _fact(), now=NOW)
    assert v.schema_problem("fact", f.to_message()) is None
    status = json.loads(m.status_payload("online", "2025-10-01T08:00:00+08:00"))
    assert v.schema_problem("status", status) is None
    action = json.loads(
        m.action_payload("a1", "work_order", {"zone": "A"}, "restock", ["e1"], 0.7, "2025-10-01T08:00:00Z")
    )
    assert v.schema_problem("action", action) is None
    assert v.schema_problem("ack", json.loads(m.ack_payload("anna", "2025-10-01T09:00:00Z", "done"))) is None
    receipt = m.Receipt(
        stored=("a",), parked=(("b", "bad_count"),), kept_newer=(m.KeptNewer("c", "fact/f1", 3, "d"),)
    )
    assert v.schema_problem("receipt", json.loads(receipt.encode())) is None
    assert m.parse_receipt(receipt.encode()) == receipt


@pytest.mark.parametrize(
    ("kind", "obj"),
    [
        ("status", {"state": "asleep", "at": "2025-10-01T08:00:00Z"}),
        ("action", {"action_id": "a1", "type": "bribe"}),
        ("ack", {"by": "", "at": "2025-10-01T09:00:00Z", "state": "done"}),
        ("receipt", {"stored": "all of them"}),
        ("rollup", {"msg_id": "x"}),
        ("fact", {"msg_id": "0" * 32, "schema_version": 2}),
    ],
)
def test_the_schemas_refuse_broken_messages(kind: str, obj: dict[str, Any]) -> None:
    assert v.schema_problem(kind, obj) is not None


def test_a_body_that_passes_the_rules_but_breaks_the_schema_is_parked_by_the_schema() -> None:
    # the hand-written shape checks let a fact's metric be anything; the schema says text or null
    with pytest.raises(v.MessageError) as err:
        m.parse_summary(TOPIC, forge("fact", _fact(metric=["a", "b"])), now=NOW)
    assert err.value.reason is v.Reason.BREAKS_SCHEMA


def test_every_reason_is_documented() -> None:
    doc = (ROOT / "docs" / "reference.md").read_text()
    missing = [r.value for r in v.Reason if f"`{r.value}`" not in doc]
    assert not missing, f"docs/reference.md does not list the park reasons {missing}"


# -- properties --------------------------------------------------------------------------------

counts = st.one_of(
    st.integers(-(10**6), 10**9),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=3),
    st.none(),
    st.booleans(),
)
unit_values = st.one_of(st.floats(-2, 3), st.integers(-2, 3), st.text(max_size=2), st.none())


@settings(max_examples=200, deadline=None)
@given(field=st.sampled_from(v.ROLLUP_COUNT_FIELDS), value=counts)
def test_a_count_is_believed_exactly_when_it_is_a_non_negative_integer(field: str, value: Any) -> None:
    ok = (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
        and float(value).is_integer()
    )
    payload = forge("rollup", _rollup(**{field: value}))
    try:
        m.parse_summary(TOPIC, payload, now=NOW)
    except v.MessageError as exc:
        assert not ok, exc
        assert exc.reason in (v.Reason.BAD_COUNT, v.Reason.NON_FINITE)
    else:
        assert ok


@settings(max_examples=200, deadline=None)
@given(field=st.sampled_from(["confidence", "p_value"]), value=unit_values)
def test_confidence_and_p_value_are_believed_only_within_0_and_1(field: str, value: Any) -> None:
    ok = (isinstance(value, int | float) and 0 <= value <= 1) or (field == "p_value" and value is None)
    try:
        m.parse_summary(TOPIC, forge("fact", _fact(**{field: value})), now=NOW)
    except v.MessageError as exc:
        assert not ok, exc
        assert exc.reason is v.Reason.NOT_PROBABILITY
    else:
        assert ok


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None)
@given(kind=st.sampled_from(["rollup", "fact"]), path=st.sampled_from(["body", "row"]), junk=json_values)
def test_any_value_anywhere_is_believed_or_refused_with_a_listed_reason(
    kind: str, path: str, junk: Any
) -> None:
    """Never a traceback (what the NaN effect gave the hub): parsed, or a :class:`Reason`."""
    body = _rollup() if kind == "rollup" else _fact()
    fields = sorted(body["rows"][0]) if (kind == "rollup" and path == "row") else sorted(body)
    target = body["rows"][0] if (kind == "rollup" and path == "row") else body
    for name in fields:
        mutated = json.loads(json.dumps(body))
        (mutated["rows"][0] if target is not body else mutated)[name] = junk
        try:
            payload = forge(kind, mutated)
        except (ValueError, KeyError, TypeError):
            continue  # the key cannot even be formed: not a message
        try:
            m.parse_summary(TOPIC, payload, now=NOW)
        except v.MessageError as exc:
            assert isinstance(exc.reason, v.Reason)


def test_the_size_limit_is_the_size_as_sent_with_sent_at() -> None:
    """A summary just under the limit before ``sent_at`` is stamped would go out over it: the
    edge refuses it; one that fits with the longest stamp is accepted and fits as sent."""
    small = m.make_summary("sh_01", "fact", "fact/f1", 1, _fact(), now=NOW)
    room = m.MAX_MESSAGE_BYTES - len(small.encode())

    def sized(extra: int) -> dict[str, Any]:
        statement = {"zh": "雨天客单价高 33%", "en": "rainy-day order value +33% vs sunny" + "x" * extra}
        return _fact(statement=statement)

    just_under = sized(room - 10)
    assert len(m.Summary("", "sh_01", "fact", "fact/f1", 1, just_under).encode()) <= m.MAX_MESSAGE_BYTES
    with pytest.raises(v.MessageError) as err:
        m.make_summary("sh_01", "fact", "fact/f1", 1, just_under, now=NOW)
    assert err.value.reason is v.Reason.TOO_LARGE
    fits = m.make_summary("sh_01", "fact", "fact/f1", 1, sized(room - 60), now=NOW)
    stamped = fits.encode()[:-1] + b',"sent_at":"' + datetime.now(UTC).isoformat().encode() + b'"}'
    assert len(stamped) <= m.MAX_MESSAGE_BYTES
    assert m.parse_summary(TOPIC, stamped, now=NOW).msg_id == fits.msg_id
