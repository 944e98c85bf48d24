"""The ``adamm tune`` labels file: JSON Lines of labelled queries for :func:`edge.memory.search.tune.grid_search`.

Labels are JSON Lines, one query per line::

    {"query": "顾客在收银台吵架",
     "filters": {"where": {"zone": "checkout"}, "type": ["complaint"], "since": "2025-11-01",
                 "until": "2025-12-01T00:00:00+08:00", "store": ["s1"],
                 "prefer": {"weather": "rain"}, "near": "2025-11-20T18:00:00+08:00"},
     "relevant": ["evt-001", "evt-042"]}

``filters`` keys are those of ``adamm search`` (all optional): ``where``/``prefer`` as an object
(a list value means any of them) or a list of ``"KEY=VALUE"`` strings, ``type``/``store`` as a
string or a list, times as RFC 3339 with an offset or a date. Relevance is binary.

A bad line is a :class:`edge.errors.UsageError` naming it. Called by :mod:`edge.cli.cmd_tune`.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from edge.analysis.source import Scalar
from edge.cli._common import build_filter, parse_pair, parse_time
from edge.errors import UsageError
from edge.memory.search.tune import LabelledQuery


def _pairs(value: Any, what: str, line: int) -> list[tuple[str, Scalar]]:
    out: list[tuple[str, Scalar]] = []
    if isinstance(value, dict):
        for key, v in value.items():
            if not (isinstance(key, str) and key.isidentifier() and key.isascii()):
                raise UsageError(f"labels line {line}: {what} key {key!r} is not an identifier")
            for item in v if isinstance(v, list) else [v]:
                if (
                    not isinstance(item, str | int | float | bool)
                    or isinstance(item, float)
                    and not math.isfinite(item)
                ):
                    raise UsageError(f"labels line {line}: {what}.{key} must be a string, number or boolean")
                out.append((key, item))
    elif isinstance(value, list):
        for item in value:
            if not isinstance(item, str):
                raise UsageError(f'labels line {line}: {what} items must be "KEY=VALUE" strings')
            out.append(parse_pair(item, f"labels line {line}: {what}"))
    elif value is not None:
        raise UsageError(f"labels line {line}: {what} must be an object or a list of KEY=VALUE strings")
    return out


def _strings(value: Any, what: str, line: int) -> list[str]:
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    if not all(isinstance(i, str) for i in items):
        raise UsageError(f"labels line {line}: {what} must be a string or a list of strings")
    return list(items)


def parse_labels(lines: Iterable[str], timezone: str) -> list[LabelledQuery]:
    """Parse labels JSON Lines (blank lines skipped); a bad line is a UsageError naming it."""
    out: list[LabelledQuery] = []
    for n, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except ValueError as exc:
            raise UsageError(f"labels line {n}: not JSON ({exc})") from None
        if not isinstance(obj, dict):
            raise UsageError(f"labels line {n}: expected an object with query, filters, relevant")
        unknown = set(obj) - {"query", "filters", "relevant"}
        if unknown:
            raise UsageError(f"labels line {n}: unknown keys {sorted(unknown)}")
        query, filters, relevant = obj.get("query"), obj.get("filters") or {}, obj.get("relevant")
        if not isinstance(query, str):
            raise UsageError(f"labels line {n}: query must be a string")
        if not isinstance(filters, dict):
            raise UsageError(f"labels line {n}: filters must be an object")
        bad = set(filters) - {"where", "type", "since", "until", "store", "prefer", "near"}
        if bad:
            raise UsageError(f"labels line {n}: unknown filter keys {sorted(bad)}")
        if not isinstance(relevant, list) or not all(isinstance(r, str) for r in relevant):
            raise UsageError(f"labels line {n}: relevant must be a list of event_id strings")

        def when(key: str, n: int = n, filters: dict[str, Any] = filters) -> datetime | None:
            v = filters.get(key)
            if v is None:
                return None
            if not isinstance(v, str):
                raise UsageError(f"labels line {n}: {key} must be a string")
            return parse_time(v, f"labels line {n}: {key}", timezone)

        flt = build_filter(
            where=_pairs(filters.get("where"), "where", n),
            types=_strings(filters.get("type"), "type", n),
            since=when("since"),
            until=when("until"),
            store_ids=_strings(filters.get("store"), "store", n),
        )
        out.append(
            LabelledQuery(
                line=n,
                query=query,
                flt=flt,
                prefer=tuple(_pairs(filters.get("prefer"), "prefer", n)),
                near=when("near"),
                relevant=frozenset(relevant),
            )
        )
    return out


def read_labels(labels_path: str | os.PathLike[str], timezone: str) -> list[LabelledQuery]:
    """The labelled queries of the file at ``labels_path`` (dates in ``timezone``); none is an error."""
    p = Path(labels_path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"labels file {p} does not exist") from None
    labels = parse_labels(text.splitlines(), timezone)
    if not labels:
        raise UsageError(f"labels file {p} has no queries")
    return labels
