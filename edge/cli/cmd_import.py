"""``adamm import``: store MEV JSON Lines from a file (plain or .gz) or stdin.

Thin over :meth:`edge.memory.store.Store.import_lines`: reads the input as a stream of bytes
split on ``\\n`` only (constant memory; CRLF and a UTF-8 byte-order mark at the start are
accepted; a line longer than the limit is skipped without being held whole), prints one stderr line
``line N: reason`` per rejected line, progress on stderr once a second when stderr is a terminal,
and with ``--json`` exactly ``{"accepted": N, "rejected": N, "duplicates": N, "merged": N}`` on
stdout. Exit 0 when every line was stored (or already there), 1 when any line was rejected,
3 when the disk filled up (the message says how many events were stored; a rerun continues).
"""

from __future__ import annotations

import argparse
import gzip
import json
import logging
import sys
import time
from collections.abc import Iterator
from typing import IO, Any

from edge.errors import UsageError
from edge.memory.ingest.mev import MAX_LINE_BYTES

logger = logging.getLogger(__name__)

#: read at most this many bytes of one line (with its CRLF); the rest of a longer line is skipped
_READ_LIMIT = MAX_LINE_BYTES + 2
_UTF8_BOM = b"\xef\xbb\xbf"


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "import",
        help="validate MEV JSON Lines and store them",
        description=(
            "Validate MEV JSON Lines (mev.schema.json) and store them. Bad lines are reported on "
            "stderr as 'line N: reason' and skipped; every good line is stored. Importing the same "
            "event_id again stores it once. Exit 1 if any line was rejected."
        ),
    )
    p.add_argument("--db", required=True, help="the memory database file (created if missing)")
    p.add_argument(
        "--tz",
        metavar="ZONE",
        help="IANA time zone (e.g. Asia/Shanghai) for stores that have none yet; "
        "needed for a new store unless the memory holds exactly one store",
    )
    p.add_argument("--json", action="store_true", help="print the counts as JSON on stdout")
    p.add_argument(
        "--replace",
        action="store_true",
        help="replace stored events whose event_id comes again with different content",
    )
    p.add_argument("--config", help="configuration file (TOML)")
    p.add_argument("--batch-size", type=int, default=2000, help="lines per transaction (default 2000)")
    p.add_argument(
        "--no-prepare",
        action="store_true",
        help="do not bring the question caches (hourly rollup, parser vocabulary) up to date after "
        "storing new events; the next `adamm ask` then does it (seconds for a million events)",
    )
    p.add_argument("file", metavar="FILE", help="JSON Lines file (.gz allowed), or - for stdin")
    p.set_defaults(func=run)


def _open_input(name: str) -> IO[bytes] | gzip.GzipFile:
    """The input as bytes: lines are split on ``\\n`` only and decoded one by one (:func:`_lines`)."""
    if name == "-":
        return sys.stdin.buffer
    try:
        if name.endswith(".gz"):
            return gzip.open(name, "rb")
        return open(name, "rb")
    except FileNotFoundError:
        raise UsageError(
            f"input file {name} does not exist", hint="pass an existing file or - for stdin"
        ) from None
    except IsADirectoryError:
        raise UsageError(f"input {name} is a directory", hint="pass a JSON Lines file") from None
    except PermissionError:
        raise UsageError(f"cannot read input file {name}: permission denied") from None


def _lines(f: IO[bytes] | gzip.GzipFile) -> Iterator[bytes]:
    """The JSON Lines of ``f`` as bytes, one per ``\\n`` (so line numbers count ``\\n``): without
    the ``\\n`` and one ``\\r`` before it (CRLF files), a UTF-8 byte-order mark at the very start
    dropped. A bare ``\\r``, ``\\x0b``, ``\\x1c`` or U+2028 does not end a line (text mode would
    split there). An over-long line is replaced by a marker (its rest is skipped, not kept)."""
    first = True
    while True:
        line = f.readline(_READ_LIMIT)
        if not line:
            return
        if len(line) >= _READ_LIMIT and not line.endswith(b"\n"):
            while True:  # skip the rest of this line in bounded pieces
                rest = f.readline(_READ_LIMIT)
                if not rest or rest.endswith(b"\n"):
                    break
            first = False
            # stands in for the line: rejected by its size, before any parsing
            yield b"x" * (_READ_LIMIT + 1)
            continue
        if first:
            first = False
            if line.startswith(_UTF8_BOM):
                line = line[len(_UTF8_BOM) :]
        if line.endswith(b"\n"):
            line = line[:-2] if line.endswith(b"\r\n") else line[:-1]
        yield line


def run(args: argparse.Namespace) -> int:
    from edge.config import load_config
    from edge.memory.ingest.build import zone
    from edge.memory.store import Store

    if args.tz is not None:
        zone(args.tz)
    if args.batch_size < 1:
        raise UsageError(f"--batch-size must be at least 1, got {args.batch_size}")
    config = load_config(args.config)
    f = _open_input(args.file)
    tty = sys.stderr.isatty()
    started = time.monotonic()
    last = [started]
    count = [0]

    def lines() -> Iterator[bytes]:
        for n, line in enumerate(_lines(f), start=1):
            count[0] = n
            if tty and n % 1000 == 0:
                now = time.monotonic()
                if now - last[0] >= 1.0:
                    last[0] = now
                    rate = n / max(now - started, 1e-9)
                    print(f"\r{n} lines read, {rate:,.0f} lines/s", end="", file=sys.stderr, flush=True)
            yield line

    def on_reject(n: int, reason: str) -> None:
        print(f"line {n}: {reason}", file=sys.stderr)

    try:
        with Store.open(args.db, timezone=args.tz, config=config) as store:
            report = store.import_lines(
                lines(),
                replace=args.replace,
                on_reject=on_reject,
                batch_size=args.batch_size,
            )
            if report.accepted and not args.no_prepare:
                _prepare_for_questions(store, tty)
    finally:
        f.close()
        if tty:
            print(file=sys.stderr)
    elapsed = time.monotonic() - started
    logger.info("imported %s lines in %.1f s (%s)", count[0], elapsed, report.as_dict())
    if args.json:
        print(json.dumps(report.as_dict()))
    else:
        print(
            f"{report.accepted} accepted, {report.rejected} rejected, {report.duplicates} duplicates, "
            f"{report.merged} merged",
            file=sys.stderr,
        )
    return 1 if report.rejected else 0


def _prepare_for_questions(store: Any, tty: bool) -> None:
    """Bring the hourly rollup and the parser vocabulary up to date, so the first ``adamm ask``
    after a large import does not pay for them. A failure here only warns: the events are stored
    and the next question tries again."""
    import apsw

    from edge.errors import AdammError

    if tty:
        print("\rpreparing the memory for questions (hourly rollup, vocabulary) ...", end="", file=sys.stderr)
    started = time.monotonic()
    try:
        source = store.event_source()
        source.rollup_state()
        source.vocabulary()
    except (AdammError, apsw.FullError) as exc:
        logger.warning("stored, but the question caches were not updated (%s); adamm ask will retry", exc)
        return
    logger.info("question caches up to date in %.1f s", time.monotonic() - started)
