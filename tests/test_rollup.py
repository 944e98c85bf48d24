"""The hourly rollup (edge.memory.rollup.build) against the event-level SQL on random data.

Every answer the SQL EventSource reads from the rollup is compared with the same source answering
from the events (``EventsSource``), on seeded random events whose bills cross hours, days and
categories; then freshness: incremental refreshes after new events, full rebuilds after a delete
or an ``import --replace``.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import apsw
import pytest
from sqlsource_data import STORES, T0, DbStore, Ev, as_dict, insert, random_events, same

from edge.analysis.source import COMPONENTS, EventFilter, Period
from edge.memory.db.connect import connect
from edge.memory.db.migrations import migrate
from edge.memory.query.events_source import EventsSource
from edge.memory.query.rollup_source import RollupSource
from edge.memory.rollup import build as rollup
from edge.memory.rollup import query as rollup_query

ALL = tuple(COMPONENTS)
ROLLUP_KEYS = (
    "store_id",
    "date",
    "week",
    "month",
    "hour",
    "day_of_week",
    "is_weekend",
    "date_hour",
    "event_type",
    "weather",
    "promotion",
    "zone",
    "product_category",
    "attr:weather",
    "attr:zone",
)


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[tuple[apsw.Connection, RollupSource, EventsSource]]:
    conn = connect(tmp_path / "r.db")
    migrate(conn)
    insert(conn, random_events(7, 1500))
    store = DbStore(conn)
    yield conn, RollupSource(store), EventsSource(store)
    conn.close()


def _hour(h: int) -> datetime:
    return T0 + timedelta(hours=h)


def _filters() -> list[tuple[EventFilter, tuple[Period, ...]]]:
    return [
        (EventFilter(), ()),
        (EventFilter(event_types=("purchase",)), ()),
        (EventFilter(store_ids=("s2",), since=_hour(30), until=_hour(100)), ()),
        (EventFilter(attributes=(("weather", ("rain",)),)), ()),
        (EventFilter(attributes=(("promotion", (True,)),), hours=(9, 10, 11)), ()),
        (EventFilter(attributes=(("promotion", ("member_day",)),)), ()),
        (EventFilter(attributes=(("product_category", ("drinks",)),)), ()),
        (EventFilter(attributes=(("product_category", ("drinks", "snacks")),)), ()),
        (EventFilter(days_of_week=(5, 6), attributes=(("zone", ("checkout",)),)), ()),
        (EventFilter(key_equals=(("weather", ("sunny", None)), ("is_weekend", (True,)))), ()),
        (EventFilter(key_equals=(("date_hour", ("2025-11-02T10", "2025-11-03T20")),)), ()),
        (
            EventFilter(),
            (Period("a", _hour(0), _hour(48)), Period("b", _hour(48), _hour(200))),
        ),
    ]


def test_aggregate_matches_the_event_level_sql(
    mem: tuple[apsw.Connection, RollupSource, EventsSource],
) -> None:
    conn, fast, slow = mem
    rng = random.Random(3)
    answered: list[bool] = []  # whether each fast aggregation came from the rollup (a pass-through spy)
    from_rollup = fast._aggregate_rollup

    def spy(*args: Any, **kwargs: Any) -> Any:
        got = from_rollup(*args, **kwargs)
        answered.append(got is not None)
        return got

    fast._aggregate_rollup = spy  # type: ignore[method-assign]
    for flt, periods in _filters():
        answered.clear()
        pool = [*ROLLUP_KEYS, "period"] if periods else list(ROLLUP_KEYS)
        for _ in range(6):
            keys = rng.sample(pool, rng.randint(0, 2))
            comps = rng.sample(ALL, rng.randint(1, 6))
            same(
                as_dict(fast.aggregate(flt, keys, comps, periods), keys),
                as_dict(slow.aggregate(flt, keys, comps, periods), keys),
            )
        # and every component at once, by the keys the operators use most
        for keys in ([], ["date"], ["weather"], ["product_category"], ["hour", "promotion"]):
            same(
                as_dict(fast.aggregate(flt, keys, ALL, periods), keys),
                as_dict(slow.aggregate(flt, keys, ALL, periods), keys),
            )
        assert any(answered), f"the rollup never answered for {flt} {periods}: the comparison proved nothing"
    st = rollup.state(conn)
    assert st is not None and not st.stale and st.split_bills > 0  # split bills were exercised


def test_the_rollup_answers_what_it_can_and_falls_back_otherwise(
    mem: tuple[apsw.Connection, RollupSource, EventsSource],
) -> None:
    conn, fast, _ = mem
    st = fast.rollup_state()
    assert st is not None
    expressible = EventFilter(event_types=("purchase",), since=_hour(24), until=_hour(72))
    assert rollup_query.compile_where(conn, expressible, (), st) is not None
    # a bound inside an hour cuts rows in two; entities and non-well-known keys are not rolled up
    (lo, hi) = conn.execute(  # type: ignore[misc]
        "SELECT ts_epoch, max_epoch FROM rollup_hourly WHERE max_epoch - ts_epoch > 60 LIMIT 1"
    ).fetchone()
    inside = datetime.fromtimestamp((lo + hi) / 2, UTC)
    assert rollup_query.compile_where(conn, EventFilter(since=inside), (), st) is None
    assert rollup_query.compile_where(conn, EventFilter(), (Period("p", None, inside),), st) is None
    assert rollup_query.compile_where(conn, EventFilter(entities=("milk",)), (), st) is None
    assert rollup_query.compile_where(conn, EventFilter(attributes=(("topic", ("price",)),)), (), st) is None
    assert rollup_query.key_sql("attr:lane", ()) is None and rollup_query.key_sql("bill", ()) is None


def test_fallback_cases_still_match(mem: tuple[apsw.Connection, RollupSource, EventsSource]) -> None:
    conn, fast, slow = mem
    assert fast.rollup_state() is not None
    (lo, hi) = conn.execute(  # type: ignore[misc]
        "SELECT ts_epoch, max_epoch FROM rollup_hourly WHERE max_epoch - ts_epoch > 60 LIMIT 1"
    ).fetchone()
    inside = datetime.fromtimestamp((lo + hi) / 2, UTC)
    for flt, keys in (
        (EventFilter(since=inside), ["date"]),
        (EventFilter(entities=("milk",)), ["weather"]),
        (EventFilter(), ["attr:lane"]),
        (EventFilter(), ["source"]),
    ):
        same(
            as_dict(fast.aggregate(flt, keys, ALL), keys),
            as_dict(slow.aggregate(flt, keys, ALL), keys),
        )


def test_coverage_and_bill_stats_match(mem: tuple[apsw.Connection, RollupSource, EventsSource]) -> None:
    _, fast, slow = mem
    for flt, periods in _filters():
        assert fast.coverage(flt) == slow.coverage(flt)
        for key in ("weather", "promotion", "hour", "product_category", "is_weekend"):
            same_bills(fast.bill_stats(flt, key, ()), slow.bill_stats(flt, key, ()))
        if periods:
            same_bills(fast.bill_stats(flt, "period", periods), slow.bill_stats(flt, "period", periods))


def same_bills(got: dict[Any, tuple[int, float, float]], want: dict[Any, tuple[int, float, float]]) -> None:
    """Equal bill counts, sums and sums of squares per group."""
    assert set(got) == set(want)
    for g, (n, s, q) in want.items():
        assert got[g][0] == n, g
        assert got[g][1] == pytest.approx(s, rel=1e-9, abs=1e-6), g
        assert got[g][2] == pytest.approx(q, rel=1e-9, abs=1e-6), g


def test_sample_many_cites_matching_events(
    mem: tuple[apsw.Connection, RollupSource, EventsSource],
) -> None:
    _, fast, slow = mem
    requests = [(flt, periods, 4) for flt, periods in _filters()]
    requests.append((EventFilter(entities=("milk",)), (), 3))  # not expressible: sample_events
    requests.append((EventFilter(store_ids=("nowhere",)), (), 3))
    batches = fast.sample_many(requests)
    assert len(batches) == len(requests)
    for (flt, periods, limit), rows in zip(requests, batches, strict=True):
        _, total = slow.sample_events(flt, 0, periods)
        assert len(rows) == min(limit, total) or (total > limit and 1 <= len(rows) <= limit)
        ts = [r.timestamp for r in rows]
        assert ts == sorted(ts, reverse=True)
        allowed = {r.event_id for r in slow.sample_events(flt, total, periods)[0]}
        assert {r.event_id for r in rows} <= allowed
    assert batches[-1] == []


def test_incremental_refresh_then_stale_after_delete(
    mem: tuple[apsw.Connection, RollupSource, EventsSource],
) -> None:
    conn, fast, slow = mem
    assert fast.rollup_state() is not None
    (before,) = conn.execute("SELECT count(*) FROM rollup_hourly").fetchone()  # type: ignore[misc]
    # new events on one day, one of them extending an old bill to another hour and day
    (old_bill,) = conn.execute(  # type: ignore[misc]
        "SELECT bill_id FROM events WHERE bill_id IS NOT NULL ORDER BY id LIMIT 1"
    ).fetchone()
    new = [
        Ev(f"new{i}", "s1", T0 + timedelta(days=3, hours=2, minutes=i), "purchase", stats)
        for i, stats in enumerate(
            [
                {"order_amount": 10.0, "bill_id": old_bill, "weather": "rain", "product_category": "drinks"},
                {"order_amount": 5.5, "bill_id": "fresh", "product_category": "snacks"},
                {"order_amount": 7.0},
            ]
        )
    ]
    insert(conn, new)
    assert not rollup.is_fresh(conn)
    with conn:
        assert rollup.refresh(conn) == "incremental"
    assert rollup.is_fresh(conn)
    for keys in ([], ["date"], ["weather", "hour"], ["product_category"]):
        same(
            as_dict(fast.aggregate(EventFilter(), keys, ALL), keys),
            as_dict(slow.aggregate(EventFilter(), keys, ALL), keys),
        )
    same_bills(fast.bill_stats(EventFilter(), "weather"), slow.bill_stats(EventFilter(), "weather"))

    # a rebuilt rollup equals the incrementally maintained one
    def table(name: str) -> dict[tuple[Any, ...], tuple[Any, ...]]:
        dims = len(rollup.DIMENSIONS)
        return {tuple(r[:dims]): tuple(r[dims:]) for r in conn.execute(f"SELECT * FROM {name}")}

    incremental = {t: table(t) for t in (rollup.TABLE, rollup.COARSE)}
    assert len(incremental[rollup.TABLE]) > before > len(incremental[rollup.COARSE]) > 0
    conn.execute("UPDATE rollup_state SET stale = 1")
    assert rollup.refresh(conn) == "rebuilt"
    for t in (rollup.TABLE, rollup.COARSE):
        same(incremental[t], table(t))
    # deleting (or changing) aggregated events marks the rollup stale: the next answer rebuilds it
    with conn:
        conn.execute("DELETE FROM events WHERE event_type = 'complaint' AND store_id = 's1'")
    st = rollup.state(conn)
    assert st is not None and st.stale
    same(
        as_dict(fast.aggregate(EventFilter(), ["event_type"], ALL), ["event_type"]),
        as_dict(slow.aggregate(EventFilter(), ["event_type"], ALL), ["event_type"]),
    )
    st = rollup.state(conn)
    assert st is not None and not st.stale
    with conn:
        conn.execute("UPDATE events SET order_amount = order_amount + 1 WHERE event_type = 'purchase'")
    assert rollup.state(conn).stale  # type: ignore[union-attr]
    with conn:
        conn.execute("UPDATE events SET tier = 'cold'")  # not an aggregated column
    rollup.refresh(conn)
    with conn:
        conn.execute("UPDATE events SET tier = 'hot'")
    assert rollup.is_fresh(conn)


def test_through_the_store_with_replace(tmp_path: Path) -> None:
    """The store's writer refreshes the rollup; ``import --replace`` makes it rebuild."""
    from edge.memory.store import Store

    def mev(i: int, amount: float) -> dict[str, Any]:
        return {
            "event_id": f"e{i}",
            "timestamp": (T0 + timedelta(minutes=37 * i)).isoformat(),
            "store_id": "s1",
            "event_type": "purchase",
            "modality": ["pos"],
            "raw_ref": [f"pos://e{i}"],
            "stats": {
                "order_amount": amount,
                "bill_id": f"b{i // 3}",
                "weather": "rain" if i % 5 else "sunny",
            },
        }

    store = Store.open(tmp_path / "s.db", timezone=STORES["s1"])
    try:
        store.import_events([mev(i, 10.0 + i) for i in range(60)])
        src = store.event_source()
        assert isinstance(src, RollupSource)
        slow = EventsSource(store)
        flt = EventFilter(since=datetime(2025, 11, 1, tzinfo=UTC))
        assert src.aggregate(flt, ["weather"], ALL) == slow.aggregate(flt, ["weather"], ALL)
        assert src.rollup_state() is not None
        report = store.import_events([mev(i, 99.0) for i in range(0, 60, 7)], replace=True)
        assert report.as_dict()["accepted"] == 9
        with store.read() as conn:
            st = rollup.state(conn)
            assert st is not None and st.stale
        same(
            as_dict(src.aggregate(flt, ["weather"], ALL), ["weather"]),
            as_dict(slow.aggregate(flt, ["weather"], ALL), ["weather"]),
        )
        with store.read() as conn:
            assert rollup.is_fresh(conn)
    finally:
        store.close()


def test_order_value_welch_from_moments_matches_the_test_on_bill_totals(
    mem: tuple[apsw.Connection, RollupSource, EventsSource],
) -> None:
    from scipy import stats

    from edge.analysis import metrics as M

    _, fast, slow = mem
    raw = M.bill_totals(slow, EventFilter(), "weather")
    moments = M.bill_moments(fast, EventFilter(), "weather")
    for g, totals in raw.items():
        assert moments[g][0] == len(totals)
    a, b = "rain", "sunny"
    want = stats.ttest_ind(raw[a], raw[b], equal_var=False).pvalue
    (ma, sa), (mb, sb) = M.mean_std(*moments[a]), M.mean_std(*moments[b])
    got = stats.ttest_ind_from_stats(ma, sa, moments[a][0], mb, sb, moments[b][0], equal_var=False).pvalue
    assert got == pytest.approx(want, rel=1e-6)
