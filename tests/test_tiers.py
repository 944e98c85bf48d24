"""Hot/warm/cold tiers (edge.memory.tiers, edge.services.maintain, adamm maintain / restore / check)
on 14 months of one simulated store (a small events-per-day rate, transcripts with their computed
text vectors, multi-line bills) plus a few events of our own: some with supplied float32 vectors,
some with media files that exist.

Answers before and after ``adamm maintain`` are compared (additive metrics exactly, means within
1%), archived events are restored and compared with the imported lines, ``maintain`` is SIGKILLed
at several points and rerun (then: equal answers, ``adamm check`` sound, hot + archived-only =
imported), and ``adamm check`` finds damage planted in the archive.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edge.analysis.engine import build_filter
from edge.analysis.source import EventFilter
from edge.config import AdammConfig, TiersConfig
from edge.memory.db.migrations import VECTOR_DIM
from edge.memory.search.retrieval import hybrid_search
from edge.memory.store import Store
from edge.memory.tiers.records import dequantize, quantize
from edge.services.ask import AskService
from edge.services.maintain import maintain, tiers_step
from edge.sim.simulator import SimConfig, simulate

ROOT = Path(__file__).resolve().parents[1]
TZ = "Asia/Shanghai"
START = date(2024, 9, 1)
DAYS = 425  # 14 months
NOW = datetime.fromisoformat("2025-10-31T00:00:00+08:00")
STORE = "sh_xuhui_01"
#: maintain's tiers step alone where a test is about the tiers: the facts step (most of a run's
#: time) runs in the `maintained` fixture here, and is tested in test_facts.py and test_tiers_worlds.py
TIERS_ONLY = (("tiers", tiers_step),)

#: (question, its intent) asked before and after maintain
QUESTIONS: list[tuple[str, str]] = [
    ("What was the revenue over the last 12 months?", "aggregate"),
    ("过去一年的客流量是多少？", "aggregate"),
    ("过去一年的投诉数是多少？", "aggregate"),
    ("过去一年的平均排队长度是多少？", "aggregate"),
    ("雨天和晴天的客单价差多少？", "compare"),
    ("周末和工作日的转化率差多少？", "compare"),
    ("过去一年每月营业额的趋势", "trend"),
    ("Break down footfall by weather over the last year", "breakdown"),
    ("过去一年营业额最高的商品类别", "top_k"),
]
#: the split-bill gap: a closed day's distinct-bill count lacks the bills whose lines the rollup
#: split over several rows (they are counted from their events, which the cold tier deletes);
#: the rollup change that makes a closed day's rows alone exact closes it
ORDER_COUNT_QUESTION = "过去一年的订单数是多少？"

ADDITIVE = {"event_count", "footfall", "order_count", "revenue", "complaint_count"}


@dataclass
class Base:
    db: Path
    lines: dict[str, dict[str, Any]]  # event_id -> the imported MEV
    before: dict[str, dict[str, Any]]
    order_count_before: dict[str, Any]
    media: list[Path]


def _own_events(media_dir: Path) -> list[dict[str, Any]]:
    """Events with supplied float32 vectors (cold), and events whose media files exist (warm and cold)."""
    rng = np.random.default_rng(11)
    out: list[dict[str, Any]] = []
    for i in range(40):
        day = START + timedelta(days=3 + i * 5)
        vec = rng.standard_normal(VECTOR_DIM).astype(np.float32)
        vec /= np.linalg.norm(vec)
        out.append(
            {
                "event_id": f"own-vec-{i:03d}",
                "timestamp": f"{day.isoformat()}T03:{i % 60:02d}:07.250Z",
                "store_id": STORE,
                "source": "ticket",
                "event_type": "staff_note",
                "modality": ["text", "image"],
                "embedding": {"image": [float(x) for x in vec]},
                "text": f"shelf {i} restocked",
                "entities": ["staff_01", "aisle_3"],
                "relations": [{"head": "staff_01", "type": "restocked", "tail": "aisle_3"}],
                "stats": {"zone": "aisle", "note_len": i, "checked": True},
                "raw_ref": [f"pos://ticket/{i}"],
            }
        )
    for i in range(12):
        day = START + timedelta(days=30 * i + 10) if i < 11 else date(2025, 10, 28)  # the last one is hot
        path = media_dir / "cam" / f"clip_{i:02d}.mp4"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(f"frame data {i}".encode())
        out.append(
            {
                "event_id": f"own-media-{i:03d}",
                "timestamp": f"{day.isoformat()}T12:00:00+08:00",
                "store_id": STORE,
                "event_type": "dwell",
                "modality": ["video"],
                "stats": {"dwell_seconds": 10.0 + i, "zone": "entrance"},
                "raw_ref": [path.as_uri() if i % 2 else str(path)],
            }
        )
    return out


def _ask(store: Store, question: str) -> dict[str, Any]:
    return AskService(store, AdammConfig(), now=NOW).ask(question)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Base:
    root = tmp_path_factory.mktemp("tiers")
    db = root / "base" / "store.db"
    db.parent.mkdir()
    media_dir = root / "media"
    sim = SimConfig(start=START, days=DAYS, customers_per_day=20, seed=5)
    events = list(simulate(sim)) + _own_events(media_dir)
    with Store.open(db, timezone=TZ) as store:
        report = store.import_events(events)
        assert report.rejected == 0 and report.accepted == len(events)
        before = {q: _ask(store, q) for q, _ in QUESTIONS}
        order_count = _ask(store, ORDER_COUNT_QUESTION)
    for q, p in before.items():
        assert p["status"] == "ok", (q, p["summary"])
        assert p["tiers"] == ["hot"], q
    lines = {e["event_id"]: json.loads(json.dumps(e)) for e in events}
    return Base(db, lines, before, order_count, sorted(media_dir.rglob("*.mp4")))


def _copy(base: Base, dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / "store.db"
    shutil.copy(base.db, target)
    # the media files move: every copy gets its own
    return target


def _put_media_back(base: Base, warm: Path) -> None:
    """Move the media files a maintain run moved into ``warm`` back where the base memory has them."""
    for p in sorted(warm.rglob("*.mp4")):
        original = next(m for m in base.media if m.name == p.name)
        original.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(p, original)


def _config(tmp: Path, **tiers: Any) -> AdammConfig:
    return AdammConfig(tiers=TiersConfig(warm_media_dir=str(tmp / "warm-media"), **tiers))


def _same(before: dict[str, Any], after: dict[str, Any], metric_additive: bool) -> None:
    """Equal results: numbers equal when additive, within 1% for means and ratios."""

    def walk(a: Any, b: Any, path: str) -> None:
        if isinstance(a, dict):
            assert isinstance(b, dict) and set(a) == set(b), path
            for k in a:
                if k in ("p_value", "slope_per_bucket"):
                    continue  # a test statistic over means: the contract bounds the means
                walk(a[k], b[k], f"{path}.{k}")
        elif isinstance(a, list):
            assert isinstance(b, list) and len(a) == len(b), path
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                walk(x, y, f"{path}[{i}]")
        elif isinstance(a, bool) or a is None or isinstance(a, str):
            assert a == b, path
        elif isinstance(a, int | float):
            if metric_additive or path.endswith((".n", "n")):
                assert a == pytest.approx(b, rel=1e-9, abs=1e-6), path
            else:
                assert math.isclose(a, b, rel_tol=0.01, abs_tol=1e-9), (path, a, b)

    walk(before["result"], after["result"], "result")


def _metric(payload: dict[str, Any]) -> str:
    return str(payload["plan"].get("metric", ""))


def _imported_total(store: Store) -> int:
    with store.read() as conn:
        (hot,) = conn.execute("SELECT count(*) FROM events").fetchone()
        (only_archived,) = conn.execute(
            "SELECT count(*) FROM archive_index AS a WHERE NOT EXISTS "
            "(SELECT 1 FROM events AS e WHERE e.event_id = a.event_id)"
        ).fetchone()
    return int(hot) + int(only_archived)


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "edge", *args],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=ROOT,
        timeout=600,
    )


def _evidence_restorable(store: Store, payload: dict[str, Any]) -> None:
    ids = [e["event_id"] for e in payload["evidence"]]
    with store.read() as conn:
        for eid in ids:
            held = conn.execute("SELECT 1 FROM events WHERE event_id = ?", (eid,)).fetchone()
            archived = conn.execute("SELECT 1 FROM archive_index WHERE event_id = ?", (eid,)).fetchone()
            assert held or archived, f"evidence {eid} is neither in the memory nor in the archive"


# -- answers before and after ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def maintained(
    base: Base, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Store, dict[str, Any]]]:
    tmp = tmp_path_factory.mktemp("maintained")
    db = _copy(base, tmp)
    store = Store.open(db)
    report = maintain(store, _config(tmp), NOW)
    _put_media_back(base, tmp / "warm-media")
    yield store, report
    store.close()


def test_maintain_moves_old_data_down_the_tiers(maintained: tuple[Store, dict[str, Any]], base: Base) -> None:
    store, report = maintained
    tiers = report["tiers"]
    assert tiers["cold"]["days_closed"] > 0 and tiers["cold"]["events"] > 0
    assert tiers["warm"]["events"] >= tiers["cold"]["events"]  # every cold event was warm first
    assert tiers["events"]["hot"] > 0 and tiers["events"]["warm"] > 0 and tiers["events"]["cold"] > 0
    assert _imported_total(store) == len(base.lines)
    warm_before = (NOW - timedelta(days=30)).timestamp()
    with store.read() as conn:
        (old_hot,) = conn.execute(
            "SELECT count(*) FROM events WHERE tier = 'hot' AND ts_epoch < ?", (warm_before,)
        ).fetchone()
        (cold_left,) = conn.execute("SELECT count(*) FROM events WHERE local_date < '2025-05-04'").fetchone()
        (warm_float,) = conn.execute(
            "SELECT count(*) FROM vec_text_rowids WHERE rowid IN (SELECT id FROM events WHERE tier = 'warm')"
        ).fetchone()
        (warm_int8,) = conn.execute("SELECT count(*) FROM vec_text_warm").fetchone()
    assert old_hot == 0 and cold_left == 0 and warm_float == 0 and warm_int8 > 0
    assert tiers["vectors"]["int8"] == warm_int8


def test_a_second_run_has_nothing_left_to_do(maintained: tuple[Store, dict[str, Any]], base: Base) -> None:
    store, _ = maintained
    again = maintain(store, AdammConfig(tiers=TiersConfig(warm_media_dir=None)), NOW, steps=TIERS_ONLY)[
        "tiers"
    ]
    assert again["warm"]["events"] == 0 and again["cold"]["events"] == 0 and again["cold"]["days_closed"] == 0
    assert _imported_total(store) == len(base.lines)


@pytest.mark.parametrize("question", [q for q, _ in QUESTIONS])
def test_answers_equal_before_and_after_maintain(
    question: str, maintained: tuple[Store, dict[str, Any]], base: Base
) -> None:
    store, _ = maintained
    before = base.before[question]
    after = _ask(store, question)
    assert after["status"] == "ok", after["summary"]
    assert after["tiers"] == ["hot", "warm", "cold"]
    _same(before, after, _metric(before) in ADDITIVE)
    assert after["evidence"], question
    _evidence_restorable(store, after)


def test_order_count_equal_before_and_after_maintain(
    maintained: tuple[Store, dict[str, Any]], base: Base
) -> None:
    store, _ = maintained
    after = _ask(store, ORDER_COUNT_QUESTION)
    assert after["result"]["value"] == base.order_count_before["result"]["value"]  # the split-bill gap


def test_the_payload_names_the_tiers_its_range_reaches(maintained: tuple[Store, dict[str, Any]]) -> None:
    store, _ = maintained
    assert _ask(store, "What was the revenue last week?")["tiers"] == ["hot"]
    assert _ask(store, "What was the revenue over the last 3 months?")["tiers"] == ["hot", "warm"]
    assert _ask(store, "What was the revenue over the last 12 months?")["tiers"] == ["hot", "warm", "cold"]


def test_a_retrieval_over_the_archive_says_so(maintained: tuple[Store, dict[str, Any]]) -> None:
    store, _ = maintained
    payload = _ask(store, "pull up video clips of complaints last year")
    assert payload["plan"]["intent"] == "retrieve" and "cold" in payload["tiers"]
    flt = build_filter(payload["plan"], NOW, TZ)
    assert flt.since is not None and flt.until is not None
    with store.read() as conn:
        (n,) = conn.execute(
            "SELECT count(*) FROM archive_index AS a WHERE NOT EXISTS "
            "(SELECT 1 FROM events AS e WHERE e.event_id = a.event_id) AND a.ts >= ? AND a.ts < ?",
            (math.floor(flt.since.timestamp()), math.ceil(flt.until.timestamp())),
        ).fetchone()
    assert n > 0 and payload["notes"] == [
        f"{n} older events of this time range are only in the cold archive and were not searched "
        "(adamm restore brings them back)."
    ]
    assert "notes" not in _ask(store, "pull up video clips of complaints last week")


def test_search_covers_hot_and_warm_and_notes_the_archive(
    maintained: tuple[Store, dict[str, Any]], tmp_path: Path
) -> None:
    store, _ = maintained
    since = NOW - timedelta(days=120)  # warm
    rows = hybrid_search(store, "排队太久了", EventFilter(since=since, until=NOW - timedelta(days=40)), 10)
    assert rows and all(r.cosine is not None and r.cosine > 0 for r in rows)
    with store.read() as conn:
        tiers = {
            str(t)
            for (t,) in conn.execute(
                "SELECT tier FROM events WHERE event_id IN (SELECT value FROM json_each(?))",
                (json.dumps([r.event_id for r in rows]),),
            )
        }
    assert tiers == {"warm"}
    out = _cli("search", "--db", str(store.path), "--since", "2024-10-01", "--until", "2024-11-01", "排队")
    assert out.returncode == 0, out.stderr
    with store.read() as conn:
        (n,) = conn.execute(
            "SELECT count(*) FROM archive_index WHERE ts >= ? AND ts < ?",
            (
                int(datetime.fromisoformat("2024-10-01T00:00:00+08:00").timestamp()),
                int(datetime.fromisoformat("2024-11-01T00:00:00+08:00").timestamp()),
            ),
        ).fetchone()
    assert n > 0 and f"{n} older events of this time range are only in the cold archive" in out.stderr


def test_check_passes_after_maintain(maintained: tuple[Store, dict[str, Any]]) -> None:
    store, _ = maintained
    out = _cli("check", "--db", str(store.path))
    assert out.returncode == 0, out.stdout + out.stderr


# -- media -------------------------------------------------------------------------------------------


def test_media_of_warm_events_moves_and_missing_files_are_reported(base: Base, tmp_path: Path) -> None:
    # this memory's own media files: the base's were moved by no one (every copy starts from them)
    db = _copy(base, tmp_path / "m")
    cfg = _config(tmp_path)
    before = {p: p.read_bytes() for p in base.media}
    with Store.open(db) as store:
        report = maintain(store, cfg, NOW, steps=TIERS_ONLY)["tiers"]["warm"]
        with store.read() as conn:
            refs: dict[str, list[str]] = {}
            for eid, ref in conn.execute(
                "SELECT e.event_id, r.ref FROM events AS e JOIN raw_refs AS r ON r.event_rowid = e.id "
                "WHERE e.event_id LIKE 'own-media-%' ORDER BY e.event_id, r.seq"
            ):
                refs.setdefault(str(eid), []).append(str(ref))
    warm = tmp_path / "warm-media"
    moved = sorted(warm.rglob("*.mp4"))
    # the media of the 11 events older than 30 days moved; the newest one's stayed
    assert len(moved) == 11 and report["media_moved"] == 11
    assert {p.name: p.read_bytes() for p in moved} == {
        p.name: before[p] for p in base.media if p.name in {m.name for m in moved}
    }
    assert [p.name for p in base.media if p.exists()] == ["clip_11.mp4"]
    # the simulator's media references name files that do not exist: reported, not an error
    assert report["media_missing"] > 0 and report["missing_media"][0].startswith(
        "file:///var/lib/adamm/media/"
    )
    for eid, r in refs.items():
        i = int(eid.rsplit("-", 1)[1])
        if i == 11:
            assert r == [base.lines[eid]["raw_ref"][0]]
        else:
            assert Path(r[0].removeprefix("file://")).is_relative_to(warm), r
            assert r[0].startswith("file://") == (i % 2 == 1)
    _put_media_back(base, warm)


# -- restore -----------------------------------------------------------------------------------------


def test_restore_returns_archived_events_exactly_and_back_into_the_hot_tier(
    base: Base, tmp_path: Path
) -> None:
    db = _copy(base, tmp_path / "r")
    cfg = _config(tmp_path)
    with Store.open(db) as store:
        maintain(store, cfg, NOW, steps=TIERS_ONLY)
        _put_media_back(base, tmp_path / "warm-media")
        with store.read() as conn:
            cold = [
                str(e)
                for (e,) in conn.execute(
                    "SELECT event_id FROM archive_index AS a WHERE NOT EXISTS "
                    "(SELECT 1 FROM events AS e WHERE e.event_id = a.event_id) ORDER BY event_id"
                )
            ]
            bills = [
                str(e)
                for (e,) in conn.execute(
                    "SELECT event_id FROM archive_index WHERE event_id IN (SELECT value FROM json_each(?))",
                    (json.dumps([k for k, v in base.lines.items() if v["event_type"] == "purchase"]),),
                )
            ]
    own = [e for e in cold if e.startswith("own-vec-")]
    assert len(own) >= 20
    sample = own[:5] + cold[:: max(1, len(cold) // 40)][:40] + bills[:20]
    sample = list(dict.fromkeys(sample))
    out = _cli("restore", "--db", str(db), "--json", *sample, "no-such-event")
    assert out.returncode == 1, out.stderr
    assert out.stderr.strip().splitlines() == [
        f"adamm restore: argument {len(sample) + 1}: no-such-event: no such event in the memory or its archive"
    ]
    printed = [json.loads(line) for line in out.stdout.splitlines()]
    assert [p["event_id"] for p in printed] == sample
    for p in printed:
        want = base.lines[p["event_id"]]
        if "embedding" in want:
            got_vec = np.asarray(p["embedding"]["image"], dtype=np.float32)
            want_vec = np.asarray(want["embedding"]["image"], dtype=np.float32)
            assert np.array_equal(got_vec, want_vec)
            assert {k: v for k, v in p.items() if k != "embedding"} == {
                k: v for k, v in want.items() if k != "embedding"
            }
        else:
            assert p == want  # every field, spelled as imported (the local offset included)
    with Store.open(db) as store:
        with store.read() as conn:
            tiers = dict(
                conn.execute(
                    "SELECT event_id, tier FROM events WHERE event_id IN (SELECT value FROM json_each(?))",
                    (json.dumps(sample),),
                ).fetchall()
            )
        assert set(tiers) == set(sample) and set(tiers.values()) == {"hot"}
        assert _imported_total(store) == len(base.lines)
        # a closed day stays the record: nothing is counted twice
        for q in ("What was the revenue over the last 12 months?", "过去一年的客流量是多少？"):
            assert _ask(store, q)["result"] == base.before[q]["result"]
        # a restored event is found by search again
        rows = hybrid_search(
            store,
            "shelf restocked",
            EventFilter(event_types=("staff_note",), since=datetime(2024, 1, 1, tzinfo=UTC)),
            5,
        )
        assert {r.event_id for r in rows} <= set(sample) and rows
        # kept hot for restore_keep_days (from the restore, by the clock), then dropped from the
        # events tables again (still archived)
        assert maintain(store, cfg, NOW, steps=TIERS_ONLY)["tiers"]["cold"]["events"] == 0
        wall = datetime.now(UTC)
        maintain(
            store, cfg, wall, steps=TIERS_ONLY
        )  # every simulated day is cold by now: the restored ones stay hot
        with store.read() as conn:
            held = {
                str(e): str(t)
                for e, t in conn.execute(
                    "SELECT event_id, tier FROM events WHERE event_id IN (SELECT value FROM json_each(?))",
                    (json.dumps(sample),),
                )
            }
        assert held == {e: "hot" for e in sample}
        maintain(store, cfg, wall + timedelta(days=31), steps=TIERS_ONLY)
        with store.read() as conn:
            (left,) = conn.execute("SELECT count(*) FROM events").fetchone()
            (archived,) = conn.execute(
                "SELECT count(*) FROM archive_index WHERE event_id IN (SELECT value FROM json_each(?))",
                (json.dumps(sample),),
            ).fetchone()
        assert left == 0 and archived == len(sample)
        assert _imported_total(store) == len(base.lines)
    check = _cli("check", "--db", str(db))
    assert check.returncode == 0, check.stdout


# -- interrupted runs --------------------------------------------------------------------------------

#: in the order a run passes them (each run starts where the killed one left off; the media of our
#: own events are in the last warm batch, their events being the last imported)
CRASH_POINTS = [
    "warm_batch:2",
    "archive_written:3",
    "warm_committed:4",
    "media_moved:1",
    "days_closed:1",
    "cold_deleted:2",
    "cold_committed:3",
]


def test_sigkill_at_several_points_then_rerun(base: Base, tmp_path: Path) -> None:
    db = _copy(base, tmp_path / "k")
    conf = tmp_path / "edge.toml"
    conf.write_text(
        f'[tiers]\nbatch_events = 4000\nwarm_media_dir = "{tmp_path / "warm-media"}"\n', encoding="utf-8"
    )
    now = NOW.isoformat()
    for point in CRASH_POINTS:
        out = _cli(
            "maintain",
            "--db",
            str(db),
            "--now",
            now,
            "--config",
            str(conf),
            env={"ADAMM_MAINTAIN_CRASH": point},
        )
        assert out.returncode == -signal.SIGKILL, (point, out.returncode, out.stderr)
    out = _cli("maintain", "--db", str(db), "--now", now, "--config", str(conf), "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["ok"] is True
    check = _cli("check", "--db", str(db))
    assert check.returncode == 0, check.stdout + check.stderr
    with Store.open(db) as store:
        assert _imported_total(store) == len(base.lines)
        for q, _ in QUESTIONS:
            after = _ask(store, q)
            assert after["tiers"] == ["hot", "warm", "cold"], q
            _same(base.before[q], after, _metric(base.before[q]) in ADDITIVE)
        with store.read() as conn:
            (files,) = conn.execute("SELECT count(*) FROM archive_files").fetchone()
            sizes = {str(f): int(s) for f, s in conn.execute("SELECT file, size FROM archive_files")}
    assert files > 0
    for name, size in sizes.items():
        assert (db.parent / name).stat().st_size == size  # interrupted writes were cut off
    _put_media_back(base, tmp_path / "warm-media")


# -- adamm check finds damage ------------------------------------------------------------------------


def test_check_reports_a_damaged_archive_and_missing_events(base: Base, tmp_path: Path) -> None:
    db = _copy(base, tmp_path / "c")
    with Store.open(db) as store:
        maintain(store, _config(tmp_path, warm_after_days=200, cold_after_days=300), NOW, steps=TIERS_ONLY)
    _put_media_back(base, tmp_path / "warm-media")
    files = sorted(db.parent.glob("store.db.*.mev.jsonl.gz"))
    assert files
    data = files[0].read_bytes()
    files[0].write_bytes(data[: len(data) // 2])
    from edge.memory.db.connect import connect

    conn = connect(db)
    (victim,) = conn.execute(
        "SELECT event_id FROM archive_index AS a JOIN archive_members AS m ON m.id = a.member "
        "JOIN archive_files AS f ON f.id = m.file_id WHERE f.file <> ? AND NOT EXISTS "
        "(SELECT 1 FROM events AS e WHERE e.event_id = a.event_id) AND a.event_id LIKE 'sh_%' ORDER BY a.event_id LIMIT 1",
        (files[0].name,),
    ).fetchone()
    conn.execute("DELETE FROM archive_index WHERE event_id = ?", (victim,))
    conn.close()
    out = _cli("check", "--db", str(db))
    assert out.returncode == 3
    lines = out.stdout.strip().splitlines()
    assert any(line.startswith(f"archive: archive file {files[0]} is cut short") for line in lines), lines
    day = f"{victim[12:16]}-{victim[16:18]}-{victim[18:20]}"  # sh_xuhui_01-YYYYMMDD-nnnnnn
    assert any(line.startswith(f"tier_counts: store sh_xuhui_01 day {day}: ") for line in lines), lines


# -- warm vectors ------------------------------------------------------------------------------------


def test_int8_vectors_keep_recall_at_10_against_float32() -> None:
    rng = np.random.default_rng(3)
    centers = rng.standard_normal((40, VECTOR_DIM)).astype(np.float32)
    base = centers[rng.integers(0, 40, 5000)] + 0.6 * rng.standard_normal((5000, VECTOR_DIM)).astype(
        np.float32
    )
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    deq = np.stack([dequantize(q, s) for s, q in (quantize(v) for v in base)])
    deq /= np.linalg.norm(deq, axis=1, keepdims=True)
    queries = base[rng.choice(5000, 200, replace=False)] + 0.3 * rng.standard_normal(
        (200, VECTOR_DIM)
    ).astype(np.float32)
    hits = 0
    for q in queries:
        truth = set(np.argsort(-(base @ q))[:10])
        got = set(np.argsort(-(deq @ q))[:10])
        hits += len(truth & got)
    recall = hits / (10 * len(queries))
    assert recall >= 0.95, recall


def test_the_tiers_config_is_checked() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="cold_after_days"):
        TiersConfig(warm_after_days=30, cold_after_days=30)
    with pytest.raises(ValidationError):
        TiersConfig(maintain_at="25:00")
    with pytest.raises(ValidationError):
        TiersConfig.model_validate({"warm_days": 3})
