"""Fitting the hybrid score's weights on labelled queries (``adamm tune``).

Owns nDCG@10, the alpha/beta grid search and writing the winner into the
``[retrieval]`` section of a TOML config file (a small writer of our own: ``tomllib`` only reads).

The labelled queries (:class:`LabelledQuery`) come from the labels file read by
:mod:`edge.cli._labels`.

Only the ratio alpha:beta changes a ranking, so the grid is alpha = 0.0, 0.1, ... 1.0 with
beta = 1 - alpha (plus the weights currently configured). The best mean nDCG@10 wins; on a tie the
configured weights are kept, else the alpha nearest the configured one. Called by
``edge.cli.cmd_tune``.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from edge.analysis.source import EventFilter, Scalar
from edge.config import parse_config
from edge.errors import ConfigError
from edge.memory.search.retrieval import score_survivors, top_k

logger = logging.getLogger(__name__)

NDCG_AT = 10
GRID: tuple[float, ...] = tuple(round(i / 10, 1) for i in range(11))


@dataclass(frozen=True)
class LabelledQuery:
    line: int
    query: str
    flt: EventFilter
    prefer: tuple[tuple[str, Scalar], ...]
    near: datetime | None
    relevant: frozenset[str]


@dataclass
class TuneResult:
    rows: list[tuple[float, float, float]]  # (alpha, beta, mean nDCG@10)
    best: tuple[float, float, float]
    current: tuple[float, float, float]
    queries: int
    skipped: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "queries": self.queries,
            "grid": [{"alpha": a, "beta": b, "ndcg_at_10": round(n, 6)} for a, b, n in self.rows],
            "best": {"alpha": self.best[0], "beta": self.best[1], "ndcg_at_10": round(self.best[2], 6)},
            "current": {
                "alpha": self.current[0],
                "beta": self.current[1],
                "ndcg_at_10": round(self.current[2], 6),
            },
        }


# -- metric and search -------------------------------------------------------------------------------


def ndcg(ranked: Sequence[str], relevant: frozenset[str], at: int = NDCG_AT) -> float:
    """Binary-relevance nDCG@at: sum 1/log2(rank+1) over hits, over the ideal for len(relevant)."""
    if not relevant:
        return 0.0
    dcg = sum(1.0 / math.log2(i + 2) for i, e in enumerate(ranked[:at]) if e in relevant)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(relevant), at)))
    return dcg / ideal


def grid_search(store: Any, labels: Sequence[LabelledQuery]) -> TuneResult:
    """Mean nDCG@10 of every grid weighting (and the configured one) over ``labels``."""
    cfg = store.config.retrieval
    current = (float(cfg.alpha), float(cfg.beta))
    weights = [(a, round(1.0 - a, 1)) for a in GRID]
    if current not in weights:
        weights.append(current)
    totals = np.zeros(len(weights))
    skipped: list[str] = []
    used = 0
    for lab in labels:
        ids, cos, attr = score_survivors(store, lab.query, lab.flt, prefer=lab.prefer, near=lab.near)
        rel_rowids = _rowids_of(store, lab.relevant)
        if not rel_rowids:
            skipped.append(f"labels line {lab.line}: none of the relevant events is in the memory")
            continue
        used += 1
        for j, (a, b) in enumerate(weights):
            score = a * cos.astype(np.float64) + b * attr
            top = ids[top_k(score, ids, NDCG_AT)] if ids.shape[0] else ids
            ranked = [str(int(r)) for r in top]
            totals[j] += ndcg(ranked, frozenset(str(r) for r in rel_rowids), NDCG_AT)
    means = totals / max(used, 1)
    rows = [(a, b, float(m)) for (a, b), m in zip(weights, means, strict=True)]
    cur = next(r for r in rows if (r[0], r[1]) == current)
    top_score = max(r[2] for r in rows)
    tied = [r for r in rows if r[2] >= top_score - 1e-12]
    best = cur if cur in tied else min(tied, key=lambda r: (abs(r[0] - current[0]), -r[0]))
    grid_rows = [r for r in rows if (r[0], r[1]) in {(a, round(1.0 - a, 1)) for a in GRID}]
    return TuneResult(rows=grid_rows, best=best, current=cur, queries=used, skipped=skipped)


def _rowids_of(store: Any, event_ids: frozenset[str]) -> list[int]:
    if not event_ids:
        return []
    with store.read() as conn:
        return [
            int(r[0])
            for r in conn.execute(
                "SELECT e.id FROM events AS e WHERE e.event_id IN (SELECT value FROM json_each(?))",
                (json.dumps(sorted(event_ids)),),
            )
        ]


# -- writing the config ------------------------------------------------------------------------------


def toml_value(v: Any) -> str:
    """One TOML value (strings, booleans, numbers, lists, inline tables)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)  # JSON string escapes are valid TOML basic strings
    if isinstance(v, list | tuple):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_key(k)} = {toml_value(x)}" for k, x in v.items()) + "}"
    if isinstance(v, datetime):
        return v.isoformat()
    raise TypeError(f"cannot write {type(v).__name__} as TOML")


