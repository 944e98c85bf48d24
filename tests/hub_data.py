"""Shared pieces of the hub tests: hub stores on real SQLite and real PostgreSQL (one server per
test module, a fresh database per test), and summary messages built with edge.sync.messages."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from brokers import running_postgres

from edge.sync import messages as m
from hub.db import HubDB, open_hub

_dbs = itertools.count(1)


def row(value: object = None, event_type: str = "purchase", **over: object) -> dict[str, Any]:
    r: dict[str, Any] = {f: 0 for f in m.ROLLUP_FIELDS}
    r.update({"value": value, "event_type": event_type, "first_event_id": "e1", "last_event_id": "e2"})
    r.update(over)
    return r


def rollup(
    store: str, day: str, slice_: str, rows: list[dict[str, Any]], version: int = 1, tz: str = "Asia/Shanghai"
) -> m.Summary:
    body = {"day": day, "slice": slice_, "tz": tz, "closed": True, "rows": rows}
    return m.make_summary(store, "rollup", m.rollup_key(day, slice_), version, body)


def fact(store: str, fid: str, version: int = 1, **over: object) -> m.Summary:
    body: dict[str, Any] = {
        "fact_id": fid,
        "statement": {"zh": "雨天客单价高 33%", "en": "rainy-day order value +33% vs sunny"},
        "metric": "avg_order_value",
        "dimension": "weather",
        "value": 91.5,
        "effect": 0.33,
        "n": 412,
        "p_value": 0.001,
        "confidence": 0.89,
        "evidence": ["e1", "e2"],
        "evidence_count": 412,
        "valid_from": "2025-10-01",
        "valid_to": None,
    }
    body.update(over)
    return m.make_summary(store, "fact", m.fact_key(fid), version, body)


@contextlib.contextmanager
def postgres_server(tmp: Path) -> Iterator[Any]:
    with running_postgres(tmp) as pg:
        yield pg


def fresh_pg_dsn(server_dsn: str) -> str:
    """A new empty database on the server (its URL)."""
    name = f"hub_t{next(_dbs)}"
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name}")
    return server_dsn.rsplit("/", 1)[0] + "/" + name


def hub_factory(kind: str, tmp: Path, pg_dsn: str | None) -> Callable[[], HubDB]:
    """``make()`` opens a new, empty hub store of ``kind`` (``sqlite`` or ``postgresql``)."""

    def make() -> HubDB:
        if kind == "sqlite":
            return open_hub(str(tmp / f"hub{next(_dbs)}.db"), create=True)
        assert pg_dsn is not None
        return open_hub(fresh_pg_dsn(pg_dsn))

    return make


def state(db: HubDB) -> dict[str, Any]:
    """Everything the hub holds that a message decides (arrival times left out)."""
    return {
        "summaries": sorted(db.query("SELECT store_id, key, kind, version, msg_id, body FROM hub_summaries")),
        "rollup": sorted(
            db.query("SELECT * FROM hub_rollup"), key=lambda r: tuple("" if v is None else str(v) for v in r)
        ),
        "facts": sorted(db.query("SELECT store_id, fact_id, body FROM hub_facts")),
        "messages": sorted(r[0] for r in db.query("SELECT msg_id FROM hub_messages")),
    }


@pytest.fixture(scope="module")
def pg_dsn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_postgres(tmp_path_factory.mktemp("pg")) as pg:
        yield pg.dsn
