#!/usr/bin/env python3
"""Benchmark: hub ingest (a nightly burst of a fleet with faults, and messages/s end to end over
MQTT) and whole-process ``adamm-hub ask`` latency at many stores x a year of daily rollups.

Parts (``--parts``, comma-separated; default all three, in this order):

- ``burst``: the nightly burst of ``--burst-stores`` stores (default 1,000) into PostgreSQL. Each
  store sends ten messages: its closed day's six rollups (``total``, ``hour``, ``weather``,
  ``promotion``, ``zone``, ``product_category``; 51 rows), three facts, and its retained
  ``online`` status (no receipt), each on its own topics under its own store id, QoS 1, through
  ``--burst-clients`` MQTT connections, all at once. A store re-sends what the hub has not
  receipted as the edge's outbox does: ``--resend-after`` seconds (30, the edge's default) after
  it sent it, once the hub has been quiet toward that store as long. Three runs, each on a fresh
  database and broker: (a) one worker; (b) two workers on the shared subscription; (c) two workers,
  the second SIGKILLed once 30% is receipted and started again at once (same client id, its
  persistent session), and PostgreSQL stopped as a crash would (``pg_ctl -m immediate``) once 60%
  is receipted and started 3 s later. Each run is timed from the first publish to the last
  message's receipt, then checked against what was sent: every msg_id receipted and in
  ``hub_messages`` (else *lost*); the rows of ``hub_messages``, ``hub_summaries``, ``hub_rollup``,
  ``hub_facts`` and ``hub_stores``, sum(events), sum(revenue) and every ``hub_catalog`` entry
  (days, events) equal to the expected (more rows is *doubled*); every store ``online``; nothing
  parked; every worker still running and stopping with exit 0. The *floor* of each run: the rows
  it left in those tables (and ``hub_catalog``), read back and written into a fresh database made by
  the hub's own migrations with one raw psycopg ``COPY`` per table in one transaction, timed;
  shown as messages-equivalent/s (summaries / seconds) and rows/s. A failed check prints a
  ``FAIL`` line after the table and exits 1. ``--burst-stores 50`` is a quick check (under a minute).
- ``ingest``: a real Mosquitto (tests/brokers.py, the project's config) and ``adamm-hub serve``
  workers as separate processes; a publisher sends ``--messages`` daily rollup summaries (QoS 1,
  ``total`` slice, several event types a row each) and the time until the last *receipt* (the
  hub's commit) is measured. SQLite with one worker; PostgreSQL (a server started in a temporary
  folder) with one and with two workers on the shared subscription. SQLite has one writer, so two
  SQLite workers are not measured (they would each receive everything).
- ``ask``: a hub database of ``--stores`` stores x ``--days`` days (``total`` and ``weather``
  slices) written straight into ``hub_rollup`` and ``hub_catalog`` (the rows ingest writes), then
  each question is timed as a separate ``adamm-hub ask --json`` process (median of
  ``--repeats``), the goal being <= 1 s.

Prints Markdown tables on stdout; progress on stderr.
Usage: ``python3 scripts/bench_hub.py [--parts burst,ingest,ask] [--burst-stores 1000]
[--burst-clients 10] [--resend-after 30] [--messages 2000] [--stores 1000] [--days 365]
[--repeats 3]``.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from brokers import running_mosquitto, running_postgres  # noqa: E402
from hub_data import Publisher, fact_body, fresh_pg_dsn, row, write_rollups  # noqa: E402

from edge.sync import messages as m  # noqa: E402
from hub.db import open_hub  # noqa: E402
from hub.ingest import vkey_of  # noqa: E402

TYPES = ("customer_enter", "purchase", "dwell", "checkout_queue", "complaint")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def summaries(n: int) -> list[m.Summary]:
    rng = random.Random(3)
    out = []
    stores = [f"st{i:03d}" for i in range(max(1, n // 365 + 1))]
    for i in range(n):
        store = stores[i % len(stores)]
        day = (date(2025, 1, 1) + timedelta(days=i // len(stores))).isoformat()
        rows = [row(None, t, events=rng.randint(10, 300), revenue=rng.uniform(0, 9000)) for t in TYPES]
        out.append(m.make_summary(store, "rollup", m.rollup_key(day, "total"), 1, {
            "day": day, "slice": "total", "tz": "Asia/Shanghai", "closed": True, "rows": rows}))  # fmt: skip
    return out


def ingest_rate(tmp: Path, target: str, workers: int, msgs: list[m.Summary]) -> float:
    with running_mosquitto(tmp / f"mq-{time.monotonic_ns()}") as broker:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        procs = []
        for w in range(1, workers + 1):
            err = tmp / f"hub-{w}-{time.monotonic_ns()}.log"
            with err.open("wb") as f:
                procs.append((subprocess.Popen(
                    [sys.executable, "-m", "hub", "-v", "serve", "--db", target, "--broker", broker.url,
                     "--worker", str(w)], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=f), err))  # fmt: skip
        for _p, err in procs:
            while "subscribed to" not in err.read_text(errors="replace"):
                time.sleep(0.05)
        pub = Publisher(broker.port, "bench-edge")
        t0 = time.perf_counter()
        for s in msgs:
            pub.client.publish(m.summary_topic(s.store_id), s.encode(), qos=1)
        ok = pub.wait_stored({s.msg_id for s in msgs}, timeout=600, resend=msgs)
        dt = time.perf_counter() - t0
        pub.close()
        for p, _err in procs:
            p.terminate()
            p.wait(30)
        if not ok:
            raise SystemExit("the hub did not receipt every message within 600 s")
        return len(msgs) / dt


def _purchase(rng: random.Random, s: int, weather: str) -> dict[str, float]:
    bills = rng.randint(80, 120)
    return {"events": bills * 2, "purchase_events": bills * 2, "bills": bills,
            "revenue": bills * rng.uniform(60, 90), "bill_sq": bills * 6000.0}  # fmt: skip


def build_big(path: Path, stores: int, days: int) -> None:
    """``stores`` x ``days`` of rollup rows straight into the hub database, a store in four on
    another time zone."""
    zones = ("Asia/Shanghai", "Asia/Shanghai", "Asia/Shanghai", "Asia/Urumqi")
    write_rollups(path, stores, days, seed=11, start=date(2025, 1, 1), zone_of=lambda s: zones[s % len(zones)],
                  purchase_of=_purchase, log=log)  # fmt: skip


# -- the nightly burst --------------------------------------------------------------------------

BURST_TYPES = ("customer_enter", "purchase", "dwell", "checkout_queue", "complaint")
#: slice -> (values, event types) of one store's closed day: six rollups a night
BURST_SLICES: dict[str, tuple[tuple[Any, ...], tuple[str, ...]]] = {
    "total": ((None,), BURST_TYPES),
    "hour": (tuple(range(10, 22)), ("customer_enter", "purchase")),
    "weather": (("rain",), BURST_TYPES),
    "promotion": (("none", "autumn_sale"), ("customer_enter", "purchase")),
    "zone": (("entrance", "fresh", "dairy", "checkout"), ("customer_enter", "dwell")),
    "product_category": (("fresh", "dairy", "snacks", "drinks", "household"), ("purchase",)),
}
#: three facts a night
BURST_FACTS = (
    ("aov_weather", "avg_order_value", "weather"),
    ("footfall_promotion", "footfall", "promotion"),
    ("queue_hour", "queue_wait", "hour"),
)


@dataclass
class Burst:
    """One night of ``stores`` stores: each store's summaries (six rollups of yesterday, three
    facts) and its retained ``online`` status, and what the hub must hold once it has them all."""

    stores: list[str]
    summaries: dict[str, list[m.Summary]]
    statuses: dict[str, bytes]
    rollup_rows: int = 0
    events: int = 0
    revenue: float = 0.0
    #: (store, slice, vkey, event type) -> (days, events): the hub_catalog it must hold
    catalog: dict[tuple[str, str, str, str], tuple[int, float]] = field(default_factory=dict)

    @property
    def all(self) -> list[m.Summary]:
        return [s for store in self.stores for s in self.summaries[store]]

    @property
    def messages(self) -> int:
        return sum(len(v) for v in self.summaries.values()) + len(self.statuses)


def burst(stores: int, seed: int = 7) -> Burst:
    rng = random.Random(seed)
    now = datetime.now(UTC)
    day = (now.date() - timedelta(days=1)).isoformat()  # last night's closed day
    names = [f"store_{i:04d}" for i in range(stores)]
    b = Burst(names, {}, {})
    for store in names:
        out: list[m.Summary] = []
        for slice_, (values, types) in BURST_SLICES.items():
            rows = []
            for v in values:
                for t in types:
                    r = row(v, t, events=rng.randint(1, 400), first_event_id=f"{store}-{day}-{t}-a",
                            last_event_id=f"{store}-{day}-{t}-z")  # fmt: skip
                    if t == "purchase":
                        bills = rng.randint(1, 200)
                        r.update(
                            bills=bills,
                            purchase_events=r["events"],
                            revenue=round(bills * rng.uniform(20, 90), 2),
                        )
                    rows.append(r)
                    b.rollup_rows += 1
                    b.events += r["events"]
                    b.revenue += r["revenue"]
                    b.catalog[(store, slice_, vkey_of(v), t)] = (1, float(r["events"]))
            body = {"day": day, "slice": slice_, "tz": "Asia/Shanghai", "closed": True, "rows": rows}
            out.append(m.make_summary(store, "rollup", m.rollup_key(day, slice_), 1, body))
        for fid, metric, dim in BURST_FACTS:
            body = fact_body(fid, metric=metric, dimension=dim, value=round(rng.uniform(1, 100), 2),
                             effect=round(rng.uniform(-0.5, 0.5), 3), valid_from=day)  # fmt: skip
            out.append(m.make_summary(store, "fact", m.fact_key(fid), 1, body))
        b.summaries[store] = out
        b.statuses[store] = m.status_payload("online", now.isoformat(timespec="seconds"))
    return b


class Receipts(Publisher):
    """The stores' receipt topics (``adamm/v1/+/receipt``): every receipt counted per msg_id, and
    when the last store heard from the hub."""

    def __init__(self, port: int) -> None:
        self.per_msg: Counter[str] = Counter()
        self.heard: dict[str, float] = {}
        super().__init__(port, "bench-burst-receipts")

    def _on_message(self, c: Any, u: Any, msg: Any) -> None:
        super()._on_message(c, u, msg)
        r = m.parse_receipt(msg.payload)
        store = m.topic_store(msg.topic) or ""
        with self._lock:
            self.per_msg.update(r.stored)
            self.heard[store] = time.monotonic()


class Stores:
    """The stores' side of the wire: ``clients`` MQTT connections (QoS 1, MQTT 5), each publishing
    its share of the stores, every store's messages on its own topics under its own store id; a
    store re-sends what the hub has not receipted, as the edge's outbox does
    (:mod:`edge.sync.runner`): ``resend_after_s`` after it was sent, once the hub has also been
    quiet toward that store for ``resend_after_s``."""

    def __init__(self, port: int, b: Burst, clients: int, resend_after_s: float) -> None:
        import paho.mqtt.client as mqtt

        self.b = b
        self.resend_after_s = resend_after_s
        self.resent = 0
        self.receipts = Receipts(port)
        self.clients = []
        for k in range(max(1, min(clients, len(b.stores)))):
            c = mqtt.Client(
                mqtt.CallbackAPIVersion.VERSION2, client_id=f"bench-burst-{k}", protocol=mqtt.MQTTv5
            )
            c.max_inflight_messages_set(100)
            c.reconnect_delay_set(1, 2)
            c.connect("127.0.0.1", port)
            c.loop_start()
            self.clients.append(c)
        self.sent_at: dict[str, float] = {}

    def _client(self, i: int) -> Any:
        return self.clients[i % len(self.clients)]

    def publish_all(self) -> None:
        for i, store in enumerate(self.b.stores):
            c = self._client(i)
            c.publish(m.status_topic(store), self.b.statuses[store], qos=1, retain=True)
            for s in self.b.summaries[store]:
                c.publish(m.summary_topic(store), s.encode(), qos=1)
            self.sent_at[store] = time.monotonic()

    def resend_due(self) -> None:
        now = time.monotonic()
        for i, store in enumerate(self.b.stores):
            if now - self.sent_at[store] < self.resend_after_s:
                continue
            if now - self.receipts.heard.get(store, float("-inf")) < self.resend_after_s:
                continue
            with self.receipts._lock:
                miss = [s for s in self.b.summaries[store] if s.msg_id not in self.receipts.stored]
            if not miss:
                continue
            c = self._client(i)
            for s in miss:
                c.publish(m.summary_topic(store), s.encode(), qos=1)
            self.resent += len(miss)
            self.sent_at[store] = now

    def close(self) -> None:
        for c in self.clients:
            c.loop_stop()
            c.disconnect()
        self.receipts.close()


class Worker:
    """One ``adamm-hub serve`` process (stderr to a file)."""

    def __init__(self, tmp: Path, target: str, broker: str, n: int) -> None:
        self.n = n
        self.err = tmp / f"hub-{n}-{time.monotonic_ns()}.log"
        with self.err.open("wb") as f:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "hub", "-v", "serve", "--db", target, "--broker", broker, "--worker", str(n)],
                cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL, stderr=f)  # fmt: skip

    def log(self) -> str:
        return self.err.read_text(errors="replace")

    def wait_subscribed(self) -> None:
        deadline = time.monotonic() + 60
        while "subscribed to" not in self.log():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"worker {self.n} did not subscribe:\n{self.log()[-3000:]}")
            time.sleep(0.05)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                return self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
                return -9
        return int(self.proc.returncode)


@dataclass
class BurstRun:
    name: str
    workers: int
    summaries: int
    seconds: float
    resent: int
    lost: int
    doubled: int
    parked: int
    extra_receipts: int
    faults: list[str]
    floor_s: float = 0.0
    floor_rows: int = 0


def _restart_pg(pg: Any, down_s: float) -> None:
    """PostgreSQL stopped as a crash would (``pg_ctl -m immediate``), ``down_s`` later started."""
    pg.stop()
    time.sleep(down_s)
    for attempt in range(20):  # the stopped server's socket and lock may linger a moment
        try:
            pg.start()
            return
        except subprocess.CalledProcessError:
            if attempt == 19:
                raise
            time.sleep(1)


def burst_run(
    tmp: Path,
    pg: Any,
    b: Burst,
    name: str,
    workers: int,
    *,
    faults: bool,
    clients: int,
    resend_after_s: float,
    timeout: float,
) -> tuple[BurstRun, str]:
    target = fresh_pg_dsn(pg.dsn)
    open_hub(target).close()  # migrated before the workers race to it
    summaries = b.all
    ids = {s.msg_id for s in summaries}
    notes: list[str] = []
    with running_mosquitto(tmp / f"mq-{name}") as broker:
        procs = [Worker(tmp, target, broker.url, w) for w in range(1, workers + 1)]
        for w in procs:
            w.wait_subscribed()
        stores = Stores(broker.port, b, clients, resend_after_s)
        killed: list[Worker] = []
        restarter: threading.Thread | None = None
        t0 = time.perf_counter()
        stores.publish_all()
        log(f"  {name}: {b.messages} messages published in {time.perf_counter() - t0:.1f} s")
        deadline = time.monotonic() + timeout
        done = False
        while time.monotonic() < deadline:
            with stores.receipts._lock:
                got = len(ids & stores.receipts.stored)
            if got == len(ids):
                done = True
                break
            if faults and not killed and got >= 0.3 * len(ids):
                victim = procs[-1]
                victim.proc.send_signal(signal.SIGKILL)
                victim.proc.wait(30)
                killed.append(victim)
                procs[-1] = Worker(tmp, target, broker.url, victim.n)  # same id: its persistent session
                notes.append(f"worker {victim.n} SIGKILLed at {got}/{len(ids)} receipted, restarted")
                log(f"  {name}: {notes[-1]}")
            if faults and restarter is None and got >= 0.6 * len(ids):
                restarter = threading.Thread(target=_restart_pg, args=(pg, 3.0), daemon=True)
                restarter.start()
                notes.append(
                    f"PostgreSQL stopped (immediate) at {got}/{len(ids)} receipted, started 3 s later"
                )
                log(f"  {name}: {notes[-1]}")
            stores.resend_due()
            time.sleep(0.05)
        dt = time.perf_counter() - t0
        if restarter is not None:
            restarter.join(120)
        log(f"  {name}: {'all receipted' if done else 'TIMED OUT'} after {dt:.1f} s; {stores.resent} re-sent")
        # statuses carry no receipt: wait until the hub holds every store's
        until = time.monotonic() + 60
        while time.monotonic() < until:
            db = open_hub(target)
            try:
                (online,) = db.one("SELECT count(*) FROM hub_stores WHERE status = 'online'") or (0,)
            finally:
                db.close()
            if int(online) >= len(b.stores):
                break
            time.sleep(0.5)
        time.sleep(1.0)  # let late redeliveries (a re-send in flight) land before counting
        codes = [w.stop() for w in procs]
        extra = sum(n - 1 for n in stores.receipts.per_msg.values() if n > 1)
        not_receipted = ids - stores.receipts.stored
        pub_parked = dict(stores.receipts.parked)
        resent = stores.resent
        stores.close()
    problems = [
        f"worker {w.n} exited with {c}:\n{w.log()[-2000:]}"
        for w, c in zip(procs, codes, strict=True)
        if c != 0
    ]
    lost, doubled, parked, more = check_burst(target, b, ids, not_receipted, pub_parked)
    problems += more
    r = BurstRun(name, workers, len(ids), dt, resent, lost, doubled, parked, extra, problems)
    return r, target


def check_burst(
    target: str, b: Burst, ids: set[str], not_receipted: set[str], pub_parked: dict[str, str]
) -> tuple[int, int, int, list[str]]:
    """Nothing lost, nothing doubled: (lost, doubled, parked, problems) from the hub's tables."""
    problems: list[str] = []
    db = open_hub(target)
    try:
        held = {str(r[0]) for r in db.query("SELECT msg_id FROM hub_messages")}
        counts = {
            t: int((db.one(f"SELECT count(*) FROM {t}") or (0,))[0])
            for t in ("hub_messages", "hub_summaries", "hub_rollup", "hub_facts", "hub_stores", "hub_parked")
        }
        events, revenue = db.one(
            "SELECT coalesce(sum(events), 0), coalesce(sum(revenue), 0) FROM hub_rollup"
        ) or (0, 0)
        catalog = {
            (str(s), str(sl), str(v), str(et)): (int(d), float(e))
            for s, sl, v, et, d, e in db.query(
                "SELECT store_id, slice, vkey, event_type, days, events FROM hub_catalog"
            )
        }
        (online,) = db.one("SELECT count(*) FROM hub_stores WHERE status = 'online'") or (0,)
    finally:
        db.close()
    n_facts = len(b.stores) * len(BURST_FACTS)
    expect = {
        "hub_messages": len(ids),
        "hub_summaries": len(ids),
        "hub_rollup": b.rollup_rows,
        "hub_facts": n_facts,
        "hub_stores": len(b.stores),
        "hub_parked": 0,
    }
    lost = len(ids - held) + len(not_receipted - (ids - held))
    doubled = len(held - ids)
    for t, want in expect.items():
        got = counts[t]
        if got != want:
            problems.append(f"{t}: {got} rows, expected {want}")
            if t in ("hub_rollup", "hub_facts", "hub_summaries") and got > want:
                doubled += got - want
            elif t in ("hub_rollup", "hub_facts", "hub_summaries"):
                lost += want - got
    if int(events) != b.events:
        problems.append(f"sum(events) {int(events)}, expected {b.events}")
    if abs(float(revenue) - b.revenue) > 1e-6 * max(1.0, b.revenue):
        problems.append(f"sum(revenue) {float(revenue):.2f}, expected {b.revenue:.2f}")
    if catalog != b.catalog:
        wrong = [k for k in set(catalog) | set(b.catalog) if catalog.get(k) != b.catalog.get(k)]
        problems.append(f"hub_catalog differs at {len(wrong)} entries, e.g. {sorted(wrong)[:3]}")
        doubled += sum(1 for k in wrong if catalog.get(k, (0, 0))[0] > b.catalog.get(k, (0, 0))[0])
    if int(online) != len(b.stores):
        problems.append(f"{int(online)} stores online, expected {len(b.stores)} (a status lost)")
    if not_receipted:
        problems.append(f"{len(not_receipted)} messages never receipted, e.g. {sorted(not_receipted)[:3]}")
    if pub_parked:
        problems.append(f"{len(pub_parked)} receipted as parked: {dict(list(pub_parked.items())[:3])}")
    return lost, doubled, counts["hub_parked"] + len(pub_parked), problems


