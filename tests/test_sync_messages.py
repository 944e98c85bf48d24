"""The sync wire format: ids stable for the same content, every bad message refused with a reason."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from edge.analysis.metrics import COMPONENT_NAMES
from edge.sync import messages as m


def _row(value: object = None, event_type: str = "purchase", **over: object) -> dict[str, object]:
    row: dict[str, object] = {f: 0 for f in m.ROLLUP_FIELDS}
    row.update({"value": value, "event_type": event_type, "first_event_id": "e1", "last_event_id": "e2"})
    row.update(over)
    return row


def _body(
    day: str = "2025-10-01", slice_: str = "hour", rows: list[dict[str, object]] | None = None
) -> dict[str, object]:
    return {"day": day, "slice": slice_, "tz": "Asia/Shanghai", "closed": True, "rows": rows or [_row(14)]}


def _fact(fid: str = "f1", **over: object) -> dict[str, object]:
    fact: dict[str, object] = {
        "fact_id": fid,
        "statement": {"zh": "雨天客单价高 33%", "en": "rainy-day order value +33% vs sunny"},
        "metric": "avg_order_value",
        "dimension": "weather",
        "value": 91.5,
        "effect": 0.33,
        "n": 412,
        "p_value": 0.001,
        "confidence": 0.89,
        "evidence": ["e1", "e2"],
        "evidence_count": 412,
        "valid_from": "2025-10-01",
        "valid_to": None,
    }
    fact.update(over)
    return fact


def test_rollup_fields_are_port_components_plus_bill_squares() -> None:
    assert set(m.ROLLUP_FIELDS) - {"bill_sq"} <= COMPONENT_NAMES
    assert COMPONENT_NAMES <= set(m.ROLLUP_FIELDS)


def test_round_trip_and_stable_id() -> None:
    s = m.make_summary("sh_01", "rollup", m.rollup_key("2025-10-01", "hour"), 3, _body())
    again = m.make_summary(
        "sh_01", "rollup", m.rollup_key("2025-10-01", "hour"), 3, json.loads(json.dumps(_body()))
    )
    assert s.msg_id == again.msg_id and len(s.msg_id) == 32
    parsed = m.parse_summary(m.summary_topic("sh_01"), s.encode())
    assert parsed == s
    # a new version or another body is another message
    assert m.make_summary("sh_01", "rollup", s.key, 4, _body()).msg_id != s.msg_id
    assert m.make_summary("sh_01", "rollup", s.key, 3, _body(rows=[_row(15)])).msg_id != s.msg_id
    # sent_at does not change the id
    resent = m.Summary(s.msg_id, s.store_id, s.kind, s.key, s.version, s.body, "2025-10-02T00:00:00Z")
    assert m.parse_summary(m.summary_topic("sh_01"), resent.encode()).msg_id == s.msg_id


def test_fact_round_trip() -> None:
    s = m.make_summary("sh_01", "fact", m.fact_key("f1"), 1, _fact())
    assert m.parse_summary(m.summary_topic("sh_01"), s.encode()).body["effect"] == 0.33


def _enc(msg: dict[str, object]) -> bytes:
    return json.dumps(msg).encode()


def _good() -> dict[str, object]:
    return m.make_summary("sh_01", "rollup", m.rollup_key("2025-10-01", "hour"), 1, _body()).to_message()


@pytest.mark.parametrize(
    ("payload", "topic", "reason"),
    [
        (b"not json", "adamm/v1/sh_01/summary", "not_json"),
        (b"\xff\xfe", "adamm/v1/sh_01/summary", "not_json"),
        (b"[1, 2]", "adamm/v1/sh_01/summary", "not_object"),
        (_enc({**_good(), "schema_version": 99}), "adamm/v1/sh_01/summary", "unknown_schema_version"),
        (_enc({**_good(), "schema_version": True}), "adamm/v1/sh_01/summary", "unknown_schema_version"),
        (_enc(_good()), "adamm/v1/sh_02/summary", "wrong_store"),
        (_enc({**_good(), "msg_id": "0" * 32}), "adamm/v1/sh_01/summary", "bad_msg_id"),
        (_enc({**_good(), "kind": "media"}), "adamm/v1/sh_01/summary", "bad_kind"),
        (_enc({**_good(), "extra": 1}), "adamm/v1/sh_01/summary", "unknown_field"),
        (_enc({k: v for k, v in _good().items() if k != "body"}), "adamm/v1/sh_01/summary", "missing_field"),
        (b" " * (m.MAX_MESSAGE_BYTES + 1), "adamm/v1/sh_01/summary", "too_large"),
    ],
)
def test_bad_messages_have_a_reason(payload: bytes, topic: str, reason: str) -> None:
    with pytest.raises(m.MessageError) as err:
        m.parse_summary(topic, payload)
    assert err.value.reason == reason


@pytest.mark.parametrize(
    ("kind", "key", "body", "reason"),
    [
        ("rollup", "rollup/2025-10-01/hour", _body(rows=[_row(14, events=-1)]), "bad_count"),
        ("rollup", "rollup/2025-10-01/hour", _body(rows=[_row(14), _row(14)]), "bad_row"),
        ("rollup", "rollup/2025-10-01/hour", _body(rows=[_row(True)]), "bad_row"),
        ("rollup", "rollup/2025-10-01/hour", _body(rows=[_row(14, events=float("nan"))]), "non_finite"),
        ("rollup", "rollup/2025-10-02/hour", _body(), "bad_body"),
        ("rollup", "rollup/2025-02-30/hour", _body(day="2025-02-30"), "bad_body"),
        ("rollup", "rollup/2025-10-01/staff_id", _body(slice_="staff_id"), "bad_body"),
        ("rollup", "fact/f1", _body(), "bad_key"),
        ("fact", "fact/f1", _fact(statement={"zh": "致电 138 0013 8000", "en": "x"}), "identifying"),
        ("fact", "fact/f1", _fact(evidence_count=1), "bad_body"),
        ("fact", "fact/f2", _fact(), "bad_body"),
    ],
)
def test_bad_bodies_are_refused(kind: str, key: str, body: dict[str, object], reason: str) -> None:
    with pytest.raises(m.MessageError) as err:
        m.make_summary("sh_01", kind, key, 1, body)
    assert err.value.reason == reason


def test_scrub_removes_phone_and_id_numbers_only() -> None:
    assert m.scrub("call 13800138000 or +86 138-0013-8000") == "call *** or ***"
    assert m.scrub("身份证 11010519491231002X 已登记") == "身份证 *** 已登记"
    assert (
        m.scrub("order value +33% vs sunny, n=412/1,930, 2025-10-01")
        == "order value +33% vs sunny, n=412/1,930, 2025-10-01"
    )


@given(st.lists(st.text(min_size=1, max_size=20), max_size=5), st.integers(min_value=0, max_value=2**31))
def test_receipt_round_trip(ids: list[str], seq: int) -> None:
    r = m.Receipt(stored=tuple(ids), parked=(("x", "not_json"),))
    assert m.parse_receipt(r.encode()) == r
    assert m.parse_receipt(m.Receipt(up_to_seq=seq).encode()).up_to_seq == seq


def test_topics() -> None:
    assert m.topic_store(m.summary_topic("sh_01")) == "sh_01"
    assert m.topic_store("other/v1/sh_01/summary") is None
    assert (
        m.ack_topic("s", "a1") == "adamm/v1/s/ack/a1"
        and m.action_topic("s", "cashier", "a1") == "adamm/v1/s/action/cashier/a1"
        and m.action_filter("s", "cashier") == "adamm/v1/s/action/cashier/#"
    )
    assert m.topic_action("adamm/v1/s/action/cashier/a1") == ("s", "cashier", "a1")
    assert m.topic_action("adamm/v1/s/action/cashier") is None
    assert not m.valid_store_id("a/b") and not m.valid_store_id("+") and m.valid_store_id("sh_xuhui_01")
    assert m.parse_status(m.status_payload("online", "2025-10-01T00:00:00+00:00"))["state"] == "online"
