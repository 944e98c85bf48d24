"""``adamm-hub demo``: a working fleet on this machine in one command (CONTRACT.md section 1).

Owns the fleet demo's boot sequence, each step the real command a user would run:

1. the fleet's description from the simulator (``python -m edge.sim --describe``): N stores
   that differ in city, time zone, zones, weather and planted effects (:mod:`edge.sim.fleet`);
2. a locked-down broker (:func:`hub.broker_setup.broker_setup`: TLS, one user per store, the
   contract's ACL) in ``DIR/broker``, bound to loopback on a free port, run by ``mosquitto -c``;
3. ``adamm-hub serve`` into ``DIR/hub.db`` with the ``hub`` user's credentials;
4. per store, in parallel: its events (``python -m edge.sim --store I``) piped into ``adamm
   import``; at the store that does an action (the simulator planted its effect), ``adamm action
   send --now`` (back-dated), ``adamm-staff --ack done --once --now`` (the staff device's ack at
   the simulated time) and ``adamm action sync`` (the ack recorded); then ``adamm maintain --now``
   (the facts, and the action's measured effect), then ``adamm sync --once`` with the store's own
   credentials, into ``DIR/stores/ID.db``;
5. the commands to ask the fleet, to see the findings across it and to open the console, with the
   ``--now`` after the last simulated day, and the action's measured effect, on stdout; then everything it started is stopped, unless ``keep``.

The hub never imports a store's insides: the simulator and the store commands run as processes.
Progress on stderr (``adamm-hub demo: ...``); each process's own output goes to ``DIR/logs``.
Called by :mod:`hub.cli`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, Any, TextIO

from edge.errors import EnvironmentProblem, UsageError

logger = logging.getLogger(__name__)

#: seconds a server may take to come up (the broker listening, the hub subscribed)
START_TIMEOUT_S = 30.0
#: ``adamm sync --once --timeout``: how long a store waits for the hub's receipts
SYNC_TIMEOUT_S = 120
#: seconds a stopped server may take to exit before it is killed
STOP_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class DemoOptions:
    """What the user asked for."""

    dir: Path
    stores: int = 3
    keep: bool = False
    days: int = 92
    seed: int = 7


@dataclass
class _Started:
    """Every process the demo started, so that it stops them all (or leaves the servers running)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    #: set once the demo stops: a store's thread starts nothing more
    closed: bool = False

    def add(self, proc: subprocess.Popen[bytes]) -> subprocess.Popen[bytes]:
        with self.lock:
            self.procs.append(proc)
            closed = self.closed
        if closed:  # started while the demo was stopping: stop it too
            self.stop(proc)
            raise EnvironmentProblem("the demo is stopping")
        return proc

    def stop(self, proc: subprocess.Popen[bytes]) -> None:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)

    def stop_all(self, keep: tuple[subprocess.Popen[bytes], ...] = ()) -> None:
        with self.lock:
            self.closed = True
            procs = [p for p in self.procs if p not in keep]
        for proc in reversed(procs):  # the last started first: stores, then the hub, then the broker
            self.stop(proc)


