"""Helpers shared by the ``adamm`` sub-commands: opening an existing memory, ``--now``
and the search flags (``--where``/``--prefer`` pairs, ``--since``/``--until``/``--near`` times, the
EventFilter they make) and the ``--json`` shape of a search result. The config is read by the one
loader, :func:`edge.config.load_config`.

Imported by the ``edge.cli.cmd_*`` modules (and the tune labels reader in ``cmd_tune``); no
sub-command imports another.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from edge.analysis.source import EventFilter, EventRow, Scalar
from edge.errors import UsageError


def open_existing_store(db: str, config: Any, *, readonly: bool | None = True) -> Any:
    """Open the memory at ``db``; a missing file or one that is not an adamm memory is an
    environment error (exit 3), never created or changed.

    ``readonly=None`` opens it writable when the file and its folder can be written (so derived
    caches are kept for the next process), else read-only (caches are then computed for this run).
    """
    from edge.memory.db import connect as dbmod
    from edge.memory.store import Store

    if readonly is None:
        dbmod.check_memory_file(db)
        readonly = not dbmod.can_write(db)
    return Store.open(db, config=config, readonly=readonly, create=False)


# -- search flags, shared by ``adamm search`` and the ``adamm tune`` labels file ----------------------


def parse_value(raw: str) -> Scalar:
    """A ``--where``/``--prefer`` value: numbers compare as numbers, true/false as booleans, else text."""
    low = raw.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    try:
        return int(raw)
    except ValueError:
        pass
    try:
        f = float(raw)
    except ValueError:
        return raw
    return f if math.isfinite(f) else raw


def parse_pair(item: str, flag: str) -> tuple[str, Scalar]:
    """``KEY=VALUE`` with an identifier key (no SQL is ever built from it), else a UsageError."""
    key, sep, value = item.partition("=")
    key = key.strip()
    if not sep:
        raise UsageError(f"{flag} {item!r}: expected KEY=VALUE")
    if not (key.isidentifier() and key.isascii()):
        raise UsageError(f"{flag} {item!r}: the key must be an identifier (ASCII letters, digits, _)")
    return key, parse_value(value)


def parse_time(raw: str, flag: str, timezone: str) -> datetime:
    """RFC 3339 with an offset (or ``Z``), or a date meaning midnight in the store's time zone."""
    from zoneinfo import ZoneInfo

    text = raw.strip()
    if not text:
        raise UsageError(
            f"{flag} is empty: give a date (2025-11-01) or an RFC 3339 time, or leave the flag out"
        )
    try:
        if len(text) == 10:
            d = datetime.strptime(text, "%Y-%m-%d")
            return d.replace(tzinfo=ZoneInfo(timezone)).astimezone(UTC)
        t = datetime.fromisoformat(text.replace("z", "Z").replace("Z", "+00:00"))
    except (ValueError, OverflowError):
        raise UsageError(
            f"{flag} {raw!r}: expected an RFC 3339 time with offset (2025-11-01T09:00:00+08:00) or a date"
        ) from None
    if t.tzinfo is None or "T" not in text.upper():
        raise UsageError(f"{flag} {raw!r}: the time needs an offset, e.g. 2025-11-01T09:00:00+08:00 or ...Z")
    try:
        return t.astimezone(UTC)
    except (OverflowError, ValueError):
        raise UsageError(f"{flag} {raw!r} is outside the calendar (years 1-9999)") from None


def build_filter(
    *,
    where: Sequence[tuple[str, Scalar]] = (),
    types: Sequence[str] = (),
    since: datetime | None = None,
    until: datetime | None = None,
    store_ids: Sequence[str] = (),
) -> EventFilter:
    """The EventFilter of a search: ``--where`` pairs on the same key are alternatives (OR)."""
    grouped: dict[str, list[Scalar]] = {}
    for key, value in where:
        grouped.setdefault(key, []).append(value)
    return EventFilter(
        store_ids=tuple(store_ids),
        event_types=tuple(types),
        since=since,
        until=until,
        attributes=tuple((k, tuple(v)) for k, v in grouped.items()),
    )


def row_to_json(row: EventRow) -> dict[str, Any]:
    """The ``adamm search --json`` shape of one result (CONTRACT.md)."""
    return {
        "event_id": row.event_id,
        "score": row.score,
        "cosine": row.cosine,
        "attr_match": row.attr_match,
        "timestamp": row.timestamp,
        "event_type": row.event_type,
        "store_id": row.store_id,
        "raw_ref": list(row.raw_ref),
        "text": row.text,
    }
