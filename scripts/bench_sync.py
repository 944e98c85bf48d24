#!/usr/bin/env python3
"""Sync benchmark, edge part: outbox drain against raw paho QoS 1 publishing, side by side.

Prints, in one run (numbers for docs/benchmarks.md; nothing here is asserted):

- **outbox drain**: summaries per second from the store's outbox through
  :class:`edge.sync.runner.SyncRun` (QoS 1, the publish window, publish attempts and receipts
  written to the store), two ways: until the broker has PUBACKed all of them (what raw paho is
  timed to), and until the receipts confirm all of them (rows marked done). The receipts come
  from a hub stand-in in its own process that picks each msg_id out of the payload (no
  validation: the hub's ingest is measured with the hub) and answers once per batch (100
  messages or 10 ms);
- **raw paho**: the same payloads published QoS 1 with a bare paho client (``loop_start``, no
  store, no receipts), until every PUBACK is back; the same stand-in is subscribed. The drain
  starts only once the stand-in has read everything raw published (it reads on after raw's
  last PUBACK), so neither phase pays for the other's backlog;
- the ratios drain / raw (the goal, >= 0.8x, is for the PUBACKed drain: "acknowledged
  messages/s, QoS 1");
- **CPU per message** of each process (this one, the stand-in, the broker: /proc, user +
  system) over each timed phase: where the time goes on a machine where all three share the
  cores;
- **bytes per store per day** on the wire: the encoded summaries of one simulated day (six
  slices), plus the MQTT PUBLISH overhead (fixed header, topic, packet id, the ``seq`` user
  property).

The outbox is filled with N copies of real daily rollup bodies (from a simulated store) under
distinct days, so the messages have the real size. A real Mosquitto is started on a free port
with the project's config (tests/brokers.py). The hub parts (ingest with 1 and 2 workers,
``adamm-hub ask`` latency) are ``scripts/bench_hub.py`` (docs/benchmarks.md, "Hub: ingest and
cross-store questions").

Usage: ``python scripts/bench_sync.py [--messages 3000] [--rounds 3] [--workdir DIR]``.
"""

from __future__ import annotations

import argparse
import json
import logging
import multiprocessing
import os
import platform
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time
from datetime import date, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import paho.mqtt.client as paho  # noqa: E402
from brokers import running_mosquitto  # noqa: E402
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion  # noqa: E402

from edge.memory.store import Store  # noqa: E402
from edge.sim import SimConfig, simulate  # noqa: E402
from edge.sync import messages as m  # noqa: E402
from edge.sync.mqtt import LinkSettings, parse_broker_url  # noqa: E402
from edge.sync.outbox import Outbox, upsert_summary  # noqa: E402
from edge.sync.runner import SyncRun  # noqa: E402

logger = logging.getLogger("bench_sync")
STORE = "sh_xuhui_01"
MSG_ID = re.compile(rb'"msg_id":"([0-9a-f]{32})"')


