"""The action and ack payloads of the wire format (edge/sync/messages.py): the contract's fields,
scrubbing, and a reason code for every kind of message a device or issuer cannot use."""

from __future__ import annotations

import json

import pytest

from edge.sync import messages as m

ISSUED = "2026-03-01T09:00:00+00:00"


def _action(**over: object) -> dict[str, object]:
    base: dict[str, object] = {
        "action_id": "a1",
        "type": "work_order",
        "params": {"title": "open checkout 3"},
        "summary": "queues are long",
        "evidence": ["e1", "e2"],
        "confidence": 0.8,
        "issued_at": ISSUED,
    }
    base.update(over)
    return base


def test_an_action_has_exactly_the_contract_fields_and_round_trips() -> None:
    raw = m.action_payload(
        "a1", "work_order", {"title": "open checkout 3"}, "queues are long", ["e1", "e2"], 0.8, ISSUED
    )
    obj = json.loads(raw)
    assert set(obj) == set(m.ACTION_FIELDS) == {
        "action_id", "type", "params", "summary", "evidence", "confidence", "issued_at",
    }  # fmt: skip
    a = m.parse_action(raw)
    assert a.to_message() == obj == _action()
    # a newer issuer's extra field is ignored
    assert m.parse_action(json.dumps(_action(priority="high")).encode()).action_id == "a1"


def test_an_expiry_rides_in_params_within_the_contract_fields() -> None:
    """MQTT 3.1.1 has no message expiry and no user properties: the payload itself says when the
    action expires (``params.expires_at``), still with exactly the contract's fields."""
    until = "2026-03-01T13:00:00+00:00"
    params = {"title": "open checkout 3", "expires_at": "stale"}
    raw = m.action_payload("a1", "work_order", params, "queues are long", ["e1"], 0.8, ISSUED, until)
    obj = json.loads(raw)
    assert set(obj) == set(m.ACTION_FIELDS)
    assert obj["params"] == {"title": "open checkout 3", "expires_at": until}  # the row's expiry wins
    assert m.parse_action(raw).expires_at == until
    assert params["expires_at"] == "stale"  # the caller's params are not changed
    assert m.parse_action(json.dumps(_action()).encode()).expires_at is None  # no expiry: None
    with pytest.raises(m.MessageError) as e:
        m.action_payload("a1", "work_order", {}, "s", [], 0.8, ISSUED, "in four hours")
    assert e.value.reason == "bad_field"


def test_identifying_numbers_never_leave_in_an_action() -> None:
    raw = m.action_payload(
        "a1", "alert", {"title": "call 13812345678", "n": 3}, "ID 110101199003074514", [], 0.9, ISSUED
    )
    text = raw.decode()
    assert "13812345678" not in text and "110101199003074514" not in text and '"n":3' in text


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (b"{nope", "not_json"),
        (b"[1]", "not_object"),
        (json.dumps({k: v for k, v in _action().items() if k != "summary"}).encode(), "missing_field"),
        (json.dumps(_action(type="order")).encode(), "bad_field"),
        (json.dumps(_action(confidence=1.5)).encode(), "bad_field"),
        (json.dumps(_action(confidence=True)).encode(), "bad_field"),
        (json.dumps(_action(evidence="e1")).encode(), "bad_field"),
        (json.dumps(_action(action_id="a/b")).encode(), "bad_field"),
        (json.dumps(_action(issued_at="yesterday")).encode(), "bad_field"),
        (json.dumps(_action(params=[])).encode(), "bad_field"),
        (b" " * (m.MAX_MESSAGE_BYTES + 1), "too_large"),
    ],
)
def test_an_unusable_action_has_a_reason(payload: bytes, reason: str) -> None:
    with pytest.raises(m.MessageError) as exc:
        m.parse_action(payload)
    assert exc.value.reason == reason


def test_an_ack_round_trips_and_names_its_action_by_topic() -> None:
    raw = m.ack_payload("ann", "2026-03-01T09:05:00Z", "done")
    assert json.loads(raw) == {"by": "ann", "at": "2026-03-01T09:05:00Z", "state": "done"}
    ack = m.parse_ack(m.ack_topic("sh_01", "a1"), raw)
    assert (ack.action_id, ack.by, ack.state) == ("a1", "ann", "done")
    assert ack.encode() == raw
    with pytest.raises(m.MessageError):
        m.ack_payload("ann", ISSUED, "pending")


@pytest.mark.parametrize(
    ("topic", "payload", "reason"),
    [
        ("adamm/v1/sh_01/receipt", b"{}", "bad_topic"),
        ("adamm/v1/sh_01/ack/a1/x", b"{}", "bad_topic"),
        ("adamm/v1/sh_01/ack/a1", b"nope", "not_json"),
        ("adamm/v1/sh_01/ack/a1", b'"done"', "not_object"),
        ("adamm/v1/sh_01/ack/a1", b'{"by": "ann", "state": "done"}', "missing_field"),
        (
            "adamm/v1/sh_01/ack/a1",
            b'{"by": "ann", "at": "2026-03-01T09:00:00Z", "state": "pending"}',
            "bad_state",
        ),
        ("adamm/v1/sh_01/ack/a1", b'{"by": " ", "at": "2026-03-01T09:00:00Z", "state": "done"}', "bad_field"),
        ("adamm/v1/sh_01/ack/a1", b'{"by": "ann", "at": "soon", "state": "done"}', "bad_field"),
    ],
)
def test_an_unusable_ack_has_a_reason(topic: str, payload: bytes, reason: str) -> None:
    with pytest.raises(m.MessageError) as exc:
        m.parse_ack(topic, payload)
    assert exc.value.reason == reason
