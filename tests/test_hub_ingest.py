"""Hub store and ingest on real SQLite and real PostgreSQL: idempotent, highest version wins in any
order, bad messages parked with their reason, statuses kept, files that are not hubs refused."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hub_data import fact, hub_factory, pg_dsn, rollup, row, state  # noqa: F401  (pg_dsn: fixture)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edge.sync import messages as m
from hub.db import MIGRATIONS, HubDB, NotAHubError, open_hub
from hub.ingest import ingest

TOPIC = m.summary_topic("sh_01")


@pytest.fixture(params=["sqlite", "postgresql"])
def make_hub(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], HubDB]:
    dsn = request.getfixturevalue("pg_dsn") if request.param == "postgresql" else None
    return hub_factory(request.param, tmp_path, dsn)


def _send(db: HubDB, s: m.Summary) -> Any:
    return ingest(db, m.summary_topic(s.store_id), s.encode())


def test_a_rollup_is_stored_once_and_receipted_every_time(make_hub: Callable[[], HubDB]) -> None:
    db = make_hub()
    s = rollup("sh_01", "2025-10-01", "hour", [row(14, revenue=812.5, bills=12), row(15, events=3)])
    first = _send(db, s)
    again = _send(db, s)
    assert (first.outcome, again.outcome) == ("stored", "kept")
    assert first.receipt == again.receipt == m.Receipt(stored=(s.msg_id,))
    rows = db.query(
        "SELECT value, vkey, revenue, bills, local_weekday, local_week, local_month FROM hub_rollup"
    )
    assert sorted(rows) == [
        ("14", "v14", 812.5, 12.0, 2, "2025-09-29", "2025-10"),
        ("15", "v15", 0.0, 0.0, 2, "2025-09-29", "2025-10"),
    ]
    assert db.query("SELECT count(*) FROM hub_messages") == [(1,)]
    assert db.query("SELECT store_id, tz FROM hub_stores") == [("sh_01", "Asia/Shanghai")]


def test_a_higher_version_replaces_the_keys_rows_an_older_one_is_a_no_op(
    make_hub: Callable[[], HubDB],
) -> None:
    db = make_hub()
    v1 = rollup("sh_01", "2025-10-01", "total", [row(None, events=5), row(None, "dwell", events=2)], 1)
    v2 = rollup("sh_01", "2025-10-01", "total", [row(None, events=7)], 2)
    other = rollup("sh_01", "2025-10-02", "total", [row(None, events=1)], 1)
    for s in (v2, other):
        assert _send(db, s).receipt == m.Receipt(stored=(s.msg_id,))
    # the older one: the hub holds v2 (the store, whose current content that is, is done with it)
    assert _send(db, v1).receipt == m.Receipt(kept_newer=(m.KeptNewer(v1.msg_id, v1.key, 2, v2.msg_id),))
    assert sorted(db.query("SELECT local_date, value, event_type, events FROM hub_rollup")) == [
        ("2025-10-01", None, "purchase", 7.0),
        ("2025-10-02", None, "purchase", 1.0),
    ]
    assert db.query("SELECT version, msg_id FROM hub_summaries WHERE key = ?", (v1.key,)) == [(2, v2.msg_id)]


def test_a_null_slice_value_and_a_text_one_are_different_rows(make_hub: Callable[[], HubDB]) -> None:
    db = make_hub()
    s = rollup("sh_01", "2025-10-01", "weather", [row(None), row("None"), row("rain")])
    _send(db, s)
    assert sorted(db.query("SELECT vkey FROM hub_rollup")) == [("",), ("vNone",), ("vrain",)]


def test_facts_keep_the_highest_version(make_hub: Callable[[], HubDB]) -> None:
    db = make_hub()
    f2 = fact("sh_01", "f1", 2, valid_to="2025-11-01")
    f1 = fact("sh_01", "f1", 1)
    _send(db, f2)
    _send(db, f1)
    (body,) = db.query("SELECT body FROM hub_facts")[0]
    assert json.loads(body)["valid_to"] == "2025-11-01"
    assert db.query("SELECT kind, version FROM hub_summaries") == [("fact", 2)]


BAD: list[tuple[str, Callable[[bytes], bytes], str]] = [
    ("not_json", lambda good: b"{not json", TOPIC),
    (
        "unknown_schema_version",
        lambda good: good.replace(b'"schema_version":1', b'"schema_version":9'),
        TOPIC,
    ),
    ("too_large", lambda good: b" " * (m.MAX_MESSAGE_BYTES + 1), TOPIC),
    ("wrong_store", lambda good: good, m.summary_topic("bj_02")),
    ("bad_msg_id", lambda good: good.replace(b'"version":1', b'"version":2'), TOPIC),
]


@pytest.mark.parametrize(("reason", "mangle", "topic"), BAD, ids=[b[0] for b in BAD])
def test_bad_messages_are_parked_with_their_reason(
    make_hub: Callable[[], HubDB], reason: str, mangle: Callable[[bytes], bytes], topic: str
) -> None:
    db = make_hub()
    good = rollup("sh_01", "2025-10-01", "hour", [row(14)])
    got = ingest(db, topic, mangle(good.encode()))
    assert (got.outcome, got.reason) == ("parked", reason)
    assert db.query("SELECT topic, reason FROM hub_parked") == [(topic, reason)]
    assert db.query("SELECT count(*) FROM hub_rollup") == [(0,)]
    # the hub keeps serving: the good message after it is stored
    assert _send(db, good).outcome == "stored"
    if got.receipt is not None:
        assert got.receipt.parked[0][1] == reason and not got.receipt.stored


def test_statuses_keep_the_newest(make_hub: Callable[[], HubDB]) -> None:
    db = make_hub()
    t = m.status_topic("sh_01")
    ingest(db, t, m.status_payload("online", "2025-10-01T08:00:00+00:00"))
    ingest(db, t, m.status_payload("offline", "2025-10-01T09:00:00+00:00"))
    ingest(db, t, m.status_payload("online", "2025-10-01T07:00:00+00:00"))  # late, older
    assert db.query("SELECT status, status_at FROM hub_stores") == [("offline", "2025-10-01T09:00:00+00:00")]
    assert ingest(db, t, b'{"state": "asleep"}').reason == "bad_status"


# -- any order, any duplication ------------------------------------------------------------------

KEYS = [("sh_01", "2025-10-01", "hour"), ("sh_01", "2025-10-02", "total"), ("bj_02", "2025-10-01", "weather")]


def _versions(seed: int) -> list[m.Summary]:
    out = []
    for i, (store, day, sl) in enumerate(KEYS):
        for v in (1, 2, 3):
            value = None if sl == "total" else (10 + v if sl == "hour" else f"w{v}")
            rows = [row(value, events=v * 10 + i + seed), row(value, "dwell", dwell_sum=v * 1.5)][
                : 1 + (v % 2)
            ]
            out.append(rollup(store, day, sl, rows, v))
        out.append(fact(store, f"f{i}", 1))
        out.append(fact(store, f"f{i}", 2, value=float(i)))
    return out


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_any_order_and_duplication_ends_in_the_highest_versions(
    kind: str, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> None:
    dsn = request.getfixturevalue("pg_dsn") if kind == "postgresql" else None
    make = hub_factory(kind, tmp_path_factory.mktemp("prop"), dsn)
    msgs = _versions(0)
    highest: dict[tuple[str, str], m.Summary] = {}
    for s in msgs:
        if (s.store_id, s.key) not in highest or s.version > highest[(s.store_id, s.key)].version:
            highest[(s.store_id, s.key)] = s
    ref = make()
    for s in highest.values():
        _send(ref, s)
    want = state(ref)
    ref.close()
    db = make()

    @settings(
        max_examples=30 if kind == "sqlite" else 15,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(order=st.permutations(range(len(msgs))), dups=st.lists(st.integers(0, len(msgs) - 1), max_size=12))
    def check(order: list[int], dups: list[int]) -> None:
        with db.transaction():
            for table in (
                "hub_rollup",
                "hub_catalog",
                "hub_summaries",
                "hub_messages",
                "hub_facts",
                "hub_stores",
                "hub_diverged",
            ):
                db.execute(f"DELETE FROM {table}")
        seq = [msgs[i] for i in order]
        for j, d in enumerate(dups):  # re-deliveries anywhere in the stream
            seq.insert((j * 7) % (len(seq) + 1), msgs[d])
        for s in seq:  # stored, or the hub holds a higher version of the key (kept_newer)
            r = _send(db, s).receipt
            assert r is not None and not r.parked
            assert r == m.Receipt(stored=(s.msg_id,)) or (
                r.kept_newer[0].msg_id == s.msg_id and r.kept_newer[0].version > s.version
            )
        got = state(db)
        from_rows = db.query(
            "SELECT store_id, slice, vkey, event_type, count(*), sum(events) FROM hub_rollup "
            "GROUP BY store_id, slice, vkey, event_type"
        )
        assert got["catalog"] == sorted(from_rows, key=lambda r: tuple(str(v) for v in r))
        assert got["messages"] == sorted({s.msg_id for s in msgs})
        assert {k: v for k, v in got.items() if k != "messages"} == {
            k: v for k, v in want.items() if k != "messages"
        }

    check()
    db.close()


# -- files that are not hubs -----------------------------------------------------------------------


def test_files_that_are_not_hub_databases_are_refused_untouched(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    other = tmp_path / "other.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    for p in (empty, other, text):
        before = p.read_bytes()
        with pytest.raises(NotAHubError):
            open_hub(str(p), create=True)
        assert p.read_bytes() == before
    db = open_hub(str(tmp_path / "new.db"), create=True)
    db.close()
    again = open_hub(str(tmp_path / "new.db"))  # re-opening a hub applies nothing twice
    assert again.applied() == [name for name, _ in MIGRATIONS]
    again.close()


# -- what the hub believes (issue 25) -------------------------------------------------------------


def _forged(kind: str, body: dict[str, Any], version: int = 1) -> bytes:
    """A store's message written by hand, as an attacker with its credentials would (NaN allowed)."""
    key = m.rollup_key(body["day"], body["slice"]) if kind == "rollup" else m.fact_key(body["fact_id"])
    try:
        mid = m.message_id("sh_01", kind, key, version, body)
    except ValueError:
        mid = "f" * 32
    msg = {"msg_id": mid, "schema_version": 1, "store_id": "sh_01", "kind": kind, "key": key}
    return json.dumps({**msg, "version": version, "body": body}).encode()


