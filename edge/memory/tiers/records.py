"""An event's rows back into the MEV it was imported as (the archive's records).

The memory keeps everything of an imported line except a few spellings: the timestamp is stored
in UTC (the line may have had an offset), the entities are kept sorted (the orders of up to four
are tried), an empty ``stats`` /
``entities`` / ``relations`` leaves no trace, and vectors computed at import sit beside supplied
ones. ``content_hash`` is the sha256 of the line's canonical JSON
(:func:`edge.memory.ingest.build.content_hash`), so :func:`records` tries the likely spellings
(the store's local offset or UTC, seconds / milliseconds / microseconds; with and without the
empty fields and the vectors) and keeps the one whose hash is the stored one: that record *is*
the imported line, field for field. When none matches (a line whose vectors were not float32
values, say) the record is the memory's best rendering (every field, UTC timestamps as stored,
every vector as float32) and ``exact`` is false.

Called by :mod:`edge.memory.tiers.steps` on the writer connection.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import islice, permutations
from typing import Any
from zoneinfo import ZoneInfo

import apsw
import numpy as np

from edge.memory.db.migrations import MODALITY_VECTOR_TABLES, VECTOR_DIM
from edge.memory.ingest.build import content_hash

#: candidate spellings tried per event and entity order at most (the likely ones come first)
MAX_CANDIDATES = 96
#: orders of the entities tried (the memory keeps them sorted; the line may have listed them in any)
MAX_ENTITY_ORDERS = 24


@dataclass
class Record:
    """One event as archived: its MEV, its rowid and day, and what the hash check found."""

    rowid: int
    event_id: str
    store_id: str
    local_date: str
    ts_epoch: float
    content_hash: str
    mev: dict[str, Any]
    exact: bool
    #: vector modalities the imported line carried (the others were computed at import)
    given: list[str]


def _ids_json(ids: Sequence[int]) -> str:
    return json.dumps([int(i) for i in ids])


def vectors_of(conn: apsw.Connection, ids: Sequence[int]) -> dict[int, dict[str, np.ndarray]]:
    """rowid -> modality -> float32 vector (hot ones as stored, warm ones dequantized)."""
    out: dict[int, dict[str, np.ndarray]] = {}
    js = _ids_json(ids)
    for modality, table in MODALITY_VECTOR_TABLES.items():
        for rowid, blob in conn.execute(
            f"SELECT rowid, embedding FROM {table} WHERE rowid IN (SELECT value FROM json_each(?))", (js,)
        ):
            out.setdefault(int(rowid), {})[modality] = np.frombuffer(bytes(blob), dtype=np.float32).copy()
        for rowid, scale, q in conn.execute(
            f"SELECT rowid, scale, q FROM {table}_warm WHERE rowid IN (SELECT value FROM json_each(?))", (js,)
        ):
            out.setdefault(int(rowid), {}).setdefault(modality, dequantize(bytes(q), float(scale)))
    return out


def quantize(vec: np.ndarray) -> tuple[float, bytes]:
    """int8 with one scale per vector: ``q = round(v / scale)``, ``scale = max|v| / 127``."""
    v = np.asarray(vec, dtype=np.float32)
    peak = float(np.max(np.abs(v))) if v.size else 0.0
    scale = peak / 127.0 if peak > 0 else 1.0
    q = np.clip(np.rint(v / scale), -127, 127).astype(np.int8)
    return scale, q.tobytes()


def dequantize(q: bytes, scale: float) -> np.ndarray:
    return np.frombuffer(q, dtype=np.int8).astype(np.float32) * np.float32(scale)


def records(conn: apsw.Connection, ids: Sequence[int], zones: dict[str, str]) -> list[Record]:
    """The records of the events with rowids ``ids`` (in rowid order); ``zones``: store -> IANA zone."""
    if not ids:
        return []
    js = _ids_json(ids)
    refs: dict[int, list[str]] = {}
    for rid, ref in conn.execute(
        "SELECT event_rowid, ref FROM raw_refs WHERE event_rowid IN (SELECT value FROM json_each(?)) "
        "ORDER BY event_rowid, seq",
        (js,),
    ):
        refs.setdefault(int(rid), []).append(str(ref))
    ents: dict[int, list[str]] = {}
    for rid, ent in conn.execute(
        "SELECT event_rowid, entity FROM entities WHERE event_rowid IN (SELECT value FROM json_each(?))",
        (js,),
    ):
        ents.setdefault(int(rid), []).append(str(ent))
    rels: dict[int, list[dict[str, str]]] = {}
    for rid, head, typ, tail in conn.execute(
        "SELECT event_rowid, head, type, tail FROM relations WHERE event_rowid IN (SELECT value FROM json_each(?)) "
        "ORDER BY event_rowid, seq",
        (js,),
    ):
        rels.setdefault(int(rid), []).append({"head": str(head), "type": str(typ), "tail": str(tail)})
    vecs = vectors_of(conn, ids)
    out: list[Record] = []
    for row in conn.execute(
        "SELECT id, event_id, store_id, ts, ts_epoch, end_ts, source, event_type, modality, text, stats_json, "
        "content_hash, local_date FROM events WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id",
        (js,),
    ):
        rid = int(row[0])
        out.append(
            _record(
                row,
                refs.get(rid, []),
                sorted(ents.get(rid, [])),
                rels.get(rid, []),
                vecs.get(rid, {}),
                zones.get(str(row[2]), "UTC"),
            )
        )
    return out


def _record(
    row: Sequence[Any],
    refs: list[str],
    ents: list[str],
    rels: list[dict[str, str]],
    vecs: dict[str, np.ndarray],
    tz: str,
) -> Record:
    (
        rid,
        event_id,
        store_id,
        ts,
        ts_epoch,
        end_ts,
        source,
        event_type,
        modality,
        text,
        stats_json,
        digest,
        day,
    ) = row
    stats = json.loads(str(stats_json or "{}"))
    embedding = {m: [float(x) for x in v] for m, v in vecs.items() if v.shape[0] == VECTOR_DIM}
    base: dict[str, Any] = {"event_id": str(event_id)}
    fixed: dict[str, Any] = {"store_id": str(store_id)}
    if source is not None:
        fixed["source"] = str(source)
    fixed["event_type"] = str(event_type)
    fixed["modality"] = json.loads(str(modality))
    if text is not None:
        fixed["text"] = str(text)
    shape = _Shape(base, fixed, str(ts), None if end_ts is None else str(end_ts), tz, stats, ents, rels, refs)
    for order in islice(permutations(ents), MAX_ENTITY_ORDERS):
        shape.ents = list(order)
        for given in _vector_choices(embedding, text is not None):
            emb = {m: embedding[m] for m in given}
            for mev in islice(shape.candidates(emb), MAX_CANDIDATES):
                if content_hash(mev) == digest:
                    return Record(
                        rid,
                        str(event_id),
                        str(store_id),
                        str(day),
                        float(ts_epoch),
                        str(digest),
                        mev,
                        True,
                        given,
                    )
    shape.ents = ents
    fallback = shape.render(str(ts), None if end_ts is None else str(end_ts), embedding, True, True, True)
    return Record(
        rid,
        str(event_id),
        str(store_id),
        str(day),
        float(ts_epoch),
        str(digest),
        fallback,
        False,
        sorted(embedding),
    )


def _vector_choices(embedding: dict[str, list[float]], has_text: bool) -> list[list[str]]:
    """Which stored vectors the imported line may have carried, likeliest first: a text vector
    is usually computed at import (so: without it), else all or none."""
    have = sorted(embedding)
    choices: list[list[str]] = []
    if has_text and "text" in have:
        choices.append([m for m in have if m != "text"])
    choices.append(have)
    if have and [] not in choices:
        choices.append([])
    return choices


@dataclass
class _Shape:
    base: dict[str, Any]
    fixed: dict[str, Any]
    ts: str
    end_ts: str | None
    tz: str
    stats: dict[str, Any]
    ents: list[str]
    rels: list[dict[str, str]]
    refs: list[str]

    def render(
        self,
        ts: str,
        end_ts: str | None,
        emb: dict[str, list[float]],
        with_stats: bool,
        with_ents: bool,
        with_rels: bool,
    ) -> dict[str, Any]:
        mev = dict(self.base)
        mev["timestamp"] = ts
        if end_ts is not None:
            mev["end_timestamp"] = end_ts
        mev.update(self.fixed)
        if emb:
            mev["embedding"] = emb
        if self.ents or with_ents:
            mev["entities"] = list(self.ents)
        if self.rels or with_rels:
            mev["relations"] = [dict(r) for r in self.rels]
        if self.stats or with_stats:
            mev["stats"] = dict(self.stats)
        mev["raw_ref"] = list(self.refs)
        return mev

    def candidates(self, emb: dict[str, list[float]]) -> Iterator[dict[str, Any]]:
        """Likely spellings of the imported line, likeliest first."""
        ends: list[str | None]
        optional = [
            (s, e, r)
            for s in ((False, True) if not self.stats else (True,))
            for e in ((False, True) if not self.ents else (True,))
            for r in ((False, True) if not self.rels else (True,))
        ]
        for style in _styles(self.ts, self.tz):
            ts = _spell(self.ts, style)
            ends = [None] if self.end_ts is None else [_spell(self.end_ts, style)]
            if self.end_ts is not None:
                ends += [
                    _spell(self.end_ts, other) for other in _styles(self.end_ts, self.tz) if other != style
                ]
            for end in ends:
                for s, e, r in optional:
                    yield self.render(ts, end, emb, s, e, r)


#: a spelling: (offset: "local" | "Z" | "+00:00", fraction digits: 0 | 3 | 6 | -1 (trailing zeros cut)), zone
_Style = tuple[str, int, str]


def _styles(utc_text: str, tz: str) -> list[_Style]:
    micro = int(utc_text[20:26]) if len(utc_text) >= 27 else 0
    fracs = [0] if micro == 0 else []
    if micro % 1000 == 0:
        fracs.append(3)
    fracs += [6, -1]
    out: list[_Style] = []
    for off in ("local", "Z", "+00:00"):
        for f in fracs:
            if (off, f, tz) not in out:
                out.append((off, f, tz))
    return out


def _spell(utc_text: str, style: _Style) -> str:
    off, frac, tz = style
    dt = datetime.strptime(utc_text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    if off == "local":
        dt = dt.astimezone(ZoneInfo(tz))
    text = dt.strftime("%Y-%m-%dT%H:%M:%S")
    if frac == 3:
        text += f".{dt.microsecond // 1000:03d}"
    elif frac == 6:
        text += f".{dt.microsecond:06d}"
    elif frac == -1 and dt.microsecond:
        text += f".{dt.microsecond:06d}".rstrip("0")
    if off == "Z":
        return text + "Z"
    if off == "+00:00":
        return text + "+00:00"
    offset = dt.utcoffset()
    secs = int(offset.total_seconds()) if offset is not None else 0
    sign = "+" if secs >= 0 else "-"
    secs = abs(secs)
    return f"{text}{sign}{secs // 3600:02d}:{(secs % 3600) // 60:02d}"
