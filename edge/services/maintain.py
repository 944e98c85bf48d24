"""The maintain use case: one call that ``adamm maintain`` and the daemon's schedule both make.

:func:`maintain` takes an open, writable memory, the loaded config and ``now`` (the clock the
tiers count age from) and runs the steps in order, returning the report that ``adamm maintain
--json`` prints. Steps (each a function ``(store, config, now) -> dict``, its report under its
name):

1. ``facts``: :func:`facts_step`, the semantic facts distilled from the data new since each
   standing question's high-water mark (:func:`edge.services.facts.distil_facts`); it goes first,
   so the facts read the events before the tiers archive them;
2. ``action_effects``: :func:`action_effects_step`, every action acknowledged done measured
   after against before (:mod:`edge.services.action_effects`), an ``action_effect`` fact each;
3. ``tiers``: :func:`tiers_step`, hot -> warm -> cold (:mod:`edge.memory.tiers.steps`).

Every step works in its own short writer transactions and is safe to interrupt at any point: the
next run finishes the job. A run is logged in ``maintain_runs`` (started, finished, report), which
the daemon's status shows.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from edge.config import AdammConfig
from edge.errors import UsageError

if TYPE_CHECKING:
    import apsw

    from edge.memory.store import Store

logger = logging.getLogger(__name__)

Step = Callable[["Store", AdammConfig, datetime], dict[str, Any]]

#: the settings key recording the archive folder the memory's archive files are in
ARCHIVE_SETTING = "tiers.archive_dir"


def facts_step(store: Store, config: AdammConfig, now: datetime) -> dict[str, Any]:
    """Distil semantic facts (:func:`edge.services.facts.distil_facts`): each standing question's
    new facts, closings and high-water mark in one transaction, so a killed run loses at most the
    question it was in, and the next run asks it again."""
    from edge.services.facts import distil_facts

    return distil_facts(store, config, now)


def action_effects_step(store: Store, config: AdammConfig, now: datetime) -> dict[str, Any]:
    """Measure every action acknowledged done whose window after the ack has passed
    (:func:`edge.services.action_effects.measure_all`): an ``action_effect`` fact each. It goes
    before the tiers, so it reads the events of both windows while they are hot."""
    from edge.services.action_effects import measure_all

    return measure_all(store, config, now)


def tiers_step(store: Store, config: AdammConfig, now: datetime) -> dict[str, Any]:
    """Move aged data down the tiers: warm (quantize, move media, archive), then cold (close the
    days in the rollup, delete the archived events from the events tables)."""
    from edge.memory.search import vector_index
    from edge.memory.tiers import state, steps

    cfg = config.tiers
    places = steps.Places.of(store.path, cfg)
    recorded = store.setting(ARCHIVE_SETTING)
    with store.read() as conn:
        (files,) = conn.execute("SELECT count(*) FROM archive_files").fetchone() or (0,)
    if recorded is not None and recorded != str(places.archive) and int(files):
        raise UsageError(
            f"the archive of {store.path} is in {recorded}, the config says [tiers] archive_dir = {places.archive}",
            hint="move the archive files there and set archive_dir to match, or keep the old folder",
        )
    if recorded != str(places.archive):
        store.set_setting(ARCHIVE_SETTING, str(places.archive))

    def submit(fn: Callable[[apsw.Connection], Any]) -> Any:
        return store.writer.submit(fn).result()

    warm = steps.warm_step(submit, places, cfg, now)
    cold = steps.cold_step(submit, places, cfg, now)
    steps.record_state(submit, cfg, now)
    vector_index.invalidate(store)
    compacted = steps.compact(store.path, cfg.vacuum_free_share)
    with store.read() as conn:
        sizes = state.tier_sizes(conn, places.db, places.archive)
        vectors = state.vector_counts(conn)
    return {
        "warm": warm.as_dict(),
        "cold": cold.as_dict(),
        "events": sizes.events,
        "vectors": vectors,
        "db_bytes": sizes.db_bytes,
        "compacted": compacted,
        "archive_bytes": sizes.archive_bytes,
        "archive_dir": str(places.archive),
        "warm_media_dir": str(places.warm_media),
    }


#: the steps of a run, in order
STEPS: tuple[tuple[str, Step], ...] = (
    ("facts", facts_step),
    ("action_effects", action_effects_step),
    ("tiers", tiers_step),
)


def maintain(
    store: Store,
    config: AdammConfig,
    now: datetime | None = None,
    *,
    steps: Sequence[tuple[str, Step]] | None = None,
) -> dict[str, Any]:
    """Run the maintain steps on ``store`` as of ``now`` (default: the clock); the report:
    ``{"now", "started_at", "finished_at", "elapsed_s", "ok", <step name>: <its report>...}``."""
    if store.readonly:
        raise UsageError(f"{store.path} was opened read-only", hint="maintain needs to write the memory")
    if now is None:
        at = datetime.now(UTC)
    elif now.tzinfo is None:  # store-local, as --now elsewhere
        from zoneinfo import ZoneInfo

        at = now.replace(tzinfo=ZoneInfo(store.timezone())).astimezone(UTC)
    else:
        at = now.astimezone(UTC)
    started = datetime.now(UTC)
    t0 = time.perf_counter()

    def start(conn: apsw.Connection) -> int:
        conn.execute(
            "INSERT INTO maintain_runs(started_at, now) VALUES (?, ?)", (started.isoformat(), at.isoformat())
        )
        return int(conn.last_insert_rowid())

    run_id = int(store.writer.submit(start).result())
    report: dict[str, Any] = {"now": at.isoformat(), "started_at": started.isoformat()}
    for name, step in steps if steps is not None else STEPS:
        logger.info("maintain: %s", name)
        report[name] = step(store, config, at)
    report["finished_at"] = datetime.now(UTC).isoformat()
    report["elapsed_s"] = round(time.perf_counter() - t0, 3)
    report["ok"] = True

    def finish(conn: apsw.Connection) -> None:
        conn.execute(
            "UPDATE maintain_runs SET finished_at = ?, report_json = ? WHERE id = ?",
            (report["finished_at"], json.dumps(report, ensure_ascii=False), run_id),
        )

    store.writer.submit(finish).result()
    return report