def _fact_body(**over: object) -> dict[str, Any]:
    body = dict(fact("sh_01", "f9").body)
    body.update(over)
    return body


def _rollup_body(day: str, **over: object) -> dict[str, Any]:
    return {"day": day, "slice": "total", "tz": "Asia/Shanghai", "closed": True, "rows": [row(None, **over)]}


UNBELIEVABLE: list[tuple[str, str, dict[str, Any], str]] = [
    ("2099 revenue", "rollup", _rollup_body("2099-01-15", revenue=5_000_000.0), "day_ahead"),
    ("1999", "rollup", _rollup_body("1999-06-01"), "day_too_early"),
    ("n -5", "fact", _fact_body(n=-5), "bad_count"),
    ("confidence 7.5", "fact", _fact_body(confidence=7.5), "not_probability"),
    ("p_value -0.3", "fact", _fact_body(p_value=-0.3), "not_probability"),
    ("n many, confidence high", "fact", _fact_body(n="many", confidence="high"), "bad_count"),
    ("NaN effect", "fact", _fact_body(effect=float("nan")), "non_finite"),
    ("valid_from after valid_to", "fact", _fact_body(valid_to="2025-09-01"), "valid_from_after_valid_to"),
]


@pytest.mark.parametrize(
    ("kind", "body", "reason"), [u[1:] for u in UNBELIEVABLE], ids=[u[0] for u in UNBELIEVABLE]
)
def test_what_the_hub_cannot_believe_is_parked_once_with_its_reason(
    make_hub: Callable[[], HubDB], kind: str, body: dict[str, Any], reason: str
) -> None:
    db = make_hub()
    payload = _forged(kind, body)
    got = ingest(db, TOPIC, payload)
    assert (got.outcome, got.reason) == ("parked", reason)
    assert got.receipt is not None and got.receipt.parked == ((json.loads(payload)["msg_id"], reason),)
    again = ingest(db, TOPIC, payload)  # re-sent: receipted as parked again, kept once
    assert again.receipt == got.receipt
    assert db.query("SELECT reason FROM hub_parked") == [(reason,)]
    assert db.query("SELECT count(*) FROM hub_rollup") == [(0,)]
    assert db.query("SELECT count(*) FROM hub_facts") == [(0,)]
    assert db.query("SELECT count(*) FROM hub_summaries") == [(0,)]


