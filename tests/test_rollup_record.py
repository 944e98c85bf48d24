"""A closed day's rollup is its whole record: split bills included, no event needed.

Days are closed (``rollup.close_days`` through the store's writer), every event of those days is
deleted (SQL through the writer, as the cold tier will), and every operator over the store's
rollup source answers as it did before the delete (additive values exactly, means within 1e-9
relative); the bill statistics of compare/correlation too. The data are seeded synthetic events
plus bills built to be split: across an hour boundary, across product categories, and across a
store-local midnight (one on the closing cut itself, half closed and half open). A strict source
then says what its record cannot express instead of reading events.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlsource_data import STORES, T0, Ev, as_dict, insert, random_events, same
from test_source_contract import ALL_PLANS, NOW, same_answer

from edge.analysis.engine import run_plan
from edge.analysis.source import EventFilter, Period
from edge.analysis.testing import InMemorySource
from edge.config import AnalysisConfig
from edge.errors import NotInRecordError
from edge.memory.db.connect import connect
from edge.memory.db.migrations import migrate
from edge.memory.query.rollup_source import RollupSource
from edge.memory.rollup import build as rollup
from edge.memory.store import Store

DAYS = 20
#: the first open day in each store (days before it are closed)
CUT = (T0 + timedelta(days=DAYS // 2)).date().isoformat()

#: plans about orders and their value, besides the contract test's plans
BILL_PLANS: dict[str, dict[str, Any]] = {
    "orders_by_day": {"intent": "trend", "target_metric": "order_count", "time_bucket": "day"},
    "aov_by_hour": {"intent": "breakdown", "target_metric": "avg_order_value", "group_by": ["hour"]},
    "aov_by_category": {
        "intent": "compare",
        "target_metric": "avg_order_value",
        "compare": {"dimension": "product_category", "groups": ["drinks", "snacks"]},
    },
    "orders_by_category": {
        "intent": "breakdown",
        "target_metric": "order_count",
        "group_by": ["product_category"],
    },
    "conversion_by_store": {"intent": "top_k", "target_metric": "conversion_rate", "group_by": ["store_id"]},
    "aov_total": {"intent": "aggregate", "target_metric": "avg_order_value"},
    "aov_rain": {
        "intent": "aggregate",
        "target_metric": "avg_order_value",
        "filters": {"attributes": {"weather": "rain"}},
    },
    "aov_vs_footfall": {
        "intent": "correlation",
        "target_metric": "avg_order_value",
        "second_metric": "footfall",
    },
    "aov_weekend": {
        "intent": "compare",
        "target_metric": "avg_order_value",
        "compare": {"dimension": "is_weekend", "groups": ["true", "false"]},
    },
}
#: event-level plans: retrieval ranks the events that are left, co-occurrence pairs single events
EVENT_LEVEL = ("retrieve", "co_occurrence")
PLANS = {k: v for k, v in {**ALL_PLANS, **BILL_PLANS}.items() if k not in EVENT_LEVEL}


def _local(store: str, day: str, hh: int, mm: int, ss: int = 0) -> Any:
    from datetime import datetime
    from zoneinfo import ZoneInfo

    y, m, d = (int(x) for x in day.split("-"))
    return datetime(y, m, d, hh, mm, ss, tzinfo=ZoneInfo(STORES[store])).astimezone(T0.tzinfo)


def split_bills() -> list[Ev]:
    """Bills whose lines fall into several rollup rows, with known totals."""
    day_before = (T0 + timedelta(days=DAYS // 2 - 1)).date().isoformat()
    early = (T0 + timedelta(days=3)).date().isoformat()
    early_next = (T0 + timedelta(days=4)).date().isoformat()
    out: list[Ev] = []

    def line(bill: str, i: int, store: str, ts: Any, amount: float, category: str) -> None:
        stats = {"bill_id": bill, "order_amount": amount, "product_category": category, "product_id": "p1"}
        out.append(Ev(f"{bill}-{i}", store, ts, "purchase", stats))

    # across an hour boundary (closed day), one category
    line("XH", 0, "s1", _local("s1", early, 10, 59, 50), 12.5, "drinks")
    line("XH", 1, "s1", _local("s1", early, 11, 0, 10), 7.25, "drinks")
    # several categories in one hour, and the same bill again in the next hour (closed day)
    line("XC", 0, "s1", _local("s1", early, 15, 10), 3.0, "drinks")
    line("XC", 1, "s1", _local("s1", early, 15, 12), 4.5, "snacks")
    line("XC", 2, "s1", _local("s1", early, 16, 1), 9.0, "snacks")
    # several categories, one hour: not split, but in two fine rows (bills_row per category)
    line("XK", 0, "s2", _local("s2", early, 9, 30), 20.0, "drinks")
    line("XK", 1, "s2", _local("s2", early, 9, 31), 30.0, "snacks")
    # across a store-local midnight within the closed days
    line("XM", 0, "s2", _local("s2", early, 23, 59, 30), 11.0, "drinks")
    line("XM", 1, "s2", _local("s2", early_next, 0, 0, 30), 13.0, "snacks")
    # across the closing cut: its first line is closed (and deleted), its second open
    line("XD", 0, "s2", _local("s2", day_before, 23, 58), 40.0, "drinks")
    line("XD", 1, "s2", _local("s2", CUT, 0, 1), 2.0, "drinks")
    line("XE", 0, "s1", _local("s1", day_before, 23, 59), 5.0, "snacks")
    line("XE", 1, "s1", _local("s1", CUT, 0, 0, 1), 6.0, "drinks")
    return out


@pytest.fixture(scope="module")
def data() -> list[Ev]:
    return random_events(23, 4000, days=DAYS) + split_bills()


@pytest.fixture
def store(tmp_path: Path, data: list[Ev]) -> Iterator[Store]:
    path = tmp_path / "record.db"
    conn = connect(path)
    migrate(conn)
    insert(conn, data)
    conn.close()
    st = Store.open(path)
    yield st
    st.close()


def _ask(source: Any, plan: dict[str, Any]) -> dict[str, Any]:
    return run_plan(plan, source, question="q", now=NOW, config=AnalysisConfig(), language="en")


def _close_and_delete(store: Store) -> int:
    """Close the days before CUT and delete every one of their events, through the writer."""
    assert store.writer.submit(lambda c: rollup.close_days(c, CUT)).result() > 0

    def delete(conn: Any) -> int:
        with conn:
            conn.execute(
                "DELETE FROM events WHERE EXISTS (SELECT 1 FROM rollup_days AS d WHERE d.state = 'closed' "
                "AND d.store_id = events.store_id AND d.local_date = events.local_date)"
            )
            return int(conn.changes())

    gone = store.writer.submit(delete).result()
    with store.read() as conn:
        (left,) = conn.execute("SELECT count(*) FROM events WHERE local_date < ?", (CUT,)).fetchone()
    assert gone > 0 and left == 0
    return gone


#: port-level questions about bills: (filter, keys) for the ``bills`` component, and bill_stats keys
BILL_QUESTIONS: list[tuple[EventFilter, tuple[str, ...]]] = [
    (EventFilter(), ()),
    (EventFilter(), ("date",)),
    (EventFilter(), ("store_id", "hour")),
    (EventFilter(), ("product_category",)),
    (EventFilter(), ("date_hour",)),
    (EventFilter(attributes=(("product_category", ("snacks",)),)), ("date",)),
    (EventFilter(store_ids=("s2",)), ("weather", "is_weekend")),
]
STAT_KEYS = ("store_id", "date", "hour", "product_category", "weather", "is_weekend", "month")


def _bill_answers(src: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i, (flt, keys) in enumerate(BILL_QUESTIONS):
        out[f"bills{i}"] = as_dict(src.aggregate(flt, keys, ["bills", "revenue", "purchase_events"]), keys)
    for key in STAT_KEYS:
        out[f"stats:{key}"] = {(g,): v for g, v in src.bill_stats(EventFilter(), key).items()}
    periods = (
        Period("a", T0, T0 + timedelta(days=DAYS // 2)),
        Period("b", T0 + timedelta(days=DAYS // 2), None),
    )
    out["periods"] = as_dict(src.aggregate(EventFilter(), ["period"], ["bills"], periods), ["period"])
    out["stats:period"] = {(g,): v for g, v in src.bill_stats(EventFilter(), "period", periods).items()}
    return out


def test_the_split_bills_are_in_the_rollup_and_agree_with_the_definitions(
    store: Store, data: list[Ev]
) -> None:
    """Before anything is deleted: the rollup's bill answers equal the plain-Python definitions
    (InMemorySource, computed without SQL) for every bill question."""
    src = store.event_source()
    ref = InMemorySource(data, STORES, timezone=STORES["s1"])
    got, want = _bill_answers(src), _bill_answers(ref)
    for name in want:
        same(got[name], want[name])
    st = src.rollup_state()
    assert st is not None and st.split_bills > 0
    with store.read() as conn:
        parts = {r[0] for r in conn.execute(f"SELECT DISTINCT bill_id FROM {rollup.PARTS}")}
    assert {"XH", "XC", "XM", "XD", "XE"} <= parts and "XK" not in parts


def test_closed_days_answer_every_bill_question_after_their_events_are_deleted(store: Store) -> None:
    src = store.event_source()
    before = _bill_answers(src)
    _close_and_delete(store)
    strict = RollupSource(store, writer=store.writer, strict=True)
    for s in (src, strict):
        after = _bill_answers(s)
        for name in before:
            same(after[name], before[name])

    # a full rebuild of the open days keeps the bills half in a closed day split (XD, XE): their
    # open-day lines stay parts, so each is still counted once
    def rebuild(conn: Any) -> str:
        with conn:
            conn.execute("UPDATE rollup_state SET stale = 1")
        return rollup.refresh(conn)

    assert store.writer.submit(rebuild).result() == "rebuilt"
    with store.read() as conn:
        split = {r[0] for r in conn.execute("SELECT bill_id FROM rollup_split_bills")}
    assert {"XD", "XE"} <= split
    after = _bill_answers(strict)
    for name in before:
        same(after[name], before[name])


def test_every_operator_answers_the_same_after_the_closed_days_events_are_deleted(store: Store) -> None:
    src = store.event_source()
    before = {n: _ask(src, p) for n, p in PLANS.items()}
    assert sum(b["status"] == "ok" for b in before.values()) >= len(PLANS) - 3, {
        n: b.get("missing") for n, b in before.items() if b["status"] != "ok"
    }
    _close_and_delete(store)
    strict = RollupSource(store, writer=store.writer, strict=True)
    for s in (src, strict):
        for n, plan in PLANS.items():
            after = _ask(s, plan)
            want = before[n]
            if want["status"] == "ok" and after["status"] == "insufficient_data":
                # the result is the same; only evidence of deleted events cannot be cited
                assert any("cited" in m for m in after["missing"]), (n, after["missing"])
                continue
            assert after["status"] == want["status"], (n, after.get("missing"))
            same_answer(after["result"], want["result"], n)
            assert after["confidence"] == pytest.approx(want["confidence"], rel=1e-9), n


def test_a_strict_source_says_what_its_record_cannot_express(store: Store) -> None:
    _close_and_delete(store)
    strict = RollupSource(store, writer=store.writer, strict=True)
    lax = RollupSource(store, writer=store.writer, strict=False)
    # the memory's own source is the strict one: a closed day's events may be in the cold archive
    with pytest.raises(NotInRecordError, match="product_id"):
        store.event_source().aggregate(EventFilter(), ["product_id"], ["revenue"])
    # per-event detail over closed days: refused, not read from what is left of the events
    with pytest.raises(NotInRecordError, match="product_id"):
        strict.aggregate(EventFilter(), ["product_id"], ["revenue"])
    with pytest.raises(NotInRecordError, match="staff_id"):
        strict.coverage(EventFilter(attributes=(("staff_id", ("w1",)),)))
    with pytest.raises(NotInRecordError):
        strict.bill_stats(EventFilter(attributes=(("product_category", ("drinks", "snacks")),)), "date")
    # the lax source reads the events that are left (open days only)
    assert lax.aggregate(EventFilter(), ["product_id"], ["revenue"]).rows
    # the same detail over open days only is read from their events
    open_only = EventFilter(since=T0 + timedelta(days=DAYS // 2 + 2))
    assert strict.aggregate(open_only, ["product_id"], ["revenue"]).rows
    # through the engine: insufficient_data, with the reason
    plan = {"intent": "top_k", "target_metric": "revenue", "group_by": ["product_id"], "top_k": 2}
    p = _ask(strict, plan)
    assert p["status"] == "insufficient_data" and p["result"] == {}
    assert any("closed days" in m for m in p["missing"]), p["missing"]
    zh = run_plan(plan, strict, question="q", now=NOW, config=AnalysisConfig(), language="zh")
    assert any("已结账" in m for m in zh["missing"]), zh["missing"]


def test_days_closed_before_the_bill_parts_get_them_from_their_events(tmp_path: Path, data: list[Ev]) -> None:
    """A memory whose days were closed before migration 0008: the next refresh rebuilds those
    closed days in place from their (still present) events, split bills' parts included."""
    conn = connect(tmp_path / "old.db")
    migrate(conn)
    insert(conn, data)
    rollup.close_days(conn, CUT)
    with conn:  # as if closed before 0008: no parts, no bill_sq_row, the day not marked
        conn.execute(f"DELETE FROM {rollup.PARTS}")
        conn.execute("UPDATE rollup_hourly SET bill_sq_row = 0")
        conn.execute("UPDATE rollup_days SET bill_parts = 0")
        conn.execute("UPDATE rollup_state SET stale = 1")
    rollup.refresh(conn)
    (marked,) = conn.execute("SELECT min(bill_parts) FROM rollup_days").fetchone()
    assert marked == 1
    ref = InMemorySource(data, STORES, timezone=STORES["s1"])
    src = RollupSource(_Conn(conn))
    got, want = _bill_answers(src), _bill_answers(ref)
    for name in want:
        same(got[name], want[name])
    conn.close()


