"""POS intake: a drop folder of JSON Lines / CSV transaction files becomes ``purchase`` events.

The POS (or an export job) writes ``*.jsonl`` or ``*.csv`` files into ``pos.drop_folder``; each
file is read once, every row becomes one MEV of type ``purchase`` (``raw_ref``
``pos://<terminal>/<bill_id>``), and the file moves to ``done/`` (rows that fail are logged with
file and line and counted; the file then goes to ``failed/`` for a person to look at). Row keys:
``bill_id`` and ``timestamp`` (RFC 3339; without an offset it is store-local time) are required;
``order_amount``, ``product_id``, ``product_category``, ``gross_margin``, ``staff_id``, ``terminal``
and any other scalar column go into ``stats``. Started by the daemon; also usable on its own via
:func:`parse_file`.

Tail mode (``pos.tail``): :class:`JsonlTail` follows one JSON Lines file like ``tail -F``: it reads
appended lines, keeps a partial last line until its newline arrives, reopens the file when it is
rotated (a new inode: the rest of the old file is read first) and starts again from the top when
it is truncated. The byte offset (with the inode) goes into the events queue as a
:class:`edge.capture.base.Checkpoint` after the events read before it, so the writer saves it
(the store's ``settings`` table) only once those events are written: a restart resumes there and
neither loses nor repeats purchases (event ids are ``pos.<terminal>.<bill>``, so even a crash
between the two writes only re-offers lines the store already holds as duplicates).
"""

from __future__ import annotations

import csv
import json
import logging
import os
import queue
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO
from zoneinfo import ZoneInfo

from edge.capture.base import Checkpoint, EndOfStream
from edge.config.daemon import DaemonConfig
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


def json_row(raw: str | bytes) -> dict[str, Any]:
    """One JSON Lines row as an object; :class:`PosRowError` says why it is not one."""
    try:
        row = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise PosRowError(f"not JSON ({exc})") from None
    if not isinstance(row, dict):
        raise PosRowError("not a JSON object")
    return row


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
                row = json_row(raw) if isinstance(raw, str) else raw
                events.append(row_to_event(row, store_id=store_id, tz=tz, terminal=terminal))
            except PosRowError as exc:
                bad += 1
                logger.warning("%s:%d: skipped POS row: %s", path, lineno, exc)
    return events, bad


@dataclass
class TailState:
    """Where a tail stands: the file's inode and the byte offset after the last complete line."""

    inode: int
    offset: int

    def dumps(self) -> str:
        return json.dumps({"inode": self.inode, "offset": self.offset})

    @classmethod
    def loads(cls, text: str | None) -> TailState | None:
        if not text:
            return None
        try:
            d = json.loads(text)
            return cls(int(d["inode"]), int(d["offset"]))
        except (ValueError, KeyError, TypeError):
            logger.warning("ignoring an unreadable POS tail offset %r", text)
            return None


def _complete_lines(data: bytes, start: int) -> tuple[list[tuple[int, bytes]], int]:
    """The complete lines of ``data`` (read from byte ``start``) as (offset, bytes without the
    newline), and the offset just past the last of them."""
    lines: list[tuple[int, bytes]] = []
    pos = start
    end = data.rfind(b"\n")
    for raw in data[: end + 1].split(b"\n")[:-1] if end >= 0 else ():
        lines.append((pos, raw))
        pos += len(raw) + 1
    return lines, pos


class JsonlTail:
    """``tail -F`` over one JSON Lines file: :meth:`read` returns the complete lines appended since
    the last call (each with its byte offset) and advances :attr:`state` past them."""

    def __init__(self, path: Path, state: TailState | None = None) -> None:
        self.path = path
        self.rotations = 0
        self.truncations = 0
        self._f: BinaryIO | None = None
        self._inode: int | None = None
        self._offset = 0
        self._resume = state
        self._carry: list[tuple[int, bytes]] = []

    @property
    def state(self) -> TailState | None:
        """Where reading stands: the open file's inode and the offset past the last complete line
        returned (before the file is opened: the saved state it resumes from)."""
        return self._resume if self._inode is None else TailState(self._inode, self._offset)

    def _rest_of_rotated(self, saved: TailState) -> list[tuple[int, bytes]]:
        """Complete lines after ``saved.offset`` in the rotated file (same folder, a name starting
        with the tailed file's, the saved inode), e.g. ``transactions.jsonl.1``."""
        for cand in sorted(self.path.parent.glob(self.path.name + "*")):
            try:
                if cand == self.path or cand.stat().st_ino != saved.inode:
                    continue
                with cand.open("rb") as f:
                    f.seek(saved.offset)
                    data = f.read()
            except OSError:
                continue
            lines, _ = _complete_lines(data, saved.offset)
            if not lines:
                return []
            logger.info("POS tail: the rest of %s (rotated while down) from byte %d", cand, saved.offset)
            return lines
        return []

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None

    def _open(self) -> bool:
        try:
            f = self.path.open("rb")
        except FileNotFoundError:
            return False
        st = os.fstat(f.fileno())
        self._f, self._inode, self._offset = f, st.st_ino, 0
        resume, self._resume = self._resume, None
        if resume is not None:
            if resume.inode != st.st_ino:
                self._carry = self._rest_of_rotated(resume)
                logger.warning(
                    "POS tail %s was replaced while the daemon was down: %d lines read from the "
                    "rotated file, the new file from the start",
                    self.path,
                    len(self._carry),
                )
            elif resume.offset > st.st_size:
                logger.warning(
                    "POS tail %s is shorter (%d bytes) than the saved offset %d: truncated, reading from the start",
                    self.path,
                    st.st_size,
                    resume.offset,
                )
            else:
                self._offset = resume.offset
        return True

    def _read_complete(self) -> list[tuple[int, bytes]]:
        assert self._f is not None
        self._f.seek(self._offset)
        lines, self._offset = _complete_lines(self._f.read(), self._offset)
        return lines  # a partial last line (still being written) waits for its newline

    def read(self) -> list[tuple[int, bytes]]:
        """Complete new lines as (byte offset, bytes without the newline)."""
        if self._f is None and not self._open():
            return []
        out, self._carry = self._carry, []
        out += self._read_complete()
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return out  # mid-rotation: keep the old file until a new one appears
        if st.st_ino != self._inode:
            out += self._read_complete()  # the rest of the rotated file first
            self.close()
            self.rotations += 1
            logger.info("POS tail %s rotated: following the new file", self.path)
            if self._open():
                out += self._read_complete()
        elif st.st_size < self._offset:
            self.truncations += 1
            logger.warning("POS tail %s was truncated: reading from the start", self.path)
            self._offset = 0
            out += self._read_complete()
        return out

    def pending_bytes(self) -> int:
        """Bytes after the last complete line (a line still being written)."""
        try:
            return max(0, self.path.stat().st_size - self._offset) if self._f is not None else 0
        except FileNotFoundError:
            return 0


