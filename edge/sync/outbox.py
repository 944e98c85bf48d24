"""The store side of sync: the durable outbox of summaries (migration ``0012_sync_outbox``).

Tables (:mod:`edge.memory.db.migrations`):

- ``outbox``: one row per ``(store_id, key)`` holding the key's latest summary: ``version``,
  ``body_hash``, ``msg_id``, ``closed`` (a rollup of a closed day), ``state`` (``pending`` until
  the hub's receipt says it stored it, then ``done``; ``parked`` when the hub kept it but could not
  use it, or when it cannot be sent at all (too large), with its ``reason``), ``seq`` (publish
  order: a new version gets a new, higher seq), ``attempts``/``sent_at`` (publishing), ``done_at``.
  A done row stays: it is the key's version memory, so a re-derived body equal to the last one is
  not re-versioned (nor re-sent).
- ``outbox_payloads``: the encoded message of each pending or parked row, by ``seq`` (deleted
  when the row is done; a separate table, so the bookkeeping updates stay small).
- ``sync_dirty``: store-local days whose rollup summaries must be derived again, marked by
  triggers inside the transaction that changed them (events inserted, deleted or changed on a day
  that is not closed, by ``adamm import`` or the daemon's writer; a day closing). ``gen`` counts
  marks: :meth:`Outbox.derive` clears a mark only when no change came after it read the day.

Derivation (:meth:`Outbox.derive`): each dirty day becomes one rollup summary per slice of
:data:`edge.sync.messages.ROLLUP_SLICES`, computed through the store's own rollup source port
(``Store.event_source()``: ``aggregate`` grouped by (event type, slice key) over the day, and
``bill_stats`` for ``bill_sq``): the one rollup definition the ask engine and the cold tier use.
Bodies are computed on reader connections; one short writer transaction per batch of days writes
the summaries and clears the marks (``adamm sync`` never holds the write lock for long). A closed
day already summarised as closed is final: its mark is cleared without deriving it again (its
rollup is the record, and its events may be archived).

Bound (``[sync] max_pending``): a new version of a key that is still pending *replaces* the pending
row (latest version per key: an outage costs space per key, not per change). When new keys would
take the pending rows past the bound, derivation stops for this run, logs a warning and leaves the
remaining days (the newest; days are taken oldest first) marked dirty: nothing is lost, they are
summarised once the hub has confirmed what is pending. Facts always enter (they are few); past the
bound they are logged.

Facts (migration ``0013_facts_sync``): ``sync_dirty_facts`` marks a fact whose summary must be
derived again, by triggers inside the transaction of the facts step that opens, refreshes,
closes or supersedes it (edge.services cannot call edge.sync: the marks are how they meet, as
``sync_dirty`` is for days). :meth:`Outbox.derive_facts` (the first part of every
:meth:`Outbox.derive`) turns each marked fact into its ``fact/{fact_id}`` summary
(:func:`fact_body`: the contract's fields, statements scrubbed); a fact closed later is sent
again with its ``valid_to``, as a new version; a refresh that changes nothing is not re-sent.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple, cast

import apsw

from edge.analysis.source import EventFilter
from edge.errors import StoreError
from edge.sync import messages as m

logger = logging.getLogger(__name__)

#: slice -> the port's grouping key (``None``: the day as a whole)
SLICE_KEYS: dict[str, str | None] = {
    "total": None,
    "hour": "hour",
    "weather": "weather",
    "promotion": "promotion",
    "zone": "zone",
    "product_category": "product_category",
}
assert tuple(SLICE_KEYS) == m.ROLLUP_SLICES
#: the port components of a rollup row (``bill_sq`` comes from ``bill_stats``)
_COMPONENTS = tuple(f for f in m.ROLLUP_FIELDS if f != "bill_sq")
#: evidence requests per ``sample_many`` call (SQLite allows 500 terms in one compound SELECT)
SAMPLE_BATCH = 200
#: days whose summaries one writer transaction stores
DAYS_PER_TRANSACTION = 16


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def body_hash(body: dict[str, Any]) -> str:
    return hashlib.sha256(m.canonical(body)).hexdigest()


def _num(v: Any) -> int | float:
    if v is None:
        return 0
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    f = float(v)
    return int(f) if f.is_integer() and abs(f) < 2**53 and not isinstance(v, float) else f


def _value(v: Any) -> str | int | None:
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return str(v)


# -- deriving rollup bodies ---------------------------------------------------------------------


def day_bodies(source: Any, store_id: str, day: str, tz: str, closed: bool) -> dict[str, dict[str, Any]]:
    """slice -> the rollup body of ``store_id``'s store-local ``day``, through the source port."""
    base = EventFilter(store_ids=(store_id,), key_equals=(("date", (day,)),))
    out: dict[str, dict[str, Any]] = {}
    for slice_, key in SLICE_KEYS.items():
        keys = ("event_type",) if key is None else ("event_type", key)
        agg = source.aggregate(base, keys, _COMPONENTS)
        bills = source.bill_stats(base, key or "date")
        rows: list[dict[str, Any]] = []
        requests = []
        for raw in agg.rows:
            d = dict(zip(agg.columns, raw, strict=True))
            value = _value(d[key]) if key is not None else None
            et = str(d["event_type"])
            row: dict[str, Any] = {"value": value, "event_type": et}
            row.update({c: _num(d[c]) for c in _COMPONENTS})
            b = bills.get(d[key] if key is not None else day) if et == "purchase" else None
            row["bill_sq"] = float(b[2]) if b is not None else 0
            rows.append(row)
            eq = base.key_equals + (((key, (d[key],)),) if key is not None else ())
            requests.append((base.narrowed(event_types=(et,), key_equals=eq), (), 2))
        evidence: list[Any] = []
        for i in range(0, len(requests), SAMPLE_BATCH):  # the port builds one compound SELECT per call
            evidence.extend(source.sample_many(requests[i : i + SAMPLE_BATCH]))
        for row, ev in zip(rows, evidence, strict=True):
            row["first_event_id"] = ev[-1].event_id if ev else None
            row["last_event_id"] = ev[0].event_id if ev else None
        rows.sort(key=lambda r: (r["value"] is None, str(r["value"]), r["event_type"]))
        out[slice_] = {"day": day, "slice": slice_, "tz": tz, "closed": closed, "rows": rows}
    return out


