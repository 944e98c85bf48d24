"""POS intake: a drop folder of JSON Lines / CSV transaction files becomes ``purchase`` events.

The POS (or an export job) writes ``*.jsonl`` or ``*.csv`` files into ``pos.drop_folder``; each
file is read once, every row becomes one MEV of type ``purchase`` (``raw_ref``
``pos://<terminal>/<bill_id>``), and the file moves to ``done/`` (rows that fail are logged with
file and line and counted; the file then goes to ``failed/`` for a person to look at). Row keys:
``bill_id`` and ``timestamp`` (RFC 3339; without an offset it is store-local time) are required;
``order_amount``, ``product_id``, ``product_category``, ``gross_margin``, ``staff_id``, ``terminal``
and any other scalar column go into ``stats``. Started by the daemon; also usable on its own via
:func:`parse_file`.
"""

from __future__ import annotations

import csv
import json
import logging
import queue
import re
import threading
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from edge.capture.base import EndOfStream
from edge.daemon.config import DaemonConfig
from edge.segmentation.mev import iso_utc

logger = logging.getLogger(__name__)

NUMERIC = {"order_amount", "gross_margin", "quantity", "unit_price", "discount"}
_SAFE = re.compile(r"[^A-Za-z0-9_.:-]")


class PosRowError(ValueError):
    pass


def row_to_event(row: dict[str, Any], *, store_id: str, tz: ZoneInfo, terminal: str) -> dict[str, Any]:
    bill = str(row.get("bill_id") or "").strip()
    if not bill:
        raise PosRowError("bill_id is missing")
    raw_ts = str(row.get("timestamp") or "").strip()
    if not raw_ts:
        raise PosRowError("timestamp is missing")
    try:
        when = datetime.fromisoformat(raw_ts.replace("Z", "+00:00"))
    except ValueError:
        raise PosRowError(f"timestamp {raw_ts!r} is not an ISO date-time") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=tz)
    term = str(row.get("terminal") or terminal)
    stats: dict[str, Any] = {}
    for key, value in row.items():
        if key in ("bill_id", "timestamp", "terminal", "text") or value in (None, ""):
            continue
        if key in NUMERIC:
            try:
                stats[key] = float(value)
            except (TypeError, ValueError):
                raise PosRowError(f"{key} = {value!r} is not a number") from None
            if key == "order_amount" and stats[key] < 0:
                raise PosRowError(f"order_amount = {value!r} is negative")
        elif isinstance(value, str | int | float | bool):
            stats[key] = value
    stats["bill_id"] = bill
    stats["terminal"] = term
    ev: dict[str, Any] = {
        "event_id": _SAFE.sub("_", f"pos.{term}.{bill}")[:128],
        "timestamp": iso_utc(when.timestamp()),
        "store_id": store_id,
        "source": term,
        "event_type": "purchase",
        "modality": ["pos"],
        "stats": stats,
        "raw_ref": [f"pos://{term}/{bill}"],
    }
    if row.get("text"):
        ev["text"] = str(row["text"])
    return ev


def parse_file(path: Path, *, store_id: str, tz: ZoneInfo, terminal: str) -> tuple[list[dict[str, Any]], int]:
    """(events, bad rows) of one JSONL or CSV file."""
    events: list[dict[str, Any]] = []
    bad = 0
    with path.open(encoding="utf-8", newline="") as f:
        if path.suffix.lower() == ".csv":
            rows: Any = ((i + 2, r) for i, r in enumerate(csv.DictReader(f)))
        else:
            rows = ((i + 1, line) for i, line in enumerate(f) if line.strip())
        for lineno, raw in rows:
            try:
                if isinstance(raw, str):
                    try:
                        raw = json.loads(raw)
                    except json.JSONDecodeError as exc:
                        raise PosRowError(f"not JSON ({exc.msg})") from None
                    if not isinstance(raw, dict):
                        raise PosRowError("not a JSON object")
                events.append(row_to_event(raw, store_id=store_id, tz=tz, terminal=terminal))
            except PosRowError as exc:
                bad += 1
                logger.warning("%s:%d: skipped POS row: %s", path, lineno, exc)
    return events, bad


class PosWatcher(threading.Thread):
    kind = "pos"

    def __init__(
        self, cfg: DaemonConfig, out: queue.Queue[Any], stop: threading.Event, *, until_eof: bool
    ) -> None:
        super().__init__(name="pos", daemon=True)
        assert cfg.pos.drop_folder
        self.cfg = cfg
        self.folder = Path(cfg.pos.drop_folder).expanduser()
        self.out = out
        self.stop_event = stop
        self.until_eof = until_eof
        self.tz = ZoneInfo(cfg.timezone)
        self.files = 0
        self.events = 0
        self.bad_rows = 0
        self.state = "starting"
        self.source_id = "pos"

    def run(self) -> None:
        self.state = "running"
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            while True:
                self.scan()
                if self.until_eof or self.stop_event.wait(self.cfg.pos.poll_seconds):
                    break
        except Exception:
            self.state = "error"
            logger.exception("POS intake failed")
        finally:
            if self.state != "error":
                self.state = "ended"
            self.out.put(EndOfStream("pos", self.state))

    def scan(self) -> None:
        for path in sorted(self.folder.iterdir()):
            if not path.is_file() or path.suffix.lower() not in (".jsonl", ".csv"):
                continue
            events, bad = parse_file(
                path, store_id=self.cfg.store_id, tz=self.tz, terminal=self.cfg.pos.terminal
            )
            for ev in events:
                self.out.put(ev)
            self.files += 1
            self.events += len(events)
            self.bad_rows += bad
            target = self.folder / ("failed" if bad else "done")
            target.mkdir(exist_ok=True)
            path.replace(target / path.name)
            logger.info("POS file %s: %d purchases, %d bad rows", path.name, len(events), bad)

    def status(self) -> dict[str, Any]:
        return {"state": self.state, "files": self.files, "events": self.events, "bad_rows": self.bad_rows}
