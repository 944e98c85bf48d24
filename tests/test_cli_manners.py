"""Command-line manners (issue 26, item 6): ``adamm sync --once`` with nothing to send says so in
one line and exits without a broker; ``--json`` prints its summary on every exit; credentials of
another store are refused before connecting, naming both ids; ``broker-setup`` run again on a
live broker makes it reload, so a new store's credentials work at once; the development broker
configuration runs as root without an error a second; a mistyped flag or command names the one
meant."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import apsw
import pytest
from brokers import Mosquitto, free_port, mosquitto_available

from edge.cliargs import SuggestingParser, closest
from edge.memory.store import Store
from edge.sim import SimConfig, simulate
from edge.sync.outbox import Outbox

ROOT = Path(__file__).resolve().parents[1]
STORE = "sh_xuhui_01"
needs_mosquitto = pytest.mark.skipif(not mosquitto_available(), reason="mosquitto is not installed")


def _run(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("ADAMM_MQTT_")}
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        env={**full, "PYTHONPATH": str(ROOT), **(env or {})},
        timeout=timeout,
        cwd=ROOT,
    )


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("manners") / "store.db"
    events = list(simulate(SimConfig(days=3, customers_per_day=20, with_text=False)))
    with Store.open(path, timezone="Asia/Shanghai") as store:
        assert store.import_events(events).rejected == 0
    return path


@pytest.fixture
def db(base: Path, tmp_path: Path) -> Path:
    path = tmp_path / "store.db"
    shutil.copy(base, path)
    return path


def _dead_broker() -> str:
    return f"mqtt://127.0.0.1:{free_port()}"  # nothing listens there


def _all_confirmed(db: Path) -> int:
    """Summarise the memory into its outbox and mark every summary confirmed (as a hub would)."""
    with Store.open(db) as store:
        Outbox(store, 20000).derive()
    conn = apsw.Connection(str(db))
    try:
        conn.execute("UPDATE outbox SET state = 'done'")
        (n,) = conn.execute("SELECT count(*) FROM outbox").fetchone()
    finally:
        conn.close()
    assert n > 0
    return int(n)


def test_sync_once_with_nothing_to_send_says_so_in_one_line_without_a_broker(db: Path) -> None:
    done = _all_confirmed(db)
    t0 = time.monotonic()
    out = _run("-m", "edge", "sync", "--db", str(db), "--broker", _dead_broker(), "--once", "--json")
    assert out.returncode == 0, out.stderr
    assert time.monotonic() - t0 < 30  # not the 120 s --timeout
    assert out.stderr.strip().splitlines() == [
        f"adamm sync: nothing to send: all {done} summaries are confirmed by the hub"
    ]
    assert json.loads(out.stdout) == {"published": 0, "confirmed": 0, "parked": 0, "pending": 0}


def test_sync_json_prints_the_summary_when_it_exits_3(db: Path) -> None:
    out = _run(
        "-m",
        "edge",
        "sync",
        "--db",
        str(db),
        "--broker",
        _dead_broker(),
        "--once",
        "--json",
        "--timeout",
        "1",
    )
    assert out.returncode == 3, out.stderr
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 1, out.stdout
    got: dict[str, Any] = json.loads(lines[0])
    assert got["pending"] > 0 and got["confirmed"] == 0 and "unreachable" in got["error"]


def test_credentials_of_another_store_are_refused_before_connecting(db: Path) -> None:
    creds = {"ADAMM_MQTT_USERNAME": "sh_01", "ADAMM_MQTT_PASSWORD": "pw"}
    t0 = time.monotonic()
    out = _run("-m", "edge", "sync", "--db", str(db), "--broker", _dead_broker(), "--once", env=creds)
    assert out.returncode == 3
    assert time.monotonic() - t0 < 30
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "'sh_01'" in lines[0] and f"'{STORE}'" in lines[0], out.stderr
    assert f"credentials/{STORE}.env" in lines[0]
    # the store's own user passes the check (and then finds no broker: exit 3 for that)
    own = _run(
        "-m", "edge", "sync", "--db", str(db), "--broker", _dead_broker(), "--once", "--timeout", "1",
        env={**creds, "ADAMM_MQTT_USERNAME": STORE},
    )  # fmt: skip
    assert (
        own.returncode == 3 and "unreachable" in own.stderr and "is not this memory's store" not in own.stderr
    )
    # the same for the commands that connect as the store to carry its actions
    action = _run("-m", "edge", "action", "sync", "--db", str(db), "--broker", _dead_broker(), env=creds)
    assert action.returncode == 3
    lines = action.stderr.strip().splitlines()
    assert len(lines) == 1 and "'sh_01'" in lines[0] and f"'{STORE}'" in lines[0], action.stderr


@needs_mosquitto
def test_broker_setup_again_on_a_live_broker_reloads_it(tmp_path: Path) -> None:
    from test_broker_setup import Peer, broker

    dir = tmp_path / "broker"
    first = _run(
        "-m", "hub", "broker-setup", "--dir", str(dir), "--stores", "sh_01", "--port", str(free_port())
    )
    assert first.returncode == 0 and "run: mosquitto -c" in first.stderr, first.stderr
    with broker(dir) as port:
        again = _run("-m", "hub", "broker-setup", "--dir", str(dir), "--stores", "sh_02", "--json")
        assert again.returncode == 0, again.stderr
        report = json.loads(again.stdout)
        assert "sh_02" in report["added"] and len(report["reloaded"]) == 1, report
        deadline = time.monotonic() + 10
        while True:  # the new store's credentials work without a restart
            peer = Peer(dir, port, "sh_02")
            try:
                if peer.reason == 0:
                    break
            finally:
                peer.c.loop_stop()
                peer.c.disconnect()
            assert time.monotonic() < deadline, f"sh_02 refused: {peer.reason}"
            time.sleep(0.2)
        text = _run("-m", "hub", "broker-setup", "--dir", str(dir), "--stores", "sh_02")
        assert "reloaded the users and the ACL" in text.stderr, text.stderr


@needs_mosquitto
def test_the_development_broker_config_runs_without_repeating_errors(tmp_path: Path) -> None:
    """Run as root the broker used to drop to its own user, which could not write @DIR@: an
    error a second from the log and the autosave."""
    broker = Mosquitto(tmp_path, free_port(), persistence=True).start()
    time.sleep(2.5)
    assert broker.proc is not None
    broker.proc.terminate()
    _out, err = broker.proc.communicate(timeout=10)
    errors = [line for line in err.decode(errors="replace").splitlines() if "Error" in line]
    log = (
        (tmp_path / "mosquitto.log").read_text(errors="replace")
        if (tmp_path / "mosquitto.log").exists()
        else ""
    )
    assert errors == [] and "Error" not in log, (errors, log)
    assert (tmp_path / "mosquitto.db").exists()  # persistence could write


@pytest.mark.parametrize(
    ("argv", "meant"),
    [
        (["-m", "edge", "sync", "--db", "x.db", "--tiemout", "5"], "did you mean --timeout?"),
        (["-m", "edge", "ask", "--db", "x.db", "--nwo=2025-12-01", "q"], "did you mean --now?"),
        (["-m", "edge", "snyc"], "did you mean 'sync'?"),
        (["-m", "hub", "status", "--db", "h.db", "--jsno"], "did you mean --json?"),
        (["-m", "hub", "satus"], "did you mean 'status'?"),
        (
            ["-m", "edge.staff.cli", "--store", "s", "--role", "r", "--broker", "mqtt://x:1", "--ak", "done"],
            "did you mean --ack?",
        ),
        (["-m", "edge.sim", "--descirbe"], "did you mean --describe?"),
    ],
)
def test_a_mistyped_flag_or_command_names_the_one_meant(argv: list[str], meant: str) -> None:
    out = _run(*argv, timeout=60)
    assert out.returncode == 2
    assert meant in out.stderr, out.stderr


def test_the_suggestion_comes_from_the_sub_command_parsed(capsys: pytest.CaptureFixture[str]) -> None:
    p = SuggestingParser(prog="x")
    sub = p.add_subparsers(dest="command")
    a = sub.add_parser("a")
    a.add_argument("--alpha")
    b = sub.add_parser("b")
    b.add_argument("--beta")
    with pytest.raises(SystemExit):
        p.parse_args(["a", "--bet", "1"])  # --beta is b's: not offered for a
    err = capsys.readouterr().err
    assert "unrecognized arguments: --bet" in err and "did you mean" not in err
    with pytest.raises(SystemExit):
        p.parse_args(["a", "--alpah", "1"])
    assert "did you mean --alpha?" in capsys.readouterr().err
    assert closest("--bet", ["--alpha"]) is None
    assert closest("--alpah", ["--alpha"]) == "--alpha"
    assert p.parse_args(["b", "--beta", "1"]).beta == "1"