def _key(k: str) -> str:
    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else json.dumps(k, ensure_ascii=False)


def toml_dumps(data: dict[str, Any]) -> str:
    """A whole TOML document: top-level scalars first, then one ``[table]`` per nested dict."""
    lines: list[str] = []

    def emit(table: dict[str, Any], prefix: str) -> None:
        scalars = {k: v for k, v in table.items() if not isinstance(v, dict)}
        tables = {k: v for k, v in table.items() if isinstance(v, dict)}
        if prefix and (scalars or not tables):
            lines.append(f"[{prefix}]")
        for k, v in scalars.items():
            lines.append(f"{_key(k)} = {toml_value(v)}")
        if scalars or (prefix and not tables):
            lines.append("")
        for k, v in tables.items():
            emit(v, f"{prefix}.{_key(k)}" if prefix else _key(k))

    emit(data, "")
    return "\n".join(lines).rstrip("\n") + "\n"


def _edit_in_place(text: str, values: dict[str, float]) -> str | None:
    """Set ``[retrieval]`` keys by editing lines (keeps comments); None when the layout is unusual."""
    lines = text.splitlines()
    header = re.compile(r"^\s*\[\s*retrieval\s*\]\s*(#.*)?$")
    any_header = re.compile(r"^\s*\[")
    start = next((i for i, ln in enumerate(lines) if header.match(ln)), None)
    if start is None:
        body = text.rstrip("\n")
        block = "[retrieval]\n" + "".join(f"{k} = {toml_value(v)}\n" for k, v in values.items())
        return (body + "\n\n" if body else "") + block
    end = next((i for i in range(start + 1, len(lines)) if any_header.match(lines[i])), len(lines))
    missing = dict(values)
    for i in range(start + 1, end):
        m = re.match(r"^(\s*)([A-Za-z0-9_-]+)(\s*=\s*)([^#]*?)(\s*#.*)?$", lines[i])
        if m and m.group(2) in missing:
            lines[i] = (
                f"{m.group(1)}{m.group(2)}{m.group(3)}{toml_value(missing.pop(m.group(2)))}{m.group(5) or ''}"
            )
    insert_at = end
    while insert_at > start + 1 and not lines[insert_at - 1].strip():
        insert_at -= 1
    lines[insert_at:insert_at] = [f"{k} = {toml_value(v)}" for k, v in missing.items()]
    return "\n".join(lines) + "\n"


def write_retrieval_weights(path: str | os.PathLike[str], alpha: float, beta: float) -> None:
    """Create or update ``path`` so ``[retrieval]`` holds alpha and beta; other content is kept.

    The result is checked with the config model before it replaces the file (atomically).
    """
    p = Path(path)
    old = p.read_text(encoding="utf-8") if p.exists() else ""
    try:
        data = tomllib.loads(old) if old else {}
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: not valid TOML, not rewriting it: {exc}") from None
    values = {"alpha": float(alpha), "beta": float(beta)}
    new = _edit_in_place(old, values)
    if new is None or not _has(new, values):
        section = data.get("retrieval")
        data["retrieval"] = {**(section if isinstance(section, dict) else {}), **values}
        new = toml_dumps(data)
    # never write a section the config loader would refuse (other sections are not ours to judge:
    # the daemon extends the model with its own)
    section = tomllib.loads(new).get("retrieval", {})
    parse_config({"retrieval": section}, str(p))
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(new, encoding="utf-8")
    os.replace(tmp, p)
    logger.info("wrote [retrieval] alpha=%s beta=%s to %s", alpha, beta, p)


def _has(text: str, values: dict[str, float]) -> bool:
    try:
        got = tomllib.loads(text).get("retrieval", {})
    except tomllib.TOMLDecodeError:
        return False
    return isinstance(got, dict) and all(got.get(k) == v for k, v in values.items())
