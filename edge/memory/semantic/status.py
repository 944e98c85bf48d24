"""Status counts of a memory: events per storage tier, outbox summaries not yet confirmed by the hub."""

from __future__ import annotations

import apsw


def tier_counts(conn: apsw.Connection) -> dict[str, int]:
    """Number of events per storage tier (``cold``: archived events no longer in the events
    tables, :mod:`edge.memory.tiers`; absent while there are none)."""
    from edge.memory.tiers import archive_only_count

    out = {str(t): int(n) for t, n in conn.execute("SELECT tier, COUNT(*) FROM events GROUP BY tier")}
    cold = archive_only_count(conn, None, None)
    if cold:
        out["cold"] = cold
    return out


def outbox_depth(conn: apsw.Connection) -> int:
    """Number of outbox summaries the hub has not confirmed yet (``adamm sync``)."""
    return int(next(iter(conn.execute("SELECT COUNT(*) FROM outbox WHERE state = 'pending'")))[0])


def store_ids(conn: apsw.Connection) -> list[str]:
    """The stores this memory holds events of (the ``stores`` table), sorted."""
    return [str(s) for (s,) in conn.execute("SELECT store_id FROM stores ORDER BY store_id")]
