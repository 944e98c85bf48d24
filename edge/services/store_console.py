"""The console backend over an edge memory: :class:`StoreBackend` implements
:class:`edge.services.console.ConsoleBackend` for the store manager's TUI. Answers come from
:class:`edge.services.ask.AskService` (asking writes nothing); the only writes are acknowledging
actions and sending them to a role (queued in the action outbox)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from edge.analysis.source import EventFilter, EventRow
from edge.config import AdammConfig, DaemonConfig, parse_duration
from edge.errors import UsageError
from edge.memory.semantic import actions, components, events, facts, status
from edge.services import actions as propose
from edge.services.ask import AskService
from edge.services.console import ConsoleStatus

if TYPE_CHECKING:
    from edge.memory.store import Store


class StoreBackend:
    """:class:`ConsoleBackend` over an open edge memory and its loaded config."""

    def __init__(self, store: Store, config: AdammConfig, *, now: datetime | None = None) -> None:
        self.store = store
        self.config = config
        self.asker = AskService(store, config, now=now)
        #: the clock of relative questions and of the actions' effects (None: the wall clock)
        self.now = now
        daemon = config if isinstance(config, DaemonConfig) else None
        self.store_id: str | None = daemon.store_id if daemon else None
        self.heartbeat_seconds = daemon.heartbeat_seconds if daemon else components.DEFAULT_HEARTBEAT_SECONDS

    def timezone(self) -> str:
        return self.store.timezone(self.store_id)

    def ask(self, question: str, language: str | None = None) -> dict[str, Any]:
        return self.asker.ask(question, language)

    def list_events(self, flt: EventFilter, limit: int) -> tuple[list[EventRow], int]:
        """The newest ``limit`` events matching ``flt`` (newest first) and how many match."""
        return self.store.event_source().events.newest_events(flt, limit)

    def search_events(self, text: str, flt: EventFilter, k: int) -> list[EventRow]:
        return self.store.event_source().retrieve(text, flt, k)

    def get_event(self, event_id: str) -> dict[str, Any] | None:
        with self.store.read() as conn:
            return events.get_event(conn, event_id)

    def list_facts(self, include_closed: bool = False) -> list[dict[str, Any]]:
        with self.store.read() as conn:
            return facts.list_facts(conn, current_only=not include_closed)

    def list_actions(self, state: str | None = None) -> list[dict[str, Any]]:
        """The store's actions; a done one with its ``effect`` (measured, the days it still needs,
        or no target: :func:`edge.services.action_effects.action_effects`, CONTRACT.md section 7)."""
        from edge.services.action_effects import action_effects

        now = self.now or datetime.now(UTC)
        with self.store.read() as conn:
            found = actions.list_actions(conn, state)
        effects = action_effects(self.store, self.config, now)
        window = self.config.actions.effect_window_days
        for a in found:
            if a["action_id"] in effects:
                a["effect"] = {**effects[a["action_id"]], "window_days": window}
        return found

    def ack_action(self, action_id: str, state: str, by: str) -> bool:
        return actions.ack_action(self.store, action_id, state, by)

    def propose_action(
        self, payload: dict[str, Any], role: str | None = None, store_id: str | None = None
    ) -> str | None:
        own = propose.own_store_id(self.store, self.store_id)
        if store_id is not None and store_id != own:
            raise UsageError(f"this memory is store {own}'s: it sends actions to its own staff only")
        store_id = own
        expires = datetime.now(UTC) + parse_duration(self.config.actions.default_expires_in)
        return propose.propose_action(
            self.store,
            payload,
            role=role or propose.default_role(payload),
            store_id=store_id,
            expires_at=expires,
        )

    def status(self) -> ConsoleStatus:
        with self.store.read() as conn:
            comp = components.component_status(conn, heartbeat_seconds=self.heartbeat_seconds)
            tiers = status.tier_counts(conn)
            depth = status.outbox_depth(conn)
        return ConsoleStatus(comp.rows, comp.code, comp.age_s, tiers, depth)
