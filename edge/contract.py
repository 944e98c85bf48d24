"""The contract's shared vocabulary (``docs/CONTRACT.md``), in one place.

A leaf module (it imports nothing of adamm) that every side may use: the store's memory, the sync
messages, the hub and staff devices. Before, each of them kept its own copy of these lists (the
memory may not import the sync messages, nor the hub's modules), kept equal only by tests.

- :data:`FACT_FIELDS`: a fact's fields (section 6), in order;
- :data:`ACTION_FIELDS`, :data:`ACTION_TYPES`, :data:`ACK_STATES`: an action message's fields,
  its ``type`` and an ack's ``state`` (section 5);
- the action outbox's states (:data:`ACTION_STATES`, :data:`OPEN_STATES`, :data:`FINAL_STATES`)
  and the order acknowledgements move them in (:data:`ACK_RANK`), the same on a store and on the
  hub;
- :func:`iso` / :func:`parse_iso`: the UTC ISO 8601 times (seconds) the outboxes store, so they
  compare as text in SQL.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

#: how far ahead of the clock a store's event or day may be (CONTRACT.md section 5: a day after the
#: hub's clock + 1 day is not believed; ``adamm import`` refuses events dated later than this)
MAX_AHEAD = timedelta(days=1)
#: no store day before this is believed
EARLIEST_DAY = date(2000, 1, 1)

#: the fact fields of CONTRACT.md section 6, in order
FACT_FIELDS: tuple[str, ...] = (
    "fact_id",
    "statement",
    "metric",
    "dimension",
    "value",
    "effect",
    "n",
    "p_value",
    "confidence",
    "evidence",
    "evidence_count",
    "valid_from",
    "valid_to",
)
#: an action message's fields (CONTRACT.md section 5, ``action/{role}``), in order
ACTION_FIELDS: tuple[str, ...] = (
    "action_id",
    "type",
    "params",
    "summary",
    "evidence",
    "confidence",
    "issued_at",
)
#: an action's ``type`` (CONTRACT.md section 5; payload.schema.json ``action.type``)
ACTION_TYPES: tuple[str, ...] = ("recommendation", "work_order", "alert")
#: the states an acknowledgement may set (an ack's ``state``)
ACK_STATES: tuple[str, ...] = ("accepted", "done", "rejected")
#: every state of an action in an issuer's outbox: ``pending`` (queued) < ``sent`` (the broker has
#: it) < ``accepted`` < ``done`` | ``rejected``; ``expired`` when nobody acknowledged it in time
ACTION_STATES: tuple[str, ...] = ("pending", "sent", "accepted", "done", "rejected", "expired")
#: the states in which the outbox (re-)sends an action until it is acknowledged or expires
OPEN_STATES: tuple[str, ...] = ("pending", "sent")
#: the states nothing moves an action out of
FINAL_STATES: tuple[str, ...] = ("done", "rejected", "expired")
#: the order of :data:`ACTION_STATES` for acknowledgements, which only move an action forward
#: (done and rejected share the top: whichever comes first stays)
ACK_RANK: dict[str, int] = {"pending": 0, "sent": 1, "accepted": 2, "done": 3, "rejected": 3}


def iso(t: datetime) -> str:
    """``t`` as the outboxes store times: UTC ISO 8601, seconds (``2025-11-01T09:00:00+00:00``)."""
    if t.tzinfo is None:
        raise ValueError("an action time needs a time zone")
    return t.astimezone(UTC).isoformat(timespec="seconds")


def parse_iso(text: str) -> datetime:
    """A stored or received ISO 8601 time (``Z`` accepted) as an aware datetime (UTC when it
    names no zone)."""
    t = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)
