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
  compare as text in SQL;
- the action state machine both outboxes follow (the store's ``actions``,
  :mod:`edge.memory.semantic.actions`, and the hub's ``hub_actions``, :mod:`hub.actions`): what
  an action reads as now (:func:`effective_state`), where an acknowledgement moves it
  (:func:`apply_ack_rule`), whether it is due to be (re-)sent (:func:`send_blocker`) or cleared
  (:func:`clear_due`). Pure: each outbox keeps its own SQL and calls these rules for every row.

The action's retained message (CONTRACT.md section 5: ``adamm/v1/{store}/action/{role}/{id}``,
retained while the action is open) is cleared by its issuer once the action ends. Both outboxes
keep what is left to publish in ``next_send_at``: while the action is open, when its next
(re-)send is due (NULL: at once); once it ended (``done``, ``rejected``, ``expired``), when its
clearing (an empty retained message) is due, NULL once it was cleared. :func:`closing_update`
says what a writer sets when an action ends.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

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


#: outcomes of an acknowledgement (:func:`apply_ack_rule`): the state moved forward; a repeated,
#: older or reordered ack (or one after a final state); no such action; made after the expiry
RECORDED, UNCHANGED, UNKNOWN, LATE = "recorded", "unchanged", "unknown", "late"
#: a role or an action id is one MQTT topic level
_TOPIC_LEVEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")


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


# -- the action state machine (both outboxes) ----------------------------------------------------


def _expired_at(expires_at: str | None, now: datetime) -> bool:
    return bool(expires_at) and parse_iso(str(expires_at)) <= now


def effective_state(state: str, expires_at: str | None, now: datetime) -> str:
    """What an action in ``state`` reads as at ``now``: an open one past its ``expires_at`` is
    ``expired`` even before a writer marked it (so a read-only command shows the truth)."""
    if state in OPEN_STATES and _expired_at(expires_at, now):
        return "expired"
    return state


@dataclass(frozen=True)
class AckRule:
    """Where an acknowledgement takes an action: the :data:`RECORDED` / :data:`UNCHANGED` /
    :data:`LATE` outcome and the state to write (None: write nothing)."""

    outcome: str
    write: str | None


def apply_ack_rule(
    state: str, expires_at: str | None, ack_state: str, ack_at: datetime, now: datetime
) -> AckRule:
    """The rule of an ack with ``ack_state`` made at ``ack_at`` for an action in ``state``:

    - ``done`` and ``rejected`` are final: nothing moves the action after them;
    - an action past its expiry takes an ack only when it was made before the expiry (the device
      acted in time, its ack was late arriving); one made after it is :data:`LATE` (and the action
      is written ``expired`` when it was not yet);
    - acks only move forward (``pending < sent < accepted < done | rejected``, :data:`ACK_RANK`):
      a repeated, older or reordered one is :data:`UNCHANGED`."""
    if ack_state not in ACK_STATES:
        raise ValueError(f"state must be one of {', '.join(ACK_STATES)}, not {ack_state!r}")
    if state in ("done", "rejected"):
        return AckRule(UNCHANGED, None)
    if state == "expired" or (state in OPEN_STATES and _expired_at(expires_at, now)):
        if not expires_at or ack_at >= parse_iso(str(expires_at)):
            return AckRule(LATE, None if state == "expired" else "expired")
        state = "sent"  # acknowledged in time: it counts as if it had not expired
    if ACK_RANK[ack_state] <= ACK_RANK.get(state, 0):
        return AckRule(UNCHANGED, None)
    return AckRule(RECORDED, ack_state)


def closing_update(new_state: str, now: datetime) -> str | None:
    """The ``next_send_at`` a writer sets with ``new_state``: ``now`` when the action ends (its
    retained message is to be cleared), None when it stays as it is (an ``accepted`` action stays
    retained and is no longer re-sent)."""
    return iso(now) if new_state in FINAL_STATES else None


def valid_role(role: Any) -> bool:
    """True when ``role`` can name the action topic's level."""
    return isinstance(role, str) and bool(_TOPIC_LEVEL.match(role))


def send_blocker(row: Mapping[str, Any], now: datetime) -> str | None:
    """Why the outbox row ``row`` is not to be (re-)sent at ``now`` (None: send it): it is not open,
    it expired (the sender marks it instead), its re-send is not due yet, or its role or id cannot
    name a topic level."""
    state = str(row["state"])
    if state not in OPEN_STATES:
        return f"it is {state}"
    if _expired_at(row.get("expires_at"), now):
        return "it expired"
    nxt = row.get("next_send_at")
    if nxt and parse_iso(str(nxt)) > now:
        return "its re-send is not due"
    if not valid_role(row.get("role")):
        return f"its role {row.get('role')!r} cannot name a topic"
    if not valid_role(row.get("action_id")):
        return f"its id {row.get('action_id')!r} cannot name a topic"
    return None


def clear_due(row: Mapping[str, Any], now: datetime) -> bool:
    """True when the ended action ``row`` still has a retained message to clear at ``now``."""
    nxt = row.get("next_send_at")
    return (
        str(row["state"]) in FINAL_STATES
        and bool(nxt)
        and parse_iso(str(nxt)) <= now
        and valid_role(row.get("role"))
        and valid_role(row.get("action_id"))
    )


def resend_gap(attempts: int, base_s: float, max_s: float) -> timedelta:
    """The wait before the re-send that follows send number ``attempts + 1`` of an action (both
    outboxes): ``base_s`` doubling, at most ``max_s``."""
    return timedelta(seconds=min(max_s, base_s * 2 ** min(attempts, 30)))
