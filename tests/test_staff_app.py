"""Pilot tests of ``adamm-staff``'s terminal app (edge.staff.app) over a fake device: no broker,
the same :class:`edge.staff.app.StaffSource` calls the real device (edge.staff.cli.Device)
answers. Keys act at once and say what they did; local times with the zone; short ids; text
wrapped between words; one language."""

from __future__ import annotations

import asyncio
import os
import queue
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from brokers import mosquitto_available
from test_tui import foreign_words, screen_text
from textual.widgets import DataTable, Static

from edge.presentation.text import display_width
from edge.staff.app import StaffApp
from edge.staff.view import action_lines, wrap

SUMMARY_EN = (
    "Read as: the average order value compared by weather over the last 30 days. "
    "Rainy days' average order value is 126.40, higher than sunny days' 95.10 (33% higher, p<0.001)."
)
SUMMARY_ZH = (
    "计算的是客单价的对比，时间 2025-11-01 至 2025-11-30，按天气分组。雨天客单价 126.40，比晴天高 33%。"
)


class FakeDevice:
    """Actions handed to the app one by one; acknowledgements recorded."""

    store = "sh_01"
    role = "cashier"

    def __init__(self, actions: list[dict[str, Any]]) -> None:
        self.inbox: queue.Queue[dict[str, Any]] = queue.Queue()
        for a in actions:
            self.inbox.put(a)
        self.acks: list[tuple[str, str]] = []

    def next_action(self, timeout: float = 0.5) -> dict[str, Any] | None:
        try:
            return self.inbox.get(timeout=timeout)
        except queue.Empty:
            return None

    def ack(self, action_id: str, ack_state: str) -> str:
        self.acks.append((action_id, ack_state))
        return "2025-12-10T08:05:00+00:00"


def action(n: int, summary: str, title: str) -> dict[str, Any]:
    return {
        "action_id": f"{n:02d}c3a9f1e2b74d5a6e8f90",
        "type": "work_order",
        "params": {"title": title},
        "summary": summary,
        "evidence": ["e1", "e2"],
        "confidence": 0.82,
        "issued_at": "2025-12-10T08:00:00+00:00",
        "expires_at": "2025-12-10T12:00:00+00:00",
        "store_id": "sh_01",
        "role": "cashier",
    }


async def _until(app: StaffApp, pilot: Any, ok: Any) -> None:
    for _ in range(50):
        await pilot.pause(0.05)
        if ok():
            return
    raise AssertionError("timed out")


