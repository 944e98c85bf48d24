"""The one filter compiler (edge.memory.query.filters) on a real SQLite + sqlite-vec database.

Expected sets come from the plain-Python reference in tests/sqlsource_data.py over the same
seeded events, never from the SQL under test.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import apsw
import pytest
from sqlsource_data import T0, Ev, Reference, insert, random_events

from edge.analysis.source import KEYS, EventFilter, Period
from edge.errors import UnknownKeyError, UsageError
from edge.memory.db.connect import connect
from edge.memory.db.migrations import migrate
from edge.memory.query.filters import QueryBuilder, Sql, compile_filter, key_expr, normalise_promotion


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[apsw.Connection, Reference]]:
    path: Path = tmp_path_factory.mktemp("filters") / "f.db"
    conn = connect(path)
    migrate(conn)
    events = random_events(3, 1500)
    insert(conn, events)
    yield conn, Reference(events)
    conn.close()


def ids(conn: apsw.Connection, flt: EventFilter, periods: tuple[Period, ...] = ()) -> set[str]:
    cf = compile_filter(flt, periods)
    stmt = cf.sql("e.event_id")
    assert cf.params == list(stmt.params)  # the documented order: CTE parameters, then WHERE's
    # the same statement built the way the search helper joins the pieces
    with_sql = f"WITH {', '.join(cf.ctes)} " if cf.ctes else ""
    same = f"{with_sql}SELECT e.event_id FROM events AS e WHERE {cf.where}"
    got = {r[0] for r in conn.execute(stmt.sql, stmt.params)}
    assert got == {r[0] for r in conn.execute(same, cf.params)}
    return got


def expect(ref: Reference, flt: EventFilter, periods: tuple[Period, ...] = ()) -> set[str]:
    return {e.event_id for e in ref.select(flt, periods)}


FILTERS = [
    EventFilter(),
    EventFilter(store_ids=("s2",)),
    EventFilter(event_types=("purchase", "dwell")),
    EventFilter(since=T0 + timedelta(days=1), until=T0 + timedelta(days=2, hours=5)),
    EventFilter(hours=(9, 10, 23)),
    EventFilter(days_of_week=(5, 6)),
    EventFilter(attributes=(("weather", ("rain",)),)),
    EventFilter(attributes=(("weather", ("rain", "cloudy")),), store_ids=("s1",)),
    EventFilter(attributes=(("promotion", (True,)),)),
    EventFilter(attributes=(("promotion", ("false",)),)),
    EventFilter(attributes=(("promotion", ("member_day",)),)),
    EventFilter(attributes=(("zone", ("checkout", "entrance")),)),
    EventFilter(attributes=(("person_count", (2, 3)),)),
    EventFilter(attributes=(("topic", ("退货",)),)),
    EventFilter(attributes=(("lane", (2,)),)),
    EventFilter(attributes=(("lane", (2.0, 3)),)),
    EventFilter(attributes=(("vip", (True,)),)),
    EventFilter(attributes=(("vip", (False,)),)),
    EventFilter(attributes=(("topic", ("price",)), ("lane", (1,)))),
    EventFilter(attributes=(("nonexistent_key", ("x",)),)),
    EventFilter(attributes=(("topic", ()),)),
    EventFilter(entities=("milk",)),
    EventFilter(entities=("milk", "aisle 3")),
    EventFilter(
        event_types=("purchase",), since=T0 + timedelta(days=3), attributes=(("weather", ("sunny",)),)
    ),
]


@pytest.mark.parametrize("flt", FILTERS, ids=lambda f: repr(f)[12:70])
def test_filter_selects_the_reference_set(db: tuple[apsw.Connection, Reference], flt: EventFilter) -> None:
    conn, ref = db
    want = expect(ref, flt)
    assert ids(conn, flt) == want


def test_fixture_exercises_the_day_fallbacks(db: tuple[apsw.Connection, Reference]) -> None:
    # the interesting cases exist: events without own weather on a day with weather, days with
    # a named promotion, days that are promotion days only through a broadcast
    _, ref = db
    no_own = [e for e in ref.events if "weather" not in e.stats]
    assert any(ref.weather(e) is not None for e in no_own)
    assert any(ref.promotion(e) == "member_day" and "promotion" not in e.stats for e in ref.events)
    assert {ref.promotion(e) for e in ref.events} >= {"true", "false", "member_day"}


def test_event_ids_restrict_and_empty_matches_nothing(db: tuple[apsw.Connection, Reference]) -> None:
    conn, ref = db
    chosen = tuple(e.event_id for e in ref.events[::97])
    assert ids(conn, EventFilter(event_ids=chosen)) == set(chosen)
    assert ids(conn, EventFilter(event_ids=(*chosen, "no-such-id"), store_ids=("s1",))) == {
        e.event_id for e in ref.events[::97] if e.store_id == "s1"
    }
    assert ids(conn, EventFilter(event_ids=())) == set()
    assert ids(conn, EventFilter(event_ids=None)) == expect(ref, EventFilter())


def test_periods_keep_only_events_inside_one(db: tuple[apsw.Connection, Reference]) -> None:
    conn, ref = db
    periods = (
        Period("a", T0 + timedelta(days=1), T0 + timedelta(days=2)),
        Period("b", T0 + timedelta(days=4), None),
    )
    got = ids(conn, EventFilter(event_types=("purchase",)), periods)
    want = expect(ref, EventFilter(event_types=("purchase",)), periods)
    assert got == want
    assert 0 < len(got) < len(expect(ref, EventFilter(event_types=("purchase",))))


@pytest.mark.parametrize(
    "key",
    [k for k in KEYS if k != "period"] + ["attr:topic", "attr:lane", "attr:vip", "attr:weather", "attr:zone"],
)
def test_every_key_expression_and_key_equals(db: tuple[apsw.Connection, Reference], key: str) -> None:
    conn, ref = db
    ke = key_expr(key)
    with_sql = f"WITH {', '.join(ke.ctes)} " if ke.ctes else ""
    rows = conn.execute(
        f"{with_sql}SELECT e.event_id, {ke.sql} FROM events AS e", (*ke.cte_params, *ke.params)
    ).fetchall()
    by_id = {e.event_id: e for e in ref.events}
    for event_id, value in rows:
        want = ref.key(by_id[str(event_id)], key)
        if key == "is_weekend":
            value = bool(value)
        if isinstance(want, bool) and not key.startswith("attr:"):
            assert value == want
        elif isinstance(want, int | float) and not isinstance(want, bool):
            assert value == pytest.approx(want), (event_id, key)
        else:
            assert value == want, (event_id, key)
    # key_equals on two observed values (and NULL where the key has NULLs) selects the same set
    values = sorted({ref.key(e, key) for e in ref.events} - {None}, key=repr)[:2]
    if any(ref.key(e, key) is None for e in ref.events):
        flt = EventFilter(key_equals=((key, (*values, None)),))  # type: ignore[arg-type]
        assert ids(conn, flt) == {e.event_id for e in ref.events if ref.key(e, key) in (*values, None)}
    flt = EventFilter(key_equals=((key, tuple(values)),))
    assert ids(conn, flt) == expect(ref, flt)


def test_period_key_labels_the_first_window_holding_the_event(db: tuple[apsw.Connection, Reference]) -> None:
    conn, ref = db
    periods = (
        Period("early", None, T0 + timedelta(days=2)),
        Period("overlap", T0 + timedelta(days=1), T0 + timedelta(days=3)),
    )
    qb = QueryBuilder(EventFilter(), periods)
    stmt = qb.build([Sql("e.event_id"), qb.key("period")])
    got: dict[Any, Any] = {r[0]: r[1] for r in conn.execute(stmt.sql, stmt.params)}
    want = {e.event_id: ref.key(e, "period", periods) for e in ref.events}
    assert got == {k: v for k, v in want.items() if v is not None}
    assert set(got.values()) == {"early", "overlap"}
    flt = EventFilter(key_equals=(("period", ("overlap",)),))
    assert ids(conn, flt, periods) == expect(ref, flt, periods)


@pytest.mark.parametrize(
    "key",
    ["weather; DROP TABLE events", "x' OR '1'='1", "a b", "1abc", "", "ключ", "attr:x)--", "attr:"],
)
def test_keys_that_are_not_identifiers_are_refused(db: tuple[apsw.Connection, Reference], key: str) -> None:
    conn, _ = db
    with pytest.raises(UnknownKeyError) as exc:
        compile_filter(
            EventFilter(attributes=((key, ("x",)),))
            if not key.startswith("attr:")
            else EventFilter(key_equals=((key, ("x",)),))
        )
    assert isinstance(exc.value, UsageError) and isinstance(exc.value, ValueError)
    with pytest.raises(UnknownKeyError):
        compile_filter(EventFilter(key_equals=((key, ("x",)),)))
    with pytest.raises(UnknownKeyError):
        key_expr(key)
    (n,) = conn.execute("SELECT count(*) FROM events").fetchone()  # type: ignore[misc]
    assert n == 1500


def test_hostile_values_are_bound_not_formatted(db: tuple[apsw.Connection, Reference]) -> None:
    conn, _ = db
    evil = "x' OR '1'='1"
    for flt in (
        EventFilter(store_ids=(evil,)),
        EventFilter(event_types=(evil,)),
        EventFilter(attributes=(("zone", (evil,)),)),
        EventFilter(attributes=(("topic", (evil, "'); DROP TABLE events; --")),)),
        EventFilter(entities=(evil,)),
        EventFilter(event_ids=(evil, '"]')),
        EventFilter(key_equals=(("date_hour", (evil,)),)),
    ):
        cf = compile_filter(flt)
        assert evil not in cf.where and all(evil not in c for c in cf.ctes)
        assert ids(conn, flt) == set()
    (n,) = conn.execute("SELECT count(*) FROM events").fetchone()  # type: ignore[misc]
    assert n == 1500


def test_bad_values_raise_usage_errors() -> None:
    with pytest.raises(UsageError, match="hour"):
        compile_filter(EventFilter(hours=(24,)))
    with pytest.raises(UsageError, match="day of week"):
        compile_filter(EventFilter(days_of_week=(7,)))
    with pytest.raises(UsageError, match="time zone"):
        from datetime import datetime

        compile_filter(EventFilter(since=datetime(2025, 1, 1)))
    with pytest.raises(UnknownKeyError, match="period"):
        key_expr("period")


def test_day_value_uses_the_whole_day_even_inside_a_narrow_window(tmp_path: Path) -> None:
    # the day's weather comes from all its events, not only those inside the time window
    conn = connect(tmp_path / "d.db")
    migrate(conn)
    base = T0 + timedelta(hours=2)  # 10:00 in Shanghai
    evs = [
        Ev("a", "s1", base, "purchase", {"weather": "rain"}),
        Ev("b", "s1", base + timedelta(hours=1), "purchase", {"weather": "rain"}),
        Ev("c", "s1", base + timedelta(hours=2), "purchase", {"weather": "sunny"}),
        Ev("d", "s1", base + timedelta(hours=5), "customer_enter", {}),
        Ev("p", "s1", base + timedelta(days=1), "promotion_broadcast", {}),
        Ev("q", "s1", base + timedelta(days=1, hours=1), "customer_enter", {}),
        Ev("r", "s1", base + timedelta(days=2), "customer_enter", {"promotion": "0"}),
        Ev("s", "s1", base + timedelta(days=2, hours=1), "customer_enter", {}),
    ]
    insert(conn, evs)
    window = EventFilter(since=base + timedelta(hours=4), until=base + timedelta(hours=6))
    assert ids(conn, window.narrowed(attributes=(("weather", ("rain",)),))) == {"d"}
    assert ids(conn, EventFilter(attributes=(("promotion", ("true",)),))) == {"p", "q"}
    assert ids(conn, EventFilter(attributes=(("promotion", (False,)),))) == {"a", "b", "c", "d", "r", "s"}
    conn.close()


def test_normalise_promotion() -> None:
    assert normalise_promotion(True) == "true"
    assert normalise_promotion("YES") == "true"
    assert normalise_promotion(0) == "false"
    assert normalise_promotion("") == "false"
    assert normalise_promotion("member_day") == "member_day"
    assert normalise_promotion(None) is None


def test_indexes_drive_the_selective_filters(db: tuple[apsw.Connection, Reference]) -> None:
    conn, _ = db
    for flt, index in (
        (EventFilter(event_types=("purchase",), since=T0), "events_type_time"),
        (EventFilter(entities=("milk",)), "entities_entity"),
        (EventFilter(attributes=(("topic", ("price",)),)), "event_attrs_key_text"),
        (EventFilter(event_ids=("a", "b")), "sqlite_autoindex_events_1"),
    ):
        stmt = compile_filter(flt).sql("e.id")
        plan = " | ".join(str(r[3]) for r in conn.execute("EXPLAIN QUERY PLAN " + stmt.sql, stmt.params))
        assert index in plan, plan
