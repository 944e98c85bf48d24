"""Hub ingest: one received MQTT message in, committed hub state and a receipt out.

:func:`ingest` is what ``adamm-hub serve`` calls per message (and the tests call directly):

- a summary (``adamm/v1/{store}/summary``) is validated by
  :func:`edge.sync.messages.parse_summary`; one that cannot be used (not JSON, unknown
  ``schema_version``, too large, wrong store for its topic, bad body...) is parked in
  ``hub_parked`` with its reason and listed under the receipt's ``parked``; it never stops the hub;
- a usable summary is upserted idempotently in one transaction: its ``msg_id`` is recorded once
  (``hub_messages``; a redelivery changes nothing); per (store, key) only the highest ``version``
  is kept: a higher one replaces the key's rows in ``hub_rollup`` (or its fact), an older or equal
  one is a no-op. Either way the message is committed and listed under the receipt's ``stored``
  (the edge's outbox row is done), so duplicates and any arrival order end in the same state;
- a status (``adamm/v1/{store}/status``) updates ``hub_stores`` (the newest ``at`` wins); a bad one
  is parked.

The returned :class:`Ingested` says which store's receipt topic to answer on and with what.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from edge.sync import messages as m
from edge.sync.validate import Reason, instant
from hub.db import PARKED_PAYLOAD_CHARS, HubDB, now_text

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Ingested:
    """What one message did: ``outcome`` is ``stored`` (new state), ``kept`` (committed, but an
    older/equal version or a redelivery: no change), ``status`` or ``parked``; ``receipt`` is what
    to publish on ``adamm/v1/{store_id}/receipt`` (``None``: nothing to answer)."""

    outcome: str
    store_id: str | None
    msg_id: str | None
    reason: str | None = None
    receipt: m.Receipt | None = None


def ingest(db: HubDB, topic: str, payload: bytes, *, now: datetime | None = None) -> Ingested:
    """Store one message received on ``topic`` (committed when this returns). ``now``: the hub's
    clock, which the range rules judge days by (:mod:`edge.sync.validate`).

    Only content judged bad is parked (with a :class:`~edge.sync.validate.Reason`); a fault of the
    hub's own (a database error, a bug) propagates: the caller sends no receipt, so the store
    sends the message again."""
    parts = topic.split("/")
    kind = parts[3] if len(parts) == 4 and topic.startswith(m.TOPIC_ROOT + "/") else None
    if kind == "status":
        return _status(db, topic, payload)
    try:
        s = m.parse_summary(topic, payload, now=now or datetime.now(UTC))
    except m.MessageError as exc:
        return park(db, topic, payload, exc.reason, exc.message)
    if kind != "summary":
        return park(db, topic, payload, Reason.WRONG_TOPIC, f"a summary arrived on {topic!r}")
    return store_summary(db, s)


def store_summary(db: HubDB, s: m.Summary) -> Ingested:
    """Upsert one validated summary (idempotent; highest version per key wins). A message whose
    key the hub holds at a higher or equal version with other content is answered ``kept_newer``
    (CONTRACT.md section 5): the store sends its current content again above that version, so
    the hub converges to the store's record (a rebuilt memory whose versions started again at 1,
    or a forged higher version)."""
    received = now_text()
    kept: m.KeptNewer | None = None
    with db.transaction():
        db.lock_key(s.store_id, s.key)
        fresh = db.insert_ignore(
            "hub_messages",
            ("msg_id", "store_id", "key", "version", "received_at"),
            (s.msg_id, s.store_id, s.key, s.version, received),
            "msg_id",
        )
        outcome = "kept"
        cur = db.one(
            "SELECT version, msg_id FROM hub_summaries WHERE store_id = ? AND key = ?", (s.store_id, s.key)
        )
        if fresh and (cur is None or s.version > int(cur[0])):
            _apply(db, s, received, replace=cur is not None)
            outcome = "stored"
            db.execute(
                "UPDATE hub_diverged SET confirmed_at = ? WHERE store_id = ? AND key = ? "
                "AND confirmed_at IS NULL AND hub_version < ?",
                (received, s.store_id, s.key, s.version),
            )
        elif cur is not None and str(cur[1]) != s.msg_id and int(cur[0]) >= s.version:
            kept = m.KeptNewer(s.msg_id, s.key, int(cur[0]), str(cur[1]))
            db.insert_ignore(
                "hub_diverged",
                ("store_id", "key", "hub_version", "hub_msg_id", "store_version", "at"),
                (s.store_id, s.key, int(cur[0]), str(cur[1]), s.version, received),
                "store_id, key, hub_version",
            )
        _touch_store(db, s, received)
    if kept is not None:
        logger.info(
            "%s %s v%d: the hub holds v%d (%s); answered kept_newer",
            s.store_id,
            s.key,
            s.version,
            kept.version,
            kept.kept_msg_id,
        )
        return Ingested("kept_newer", s.store_id, s.msg_id, receipt=m.Receipt(kept_newer=(kept,)))
    if outcome == "kept":
        logger.debug("%s %s v%d: already held (no change)", s.store_id, s.key, s.version)
    return Ingested(outcome, s.store_id, s.msg_id, receipt=m.Receipt(stored=(s.msg_id,)))


def _apply(db: HubDB, s: m.Summary, received: str, *, replace: bool) -> None:
    body_text = json.dumps(s.body, ensure_ascii=False, sort_keys=True) if s.kind == "fact" else None
    if replace:
        db.execute(
            "UPDATE hub_summaries SET kind = ?, version = ?, msg_id = ?, received_at = ?, body = ? "
            "WHERE store_id = ? AND key = ?",
            (s.kind, s.version, s.msg_id, received, body_text, s.store_id, s.key),
        )
    else:
        db.execute(
            "INSERT INTO hub_summaries (store_id, key, kind, version, msg_id, received_at, body) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (s.store_id, s.key, s.kind, s.version, s.msg_id, received, body_text),
        )
    if s.kind == "rollup":
        _apply_rollup(db, s)
    else:
        _apply_fact(db, s, body_text or "{}")


ROLLUP_COLUMNS = (
    "store_id",
    "local_date",
    "local_weekday",
    "local_week",
    "local_month",
    "slice",
    "value",
    "vkey",
    "event_type",
    *m.ROLLUP_FIELDS,
    "first_event_id",
    "last_event_id",
)
_INSERT_ROLLUP = (
    f"INSERT INTO hub_rollup ({', '.join(ROLLUP_COLUMNS)}) VALUES ({', '.join('?' * len(ROLLUP_COLUMNS))})"
)


def value_text(value: Any) -> str | None:
    """A slice value as stored (text; ``None`` stays NULL)."""
    return None if value is None else str(value)


def vkey_of(value: Any) -> str:
    """The non-NULL surrogate of a slice value in the primary key."""
    return "" if value is None else "v" + str(value)


def _apply_rollup(db: HubDB, s: m.Summary) -> None:
    body = s.body
    day = date.fromisoformat(body["day"])
    slice_ = body["slice"]
    at = (s.store_id, body["day"], slice_)
    old = db.query(
        "SELECT vkey, event_type, events FROM hub_rollup WHERE store_id = ? AND local_date = ? AND slice = ?",
        at,
    )
    db.execute("DELETE FROM hub_rollup WHERE store_id = ? AND local_date = ? AND slice = ?", at)
    week = (day - timedelta(days=day.weekday())).isoformat()
    rows = []
    for r in body["rows"]:
        rows.append(
            (
                s.store_id,
                body["day"],
                day.weekday(),
                week,
                body["day"][:7],
                slice_,
                value_text(r["value"]),
                vkey_of(r["value"]),
                r["event_type"],
                *(float(r[f]) for f in m.ROLLUP_FIELDS),
                r["first_event_id"],
                r["last_event_id"],
            )
        )
    db.executemany(_INSERT_ROLLUP, rows)
    _catalog(db, s.store_id, body["day"], slice_, old, body["rows"])


def _catalog(
    db: HubDB, store: str, day: str, slice_: str, old: list[tuple[Any, ...]], new: list[dict[str, Any]]
) -> None:
    """Keep ``hub_catalog`` in step: days and events by the difference, the span widened."""
    gone: dict[tuple[str, str], float] = {(str(v), str(et)): float(n) for v, et, n in old}
    # one lock per (store, slice) catalog, taken after the key's lock, and rows in key order:
    # two workers never wait on each other's catalog rows in opposite orders
    db.lock_key(store, f"catalog/{slice_}")
    fresh = []
    for r in sorted(new, key=lambda r: (vkey_of(r["value"]), str(r["event_type"]))):
        k = (vkey_of(r["value"]), r["event_type"])
        was = gone.pop(k, None)
        events = float(r["events"]) - (was or 0.0)
        fresh.append(
            (store, slice_, k[0], value_text(r["value"]), k[1], day, day, 0 if was is not None else 1, events)
        )
    db.executemany(
        "INSERT INTO hub_catalog (store_id, slice, vkey, value, event_type, first_date, last_date, days, events) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (store_id, slice, vkey, event_type) DO UPDATE SET "
        "days = hub_catalog.days + excluded.days, events = hub_catalog.events + excluded.events, "
        f"first_date = {db.least('hub_catalog.first_date', 'excluded.first_date')}, "
        f"last_date = {db.greatest('hub_catalog.last_date', 'excluded.last_date')}",
        fresh,
    )
    for (vkey, et), n in sorted(gone.items()):
        key = (store, slice_, vkey, et)
        db.execute(
            "UPDATE hub_catalog SET days = days - 1, events = events - ? "
            "WHERE store_id = ? AND slice = ? AND vkey = ? AND event_type = ?",
            (n, *key),
        )
        db.execute(
            "DELETE FROM hub_catalog WHERE store_id = ? AND slice = ? AND vkey = ? AND event_type = ? AND days <= 0",
            key,
        )


def _apply_fact(db: HubDB, s: m.Summary, body_text: str) -> None:
    b = s.body

    def num(v: Any) -> float | None:
        return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None

    values = (
        str(b.get("metric")) if b.get("metric") is not None else None,
        str(b.get("dimension")) if b.get("dimension") is not None else None,
        num(b.get("effect")),
        num(b.get("confidence")),
        b.get("valid_from"),
        b.get("valid_to"),
        body_text,
    )
    db.execute("DELETE FROM hub_facts WHERE store_id = ? AND fact_id = ?", (s.store_id, b["fact_id"]))
    db.execute(
        "INSERT INTO hub_facts (store_id, fact_id, metric, dimension, effect, confidence, valid_from, "
        "valid_to, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (s.store_id, b["fact_id"], *values),
    )


def _touch_store(db: HubDB, s: m.Summary, received: str) -> None:
    tz = s.body.get("tz") if s.kind == "rollup" else None
    db.insert_ignore("hub_stores", ("store_id",), (s.store_id,), "store_id")
    if isinstance(tz, str):
        db.execute(
            "UPDATE hub_stores SET last_summary_at = ?, tz = ? WHERE store_id = ?", (received, tz, s.store_id)
        )
    else:
        db.execute("UPDATE hub_stores SET last_summary_at = ? WHERE store_id = ?", (received, s.store_id))


def _status(db: HubDB, topic: str, payload: bytes) -> Ingested:
    store = m.topic_store(topic)
    if store is None or not m.valid_store_id(store):
        return park(db, topic, payload, Reason.BAD_STORE_ID, f"no valid store id in {topic!r}")
    try:
        st = m.parse_status(payload)
    except m.MessageError as exc:
        return park(db, topic, payload, exc.reason, exc.message)
    with db.transaction():
        db.lock_key(store, "status")
        db.insert_ignore("hub_stores", ("store_id",), (store,), "store_id")
        cur = db.one("SELECT status_at FROM hub_stores WHERE store_id = ?", (store,))
        held = instant(cur[0]) if cur is not None else None
        at = instant(st["at"])
        if held is None or (at is not None and held <= at):  # instants, not text: +08:00 vs Z
            db.execute(
                "UPDATE hub_stores SET status = ?, status_at = ?, status_received_at = ? WHERE store_id = ?",
                (st["state"], st["at"], now_text(), store),
            )
    return Ingested("status", store, None)


def park(db: HubDB, topic: str, payload: bytes, reason: Reason, detail: str) -> Ingested:
    """Keep a message the hub judged bad, with the reason (committed when this returns): once
    per ``msg_id`` (a re-sent bad message is receipted as parked again, not kept twice). Only for
    content; a fault of the hub's own never parks."""
    reason = Reason(reason)
    store = m.topic_store(topic)
    store = store if store is not None and m.valid_store_id(store) else None
    msg_id = _readable_msg_id(payload)
    text = payload[: PARKED_PAYLOAD_CHARS * 4].decode("utf-8", errors="replace")[:PARKED_PAYLOAD_CHARS]
    with db.transaction():
        held = None
        if msg_id is not None:
            db.lock_key("", f"parked/{msg_id}")
            held = db.one("SELECT 1 FROM hub_parked WHERE msg_id = ?", (msg_id,))
        if held is None:
            db.execute(
                "INSERT INTO hub_parked (topic, store_id, msg_id, reason, detail, payload, received_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    topic[:512],
                    store,
                    msg_id,
                    str(reason),
                    detail[:1000],
                    text.replace("\x00", ""),
                    now_text(),
                ),
            )
    if held is None:
        logger.warning("parked a message on %s: %s (%s)", topic, reason, detail)
    receipt = m.Receipt(parked=((msg_id, reason),)) if store is not None and msg_id else None
    return Ingested("parked", store, msg_id, reason, receipt)


def _readable_msg_id(payload: bytes) -> str | None:
    """The ``msg_id`` of a payload that is at least a JSON object with one (for the receipt)."""
    if len(payload) > m.MAX_MESSAGE_BYTES:
        return None
    try:
        obj = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    mid = obj.get("msg_id") if isinstance(obj, dict) else None
    return mid if isinstance(mid, str) and 0 < len(mid) <= 128 else None
