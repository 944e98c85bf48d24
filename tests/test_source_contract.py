"""Every registered operator over every source gives the same answer on the same events.

The sources: the events source (event-level SQL), the rollup source (the store's default: the
hourly rollup, the events behind it) and the pure in-memory source of ``edge.analysis.testing``.
Equal means the same status, and results whose additive values are equal exactly and whose other
numbers (means, shares, statistics) agree within 1e-9 relative. Then closed days: a day is
closed, its events are deleted, and the rollup source still answers as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import apsw
import pytest
from sqlsource_data import STORES, T0, DbStore, Ev, as_dict, insert, random_events, same
from test_payload_contract import PLANS

from edge.analysis.engine import run_plan
from edge.analysis.operators import registry
from edge.analysis.source import AGGREGATE, RETRIEVAL, EventFilter, Period, has_capability
from edge.analysis.testing import InMemorySource, MemEvent
from edge.config import AnalysisConfig
from edge.memory.db.connect import connect
from edge.memory.db.migrations import migrate
from edge.memory.query.events_source import EventsSource
from edge.memory.query.rollup_source import RollupSource
from edge.memory.rollup import build as rollup

DAYS = 20
NOW = T0 + timedelta(days=DAYS)
#: plans that exercise the window, per-store and grouping paths besides the contract's own
EXTRA: dict[str, dict[str, Any]] = {
    "footfall_by_store": {"intent": "breakdown", "target_metric": "footfall", "group_by": ["store_id"]},
    "aov_by_weather": {
        "intent": "compare",
        "target_metric": "avg_order_value",
        "compare": {"dimension": "weather", "groups": ["rain", "sunny"]},
    },
    "revenue_last_week": {
        "intent": "aggregate",
        "target_metric": "revenue",
        "filters": {"time_range": {"last": "P1W"}},
    },
    "queue_trend": {"intent": "trend", "target_metric": "queue_length", "time_bucket": "day"},
}
ALL_PLANS = {**PLANS, **EXTRA}


@pytest.fixture(scope="module")
def events() -> list[Ev]:
    return random_events(11, 4000, days=DAYS)


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory, events: list[Ev]) -> Iterator[dict[str, Any]]:
    conn = connect(tmp_path_factory.mktemp("contract") / "c.db")
    migrate(conn)
    insert(conn, events)
    store = DbStore(conn)
    yield {
        "events": EventsSource(store),
        "rollup": RollupSource(store),
        "memory": InMemorySource(events, STORES, timezone=STORES["s1"]),
    }
    conn.close()


def _ask(source: Any, plan: dict[str, Any]) -> dict[str, Any]:
    return run_plan(plan, source, question="q", now=NOW, config=AnalysisConfig(), language="en")


def same_answer(got: Any, want: Any, where: str = "result") -> None:
    """Equal structure; integers (counts, additive) exact; floats within 1e-9 relative."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and set(got) == set(want), where
        for k in want:
            same_answer(got[k], want[k], f"{where}.{k}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            same_answer(g, w, f"{where}[{i}]")
    elif isinstance(want, float) or isinstance(got, float):
        assert got == pytest.approx(want, rel=1e-9, abs=1e-9), where
    else:
        assert got == want, where


def test_every_source_declares_the_aggregate_port(sources: dict[str, Any]) -> None:
    for src in sources.values():
        assert has_capability(src, AGGREGATE)
    assert not has_capability(sources["memory"], RETRIEVAL)
    with pytest.raises(ValueError, match="unknown capability"):
        has_capability(sources["memory"], "teleport")


@pytest.mark.parametrize("name", sorted(ALL_PLANS))
def test_every_operator_answers_alike_over_every_source(name: str, sources: dict[str, Any]) -> None:
    plan = ALL_PLANS[name]
    assert str(plan["intent"]) in registry()
    answers = {k: _ask(src, plan) for k, src in sources.items()}
    want = answers["events"]
    for k, got in answers.items():
        if k == "memory" and plan["intent"] == "retrieve":
            # no events with vectors in memory: the operator says so instead of answering
            assert got["status"] == "insufficient_data" and got["missing"], got
            continue
        assert got["status"] == want["status"], (k, got.get("missing"), want.get("missing"))
        same_answer(got["result"], want["result"])
        assert got["confidence"] == pytest.approx(want["confidence"], rel=1e-9), k


def test_the_contract_plans_are_not_all_refused(sources: dict[str, Any]) -> None:
    """The equality above means something: most plans are answered on this data."""
    ok = [n for n, p in ALL_PLANS.items() if _ask(sources["events"], p)["status"] == "ok"]
    assert len(ok) >= len(ALL_PLANS) - 3, ok


def _carried(events: list[Ev]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for e in events:
        out.setdefault(e.event_type, set()).update(k for k, v in e.stats.items() if v is not None)
    return out


def test_every_source_says_which_stats_keys_each_event_type_carries(
    sources: dict[str, Any], events: list[Ev]
) -> None:
    want = _carried(events)
    assert len(want) >= 3 and any(len(keys) >= 3 for keys in want.values())
    for name, src in sources.items():
        got = src.vocabulary().keys_by_type
        assert {t: set(keys) for t, keys in got.items()} == want, name


# -- closed days are the record ------------------------------------------------------------------

CLOSED_PLANS = ("footfall_by_store", "breakdown", "revenue_last_week", "queue_trend", "top_k")


def test_a_closed_day_answers_the_same_after_its_events_are_deleted(tmp_path: Any, events: list[Ev]) -> None:
    conn = connect(tmp_path / "closed.db")
    migrate(conn)
    insert(conn, events)
    src = RollupSource(DbStore(conn))
    cut = (NOW - timedelta(days=DAYS // 2)).date().isoformat()
    before = {n: _ask(src, ALL_PLANS[n]) for n in CLOSED_PLANS}
    cov_before = src.coverage(EventFilter())
    vocab_before = src.vocabulary()
    assert rollup.close_days(conn, cut) > 0
    (gone,) = conn.execute("SELECT count(*) FROM events WHERE local_date < ?", (cut,)).fetchone()
    assert gone > 0
    conn.execute("DELETE FROM events WHERE local_date < ?", (cut,))
    st = rollup.state(conn)
    assert st is not None and not st.stale  # deleting closed days' events asks for no rebuild
    rollup.refresh(conn)
    for n in CLOSED_PLANS:
        after = _ask(src, ALL_PLANS[n])
        assert after["status"] == before[n]["status"], n
        same_answer(after["result"], before[n]["result"], n)
    cov = src.coverage(EventFilter())
    assert (cov.earliest, cov.count) == (cov_before.earliest, cov_before.count)
    vocab = src.vocabulary()  # values held only by closed days stay in the vocabulary
    assert set(vocab_before.store_ids) <= set(vocab.store_ids)
    assert set(vocab_before.event_types) <= set(vocab.event_types)
    for key in rollup.ATTRIBUTE_COLUMNS:
        assert set(vocab_before.attributes.get(key, ())) <= set(vocab.attributes.get(key, ())), key
    for t, keys in vocab_before.keys_by_type.items():  # and which types carry them
        held = set(keys) & set(rollup.ATTRIBUTE_COLUMNS)
        assert held <= set(vocab.keys_by_type.get(t, ())), t
    # the event-level source, which has only the remaining events, does see fewer
    assert EventsSource(DbStore(conn)).coverage(EventFilter()).count == cov_before.count - gone
    # a type whose every remaining event goes: closed days' rollup rows still say what it carried
    kind = "purchase"
    held = set(vocab_before.keys_by_type[kind]) & set(rollup.ATTRIBUTE_COLUMNS)
    assert held
    conn.execute("DELETE FROM events WHERE event_type = ?", (kind,))
    rollup.refresh(conn)
    assert conn.execute("SELECT count(*) FROM events WHERE event_type = ?", (kind,)).fetchone() == (0,)
    assert held <= set(RollupSource(DbStore(conn)).vocabulary().keys_by_type.get(kind, ())), held
    conn.close()


def test_an_event_imported_into_a_closed_day(tmp_path: Any, events: list[Ev]) -> None:
    """All its events still there: the day reopens and is rebuilt; archived: the day stays as it
    was and the late event is counted."""
    conn = connect(tmp_path / "late.db")
    migrate(conn)
    insert(conn, events[:-2])
    src = RollupSource(DbStore(conn))
    rollup.refresh(conn)
    rollup.close_days(conn, "9999-12-31")
    late = events[-2]
    insert(conn, [late])
    flt = EventFilter(store_ids=(late.store_id,))
    assert src.coverage(flt).count == EventsSource(DbStore(conn)).coverage(flt).count
    (state,) = conn.execute(
        "SELECT state FROM rollup_days WHERE store_id = ? AND local_date = ?",
        (late.store_id, late.local.date().isoformat()),
    ).fetchone()
    assert state == "open"
    # archive a closed day, then import into it: its figures stay, the event is counted as late
    rollup.close_days(conn, "9999-12-31")
    last = events[-1]
    d = last.local.date().isoformat()
    held = src.coverage(EventFilter(store_ids=(last.store_id,))).count
    conn.execute("DELETE FROM events WHERE store_id = ? AND local_date = ?", (last.store_id, d))
    insert(conn, [last])
    assert src.coverage(EventFilter(store_ids=(last.store_id,))).count == held
    (n_late,) = conn.execute(
        "SELECT late_events FROM rollup_days WHERE store_id = ? AND local_date = ?", (last.store_id, d)
    ).fetchone()
    assert n_late == 1
    conn.close()


def test_a_day_state_is_open_or_closed(tmp_path: Any) -> None:
    conn = connect(tmp_path / "empty.db")
    migrate(conn)
    with pytest.raises(apsw.ConstraintError):
        conn.execute(
            "INSERT INTO rollup_days(store_id, local_date, state, events, late_events, changed_at) "
            "VALUES ('s', '2025-01-01', 'frozen', 0, 0, 'x')"
        )
    conn.close()


# -- several time zones ----------------------------------------------------------------------------


def test_two_stores_in_two_zones_answer_yesterday_by_their_own_day() -> None:
    """A hub-like source with a Shanghai and a New York store: "yesterday" (the last day before a
    store-local midnight) is each store's own local day."""
    zones = {"sh": "Asia/Shanghai", "ny": "America/New_York"}
    evs = [
        MemEvent(f"{s}-{h}", s, T0 + timedelta(hours=h), "customer_enter", {"person_count": h + 1})
        for s in zones
        for h in range(0, 72)
    ]
    src = InMemorySource(evs, zones, timezone="UTC")
    assert src.vocabulary().is_multi_zone()
    now = datetime(2025, 11, 3)  # naive: local midnight in the store's own zone
    for store, zone in zones.items():
        plan = {
            "intent": "aggregate",
            "target_metric": "footfall",
            "filters": {"store_id": [store], "time_range": {"last": "P1D"}},
        }
        p = run_plan(plan, src, question="q", now=now, config=AnalysisConfig(), language="en")
        local_yesterday = "2025-11-02"
        want = sum(
            e.stats["person_count"]
            for e in evs
            if e.store_id == store and e.ts.astimezone(ZoneInfo(zone)).date().isoformat() == local_yesterday
        )
        assert p["status"] == "ok", p
        assert p["result"]["value"] == want, (store, p["result"])
    # the two local days are different spans of UTC, so the answers differ
    shanghai = run_plan(
        {
            "intent": "aggregate",
            "target_metric": "footfall",
            "filters": {"store_id": ["sh"], "time_range": {"last": "P1D"}},
        },
        src,
        question="q",
        now=now,
        config=AnalysisConfig(),
        language="en",
    )
    assert shanghai["result"]["value"] != sum(
        e.stats["person_count"] for e in evs if e.store_id == "sh" and e.ts.date().isoformat() == "2025-11-02"
    )


def test_check_accepts_a_closed_day_without_its_events(tmp_path: Any, events: list[Ev]) -> None:
    """``adamm check`` compares the rollup with the events only for open days: a closed day's
    rollup is the record once its events are archived; an open day's mismatch is still found."""
    from edge.memory.integrity import Report, _rollup

    conn = connect(tmp_path / "check.db")
    migrate(conn)
    insert(conn, events)
    cut = (NOW - timedelta(days=DAYS // 2)).date().isoformat()
    rollup.close_days(conn, cut)
    conn.execute("DELETE FROM events WHERE local_date < ?", (cut,))
    rollup.refresh(conn)
    report = Report("check.db")
    _rollup(conn, report)
    assert report.problems == []
    conn.execute(
        "UPDATE rollup_hourly SET n = n + 1 WHERE local_date >= ? AND rowid = (SELECT min(rowid) FROM rollup_hourly WHERE local_date >= ?)",
        (cut, cut),
    )
    report = Report("check.db")
    _rollup(conn, report)
    assert any(p.check == "rollup" for p in report.problems)


# -- two stores, two zones: each store's own local days -------------------------------------------

TWO_ZONES = {"sh": "Asia/Shanghai", "ld": "Europe/London"}
#: each store holds its local days FIRST_DAY .. LAST_DAY (London leaves summer time on Oct 26)
FIRST_DAY, LAST_DAY = "2025-09-28", "2025-11-06"
NOW2 = datetime(2025, 11, 7, 12, tzinfo=ZoneInfo("UTC"))


def _local_day(ev: Ev) -> str:
    return ev.ts.astimezone(ZoneInfo(TWO_ZONES[ev.store_id])).date().isoformat()


@pytest.fixture(scope="module")
def zoned_events() -> list[Ev]:
    start = datetime(2025, 9, 27, tzinfo=ZoneInfo("UTC"))
    evs = random_events(31, 6000, days=42, stores=tuple(TWO_ZONES), start=start)
    return [e for e in evs if FIRST_DAY <= _local_day(e) <= LAST_DAY]


@pytest.fixture(scope="module")
def zoned_sources(
    tmp_path_factory: pytest.TempPathFactory, zoned_events: list[Ev]
) -> Iterator[dict[str, Any]]:
    conn = connect(tmp_path_factory.mktemp("zones") / "z.db")
    migrate(conn)
    insert(conn, zoned_events, TWO_ZONES)
    store = DbStore(conn, TWO_ZONES)
    yield {
        "events": EventsSource(store),
        "rollup": RollupSource(store),
        "memory": InMemorySource(zoned_events, TWO_ZONES, timezone="Asia/Shanghai"),
    }
    conn.close()


def _month(offset: str, month: int) -> dict[str, str]:
    """A calendar month as the parser writes it (local midnights with a UTC offset)."""
    return {
        "since": f"2025-{month:02d}-01T00:00:00{offset}",
        "until": f"2025-{month + 1:02d}-01T00:00:00{offset}",
    }


OCTOBER = _month("+08:00", 10)
ZONE_PLANS: dict[str, dict[str, Any]] = {
    "footfall_october": {
        "intent": "aggregate",
        "target_metric": "footfall",
        "filters": {"time_range": OCTOBER},
    },
    "orders_october_by_store": {
        "intent": "breakdown",
        "target_metric": "order_count",
        "group_by": ["store_id"],
        "filters": {"time_range": OCTOBER},
    },
    "footfall_october_by_day": {
        "intent": "trend",
        "target_metric": "footfall",
        "time_bucket": "day",
        "filters": {"time_range": OCTOBER},
    },
    "revenue_october_vs_september": {
        "intent": "compare",
        "target_metric": "revenue",
        "compare": {
            "periods": [
                {"label": "october", "time_range": OCTOBER},
                {
                    "label": "late september",
                    "time_range": {"since": "2025-09-28T00:00:00+08:00", "until": OCTOBER["since"]},
                },
            ]
        },
    },
    "aov_by_store_october": {
        "intent": "compare",
        "target_metric": "avg_order_value",
        "compare": {"dimension": "store_id", "groups": ["sh", "ld"]},
        "filters": {"time_range": OCTOBER},
    },
    "queue_anomaly_october": {
        "intent": "anomaly",
        "target_metric": "footfall",
        "time_bucket": "day",
        "filters": {"time_range": OCTOBER},
    },
    "revenue_by_hour_last_week": {
        "intent": "breakdown",
        "target_metric": "revenue",
        "group_by": ["hour"],
        "filters": {"time_range": {"last": "P1W"}},
    },
}


def _ask2(source: Any, plan: dict[str, Any], language: str = "en") -> dict[str, Any]:
    return run_plan(plan, source, question="q", now=NOW2, config=AnalysisConfig(), language=language)


@pytest.mark.parametrize("name", sorted({**ALL_PLANS, **ZONE_PLANS}))
def test_two_zones_every_operator_answers_alike_over_every_source(
    name: str, zoned_sources: dict[str, Any]
) -> None:
    plan = {**ALL_PLANS, **ZONE_PLANS}[name]
    answers = {k: _ask2(src, plan) for k, src in zoned_sources.items()}
    want = answers["events"]
    for k, got in answers.items():
        if k == "memory" and plan["intent"] == "retrieve":
            assert got["status"] == "insufficient_data"
            continue
        assert got["status"] == want["status"], (k, got.get("missing"), want.get("missing"))
        same_answer(got["result"], want["result"], f"{name}@{k}")


def _footfall(evs: list[Ev]) -> int:
    return sum(int(e.stats.get("person_count", 1)) for e in evs if e.event_type == "customer_enter")


def _orders(evs: list[Ev]) -> int:
    return len({e.stats.get("bill_id") or e.event_id for e in evs if e.event_type == "purchase"})


@pytest.mark.parametrize("offset", ["+08:00", "+01:00", "Z"])
def test_two_zones_october_is_each_stores_local_october(
    offset: str, zoned_sources: dict[str, Any], zoned_events: list[Ev]
) -> None:
    """A calendar month means each store's own local month, whatever offset it is written with;
    the expectations are computed here from each event's local date in its store's zone."""
    october = [e for e in zoned_events if _local_day(e).startswith("2025-10")]
    by_store = {s: [e for e in october if e.store_id == s] for s in TWO_ZONES}
    by_day: dict[str, list[Ev]] = {}
    for e in october:
        by_day.setdefault(_local_day(e), []).append(e)
    month = _month(offset, 10)
    # the instant window of one zone would differ: the per-store answer is not that one
    instant = [
        e
        for e in zoned_events
        if datetime.fromisoformat(month["since"]) <= e.ts < datetime.fromisoformat(month["until"])
    ]
    assert {e.event_id for e in instant} != {e.event_id for e in october}
    for name, src in zoned_sources.items():
        total = _ask2(
            src, {"intent": "aggregate", "target_metric": "footfall", "filters": {"time_range": month}}
        )
        assert total["status"] == "ok", (name, total["missing"])
        assert total["result"]["value"] == _footfall(october), name
        parts = _ask2(
            src,
            {
                "intent": "breakdown",
                "target_metric": "order_count",
                "group_by": ["store_id"],
                "filters": {"time_range": month},
            },
        )
        assert {p["key"]: p["value"] for p in parts["result"]["parts"]} == {
            s: _orders(v) for s, v in by_store.items()
        }, name
        series = _ask2(
            src,
            {
                "intent": "trend",
                "target_metric": "footfall",
                "time_bucket": "day",
                "filters": {"time_range": month},
            },
        )
        assert series["status"] == "ok", (name, series["missing"])
        assert {b["bucket"]: b["value"] for b in series["result"]["series"]} == {
            d: _footfall(v) for d, v in by_day.items()
        }, name


@pytest.mark.parametrize("frame", sorted(TWO_ZONES.values()))
def test_two_zones_coverage_is_reported_in_the_windows_frame(
    frame: str, zoned_sources: dict[str, Any], zoned_events: list[Ev]
) -> None:
    """An event's local time read on ``frame``'s clock: the earliest and latest are the stores'
    first and last local times, whichever store they belong to."""
    walls = [e.ts.astimezone(ZoneInfo(TWO_ZONES[e.store_id])).replace(tzinfo=None) for e in zoned_events]
    want = (min(walls).replace(tzinfo=ZoneInfo(frame)), max(walls).replace(tzinfo=ZoneInfo(frame)))
    for name, src in zoned_sources.items():
        cov = src.coverage(EventFilter(wall_clock_zone=frame))
        assert (cov.earliest, cov.latest, cov.count) == (*want, len(zoned_events)), name


def test_two_zones_the_memory_holds_what_each_store_holds(zoned_sources: dict[str, Any]) -> None:
    """Coverage checks count each store's local days: asked for 3 months it holds 6 weeks of,
    or for days after its last one, the answer says so in the stores' local days."""
    for name, src in zoned_sources.items():
        p = _ask2(
            src,
            {"intent": "aggregate", "target_metric": "footfall", "filters": {"time_range": {"last": "P3M"}}},
        )
        assert p["status"] == "insufficient_data", name
        assert any(f"the memory starts on {FIRST_DAY}" in m for m in p["missing"]), (name, p["missing"])
        later = {"since": "2025-11-08T00:00:00+08:00", "until": "2025-11-20T00:00:00+08:00"}
        p = _ask2(src, {"intent": "aggregate", "target_metric": "footfall", "filters": {"time_range": later}})
        assert p["status"] == "insufficient_data", name
        # London's last local day is 2025-11-06, though its last events are on 2025-11-07 in Shanghai
        assert any(f"the memory holds {FIRST_DAY} to {LAST_DAY}" in m for m in p["missing"]), (
            name,
            p["missing"],
        )
        inside = _ask2(
            src, {"intent": "aggregate", "target_metric": "footfall", "filters": {"time_range": OCTOBER}}
        )
        assert inside["status"] == "ok", (name, inside["missing"])


@pytest.mark.parametrize(
    ("question", "first", "last"),
    [("10月的客流是多少", "2025-10-01", "2025-10-31"), ("上周的客流", "2025-10-27", "2025-11-02")],
)
def test_two_zones_questions_mean_each_stores_local_days(
    question: str, first: str, last: str, zoned_sources: dict[str, Any], zoned_events: list[Ev]
) -> None:
    """The parser writes calendar ranges in the memory's default zone; over stores in two zones
    they select each store's own local days."""
    from edge.analysis.engine import answer

    want = _footfall([e for e in zoned_events if first <= _local_day(e) <= last])
    for name, src in zoned_sources.items():
        p = answer(question, src, now=NOW2)
        assert p["status"] == "ok", (name, p["missing"])
        assert p["result"]["value"] == want, name


def test_two_zones_the_rollup_alone_applies_per_store_windows(tmp_path: Any, zoned_events: list[Ev]) -> None:
    """Every day closed and every event deleted: the strict rollup source (which never reads
    events for closed days) still answers per-store local windows and periods, as the pure
    reference does."""
    conn = connect(tmp_path / "zones-closed.db")
    migrate(conn)
    insert(conn, zoned_events, TWO_ZONES)
    rollup.close_days(conn, "9999-12-31")
    conn.execute("DELETE FROM events")
    strict = RollupSource(DbStore(conn, TWO_ZONES), strict=True)
    ref = InMemorySource(zoned_events, TWO_ZONES, timezone="Asia/Shanghai")
    sh = ZoneInfo("Asia/Shanghai")
    oct1, nov1 = datetime(2025, 10, 1, tzinfo=sh), datetime(2025, 11, 1, tzinfo=sh)
    periods = (Period("oct", oct1, nov1), Period("sep", None, oct1))
    for frame in ("Asia/Shanghai", "Europe/London"):
        flt = EventFilter(since=oct1, until=nov1, wall_clock_zone=frame)
        for keys in ((), ("store_id",), ("date",), ("store_id", "hour")):
            comps = ["events", "footfall", "bills", "revenue", "days"]
            same(
                as_dict(strict.aggregate(flt, keys, comps), keys),
                as_dict(ref.aggregate(flt, keys, comps), keys),
            )
        framed = EventFilter(wall_clock_zone=frame)
        got = as_dict(strict.aggregate(framed, ["period", "store_id"], ["bills", "revenue"], periods), (1, 2))
        same(
            got, as_dict(ref.aggregate(framed, ["period", "store_id"], ["bills", "revenue"], periods), (1, 2))
        )
        for key in ("store_id", "date", "product_category"):
            same(
                {(g,): v for g, v in strict.bill_stats(flt, key).items()},
                {(g,): v for g, v in ref.bill_stats(flt, key).items()},
            )
        assert strict.coverage(flt) == ref.coverage(flt)
    conn.close()


def test_a_wall_clock_bound_in_each_stores_zone() -> None:
    """``store_instant``: the instant a store's clock reads the bound's wall-clock time; a
    repeated hour gives its first instant, an hour a DST gap skips reads as the clock before."""
    from edge.analysis.source import StoreZones, store_instant, zone_groups

    utc = ZoneInfo("UTC")
    oct1_sh = datetime(2025, 9, 30, 16, tzinfo=utc)  # 2025-10-01 00:00 in Shanghai
    assert store_instant(oct1_sh, "Asia/Shanghai", "Europe/London") == datetime(2025, 9, 30, 23, tzinfo=utc)
    assert store_instant(oct1_sh, "Asia/Shanghai", "Asia/Shanghai") == oct1_sh
    # 01:30 on 2025-10-26 happens twice in London (BST, then GMT): the first
    repeated = datetime(2025, 10, 26, 1, 30, tzinfo=utc)  # 01:30 read in UTC
    assert store_instant(repeated, "UTC", "Europe/London") == datetime(2025, 10, 26, 0, 30, tzinfo=utc)
    # 01:30 on 2025-03-30 does not happen in London (01:00 GMT -> 02:00 BST): read as GMT
    skipped = datetime(2025, 3, 30, 1, 30, tzinfo=utc)
    assert store_instant(skipped, "UTC", "Europe/London") == datetime(2025, 3, 30, 1, 30, tzinfo=utc)
    zones = StoreZones(
        "Asia/Shanghai", {"sh": "Asia/Shanghai", "ld": "Europe/London", "ny": "America/New_York"}
    )
    assert zone_groups(zones) == [
        ("America/New_York", ("ny",), False),
        ("Europe/London", ("ld",), False),
        ("Asia/Shanghai", ("ld", "ny"), True),
    ]
    assert zone_groups(zones, ("ld",)) == [("Europe/London", ("ld",), False)]
    assert zone_groups(zones, ("ld", "sh")) == [
        ("Europe/London", ("ld",), False),
        ("Asia/Shanghai", ("ld",), True),
    ]
