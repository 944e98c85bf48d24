"""The action outbox on a real memory: the migration that rebuilds the table keeps its rows, the
ack order never moves backwards, expiry, re-send scheduling, ids that stay the same while an
action is open, and the connection lock that says whether a sync worker runs."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import apsw
import pytest

from edge.errors import UsageError
from edge.memory.db.migrations import MIGRATIONS
from edge.memory.semantic import actions as rows
from edge.memory.store import Store
from edge.services import actions as use
from edge.sync import messages
from edge.sync.actions import ConnectionLock, record_ack, resend_due, worker_running

ROOT = Path(__file__).resolve().parents[1]
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def _events(n: int = 3) -> list[dict[str, object]]:
    return [
        {
            "event_id": f"e{i}",
            "timestamp": f"2025-11-0{i + 1}T10:00:00+08:00",
            "store_id": "sh_01",
            "event_type": "customer_enter",
            "modality": ["video"],
            "raw_ref": [f"cam://{i}"],
        }
        for i in range(n)
    ]


@pytest.fixture()
def store(tmp_path: Path) -> Store:
    s = Store.open(tmp_path / "m.db", timezone="Asia/Shanghai")
    s.import_events(_events())
    yield s
    s.close()


def _queue(store: Store, title: str = "Open checkout 3", expires: datetime | None = None) -> str:
    return use.queue_action(
        store,
        store_id="sh_01",
        type="work_order",
        role="cashier",
        params={"title": title},
        summary=title,
        confidence=1.0,
        expires_at=expires or datetime.now(UTC) + timedelta(hours=2),
    )


def _row(store: Store, aid: str, now: datetime | None = None) -> dict[str, object]:
    with store.read() as conn:
        row = rows.get_action(conn, aid, now)
    assert row is not None
    return row


def test_the_migration_rebuilds_the_table_keeping_every_row(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = apsw.Connection(str(path))
    conn.execute("CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL) STRICT")
    from edge.memory.db.connect import load_vec

    load_vec(conn)
    for name, sql in MIGRATIONS:  # a memory made before the action outbox
        if name == "0010_action_outbox":
            break
        conn.execute(sql)
        conn.execute("INSERT INTO _migrations VALUES (?, 'x')", (name,))
    conn.execute(
        "INSERT INTO actions (action_id, store_id, type, role, summary, confidence, issued_at, state,"
        " acked_by, updated_at) VALUES ('a1', 's', 'alert', 'mgr', 'old one', 0.8, '2025-01-01T00:00:00+00:00',"
        " 'done', 'bob', '2025-01-02T00:00:00+00:00'), ('a2', 's', 'recommendation', 'mgr', 'open one',"
        " 0.7, '2025-01-03T00:00:00+00:00', 'pending', NULL, '2025-01-03T00:00:00+00:00')"
    )
    conn.close()
    with Store.open(path) as s, s.read() as c:
        got = {r["action_id"]: r for r in rows.list_actions(c)}
        assert (got["a1"]["state"], got["a1"]["acked_by"], got["a1"]["acked_at"]) == (
            "done",
            "bob",
            "2025-01-02T00:00:00+00:00",
        )
        assert (got["a2"]["state"], got["a2"]["summary"], got["a2"]["expires_at"]) == (
            "pending",
            "open one",
            None,
        )
    with Store.open(path) as s:
        with pytest.raises(apsw.ConstraintError):
            s.writer.submit(
                lambda c: c.execute("UPDATE actions SET state = 'lost' WHERE action_id = 'a1'")
            ).result()
        # the new states pass the new CHECK
        s.writer.submit(
            lambda c: c.execute("UPDATE actions SET state = 'expired' WHERE action_id = 'a2'")
        ).result()


def test_acks_move_forward_only_and_are_idempotent(store: Store) -> None:
    aid = _queue(store)
    assert _row(store, aid)["state"] == "pending"
    at1 = datetime.now(UTC).replace(microsecond=0)
    assert rows.apply_ack(store, aid, "accepted", "ann", at1) == rows.RECORDED
    assert rows.apply_ack(store, aid, "accepted", "ann", at1) == rows.UNCHANGED  # repeated
    at2 = at1 + timedelta(seconds=5)
    assert rows.apply_ack(store, aid, "done", "bo", at2) == rows.RECORDED
    # an older or lower ack arriving late, and a rejection after done: nothing moves
    assert rows.apply_ack(store, aid, "accepted", "ann", at1) == rows.UNCHANGED
    assert rows.apply_ack(store, aid, "rejected", "cy", at2 + timedelta(seconds=1)) == rows.UNCHANGED
    r = _row(store, aid)
    assert (r["state"], r["acked_by"], r["acked_at"]) == ("done", "bo", rows.iso(at2))
    assert rows.apply_ack(store, "no-such", "done", "bo") == rows.UNKNOWN
    # a re-send scheduled after an ack does not move it back to sent
    assert rows.mark_sent(store, aid, T0) is False
    assert _row(store, aid)["state"] == "done"


def test_expiry_reads_expired_before_it_is_marked_and_late_acks(store: Store) -> None:
    now = datetime.now(UTC)
    aid = _queue(store, "mop aisle 2", expires=now + timedelta(minutes=10))
    later = now + timedelta(minutes=11)
    assert _row(store, aid, later)["state"] == "expired"  # read-only view of the truth
    with store.read() as conn:
        assert conn.execute("SELECT state FROM actions WHERE action_id = ?", (aid,)).fetchall() == [
            ("pending",)
        ]
        assert rows.list_actions(conn, "pending", later) == []
    assert rows.expire_due(store, later) == [aid]
    assert rows.expire_due(store, later) == []
    # an ack made after the expiry does not count; one made before it (arriving late) does
    assert rows.apply_ack(store, aid, "done", "ann", later, now=later) == rows.LATE
    assert (
        rows.apply_ack(store, aid, "accepted", "ann", now + timedelta(minutes=9), now=later) == rows.RECORDED
    )
    assert _row(store, aid, later)["state"] == "accepted"


def test_resend_due_publishes_expires_and_schedules_with_doubling_gaps(store: Store) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    live = _queue(store, "live", expires=now + timedelta(hours=1))
    dead = _queue(store, "dead", expires=now + timedelta(seconds=30))
    sent: list[tuple[str, bytes, int | None, Sequence[tuple[str, str]]]] = []

    def publish(topic: str, payload: bytes, expiry: int | None, props: Sequence[tuple[str, str]]) -> None:
        sent.append((topic, payload, expiry, props))

    t1 = now + timedelta(minutes=1)
    report = resend_due(store, publish, now=t1, resend_base_s=60, resend_max_s=150)
    assert report.sent == [live] and report.expired == [dead]
    topic, payload, expiry, props = sent[0]
    assert topic == f"adamm/v1/sh_01/action/cashier/{live}"  # retained per action
    msg = messages.parse_action(payload)
    assert (msg.action_id, msg.type, msg.params, msg.summary) == (
        live,
        "work_order",
        {"title": "live", "expires_at": rows.iso(now + timedelta(hours=1))},
        "live",
    )
    assert msg.expires_at == rows.iso(now + timedelta(hours=1))  # in the payload: MQTT 3.1.1 keeps it
    assert expiry == 59 * 60 and dict(props) == {"expires_at": rows.iso(now + timedelta(hours=1))}
    r = _row(store, live)
    assert (r["state"], r["attempts"], r["next_send_at"]) == ("sent", 1, rows.iso(t1 + timedelta(seconds=60)))
    assert resend_due(store, publish, now=t1 + timedelta(seconds=59)).sent == []  # not due yet
    t2 = t1 + timedelta(seconds=60)
    assert resend_due(store, publish, now=t2, resend_base_s=60, resend_max_s=150).sent == [live]
    assert _row(store, live)["next_send_at"] == rows.iso(t2 + timedelta(seconds=120))
    t3 = t2 + timedelta(seconds=120)
    resend_due(store, publish, now=t3, resend_base_s=60, resend_max_s=150)
    assert _row(store, live)["next_send_at"] == rows.iso(t3 + timedelta(seconds=150))  # capped
    assert [messages.parse_action(p).action_id for _, p, _, _ in sent] == [live, live, live]
    # acknowledged: no more re-sends
    ack = messages.ack_payload("ann", rows.iso(t3), "done")
    assert record_ack(store, messages.ack_topic("sh_01", live), ack) == "recorded"
    assert record_ack(store, messages.ack_topic("sh_01", live), ack) == "unchanged"
    assert record_ack(store, messages.ack_topic("sh_01", live), b"{nope") == "not_json"
    assert resend_due(store, publish, now=t3 + timedelta(days=1)).sent == []


def test_an_action_that_ends_has_its_retained_message_cleared_once(store: Store) -> None:
    """done, rejected, expired: the next round publishes an empty retained message on the
    action's topic, once; an action never published has nothing to clear."""
    now = datetime.now(UTC).replace(microsecond=0)
    done = _queue(store, "done", expires=now + timedelta(hours=1))
    rejected = _queue(store, "rejected", expires=now + timedelta(hours=1))
    lapsing = _queue(store, "lapsing", expires=now + timedelta(minutes=5))
    accepted = _queue(store, "accepted", expires=now + timedelta(hours=1))
    sent: list[tuple[str, bytes]] = []

    def publish(topic: str, payload: bytes, expiry: int | None, props: Sequence[tuple[str, str]]) -> None:
        sent.append((topic, payload))

    assert len(resend_due(store, publish, now=now).sent) == 4
    for aid, state in ((done, "done"), (rejected, "rejected"), (accepted, "accepted")):
        rows.apply_ack(store, aid, state, "ann", now, now=now)
    sent.clear()
    t = now + timedelta(minutes=6)  # lapsing expired meanwhile
    report = resend_due(store, publish, now=t, resend_base_s=3600)
    assert report.expired == [lapsing]
    assert sorted(report.cleared) == sorted([done, rejected, lapsing]) and report.sent == []
    topic = "adamm/v1/sh_01/action/cashier/"
    assert sorted(sent) == sorted((topic + a, b"") for a in (done, rejected, lapsing))
    assert resend_due(store, publish, now=t + timedelta(hours=2)).cleared == []  # once
    assert _row(store, accepted)["state"] == "accepted"  # open: stays retained, not re-sent
    # queued and ended before it was ever published: nothing to clear on the broker
    never = _queue(store, "never", expires=t + timedelta(hours=1))
    rows.apply_ack(store, never, "rejected", "ann", t, now=t)
    sent.clear()
    assert resend_due(store, publish, now=t).cleared == [never] and sent == []