#: what the floor copies: the tables a summary writes, in this order
FLOOR_TABLES = ("hub_stores", "hub_messages", "hub_summaries", "hub_rollup", "hub_catalog", "hub_facts")


def floor_copy(pg: Any, source: str) -> tuple[float, int]:
    """The floor: the rows a run left in the hub's tables, read back, then written into a fresh
    database (made by the hub's own migrations) with raw psycopg ``COPY``, one transaction,
    timed from connect to commit. (seconds, rows)."""
    import psycopg

    tables: dict[str, tuple[list[str], list[tuple[Any, ...]]]] = {}
    with psycopg.connect(source) as c:
        for t in FLOOR_TABLES:
            cur = c.execute(f"SELECT * FROM {t}")
            cols = [d.name for d in cur.description or ()]
            tables[t] = (cols, cur.fetchall())
    target = fresh_pg_dsn(pg.dsn)
    open_hub(target).close()  # the hub's own migrations
    rows = 0
    t0 = time.perf_counter()
    with psycopg.connect(target) as c, c.transaction(), c.cursor() as cur:
        for t, (cols, data) in tables.items():
            with cur.copy(f"COPY {t} ({', '.join(cols)}) FROM STDIN") as cp:
                for r in data:
                    cp.write_row(r)
            rows += len(data)
    return time.perf_counter() - t0, rows