def test_a_status_stamped_in_another_zone_is_compared_as_an_instant(make_hub: Callable[[], HubDB]) -> None:
    db = make_hub()
    t = m.status_topic("sh_01")
    ingest(db, t, m.status_payload("offline", "2025-10-01T09:00:00Z"))
    # 16:30+08:00 is 08:30Z: older, though it sorts after the Z one as text
    ingest(db, t, m.status_payload("online", "2025-10-01T16:30:00+08:00"))
    assert db.query("SELECT status, status_at FROM hub_stores") == [("offline", "2025-10-01T09:00:00Z")]
    ingest(db, t, m.status_payload("online", "2025-10-01T17:30:00+08:00"))  # 09:30Z: newer
    assert db.query("SELECT status FROM hub_stores") == [("online",)]


# -- converging to the store's record (issue 25, item 2) ------------------------------------------


def test_a_forged_higher_version_is_answered_kept_newer_and_the_store_converges(
    make_hub: Callable[[], HubDB],
) -> None:
    from hub.status import hub_status

    db = make_hub()
    true_v1 = rollup("sh_01", "2025-10-01", "total", [row(None, revenue=12363.95, events=40)], 1)
    assert _send(db, true_v1).receipt == m.Receipt(stored=(true_v1.msg_id,))
    forged = rollup("sh_01", "2025-10-01", "total", [row(None, revenue=1.0, events=1)], 999)
    assert _send(db, forged).outcome == "stored"  # a higher version: believed, for now
    true_v2 = rollup("sh_01", "2025-10-01", "total", [row(None, revenue=12400.0, events=41)], 2)
    got = _send(db, true_v2)
    assert got.outcome == "kept_newer"
    assert got.receipt == m.Receipt(
        kept_newer=(m.KeptNewer(true_v2.msg_id, true_v2.key, 999, forged.msg_id),)
    )
    assert hub_status(db)["stores"][0]["diverged"] == []  # not yet: the store has not answered
    # the store sends its current content above the hub's version (what the edge's outbox does)
    above = rollup("sh_01", "2025-10-01", "total", [row(None, revenue=12400.0, events=41)], 1000)
    assert _send(db, above).receipt == m.Receipt(stored=(above.msg_id,))
    assert db.query("SELECT revenue FROM hub_rollup") == [(12400.0,)]
    (d,) = hub_status(db)["stores"][0]["diverged"]
    assert (d["key"], d["hub_version"], d["store_version"]) == (true_v2.key, 999, 2)


