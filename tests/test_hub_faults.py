"""A hub fault is not the store's fault: on a real Mosquitto and a real PostgreSQL, a fault of the
hub's own never parks a store's message and sends no receipt for it (the store sends it again);
PostgreSQL restarted, a worker's backend terminated, a deadlock or a serialization failure
mid-message: the workers retry and keep serving, totals equal, nothing parked, nothing doubled."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from brokers import mosquitto_available, running_mosquitto, running_postgres
from hub_data import Publisher, day_summaries, fresh_pg_dsn, pg_dsn, rollup, row  # noqa: F401
from test_hub_serve import Hub

from hub.db import open_hub

pytestmark = pytest.mark.skipif(not mosquitto_available(), reason="mosquitto is not installed")


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[object]:
    with running_mosquitto(tmp_path / "mq") as b:
        yield b


def _state(target: str) -> tuple[dict[str, float], int, int]:
    db = open_hub(target)
    try:
        got = {
            s: float(t) for s, t in db.query("SELECT store_id, sum(events) FROM hub_rollup GROUP BY store_id")
        }
        (n,) = db.one("SELECT count(*) FROM hub_messages") or (0,)
        (parked,) = db.one("SELECT count(*) FROM hub_parked") or (0,)
        return got, int(n), int(parked)
    finally:
        db.close()


def _start(pg: object) -> None:
    for attempt in range(10):  # the stopped server's socket and lock may linger a moment
        try:
            pg.start()  # type: ignore[attr-defined]
            return
        except subprocess.CalledProcessError:
            if attempt == 9:
                raise
            time.sleep(1)


def test_postgres_restarted_and_a_backend_terminated_mid_ingest_the_workers_keep_serving(
    tmp_path: Path, broker: object
) -> None:
    msgs, totals = day_summaries(["sh_01", "bj_02", "gz_03"], 60, seed=11)
    with running_postgres(tmp_path / "pg") as pg:
        target = fresh_pg_dsn(pg.dsn)
        open_hub(target).close()  # migrated before the workers race to it
        url = broker.url  # type: ignore[attr-defined]
        hubs = [Hub(tmp_path, "--db", target, "--broker", url, "--worker", str(w)) for w in (1, 2)]
        pub = Publisher(broker.port)  # type: ignore[attr-defined]
        try:
            for h in hubs:
                h.wait_subscribed()
            third = len(msgs) // 3
            for s in msgs[:third]:
                pub.send(s)
            assert pub.wait_stored({s.msg_id for s in msgs[:third]})
            # every worker's backend terminated while more messages arrive
            for s in msgs[third : 2 * third]:
                pub.send(s)
            with psycopg.connect(target, autocommit=True) as c:
                c.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
            assert pub.wait_stored({s.msg_id for s in msgs[: 2 * third]}, timeout=90, resend=msgs)
            # the server stopped: no receipt meanwhile, the workers wait and retry
            pg.stop()
            for s in msgs[2 * third :]:
                pub.send(s)
            time.sleep(3)
            assert not {s.msg_id for s in msgs[2 * third :]} & pub.stored
            assert all(h.proc.poll() is None for h in hubs), [h.log()[-2000:] for h in hubs]
            _start(pg)
            ids = {s.msg_id for s in msgs}
            assert pub.wait_stored(ids, timeout=120, resend=msgs), (
                len(ids - pub.stored),
                [h.log()[-2000:] for h in hubs],
            )
            got, n, parked = _state(target)
            assert got == totals and n == len(msgs) and parked == 0
            assert all(h.proc.poll() is None for h in hubs)
            assert any("retrying" in h.log() for h in hubs)
            assert not pub.parked
        finally:
            pub.close()
            for h in hubs:
                if h.proc.poll() is None:
                    assert h.stop() == 0, h.log()


def test_deadlocks_and_serialization_failures_are_retried_not_parked(
    tmp_path: Path, broker: object, request: pytest.FixtureRequest
) -> None:
    target = fresh_pg_dsn(request.getfixturevalue("pg_dsn"))
    open_hub(target).close()
    with psycopg.connect(target, autocommit=True) as c:  # the first four inserts fail, transiently
        c.execute("CREATE SEQUENCE injected_faults")
        c.execute(
            "CREATE FUNCTION inject() RETURNS trigger LANGUAGE plpgsql AS $$ DECLARE n bigint; BEGIN "
            "n := nextval('injected_faults'); "
            "IF n <= 2 THEN RAISE EXCEPTION 'injected deadlock' USING ERRCODE = '40P01'; END IF; "
            "IF n <= 4 THEN RAISE EXCEPTION 'injected conflict' USING ERRCODE = '40001'; END IF; "
            "RETURN NEW; END $$"
        )
        c.execute("CREATE TRIGGER inject BEFORE INSERT ON hub_rollup FOR EACH ROW EXECUTE FUNCTION inject()")
    msgs, totals = day_summaries(["sh_01"], 5, seed=3)
    hub = Hub(tmp_path, "--db", target, "--broker", broker.url)  # type: ignore[attr-defined]
    pub = Publisher(broker.port)  # type: ignore[attr-defined]
    try:
        hub.wait_subscribed()
        for s in msgs:
            pub.send(s)
        assert pub.wait_stored({s.msg_id for s in msgs}, timeout=60), hub.log()
        got, n, parked = _state(target)
        assert got == totals and n == len(msgs) and parked == 0
        assert "injected deadlock" in hub.log() and "injected conflict" in hub.log()
        assert hub.proc.poll() is None
    finally:
        pub.close()
        if hub.proc.poll() is None:
            assert hub.stop() == 0, hub.log()


def test_a_fault_of_the_hubs_own_sends_no_receipt_and_parks_nothing(
    tmp_path: Path, broker: object, request: pytest.FixtureRequest
) -> None:
    """The hub trips over its own state (a version it cannot read as a number): the store's
    message is not parked, no receipt goes out, the worker keeps serving; once the hub's state is
    mended, the store's re-send is stored."""
    target = fresh_pg_dsn(request.getfixturevalue("pg_dsn"))
    open_hub(target).close()
    s = rollup("sh_01", "2025-10-01", "total", [row(None, events=7)], 2)
    other = rollup("sh_01", "2025-10-02", "total", [row(None, events=3)])
    with psycopg.connect(target, autocommit=True) as c:
        c.execute("ALTER TABLE hub_summaries ALTER COLUMN version TYPE TEXT")
        c.execute(
            "INSERT INTO hub_summaries (store_id, key, kind, version, msg_id, received_at) "
            "VALUES ('sh_01', %s, 'rollup', 'seven', 'x', '2025-10-01T00:00:00Z')",
            (s.key,),
        )
    hub = Hub(tmp_path, "--db", target, "--broker", broker.url)  # type: ignore[attr-defined]
    pub = Publisher(broker.port)  # type: ignore[attr-defined]
    try:
        hub.wait_subscribed()
        pub.send(s)
        pub.send(other)
        assert pub.wait_stored({other.msg_id}, timeout=30)  # the worker keeps serving
        time.sleep(1)
        assert s.msg_id not in pub.stored and s.msg_id not in pub.parked
        assert _state(target)[2] == 0
        assert "a fault of the hub's own" in hub.log() and "ValueError" in hub.log()
        with psycopg.connect(target, autocommit=True) as c:
            c.execute("DELETE FROM hub_summaries WHERE version = 'seven'")
        assert pub.wait_stored({s.msg_id}, timeout=30, resend=[s])  # the store's re-send
        assert _state(target)[:2] == ({"sh_01": 10.0}, 2)
    finally:
        pub.close()
        if hub.proc.poll() is None:
            assert hub.stop() == 0, hub.log()