def burst_table(
    tmp: Path, stores: int, clients: int, resend_after_s: float, timeout: float
) -> tuple[list[str], bool]:
    b = burst(stores)
    log(f"burst: {stores} stores, {b.messages} messages ({len(b.all)} summaries, {b.rollup_rows} rollup rows, "
        f"{len(b.statuses)} statuses)")  # fmt: skip
    runs: list[BurstRun] = []
    with running_postgres(tmp / "pg-burst") as pg:
        for name, w, faults in (("1 worker", 1, False), ("2 workers", 2, False),
                                ("2 workers, one SIGKILLed + PostgreSQL restarted", 2, True)):  # fmt: skip
            log(f"burst: {name}")
            r, target = burst_run(tmp, pg, b, name, w, faults=faults, clients=clients,
                                  resend_after_s=resend_after_s, timeout=timeout)  # fmt: skip
            r.floor_s, r.floor_rows = floor_copy(pg, target)
            log(f"  floor: {r.floor_rows} rows COPYed in {r.floor_s:.2f} s")
            runs.append(r)
    lines = [
        f"| nightly burst, {stores:,} stores | workers | messages (receipted) | receipted msg/s | floor msg/s "
        "(COPY rows/s) | ratio | re-sent | extra receipts | lost | doubled | parked |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    fails: list[str] = []
    for r in runs:
        rate = r.summaries / r.seconds
        floor = r.summaries / r.floor_s
        lines.append(
            f"| {r.name} | {r.workers} | {b.messages:,} ({r.summaries:,}) | {rate:,.0f} | {floor:,.0f} "
            f"({r.floor_rows / r.floor_s:,.0f}) | {rate / floor:.3f} | {r.resent:,} | {r.extra_receipts:,} | "
            f"{r.lost} | {r.doubled} | {r.parked} |"
        )
        for p in r.faults:
            fails.append(f"FAIL {r.name}: {p}")
    return lines + ([""] + fails if fails else []), not fails


QUESTIONS = (
    "2025年10月哪个门店的销售额最高？",
    "Compare average order value across stores in November 2025",
    "store_0007 revenue in October 2025",
    "weekly revenue trend of store_0042",
)


def ask_latency(path: Path, repeats: int) -> list[tuple[str, float, str, float]]:
    out = []
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for q in QUESTIONS:
        times = []
        status = ""
        inner = 0.0
        for _ in range(repeats):
            t0 = time.perf_counter()
            r = subprocess.run(
                [sys.executable, "-m", "hub", "ask", "--db", str(path), "--now", "2026-01-01T00:00:00+08:00",
                 "--json", q], cwd=ROOT, env=env, capture_output=True, text=True)  # fmt: skip
            times.append(time.perf_counter() - t0)
            if r.returncode != 0:
                raise SystemExit(f"adamm-hub ask failed: {r.stderr}")
            import json

            p = json.loads(r.stdout)
            status, inner = p["status"], p["elapsed_ms"]
        out.append((q, statistics.median(times), status, inner))
    return out


PARTS = ("burst", "ingest", "ask")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--parts", default=",".join(PARTS), help=f"comma-separated, of {', '.join(PARTS)} (default all)"
    )
    ap.add_argument("--messages", type=int, default=2000)
    ap.add_argument("--stores", type=int, default=1000)
    ap.add_argument("--days", type=int, default=365)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--burst-stores", type=int, default=1000)
    ap.add_argument(
        "--burst-clients", type=int, default=10, help="MQTT connections the stores publish through"
    )
    ap.add_argument(
        "--resend-after", type=float, default=30.0, help="a store's re-send delay, s (the edge's)"
    )
    ap.add_argument("--burst-timeout", type=float, default=900.0, help="s per burst run")
    ap.add_argument(
        "--skip-ingest", action="store_true", help="(old) the same as leaving ingest out of --parts"
    )
    args = ap.parse_args()
    parts = {p.strip() for p in args.parts.split(",") if p.strip()}
    if not parts or parts - set(PARTS):
        ap.error(f"--parts takes a comma-separated list of {', '.join(PARTS)}")
    if args.skip_ingest:
        parts.discard("ingest")
    tmp = Path(tempfile.mkdtemp(prefix="adamm-bench-hub-"))
    out: list[str] = []
    ok = True
    if "burst" in parts:
        lines, ok = burst_table(
            tmp, args.burst_stores, args.burst_clients, args.resend_after, args.burst_timeout
        )
        out += [*lines, ""]
    if "ingest" in parts:
        lines = ["| hub ingest over MQTT (receipted messages/s) | workers | msg/s |", "|---|---:|---:|"]
        msgs = summaries(args.messages)
        log(f"ingest: {len(msgs)} messages")
        rate = ingest_rate(tmp, str(tmp / "ingest.db"), 1, msgs)
        lines.append(f"| SQLite | 1 | {rate:,.0f} |")
        lines.append("| SQLite | 2 | n/a (one writer) |")
        with running_postgres(tmp / "pg") as pg:
            for w in (1, 2):
                rate = ingest_rate(tmp, fresh_pg_dsn(pg.dsn), w, msgs)
                lines.append(f"| PostgreSQL | {w} | {rate:,.0f} |")
        out += [*lines, ""]
    if "ask" in parts:
        big = tmp / "big.db"
        log(f"ask: building {args.stores} stores x {args.days} days")
        t0 = time.perf_counter()
        build_big(big, args.stores, args.days)
        log(f"  built in {time.perf_counter() - t0:.0f} s ({big.stat().st_size / 1e6:.0f} MB)")
        out += [
            f"| adamm-hub ask, {args.stores:,} stores x {args.days} days | status | whole process (median) | in-process analysis |",
            "|---|---|---:|---:|",
        ]
        for q, dt, status, inner in ask_latency(big, args.repeats):
            out.append(f"| {q} | {status} | {dt:.2f} s | {inner:.0f} ms |")
    print("\n".join(out).rstrip())
    if not ok:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