def tail_setting_key(path: Path) -> str:
    """The ``settings`` key the tail offset of ``path`` is saved under."""
    return f"pos.tail_offset:{path.expanduser().resolve()}"


class PosWatcher(threading.Thread):
    kind = "pos"

    def __init__(
        self,
        cfg: DaemonConfig,
        out: queue.Queue[Any],
        stop: threading.Event,
        *,
        until_eof: bool,
        load_setting: Callable[[str], str | None] | None = None,
    ) -> None:
        super().__init__(name="pos", daemon=True)
        self.cfg = cfg
        self.folder = Path(cfg.pos.drop_folder).expanduser() if cfg.pos.drop_folder else None
        self.tail: JsonlTail | None = None
        self.tail_key: str | None = None
        if cfg.pos.tail:
            path = Path(cfg.pos.tail).expanduser()
            self.tail_key = tail_setting_key(path)
            saved = TailState.loads(load_setting(self.tail_key) if load_setting else None)
            if saved is not None:
                logger.info("POS tail %s resumes at byte %d", path, saved.offset)
            self.tail = JsonlTail(path, saved)
        self.out = out
        self.stop_event = stop
        self.until_eof = until_eof
        self.tz = ZoneInfo(cfg.timezone)
        self.files = 0
        self.events = 0
        self.bad_rows = 0
        self.tail_lines = 0
        self.state = "starting"
        self.source_id = "pos"

    def run(self) -> None:
        self.state = "running"
        try:
            if self.folder is not None:
                self.folder.mkdir(parents=True, exist_ok=True)
            while True:
                self.scan()
                self.follow()
                if self.until_eof or self.stop_event.wait(self.cfg.pos.poll_seconds):
                    break
            self.follow()  # what was appended while stopping
            if self.tail is not None and (pending := self.tail.pending_bytes()):
                logger.warning(
                    "POS tail %s ends in an incomplete line (%d bytes): left for the next run",
                    self.tail.path,
                    pending,
                )
        except Exception:
            self.state = "error"
            logger.exception("POS intake failed")
        finally:
            if self.tail is not None:
                self.tail.close()
            if self.state != "error":
                self.state = "ended"
            self.out.put(EndOfStream("pos", self.state))

    def follow(self) -> None:
        """New complete lines of the tailed file -> purchases, then the offset checkpoint."""
        if self.tail is None or self.tail_key is None:
            return
        lines = self.tail.read()
        if not lines:
            return
        n = 0
        for offset, raw in lines:
            if not raw.strip():
                continue
            try:
                row = json_row(raw)
                ev = row_to_event(row, store_id=self.cfg.store_id, tz=self.tz, terminal=self.cfg.pos.terminal)
            except PosRowError as exc:
                self.bad_rows += 1
                logger.warning("%s@%d: skipped POS row: %s", self.tail.path, offset, exc)
                continue
            self.out.put(ev)
            n += 1
        self.events += n
        self.tail_lines += len(lines)
        assert self.tail.state is not None
        self.out.put(Checkpoint(self.tail_key, self.tail.state.dumps()))
        logger.debug("POS tail %s: %d purchases, offset %d", self.tail.path, n, self.tail.state.offset)

    def scan(self) -> None:
        if self.folder is None:
            return
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
        st: dict[str, Any] = {
            "state": self.state,
            "files": self.files,
            "events": self.events,
            "bad_rows": self.bad_rows,
        }
        if self.tail is not None:
            st.update(
                tail_lines=self.tail_lines,
                tail_offset=self.tail.state.offset if self.tail.state else 0,
                tail_rotations=self.tail.rotations,
                tail_truncations=self.tail.truncations,
            )
        return st