def test_a_database_error_no_retry_can_fix_is_exit_3_without_a_receipt(
    tmp_path: Path, broker: object, request: pytest.FixtureRequest
) -> None:
    target = fresh_pg_dsn(request.getfixturevalue("pg_dsn"))
    open_hub(target).close()
    with psycopg.connect(target, autocommit=True) as c:
        c.execute(
            "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
            "RAISE EXCEPTION 'permission denied for table hub_rollup' USING ERRCODE = '42501'; END $$"
        )
        c.execute("CREATE TRIGGER refuse BEFORE INSERT ON hub_rollup FOR EACH ROW EXECUTE FUNCTION refuse()")
    s = rollup("sh_01", "2025-10-01", "total", [row(None, events=7)])
    hub = Hub(tmp_path, "--db", target, "--broker", broker.url)  # type: ignore[attr-defined]
    pub = Publisher(broker.port)  # type: ignore[attr-defined]
    try:
        hub.wait_subscribed()
        pub.send(s)
        assert hub.proc.wait(30) == 3, hub.log()
        assert "permission denied" in hub.log()
        assert not pub.stored and not pub.parked and _state(target)[2] == 0
    finally:
        pub.close()
        if hub.proc.poll() is None:
            hub.stop()


class DisconnectingBroker:
    """A stand-in MQTT 5 broker at the process edge (a socket on loopback): it accepts every
    CONNECT, answers SUBSCRIBE, then sends DISCONNECT with ``reason`` after ``after_s``, as a
    broker does when another client takes the session over (0x8E) or a user loses its rights
    (0x87). Mosquitto 2.0.11 closes the socket without saying why, so it cannot show this."""

    def __init__(self, reason: int, after_s: float = 1.0) -> None:
        import socket
        import threading

        self.reason = reason
        self.after_s = after_s
        self.connects: list[str] = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        import threading

        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: Any) -> None:
        from brokers import connect_fields, read_packet

        try:
            _level, client_id = connect_fields(read_packet(conn))
            self.connects.append(client_id)
            conn.sendall(b"\x20\x03\x00\x00\x00")  # CONNACK: success, no properties
            conn.settimeout(self.after_s)
            deadline = time.monotonic() + self.after_s
            while time.monotonic() < deadline:
                try:
                    pkt = read_packet(conn)
                except TimeoutError:
                    break
                if pkt[0] >> 4 == 8:  # SUBSCRIBE: grant QoS 1 to each filter
                    i = 1
                    while pkt[i] & 0x80:
                        i += 1
                    mid = pkt[i + 1 : i + 3]
                    n = pkt[i + 3 :].count(b"\x01")
                    body = mid + b"\x00" + b"\x01" * max(n, 1)
                    conn.sendall(bytes([0x90, len(body)]) + body)
            conn.sendall(bytes([0xE0, 0x02, self.reason, 0x00]))  # DISCONNECT with the reason
        except (OSError, ConnectionError):
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self.sock.close()


