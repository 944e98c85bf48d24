"""``adamm-staff`` as a real process: the terminal keys, de-duplication across restarts, and an
end-to-end run on the locked-down broker of ``adamm-hub broker-setup`` (TLS, per-user
credentials, the contract's ACL) including refused credentials (exit 3 at once)."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from actions_helpers import ROOT, STORE, Staff, actions, adamm, adamm_json, env, make_memory, register_device
from brokers import _wait_port, free_port, mosquitto_available, reachable_by_others, running_mosquitto

from hub.broker_setup import _read_env, broker_setup

pytestmark = pytest.mark.skipif(not mosquitto_available(), reason="mosquitto is not installed")


def _send(db: Path, url: str, e: dict[str, str], title: str, role: str = "cashier") -> str:
    out = adamm_json(
        "action", "send", "--db", str(db), "--broker", url, "--role", role, "--type", "work_order",
        "--title", title, environ=e,
    )  # fmt: skip
    return str(out["action_id"])


def test_terminal_keys_accept_then_done_skip_and_end_of_input(tmp_path: Path) -> None:
    db = make_memory(tmp_path / "m.db")
    e = env(tmp_path)
    with running_mosquitto(tmp_path / "broker") as b:
        register_device(b.url, e)
        first = _send(db, b.url, e, "restock shelf 4")
        second = _send(db, b.url, e, "clean the fitting rooms")
        staff = Staff(b.url, e, "--by", "ann").wait_listening()
        assert staff.proc.stdin is not None
        # first action: a wrong key, accept, then done; second: skip; the input then ends, which the
        # device notices at its next prompt (the third action): it exits 0 without acknowledging it
        staff.proc.stdin.write("x\na\nd\ns\n")
        staff.proc.stdin.close()
        third = _send(db, b.url, e, "count the till")
        assert staff.proc.stdout is not None
        out = staff.proc.stdout.read()
        staff.proc.wait(60)
        err = "".join(staff.err)
        assert staff.proc.returncode == 0, err
        titles = ["restock shelf 4", "clean the fitting rooms", "count the till"]
        assert all(t in out for t in titles) and sorted(titles, key=out.index) == titles
        assert "type a, d, r or s" in err and "[d]one [r]eject [s]kip" in err
        adamm_json("action", "sync", "--db", str(db), "--broker", b.url, environ=e)
        got = actions(db, e)
        assert (got[first]["state"], got[first]["acked_by"]) == ("done", "ann")
        assert got[second]["state"] == got[third]["state"] == "sent"
        # shown actions are remembered: a restarted device shows neither again, only a new one
        fourth = _send(db, b.url, e, "check the fridge temperature")
        rc, shown, err = Staff(b.url, e, "--json", "--ack", "rejected", "--once").finish()
        assert rc == 0, err
        assert [s["action_id"] for s in shown] == [fourth]


def test_a_damaged_state_file_and_bad_arguments_are_clear(tmp_path: Path) -> None:
    e = env(tmp_path)
    state = tmp_path / "state.json"
    state.write_text("{not json")
    out = subprocess.run(
        [sys.executable, "-m", "edge.staff.cli", "--store", STORE, "--role", "cashier",
         "--broker", "mqtt://127.0.0.1:1", "--state", str(state)],
        capture_output=True, text=True, env=e, cwd=ROOT, timeout=60,
    )  # fmt: skip
    assert out.returncode == 3 and "state file" in out.stderr and str(state) in out.stderr
    assert state.read_text() == "{not json"
    out = subprocess.run(
        [sys.executable, "-m", "edge.staff.cli", "--store", "a/b", "--role", "cashier", "--broker", "mqtt://h:1"],
        capture_output=True, text=True, env=e, cwd=ROOT, timeout=60,
    )  # fmt: skip
    assert out.returncode == 2 and "--store" in out.stderr
    out = subprocess.run(
        [sys.executable, "-m", "edge.staff.cli", "--store", STORE, "--role", "cashier", "--broker", "mqtt://h:1",
         "--password", "x"],
        capture_output=True, text=True, env=e, cwd=ROOT, timeout=60,
    )  # fmt: skip
    assert out.returncode == 2  # no credentials on the command line


@contextlib.contextmanager
def secured_broker(dir: Path, staff_devices: int = 0) -> Iterator[str]:
    """``mosquitto -c DIR/mosquitto.conf`` of a broker-setup folder; yields the mqtts:// URL."""
    port = free_port()
    broker_setup(dir, [STORE, "sh_02"], port=port, hostnames=["localhost"], staff_devices=staff_devices)
    reachable_by_others(dir / "passwd")
    proc = subprocess.Popen(
        ["mosquitto", "-c", str(dir / "mosquitto.conf")], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        _wait_port(port, proc, "mosquitto")
        yield f"mqtts://localhost:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


def test_end_to_end_on_the_locked_down_broker_with_real_credentials(tmp_path: Path) -> None:
    setup = tmp_path / "setup"
    db = make_memory(tmp_path / "m.db")
    with secured_broker(setup) as url:
        store_env = env(tmp_path, _read_env(setup / "credentials" / f"{STORE}.env"))
        staff_env = env(tmp_path, _read_env(setup / "credentials" / f"staff-{STORE}.env"))
        # refused credentials: exit 3 at once, with one clear line, for the device and the store
        wrong = {**staff_env, "ADAMM_MQTT_PASSWORD": "wrong"}
        rc, shown, err = Staff(url, wrong, "--json", "--ack", "done", "--once").finish()
        assert rc == 3 and shown == []
        assert "refused the credentials of staff-sh_01" in err and "retrying" not in err
        bad_store = adamm(
            "action", "send", "--db", str(db), "--broker", url, "--role", "cashier", "--type", "alert",
            "--title", "x", environ={**store_env, "ADAMM_MQTT_PASSWORD": "wrong"},
        )  # fmt: skip
        assert bad_store.returncode == 3 and "refused the credentials of sh_01" in bad_store.stderr
        assert "queued in the outbox" in bad_store.stderr
        # the device connects once (its session is kept), goes offline; the action is sent
        register_device(url, staff_env)
        aid = _send(db, url, store_env, "open checkout 3")
        queued = next(a for a in actions(db, store_env).values() if a["action_id"] != aid)
        # the device connects: it gets both (the one queued under wrong credentials went with this
        # send: the outbox sends everything due), acknowledges them as staff-sh_01
        device = Staff(url, staff_env, "--json", "--ack", "done")
        device.wait_listening()
        from actions_helpers import eventually

        report: dict[str, object] = {}

        def both_done() -> bool:
            report.update(adamm_json("action", "sync", "--db", str(db), "--broker", url, environ=store_env))
            return {a["state"] for a in actions(db, store_env).values()} == {"done"}

        assert eventually(both_done)
        device.kill()
        rows = actions(db, store_env)
        assert {rows[aid]["acked_by"], rows[queued["action_id"]]["acked_by"]} == {"staff-sh_01"}
        assert rows[aid]["acked_at"] is not None and rows[aid]["state"] == "done"
        text = json.dumps(rows)
        assert "wrong" not in text


def test_two_devices_of_one_store_both_receive_an_action_and_each_acks(tmp_path: Path) -> None:
    setup = tmp_path / "setup"
    db = make_memory(tmp_path / "m.db")
    with secured_broker(setup, staff_devices=1) as url:
        store_env = env(tmp_path, _read_env(setup / "credentials" / f"{STORE}.env"))
        devices = []
        for user in (f"staff-{STORE}", f"staff-{STORE}-1"):
            e = env(tmp_path, _read_env(setup / "credentials" / f"{user}.env"))
            state = tmp_path / f"{user}.json"  # one state file per device
            devices.append(Staff(url, e, "--json", "--ack", "accepted", "--once", "--state", str(state)))
        for d in devices:
            d.wait_listening()
        aid = _send(db, url, store_env, "two tills open")
        results = [d.finish() for d in devices]
        assert [(rc, [s["action_id"] for s in shown]) for rc, shown, _ in results] == [(0, [aid]), (0, [aid])]
        adamm_json("action", "sync", "--db", str(db), "--broker", url, environ=store_env)
        row = actions(db, store_env)[aid]
        assert row["state"] == "accepted" and row["acked_by"] in (f"staff-{STORE}", f"staff-{STORE}-1")
