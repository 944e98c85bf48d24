"""``adamm-hub status``: the stores the hub knows, what it received from each and what it parked.

:func:`hub_status` reads (never writes) the hub store into one JSON-ready dict::

    {"stores": [{"store_id", "tz", "status", "status_at", "status_received_at",
                 "last_summary_at", "counts": {"rollup": N, "fact": N}, "days": N,
                 "first_day", "last_day", "parked": N,
                 "diverged": [{"key", "hub_version", "store_version", "at"}]}],
     "parked": {"count": N, "by_reason": {reason: N}, "latest": [{"received_at", "topic",
                "store_id", "msg_id", "reason", "detail"}]},
     "components": [{"name", "state", "since", "failures", "last_error", "at"}]}

``components``: the health the serve workers' long-running parts wrote (``actions/worker-N``, the
action sender: ``ok``, ``failing`` while its rounds fail, ``stopped`` when it gave up and the
worker exited 3), so a part that keeps failing shows here, not only in the worker's log.

``diverged``: the keys whose versions went backwards at the store (the hub held ``hub_version``,
the store sent ``store_version`` at ``at``, then its current content above the hub's version:
a rebuilt or restored memory, a new box for the store id, or a forged higher version); the hub
holds the store's content since. ``counts`` are the keys held per kind (one per rollup day and slice, one per fact).
:func:`render` words it for a terminal.
"""

from __future__ import annotations

from typing import Any

from edge.sync.messages import KINDS
from hub.db import HubDB

LATEST_PARKED = 10


def hub_status(db: HubDB) -> dict[str, Any]:
    stores: dict[str, dict[str, Any]] = {}
    known = db.query(
        "SELECT store_id, tz, status, status_at, status_received_at, last_summary_at FROM hub_stores"
    )
    held = {r[0] for r in known}
    # a store whose every message was parked is known too (its parked messages say why)
    known += [
        (sid, None, None, None, None, None)
        for (sid,) in db.query("SELECT DISTINCT store_id FROM hub_parked WHERE store_id IS NOT NULL")
        if sid not in held
    ]
    for sid, tz, status, at, rec, last in known:
        stores[sid] = {
            "store_id": sid,
            "tz": tz,
            "status": status,
            "status_at": at,
            "status_received_at": rec,
            "last_summary_at": last,
            "counts": dict.fromkeys(KINDS, 0),
            "days": 0,
            "first_day": None,
            "last_day": None,
            "parked": 0,
            "diverged": [],
        }
    for sid, kind, n in db.query(
        "SELECT store_id, kind, count(*) FROM hub_summaries GROUP BY store_id, kind"
    ):
        if sid in stores:
            stores[sid]["counts"][kind] = int(n)
    for sid, days, lo, hi in db.query(
        "SELECT store_id, count(DISTINCT local_date), min(local_date), max(local_date) FROM hub_rollup "
        "WHERE slice = 'total' GROUP BY store_id"
    ):
        if sid in stores:
            stores[sid].update(days=int(days), first_day=lo, last_day=hi)
    for sid, key, hub_v, store_v, at in db.query(
        "SELECT store_id, key, hub_version, store_version, at FROM hub_diverged "
        "WHERE confirmed_at IS NOT NULL ORDER BY store_id, at, key"
    ):
        if sid in stores:
            stores[sid]["diverged"].append(
                {"key": key, "hub_version": int(hub_v), "store_version": int(store_v), "at": at}
            )
    by_reason: dict[str, int] = {}
    total = 0
    for sid, reason, n in db.query(
        "SELECT store_id, reason, count(*) FROM hub_parked GROUP BY store_id, reason ORDER BY reason"
    ):
        total += int(n)
        by_reason[reason] = by_reason.get(reason, 0) + int(n)
        if sid in stores:
            stores[sid]["parked"] += int(n)
    latest = [
        {"received_at": r[0], "topic": r[1], "store_id": r[2], "msg_id": r[3], "reason": r[4], "detail": r[5]}
        for r in db.query(
            "SELECT received_at, topic, store_id, msg_id, reason, detail FROM hub_parked "
            f"ORDER BY id DESC LIMIT {LATEST_PARKED}"
        )
    ]
    components = [
        {"name": r[0], "state": r[1], "since": r[2], "failures": int(r[3]), "last_error": r[4], "at": r[5]}
        for r in db.query(
            "SELECT name, state, since, failures, last_error, at FROM hub_components ORDER BY name"
        )
    ]
    return {
        "stores": [stores[s] for s in sorted(stores)],
        "parked": {"count": total, "by_reason": by_reason, "latest": latest},
        "components": components,
    }