def test_the_same_open_action_keeps_its_id_and_a_closed_one_gets_a_new_one(store: Store) -> None:
    a = _queue(store)
    assert _queue(store) == a
    with store.read() as conn:
        assert len(rows.list_actions(conn)) == 1
    rows.apply_ack(store, a, "done", "ann")
    b = _queue(store)
    assert b != a and _row(store, b)["state"] == "pending"
    with pytest.raises(UsageError, match="role"):
        use.queue_action(
            store, store_id="sh_01", type="alert", role="a/b", params={}, summary="", confidence=1
        )
    with pytest.raises(UsageError, match="expire"):
        _queue(store, "x", expires=datetime.now(UTC) - timedelta(seconds=1))


def test_weak_answers_are_refused_without_confirm(store: Store) -> None:
    weak = {"status": "insufficient_data", "summary": "too little data", "confidence": 0.1, "evidence": []}
    with pytest.raises(UsageError, match="--confirm"):
        use.send_answer_action(
            store, weak, role="cashier", store_id="sh_01", question="q?", expires_at=None, confirm=False
        )
    low = {"status": "ok", "low_confidence": True, "summary": "weak", "confidence": 0.3, "action": None}
    with pytest.raises(UsageError, match="confidence is low"):
        use.send_answer_action(store, low, role="cashier", store_id="sh_01", question="q?", expires_at=None)
    aid = use.send_answer_action(
        store, weak, role="cashier", store_id="sh_01", question="q?", expires_at=None, confirm=True
    )
    r = _row(store, aid)
    assert (r["type"], r["summary"], r["confidence"]) == ("recommendation", "too little data", 0.1)
    no_action = {
        "status": "ok",
        "low_confidence": False,
        "summary": "fine",
        "confidence": 0.9,
        "action": None,
    }
    with pytest.raises(UsageError, match="no action"):
        use.send_answer_action(
            store, no_action, role="cashier", store_id="sh_01", question="q", expires_at=None
        )


def test_the_connection_lock_is_held_by_one_process_and_freed_by_sigkill(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from edge.sync.actions import ConnectionLock as L\n"
            f"lock = L.try_acquire({str(db)!r}); print('held' if lock else 'free', flush=True); sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert worker_running(db)
        assert ConnectionLock.try_acquire(db) is None
    finally:
        holder.kill()
        holder.wait(10)
    assert not worker_running(db)
    with ConnectionLock.try_acquire(db) as lock:  # type: ignore[union-attr]
        assert lock is not None and lock.path.read_text().strip().isdigit()
