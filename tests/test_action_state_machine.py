"""One action state machine for both outboxes (issue 25, item 6): the store's ``actions``
(:mod:`edge.memory.semantic.actions` + :mod:`edge.sync.actions`) and the hub's ``hub_actions``
(:mod:`hub.actions`) follow :mod:`edge.contract`'s rules row by row: acks only move an action
forward, an open action past its expiry is expired (before any writer marks it), is never sent and
takes only an ack made in time, a row whose role cannot name a topic is not sent, and an action
that ended has its retained message cleared once. The same script runs on both outboxes (real
SQLite files) and is checked against the pure rules."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

import pytest
from actions_helpers import make_memory

from edge import contract
from edge.memory.semantic import actions as rows
from edge.memory.store import Store
from edge.sync import actions as store_sender
from edge.sync import messages as m
from hub import actions as ha
from hub.db import HubDB, open_hub

T0 = datetime(2025, 12, 1, 9, 0, tzinfo=UTC)
STORE = "sh_01"


class Outbox(Protocol):
    def queue(self, title: str, expires_at: datetime) -> str: ...
    def ack(self, aid: str, state: str, at: datetime, now: datetime) -> str: ...
    def state(self, aid: str, now: datetime) -> str: ...
    def stored(self, aid: str) -> str: ...
    def round(self, now: datetime) -> tuple[list[str], list[str], list[str], list[tuple[str, bytes]]]: ...
    def set_role(self, aid: str, role: str) -> None: ...


class StoreOutbox:
    def __init__(self, store: Store) -> None:
        self.store = store

    def queue(self, title: str, expires_at: datetime) -> str:
        aid = f"a{abs(hash(title))}"
        rec = rows.ActionRecord(
            aid, STORE, "work_order", "cashier", title, 0.8, {"title": title}, (), expires_at
        )
        assert rows.insert_action(self.store, rec, now=T0)
        return aid

    def ack(self, aid: str, state: str, at: datetime, now: datetime) -> str:
        return rows.apply_ack(self.store, aid, state, "ann", at, now=now)

    def state(self, aid: str, now: datetime) -> str:
        with self.store.read() as conn:
            row = rows.get_action(conn, aid, now)
        assert row is not None
        return str(row["state"])

    def stored(self, aid: str) -> str:
        with self.store.read() as conn:
            return str(conn.execute("SELECT state FROM actions WHERE action_id = ?", (aid,)).fetchall()[0][0])

    def round(self, now: datetime) -> tuple[list[str], list[str], list[str], list[tuple[str, bytes]]]:
        out: list[tuple[str, bytes]] = []
        r = store_sender.resend_due(
            self.store, lambda t, p, e, u: out.append((t, p)), now=now, resend_base_s=60
        )
        return r.sent, r.expired, r.cleared, out

    def set_role(self, aid: str, role: str) -> None:
        self.store.writer.submit(
            lambda c: c.execute("UPDATE actions SET role = ? WHERE action_id = ?", (role, aid))
        ).result()


class HubOutbox:
    def __init__(self, db: HubDB) -> None:
        self.db = db

    def queue(self, title: str, expires_at: datetime) -> str:
        return ha.issue_action(
            self.db,
            store_id=STORE,
            role="cashier",
            type="work_order",
            params={"title": title},
            summary=title,
            confidence=0.8,
            expires_at=expires_at,
            now=T0,
        )

    def ack(self, aid: str, state: str, at: datetime, now: datetime) -> str:
        return ha.record_ack(
            self.db, m.ack_topic(STORE, aid), m.ack_payload("ann", contract.iso(at), state), now=now
        )

    def state(self, aid: str, now: datetime) -> str:
        row = ha.get_action(self.db, aid, now)
        assert row is not None
        return str(row["state"])

    def stored(self, aid: str) -> str:
        found = self.db.one("SELECT state FROM hub_actions WHERE action_id = ?", (aid,))
        assert found is not None
        return str(found[0])

    def round(self, now: datetime) -> tuple[list[str], list[str], list[str], list[tuple[str, bytes]]]:
        out: list[tuple[str, bytes]] = []
        r = ha.resend_due(self.db, lambda t, p, e, u: out.append((t, p)), now=now, resend_base_s=60)
        return r.sent, r.expired, r.cleared, out

    def set_role(self, aid: str, role: str) -> None:
        with self.db.transaction():
            self.db.execute("UPDATE hub_actions SET role = ? WHERE action_id = ?", (role, aid))


@pytest.fixture(params=["store", "hub"])
def outbox(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Outbox]:
    if request.param == "store":
        store = Store.open(make_memory(tmp_path / "m.db"), timezone="Asia/Shanghai")
        try:
            yield StoreOutbox(store)
        finally:
            store.close()
    else:
        db = open_hub(str(tmp_path / "hub.db"), create=True)
        try:
            yield HubOutbox(db)
        finally:
            db.close()


ACKS = ("accepted", "done", "rejected")


@pytest.mark.parametrize("sequence", list(itertools.product(ACKS, repeat=3)))
def test_acks_move_an_action_forward_only_as_the_contract_says(
    outbox: Outbox, sequence: tuple[str, ...]
) -> None:
    aid = outbox.queue("-".join(sequence), T0 + timedelta(hours=2))
    outbox.round(T0)  # sent
    state = "sent"
    for i, ack in enumerate(sequence):
        at = T0 + timedelta(minutes=i + 1)
        rule = contract.apply_ack_rule(state, contract.iso(T0 + timedelta(hours=2)), ack, at, at)
        assert outbox.ack(aid, ack, at, at) == rule.outcome
        state = rule.write or state
        assert outbox.state(aid, at) == state
    assert state in ("accepted", "done", "rejected")


def test_expiry_the_same_on_both_outboxes(outbox: Outbox) -> None:
    expires = T0 + timedelta(minutes=10)
    aid = outbox.queue("mop aisle 2", expires)
    sent, expired, _cleared, out = outbox.round(T0)
    assert sent == [aid] and expired == [] and out[0][0] == m.action_topic(STORE, "cashier", aid)
    later = expires + timedelta(minutes=1)
    assert outbox.state(aid, later) == "expired" and outbox.stored(aid) == "sent"  # read before written
    # an ack made after the expiry is late (and marks it); one made before it still counts
    assert outbox.ack(aid, "done", later, later) == contract.LATE
    assert outbox.stored(aid) == "expired"
    assert outbox.ack(aid, "accepted", expires - timedelta(minutes=1), later) == contract.RECORDED
    assert outbox.state(aid, later) == "accepted"
    # another one that nobody acknowledged: never sent once expired, cleared once
    lapsing = outbox.queue("count the till", expires)
    outbox.round(T0)
    sent, expired, cleared, out = outbox.round(later + timedelta(hours=1))
    assert sent == [] and expired == [lapsing] and cleared == [lapsing]
    assert out == [(m.action_topic(STORE, "cashier", lapsing), b"")]
    assert outbox.round(later + timedelta(hours=2))[3] == []


def test_a_row_whose_role_cannot_name_a_topic_is_not_sent(outbox: Outbox, caplog: Any) -> None:
    aid = outbox.queue("spill", T0 + timedelta(hours=2))
    outbox.set_role(aid, "cash/ier")
    sent, _expired, _cleared, out = outbox.round(T0)
    assert sent == [] and out == []
    assert "cannot name a topic" in caplog.text
    assert outbox.stored(aid) == "pending"


def test_the_rules_are_pure_and_total() -> None:
    now = T0
    for state, ack in itertools.product(contract.ACTION_STATES, ACKS):
        for expires in (
            None,
            contract.iso(now - timedelta(minutes=1)),
            contract.iso(now + timedelta(hours=1)),
        ):
            rule = contract.apply_ack_rule(state, expires, ack, now, now)
            assert rule.outcome in (contract.RECORDED, contract.UNCHANGED, contract.LATE)
            if state in ("done", "rejected"):
                assert rule == contract.AckRule(contract.UNCHANGED, None)
            if rule.write is not None and rule.write != "expired":
                assert contract.ACK_RANK[rule.write] > contract.ACK_RANK.get(state, 0) or state == "expired"
    row = {"state": "sent", "expires_at": None, "next_send_at": None, "role": "cashier", "action_id": "a1"}
    assert contract.send_blocker(row, now) is None
    assert contract.send_blocker({**row, "expires_at": contract.iso(now)}, now) == "it expired"
    assert contract.send_blocker({**row, "state": "accepted"}, now) == "it is accepted"
    assert not contract.clear_due(row, now) and contract.clear_due(
        {**row, "state": "done", "next_send_at": contract.iso(now)}, now
    )