class _Conn:
    """A bare connection holder (the rollup refreshes on its read connection)."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def read(self) -> Any:
        import contextlib

        @contextlib.contextmanager
        def cm() -> Iterator[Any]:
            yield self.conn

        return cm()

    def timezone(self, store_id: str | None = None) -> str:
        return STORES.get(store_id or "s1", "UTC")

    def embed_texts(self, texts: Any) -> None:
        return None


def test_the_rollup_columns_are_the_builders(tmp_path: Path) -> None:
    """Migration 0005 made the rollup tables with build.py's DIMENSIONS + MEASURES (as they were
    then); every later migration adds columns build.py names; the bill parts table is PART_COLUMNS."""
    from edge.memory.db import migrations

    conn = connect(tmp_path / "cols.db")
    names = [n for n, _ in migrations.MIGRATIONS]
    with conn:
        for _name, sql in migrations.MIGRATIONS[: names.index("0005_hourly_rollup") + 1]:
            conn.execute(sql)

    def cols(table: str) -> list[str]:
        return [str(r[1]) for r in conn.execute(f"PRAGMA table_info({table})")]

    later = ("bill_sq_row",)  # measures added after 0005, in migration order
    v5 = [m for m in rollup.MEASURES if m not in later]
    for table in (rollup.TABLE, rollup.COARSE):
        assert cols(table) == [*rollup.DIMENSIONS, *v5], table
    conn.close()
    conn = connect(tmp_path / "all.db")
    migrate(conn)
    for table in (rollup.TABLE, rollup.COARSE):
        assert sorted(cols(table)) == sorted([*rollup.DIMENSIONS, *rollup.MEASURES, *rollup.EVENT_ID_COLUMNS])
    assert cols(rollup.PARTS) == list(rollup.PART_COLUMNS)
    conn.close()