# -- writing summaries ---------------------------------------------------------------------------


def pending_count(conn: apsw.Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM outbox WHERE state = 'pending'").fetchone()[0])  # type: ignore[index]


def upsert_summary(
    conn: apsw.Connection, store_id: str, kind: str, key: str, body: dict[str, Any], now: str | None = None
) -> str:
    """Write ``body`` as the state of ``(store_id, key)`` inside the caller's transaction:
    ``"unchanged"`` (same body as the key's last version: nothing written), ``"new"`` (a key not
    pending before: a new row or a done/parked one made pending again) or ``"replaced"`` (a pending
    older version replaced). Raises :class:`~edge.sync.messages.MessageError` for a body the hub
    would refuse."""
    h = body_hash(body)
    row = conn.execute(
        "SELECT version, body_hash, state FROM outbox WHERE store_id = ? AND key = ?", (store_id, key)
    ).fetchone()
    if row is not None and row[1] == h:
        return "unchanged"
    version = int(row[0]) + 1 if row is not None else 1
    summary = m.make_summary(store_id, kind, key, version, body)
    (seq,) = conn.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM outbox").fetchone()  # type: ignore[misc]
    if row is not None:
        conn.execute(
            "DELETE FROM outbox_payloads WHERE seq = (SELECT seq FROM outbox WHERE store_id = ? AND key = ?)",
            (store_id, key),
        )
    conn.execute(
        "INSERT INTO outbox(store_id, key, seq, kind, version, body_hash, msg_id, closed, state, "
        "attempts, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending', 0, ?) "
        "ON CONFLICT(store_id, key) DO UPDATE SET seq = excluded.seq, kind = excluded.kind, "
        "version = excluded.version, body_hash = excluded.body_hash, msg_id = excluded.msg_id, "
        "closed = excluded.closed, state = 'pending', reason = NULL, attempts = 0, "
        "created_at = excluded.created_at, sent_at = NULL, done_at = NULL",
        (
            store_id,
            key,
            int(seq),
            kind,
            version,
            h,
            summary.msg_id,
            int(body.get("closed") is True),
            now or _now(),
        ),
    )
    conn.execute("INSERT INTO outbox_payloads(seq, payload) VALUES (?, ?)", (int(seq), summary.encode()))
    return "replaced" if row is not None and row[2] == "pending" else "new"


def park_unsendable(
    conn: apsw.Connection, store_id: str, kind: str, key: str, body: dict[str, Any], exc: Any, now: str
) -> None:
    """Record a summary that cannot be sent (``make_summary`` refused it) as ``parked`` with the
    reason, so ``adamm sync`` goes on with the rest and the store can see it; logged as an error."""
    logger.error("summary %s of store %s is not sent: %s", key, store_id, exc)
    (seq,) = conn.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM outbox").fetchone()  # type: ignore[misc]
    conn.execute(
        "DELETE FROM outbox_payloads WHERE seq = (SELECT seq FROM outbox WHERE store_id = ? AND key = ?)",
        (store_id, key),
    )
    conn.execute(
        "INSERT INTO outbox(store_id, key, seq, kind, version, body_hash, msg_id, state, reason, created_at, "
        "done_at) VALUES (?, ?, ?, ?, 0, ?, '', 'parked', ?, ?, ?) ON CONFLICT(store_id, key) DO UPDATE SET "
        "seq = excluded.seq, body_hash = excluded.body_hash, msg_id = '', state = 'parked', "
        "reason = excluded.reason, done_at = excluded.done_at",
        (
            store_id,
            key,
            int(seq),
            kind,
            body_hash(body),
            f"{getattr(exc, 'reason', 'refused')}: {exc}",
            now,
            now,
        ),
    )


def fact_body(fact: dict[str, Any]) -> dict[str, Any]:
    """The summary body of a semantic fact (CONTRACT.md section 6's fact object): only the
    contract's fields, statements scrubbed of phone and ID numbers (:func:`edge.sync.messages.scrub`)."""
    body: dict[str, Any] = {f: fact.get(f) for f in m.FACT_FIELDS}
    if fact.get("action_id"):  # an action_effect fact names its action (section 7)
        body["action_id"] = str(fact["action_id"])
    st = body["statement"]
    if isinstance(st, dict):
        body["statement"] = {k: m.scrub(str(st.get(k, ""))) for k in ("zh", "en")}
    evidence = [str(e) for e in (body["evidence"] or [])]
    body["evidence"] = evidence
    if body["evidence_count"] is None:
        body["evidence_count"] = len(evidence)
    return body


def enqueue_fact(conn: apsw.Connection, fact: dict[str, Any], store_id: str | None = None) -> str:
    """Queue a semantic fact (CONTRACT.md section 6's fact object) for the hub, inside the caller's
    transaction (:func:`fact_body`). ``store_id`` defaults to the memory's only store. Returns what
    :func:`upsert_summary` did. (The sync run queues the facts marked in ``sync_dirty_facts`` this
    way: :meth:`Outbox.derive_facts`.)"""
    if store_id is None:
        ids = [str(s) for (s,) in conn.execute("SELECT store_id FROM stores ORDER BY store_id LIMIT 2")]
        if len(ids) != 1:
            raise StoreError(f"enqueue_fact needs a store_id: the memory holds {len(ids) or 'no'} stores")
        store_id = ids[0]
    body = fact_body(fact)
    done = upsert_summary(conn, store_id, "fact", m.fact_key(str(body["fact_id"])), body)
    if done == "new":
        bound = _configured_bound(conn)
        if bound is not None and pending_count(conn) > bound:
            logger.warning(
                "outbox over its bound (%d pending): fact %s queued anyway", bound, body["fact_id"]
            )
    return done


def _configured_bound(conn: apsw.Connection) -> int | None:
    row = conn.execute("SELECT value FROM settings WHERE key = 'sync_max_pending'").fetchone()
    return int(row[0]) if row is not None else None


# -- the outbox over a store ---------------------------------------------------------------------


@dataclass
class DeriveReport:
    days: int = 0  # dirty days summarised (marks cleared)
    new: int = 0  # keys that became pending
    replaced: int = 0  # pending keys given a newer version
    unchanged: int = 0  # summaries equal to their last version
    deferred: int = 0  # dirty days left for later (outbox full)
    unsendable: int = 0  # summaries the hub would refuse (too large): parked here, logged
    facts: int = 0  # marked facts summarised (marks cleared)
    facts_new: int = 0  # fact keys that became pending (a new fact, or a new version of one)


class PendingRow(NamedTuple):
    seq: int
    store_id: str
    key: str
    msg_id: str
    payload: bytes


class Outbox:
    """The outbox of one open, writable :class:`edge.memory.store.Store`."""

    def __init__(self, store: Any, max_pending: int = 20000) -> None:
        self.store = store
        self.max_pending = max_pending
        self._source: Any = None

    def _write(self, fn: Any) -> Any:
        return self.store.writer.submit(fn).result()

    def store_ids(self) -> list[str]:
        with self.store.read() as conn:
            return [str(s) for (s,) in conn.execute("SELECT store_id FROM stores ORDER BY store_id")]

    def dirty_days(self) -> list[tuple[str, str, int]]:
        with self.store.read() as conn:
            return [
                (str(s), str(d), int(g))
                for s, d, g in conn.execute(
                    "SELECT store_id, local_date, gen FROM sync_dirty ORDER BY local_date, store_id"
                )
            ]

    def derive_facts(self, report: DeriveReport | None = None) -> DeriveReport:
        """Turn the facts marked in ``sync_dirty_facts`` into fact summaries (a closed fact is sent
        again with its ``valid_to``: a new version), in one writer transaction that clears the
        marks no later change has bumped. Facts always enter the outbox (:func:`enqueue_fact`)."""
        from edge.memory.semantic.facts import fact_records

        report = report if report is not None else DeriveReport()
        with self.store.read() as conn:
            marks = {str(f): int(g) for f, g in conn.execute("SELECT fact_id, gen FROM sync_dirty_facts")}
        if not marks:
            return report
        now = _now()

        def write(conn: apsw.Connection) -> None:
            with conn:
                records = {r.fact_id: r for r in fact_records(conn) if r.fact_id in marks}
                for fid, gen in marks.items():
                    rec = records.get(fid)
                    if rec is not None:
                        key = m.fact_key(fid)
                        body = fact_body(rec.contract())
                        try:
                            done = enqueue_fact(conn, body, rec.store_id)
                        except m.MessageError as exc:  # too large, say: kept out, said, not fatal
                            park_unsendable(conn, rec.store_id, "fact", key, body, exc, now)
                            report.unsendable += 1
                            done = "unsendable"
                        if done in ("new", "replaced"):
                            report.facts_new += 1
                    conn.execute("DELETE FROM sync_dirty_facts WHERE fact_id = ? AND gen = ?", (fid, gen))
                    report.facts += 1

        self._write(write)
        return report

    def derive(self, wait: Callable[[str, str], bool] | None = None) -> DeriveReport:
        """Turn the marked facts (:meth:`derive_facts`) and the dirty days into summaries (days
        oldest first, bounded: module docstring). ``wait(store_id, day)`` true leaves that day
        marked for a later run (the daemon summarises the store's current day less often)."""
        report = self.derive_facts(DeriveReport())
        days = [d for d in self.dirty_days() if wait is None or not wait(d[0], d[1])]
        if not days:
            return report
        if self._source is None:
            self._source = self.store.event_source()
        bound = self.max_pending

        def setting(conn: apsw.Connection) -> None:
            conn.execute(
                "INSERT INTO settings(key, value) VALUES ('sync_max_pending', ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (str(bound),),
            )

        self._write(setting)
        full = False
        for i in range(0, len(days), DAYS_PER_TRANSACTION):
            chunk = days[i : i + DAYS_PER_TRANSACTION]
            with self.store.read() as conn:
                closed = {
                    (str(s), str(d))
                    for s, d in conn.execute(
                        "SELECT store_id, local_date FROM rollup_days WHERE state = 'closed'"
                    )
                }
            with self.store.read() as conn:
                # a closed day already summarised as closed is final: its rollup is the record
                final = {
                    (str(s), str(k)[7:17])
                    for s, k in conn.execute(
                        "SELECT store_id, key FROM outbox WHERE closed = 1 AND key LIKE 'rollup/%/total'"
                    )
                }
            computed = [
                (
                    s,
                    d,
                    g,
                    None
                    if (s, d) in closed and (s, d) in final
                    else day_bodies(self._source, s, d, self.store.timezone(s), (s, d) in closed),
                )
                for s, d, g in chunk
            ]

            def write(conn: apsw.Connection, computed: Sequence[Any] = computed) -> bool:
                now = _now()
                with conn:
                    pending = pending_count(conn)
                    for s, d, g, bodies in computed:
                        if bodies is None:  # final already (see above): only the mark goes
                            conn.execute(
                                "DELETE FROM sync_dirty WHERE store_id = ? AND local_date = ? AND gen = ?",
                                (s, d, g),
                            )
                            report.days += 1
                            continue
                        keys = [m.rollup_key(d, sl) for sl in bodies]
                        already = {
                            str(k)
                            for (k,) in conn.execute(
                                "SELECT key FROM outbox WHERE store_id = ? AND state = 'pending' AND key IN "
                                f"({','.join('?' * len(keys))})",
                                (s, *keys),
                            )
                        }
                        fresh = [
                            k
                            for k, body in zip(keys, bodies.values(), strict=True)
                            if k not in already and not _same(conn, s, k, body)
                        ]
                        if fresh and pending + len(fresh) > bound:
                            return False
                        for sl, body in bodies.items():
                            try:
                                done = upsert_summary(conn, s, "rollup", m.rollup_key(d, sl), body, now)
                            except m.MessageError as exc:  # e.g. too large: kept out, said, not fatal
                                park_unsendable(conn, s, "rollup", m.rollup_key(d, sl), body, exc, now)
                                report.unsendable += 1
                                continue
                            if done == "new":
                                report.new += 1
                                pending += 1
                            elif done == "replaced":
                                report.replaced += 1
                            else:
                                report.unchanged += 1
                        conn.execute(
                            "DELETE FROM sync_dirty WHERE store_id = ? AND local_date = ? AND gen = ?",
                            (s, d, g),
                        )
                        report.days += 1
                return True

            if not self._write(write):
                full = True
                break
        if full:
            report.deferred = len(days) - report.days
            logger.warning(
                "outbox full (%d pending summaries, the bound is %d): %d days stay marked and are "
                "summarised once the hub confirms what is pending (nothing is lost)",
                bound,
                bound,
                report.deferred,
            )
        return report

    # -- publishing bookkeeping ----------------------------------------------------------------

    def pending(self, store_id: str, after_seq: int = 0, limit: int = 1000) -> list[PendingRow]:
        with self.store.read() as conn:
            return [
                PendingRow(q, store_id, k, mid, p)
                for q, k, mid, p in conn.execute(
                    "SELECT o.seq, o.key, o.msg_id, p.payload FROM outbox AS o JOIN outbox_payloads AS p "
                    "ON p.seq = o.seq WHERE o.store_id = ? AND o.state = 'pending' AND o.seq > ? "
                    "ORDER BY o.seq LIMIT ?",
                    (store_id, after_seq, limit),
                )
            ]

    def max_pending_seq(self, store_id: str) -> int:
        with self.store.read() as conn:
            row = conn.execute(
                "SELECT COALESCE(MAX(seq), 0) FROM outbox WHERE store_id = ? AND state = 'pending'",
                (store_id,),
            ).fetchone()
        return int(row[0]) if row else 0

    def open_below(self, store_id: str, seq: int) -> int:
        """Pending rows of ``store_id`` with a seq up to ``seq`` (what ``--once`` waits for)."""
        with self.store.read() as conn:
            row = conn.execute(
                "SELECT count(*) FROM outbox WHERE store_id = ? AND state = 'pending' AND seq <= ?",
                (store_id, seq),
            ).fetchone()
        return int(row[0]) if row else 0

    def counts(self, store_id: str | None = None) -> dict[str, int]:
        where, params = ("WHERE store_id = ?", (store_id,)) if store_id else ("", ())
        with self.store.read() as conn:
            got = {
                str(s): int(n)
                for s, n in conn.execute(f"SELECT state, count(*) FROM outbox {where} GROUP BY 1", params)
            }
        return {k: got.get(k, 0) for k in ("pending", "done", "parked")}

    def submit_sent(self, seqs: Sequence[int]) -> Future[None] | None:
        """Record a publish attempt of ``seqs`` (``attempts``, ``sent_at``); returns the writer's
        future (None when there is nothing to record)."""
        if not seqs:
            return None
        now = _now()

        def write(conn: apsw.Connection) -> None:
            conn.execute(
                "UPDATE outbox SET attempts = attempts + 1, sent_at = ? WHERE state = 'pending' "
                "AND seq IN (SELECT value FROM json_each(?))",
                (now, json.dumps(list(seqs))),
            )

        return cast("Future[None]", self.store.writer.submit(write))

    def mark_done(self, store_id: str, msg_ids: Sequence[str]) -> int:
        """Rows the hub has stored: done. Returns how many pending rows that closed."""
        return self.submit_done(store_id, msg_ids).result()

    def submit_done(self, store_id: str, msg_ids: Sequence[str]) -> Future[int]:
        """:meth:`mark_done` on the writer without waiting: the future's result is the count."""
        now = _now()

        def write(conn: apsw.Connection) -> int:
            seqs = [
                int(q)
                for (q,) in conn.execute(  # by msg_id (its index), not a scan of what is pending
                    "SELECT o.seq FROM json_each(?) AS j JOIN outbox AS o INDEXED BY outbox_msg "
                    "ON o.msg_id = j.value WHERE o.store_id = ? AND o.state = 'pending'",
                    (json.dumps(sorted(set(msg_ids))), store_id),
                )
            ]
            if seqs:
                qs = json.dumps(seqs)
                conn.execute(
                    "UPDATE outbox SET state = 'done', done_at = ? WHERE seq IN (SELECT value FROM json_each(?))",
                    (now, qs),
                )
                conn.execute(
                    "DELETE FROM outbox_payloads WHERE seq IN (SELECT value FROM json_each(?))", (qs,)
                )
            return len(seqs)

        return cast("Future[int]", self.store.writer.submit(write))

    def submit_kept_newer(self, store_id: str, kept: Sequence[m.KeptNewer]) -> Future[tuple[int, list[int]]]:
        """Receipts' ``kept_newer`` (CONTRACT.md section 5): the hub holds a higher (or equal)
        version of the key. When what it holds is this store's current content for the key
        (``kept_msg_id``), the row is done; when the hub refused the row's pending message, the
        row is versioned above the hub's version, keeping its seq, and sent again (the store's
        memory is the record). The future's result: (rows done, seqs to send again)."""
        now = _now()

        def write(conn: apsw.Connection) -> tuple[int, list[int]]:
            done, again = 0, []
            with conn:
                for k in kept:
                    row = conn.execute(
                        "SELECT seq, version, msg_id, state, kind FROM outbox WHERE store_id = ? AND key = ?",
                        (store_id, k.key),
                    ).fetchone()
                    if row is None or row[3] != "pending":
                        continue
                    seq, version, mid, _state, kind = (
                        int(row[0]),
                        int(row[1]),
                        str(row[2]),
                        row[3],
                        str(row[4]),
                    )
                    if mid == k.kept_msg_id:  # the hub holds what this store holds now
                        conn.execute(
                            "UPDATE outbox SET state = 'done', done_at = ? WHERE seq = ?", (now, seq)
                        )
                        conn.execute("DELETE FROM outbox_payloads WHERE seq = ?", (seq,))
                        done += 1
                        continue
                    if mid != k.msg_id:  # a newer message of this key is pending: its receipt decides
                        continue
                    got = conn.execute("SELECT payload FROM outbox_payloads WHERE seq = ?", (seq,)).fetchone()
                    if got is None:
                        continue
                    body = json.loads(bytes(got[0]))["body"]
                    above = max(k.version, version) + 1
                    try:
                        summary = m.make_summary(store_id, kind, k.key, above, body)
                    except m.MessageError as exc:
                        park_unsendable(conn, store_id, kind, k.key, body, exc, now)
                        continue
                    logger.warning(
                        "the hub holds %s of %s at version %d (%s), not this store's: sent again as version %d",
                        k.key,
                        store_id,
                        k.version,
                        k.kept_msg_id,
                        above,
                    )
                    conn.execute(
                        "UPDATE outbox SET version = ?, msg_id = ?, attempts = 0, sent_at = NULL WHERE seq = ?",
                        (above, summary.msg_id, seq),
                    )
                    conn.execute(
                        "UPDATE outbox_payloads SET payload = ? WHERE seq = ?", (summary.encode(), seq)
                    )
                    again.append(seq)
            return done, again

        return cast("Future[tuple[int, list[int]]]", self.store.writer.submit(write))

    def mark_parked(self, store_id: str, parked: Sequence[tuple[str, str]]) -> int:
        """Rows the hub parked: parked with its reason (logged). Returns how many."""
        return self.submit_parked(store_id, parked).result()

    def submit_parked(self, store_id: str, parked: Sequence[tuple[str, str]]) -> Future[int]:
        now = _now()
        for mid, reason in parked:
            logger.warning("the hub parked summary %s: %s (it is not sent again)", mid, reason)

        def write(conn: apsw.Connection) -> int:
            n = 0
            with conn:
                for mid, reason in parked:
                    conn.execute(
                        "UPDATE outbox SET state = 'parked', reason = ?, done_at = ? WHERE store_id = ? "
                        "AND msg_id = ? AND state = 'pending'",
                        (reason, now, store_id, mid),
                    )
                    n += conn.changes()
            return n

        return cast("Future[int]", self.store.writer.submit(write))


def _same(conn: apsw.Connection, store_id: str, key: str, body: dict[str, Any]) -> bool:
    row = conn.execute(
        "SELECT body_hash FROM outbox WHERE store_id = ? AND key = ?", (store_id, key)
    ).fetchone()
    return row is not None and row[0] == body_hash(body)
