"""Shared pieces of the hub tests: hub stores on real SQLite and real PostgreSQL (one server per
test module, a fresh database per test), and summary messages built with edge.sync.messages."""

from __future__ import annotations

import contextlib
import itertools
import random
import time
from collections.abc import Callable, Iterator
from datetime import date, timedelta
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


def fact_body(fid: str = "f1", **over: object) -> dict[str, Any]:
    """A fact body of the contract's shape (section 6), with ``over`` replacing fields."""
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
    return body


def fact(store: str, fid: str, version: int = 1, **over: object) -> m.Summary:
    body = fact_body(fid, **over)
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
        # the catalog's day spans only widen (documented); its days and events are exact
        "catalog": sorted(
            db.query("SELECT store_id, slice, vkey, event_type, days, events FROM hub_catalog"),
            key=lambda r: tuple(str(v) for v in r),
        ),
        "messages": sorted(r[0] for r in db.query("SELECT msg_id FROM hub_messages")),
    }


@pytest.fixture(scope="module")
def pg_dsn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_postgres(tmp_path_factory.mktemp("pg")) as pg:
        yield pg.dsn


# -- a store's side of the wire, for the serve tests ------------------------------------------------


#: seconds without a receipt after which the test publisher re-sends what is unconfirmed
RESEND_QUIET_S = 3.0


class Publisher:
    """A test publisher built on edge.sync.messages: publishes summaries QoS 1 (waiting for each
    PUBACK) and collects the hub's receipts (``stored`` and ``parked`` msg_ids)."""

    def __init__(self, port: int, client_id: str = "test-edge") -> None:
        import threading

        import paho.mqtt.client as mqtt

        self.stored: set[str] = set()
        self.parked: dict[str, str] = {}
        self.receipts = 0
        self.resent = 0
        self._lock = threading.Lock()
        self._subscribed = threading.Event()
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, protocol=mqtt.MQTTv5)
        self.client.on_message = self._on_message
        self.client.on_subscribe = lambda *a: self._subscribed.set()
        # (re)subscribe on every connection: a broker restarted without persistence forgets it
        self.client.on_connect = lambda c, *a: c.subscribe(f"{m.TOPIC_ROOT}/+/receipt", qos=1)
        self.client.reconnect_delay_set(0.1, 1)
        self.client.connect("127.0.0.1", port)
        self.client.loop_start()
        assert self._subscribed.wait(10), "no SUBACK for the receipt topic"

    def _on_message(self, _c: Any, _u: Any, msg: Any) -> None:
        r = m.parse_receipt(msg.payload)
        with self._lock:
            self.receipts += 1
            self.stored.update(r.stored)
            self.parked.update(dict(r.parked))

    def publish(self, topic: str, payload: bytes, retain: bool = False) -> None:
        info = self.client.publish(topic, payload, qos=1, retain=retain)
        info.wait_for_publish(30)
        assert info.is_published(), f"no PUBACK for a message to {topic}"

    def send(self, s: m.Summary) -> None:
        self.publish(m.summary_topic(s.store_id), s.encode())

    def wait_stored(
        self, ids: set[str], timeout: float = 60.0, resend: list[m.Summary] | None = None
    ) -> bool:
        """Wait until every id in ``ids`` is receipted as stored (False on timeout). With
        ``resend``: as the edge's outbox does, re-send what is still unconfirmed whenever no
        receipt has come for :data:`RESEND_QUIET_S` (a receipt, not the broker's PUBACK, is done)."""
        import time

        deadline = time.monotonic() + timeout
        seen, quiet_since = -1, time.monotonic()
        while time.monotonic() < deadline:
            with self._lock:
                if ids <= self.stored:
                    return True
                count = self.receipts
                missing = [s for s in resend or () if s.msg_id not in self.stored]
            if count != seen:
                seen, quiet_since = count, time.monotonic()
            elif missing and time.monotonic() - quiet_since > RESEND_QUIET_S:
                self.resent += len(missing)
                for s in missing:
                    self.send(s)
                quiet_since = time.monotonic()
            time.sleep(0.05)
        return False

    def close(self) -> None:
        self.client.loop_stop()
        self.client.disconnect()


