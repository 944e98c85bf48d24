"""Semantic facts (the ``facts`` table) and the standing questions' high-water marks
(``fact_marks``): listing facts in the contract's shape and applying one distillation run.

Facts are written by maintenance (:mod:`edge.services.facts`), never by asking (CONTRACT.md
section 1); a fact is never deleted: one that stops holding gets ``valid_to``, one that changed
is closed and a new one ``supersedes`` it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import apsw

from edge.memory.semantic._sql import rows, utc_now

if TYPE_CHECKING:
    from edge.memory.store import Store


@dataclass
class FactRecord:
    """One fact row as the facts step writes it (``valid_to`` None while it holds)."""

    fact_id: str
    store_id: str
    question: str
    slot: str
    signature: str
    statement: dict[str, str]
    metric: str | None
    dimension: str | None
    value: Any
    effect: float | None
    n: int
    p_value: float | None
    confidence: float
    evidence: list[str]
    evidence_count: int
    valid_from: str
    valid_to: str | None
    plan: dict[str, Any]
    evaluated_until: str
    supersedes: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    #: the Benjamini-Hochberg adjusted p-value of the test the fact rests on (over every standing
    #: question the store tested at the same evaluation point); not a contract field
    q_value: float | None = None

    def contract(self) -> dict[str, Any]:
        """The fact as CONTRACT.md section 6 lists it (exactly those fields, plus ``action_id`` for
        an ``action_effect`` fact, section 7)."""
        return {
            "fact_id": self.fact_id,
            "statement": {"zh": self.statement.get("zh", ""), "en": self.statement.get("en", "")},
            "metric": self.metric,
            "dimension": self.dimension,
            "value": self.value,
            "effect": self.effect,
            "n": self.n,
            "p_value": self.p_value,
            "confidence": self.confidence,
            "evidence": list(self.evidence),
            "evidence_count": self.evidence_count,
            "valid_from": self.valid_from,
            "valid_to": self.valid_to,
            # an action's measured effect names its action (CONTRACT.md section 7)
            **({"action_id": self.slot} if self.question == "action_effect" else {}),
        }


def _record(row: dict[str, Any]) -> FactRecord:
    return FactRecord(
        fact_id=row["fact_id"],
        store_id=row["store_id"],
        question=row["question"],
        slot=row["slot"],
        signature=row["signature"],
        statement={"zh": row["statement_zh"], "en": row["statement_en"]},
        metric=row["metric"],
        dimension=row["dimension"],
        value=json.loads(row["value_json"]),
        effect=row["effect"],
        n=int(row["n"]),
        p_value=row["p_value"],
        confidence=float(row["confidence"]),
        evidence=[str(e) for e in json.loads(row["evidence_json"])],
        evidence_count=int(row["evidence_count"]),
        valid_from=row["valid_from"],
        valid_to=row["valid_to"],
        plan=json.loads(row["plan_json"]),
        evaluated_until=row["evaluated_until"],
        supersedes=row["supersedes"],
        q_value=row.get("q_value"),
    )


def has_contract_table(conn: apsw.Connection) -> bool:
    """Whether the memory's ``facts`` table has the contract's shape (a memory opened read-only
    that an older adamm wrote has not been migrated, and holds no distilled facts)."""
    return any(r["name"] == "valid_from" for r in rows(conn, "PRAGMA table_info(facts)"))


def fact_records(
    conn: apsw.Connection, *, current_only: bool = False, store_id: str | None = None
) -> list[FactRecord]:
    """Every fact (or only those that hold; only ``store_id``'s when given), current first, then
    newest ``valid_from`` first."""
    if not has_contract_table(conn):
        return []
    where = ["valid_to IS NULL"] if current_only else []
    params: tuple[str, ...] = ()
    if store_id is not None:
        where.append("store_id = ?")
        params = (store_id,)
    sql = (
        f"SELECT * FROM facts {'WHERE ' + ' AND '.join(where) if where else ''} "
        "ORDER BY valid_to IS NOT NULL, valid_from DESC, store_id, question, slot, fact_id"
    )
    return [_record(r) for r in rows(conn, sql, params)]


def list_facts(
    conn: apsw.Connection, *, current_only: bool = False, store_id: str | None = None
) -> list[dict[str, Any]]:
    """Facts in the contract's shape (CONTRACT.md section 6), current ones first."""
    return [r.contract() for r in fact_records(conn, current_only=current_only, store_id=store_id)]


def open_facts(conn: apsw.Connection, store_id: str, question: str) -> dict[str, FactRecord]:
    """The facts of one standing question that hold now, by slot."""
    sql = "SELECT * FROM facts WHERE store_id = ? AND question = ? AND valid_to IS NULL"
    return {r.slot: r for r in (_record(x) for x in rows(conn, sql, (store_id, question)))}


def known_slots(conn: apsw.Connection, store_id: str, question: str) -> set[str]:
    """Every slot the question has ever filled (open or closed)."""
    sql = "SELECT DISTINCT slot FROM facts WHERE store_id = ? AND question = ?"
    return {str(r["slot"]) for r in rows(conn, sql, (store_id, question))}


def slot_ends(conn: apsw.Connection, store_id: str, question: str) -> dict[str, str]:
    """Per slot of the question, the latest ``valid_to`` of its closed facts."""
    sql = (
        "SELECT slot, max(valid_to) AS until FROM facts WHERE store_id = ? AND question = ?"
        " AND valid_to IS NOT NULL GROUP BY slot"
    )
    return {str(r["slot"]): str(r["until"]) for r in rows(conn, sql, (store_id, question))}


def tested_at(
    conn: apsw.Connection, store_id: str, points: Sequence[str], skip: Mapping[str, set[str]]
) -> dict[str, list[float]]:
    """The p-values earlier runs tested at each of ``points`` for the store (every question but
    those in ``skip[point]``, the ones this run evaluates there), by point."""
    out: dict[str, list[float]] = {p: [] for p in points}
    if not points:
        return out
    sql = (
        "SELECT point, question, p_values_json FROM fact_tests WHERE store_id = ? AND point >= ? AND point <= ?"
        " ORDER BY point, question"
    )
    for r in rows(conn, sql, (store_id, min(points), max(points))):
        point = str(r["point"])
        if point in out and str(r["question"]) not in skip.get(point, set()):
            out[point].extend(float(p) for p in json.loads(r["p_values_json"]))
    return out


def high_water(conn: apsw.Connection, store_id: str, question: str) -> str | None:
    """The last evaluation date the question distilled for the store (None: never run)."""
    got = rows(
        conn, "SELECT high_water FROM fact_marks WHERE store_id = ? AND question = ?", (store_id, question)
    )
    return str(got[0]["high_water"]) if got else None


def _upsert(conn: apsw.Connection, rec: FactRecord, now: str) -> None:
    conn.execute(
        "INSERT INTO facts (fact_id, store_id, question, slot, signature, statement_zh, statement_en,"
        " metric, dimension, value_json, effect, n, p_value, confidence, evidence_json, evidence_count,"
        " valid_from, valid_to, supersedes, plan_json, evaluated_until, created_at, updated_at, q_value)"
        " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
        " ON CONFLICT(fact_id) DO UPDATE SET statement_zh = excluded.statement_zh,"
        " statement_en = excluded.statement_en, value_json = excluded.value_json,"
        " effect = excluded.effect, n = excluded.n, p_value = excluded.p_value,"
        " confidence = excluded.confidence, evidence_json = excluded.evidence_json,"
        " evidence_count = excluded.evidence_count, valid_to = excluded.valid_to,"
        " plan_json = excluded.plan_json, evaluated_until = excluded.evaluated_until,"
        " updated_at = excluded.updated_at, q_value = excluded.q_value",
        (
            rec.fact_id,
            rec.store_id,
            rec.question,
            rec.slot,
            rec.signature,
            rec.statement["zh"],
            rec.statement["en"],
            rec.metric,
            rec.dimension,
            json.dumps(rec.value, ensure_ascii=False),
            rec.effect,
            int(rec.n),
            rec.p_value,
            float(rec.confidence),
            json.dumps(list(rec.evidence), ensure_ascii=False),
            int(rec.evidence_count),
            rec.valid_from,
            rec.valid_to,
            rec.supersedes,
            json.dumps(rec.plan, ensure_ascii=False, sort_keys=True),
            rec.evaluated_until,
            now,
            now,
            rec.q_value,
        ),
    )


def apply_run(
    store: Store,
    store_id: str,
    question: str,
    records: Sequence[FactRecord],
    mark: str,
    tests: Mapping[str, Sequence[float]] | None = None,
) -> None:
    """Write one standing question's changed facts, its new high-water mark and the p-values it
    tested at each evaluation point (``tests``: point -> p-values) in one transaction (an
    interrupted run leaves the old mark, so the next run redoes the same evaluations)."""
    now = utc_now()

    def write(conn: apsw.Connection) -> None:
        with conn:
            for rec in records:
                _upsert(conn, rec, now)
            for point, ps in (tests or {}).items():
                conn.execute(
                    "INSERT INTO fact_tests (store_id, point, question, p_values_json) VALUES (?,?,?,?)"
                    " ON CONFLICT DO UPDATE SET p_values_json = excluded.p_values_json",
                    (store_id, point, question, json.dumps([float(p) for p in ps])),
                )
            conn.execute(
                "INSERT INTO fact_marks (store_id, question, high_water, updated_at) VALUES (?,?,?,?)"
                " ON CONFLICT(store_id, question) DO UPDATE SET high_water = excluded.high_water,"
                " updated_at = excluded.updated_at",
                (store_id, question, mark, now),
            )

    store.writer.submit(write).result()


def last_tests(conn: apsw.Connection) -> dict[str, Any] | None:
    """The false discovery control of the last finished maintain run that recorded one (its
    ``maintain_runs`` report): ``{"finished_at", "now", "tested", "passed", "fdr"}``; None when no
    run has (a memory never maintained, or one an older adamm maintained)."""
    if not rows(conn, "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'maintain_runs'"):
        return None
    for r in rows(
        conn,
        "SELECT finished_at, now, report_json FROM maintain_runs WHERE finished_at IS NOT NULL ORDER BY id DESC",
    ):
        try:
            facts = json.loads(str(r["report_json"])).get("facts") or {}
        except ValueError:
            continue
        if isinstance(facts, dict) and "tested" in facts:
            return {
                "finished_at": r["finished_at"],
                "now": r["now"],
                "tested": int(facts["tested"]),
                "passed": int(facts.get("passed") or 0),
                "fdr": float(facts.get("fdr") or 0.05),
            }
    return None
