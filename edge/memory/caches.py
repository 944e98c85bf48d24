"""Start-up caches of ``adamm ask``: what one process computed, the next one reads back.

Owns two persisted caches (tables of migration ``0006_startup_caches``):

- the parser vocabulary (:class:`edge.analysis.source.Vocabulary`) with the change marker it was
  built at (:func:`change_marker`: the largest ``events.id``, the deleted-events counter kept by a
  trigger, the number of stores). An import adds events with larger ids, a replace or delete bumps
  the counter, so a marker that still matches means the vocabulary is still right; building it
  is a scan per stats column, seconds at 1M events;
- text vectors by encoder key and text (:class:`TextVectorCache`): the parser embeds the stored
  values it may match by similarity and the phrases of the question, and loading the text
  encoder alone takes longer than a whole answer should. Vectors are the encoder's float32
  output, so a cached vector is the vector the encoder would give.

Both are derived data: a read-only store, an unmigrated one or a failed write just means no
cache. Called by :mod:`edge.memory.query.events_source` (vocabulary) and :mod:`edge.memory.store`
(:meth:`~edge.memory.store.Store.embed_texts_cached`).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import apsw
import numpy as np

from edge.analysis.source import Vocabulary

logger = logging.getLogger(__name__)

#: the most text vectors kept per memory (about 2 KiB each); the oldest go first
MAX_TEXT_VECTORS = 50_000
#: 2: the vocabulary holds the stats keys of each event type (a v1 cache is rebuilt once)
_FORMAT = 2


def change_marker(conn: apsw.Connection) -> str | None:
    """A string that changes whenever events are added or removed; None before migration 0006."""
    try:
        (top,) = conn.execute("SELECT coalesce(max(id), 0) FROM events").fetchone() or (0,)
        row = conn.execute("SELECT value FROM change_counters WHERE name = 'events_deleted'").fetchone()
        (stores,) = conn.execute("SELECT count(*) FROM stores").fetchone() or (0,)
    except apsw.SQLError:  # not migrated (a read-only open of an older memory)
        return None
    if row is None:
        return None
    return f"v{_FORMAT}:{int(top)}:{int(row[0])}:{int(stores)}"


def _iso(dt: datetime | None) -> str | None:
    return None if dt is None else dt.isoformat()


def _dt(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)


def vocabulary_json(vocab: Vocabulary) -> str:
    """The vocabulary as stored (the time zone is not: it is read from the store each time)."""
    return json.dumps(
        {
            "store_ids": list(vocab.store_ids),
            "event_types": list(vocab.event_types),
            "attributes": [[k, list(v)] for k, v in vocab.attributes.items()],
            "entities": list(vocab.entities),
            "earliest": _iso(vocab.earliest),
            "latest": _iso(vocab.latest),
            "keys_by_type": {t: list(keys) for t, keys in vocab.keys_by_type.items()},
        },
        ensure_ascii=False,
    )


def vocabulary_from_json(text: str, timezone: str) -> Vocabulary:
    d = json.loads(text)
    return Vocabulary(
        timezone=timezone,
        store_ids=tuple(str(s) for s in d["store_ids"]),
        event_types=tuple(str(t) for t in d["event_types"]),
        attributes={str(k): tuple(str(v) for v in vals) for k, vals in d["attributes"]},
        entities=tuple(str(e) for e in d["entities"]),
        earliest=_dt(d["earliest"]),
        latest=_dt(d["latest"]),
        # a cache written before the field: unknown (empty), never an error
        keys_by_type={
            str(t): tuple(str(k) for k in keys) for t, keys in (d.get("keys_by_type") or {}).items()
        },
    )


def load_vocabulary(conn: apsw.Connection, marker: str, timezone: str) -> Vocabulary | None:
    """The stored vocabulary when it was built at ``marker``, else None."""
    try:
        row = conn.execute("SELECT marker, vocabulary_json FROM vocabulary_cache WHERE id = 1").fetchone()
    except apsw.SQLError:
        return None
    if row is None or row[0] != marker:
        return None
    try:
        return vocabulary_from_json(str(row[1]), timezone)
    except (ValueError, KeyError, TypeError) as exc:
        logger.warning("stored vocabulary unreadable, rebuilding it: %s", exc)
        return None


def save_vocabulary(store: Any, marker: str, vocab: Vocabulary) -> None:
    """Persist ``vocab`` built at ``marker`` (waits for the write; failures only log)."""
    if getattr(store, "readonly", True) or not hasattr(store, "writer"):
        return
    body = vocabulary_json(vocab)
    now = datetime.now(UTC).isoformat(timespec="seconds")

    def write(conn: apsw.Connection) -> None:
        conn.execute(
            "INSERT INTO vocabulary_cache(id, marker, vocabulary_json, built_at) VALUES (1, ?, ?, ?) "
            "ON CONFLICT(id) DO UPDATE SET marker = excluded.marker, "
            "vocabulary_json = excluded.vocabulary_json, built_at = excluded.built_at",
            (marker, body, now),
        )

    try:
        store.writer.submit(write).result()
    except Exception as exc:  # a cache: never fail the answer for it
        logger.warning("could not store the vocabulary cache: %s", exc)


class TextVectorCache:
    """Text vectors of one memory by encoder key and text: in memory, and in the store."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self._memory: dict[tuple[str, str], np.ndarray] = {}
        self._lock = threading.Lock()

    def lookup(self, model: str, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """The cached vectors of ``texts`` (those that have one)."""
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for t in texts:
                v = self._memory.get((model, t))
                if v is not None:
                    found[t] = v
        wanted = [t for t in dict.fromkeys(texts) if t not in found]
        if not wanted:
            return found
        try:
            with self._store.read() as conn:
                rows = conn.execute(
                    "SELECT text, vector FROM text_vector_cache "
                    "WHERE model = ? AND text IN (SELECT value FROM json_each(?))",
                    (model, json.dumps(wanted, ensure_ascii=False)),
                ).fetchall()
        except apsw.SQLError:  # not migrated
            return found
        with self._lock:
            for text, blob in rows:
                vec = np.frombuffer(blob, dtype=np.float32)
                self._memory[(model, str(text))] = vec
                found[str(text)] = vec
        return found

    def add(self, model: str, vectors: dict[str, np.ndarray]) -> None:
        """Remember ``vectors`` (persisted unless the store is read-only; failures only log)."""
        if not vectors:
            return
        clean = {t: np.ascontiguousarray(v, dtype=np.float32) for t, v in vectors.items()}
        with self._lock:
            for t, v in clean.items():
                self._memory[(model, t)] = v
        if getattr(self._store, "readonly", True):
            return
        now = time.time()
        rows = [(model, t, v.tobytes(), now) for t, v in clean.items()]

        def write(conn: apsw.Connection) -> None:
            conn.executemany(
                "INSERT OR REPLACE INTO text_vector_cache(model, text, vector, created_at) VALUES (?, ?, ?, ?)",
                rows,
            )
            (n,) = conn.execute("SELECT count(*) FROM text_vector_cache").fetchone() or (0,)
            if int(n) > MAX_TEXT_VECTORS:
                conn.execute(
                    "DELETE FROM text_vector_cache WHERE (model, text) IN (SELECT model, text "
                    "FROM text_vector_cache ORDER BY created_at LIMIT ?)",
                    (int(n) - MAX_TEXT_VECTORS,),
                )

        try:
            self._store.writer.submit(write).result()
        except Exception as exc:
            logger.warning("could not store text vectors in the cache: %s", exc)