def test_an_older_version_arriving_late_is_kept_newer_but_no_divergence(
    make_hub: Callable[[], HubDB],
) -> None:
    from hub.status import hub_status

    db = make_hub()
    v3 = rollup("sh_01", "2025-10-01", "hour", [row(14, events=3)], 3)
    v2 = rollup("sh_01", "2025-10-01", "hour", [row(14, events=2)], 2)
    _send(db, v3)
    got = _send(db, v2)
    assert got.receipt is not None and got.receipt.kept_newer[0].kept_msg_id == v3.msg_id
    assert _send(db, v3).receipt == m.Receipt(stored=(v3.msg_id,))  # its own redelivery: stored
    assert hub_status(db)["stores"][0]["diverged"] == []


def test_two_writers_of_one_stores_catalog_never_deadlock(pg_dsn: str) -> None:  # noqa: F811
    """Two PostgreSQL connections store days of one store and slice at once, their rows in opposite
    orders: the catalog's rows are locked in one order (after one lock per store and slice), so
    neither waits on the other in a cycle (before: a deadlock within a few days)."""
    import threading

    from hub_data import fresh_pg_dsn

    target = fresh_pg_dsn(pg_dsn)
    dbs = [open_hub(target), open_hub(target)]
    values = list(range(24))
    errors: list[BaseException] = []

    def writer(i: int) -> None:
        order = values if i == 0 else values[::-1]
        try:
            for d in range(28):  # other days (keys) each, the same catalog rows
                s = rollup(
                    "sh_01", f"2025-{10 + i}-{d + 1:02d}", "hour", [row(v, events=1 + d) for v in order]
                )
                assert ingest(dbs[i], TOPIC, s.encode()).outcome == "stored"
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    for db in dbs:
        db.close()
    assert not errors, errors
