"""RollupSource (the store's default source) on a real SQLite + sqlite-vec database.

Every expected number is computed in plain Python (tests/sqlsource_data.py) over the same seeded
events; a hypothesis test does the same over random rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import apsw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlsource_data import (
    STORES,
    T0,
    TYPES,
    DbStore,
    Ev,
    Reference,
    aggregate,
    as_dict,
    insert,
    random_events,
    same,
)

from edge.analysis.source import COMPONENTS, KEYS, EventFilter, EventSource, Period
from edge.errors import UnknownKeyError
from edge.memory.db.connect import connect
from edge.memory.db.migrations import migrate
from edge.memory.query.events_source import COMPONENT_SQL, pushdown_types
from edge.memory.query.rollup_source import RollupSource

ALL = tuple(COMPONENTS)
N = 1200


@pytest.fixture(scope="module")
def mem(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[RollupSource, Reference, apsw.Connection]]:
    conn = connect(tmp_path_factory.mktemp("source") / "s.db")
    migrate(conn)
    events = random_events(5, N)
    insert(conn, events)
    yield RollupSource(DbStore(conn)), Reference(events), conn
    conn.close()


def test_is_an_event_source(mem: tuple[RollupSource, Reference, apsw.Connection]) -> None:
    assert isinstance(mem[0], EventSource)
    assert set(COMPONENT_SQL) == set(COMPONENTS)


@pytest.mark.parametrize(
    "key", [k for k in KEYS if k not in ("event_id", "period")] + ["attr:topic", "attr:lane", "attr:vip"]
)
def test_every_key_with_every_component(
    mem: tuple[RollupSource, Reference, apsw.Connection], key: str
) -> None:
    src, ref, _ = mem
    got = src.aggregate(EventFilter(), [key], ALL)
    assert got.columns == (key, *ALL)
    same(as_dict(got, (key,)), aggregate(ref, EventFilter(), [key], ALL))


def test_no_keys_and_two_keys(mem: tuple[RollupSource, Reference, apsw.Connection]) -> None:
    src, ref, _ = mem
    flt = EventFilter(store_ids=("s1",), attributes=(("weather", ("rain", "sunny")),))
    same(as_dict(src.aggregate(flt, [], ALL), ()), aggregate(ref, flt, [], ALL))
    keys = ("weather", "is_weekend")
    same(as_dict(src.aggregate(flt, keys, ALL), keys), aggregate(ref, flt, keys, ALL))
    # nothing matches: no rows (not one row of zeros)
    assert src.aggregate(EventFilter(store_ids=("nowhere",)), [], ALL).rows == ()


@pytest.mark.parametrize(
    "components",
    [
        ("revenue", "bills"),
        ("footfall",),
        ("queue_sum", "queue_n", "dwell_n"),
        ("complaints", "staff_error_n", "staff_op_n"),
    ],
)
@pytest.mark.parametrize("keys", [("date",), ("weather",), ("promotion", "hour"), ()])
def test_event_type_pushdown_keeps_the_result(
    mem: tuple[RollupSource, Reference, apsw.Connection], keys: tuple[str, ...], components: tuple[str, ...]
) -> None:
    src, ref, conn = mem
    flt = EventFilter(since=T0 + timedelta(days=1))
    got = as_dict(src.aggregate(flt, keys, components), keys)
    same(got, aggregate(ref, flt, keys, components))
    # and the statement really restricts event types so (event_type, ts_epoch) can drive it
    types = pushdown_types(components)
    assert types is not None and set(types) <= set(TYPES)


def test_selective_filters(mem: tuple[RollupSource, Reference, apsw.Connection]) -> None:
    src, ref, _ = mem
    one = ref.events[17]
    for flt in (
        EventFilter(entities=("milk", "bread")),
        EventFilter(attributes=(("topic", ("退货",)), ("lane", (2,)))),
        EventFilter(event_ids=tuple(e.event_id for e in ref.events[:40])),
        EventFilter(key_equals=(("date", (one.date,)), ("store_id", (one.store_id,)))),
        EventFilter(hours=(one.local.hour,), days_of_week=(one.local.weekday(),), store_ids=(one.store_id,)),
        EventFilter(attributes=(("promotion", ("member_day",)),), event_types=("purchase", "customer_enter")),
    ):
        same(
            as_dict(src.aggregate(flt, ["event_type"], ALL), ("event_type",)),
            aggregate(ref, flt, ["event_type"], ALL),
        )


def test_periods_group_and_exclude(mem: tuple[RollupSource, Reference, apsw.Connection]) -> None:
    src, ref, _ = mem
    periods = (
        Period("before", T0, T0 + timedelta(days=2)),
        Period("after", T0 + timedelta(days=3), T0 + timedelta(days=5)),
    )
    got = as_dict(src.aggregate(EventFilter(), ["period"], ALL, periods), ("period",))
    want = aggregate(ref, EventFilter(), ["period"], ALL, periods)
    same(got, want)
    assert set(got) == {("before",), ("after",)}
    assert sum(v[0] for v in got.values()) < N  # events between the periods are left out
    with pytest.raises(UnknownKeyError):
        src.aggregate(EventFilter(), ["period"], ["events"])


def test_unknown_keys_and_components_raise_value_errors(
    mem: tuple[RollupSource, Reference, apsw.Connection],
) -> None:
    src = mem[0]
    with pytest.raises(ValueError, match="nope"):
        src.aggregate(EventFilter(), ["date"], ["nope"])
    with pytest.raises(ValueError, match="attr:x y"):
        src.aggregate(EventFilter(), ["attr:x y"], ["events"])
    with pytest.raises(ValueError):
        src.aggregate(EventFilter(), ["date); DROP TABLE events; --"], ["events"])


def test_sample_events_spread_and_total(mem: tuple[RollupSource, Reference, apsw.Connection]) -> None:
    src, ref, _ = mem
    flt = EventFilter(event_types=("purchase",))
    want = sorted(ref.select(flt), key=lambda e: (e.ts, e.rowid))
    rows, total = src.sample_events(flt, 10)
    assert total == len(want) and len(rows) == 10
    ts = [r.timestamp for r in rows]
    assert ts == sorted(ts, reverse=True)  # most recent first
    assert rows[0].event_id == want[-1].event_id and rows[-1].event_id == want[0].event_id
    # evenly spread by rank: the picks are the ranks 0, (n-1)/9, ... of the matching set
    picks = [want[(i * (len(want) - 1)) // 9].event_id for i in range(10)]
    assert [r.event_id for r in rows] == picks[::-1]
    first = rows[-1]
    assert first.raw_ref == (f"pos://{first.event_id}",) and first.stats == want[0].stats
    assert first.text == f"text of {first.event_id}"
    small, n = src.sample_events(EventFilter(event_ids=(want[3].event_id, want[1].event_id)), 10)
    assert n == 2 and [r.event_id for r in small] == [want[3].event_id, want[1].event_id]
    assert src.sample_events(EventFilter(store_ids=("nowhere",)), 5) == ([], 0)
    periods = (Period("p", T0 + timedelta(days=1), T0 + timedelta(days=2)),)
    rows, total = src.sample_events(flt, 3, periods)
    assert total == len(ref.select(flt, periods))
    assert all(
        T0 + timedelta(days=1) <= datetime.fromisoformat(r.timestamp) < T0 + timedelta(days=2) for r in rows
    )


def test_coverage_ignores_the_time_window(mem: tuple[RollupSource, Reference, apsw.Connection]) -> None:
    src, ref, _ = mem
    flt = EventFilter(event_types=("complaint",), since=T0 + timedelta(days=2), until=T0 + timedelta(days=3))
    cov = src.coverage(flt)
    evs = ref.select(flt.narrowed(since=None, until=None))
    assert cov.count == len(evs)
    assert cov.earliest == min(e.ts for e in evs) and cov.latest == max(e.ts for e in evs)
    assert cov.earliest is not None and cov.earliest.tzinfo is not None
    empty = src.coverage(EventFilter(store_ids=("nowhere",)))
    assert (empty.earliest, empty.latest, empty.count) == (None, None, 0)


def test_vocabulary_and_its_cache(tmp_path: Path) -> None:
    conn = connect(tmp_path / "v.db")
    migrate(conn)
    events = random_events(9, 300)
    insert(conn, events)
    src = RollupSource(DbStore(conn))
    v = src.vocabulary()
    assert v.timezone == STORES["s1"]
    assert v.store_ids == ("s1", "s2")
    assert set(v.event_types) == {e.event_type for e in events}
    counts: dict[str, int] = {}
    for e in events:
        counts[e.event_type] = counts.get(e.event_type, 0) + 1
    assert counts[v.event_types[0]] == max(counts.values())  # most frequent first
    assert set(v.attributes["weather"]) == {"rain", "sunny", "cloudy"}
    assert set(v.attributes["topic"]) == {"returns", "price", "退货"}
    assert set(v.attributes["promotion"]) <= {"true", "false", "member_day"}
    assert "lane" in v.attributes and v.attributes["lane"] == ()  # numeric: key known, no words
    assert set(v.entities) == {x for e in events for x in e.entities}
    assert v.earliest == min(e.ts for e in events) and v.latest == max(e.ts for e in events)
    assert src.vocabulary() is v  # unchanged memory: cached
    assert RollupSource(src.store).vocabulary() is v  # per store, not per source object
    insert(conn, [Ev("late", "s2", T0 + timedelta(days=30), "new_type", {"topic": "fresh"})])
    v2 = src.vocabulary()
    assert v2 is not v and v2.event_types[-1] == "new_type" and "fresh" in v2.attributes["topic"]
    conn.close()


def test_embed_texts_delegates(mem: tuple[RollupSource, Reference, apsw.Connection]) -> None:
    assert mem[0].embed_texts(["x"]) is None


# -- hypothesis: aggregate() against plain Python over random rows ----------------------------------

_ev = st.builds(
    lambda i, store, minutes, et, w, promo, amount, bill, pc, emo, lane: Ev(
        f"h{i}",
        store,
        T0 + timedelta(minutes=minutes),
        et,
        {
            k: v
            for k, v in {
                "weather": w,
                "promotion": promo,
                "order_amount": amount if et == "purchase" else None,
                "bill_id": bill if et == "purchase" else None,
                "person_count": pc if et == "customer_enter" else None,
                "speech_emotion": emo,
                "lane": lane,
            }.items()
            if v is not None
        },
    ),
    st.integers(),
    st.sampled_from(tuple(STORES)),
    st.integers(0, 4 * 24 * 60),
    st.sampled_from(("purchase", "customer_enter", "complaint", "promotion_broadcast")),
    st.sampled_from((None, "rain", "sunny")),
    st.sampled_from((None, True, False, "sale")),
    st.one_of(st.none(), st.floats(0, 1000, allow_nan=False)),
    st.sampled_from((None, "b1", "b2")),
    st.one_of(st.none(), st.integers(0, 5)),
    st.sampled_from((None, "angry", "neutral")),
    st.one_of(st.none(), st.integers(0, 2)),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    evs=st.lists(_ev, min_size=0, max_size=40),
    keys=st.lists(
        st.sampled_from(("date", "weather", "promotion", "hour", "store_id", "attr:lane", "bill")),
        max_size=2,
        unique=True,
    ),
    comps=st.lists(st.sampled_from(ALL), min_size=1, max_size=4, unique=True),
    weather=st.sampled_from((None, "rain", "sunny")),
)
def test_aggregate_matches_python(
    tmp_path_factory: pytest.TempPathFactory,
    evs: list[Ev],
    keys: list[str],
    comps: list[str],
    weather: str | None,
) -> None:
    for i, e in enumerate(evs):
        e.event_id = f"h{i}"
    conn = connect(":memory:")
    try:
        migrate(conn)
        insert(conn, evs)
        flt = EventFilter(attributes=(("weather", (weather,)),)) if weather else EventFilter()
        got = as_dict(RollupSource(DbStore(conn)).aggregate(flt, keys, comps), tuple(keys))
        same(got, aggregate(Reference(evs), flt, keys, comps))
    finally:
        conn.close()


def test_typed_components_let_the_type_time_index_drive(
    mem: tuple[RollupSource, Reference, apsw.Connection],
) -> None:
    src, _, conn = mem
    flt = EventFilter(since=datetime(2025, 11, 2, tzinfo=UTC))
    typed = src.aggregate_sql(flt, ["date"], ["revenue", "bills"])
    plan = " | ".join(str(r[3]) for r in conn.execute("EXPLAIN QUERY PLAN " + typed.sql, typed.params))
    assert "events_type_time" in plan, plan
    untyped = src.aggregate_sql(flt, ["date"], ["revenue", "events"])
    assert "e.event_type IN" not in untyped.sql


def test_through_the_store_import_path(tmp_path: Path) -> None:
    """The same answers when the events come in through ``Store.import_events`` (the import path)."""
    from edge.memory.store import Store

    events = random_events(11, 400)
    store = Store.open(tmp_path / "store.db", timezone="UTC")
    try:
        for sid, tz in STORES.items():
            mevs = [
                {
                    "event_id": e.event_id,
                    "timestamp": e.ts.isoformat(),
                    "store_id": e.store_id,
                    "event_type": e.event_type,
                    "modality": ["pos"],
                    "raw_ref": [f"pos://{e.event_id}"],
                    **({"source": e.source} if e.source else {}),
                    **({"entities": list(e.entities)} if e.entities else {}),
                    "stats": e.stats,
                }
                for e in events
                if e.store_id == sid
            ]
            report = store.import_events(mevs, default_store_tz=tz)
            assert report.as_dict()["accepted"] == len(mevs)
        src = store.event_source()
        assert isinstance(src, RollupSource)
        ref = Reference(events)
        for keys in (("date", "store_id"), ("weather",), ("promotion",), ("attr:topic",)):
            same(
                as_dict(src.aggregate(EventFilter(), keys, ALL), keys),
                aggregate(ref, EventFilter(), keys, ALL),
            )
        flt = EventFilter(attributes=(("vip", (True,)),), entities=("milk",))
        same(as_dict(src.aggregate(flt, [], ALL), ()), aggregate(ref, flt, [], ALL))
        rows, total = src.sample_events(EventFilter(event_types=("purchase",)), 5)
        assert total == len(ref.select(EventFilter(event_types=("purchase",)))) and len(rows) == 5
        assert rows[0].raw_ref == (f"pos://{rows[0].event_id}",)
        assert src.vocabulary().store_ids == ("s1", "s2")
        # retrieve is the hybrid retrieval; without text it ranks the survivors newest first
        hits = src.retrieve(None, EventFilter(event_types=("complaint",), store_ids=("s2",)), 3)
        want = sorted(
            ref.select(EventFilter(event_types=("complaint",), store_ids=("s2",))), key=lambda e: e.ts
        )
        assert [h.event_id for h in hits] == [e.event_id for e in want[::-1][:3]]
    finally:
        store.close()