def free_port() -> int:
    """A TCP port free on loopback now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _python(module: str, *args: str) -> list[str]:
    return [sys.executable, "-m", module, *args]


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ADAMM_MQTT_")}
    env["PYTHONUNBUFFERED"] = "1"
    return {**env, **(extra or {})}


def _read_env(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in path.read_text().splitlines():
        key, sep, value = line.strip().partition("=")
        if sep:
            out[key] = value
    return out


def _tail(path: Path, lines: int = 3) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(text[-lines:])


def _check_reachable(dir: Path) -> None:
    """Started as root, Mosquitto drops to its own user: it must be able to enter ``dir``."""
    if os.geteuid() != 0:
        return
    for parent in dir.resolve().parents:
        if not os.stat(parent).st_mode & 0o001:
            raise EnvironmentProblem(
                f"the broker's user cannot enter {parent} (run as root, Mosquitto drops to its own user)",
                hint=f"choose a --dir under /tmp, or `chmod o+x {parent}`",
            )


def prepare_dir(dir: Path) -> None:
    """``dir`` is new or holds no fleet yet: a fleet demo never overwrites one."""
    if dir.exists() and not dir.is_dir():
        raise UsageError(f"--dir {dir} is a file; give a folder")
    if (dir / "hub.db").exists() or (dir / "stores").exists():
        raise UsageError(f"--dir {dir} already holds a fleet", hint="pick another --dir, or remove this one")
    for sub in ("stores", "logs"):
        (dir / sub).mkdir(parents=True, exist_ok=True)


def _bind_loopback(conf: Path) -> None:
    """The demo's broker listens on loopback only (broker-setup's listener takes every address)."""
    text = conf.read_text()
    conf.write_text(re.sub(r"^listener (\d+)\s*$", r"listener \1 127.0.0.1", text, count=1, flags=re.M))


def _wait_listening(port: int, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise EnvironmentProblem(f"mosquitto exited with {proc.returncode}: {_tail(log)}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return
        time.sleep(0.05)
    raise EnvironmentProblem(
        f"mosquitto did not listen on {port} within {START_TIMEOUT_S:.0f} s: {_tail(log)}"
    )


def _wait_subscribed(proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise EnvironmentProblem(f"adamm-hub serve exited with {proc.returncode}: {_tail(log)}")
        if "subscribed to" in log.read_text(errors="replace"):
            return
        time.sleep(0.05)
    raise EnvironmentProblem(
        f"adamm-hub serve did not subscribe within {START_TIMEOUT_S:.0f} s: {_tail(log)}"
    )


class FleetDemo:
    """One run of the demo (see the module docstring); :meth:`run` is the boot sequence."""

    def __init__(self, options: DemoOptions, *, out: TextIO, err: TextIO) -> None:
        if not 1 <= options.stores <= 50:
            raise UsageError(f"--stores {options.stores}: give 1 to 50")
        if options.days < 14:
            raise UsageError(f"--days {options.days}: the demo needs at least 14 days")
        self.opt = options
        self.dir = options.dir.resolve()
        self.out, self.err = out, err
        self.started = _Started()
        self.t0 = time.monotonic()
        self.stores: list[dict[str, Any]] = []
        #: per store with an action: its id, and its measured effect as the hub holds it
        self.actions: dict[str, str] = {}
        self.effects: dict[str, dict[str, Any]] = {}
        self.port = 0
        self.broker: subprocess.Popen[bytes] | None = None
        self.hub: subprocess.Popen[bytes] | None = None

    # -- the boot sequence ---------------------------------------------------------------------
    def run(self) -> int:
        prepare_dir(self.dir)

        def on_term(signum: int, frame: Any) -> None:
            raise KeyboardInterrupt  # SIGTERM stops what the demo started, as Ctrl-C does

        previous = signal.signal(signal.SIGTERM, on_term)
        try:
            self.stores = self.describe_fleet()
            self.start_broker()
            self.start_hub()
            self.fill_stores()
            totals = self.check_hub()
            self.read_effects()
            self.print_commands(totals)
        except KeyboardInterrupt:
            self.say("interrupted: stopping what it started")
            raise
        finally:
            signal.signal(signal.SIGTERM, previous)
            ok = sys.exc_info()[0] is None
            keep = (self.broker, self.hub) if self.opt.keep and ok else ()
            self.started.stop_all(keep=tuple(p for p in keep if p is not None))
        if self.opt.keep:
            self.print_keep()
        self.say(f"done in {time.monotonic() - self.t0:.1f} s")
        return 0

    def say(self, text: str) -> None:
        print(f"adamm-hub demo: {text}", file=self.err, flush=True)

    def describe_fleet(self) -> list[dict[str, Any]]:
        args = ["--stores", str(self.opt.stores), "--days", str(self.opt.days), "--seed", str(self.opt.seed)]
        done = subprocess.run(
            _python("edge.sim", *args, "--describe"), capture_output=True, text=True, env=_env(), timeout=60
        )
        if done.returncode != 0:
            raise EnvironmentProblem(f"the simulator failed: {done.stderr.strip()[-500:]}")
        stores: list[dict[str, Any]] = json.loads(done.stdout)
        self.say(
            f"{len(stores)} simulated stores, {self.opt.days} days each ({stores[0]['start']} to "
            f"{stores[0]['last_day']}), in {self.dir}: "
            + ", ".join(f"{s['store_id']} ({s['city']['en']})" for s in stores)
        )
        return stores

    def start_broker(self) -> None:
        from hub.broker_setup import broker_setup

        bdir = self.dir / "broker"
        _check_reachable(self.dir)
        self.port = free_port()
        broker_setup(bdir, [s["store_id"] for s in self.stores], port=self.port, hostnames=["localhost"])
        _bind_loopback(bdir / "mosquitto.conf")
        log = self.dir / "logs" / "mosquitto.log"
        exe = _which("mosquitto")
        with log.open("ab") as f:
            self.broker = self.started.add(
                subprocess.Popen(
                    [exe, "-c", str(bdir / "mosquitto.conf")],
                    stdin=subprocess.DEVNULL,
                    stdout=f,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
        _wait_listening(self.port, self.broker, log)
        self.say(
            f"broker (adamm-hub broker-setup, TLS, {len(self.stores)} store users) on {self.url} "
            f"(pid {self.broker.pid})"
        )

    @property
    def url(self) -> str:
        return f"mqtts://127.0.0.1:{self.port}"

    def start_hub(self) -> None:
        log = self.dir / "logs" / "hub-serve.log"
        creds = _read_env(self.dir / "broker" / "credentials" / "hub.env")
        with log.open("ab") as f:
            self.hub = self.started.add(
                subprocess.Popen(
                    _python("hub", "-v", "serve", "--db", str(self.dir / "hub.db"), "--broker", self.url),
                    stdin=subprocess.DEVNULL,
                    stdout=f,
                    stderr=subprocess.STDOUT,
                    env=_env(creds),
                    start_new_session=True,
                )
            )
        _wait_subscribed(self.hub, log)
        self.say(f"adamm-hub serve into {self.dir / 'hub.db'} (pid {self.hub.pid})")

    def fill_stores(self) -> None:
        workers = min(len(self.stores), max(2, os.cpu_count() or 2))
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="demo-store")
        try:
            futures = [pool.submit(self.fill_store, i, s) for i, s in enumerate(self.stores, start=1)]
            for fut in futures:
                fut.result()
        finally:
            pool.shutdown(wait=False, cancel_futures=True)

    def fill_store(self, index: int, store: dict[str, Any]) -> None:
        sid = store["store_id"]
        db = self.dir / "stores" / f"{sid}.db"
        log_path = self.dir / "logs" / f"{sid}.log"
        t = time.monotonic()
        with log_path.open("ab") as log:
            sim_args = [
                "--stores",
                str(self.opt.stores),
                "--days",
                str(self.opt.days),
                "--seed",
                str(self.opt.seed),
            ]
            sim = self.started.add(
                subprocess.Popen(
                    _python("edge.sim", *sim_args, "--store", str(index)),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=log,
                    env=_env(),
                )
            )
            imported = self._step(
                log,
                log_path,
                f"adamm import ({sid})",
                _python("edge", "import", "--db", str(db), "--tz", store["timezone"], "--json", "-"),
                stdin=sim.stdout,
                after_start=lambda: sim.stdout.close() if sim.stdout else None,
            )
            if sim.wait() != 0:
                raise EnvironmentProblem(f"the simulator failed for {sid}: {_tail(log_path)}")
            self.say(
                f"{sid} ({store['city']['en']}, {store['timezone']}, zones {', '.join(store['zones'])}, "
                f"{store['climate']} weather): imported {imported['accepted']} events "
                f"in {time.monotonic() - t:.1f} s"
            )
            if store.get("action"):
                self.do_action(log, log_path, store, db)
            report = self._step(
                log,
                log_path,
                f"adamm maintain ({sid})",
                _python("edge", "maintain", "--db", str(db), "--now", store["now"], "--json"),
            )
            facts = report.get("facts", {}).get("current", 0)
            self.say(f"{sid}: {facts} facts learned (adamm maintain)")
            creds = _read_env(self.dir / "broker" / "credentials" / f"{sid}.env")
            counts = self._step(
                log,
                log_path,
                f"adamm sync ({sid})",
                _python(
                    "edge",
                    "sync",
                    "--db",
                    str(db),
                    "--broker",
                    self.url,
                    "--once",
                    "--json",
                    "--timeout",
                    str(SYNC_TIMEOUT_S),
                ),  # fmt: skip
                env=creds,
            )
            self.say(
                f"{sid}: {counts['confirmed']} summaries confirmed by the hub (adamm sync) "
                f"after {time.monotonic() - t:.1f} s"
            )

    def do_action(self, log: IO[bytes], log_path: Path, store: dict[str, Any], db: Path) -> None:
        """The store's action, as it happens in a store: sent to its staff role (``adamm action
        send``, back-dated to the simulated evening before), acknowledged done by a staff device at
        the store's opening (``adamm-staff --ack done --once``), the ack recorded (``adamm action
        sync``); ``adamm maintain`` then measures it."""
        sid, action = store["store_id"], store["action"]
        creds = _read_env(self.dir / "broker" / "credentials" / f"{sid}.env")
        where = [
            f"{k}={','.join(map(str, v)) if isinstance(v, list) else v}" for k, v in action["where"].items()
        ]
        send = ["action", "send", "--db", str(db), "--broker", self.url, "--role", action["role"], "--type",
                action["type"], "--title", action["title"], "--metric", action["metric"],
                *[a for w in where for a in ("--where", w)], "--now", action["issued_at"], "--json"]  # fmt: skip
        sent = self._step(log, log_path, f"adamm action send ({sid})", _python("edge", *send), env=creds)
        self.actions[sid] = str(sent["action_id"])
        staff = _read_env(self.dir / "broker" / "credentials" / f"staff-{sid}.env")
        ack = ["--store", sid, "--role", action["role"], "--broker", self.url, "--ack", "done", "--once", "--json",
               "--now", action["done_at"], "--state", str(self.dir / "logs" / f"staff-{sid}.json")]  # fmt: skip
        self._step(log, log_path, f"adamm-staff ({sid})", _python("edge.staff.cli", *ack), env=staff)
        synced = self._step(
            log,
            log_path,
            f"adamm action sync ({sid})",
            # the ack already waits in the store's session: a second's listening records it
            _python(
                "edge", "action", "sync", "--db", str(db), "--broker", self.url, "--listen", "1", "--json"
            ),
            env=creds,
        )
        recorded = int((synced.get("acks") or {}).get("recorded", 0))
        self.say(
            f"{sid}: action {sent['action_id'][:12]} '{action['title']}' sent to {action['role']} "
            f"(adamm action send), acknowledged done at {action['done_at']} (adamm-staff), "
            f"{recorded} ack recorded (adamm action sync)"
        )

    def read_effects(self) -> None:
        """Each action's measured effect, as the hub holds it: the ``action_effect`` fact its store's
        ``adamm maintain`` made and ``adamm sync`` sent (printed at the end)."""
        from hub.db import open_hub
        from hub.fleet import effect_facts

        db = open_hub(str(self.dir / "hub.db"))
        try:
            facts = effect_facts(db)
        finally:
            db.close()
        for sid, action_id in self.actions.items():
            fact = facts.get(action_id)
            if fact is None:
                self.say(
                    f"{sid}: the hub holds no measured effect of action {action_id[:12]} (log: {self.dir / 'logs'})"
                )
                continue
            self.effects[sid] = {"state": "measured", **fact}

    def _step(
        self,
        log: IO[bytes],
        log_path: Path,
        what: str,
        cmd: list[str],
        *,
        stdin: IO[bytes] | int | None = subprocess.DEVNULL,
        env: dict[str, str] | None = None,
        after_start: Callable[[], object] | None = None,
    ) -> dict[str, Any]:
        """Run one store command (its stderr to the store's log); its ``--json`` stdout, parsed."""
        log.write(f"$ {shlex.join(cmd)}\n".encode())
        log.flush()
        proc = self.started.add(
            subprocess.Popen(cmd, stdin=stdin, stdout=subprocess.PIPE, stderr=log, env=_env(env))
        )
        if after_start is not None:
            after_start()
        stdout, _ = proc.communicate()
        if proc.returncode != 0:
            raise EnvironmentProblem(
                f"{what} exited with {proc.returncode}: {_tail(log_path)} (log: {log_path})"
            )
        parsed: dict[str, Any] = json.loads(stdout.decode() or "{}")
        return parsed

    def check_hub(self) -> dict[str, Any]:
        """The hub's own account of what it holds: every store, with its days and summaries."""
        from hub.db import open_hub
        from hub.status import hub_status

        db = open_hub(str(self.dir / "hub.db"))
        try:
            status = hub_status(db)
        finally:
            db.close()
        have = {s["store_id"] for s in status["stores"]}
        missing = [s["store_id"] for s in self.stores if s["store_id"] not in have]
        if missing:
            raise EnvironmentProblem(
                f"the hub holds nothing of {', '.join(missing)} (log: {self.dir / 'logs'})"
            )
        summaries = sum(sum(s["counts"].values()) for s in status["stores"])
        self.say(
            f"the hub holds {summaries} summaries of {len(have)} stores; parked {status['parked']['count']}"
        )
        return status

    # -- what the user does next ---------------------------------------------------------------
    def now(self) -> str:
        """``--now`` for the fleet: the latest of the stores' midnights after their last day."""
        return max(self.stores, key=lambda s: datetime.fromisoformat(s["now"]))["now"]

    def print_commands(self, status: dict[str, Any]) -> None:
        hub_db = shlex.quote(str(self.dir / "hub.db"))
        now = self.now()
        first = self.stores[0]
        w = max(len(s["store_id"]) for s in self.stores)
        lines = [
            f"A fleet of {len(self.stores)} simulated stores, {first['start']} to {first['last_day']}, "
            f"synced into the hub {self.dir / 'hub.db'}:",
        ]
        for s in self.stores:
            lines.append(
                f"  {s['store_id']:<{w}}  {s['city']['en']} ({s['timezone']}), zones {', '.join(s['zones'])}; "
                f"{s['climate']} weather; {s['customers_per_day']} visitors a day"
            )
        lines += [
            "",
            f"Ask across the stores (relative times such as 'last month' count back from --now {now}):",
            f'  adamm-hub ask --db {hub_db} --now {now} "上个月哪个门店的销售额最高？"',
            f'  adamm-hub ask --db {hub_db} --now {now} "Which store\'s rainy-day order value rose most?"',
            f'  adamm-hub ask --db {hub_db} --now {now} "Which store had the highest conversion rate last month?"',
            "The HQ console, and what the hub holds:",
            f"  adamm-hub console --db {hub_db} --now {now}",
            f"  adamm-hub status --db {hub_db}",
            "Each store's findings tested in every store (holds in k of n, pooled effect, I²):",
            f"  adamm-hub facts --db {hub_db} --now {now}",
            *self.effect_lines(),
            "One store's own memory:",
            f"  adamm ask --db {shlex.quote(str(self.dir / 'stores' / (first['store_id'] + '.db')))} "
            f'--now {first["now"]} "上周的客单价是多少？"',
        ]
        self.out.write("\n".join(lines) + "\n")
        self.out.flush()

    def effect_lines(self) -> list[str]:
        """One action's measured effect (``adamm maintain`` measured it; the hub holds its fact),
        beside what was planted, and the command that shows it."""
        from edge.presentation.effects import effect_text

        lines: list[str] = []
        for s in self.stores:
            got = self.effects.get(s["store_id"])
            if got is None:
                continue
            planted = s["action"]["planted_effect"]
            db = shlex.quote(str(self.dir / "stores" / f"{s['store_id']}.db"))
            lines += [
                f"One action's measured effect ({s['store_id']}: '{s['action']['title']}', done "
                f"{s['action']['done_at']}; planted {planted * 100:+.0f}%):",
                f"  {effect_text(got, 'en')}",
                f"  adamm actions --db {db} --now {s['now']}",
            ]
        return lines

    def print_keep(self) -> None:
        assert self.broker is not None and self.hub is not None
        bdir = self.dir / "broker"
        self.out.write(
            "\n".join(
                [
                    "",
                    f"Still running (--keep): the broker on {self.url} (pid {self.broker.pid}) and "
                    f"adamm-hub serve (pid {self.hub.pid}). A store syncs again with:",
                    f"  set -a; . {bdir / 'credentials' / (self.stores[0]['store_id'] + '.env')}; set +a",
                    f"  adamm sync --db {self.dir / 'stores' / (self.stores[0]['store_id'] + '.db')} "
                    f"--broker {self.url} --once",
                    "Stop them with:",
                    f"  kill {self.hub.pid} {self.broker.pid}",
                ]
            )
            + "\n"
        )
        self.out.flush()


def _which(name: str) -> str:
    import shutil

    for found in (shutil.which(name), f"/usr/sbin/{name}"):
        if found and os.path.exists(found):
            return found
    raise EnvironmentProblem(
        f"{name} is not installed", hint="install Mosquitto (Debian: apt install mosquitto)"
    )


def run_demo(options: DemoOptions, *, out: TextIO, err: TextIO) -> int:
    """``adamm-hub demo``: see the module docstring."""
    return FleetDemo(options, out=out, err=err).run()