#: at most this many parked messages are listed per store in ``--json`` (the newest)
PARKED_LISTED = 1000


def status_json(db: HubDB) -> dict[str, Any]:
    """``adamm-hub status --json`` as CONTRACT.md section 5 words it: per store ``store_id``,
    ``state``, ``at``, ``last_summary_at``, ``days`` ``{"first", "last"}``, ``counts``, ``parked``
    (``[{"msg_id", "reason", "at"}]``, the newest :data:`PARKED_LISTED`) and ``diverged``; also
    ``tz``, ``status_received_at`` and ``days.count`` per store, and the fleet's ``parked``
    summary (``count``, ``by_reason``, ``latest``)."""
    st = hub_status(db)
    parked: dict[str, list[dict[str, Any]]] = {}
    for sid, mid, reason, at in db.query(
        "SELECT store_id, msg_id, reason, received_at FROM hub_parked WHERE store_id IS NOT NULL "
        "ORDER BY id DESC"
    ):
        got = parked.setdefault(sid, [])
        if len(got) < PARKED_LISTED:
            got.append({"msg_id": mid, "reason": reason, "at": at})
    stores = [
        {
            "store_id": s["store_id"],
            "state": s["status"],
            "at": s["status_at"],
            "last_summary_at": s["last_summary_at"],
            "days": {"first": s["first_day"], "last": s["last_day"], "count": s["days"]},
            "counts": s["counts"],
            "parked": parked.get(s["store_id"], []),
            "diverged": s["diverged"],
            "tz": s["tz"],
            "status_received_at": s["status_received_at"],
        }
        for s in st["stores"]
    ]
    return {"stores": stores, "parked": st["parked"], "components": st["components"]}


def render(status: dict[str, Any]) -> str:
    """A readable status for a terminal."""
    lines: list[str] = []
    stores = status["stores"]
    lines.append(f"{len(stores)} store{'s' if len(stores) != 1 else ''} known to the hub")
    for s in stores:
        state = s["status"] or "no status yet"
        when = f" since {s['status_at']}" if s["status_at"] else ""
        span = f", days {s['first_day']} to {s['last_day']} ({s['days']})" if s["days"] else ""
        counts = ", ".join(f"{k} {v}" for k, v in s["counts"].items())
        lines.append(
            f"  {s['store_id']} ({s['tz'] or 'zone unknown'}): {state}{when}; "
            f"last summary {s['last_summary_at'] or 'never'}; {counts}{span}"
            + (f"; parked {s['parked']}" if s["parked"] else "")
        )
        for d in s["diverged"]:
            lines.append(
                f"    diverged: {d['key']}: the hub held version {d['hub_version']}, the store sent "
                f"version {d['store_version']} ({d['at']}); the store's current content was taken"
            )
    p = status["parked"]
    if p["count"]:
        reasons = ", ".join(f"{r} {n}" for r, n in p["by_reason"].items())
        lines.append(f"parked messages: {p['count']} ({reasons}); latest:")
        for x in p["latest"]:
            lines.append(f"  {x['received_at']} {x['topic']}: {x['reason']}: {x['detail']}")
    else:
        lines.append("parked messages: none")
    for c in status.get("components", []):
        if c["state"] == "ok":
            lines.append(f"{c['name']}: ok ({c['at']})")
        else:
            lines.append(
                f"{c['name']}: {c['state'].upper()} since {c['since']}, {c['failures']} failed rounds "
                f"(as of {c['at']}); the last: {c['last_error']}"
            )
    return "\n".join(lines)
