"""Filter-first hybrid retrieval on a real store (SQLite + sqlite-vec), against numpy brute force.

The expected rankings are computed independently here (numpy over the seeded vectors of the
subset a filter keeps), never copied from output.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edge.analysis.source import EventFilter
from edge.cli._common import parse_pair, parse_time, parse_value
from edge.config import AdammConfig
from edge.memory.search.retrieval import hybrid_search
from edge.memory.store import Store

N = 20_000
TYPES = tuple(f"type_{i}" for i in range(10))
T0 = datetime(2025, 11, 1, tzinfo=UTC)


def mev(i: int, **extra: Any) -> dict[str, Any]:
    ev: dict[str, Any] = {
        "event_id": f"e{i:06d}",
        "timestamp": (T0 + timedelta(minutes=i)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "store_id": "s1",
        "event_type": TYPES[i % len(TYPES)],
        "modality": ["pos"],
        "raw_ref": [f"pos://t1/{i}"],
        "stats": {
            # 0.1% of the events: 20 of 20k; a key that is not well known keeps 10%
            "zone": "vault" if i % 1000 == 7 else "floor",
            "topic": "returns" if i % 10 == 3 else "other",
            "lane": i % 4,
        },
    }
    ev.update(extra)
    return ev


def wait(result: Any) -> Any:
    return result.result() if hasattr(result, "result") else result


def put_vectors(store: Store, vectors: dict[str, np.ndarray]) -> None:
    """Store text vectors for existing events (rowid = events.id), as the import does."""
    items = list(vectors.items())

    def work(conn: Any) -> None:
        ids = dict(conn.execute("SELECT event_id, id FROM events").fetchall())
        conn.executemany(
            "INSERT INTO vec_text(rowid, embedding) VALUES (?, ?)",
            [(ids[eid], np.asarray(v, dtype=np.float32).tobytes()) for eid, v in items],
        )

    wait(store.writer.submit(work))


def unit(rng: np.random.Generator, n: int) -> np.ndarray:
    x = rng.standard_normal((n, 512)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Store, np.ndarray, list[dict[str, Any]]]]:
    path = tmp_path_factory.mktemp("retrieval") / "big.db"
    store = Store.open(str(path), timezone="UTC", config=AdammConfig())
    events = [mev(i) for i in range(N)]
    store.import_lines([json.dumps(e) for e in events])
    vectors = unit(np.random.default_rng(7), N)
    put_vectors(store, {e["event_id"]: vectors[i] for i, e in enumerate(events)})
    yield store, vectors, events
    store.close()


def brute_force(vectors: np.ndarray, keep: Callable[[int], bool], q: np.ndarray, k: int) -> list[str]:
    idx = np.array([i for i in range(vectors.shape[0]) if keep(i)])
    cos = vectors[idx] @ q
    order = np.argsort(-cos, kind="stable")[:k]
    return [f"e{int(idx[j]):06d}" for j in order]


def ids(rows: list[Any]) -> list[str]:
    return [r.event_id for r in rows]


def test_selective_filter_returns_the_true_top_k_of_the_subset(big: Any) -> None:
    store, vectors, _ = big
    rng = np.random.default_rng(11)
    for q in unit(rng, 5):
        flt = EventFilter(attributes=(("zone", ("vault",)),))
        got = hybrid_search(store, None, flt, 10, query_vector=q)
        expected = brute_force(vectors, lambda i: i % 1000 == 7, q, 10)
        assert ids(got) == expected  # recall@10 = 1.0, same order
        assert all(r.cosine == pytest.approx(float(vectors[int(r.event_id[1:])] @ q), abs=1e-5) for r in got)


def test_the_global_top_k_is_not_what_a_selective_filter_returns(big: Any) -> None:
    # guards the test above: with 0.1% kept, the global top-10 almost never contains a survivor
    store, vectors, _ = big
    q = unit(np.random.default_rng(12), 1)[0]
    global_top = set(brute_force(vectors, lambda i: True, q, 10))
    subset_top = brute_force(vectors, lambda i: i % 1000 == 7, q, 10)
    assert not global_top & set(subset_top)
    got = hybrid_search(store, None, EventFilter(attributes=(("zone", ("vault",)),)), 10, query_vector=q)
    assert ids(got) == subset_top


def test_filter_on_a_stats_key_that_is_not_well_known(big: Any) -> None:
    store, vectors, _ = big
    q = unit(np.random.default_rng(13), 1)[0]
    got = hybrid_search(store, None, EventFilter(attributes=(("topic", ("returns",)),)), 10, query_vector=q)
    assert ids(got) == brute_force(vectors, lambda i: i % 10 == 3, q, 10)
    got = hybrid_search(store, None, EventFilter(attributes=(("lane", (2,)),)), 10, query_vector=q)
    assert ids(got) == brute_force(vectors, lambda i: i % 4 == 2, q, 10)


def test_unfiltered_and_type_and_time_filters_are_exact(big: Any) -> None:
    store, vectors, _ = big
    q = unit(np.random.default_rng(14), 1)[0]
    assert ids(hybrid_search(store, None, EventFilter(), 10, query_vector=q)) == brute_force(
        vectors, lambda i: True, q, 10
    )
    flt = EventFilter(event_types=("type_4",))
    assert ids(hybrid_search(store, None, flt, 10, query_vector=q)) == brute_force(
        vectors, lambda i: i % 10 == 4, q, 10
    )
    since, until = T0 + timedelta(minutes=5000), T0 + timedelta(minutes=5100)  # [5000, 5100)
    flt = EventFilter(event_types=("type_4", "type_5"), since=since, until=until)
    got = hybrid_search(store, None, flt, 50, query_vector=q)
    assert ids(got) == brute_force(vectors, lambda i: 5000 <= i < 5100 and i % 10 in (4, 5), q, 50)
    assert len(got) == 20


def test_score_is_alpha_cosine_plus_beta_attr_match(big: Any) -> None:
    store, vectors, _ = big
    q = unit(np.random.default_rng(15), 1)[0]
    flt = EventFilter(event_types=("type_3",))  # every type_3 event has topic=returns
    got = hybrid_search(store, None, flt, 30, query_vector=q, prefer=[("lane", 1)], alpha=0.5, beta=0.5)
    idx = [i for i in range(N) if i % 10 == 3]
    score = {i: 0.5 * float(vectors[i] @ q) + 0.5 * (1.0 if i % 4 == 1 else 0.0) for i in idx}
    expected = sorted(idx, key=lambda i: -score[i])[:30]
    assert ids(got) == [f"e{i:06d}" for i in expected]
    for r in got:
        i = int(r.event_id[1:])
        assert r.attr_match == (1.0 if i % 4 == 1 else 0.0)
        assert r.score == pytest.approx(score[i], abs=1e-5)


def test_time_proximity_halves_every_time_scale(big: Any) -> None:
    store, _, _ = big
    near = T0 + timedelta(minutes=7777)
    flt = EventFilter(event_types=("type_7",))
    got = hybrid_search(store, None, flt, 3, near=near, alpha=0.0, beta=1.0)
    assert ids(got) == ["e007777", "e007787", "e007767"]  # the nearest first; tie -> newest
    scale_min = AdammConfig().retrieval.time_scale_hours * 60
    assert got[1].attr_match == pytest.approx(0.5 ** (10 / scale_min), abs=1e-6)


def test_without_text_newest_first(big: Any) -> None:
    store, _, _ = big
    got = hybrid_search(store, None, EventFilter(attributes=(("zone", ("vault",)),)), 3)
    assert ids(got) == ["e019007", "e018007", "e017007"]
    assert all(r.score == 0.0 and r.cosine == 0.0 for r in got)


def test_results_carry_the_stored_fields(big: Any) -> None:
    store, _, events = big
    got = hybrid_search(store, None, EventFilter(event_ids=None, event_types=("type_0",)), 1)
    ev = next(e for e in events if e["event_id"] == got[0].event_id)
    assert got[0].timestamp.startswith(ev["timestamp"][:19]) and got[0].timestamp.endswith("Z")
    assert got[0].raw_ref == tuple(ev["raw_ref"])
    assert got[0].store_id == "s1" and got[0].event_type == "type_0"


def test_results_carry_stats_and_raw_refs_exactly_as_imported(small: Store) -> None:
    v = unit(np.random.default_rng(9), 2)
    stats = {
        "big": 2**63 - 1,
        "neg": -(2**63) + 1,
        "price": 0.1,
        "flag": False,
        "note": '大 "x"',
        "none": None,
    }
    refs = [f"file:///media/{n}.mp4" for n in ("c", "a", "b")]  # kept in the order given, not sorted
    small.import_lines(
        [
            json.dumps(mev(0, embedding={"text": v[0].tolist()}, stats=stats, raw_ref=refs)),
            json.dumps(mev(1, embedding={"text": v[1].tolist()}, text="没有统计")),
        ]
    )
    got = {r.event_id: r for r in hybrid_search(small, None, EventFilter(), 2, query_vector=v[0])}
    assert got["e000000"].stats == stats and type(got["e000000"].stats["big"]) is int
    assert got["e000000"].raw_ref == tuple(refs)
    assert got["e000001"].text == "没有统计" and got["e000001"].raw_ref == ("pos://t1/1",)


@pytest.fixture()
def small(tmp_path: Path) -> Iterator[Store]:
    store = Store.open(str(tmp_path / "small.db"), timezone="UTC", config=AdammConfig())
    yield store
    store.close()


def test_new_vectors_are_seen_by_the_next_query(small: Store) -> None:
    rng = np.random.default_rng(3)
    v = unit(rng, 40)
    small.import_lines([json.dumps(mev(i, embedding={"text": v[i].tolist()})) for i in range(20)])
    assert ids(hybrid_search(small, None, EventFilter(), 1, query_vector=v[5])) == ["e000005"]
    small.import_lines([json.dumps(mev(i, embedding={"text": v[i].tolist()})) for i in range(20, 40)])
    got = hybrid_search(small, None, EventFilter(), 1, query_vector=v[33])
    assert ids(got) == ["e000033"] and got[0].cosine == pytest.approx(1.0, abs=1e-5)


def test_events_without_vectors_are_still_returned_with_cosine_zero(small: Store) -> None:
    v = unit(np.random.default_rng(4), 3)
    lines = [json.dumps(mev(i, embedding={"text": v[i].tolist()})) for i in range(3)]
    lines += [json.dumps(mev(i)) for i in range(3, 6)]  # no vector, no text
    small.import_lines(lines)
    got = hybrid_search(small, None, EventFilter(), 6, query_vector=v[0])
    assert ids(got)[0] == "e000000"
    assert sorted(ids(got)) == [f"e{i:06d}" for i in range(6)]
    assert {r.event_id: r.cosine for r in got}["e000004"] == 0.0


def test_a_deleted_vector_is_no_longer_scored(small: Store) -> None:
    v = unit(np.random.default_rng(5), 4)
    small.import_lines([json.dumps(mev(i, embedding={"text": v[i].tolist()})) for i in range(4)])
    assert hybrid_search(small, None, EventFilter(), 1, query_vector=v[2])[0].event_id == "e000002"

    def drop(conn: Any) -> None:
        (rid,) = conn.execute("SELECT id FROM events WHERE event_id = 'e000002'").fetchone()
        conn.execute("DELETE FROM vec_text WHERE rowid = ?", (rid,))

    wait(small.writer.submit(drop))
    got = {r.event_id: r.cosine for r in hybrid_search(small, None, EventFilter(), 4, query_vector=v[2])}
    assert got["e000002"] == 0.0


def test_chinese_query_finds_the_english_event_about_the_same_thing(small: Store) -> None:
    texts = {
        "zh": "顾客在收银台吵架",
        "en": "two customers arguing loudly at the checkout",
        "u1": "the fridge in aisle 3 is making a buzzing noise",
        "u2": "a delivery of fresh vegetables arrived at the back door",
        "u3": "staff restocked the shelves with cereal",
        "u4": "children were laughing near the toy section",
    }
    small.import_lines(
        [
            json.dumps(mev(i, event_id=key, text=t, modality=["text"]))
            for i, (key, t) in enumerate(texts.items())
        ]
    )
    got = hybrid_search(small, "顾客在收银台吵架", EventFilter(), 6)
    assert ids(got)[:2] == ["zh", "en"]
    # the English event alone, queried in Chinese, beats every unrelated text
    got = hybrid_search(small, "两位顾客在收银台大声争吵", EventFilter(event_ids=None), 6)
    ranked = ids(got)
    assert ranked.index("en") < min(ranked.index(u) for u in ("u1", "u2", "u3", "u4"))
    assert got[0].cosine is not None and got[0].cosine > 0.3


def test_value_and_time_parsing() -> None:
    assert parse_value("3") == 3 and parse_value("2.5") == 2.5 and parse_value("true") is True
    assert parse_value("checkout") == "checkout" and parse_value("nan") == "nan"
    assert parse_pair("zone=checkout", "--where") == ("zone", "checkout")
    for bad in ("zone", "1zone=a", "zo ne=a", "zone;DROP=1", "zo\u00f1e=a", "e.zone=x"):
        with pytest.raises(Exception) as err:
            parse_pair(bad, "--where")
        assert getattr(err.value, "exit_code", None) == 2
    assert parse_time("2025-11-01", "--since", "Asia/Shanghai") == datetime(2025, 10, 31, 16, tzinfo=UTC)
    assert parse_time("2025-11-01T09:00:00+08:00", "--since", "UTC") == datetime(2025, 11, 1, 1, tzinfo=UTC)
    for bad in ("2025-11-01T09:00:00", "yesterday", "2025-13-01", "2025-11-01 09:00"):
        with pytest.raises(Exception) as err:
            parse_time(bad, "--since", "UTC")
        assert getattr(err.value, "exit_code", None) == 2
    assert math.isclose(parse_time("2025-11-01T00:00:00Z", "--until", "UTC").timestamp(), T0.timestamp())


def test_type_partitions_include_rows_appended_after_the_layout(small: Store) -> None:
    v = unit(np.random.default_rng(8), 106)
    small.import_lines([json.dumps(mev(i, embedding={"text": v[i].tolist()})) for i in range(100)])
    flt = EventFilter(event_types=("type_3", "type_4"))
    assert ids(hybrid_search(small, None, flt, 1, query_vector=v[13])) == ["e000013"]
    # a few more rows (under the re-layout threshold): they sit in the unsorted tail
    small.import_lines([json.dumps(mev(i, embedding={"text": v[i].tolist()})) for i in range(100, 106)])
    keep = [i for i in range(106) if i % 10 in (3, 4)]
    for target in (103, 104, 23):
        got = hybrid_search(small, None, flt, 10, query_vector=v[target])
        expected = [f"e{keep[j]:06d}" for j in np.argsort(-(v[keep] @ v[target]), kind="stable")[:10]]
        assert ids(got) == expected


def test_concurrent_queries_while_importing(small: Store) -> None:
    import threading

    v = unit(np.random.default_rng(9), 400)
    small.import_lines([json.dumps(mev(i, embedding={"text": v[i].tolist()})) for i in range(100)])
    errors: list[str] = []
    stop = threading.Event()

    def reader(seed: int) -> None:
        rng = np.random.default_rng(seed)
        while not stop.is_set():
            i = int(rng.integers(0, 100))  # always present
            got = hybrid_search(small, None, EventFilter(), 1, query_vector=v[i])
            if ids(got) != [f"e{i:06d}"]:
                errors.append(f"{i}: {ids(got)}")

    threads = [threading.Thread(target=reader, args=(s,)) for s in range(3)]
    for t in threads:
        t.start()
    try:
        for start in range(100, 400, 30):
            small.import_lines(
                [json.dumps(mev(i, embedding={"text": v[i].tolist()})) for i in range(start, start + 30)]
            )
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert errors == []
    assert ids(hybrid_search(small, None, EventFilter(), 1, query_vector=v[377])) == ["e000377"]


def test_attribute_postings_follow_new_and_replaced_events(small: Store) -> None:
    """A filter on a stats key that is not well known is answered from cached postings: the cache
    must follow every change (new events with the value, events replaced without it)."""
    v = unit(np.random.default_rng(11), 60)
    small.import_lines([json.dumps(mev(i, embedding={"text": v[i].tolist()})) for i in range(50)])
    flt = EventFilter(attributes=(("topic", ("returns",)),))
    keep = [i for i in range(50) if i % 10 == 3]
    expected = [f"e{keep[j]:06d}" for j in np.argsort(-(v[keep] @ v[0]), kind="stable")[:3]]
    assert ids(hybrid_search(small, None, flt, 3, query_vector=v[0])) == expected
    assert ids(hybrid_search(small, None, flt, 3, query_vector=v[0])) == expected  # from the cache
    # a new event with the value and the query's own vector: first from now on
    small.import_lines([json.dumps(mev(50, embedding={"text": v[0].tolist()}, stats={"topic": "returns"}))])
    assert ids(hybrid_search(small, None, flt, 1, query_vector=v[0])) == ["e000050"]
    # replaced without the value: gone from the filter
    small.import_lines(
        [json.dumps(mev(50, embedding={"text": v[0].tolist()}, stats={"topic": "other"}))], replace=True
    )
    assert "e000050" not in ids(hybrid_search(small, None, flt, 5, query_vector=v[0]))
    # numbers and booleans match as the SQL filter does; True is not 1
    small.import_lines(
        [
            json.dumps(mev(51, embedding={"text": v[51].tolist()}, stats={"flag": True, "n": 1})),
            json.dumps(mev(52, embedding={"text": v[52].tolist()}, stats={"flag": 1, "n": True})),
        ]
    )
    for values, want in (((True,), ["e000051"]), ((1,), ["e000052"]), ((1.0,), ["e000052"])):
        got = hybrid_search(small, None, EventFilter(attributes=(("flag", values),)), 5, query_vector=v[51])
        assert ids(got) == want


def test_types_and_attribute_postings_combine_like_the_sql_filter(
    big: tuple[Store, np.ndarray, list[dict[str, Any]]],
) -> None:
    store, vectors, events = big
    # each part removes rows the others keep: the types all but two, the lanes half, the topic type_3
    flt = EventFilter(event_types=("type_3", "type_4"), attributes=(("lane", (1, 2)), ("topic", ("other",))))
    keep = np.array([i for i in range(N) if i % 10 in (3, 4) and i % 4 in (1, 2) and i % 10 != 3])
    q = vectors[123]
    expected = [events[i]["event_id"] for i in keep[np.argsort(-(vectors[keep] @ q), kind="stable")[:10]]]
    assert ids(hybrid_search(store, None, flt, 10, query_vector=q)) == expected
    # the general (SQL survivor) path agrees: a soft preference forces it, with beta = 0
    got = hybrid_search(store, None, flt, 10, query_vector=q, prefer=(("zone", "floor"),), beta=0.0)
    assert ids(got) == expected
