"""``adamm run``: start the edge daemon (cameras, microphones, POS -> events in the store's memory).

``--validate-config`` checks the file and reports every problem, one ``FILE: key.path: reason``
line each on stderr (exit 2); without it a bad config stops the command the same way before
anything starts.
``--until-eof`` replays file sources to their end and exits. ``--jsonl FILE`` writes the events as
MEV JSON Lines (for ``adamm import``) instead of into the store. SIGINT/SIGTERM stop cleanly.
Logs go to stderr; ``--json`` prints the run summary on stdout.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
from dataclasses import asdict
from pathlib import Path
from typing import Any

from edge.errors import UsageError

logger = logging.getLogger(__name__)


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "run",
        help="run the edge daemon (capture, segmentation, encoders -> memory)",
        description="Run the store box daemon: cameras and microphones in, MEV events into the memory.",
    )
    p.add_argument("--config", help="daemon TOML file (default: $ADAMM_CONFIG); see config/edge.example.toml")
    p.add_argument(
        "--validate-config", action="store_true", help="check the config, report every error, exit"
    )
    p.add_argument("--until-eof", action="store_true", help="process file sources to their end, then exit")
    p.add_argument(
        "--jsonl", metavar="FILE", help="write events to this JSON Lines file instead of the store"
    )
    p.add_argument("--json", action="store_true", help="print the run summary as JSON on stdout")
    p.set_defaults(func=run)


class JsonlSink:
    """Events as MEV JSON Lines (one per line, appended); heartbeats are only logged."""

    def __init__(self, path: str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._f = self.path.open("a", encoding="utf-8")
        self._lock = threading.Lock()

    def write_events(self, events: list[dict[str, Any]]) -> int:
        with self._lock:
            for ev in events:
                self._f.write(json.dumps(ev, ensure_ascii=False, sort_keys=True) + "\n")
            self._f.flush()
        return len(events)

    def write_components(self, rows: list[dict[str, Any]]) -> None:
        for r in rows:
            logger.debug("component %s: %s %s", r["name"], r["state"], r["detail_json"])

    @property
    def _settings_path(self) -> Path:
        return self.path.with_name(self.path.name + ".settings.json")

    def load_setting(self, key: str) -> str | None:
        """Positions (the POS tail offset) live next to the output: ``<file>.settings.json``."""
        try:
            value = json.loads(self._settings_path.read_text(encoding="utf-8")).get(key)
        except (OSError, ValueError):
            return None
        return None if value is None else str(value)

    def save_setting(self, key: str, value: str) -> None:
        try:
            data = json.loads(self._settings_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        data[key] = value
        tmp = self._settings_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, sort_keys=True), encoding="utf-8")
        tmp.replace(self._settings_path)

    def close(self) -> None:
        self._f.close()


def run(args: argparse.Namespace) -> int:
    from edge.config import ConfigFileError, check_sources, load_daemon_config

    path = args.config or os.environ.get("ADAMM_CONFIG")
    if not path:
        raise UsageError(
            "no config file", hint="pass --config config/edge.toml (start from config/edge.example.toml)"
        )
    cfg = load_daemon_config(path)  # ConfigFileError: every problem, one line each (exit 2)
    problems = check_sources(cfg, str(path))
    if problems:
        raise ConfigFileError(problems)
    if args.validate_config:
        print(
            f"adamm run: {path} is valid ({len(cfg.cameras)} cameras, {len(cfg.microphones)} microphones, "
            f"POS {'on' if cfg.pos.enabled else 'off'})",
            file=sys.stderr,
        )
        return 0
    from edge.daemon.app import AdammDaemon  # only once the config is known to be good

    sink = JsonlSink(args.jsonl) if args.jsonl else None
    daemon = AdammDaemon(cfg, until_eof=args.until_eof, sink=sink)

    def on_signal(signum: int, _frame: Any) -> None:
        logger.warning("received %s: stopping", signal.Signals(signum).name)
        daemon.request_stop()

    previous = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, on_signal)
    try:
        summary = daemon.start()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if sink is not None:
            sink.close()
    if args.json:
        print(json.dumps(asdict(summary), sort_keys=True, default=str))
    return 0 if summary.events_failed == 0 else 3