def day_summaries(stores: list[str], days: int, seed: int = 1) -> tuple[list[m.Summary], dict[str, float]]:
    """Total-slice rollups for ``days`` days of ``stores`` (version 1) and each store's event total."""
    import random
    from datetime import date, timedelta

    rng = random.Random(seed)
    out: list[m.Summary] = []
    totals: dict[str, float] = {}
    for s in stores:
        for i in range(days):
            day = (date(2025, 10, 1) + timedelta(days=i)).isoformat()
            n = rng.randint(1, 500)
            out.append(rollup(s, day, "total", [row(None, "customer_enter", events=n, footfall=n)]))
            totals[s] = totals.get(s, 0.0) + n
    return out, totals


#: the event types and weathers of :func:`write_rollups`' synthetic fleet
BENCH_TYPES = ("customer_enter", "purchase", "dwell", "checkout_queue", "complaint")
BENCH_WEATHER = ("sunny", "cloudy", "rain")


def write_rollups(
    path: Path,
    stores: int,
    days: int,
    *,
    seed: int,
    start: date,
    zone_of: Callable[[int], str],
    purchase_of: Callable[[random.Random, int, str], dict[str, float]],
    log: Callable[[str], None] = lambda _msg: None,
) -> None:
    """``stores`` x ``days`` of daily rollup rows written straight into a new hub database at
    ``path`` (the rows ingest keeps, with its catalog beside them), for the benchmarks that need
    a big fleet without sending it: each day has one weather and a total and a weather slice of
    :data:`BENCH_TYPES`. ``zone_of(store_index)`` is a store's time zone; ``purchase_of(rng,
    store_index, weather)`` the day's purchase fields (bills, revenue, ...)."""
    from hub.ingest import ROLLUP_COLUMNS, vkey_of

    db = open_hub(str(path), create=True)
    rng = random.Random(seed)
    sql = f"INSERT INTO hub_rollup ({', '.join(ROLLUP_COLUMNS)}) VALUES ({', '.join('?' * len(ROLLUP_COLUMNS))})"
    t0 = time.perf_counter()
    for s in range(stores):
        sid = f"store_{s:04d}"
        with db.transaction():
            db.execute("INSERT INTO hub_stores (store_id, tz) VALUES (?, ?)", (sid, zone_of(s)))
            batch: list[tuple[Any, ...]] = []
            for d in range(days):
                day = start + timedelta(days=d)
                ds = day.isoformat()
                week = (day - timedelta(days=day.weekday())).isoformat()
                weather = BENCH_WEATHER[rng.randrange(3)]
                purchase = purchase_of(rng, s, weather)
                for sl, value in (("total", None), ("weather", weather)):
                    for t in BENCH_TYPES:
                        r = row(value, t)
                        if t == "customer_enter":
                            r.update(events=300, footfall=320, enter_events=300)
                        elif t == "purchase":
                            r.update(purchase)
                        else:
                            r.update(events=rng.randint(5, 50))
                        r["first_event_id"], r["last_event_id"] = f"{sid}-{ds}-{t}-a", f"{sid}-{ds}-{t}-z"
                        batch.append((sid, ds, day.weekday(), week, ds[:7], sl, value, vkey_of(value), t,
                                      *(float(r[f]) for f in m.ROLLUP_FIELDS), r["first_event_id"],
                                      r["last_event_id"]))  # fmt: skip
            db.executemany(sql, batch)
        if s % 100 == 99:
            log(f"  {s + 1} stores written ({time.perf_counter() - t0:.0f} s)")
    with db.transaction():  # the catalog ingest keeps beside the rows
        db.execute(
            "INSERT INTO hub_catalog (store_id, slice, vkey, value, event_type, first_date, last_date, days, events) "
            "SELECT store_id, slice, vkey, value, event_type, min(local_date), max(local_date), count(*), sum(events) "
            "FROM hub_rollup GROUP BY store_id, slice, vkey, value, event_type"
        )
    db.execute("ANALYZE")
    db.close()