def _drive(lang: str, summary: str, steps: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("TZ", "Asia/Shanghai")  # the device stands in a Shanghai store
    titles = ("加开 3 号收银台", "补货 4 号货架") if lang == "zh" else ("Open checkout 3", "Restock shelf 4")
    device = FakeDevice([action(1, summary, titles[0]), action(2, summary, titles[1])])

    async def go() -> Any:
        app = StaffApp(device, lang=lang)
        async with app.run_test(size=(100, 30)) as pilot:
            table = app.query_one("#actions", DataTable)
            await _until(app, pilot, lambda: table.row_count == 2)
            return await steps(app, pilot, table, device)

    return asyncio.run(go())


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_single_keys_act_at_once_and_say_what_they_did(lang: str, monkeypatch: pytest.MonkeyPatch) -> None:
    summary = SUMMARY_ZH if lang == "zh" else SUMMARY_EN

    async def steps(app: StaffApp, pilot: Any, table: DataTable[Any], device: FakeDevice) -> dict[str, Any]:
        out: dict[str, Any] = {"ids": [str(v) for v in table.get_column("id")]}
        out["issued"] = [str(v) for v in table.get_column("issued")]
        out["screen"] = screen_text(app)
        await pilot.press("a")  # the newest (under the cursor): accepted, no Enter
        await _until(app, pilot, lambda: len(device.acks) == 1)
        await pilot.pause()
        out["said_a"] = str(app.query_one("#said", Static).render())
        await pilot.press("a")  # again: nothing sent, and it says so
        await pilot.pause()
        out["said_again"] = str(app.query_one("#said", Static).render())
        await pilot.press("d")
        await _until(app, pilot, lambda: len(device.acks) == 2)
        await pilot.pause()
        out["said_d"] = str(app.query_one("#said", Static).render())
        await pilot.press("up", "r")  # the first one: rejected
        await _until(app, pilot, lambda: len(device.acks) == 3)
        await pilot.pause()
        out["states"] = [str(v) for v in table.get_column("state")]
        out["acks"] = list(device.acks)
        out["screen_after"] = screen_text(app)
        return out

    out = _drive(lang, summary, steps, monkeypatch)
    first, second = (a["action_id"] for a in (action(1, "", ""), action(2, "", "")))
    assert out["ids"] == [first[:8], second[:8]]  # short ids
    assert out["issued"] == ["2025-12-10 16:00:00 CST"] * 2  # local, zone said
    assert out["acks"] == [(second, "accepted"), (second, "done"), (first, "rejected")]
    if lang == "zh":
        assert out["said_a"] == f"动作 {second[:8]}：已接受" and "已是「已接受」" in out["said_again"]
        assert out["said_d"] == f"动作 {second[:8]}：已完成"
        assert out["states"] == ["已拒绝", "已完成"]
    else:
        assert out["said_a"] == f"Action {second[:8]}: accepted" and "already accepted" in out["said_again"]
        assert out["said_d"] == f"Action {second[:8]}: done"
        assert out["states"] == ["rejected", "done"]
    for screen in (out["screen"], out["screen_after"]):
        assert not foreign_words(screen, lang, {"cst", "adamm-staff"}), screen
        assert first not in screen  # whole ids are for JSON, not for people


def test_text_wraps_between_words() -> None:
    lines = wrap(SUMMARY_EN, 30)
    assert all(len(line) <= 30 for line in lines)
    assert " ".join(lines) == SUMMARY_EN  # no word was broken
    zh = wrap(SUMMARY_ZH, 20)
    assert len(zh) > 1 and all(display_width(line) <= 20 for line in zh)
    for number in ("2025-11-01", "2025-11-30", "126.40", "33%"):  # never split
        assert any(number in line for line in zh), (number, zh)
    shown = action_lines(action(1, SUMMARY_EN, "Open checkout 3"), "en", "Asia/Shanghai", 40)
    assert shown[0] == "[work order] Open checkout 3"
    assert " ".join(x.strip() for x in shown[1:-3]) == SUMMARY_EN
    assert shown[-1].startswith("  id 01c3a9f1")
    assert "issued 2025-12-10 16:00:00 CST, expires 2025-12-10 20:00:00 CST" in shown[-2]


def test_the_app_runs_only_for_a_person_at_a_terminal() -> None:
    """``--json``, ``--ack``, ``--plain`` or a pipe keep the contract's line modes."""
    import io

    from edge.staff.cli import build_parser, interactive

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    base = ["--store", "sh_01", "--role", "cashier", "--broker", "mqtt://127.0.0.1:1883"]
    parse = build_parser().parse_args
    assert interactive(parse(base), Tty(), Tty())
    for extra in (["--json"], ["--ack", "done"], ["--plain"]):
        assert not interactive(parse(base + extra), Tty(), Tty()), extra
    assert not interactive(parse(base), io.StringIO(), Tty())  # keys piped in
    assert not interactive(parse(base), Tty(), io.StringIO())  # output piped on


@pytest.mark.skipif(
    shutil.which("tmux") is None or not mosquitto_available(), reason="needs tmux and mosquitto"
)
def test_the_real_device_in_a_terminal_acts_on_one_key(tmp_path: Path) -> None:
    """``adamm-staff`` in a real terminal (tmux, 100x30) on a real broker: an action sent by the
    store shows with a short id and a local time; ``d`` alone marks it done at the store."""
    from actions_helpers import (
        ROOT,
        STORE,
        actions,
        adamm_json,
        env,
        eventually,
        make_memory,
        register_device,
    )
    from brokers import running_mosquitto

    db = make_memory(tmp_path / "m.db")
    e = {**env(tmp_path), "TZ": "Asia/Shanghai", "LANG": "en_US.UTF-8"}
    session = f"adamm-staff-{os.getpid()}"
    with running_mosquitto(tmp_path / "broker") as b:
        register_device(b.url, e)
        sent = adamm_json(
            "action", "send", "--db", str(db), "--broker", b.url, "--role", "cashier",
            "--type", "work_order", "--title", "restock shelf 4", environ=e,
        )  # fmt: skip
        aid = str(sent["action_id"])
        command = shlex.join([sys.executable, "-m", "edge.staff.cli", "--store", STORE, "--role", "cashier",
                              "--broker", b.url, "--by", "ann"])  # fmt: skip
        exports = " ".join(
            f"{k}={shlex.quote(v)}"
            for k, v in e.items()
            if k in ("TZ", "LANG", "PYTHONPATH", "XDG_STATE_HOME", "PATH", "HOME")
        )
        tmux = ["tmux", "-L", session, "-f", "/dev/null"]  # no user config
        subprocess.run([*tmux, "new-session", "-d", "-s", session, "-x", "100", "-y", "30",
                        f"cd {shlex.quote(str(ROOT))} && env {exports} {command}"], check=True)  # fmt: skip

        def screen() -> str:
            return subprocess.run(
                [*tmux, "capture-pane", "-p", "-t", session], capture_output=True, text=True
            ).stdout

        try:
            assert eventually(lambda: "restock shelf 4" in screen()), screen()
            shown = screen()
            assert aid[:8] in shown and aid not in shown  # a short id
            assert "CST" in shown and not re.search(r"[\u4e00-\u9fff]", shown)
            subprocess.run([*tmux, "send-keys", "-t", session, "d"], check=True)
            assert eventually(lambda: f"Action {aid[:8]}: done" in screen()), screen()

            def done() -> bool:
                adamm_json("action", "sync", "--db", str(db), "--broker", b.url, environ=e)
                return actions(db, e)[aid]["state"] == "done"

            assert eventually(done), screen()
            assert actions(db, e)[aid]["acked_by"] == "ann"
        finally:
            subprocess.run([*tmux, "kill-server"], capture_output=True)
