"""A broker already running a ``broker-setup`` folder reloads what a rerun wrote.

``adamm-hub broker-setup`` run again (new stores, new staff devices) rewrites the password file
and the ACL; a running Mosquitto reads them again on SIGHUP, so the new stores' credentials work
at once. :func:`running_brokers` finds the Mosquitto processes started with ``-c
DIR/mosquitto.conf`` (from ``/proc``); :func:`reload` signals them, or, where it cannot (another
user's process, no ``/proc``), says the exact command. Called by :mod:`hub.cli` after a rerun.
"""

from __future__ import annotations

import logging
import os
import signal
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Reload:
    """What :func:`reload` did: the pids it signalled, and the command for those it could not."""

    reloaded: tuple[int, ...] = ()
    command: str | None = None

    def sentence(self) -> str | None:
        """One line for the user, or None when no broker runs this set-up."""
        parts = []
        if self.reloaded:
            pids = ", ".join(str(p) for p in self.reloaded)
            parts.append(f"the running broker (pid {pids}) reloaded the users and the ACL")
        if self.command:
            parts.append(f"reload the running broker with: {self.command}")
        return "; ".join(parts) or None


def _args(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [a.decode("utf-8", "replace") for a in raw.split(b"\0") if a]


def running_brokers(conf: Path, proc: Path = Path("/proc")) -> list[int]:
    """Pids of the Mosquitto processes started with ``-c conf`` (the same file, however named)."""
    try:
        target = conf.resolve()
        entries = [p.name for p in proc.iterdir() if p.name.isdigit()]
    except OSError:
        return []
    found = []
    for name in entries:
        args = _args(int(name))
        if not args or not os.path.basename(args[0]).startswith("mosquitto"):
            continue
        for flag, value in zip(args, args[1:], strict=False):
            if flag in ("-c", "--config-file"):
                try:
                    cwd = Path(os.readlink(f"/proc/{name}/cwd"))
                except OSError:
                    cwd = Path.cwd()
                if (cwd / value).resolve() == target:
                    found.append(int(name))
    return sorted(found)


def reload(dir: Path) -> Reload:
    """SIGHUP every broker that runs ``dir``'s set-up; the command for any it may not signal."""
    pids = running_brokers(dir / "mosquitto.conf")
    done: list[int] = []
    refused: list[int] = []
    for pid in pids:
        try:
            os.kill(pid, signal.SIGHUP)
            done.append(pid)
        except ProcessLookupError:  # it ended meanwhile: nothing to reload
            continue
        except PermissionError:
            refused.append(pid)
    command = None
    if refused:
        command = f"sudo kill -HUP {' '.join(str(p) for p in refused)}"
    elif not pids and not Path("/proc").is_dir():  # cannot look: say what would do it
        command = "kill -HUP <the pid of mosquitto -c " + str(dir.resolve() / "mosquitto.conf") + ">"
    if done:
        logger.info("sent SIGHUP to the broker (pid %s)", ", ".join(map(str, done)))
    return Reload(tuple(done), command)
