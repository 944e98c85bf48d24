"""MEV validation: reasons a person can act on, and import never crashes on generated input."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from datetime import datetime
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edge.memory.ingest import mev
from edge.memory.ingest.mev import LineRejected, check_line, check_object, schema_reasons
from edge.memory.store import Store

BASE: dict[str, Any] = {
    "event_id": "e1",
    "timestamp": "2025-11-01T09:30:00+08:00",
    "store_id": "s1",
    "event_type": "purchase",
    "modality": ["pos"],
    "raw_ref": ["pos://t1/b1"],
}


def reason_of(line: str) -> str:
    with pytest.raises(LineRejected) as info:
        check_line(line)
    return info.value.reason


def with_(**over: Any) -> str:
    return json.dumps({**BASE, **over}, ensure_ascii=False)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("not json", "not valid JSON"),
        ("[1, 2]", "the line must be an object"),
        (with_(stats={"order_amount": "12元"}), 'stats.order_amount must be a number, got "12元"'),
        (with_(stats={"person_count": 2.5}), "stats.person_count must be an integer, got 2.5"),
        (with_(stats={"queue_length": -1}), "stats.queue_length must be at least 0, got -1"),
        (with_(stats={"zone": None}), "stats.zone must be a string, got null"),
        (with_(colour="red"), "unknown top-level key 'colour'"),
        (with_(timestamp="2025-11-01T09:30:00"), "has no UTC offset"),
        (with_(timestamp="yesterday"), 'timestamp "yesterday" is not an RFC 3339 date-time'),
        (with_(timestamp="2025-02-30T09:30:00Z"), "is not a valid date-time: day is out of range"),
        (
            with_(end_timestamp="2025-11-01T09:29:59+08:00"),
            "end_timestamp 2025-11-01T09:29:59+08:00 is before",
        ),
        (with_(modality=["smell"]), 'modality[0]: unknown value "smell"'),
        (with_(modality=[]), "modality needs at least 1 item"),
        (with_(raw_ref=[]), "raw_ref needs at least 1 item"),
        (with_(embedding={"text": [0.1] * 3}), "embedding.text has 3 dimensions; this store keeps 512-d"),
        (with_(embedding={"depth": [0.1] * 512}), "unknown key 'depth' in embedding"),
        (with_(text="x" * 20001), "text is 20001 characters long; at most 20000"),
        (with_(event_id="bad id!"), 'event_id "bad id!" is not allowed'),
        (with_(event_id="e1\n"), "no trailing newline"),
        (json.dumps({k: v for k, v in BASE.items() if k != "store_id"}), "missing required field store_id"),
        ('{"event_id": "e1", "stats": {"x": NaN}}', "NaN is not a number JSON allows"),
        (with_(stats={"x": 1}).replace('"x": 1', '"x": 1e400'), "stats.x is too large"),
        (with_(stats={"x": 10**30}), "stats.x 1000000000000000000000000000000 is out of range"),
        (with_(text="\ud800"), "unpaired UTF-16 surrogate"),
        ("x" * (mev.MAX_LINE_BYTES + 1), "line is longer than 1 MB"),
    ],
)
def test_each_bad_line_gets_an_actionable_reason(line: str, expected: str) -> None:
    if expected == "unpaired UTF-16 surrogate":
        # surrogates pass the validator and are caught where the line is hashed for storage
        from edge.memory.ingest.build import content_hash

        with pytest.raises(LineRejected, match=expected):
            content_hash(check_line(line).obj)
        return
    assert expected in reason_of(line)


def test_valid_lines_pass_and_times_become_utc() -> None:
    ok = check_line(
        with_(timestamp="2025-11-01T09:30:00.123456789+08:00", end_timestamp="2025-11-01T01:31:00Z")
    )
    assert ok.ts.isoformat() == "2025-11-01T01:30:00.123456+00:00"
    assert ok.end_ts is not None and ok.end_ts.isoformat() == "2025-11-01T01:31:00+00:00"


# -- generated objects and mutations ---------------------------------------------------------------

ident = st.from_regex(r"[A-Za-z0-9_.:-]{1,20}", fullmatch=True)
scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
)
timestamps = st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2090, 1, 1)).map(
    lambda d: d.strftime("%Y-%m-%dT%H:%M:%S") + f".{d.microsecond:06d}Z"
)


@st.composite
def mev_objects(draw: st.DrawFn) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "event_id": draw(ident),
        "timestamp": draw(timestamps),
        "store_id": draw(st.sampled_from(["s1", "s2"])),
        "event_type": draw(st.sampled_from(["purchase", "complaint", "dwell", "customer_enter"])),
        "modality": draw(st.lists(st.sampled_from(mev.MODALITIES), min_size=1, max_size=3, unique=True)),
        "raw_ref": draw(st.lists(st.text(min_size=1, max_size=15), min_size=1, max_size=3)),
    }
    if draw(st.booleans()):
        obj["stats"] = draw(
            st.fixed_dictionaries(
                {},
                optional={
                    "order_amount": st.floats(0, 1e6),
                    "person_count": st.integers(0, 50),
                    "zone": st.text(max_size=8),
                    "promotion": st.one_of(st.booleans(), st.text(max_size=8)),
                    "quality": st.floats(0, 1),
                    "topic": scalar,
                    "n_items": scalar,
                },
            )
        )
    if draw(st.booleans()):
        obj["text"] = draw(st.text(max_size=40))
    if draw(st.booleans()):
        obj["entities"] = draw(st.lists(st.text(max_size=10), unique=True, max_size=3))
    if draw(st.booleans()):
        obj["relations"] = draw(
            st.lists(
                st.fixed_dictionaries(
                    {"head": st.text(max_size=5), "type": st.text(max_size=5), "tail": st.text(max_size=5)}
                ),
                max_size=2,
            )
        )
    if draw(st.booleans()):
        seed = draw(st.integers(0, 2**32 - 1))
        vec = np.random.default_rng(seed).uniform(-1, 1, 512).astype(np.float32)
        obj["embedding"] = {"image": vec.tolist()}
    return obj


def _mutate(obj: dict[str, Any], how: str, draw: Callable[[Any], Any]) -> str:
    obj = json.loads(json.dumps(obj))
    if how == "wrong_type":
        obj[draw(st.sampled_from(sorted(obj)))] = draw(
            st.one_of(st.integers(), st.lists(st.integers(), max_size=2), st.just({}))
        )
    elif how == "missing":
        obj.pop(draw(st.sampled_from(mev.REQUIRED_KEYS)))
    elif how == "no_offset":
        obj["timestamp"] = obj["timestamp"].rstrip("Z")
    elif how == "unknown_key":
        obj[draw(st.sampled_from(["colour", "Event_id", "extra"]))] = 1
    elif how == "nan":
        return json.dumps({**obj, "stats": {"x": math.nan}})
    elif how == "wrong_dim":
        obj["embedding"] = {"text": [0.5] * draw(st.integers(2, 600).filter(lambda n: n != 512))}
    elif how == "huge_text":
        obj["text"] = "长" * draw(st.sampled_from([20001, 400_000]))
    elif how == "bad_stat":
        obj["stats"] = {
            draw(st.sampled_from(["order_amount", "person_count", "quality"])): draw(
                st.sampled_from(["12元", -3, [1], {"a": 1}])
            )
        }
    elif how == "truncate":
        text = json.dumps(obj)
        return text[: draw(st.integers(0, max(0, len(text) - 1)))]
    return json.dumps(obj, ensure_ascii=False)


MUTATIONS = [
    "none",
    "wrong_type",
    "missing",
    "no_offset",
    "unknown_key",
    "nan",
    "wrong_dim",
    "huge_text",
    "bad_stat",
    "truncate",
]


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_import_never_crashes_and_stores_or_rejects_every_line(
    store_factory: Callable[..., Store], data: st.DataObject
) -> None:
    objs = data.draw(st.lists(mev_objects(), min_size=1, max_size=8, unique_by=lambda o: o["event_id"]))
    hows = [data.draw(st.sampled_from(MUTATIONS)) for _ in objs]
    lines = [
        json.dumps(o, ensure_ascii=False) if h == "none" else _mutate(o, h, data.draw)
        for o, h in zip(objs, hows, strict=True)
    ]
    store = store_factory(f"h{abs(hash(tuple(lines))) % 10**9}.db", timezone="UTC")
    rejects: dict[int, str] = {}
    report = store.import_lines(lines, on_reject=lambda n, r: rejects.__setitem__(n, r))
    nonblank = [i for i, line in enumerate(lines, start=1) if line.strip()]
    assert report.accepted + report.rejected + report.duplicates == len(nonblank)
    assert all(r.strip() for r in rejects.values())
    with store.read() as conn:
        stored = {eid: json.loads(sj) for eid, sj in conn.execute("SELECT event_id, stats_json FROM events")}
    for i in nonblank:
        line = lines[i - 1]
        if i in rejects:
            continue
        obj = json.loads(line)
        assert obj["event_id"] in stored, (line, rejects)
        assert stored[obj["event_id"]] == obj.get("stats", {})
        # whatever was accepted really is valid under the schema
        assert schema_reasons(obj) == []
    for i, h in enumerate(hows, start=1):
        if h in ("missing", "no_offset", "unknown_key", "nan", "wrong_dim", "huge_text", "bad_stat"):
            assert i in rejects, (h, lines[i - 1][:200])


@settings(max_examples=200, deadline=None)
@given(obj=mev_objects())
def test_the_fast_check_accepts_only_what_the_schema_accepts(obj: dict[str, Any]) -> None:
    if mev._fast_ok(obj):
        assert schema_reasons(obj) == []
    check_object(obj)  # generated objects are valid


def _full_outcome(obj: Any) -> Any:
    """The full path alone: jsonschema, the checks a schema cannot say, then the times parsed.
    The checked event, or the reason."""
    reasons = schema_reasons(obj)
    if reasons:
        return "; ".join(reasons)
    strict = mev._strict_reason(obj)
    if strict:
        return strict
    return _outcome(lambda: (mev._check_numbers(obj), mev._checked(obj, fast=False))[1])


def _agree(obj: Any) -> None:
    """Whatever the fast check accepts, the full path accepts with the same result (or both reject
    an impossible date of the right shape); whatever it declines, the full path rejects (except
    floats beyond 64-bit integers, which the full path re-reads exactly)."""
    full = _full_outcome(obj)
    if mev._fast_ok(obj):
        fast = _outcome(lambda: mev._checked(obj))
        assert fast == full or (isinstance(fast, str) and isinstance(full, str)), (fast, full)
    elif not _huge_stat(obj):
        assert isinstance(full, str), obj


def _outcome(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except LineRejected as exc:
        return exc.reason


def _huge_stat(obj: Any) -> bool:
    stats = obj.get("stats") if isinstance(obj, dict) else None
    return isinstance(stats, dict) and any(
        isinstance(v, float) and not -9.2e18 < v < 9.2e18 for v in stats.values()
    )


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_the_fast_and_the_full_validator_agree(data: st.DataObject) -> None:
    """Generated valid events and their mutations: the hand-written check accepts exactly what the
    full validator (jsonschema and the number checks) accepts, and both parse the same times (an
    impossible date of the right shape passes the fast check and is rejected when parsed)."""
    obj = data.draw(mev_objects())
    how = data.draw(st.sampled_from(MUTATIONS))
    line = json.dumps(obj, ensure_ascii=False) if how == "none" else _mutate(obj, how, data.draw)
    try:
        mutated = json.loads(line)
    except ValueError:
        return  # not JSON: neither validator sees it
    _agree(mutated)
    # and a whole line gets the same answer whichever path it takes
    assert _outcome(lambda: check_line(line)) == _outcome(lambda: check_object(mev.parse_line(line)))


@pytest.mark.parametrize(
    "over",
    [
        {"stats": {"person_count": True}},
        {"stats": {"person_count": 2.0}},
        {"stats": {"person_count": 2**63}},
        {"stats": {"quality": 1.5}},
        {"stats": {"promotion": 1}},
        {"stats": {"topic": [1]}},
        {"stats": {"topic": 1e300}},
        {"entities": ["a", "a"]},
        {"entities": ["x" * 129]},
        {"relations": [{"head": "a", "type": "b"}]},
        {"relations": [{"head": "a", "type": "b", "tail": "c", "x": "d"}]},
        {"embedding": {"text": [True] * 512}},
        {"embedding": {"text": [1e39] * 512}},
        {"modality": ["pos", "pos"]},
        {"raw_ref": [""]},
        {"end_timestamp": "2025-11-01T09:30:00+08:00"},
        {"end_timestamp": "2025-11-01T09:30:00"},
        {"timestamp": "2025-11-01t09:30:00z"},
        {"source": 3},
        {"text": None},
    ],
)
def test_the_fast_and_the_full_validator_agree_on_edge_cases(over: dict[str, Any]) -> None:
    obj = {**BASE, **over}
    _agree(obj)
    line = json.dumps(obj)
    assert _outcome(lambda: check_line(line)) == _outcome(lambda: check_object(mev.parse_line(line)))
