"""Row building for import: one checked MEV becomes the rows of every table it lands in.

Owns the mapping from an event to the schema of :mod:`edge.memory.db.migrations`: the UTC timestamp
(``YYYY-MM-DDTHH:MM:SS.ffffffZ``) and its epoch seconds, the store-local date/hour/weekday/week
(the Monday)/month from the store's IANA zone, well-known stats as typed columns (``promotion`` as
TEXT: ``"true"``/``"false"`` or its name), the original stats object in ``stats_json``, the other
stats keys in ``event_attrs``, raw refs / entities / relations as child rows, and supplied vectors.
``content_hash`` is the sha256 of the canonical JSON of the parsed object (sorted keys, compact),
so the same event written differently is still the same event.

Pure Python (no SQL): :class:`edge.memory.store.Store` calls :func:`build` on the importing
thread and hands the rows to the writer thread, which only inserts them.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np
import orjson

from edge.errors import UsageError
from edge.memory.db.migrations import MODALITY_VECTOR_TABLES, WELL_KNOWN_STATS
from edge.memory.ingest.mev import CheckedEvent, LineRejected

logger = logging.getLogger(__name__)

WELL_KNOWN_KEYS = tuple(WELL_KNOWN_STATS)
_INT_COLUMNS = frozenset(k for k, t in WELL_KNOWN_STATS.items() if t == "INTEGER")
_REAL_COLUMNS = frozenset(k for k, t in WELL_KNOWN_STATS.items() if t == "REAL")

#: the events columns an import writes, in insert order (``id`` first)
EVENT_COLUMNS: tuple[str, ...] = (
    "id",
    "event_id",
    "store_id",
    "ts",
    "ts_epoch",
    "end_ts",
    "local_date",
    "local_hour",
    "local_weekday",
    "local_week",
    "local_month",
    "source",
    "event_type",
    "modality",
    "text",
    *WELL_KNOWN_KEYS,
    "stats_json",
    "content_hash",
    "imported_at",
)
_N_TYPED = len(WELL_KNOWN_KEYS)
_AS_IS, _AS_INT, _AS_REAL, _AS_PROMOTION = range(4)
#: well-known stats key -> (position among the typed columns, how its value is stored)
_TYPED_AS: dict[str, tuple[int, int]] = {
    k: (
        i,
        _AS_PROMOTION
        if k == "promotion"
        else _AS_INT
        if k in _INT_COLUMNS
        else _AS_REAL
        if k in _REAL_COLUMNS
        else _AS_IS,
    )
    for i, k in enumerate(WELL_KNOWN_KEYS)
}


def zone(name: str) -> ZoneInfo:
    """The IANA zone ``name``; :class:`UsageError` naming it when unknown."""
    try:
        if not name or name != name.strip():
            raise ValueError(name)
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, TypeError, OSError):
        raise UsageError(
            f"unknown time zone {name!r}", hint="use an IANA name such as Asia/Shanghai or America/New_York"
        ) from None


def utc_text(dt: datetime) -> str:
    """``YYYY-MM-DDTHH:MM:SS.ffffffZ`` of an aware datetime."""
    return dt.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def canonical_json(obj: Any) -> str:
    """Sorted keys, compact, UTF-8 (orjson; the standard encoder for what orjson cannot encode)."""
    return canonical_bytes(obj).decode("utf-8", "surrogatepass")


def canonical_bytes(obj: Any) -> bytes:
    try:
        return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)
    except (orjson.JSONEncodeError, TypeError):
        return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
            "utf-8", "surrogatepass"
        )


def content_hash(obj: Any) -> str:
    try:
        data = orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)
    except (orjson.JSONEncodeError, TypeError):
        data = b""
    if data:
        return hashlib.sha256(data).hexdigest()
    try:
        data = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = exc.object[exc.start : exc.end]
        code = f"\\u{ord(bad[0]):04x}" if bad else "?"
        raise LineRejected(
            f"the line is not valid UTF-8 or has an unpaired UTF-16 surrogate ({code}); "
            "fix the file's text encoding"
        ) from None
    return hashlib.sha256(data).hexdigest()


def promotion_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass(slots=True)
class EventRows:
    """Every row of one event, without its ``events.id`` (the writer assigns it).

    ``event`` is the events row minus ``id``; the children are tuples minus ``event_rowid``.
    """

    event_id: str
    store_id: str
    content_hash: str
    line: int
    event: tuple[Any, ...]
    attrs: list[tuple[str, str | None, float | None]] = field(default_factory=list)
    refs: list[tuple[int, str]] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)
    relations: list[tuple[int, str, str, str]] = field(default_factory=list)
    #: modality -> float32 bytes (512-d)
    vectors: dict[str, bytes] = field(default_factory=dict)
    #: text to encode when the event has text and no text vector
    text_to_embed: str | None = None


class LocalTime:
    """Store-local calendar fields of UTC instants, for one zone (cached per UTC hour)."""

    def __init__(self, tz: ZoneInfo) -> None:
        self.tz = tz
        self._cache: dict[int, tuple[str, int, int, str, str]] = {}

    def fields(self, ts: datetime, epoch: float | None = None) -> tuple[str, int, int, str, str]:
        """(local_date, local_hour, local_weekday 0=Mon, local_week Monday date, local_month).

        ``epoch`` is ``ts.timestamp()`` when the caller has it.
        """
        # every zone offset in use is a multiple of 15 minutes, so one quarter hour shares them
        key = int((ts.timestamp() if epoch is None else epoch) // 900)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        local = ts.astimezone(self.tz)
        d = local.date()
        monday = d - timedelta(days=d.weekday())
        out = (d.isoformat(), local.hour, d.weekday(), monday.isoformat(), d.isoformat()[:7])
        offset = local.utcoffset()
        if offset is not None and offset.total_seconds() % 900 == 0:  # not for old LMT offsets
            if len(self._cache) > 100_000:
                self._cache.clear()
            self._cache[key] = out
        return out


_MODALITY_TEXT: dict[tuple[str, ...], str] = {}


def _modality_text(modality: list[str]) -> str:
    key = tuple(modality)
    text = _MODALITY_TEXT.get(key)
    if text is None:
        text = _MODALITY_TEXT[key] = json.dumps(modality, separators=(",", ":"))
    return text


def _utc_text_of(value: str, dt: datetime) -> str:
    """:func:`utc_text` of ``dt``, parsed from ``value``: UTC inputs (upper-case ``T`` and ``Z``)
    are re-used as text."""
    n = len(value)
    if value[-1] == "Z" and value[10] == "T":
        if n == 20:
            return value[:19] + ".000000Z"
        if n == 27 and value[19] == ".":
            return value
    return utc_text(dt)


def build(checked: CheckedEvent, line: int, local: LocalTime, imported_at: str) -> EventRows:
    """All rows of one checked event (raises :class:`LineRejected` for content SQLite cannot hold)."""
    obj = checked.obj
    digest = content_hash(obj)
    ts = checked.ts
    epoch = ts.timestamp()
    stats: dict[str, Any] | None = obj.get("stats")
    typed: list[Any] = [None] * _N_TYPED
    attrs: list[tuple[str, str | None, float | None]] = []
    stats_text = "{}"
    if stats:
        for key, v in stats.items():
            if v is None:
                continue
            typed_as = _TYPED_AS.get(key)
            if typed_as is not None:
                pos, conv = typed_as
                if conv == _AS_IS:
                    typed[pos] = v
                elif conv == _AS_INT:
                    typed[pos] = int(v)
                elif conv == _AS_REAL:
                    typed[pos] = float(v)
                else:
                    typed[pos] = promotion_text(v)
            else:
                t = type(v)
                if t is str:
                    attrs.append((key, v, None))
                elif t is bool:
                    attrs.append((key, "true" if v else "false", None))
                elif t is int or t is float:
                    attrs.append((key, None, float(v)))
                else:
                    attrs.append((key, str(v), None))
        stats_text = canonical_json(stats)
    ldate, lhour, lwd, lweek, lmonth = local.fields(ts, epoch)
    text = obj.get("text")
    end_ts = checked.end_ts
    event = (
        obj["event_id"],
        obj["store_id"],
        _utc_text_of(obj["timestamp"], ts),
        epoch,
        None if end_ts is None else _utc_text_of(obj["end_timestamp"], end_ts),
        ldate,
        lhour,
        lwd,
        lweek,
        lmonth,
        obj.get("source"),
        obj["event_type"],
        _modality_text(obj["modality"]),
        text,
        *typed,
        stats_text,
        digest,
        imported_at,
    )
    entities = obj.get("entities")
    relations = obj.get("relations")
    rows = EventRows(
        obj["event_id"],
        obj["store_id"],
        digest,
        line,
        event,
        attrs,
        list(enumerate(obj["raw_ref"])),
        list(entities) if entities else [],
        [(i, r["head"], r["type"], r["tail"]) for i, r in enumerate(relations)] if relations else [],
        {},
    )
    emb: dict[str, list[float]] | None = obj.get("embedding")
    if emb:
        for modality, vec in emb.items():
            if modality in MODALITY_VECTOR_TABLES:
                rows.vectors[modality] = np.asarray(vec, dtype=np.float32).tobytes()
    if text and "text" not in rows.vectors:
        rows.text_to_embed = text
    return rows
