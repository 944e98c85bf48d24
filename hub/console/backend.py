"""The HQ console's backend: :class:`edge.services.console.ConsoleBackend` over a hub store.

:class:`HubBackend` answers with the hub's ask engine (:func:`hub.ask.ask`: cross-store questions,
the same payload as a store's), lists every store's facts (``hub_facts``) and the hub-issued
actions (``hub_actions``), and sends a finding as an action to a store's role
(:func:`hub.actions.send_answer_action`). Each call opens its own short connection (the console
calls it from worker threads). The hub holds no events: the event calls return nothing, and an
evidence event id is described by the store summary that cites it. The store console's answer
view (edge.tui) therefore runs unchanged at the hub.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from edge.analysis.source import EventFilter, EventRow
from edge.config import parse_duration
from edge.config.hub import HubConfig
from edge.contract import OPEN_STATES
from edge.errors import UsageError
from edge.presentation.effects import unmeasured_effect
from edge.services.console import ConsoleStatus
from hub import actions as hub_actions
from hub.ask import ask
from hub.db import HubDB, open_hub
from hub.fleet import effect_facts
from hub.source import HubSource
from hub.status import hub_status


def _cited(store: str, day: str, slice_: str, lang: str) -> str:
    """What an evidence id is at the hub, in ``lang`` (the summary's slice in words)."""
    from edge.analysis.operators._words import dimension_label

    slice_ = (
        ("全店" if lang == "zh" else "whole store") if slice_ == "total" else dimension_label(slice_, lang)
    )
    if lang == "zh":
        return f"{store} {day}（{slice_}）：总部日汇总引用的门店事件（原始事件保存在门店）"
    return f"{store} {day} ({slice_}): a store event cited by the hub's daily summary (the event itself stays at the store)"


def _done_on(fact: dict[str, Any]) -> tuple[str, str]:
    return str(fact.get("valid_from") or ""), str(fact["action_id"])


def _store_action(fact: dict[str, Any], window: int) -> dict[str, Any]:
    """A store's own action as the hub knows it: done (it has been measured), its statement as
    its summary, its effect the fact."""
    statement = fact.get("statement") or {}
    return {
        "action_id": str(fact["action_id"]),
        "store_id": fact["store_id"],
        "origin": "store",
        "role": "",
        "type": "",
        "state": "done",
        "params_json": "{}",
        "summary": statement.get("en", ""),
        "statement": statement,
        "confidence": float(fact.get("confidence") or 0.0),
        "issued_at": None,
        "acked_by": None,
        "acked_at": None,
        "done_on": fact.get("valid_from"),
        "effect": {"state": "measured", **fact, "window_days": window},
    }


class HubBackend:
    """The console's view of a hub store (``target``: a SQLite path or a postgresql:// URL)."""

    def __init__(self, target: str, config: HubConfig | None = None, *, now: datetime | None = None) -> None:
        self.target = target
        self.config = config or HubConfig()
        self.now = now
        #: the language the console shows (it says what an evidence id is in it)
        self.lang = "en"
        with self._db():  # exit 3 now (not in a worker) when it is not a hub store
            pass

    @contextmanager
    def _db(self) -> Iterator[HubDB]:
        db = open_hub(self.target)
        try:
            yield db
        finally:
            db.close()

    # -- ConsoleBackend ----------------------------------------------------------------------------

    def timezone(self) -> str:
        with self._db() as db:
            return HubSource(db).default_zone()

    def ask(self, question: str, language: str | None = None) -> dict[str, Any]:
        return ask(self.target, question, now=self.now, config=self.config, language=language)

    def list_events(self, flt: EventFilter, limit: int) -> tuple[list[EventRow], int]:
        return [], 0

    def search_events(self, text: str, flt: EventFilter, k: int) -> list[EventRow]:
        return []

    def get_event(self, event_id: str) -> dict[str, Any] | None:
        """The store summary that cites ``event_id`` (the hub holds summaries, not events)."""
        with self._db() as db:
            row = db.one(
                "SELECT store_id, local_date, slice, event_type FROM hub_rollup "
                "WHERE first_event_id = ? OR last_event_id = ? ORDER BY local_date LIMIT 1",
                (event_id, event_id),
            )
        if row is None:
            return None
        store, day, slice_, event_type = row
        return {
            "event_id": event_id,
            "event_type": event_type,
            "raw_refs": [],
            "text": _cited(str(store), str(day), str(slice_), self.lang),
        }

    def list_facts(self, include_closed: bool = False) -> list[dict[str, Any]]:
        """Every store's facts (contract shape plus ``store_id``), current first, by store."""
        with self._db() as db:
            found = db.query("SELECT store_id, body FROM hub_facts ORDER BY store_id, fact_id")
        out = []
        for store, body in found:
            fact = {**json.loads(body), "store_id": store}
            if include_closed or not fact.get("valid_to"):
                out.append(fact)
        out.sort(key=lambda f: (f.get("valid_to") is not None, f["store_id"]))
        return out

    def list_actions(self, state: str | None = None) -> list[dict[str, Any]]:
        """The actions the hub issued, across stores, newest first, then the stores' own actions
        the hub knows by their measured effect (an ``action_effect`` fact synced from the store,
        ``origin`` ``"store"``). A done action has its ``effect`` (CONTRACT.md section 7): the
        store's ``action_effect`` fact for it, else the days its window still needs or that it
        has no measurable target (:func:`edge.presentation.effects.unmeasured_effect`)."""
        now = self.now or datetime.now(UTC)
        window = self.config.actions.effect_window_days
        with self._db() as db:
            found = hub_actions.list_actions(db, state)
            facts = effect_facts(db)
        for a in found:
            fact = facts.pop(a["action_id"], None)
            if fact is not None:
                a["effect"] = {"state": "measured", **fact, "window_days": window}
            elif a["state"] == "done" and a.get("acked_at"):
                params = json.loads(a.get("params_json") or "{}")
                unmeasured = unmeasured_effect(params, str(a["acked_at"]), now, window, in_store=False)
                a["effect"] = {**unmeasured, "window_days": window}
        if state in (None, "done"):
            found += [_store_action(f, window) for f in sorted(facts.values(), key=_done_on, reverse=True)]
        return found

    def ack_action(self, action_id: str, state: str, by: str) -> bool:
        """HQ does not acknowledge for a store's staff: always False."""
        return False

    def propose_action(
        self, payload: dict[str, Any], role: str | None = None, store_id: str | None = None
    ) -> str | None:
        """Queue the finding as an action for ``role`` at ``store_id`` (default: the store the
        finding points at) in the hub's outbox; None when the answer is not ok or is weak."""
        if hub_actions.answer_is_weak(payload):
            return None
        with self._db() as db:
            store = store_id or hub_actions.finding_store(payload, self._store_ids(db))
            if store is None:
                raise UsageError("the finding names no single store: say which store it goes to")
            expires = datetime.now(UTC) + parse_duration(self.config.actions.default_expires_in)
            return hub_actions.send_answer_action(
                db,
                payload,
                store_id=store,
                role=role,
                question=str(payload.get("question") or ""),
                expires_at=expires,
            )

    def status(self) -> ConsoleStatus:
        """No components at the hub; ``outbox``: the hub actions still open."""
        with self._db() as db:
            open_ = [a for a in hub_actions.list_actions(db) if a["state"] in OPEN_STATES]
        return ConsoleStatus([], "running", None, {}, len(open_))

    # -- the hub's own -----------------------------------------------------------------------------

    @staticmethod
    def _store_ids(db: HubDB) -> list[str]:
        return [str(r[0]) for r in db.query("SELECT store_id FROM hub_stores ORDER BY store_id")]

    def fleet(self) -> dict[str, Any]:
        """How each kind of fact holds across the fleet (:func:`hub.fleet.fleet_check`, what
        ``adamm-hub facts`` shows), as of ``now`` (else the clock)."""
        from hub.fleet import fleet_check

        with self._db() as db:
            return fleet_check(db, now=self.now or datetime.now(UTC), config=self.config.analysis)

    def stores(self) -> list[dict[str, Any]]:
        """Per store its status and last summary (:func:`hub.status.hub_status`)."""
        with self._db() as db:
            return list(hub_status(db)["stores"])

    def store_ids(self) -> list[str]:
        with self._db() as db:
            return self._store_ids(db)

    def default_store(self, payload: dict[str, Any]) -> str | None:
        """The store a finding points at (see :func:`hub.actions.finding_store`)."""
        return hub_actions.finding_store(payload, self.store_ids())
