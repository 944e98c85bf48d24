"""No traceback reaches a user: bad times and bytes on the command line are one line and exit 2."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from engine_data import full_memory


def adamm(*args: str | bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable.encode(), b"-m", b"edge", *(a if isinstance(a, bytes) else a.encode() for a in args)],
        capture_output=True,
        check=False,
        timeout=120,
        env={**os.environ, "PYTHONUTF8": "1"},
    )


@pytest.mark.parametrize(
    "args",
    [
        ("ask", "--now", "9999-12-31T23:00:00Z", "revenue last week"),
        ("ask", "--now", "0001-01-01T00:00:00Z", "revenue last week"),
        ("ask", "--now", "not a time", "revenue"),
        ("search", "--since", "", "checkout"),
        ("search", "--until", "", "checkout"),
        ("search", "--since", "9999-12-31T23:59:59-05:00", "checkout"),
        ("search", "--since", "0001-01-01T00:00:00+08:00", "checkout"),
        ("ask", b"revenue \xff\xfe last week"),
        ("search", b"\xc3\x28 checkout"),
    ],
)
def test_bad_command_line_input_is_one_line_exit_2(args: tuple[str | bytes, ...]) -> None:
    db = str(full_memory().path)
    proc = adamm(args[0], "--db", db, *args[1:])
    err = proc.stderr.decode("utf-8")  # what adamm prints is UTF-8 even when its input was not
    assert proc.returncode == 2, (proc.returncode, err)
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert proc.stdout == b""


def test_long_spans_and_far_years_answer_honestly() -> None:
    db = str(full_memory().path)
    for q in ("revenue in the last 99999 years", "revenue in 2099", "过去一万年的销售额"):
        proc = adamm("ask", "--db", db, "--json", "--now", "2025-11-15T00:00:00+08:00", q)
        assert proc.returncode == 0, proc.stderr.decode()
        assert b'"status": "insufficient_data"' in proc.stdout