def build_store(path: Path, n: int) -> tuple[list[bytes], int]:
    """A memory whose outbox holds ``n`` pending rollup summaries; returns their payloads and the
    wire bytes of one day."""
    with Store.open(path, timezone="Asia/Shanghai") as store:
        store.import_events(simulate(SimConfig(days=3, store_id=STORE)))
        ob = Outbox(store, max_pending=10**9)
        ob.derive()
        with store.read() as conn:
            real = [
                (str(k), json.loads(bytes(p))["body"])
                for k, p in conn.execute(
                    "SELECT o.key, p.payload FROM outbox AS o JOIN outbox_payloads AS p USING (seq) ORDER BY seq"
                )
            ]
        day_bytes = 0
        first_day = real[0][1]["day"]
        for key, body in real:
            if body["day"] == first_day:
                payload = m.make_summary(STORE, "rollup", key, 1, body).encode()
                topic = m.summary_topic(STORE)
                # PUBLISH: fixed header (~3), topic length + topic, packet id, properties (seq)
                day_bytes += len(payload) + 3 + 2 + len(topic) + 2 + 1 + 1 + 2 + 3 + 2 + 6
        slices = {b["slice"]: b for _k, b in real if b["day"] == first_day}

        def fill(conn: Any) -> None:
            with conn:
                conn.execute("DELETE FROM outbox")
                conn.execute("DELETE FROM outbox_payloads")
                start = date(2000, 1, 1)
                i = 0
                while i < n:
                    d = (start + timedelta(days=i // len(slices))).isoformat()
                    for sl, body in slices.items():
                        if i >= n:
                            break
                        upsert_summary(conn, STORE, "rollup", m.rollup_key(d, sl), dict(body, day=d))
                        i += 1

        store.writer.submit(fill).result()
        with store.read() as conn:
            payloads = [bytes(p) for (p,) in conn.execute("SELECT payload FROM outbox_payloads ORDER BY seq")]
    return payloads, day_bytes


def _responder(port: int, ready: Any, stop: Any, received: Any) -> None:
    """The hub stand-in, in its own process (so it does not share the edge's GIL): reads each
    summary's msg_id and answers with one receipt per batch (every 100 messages or 10 ms), as a
    hub that commits in batches does."""
    lock = threading.Lock()
    batch: dict[str, list[str]] = {}

    def on_connect(client: Any, userdata: Any, flags: Any, rc: Any, props: Any) -> None:
        client.subscribe(f"{m.TOPIC_ROOT}/+/summary", qos=1)

    def on_subscribe(client: Any, userdata: Any, mid: int, rcs: Any, props: Any) -> None:
        ready.set()

    def on_message(client: Any, userdata: Any, msg: Any) -> None:
        with received.get_lock():
            received.value += 1
        found = MSG_ID.search(msg.payload)  # a stand-in: no validation, just the id
        if found is None:
            return
        with lock:
            batch.setdefault(str(m.topic_store(msg.topic)), []).append(found.group(1).decode())
            full = sum(len(v) for v in batch.values()) >= 100
        if full:
            flush(client)

    def flush(client: Any) -> None:
        with lock:
            out = dict(batch)
            batch.clear()
        for store, ids in out.items():
            client.publish(m.receipt_topic(store), m.Receipt(stored=tuple(ids)).encode(), qos=1)

    c = paho.Client(CallbackAPIVersion.VERSION2, client_id="bench-hub", protocol=MQTTProtocolVersion.MQTTv5)
    c.on_connect, c.on_subscribe, c.on_message = on_connect, on_subscribe, on_message
    c.connect("127.0.0.1", port)
    c.loop_start()
    while not stop.is_set():
        time.sleep(0.01)
        flush(c)
    c.disconnect()
    c.loop_stop()


def cpu_s(pid: int) -> float:
    """CPU seconds (user + system) a process has used so far, all its threads (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class CpuMeter:
    """CPU seconds per process (this one, the hub stand-in, the broker) over one timed phase."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids = pids
        self.start = {k: cpu_s(p) for k, p in pids.items()}

    def used(self) -> dict[str, float]:
        return {k: cpu_s(p) - self.start[k] for k, p in self.pids.items()}


def drain(path: Path, url: str, n: int, pids: dict[str, int]) -> tuple[float, float, dict[str, float]]:
    """Connected first (as raw paho is), then timed from the first publish to the receipt that
    confirms the last row (the moment ``once`` reports it, before it disconnects)."""
    with Store.open(path) as store:
        marks: dict[str, float] = {}

        def progress(text: str) -> None:
            if text.startswith("all "):
                marks["done"] = time.perf_counter()

        run = SyncRun(store, LinkSettings(parse_broker_url(url)), window=100, progress=progress)
        run._ensure_syncs()
        assert all(s.link.wait_connected(10) for s in run.syncs.values())
        sync = run.syncs[STORE]
        counted = sync.link._on_puback
        assert counted is not None
        pubacks = [0]

        def on_puback(mid: int, ok: bool, reason: str) -> None:  # the last PUBACK's time, as raw's
            counted(mid, ok, reason)
            pubacks[0] += 1
            if pubacks[0] == n:
                marks["puback"] = time.perf_counter()

        sync.link._on_puback = on_puback
        time.sleep(0.2)
        meter = CpuMeter(pids)
        t0 = time.perf_counter()
        counts = run.once(600)
        cpu = meter.used()
        assert counts.confirmed == n, counts
    return n / (marks["done"] - t0), n / (marks["puback"] - t0), cpu


def raw(payloads: list[bytes], port: int, pids: dict[str, int]) -> tuple[float, dict[str, float]]:
    done = threading.Event()
    acked = [0]

    def on_publish(client: Any, userdata: Any, mid: int, rc: Any, props: Any) -> None:
        acked[0] += 1
        if acked[0] == len(payloads):
            done.set()

    c = paho.Client(CallbackAPIVersion.VERSION2, client_id="bench-raw", protocol=MQTTProtocolVersion.MQTTv5)
    c.on_publish = on_publish
    c.max_inflight_messages_set(100)
    c.max_queued_messages_set(0)
    c.connect("127.0.0.1", port)
    c.loop_start()
    try:
        time.sleep(0.2)
        meter = CpuMeter(pids)
        t0 = time.perf_counter()
        topic = m.summary_topic(STORE)
        for p in payloads:
            c.publish(topic, p, qos=1)
        done.wait(600)
        dt = time.perf_counter() - t0
        cpu = meter.used()
    finally:
        c.disconnect()
        c.loop_stop()
    return len(payloads) / dt, cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workdir")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    work = Path(args.workdir or tempfile.mkdtemp(prefix="adamm-bench-sync-"))
    work.mkdir(parents=True, exist_ok=True)
    db = work / "bench.db"
    if db.exists():
        db.unlink()
    payloads, day_bytes = build_store(db, args.messages)
    mean_size = statistics.mean(len(p) for p in payloads)
    drains: list[float] = []
    raws: list[float] = []
    drain_acks: list[float] = []
    drain_cpu: list[dict[str, float]] = []
    raw_cpu: list[dict[str, float]] = []
    for i in range(args.rounds):  # alternate, so load on a shared machine hits both alike
        # a fresh broker each round: no session (and no late receipt) survives from the last one
        with running_mosquitto(work / f"mq{i}") as mq:
            ctx = multiprocessing.get_context("fork")
            ready, stop, received = ctx.Event(), ctx.Event(), ctx.Value("q", 0)
            hub = ctx.Process(target=_responder, args=(mq.port, ready, stop, received), daemon=True)
            hub.start()
            try:
                assert ready.wait(30), "the responder did not subscribe"
                assert mq.proc is not None and hub.pid is not None
                pids = {"publisher": os.getpid(), "hub stand-in": hub.pid, "broker": mq.proc.pid}
                rate, cpu = raw(payloads, mq.port, pids)
                raws.append(rate)
                raw_cpu.append(cpu)
                # the stand-in is still reading what raw published (it does not wait for it): the
                # drain starts once it has caught up, so neither phase pays for the other's backlog
                until = time.monotonic() + 120
                while received.value < len(payloads) and time.monotonic() < until:
                    time.sleep(0.05)
                copy = work / "drain.db"
                for f in work.glob("drain.db*"):
                    f.unlink()
                shutil.copy(db, copy)  # a fresh outbox each round
                rate, acked, cpu = drain(copy, mq.url, len(payloads), pids)
                drains.append(rate)
                drain_acks.append(acked)
                drain_cpu.append(cpu)
            finally:
                stop.set()
                hub.join(10)
    d, a, r = statistics.median(drains), statistics.median(drain_acks), statistics.median(raws)

    def rounds(xs: list[float]) -> str:
        return ", ".join(f"{x:,.0f}" for x in xs)

    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    print(
        f"messages: {len(payloads)} rollup summaries, mean {mean_size:,.0f} bytes; {args.rounds} rounds (median)"
    )
    print(f"outbox drain, PUBACKed (QoS 1):             {a:,.0f} msg/s   (rounds: {rounds(drain_acks)})")
    print(f"outbox drain, receipted (rows marked done): {d:,.0f} msg/s   (rounds: {rounds(drains)})")
    print(f"raw paho QoS 1, PUBACKed:                   {r:,.0f} msg/s   (rounds: {rounds(raws)})")
    print(f"ratio drain / raw, PUBACKed: {a / r:.2f}x (goal >= 0.8x); receipted: {d / r:.2f}x")
    n = len(payloads)
    for name in raw_cpu[0]:
        per = [statistics.median(c[name] for c in cpus) / n * 1e6 for cpus in (drain_cpu, raw_cpu)]
        print(f"CPU per message, {name:<12}: drain {per[0]:6.0f} us, raw {per[1]:6.0f} us")
    print(f"bytes per store per day on the wire (6 rollup summaries, simulated store): {day_bytes:,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
