"""Helpers of the action and staff tests: a small real memory, the ``adamm`` and ``adamm-staff``
commands run as real processes, and a raw MQTT 5 peer (paho) for what a test must see or send."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

from edge.memory.store import Store

ROOT = Path(__file__).resolve().parents[1]
STORE = "sh_01"


def make_memory(path: Path, n: int = 3) -> Path:
    """A memory of store ``sh_01`` with ``n`` customer_enter events."""
    with Store.open(path, timezone="Asia/Shanghai") as s:
        report = s.import_events(
            [
                {
                    "event_id": f"e{i}",
                    "timestamp": f"2025-11-{i + 1:02d}T10:00:00+08:00",
                    "store_id": STORE,
                    "event_type": "customer_enter",
                    "modality": ["video"],
                    "raw_ref": [f"cam://{i}"],
                }
                for i in range(n)
            ]
        )
        assert report.accepted == n
    return path


def env(tmp: Path, creds: Mapping[str, str] | None = None) -> dict[str, str]:
    """A clean environment: no MQTT variables but ``creds``, the device state under ``tmp``."""
    e = {k: v for k, v in os.environ.items() if not k.startswith(("ADAMM_MQTT_", "ADAMM_CONFIG"))}
    e["XDG_STATE_HOME"] = str(tmp / "xdg")
    e["PYTHONPATH"] = str(ROOT)
    e.update(creds or {})
    return e


def adamm(*args: str, environ: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "edge", *args],
        capture_output=True,
        text=True,
        env=environ,
        cwd=ROOT,
        timeout=timeout,
    )


def adamm_json(*args: str, environ: dict[str, str]) -> Any:
    out = adamm(*args, "--json", environ=environ)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def actions(db: Path, environ: dict[str, str]) -> dict[str, dict[str, Any]]:
    """``adamm actions --json`` keyed by action id."""
    return {a["action_id"]: a for a in adamm_json("actions", "--db", str(db), environ=environ)["actions"]}


class Staff:
    """``adamm-staff`` as a running process; :meth:`wait_listening` returns once it subscribed."""

    def __init__(self, broker: str, environ: dict[str, str], *args: str, role: str = "cashier") -> None:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "edge.staff.cli",
                "-v",
                "--store",
                STORE,
                "--role",
                role,
                "--broker",
                broker,
                *args,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=environ,
            cwd=ROOT,
        )
        self.err: list[str] = []
        self.listening = threading.Event()
        self._reader = threading.Thread(target=self._read_err, daemon=True)
        self._reader.start()

    def _read_err(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.err.append(line)
            if "listening on" in line:
                self.listening.set()

    def wait_listening(self, timeout: float = 30) -> Staff:
        if not self.listening.wait(timeout):
            self.kill()
            raise AssertionError(f"adamm-staff did not subscribe: {''.join(self.err)}")
        return self

    def finish(self, timeout: float = 60) -> tuple[int, list[dict[str, Any]], str]:
        """Wait for it to exit: (exit code, the JSON lines it printed, stderr)."""
        assert self.proc.stdout is not None  # stderr is read by the thread: read stdout alone
        timer = threading.Timer(timeout, self.proc.kill)
        timer.start()
        try:
            out = self.proc.stdout.read()
            self.proc.wait()
        finally:
            timer.cancel()
        self._reader.join(10)
        return self.proc.returncode, [json.loads(x) for x in out.splitlines() if x.strip()], "".join(self.err)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


def register_device(broker: str, environ: dict[str, str], role: str = "cashier") -> None:
    """Connect a device once (so the broker keeps its session and subscription), then kill it."""
    Staff(broker, environ, "--json", "--ack", "done", role=role).wait_listening().kill()


class Peer:
    """A raw MQTT 5 client (plain TCP, anonymous) that records what it receives."""

    def __init__(self, port: int, client_id: str, subscribe: str | None = None) -> None:
        self.got: list[tuple[str, bytes]] = []
        self.c = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id, protocol=mqtt.MQTTv5)
        self.c.on_message = lambda _c, _u, m: self.got.append((m.topic, m.payload))
        ready = threading.Event()
        self.c.on_connect = lambda *_a: ready.set()
        self.c.connect("127.0.0.1", port)
        self.c.loop_start()
        assert ready.wait(10)
        if subscribe:
            subscribed = threading.Event()
            self.c.on_subscribe = lambda *_a: subscribed.set()
            self.c.subscribe(subscribe, qos=1)
            assert subscribed.wait(10)

    def publish(self, topic: str, payload: bytes) -> None:
        self.c.publish(topic, payload, qos=1).wait_for_publish(10)

    def close(self) -> None:
        self.c.loop_stop()
        self.c.disconnect()


def eventually(cond: Callable[[], bool], timeout: float = 30.0) -> bool:
    """Wait until ``cond()`` (a wait for something to happen, never a check of how fast)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


class Tmux:
    """A command in a real terminal (tmux, ``width`` x ``height``, no user config) for the screens'
    terminal tests: ``wait_for`` text, ``keys`` to type, ``gone`` once it quit; killed on exit."""

    def __init__(self, argv: list[str], width: int = 100, height: int = 30) -> None:
        import os
        import shlex

        self.session = f"adamm-term-{os.getpid()}-{id(self)}"
        self.tmux = ["tmux", "-L", self.session, "-f", "/dev/null"]
        env = f"env PYTHONPATH={shlex.quote(str(ROOT))} TERM=xterm-256color"
        run = f"cd {shlex.quote(str(ROOT))} && {env} {shlex.join(argv)}; sleep 30"
        subprocess.run([*self.tmux, "new-session", "-d", "-s", self.session, "-x", str(width), "-y", str(height), run],
                       check=True)  # fmt: skip

    def __enter__(self) -> Tmux:
        return self

    def __exit__(self, *exc: object) -> None:
        subprocess.run([*self.tmux, "kill-server"], capture_output=True)

    def screen(self) -> str:
        return subprocess.run(
            [*self.tmux, "capture-pane", "-p", "-t", self.session], capture_output=True, text=True
        ).stdout

    def keys(self, *keys: str) -> None:
        subprocess.run([*self.tmux, "send-keys", "-t", self.session, *keys], check=True)

    def wait_for(self, text: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            shown = self.screen()
            if text in shown:
                return shown
            time.sleep(0.2)
        raise AssertionError(f"{text!r} never shown:\n{self.screen()}")

    def gone(self, text: str, timeout: float = 30) -> bool:
        """True once ``text`` is no longer on the screen (the app quit)."""
        deadline = time.monotonic() + timeout
        while text in self.screen() and time.monotonic() < deadline:
            time.sleep(0.2)
        return text not in self.screen()
