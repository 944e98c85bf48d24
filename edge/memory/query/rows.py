"""Event rows hydrated for evidence and retrieval hits: ``events`` (and its raw refs) -> EventRow.

Owns :func:`rows_by_id` / :func:`fetch_rows` (by local ``events.id``) and
:func:`rows_by_event_id` (by the portable ``event_id`` the rollup cites). Used by the event and
rollup sources (:mod:`edge.memory.query.events_source`, :mod:`edge.memory.query.rollup_source`) and by hybrid
retrieval (:mod:`edge.memory.search.retrieval`); it imports neither, so no cycle.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from edge.analysis.source import EventRow

#: the result events, a row each: rowid, event_id, ts, type, store, text, stats JSON and the raw_refs
#: as a JSON array in ``seq`` order (the ordered subquery reads the primary key in order, so no
#: sort is needed); ``{}``: the id placeholders
_FETCH_SQL = (
    "SELECT e.id, e.event_id, e.ts, e.event_type, e.store_id, e.text, e.stats_json, "
    "(SELECT json_group_array(s.ref) FROM "
    "(SELECT r.ref FROM raw_refs AS r WHERE r.event_rowid = e.id ORDER BY r.seq) AS s) "
    "FROM events AS e WHERE e.id IN ({})"
)
#: ids bound per statement (SQLite's default limit on host parameters is far above)
_FETCH_CHUNK = 500


def rows_by_id(
    conn: Any, ids: Sequence[int], scores: Mapping[int, tuple[float, float, float]] | None = None
) -> dict[int, EventRow]:
    """EventRows (without scores) of the events with these ``events.id`` values, by id (ids no
    longer present are missing): one statement per 500 ids, ids bound, JSON parsed by orjson.
    ``scores``: id -> (score, cosine, attr_match) of search hits, rounded into the rows."""
    found: dict[int, EventRow] = {}
    wanted = [int(i) for i in ids]
    loads = orjson.loads  # exact here: import keeps integers within 64 bits
    for at in range(0, len(wanted), _FETCH_CHUNK):
        part = wanted[at : at + _FETCH_CHUNK]
        for rowid, event_id, ts, event_type, store_id, text, stats_json, refs in conn.execute(
            _FETCH_SQL.format(",".join("?" * len(part))), part
        ):
            stats = loads(stats_json) if stats_json else None
            sc = scores.get(rowid) if scores else None
            found[rowid] = EventRow(
                event_id=event_id,
                timestamp=ts,
                event_type=event_type,
                store_id=store_id,
                raw_ref=tuple(loads(refs)),
                text=text,
                stats=stats if isinstance(stats, dict) else {},
                score=round(sc[0], 6) if sc else None,
                cosine=round(sc[1], 6) if sc else None,
                attr_match=round(sc[2], 6) if sc else None,
            )
    return found


def fetch_rows(
    conn: Any, ids: Sequence[int], scores: Mapping[int, tuple[float, float, float]] | None = None
) -> list[EventRow]:
    """EventRows for events.id values, in the order given (missing ids are skipped); ``scores`` as
    :func:`rows_by_id` takes them."""
    wanted = [int(i) for i in ids]
    rows = rows_by_id(conn, wanted, scores)
    return [rows[i] for i in wanted if i in rows]


def rows_by_event_id(conn: Any, event_ids: Sequence[str]) -> dict[str, EventRow]:
    """EventRows of the events with these ``event_id`` values, by event id (ids of events no
    longer held, e.g. of a closed day whose events were archived, are missing)."""
    wanted = list(dict.fromkeys(str(e) for e in event_ids))
    rowids: list[int] = []
    for at in range(0, len(wanted), _FETCH_CHUNK):
        part = wanted[at : at + _FETCH_CHUNK]
        rowids.extend(
            int(r[0])
            for r in conn.execute(
                f"SELECT id FROM events WHERE event_id IN ({','.join('?' * len(part))})", part
            )
        )
    return {row.event_id: row for row in rows_by_id(conn, rowids).values()}


def archived_event_ids(conn: Any, event_ids: Sequence[str]) -> set[str]:
    """Those of ``event_ids`` that the cold archive holds (``archive_index``; each restorable by
    ``adamm restore``). Empty on a memory without an archive."""
    wanted = list(dict.fromkeys(str(e) for e in event_ids))
    if (
        not wanted
        or conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'archive_index'"
        ).fetchone()
        is None
    ):
        return set()
    found: set[str] = set()
    for at in range(0, len(wanted), _FETCH_CHUNK):
        part = wanted[at : at + _FETCH_CHUNK]
        found.update(
            str(r[0])
            for r in conn.execute(
                f"SELECT event_id FROM archive_index WHERE event_id IN ({','.join('?' * len(part))})", part
            )
        )
    return found
