"""The store manager's console backend: everything the TUI asks of a memory, as one interface.

:class:`ConsoleBackend` is what a console front end talks to (ask, events, facts, actions,
status); :class:`edge.services.store_console.StoreBackend` implements it over an edge memory and
the loaded config, so the TUI never holds a database connection (this module is the port alone:
it imports no store, so the TUI and the HQ console built on it load none); the hub implements the same
interface over its own store (``hub.console.backend.HubBackend``), so the HQ console reuses the
TUI's answer view. Answers come from :class:`edge.services.ask.AskService`
(asking writes nothing); the only writes are acknowledging actions and sending them to a role
(queued in the action outbox).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

from edge.analysis.source import EventFilter, EventRow

#: a daemon state code (as ``edge.memory.semantic.components.StatusCode``; worded by presentation)
StatusCode = Literal["running", "stale", "down"]


@dataclass(frozen=True)
class ConsoleStatus:
    """What the Status tab shows: component rows, the daemon's state code (``running``,
    ``stale``, ``down``) and the newest row's age, events per storage tier, unsent outbox
    messages. Codes, not words: :func:`edge.presentation.daemon_warning` words them."""

    components: list[dict[str, Any]]
    daemon: StatusCode
    age_s: float | None
    tiers: dict[str, int]
    outbox: int


class ConsoleBackend(Protocol):
    """The console's view of one store's memory (edge or hub)."""

    def timezone(self) -> str:
        """The store's IANA time zone (for local times and day filters)."""
        ...

    def ask(self, question: str, language: str | None = None) -> dict[str, Any]:
        """The payload answering ``question`` in ``language`` (None: the question's); writes nothing."""
        ...

    def list_events(self, flt: EventFilter, limit: int) -> tuple[list[EventRow], int]:
        """Up to ``limit`` events matching ``flt`` and how many match."""
        ...

    def search_events(self, text: str, flt: EventFilter, k: int) -> list[EventRow]:
        """The ``k`` events matching ``flt`` that are nearest to ``text``."""
        ...

    def get_event(self, event_id: str) -> dict[str, Any] | None:
        """One event with its raw references, stats and entities, or None."""
        ...

    def list_facts(self, include_closed: bool = False) -> list[dict[str, Any]]:
        """Semantic facts in the contract's shape (CONTRACT.md section 6): those that hold, or with
        ``include_closed`` every one, current first."""
        ...

    def list_actions(self, state: str | None = None) -> list[dict[str, Any]]:
        """Actions (optionally of one state), most recently issued first; a done one with its
        ``effect`` where it is known (:mod:`edge.presentation.effects` words it)."""
        ...

    def ack_action(self, action_id: str, state: str, by: str) -> bool:
        """Set an action's state; False when there is no such action."""
        ...

    def propose_action(
        self, payload: dict[str, Any], role: str | None = None, store_id: str | None = None
    ) -> str | None:
        """Send the payload's action to ``role`` (default: the action's own, else
        ``store_manager``) of ``store_id`` (a store's console: its own, the default; the hub's:
        any store, by default the one the finding points at): queued in the issuer's action
        outbox, expiring after ``[actions] default_expires_in``; its id, or None when the payload
        has no action to send."""
        ...

    def status(self) -> ConsoleStatus:
        """Components, daemon state, tiers and outbox."""
        ...
