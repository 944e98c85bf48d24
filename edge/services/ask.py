"""The ask use case: a question (or a plan) into a payload (payload.schema.json).

One place wires the parser and the engine (its store-free core: :mod:`edge.services.answer`), so
``adamm ask``, the TUI, ``adamm demo``, the standing questions of ``adamm maintain`` and (through
the core, over its rollups) ``adamm-hub ask`` get the same answer to the same question:

- the parser: the rule parser with the memory's embedding matcher
  (:meth:`edge.memory.store.Store.embed_texts_cached`) at ``[analysis] similarity_threshold``, or,
  when ``[llm] enabled``, :class:`edge.llm.LLMPlanParser` with every ``[llm]`` setting, which falls
  back to that same rule parser on any failure;
- the source: the memory's event source; the engine: :mod:`edge.analysis.engine` with
  ``[analysis]``.

Asking changes nothing the memory knows (CONTRACT.md section 1: no facts, actions, procedures or
outcomes); only derived caches (hourly rollup, parser vocabulary, text vectors) are brought up to
date, and only when the memory is writable. Recording an answer's action is a separate, explicit
use case (:func:`edge.services.actions.propose_action`).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from edge.analysis import engine, fact_notes
from edge.config import AdammConfig
from edge.errors import AdammError
from edge.services.answer import SourceAsk

if TYPE_CHECKING:
    from edge.memory.store import Store


class AskService(SourceAsk):
    """Answers questions and plans from one open memory with one loaded config.

    ``config`` is the caller's loaded config (the edge config or the daemon's, which extends it);
    ``now`` anchors relative times (None: the clock at each ask). The core is
    :class:`edge.services.answer.SourceAsk`; the memory adds its embedding matcher and the
    payload's ``tiers``."""

    def __init__(self, store: Store, config: AdammConfig, *, now: datetime | None = None) -> None:
        super().__init__(store.event_source, config, now=now, embed=store.embed_texts_cached)
        self.store = store

    def finish(self, payload: dict[str, Any], now: datetime) -> dict[str, Any]:
        return self._with_fact_notes(self._with_tiers(payload, now))

    def _with_fact_notes(self, payload: dict[str, Any]) -> dict[str, Any]:
        """``notes`` on the current facts that answer the same question (their numbers, window and
        test), so an answer and a fact that differ say why."""
        from edge.memory.semantic.facts import fact_records

        plan = payload.get("plan") or {}
        if not plan:
            return payload
        with self.store.read() as conn:
            facts = [
                {**r.contract(), "plan": r.plan, "evaluated_until": r.evaluated_until}
                for r in fact_records(conn, current_only=True)
            ]
        lang = "zh" if plan.get("language") == "zh" else "en"
        notes = fact_notes.notes_for(plan, facts, lang)
        if notes:
            payload["notes"] = [*payload.get("notes", []), *notes]
        return payload

    def _with_tiers(self, payload: dict[str, Any], now: datetime) -> dict[str, Any]:
        """``payload["tiers"]``: the storage tiers the plan's time range reaches (CONTRACT.md
        section 6); for a retrieval, a note when events of the range exist only in the archive."""
        from edge.memory.query.rollup_source import RESTORE_HINT
        from edge.memory.tiers import archive_only_count, late_not_counted, tiers_for

        plan = payload.get("plan") or {}
        if not plan:
            return payload
        stores = tuple((plan.get("filters") or {}).get("store_id") or ())
        tz = self.store.timezone(stores[0] if len(stores) == 1 else None)
        try:
            flt = engine.build_filter(plan, now, tz)
            windows = engine._windows(plan, flt, now, tz)
        except AdammError:
            return payload
        with self.store.read() as conn:
            payload["tiers"] = tiers_for(conn, windows)
            late = late_not_counted(conn, windows, stores) if "cold" in payload["tiers"] else []
            if late and plan.get("intent") != "retrieve":
                # a closed day's rollup rows are its record: events that reached it after its own
                # were archived are kept, not counted; an answer over that day says so
                n, days = sum(x[2] for x in late), ", ".join(sorted({x[1] for x in late}))
                payload.setdefault("notes", []).append(
                    f"{n} 条事件在其日期（{days}）结账归档之后才到达：已保存，但不计入这些日期的数字。"
                    if plan.get("language") == "zh"
                    else f"{n} events arrived after their day ({days}) was closed and archived: they are "
                    "kept but not counted in that day's figures."
                )
            if plan.get("intent") == "retrieve" and "cold" in payload["tiers"]:
                n = archive_only_count(conn, flt.since, flt.until, stores)
                if n:
                    zh = plan.get("language") == "zh"
                    payload["notes"] = [
                        f"该时间范围内有 {n} 条较早的事件只在冷存档中，未参与检索（adamm restore 可取回）。"
                        if zh
                        else f"{n} older events of this time range are only in the cold archive and were not "
                        "searched (adamm restore brings them back)."
                    ]
                    if payload.get("status") == "insufficient_data":
                        # nothing found outside the archive: say that the days are archived and how
                        # they come back, where the answer says what is missing
                        payload["missing"] = [
                            *(payload.get("missing") or []),
                            f"{n} 条事件在已归档的日期中（{RESTORE_HINT['zh']}）"
                            if zh
                            else f"the {n} events of archived days ({RESTORE_HINT['en']})",
                        ]
        return payload
