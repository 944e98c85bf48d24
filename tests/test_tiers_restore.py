"""Restoring into a memory whose rollup moved on (edge.memory.tiers.restore): an archived event whose
old rowid is taken comes back under a new one, counted once (a late event of its closed day), and
``adamm check`` still finds the memory, its rollup and its archive in agreement."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

from edge.config import AdammConfig, TiersConfig
from edge.memory.integrity import check_memory
from edge.memory.rollup import build as rollup
from edge.memory.store import Store
from edge.memory.tiers.restore import restore
from edge.memory.tiers.steps import Places
from edge.services.ask import AskService
from edge.services.maintain import maintain, tiers_step
from edge.sim.simulator import SimConfig, simulate

NOW = datetime(2025, 3, 2, tzinfo=UTC)
QUESTION = "What was the total revenue?"
#: maintain's tiers step alone: the facts step is tested in test_facts.py and with the tiers in
#: test_tiers_worlds.py
TIERS_ONLY = (("tiers", tiers_step),)


def test_an_archived_event_whose_rowid_is_taken_comes_back_counted_once(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    cfg = AdammConfig(tiers=TiersConfig(warm_after_days=10, cold_after_days=40))
    with Store.open(db, timezone="Asia/Shanghai") as store:
        events = list(
            simulate(SimConfig(start=date(2025, 1, 1), days=60, customers_per_day=10, with_text=False))
        )
        store.import_events(events)
        maintain(store, cfg, NOW, steps=TIERS_ONLY)
        before = AskService(store, cfg, now=NOW).ask(QUESTION)
        assert before["status"] == "ok" and "cold" in before["tiers"]
        with store.read() as conn:
            (eid, rowid_was) = conn.execute(
                "SELECT event_id, rowid_was FROM archive_index WHERE event_id LIKE '%-20250105-%' "
                "ORDER BY rowid_was LIMIT 1"
            ).fetchone()
            (top,) = conn.execute("SELECT max(id) FROM events WHERE event_type <> 'purchase'").fetchone()

        def take_rowid(conn: object) -> None:  # a new event of an open day now holds the archived one's rowid
            cols = [str(r[1]) for r in conn.execute("PRAGMA table_info(events)")]  # type: ignore[attr-defined]
            picked = ", ".join(
                "?" if c == "id" else "'copy-' || event_id" if c == "event_id" else c for c in cols
            )
            conn.execute(  # type: ignore[attr-defined]
                f"INSERT INTO events({', '.join(cols)}) SELECT {picked} FROM events WHERE id = ?",
                (rowid_was, top),
            )
            conn.execute("UPDATE rollup_state SET stale = 1")  # type: ignore[attr-defined]
            rollup.refresh(conn)

        store.writer.submit(take_rowid).result()
        places = Places.of(db, cfg.tiers)
        result = store.writer.submit(lambda conn: restore(conn, places, [eid])).result()
        assert result.reinserted == 1 and [r["event_id"] for r in result.records] == [eid]
        with store.read() as conn:
            (new_id,) = conn.execute("SELECT id FROM events WHERE event_id = ?", (eid,)).fetchone()
        assert new_id != rowid_was
        after = AskService(store, cfg, now=NOW).ask(QUESTION)
        assert after["result"] == before["result"]  # counted once: the closed day stays the record
        with store.read() as conn:
            (late,) = conn.execute(
                "SELECT late_events FROM rollup_days WHERE local_date = '2025-01-05'"
            ).fetchone()
        assert late == 1
    report = check_memory(db)
    assert report.ok, report.problems


def test_importing_an_archived_event_again_is_a_duplicate_and_other_content_is_refused(
    tmp_path: Path,
) -> None:
    """The cold tier's events are still stored: the same lines imported again (twice, with and without
    --replace) are duplicates, not late events of their closed days; a line with other content is
    rejected even with --replace (the closed day's rollup is its record), and nothing changes."""
    db = tmp_path / "store.db"
    cfg = AdammConfig(tiers=TiersConfig(warm_after_days=10, cold_after_days=40))
    events = list(simulate(SimConfig(start=date(2025, 1, 1), days=60, customers_per_day=10, with_text=False)))
    with Store.open(db, timezone="Asia/Shanghai") as store:
        store.import_events(events)
        maintain(store, cfg, NOW, steps=TIERS_ONLY)
        before = AskService(store, cfg, now=NOW).ask(QUESTION)
        with store.read() as conn:
            cold_ids = {str(e) for (e,) in conn.execute("SELECT event_id FROM archive_index")}
            (held,) = conn.execute("SELECT count(*) FROM events").fetchone()
        cold = [e for e in events if e["event_id"] in cold_ids]
        held_ids = {e["event_id"] for e in events} - cold_ids
        assert len(cold) > 100 and held_ids  # the lines span the cold tier and the memory
        for replace in (False, True, True):
            report = store.import_events(events, replace=replace)
            assert (report.accepted, report.duplicates, report.rejected) == (0, len(events), 0)
        changed = [dict(cold[0], text="a different line"), dict(cold[1], text="another line")]
        reasons: list[str] = []
        report = store.import_events(changed, replace=True, on_reject=lambda _n, why: reasons.append(why))
        assert (report.accepted, report.duplicates, report.rejected) == (0, 0, 2)
        assert all("cold archive" in why and "cannot be replaced" in why for why in reasons), reasons
        assert cold[0]["event_id"] in reasons[0]
        store.writer.submit(rollup.refresh).result()
        with store.read() as conn:
            assert conn.execute("SELECT count(*) FROM events").fetchone() == (held,)
            assert conn.execute("SELECT sum(late_events) FROM rollup_days").fetchone() == (0,)
        assert AskService(store, cfg, now=NOW).ask(QUESTION)["result"] == before["result"]
        rerun = maintain(store, cfg, NOW, steps=TIERS_ONLY)
    assert rerun["tiers"]["cold"]["archived"] == 0, rerun  # nothing archived a second time
    report_check = check_memory(db)
    assert report_check.ok, report_check.problems