@pytest.mark.parametrize(
    ("reason", "words"),
    [(0x8E, "same client id"), (0x87, "Not authorized")],
    ids=["session_taken_over", "not_authorized"],
)
def test_a_disconnect_reason_code_is_acted_on(tmp_path: Path, reason: int, words: str) -> None:
    """Session taken over (two workers with one id): the worker stops with exit 3 and names its
    client id instead of reconnecting into a tug-of-war; not authorized: exit 3 at once."""
    fake = DisconnectingBroker(reason)
    try:
        hub = Hub(tmp_path, "--db", str(tmp_path / "hub.db"), "--broker", f"mqtt://127.0.0.1:{fake.port}")
        try:
            assert hub.proc.wait(30) == 3, hub.log()
        finally:
            if hub.proc.poll() is None:
                hub.kill()
        assert words in hub.log() and "adamm-hub-1" in hub.log(), hub.log()
        assert fake.connects == ["adamm-hub-1"]  # it did not come back for the session
    finally:
        fake.close()


def test_a_worker_started_while_postgres_restarts_waits_for_it(tmp_path: Path, broker: object) -> None:
    """A worker (re)started while PostgreSQL is down (a supervisor's restart during the server's
    restart) waits for the server instead of exiting 3, then serves; a database that does not
    exist is no such wait: exit 3 at once."""
    s = rollup("sh_01", "2025-10-01", "total", [row(None, events=7)])
    with running_postgres(tmp_path / "pg") as pg:
        target = fresh_pg_dsn(pg.dsn)
        open_hub(target).close()
        pg.stop()
        url = broker.url  # type: ignore[attr-defined]
        hub = Hub(tmp_path, "--db", target, "--broker", url)
        pub = Publisher(broker.port)  # type: ignore[attr-defined]
        try:
            deadline = time.monotonic() + 30
            while "trying again" not in hub.log() and time.monotonic() < deadline:
                assert hub.proc.poll() is None, hub.log()
                time.sleep(0.1)
            time.sleep(2)
            assert hub.proc.poll() is None, hub.log()  # still waiting, not exit 3
            _start(pg)
            hub.wait_subscribed()
            pub.send(s)
            assert pub.wait_stored({s.msg_id}, timeout=30), hub.log()
            assert _state(target)[:2] == ({"sh_01": 7.0}, 1)
        finally:
            pub.close()
            if hub.proc.poll() is None:
                assert hub.stop() == 0, hub.log()
        gone = pg.dsn.rsplit("/", 1)[0] + "/no_such_db"
        t0 = time.monotonic()
        other = Hub(tmp_path, "--db", gone, "--broker", url)
        assert other.proc.wait(30) == 3, other.log()
        assert time.monotonic() - t0 < 20 and "trying again" not in other.log(), other.log()
