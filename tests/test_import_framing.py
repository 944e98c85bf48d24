"""Import framing, strict timestamps, duplicates after rejects, and a full disk.

JSON Lines are split on ``\\n`` only (a bare ``\\r``, ``\\x0b``, ``\\x1c``, U+2028 or NEL is part of
its line), CRLF files and a UTF-8 byte-order mark at the start work, invalid UTF-8 rejects only
its line; RFC 3339 is checked strictly on the fast path as on the slow one (property tests
against the schema's own ``date-time`` checker); a rejected line never turns a later good one with
the same ``event_id`` into a duplicate; a disk that fills up mid-import is exit 3 with the count
stored, and a rerun stores exactly the rest.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import apsw
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rfc3339_validator import validate_rfc3339

from edge.cli import main
from edge.errors import StoreError
from edge.memory.ingest import mev
from edge.memory.ingest.mev import LineRejected, check_line
from edge.memory.store import Store

REPO = Path(__file__).resolve().parent.parent


def ev(i: int | str, **over: Any) -> dict[str, Any]:
    e: dict[str, Any] = {
        "event_id": f"f{i}",
        "timestamp": "2025-11-03T10:00:00+08:00",
        "store_id": "sh1",
        "event_type": "purchase",
        "modality": ["pos"],
        "raw_ref": [f"pos://till/{i}"],
        "stats": {"order_amount": 12.5, "zone": "A"},
    }
    e.update(over)
    return e


def line(e: dict[str, Any]) -> bytes:
    return json.dumps(e, ensure_ascii=False).encode("utf-8")


def run_import(
    tmp_path: Path, data: bytes, capsys: Any, *extra: str
) -> tuple[int, dict[str, int], list[str]]:
    src = tmp_path / "in.jsonl"
    src.write_bytes(data)
    rc = main(["import", "--db", str(tmp_path / "m.db"), "--tz", "Asia/Shanghai", "--json", *extra, str(src)])
    out, err = capsys.readouterr()
    return rc, json.loads(out), [x for x in err.splitlines() if x.startswith("line ")]


def stored(db: Path, column: str = "zone") -> dict[str, Any]:
    with Store.open(db, readonly=True) as store, store.read() as conn:
        return {str(e): v for e, v in conn.execute(f"SELECT event_id, {column} FROM events")}


# -- framing ---------------------------------------------------------------------------------------


def test_only_newline_ends_a_line(tmp_path: Path, capsys: Any) -> None:
    """\\r between tokens is JSON whitespace; U+2028/U+2029/NEL/\\x1c inside a string stay in it;
    a \\x0b or \\x0c outside a string makes that one line invalid; line numbers count \\n."""
    tricky = "A\u2028B\u2029C\x85D"
    lines = [
        line(ev(1)).replace(b', "timestamp"', b',\r"timestamp"'),  # bare CR as whitespace
        line(ev(2, stats={"zone": tricky})),  # Unicode line separators inside a string
        line(ev(3)) + b"\x0b",  # a vertical tab is not JSON whitespace
        b"\x0c",  # not a blank line: rejected, not skipped
        line(ev(4)),
        b"\r",  # a blank line (JSON whitespace only)
        line(ev(5)),
    ]
    rc, counts, rejects = run_import(tmp_path, b"\n".join(lines) + b"\n", capsys)
    assert rc == 1
    assert counts == {"accepted": 4, "rejected": 2, "duplicates": 0, "merged": 0}
    assert [r.split(":")[0] for r in rejects] == ["line 3", "line 4"]
    assert all("not valid JSON" in r for r in rejects)
    assert stored(tmp_path / "m.db") == {"f1": "A", "f2": tricky, "f4": "A", "f5": "A"}


def test_crlf_file_and_a_final_line_without_newline(tmp_path: Path, capsys: Any) -> None:
    lines = [line(ev(i)) for i in range(5)]
    lines[2] = b'{"event_id": "f2", "timestamp": "2025-11-03T10:00:00"}'
    data = b"\r\n".join(lines)  # no line break after the last line
    rc, counts, rejects = run_import(tmp_path, data, capsys)
    assert rc == 1
    assert counts == {"accepted": 4, "rejected": 1, "duplicates": 0, "merged": 0}
    assert len(rejects) == 1 and rejects[0].startswith("line 3: ")
    assert set(stored(tmp_path / "m.db", "stats_json").values()) == {'{"order_amount":12.5,"zone":"A"}'}


def test_byte_order_mark_at_the_start_only(tmp_path: Path, capsys: Any) -> None:
    bom = "\ufeff".encode()
    lines = [bom + line(ev(1)), bom + line(ev(2)), line(ev(3, stats={"zone": "\ufeffB"}))]
    rc, counts, rejects = run_import(tmp_path, b"\n".join(lines) + b"\n", capsys)
    assert rc == 1
    assert counts == {"accepted": 2, "rejected": 1, "duplicates": 0, "merged": 0}
    assert rejects[0].startswith("line 2: ") and "byte-order mark" in rejects[0]
    assert stored(tmp_path / "m.db") == {"f1": "A", "f3": "\ufeffB"}


def test_byte_order_mark_on_stdin(tmp_path: Path) -> None:
    data = "\ufeff".encode() + b"\r\n".join([line(ev(1)), line(ev(2))]) + b"\r\n"
    proc = subprocess.run(
        [sys.executable, "-m", "edge", "import", "--db", str(tmp_path / "m.db"), "--tz", "UTC", "--json"]
        + ["--no-prepare", "-"],
        input=data,
        capture_output=True,
        cwd=REPO,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"accepted": 2, "rejected": 0, "duplicates": 0, "merged": 0}


def test_invalid_utf8_rejects_its_line_only(tmp_path: Path, capsys: Any) -> None:
    bad = line(ev(2, stats={"zone": "XY"})).replace(b"XY", b"X\xff\xfeY")
    truncated = line(ev(3, stats={"zone": "门店"}))[:-4] + b'"}}'  # a cut multi-byte character
    lines = [line(ev(1)), bad, truncated, line(ev(4))]
    rc, counts, rejects = run_import(tmp_path, b"\n".join(lines) + b"\n", capsys)
    assert rc == 1
    assert counts == {"accepted": 2, "rejected": 2, "duplicates": 0, "merged": 0}
    assert [r.split(":")[0] for r in rejects] == ["line 2", "line 3"]
    assert all("not valid UTF-8" in r and "save the file as UTF-8" in r for r in rejects)
    assert "0xff" in rejects[0]
    assert set(stored(tmp_path / "m.db")) == {"f1", "f4"}


def test_gzip_input_is_split_the_same_way(tmp_path: Path, capsys: Any) -> None:
    import gzip

    src = tmp_path / "in.jsonl.gz"
    src.write_bytes(
        gzip.compress(
            b"\xef\xbb\xbf"
            + line(ev(1))
            + b"\r\n"
            + line(ev(2, stats={"zone": "aXb"})).replace(b"aXb", b"a\rb")
        )
    )
    rc = main(["import", "--db", str(tmp_path / "m.db"), "--tz", "UTC", "--json", str(src)])
    out, err = capsys.readouterr()
    # a raw \r inside a string is a control character JSON does not allow: that line is rejected
    assert rc == 1
    assert json.loads(out) == {"accepted": 1, "rejected": 1, "duplicates": 0, "merged": 0}
    assert "line 2: not valid JSON" in err


# -- strict timestamps -----------------------------------------------------------------------------

BAD_TIMESTAMPS = [
    ("2025-11-01T09:30:00+08:60", "offset +08:60"),
    ("2025-11-01T09:30:00+24:00", "offset +24:00"),
    ("2025-11-01T09:30:00-23:60", "offset -23:60"),
    ("2025-11-01T24:00:00Z", "hour 24"),
    ("2025-11-01T09:60:00Z", "minute 60"),
    ("2025-11-01T09:30:61Z", "second 61"),
    ("2025-11-01T23:59:60Z", "leap seconds"),
    ("2025-02-30T09:30:00Z", "day is out of range"),
    ("2024-02-30T09:30:00+08:00", "day is out of range"),
    ("2025-13-01T09:30:00Z", "month 13"),
    ("0000-01-01T00:00:00Z", "year 0"),
    ("0001-01-01T00:00:00+00:01", "outside the years"),
    ("2025-11-01T09:30:00", "no UTC offset"),
    ("2025-11-01T09:30:00+0800", "offset written wrongly"),
    ("2025-11-01T09:30:00+8:00", "offset written wrongly"),
    ("2025-11-01 09:30:00+08:00", "use T"),
    ("2025-11-01T09:30:00.+08:00", "not an RFC 3339"),
    ("2025-11-01T9:30:00Z", "not an RFC 3339"),
    ("2025-11-01T09:30:00Z\n", "not an RFC 3339"),
]


@pytest.mark.parametrize(("value", "reason"), BAD_TIMESTAMPS)
def test_bad_timestamps_rejected_on_every_path(value: str, reason: str) -> None:
    for field in ("timestamp", "end_timestamp"):
        obj = ev(1, **{field: value})
        for text in (json.dumps(obj), line(obj)):  # the fast (orjson) path, str and bytes
            with pytest.raises(LineRejected, match=re.escape(reason)) as exc:
                check_line(text)
            assert field in exc.value.reason
        with pytest.raises(LineRejected, match=re.escape(reason)):  # the slow (jsonschema) path
            mev._check_slow(obj)


def test_lowercase_t_and_z_accepted_and_stored_in_canonical_form(tmp_path: Path, capsys: Any) -> None:
    """The schema's date-time (RFC 3339 section 5.6 ABNF) lets T and Z be lower case."""
    lines = [
        line(ev(1, timestamp="2025-11-03t02:00:00z")),
        line(ev(2, timestamp="2025-11-03t10:00:00.5+08:00", end_timestamp="2025-11-03T02:00:01Z")),
    ]
    rc, counts, _ = run_import(tmp_path, b"\n".join(lines), capsys)
    assert (rc, counts["accepted"]) == (0, 2)
    assert stored(tmp_path / "m.db", "ts") == {
        "f1": "2025-11-03T02:00:00.000000Z",
        "f2": "2025-11-03T02:00:00.500000Z",
    }
    assert stored(tmp_path / "m.db", "end_ts") == {"f1": None, "f2": "2025-11-03T02:00:01.000000Z"}


def _outcome(fn: Any, obj: Any) -> Any:
    try:
        checked = fn(obj)
    except LineRejected:
        return "rejected"
    return (checked.ts, checked.end_ts)


def _fast(obj: Any) -> Any:
    """What the fast path decides: None when it declines (the slow path then decides)."""
    if not mev._fast_ok(obj):
        return None
    return _outcome(mev._checked, obj)


def _schema_oracle(value: str) -> Any:
    """The MEV schema's date-time (rfc3339-validator, as jsonschema calls it) plus a UTC instant."""
    if not validate_rfc3339(value.upper()) or "\n" in value:
        return "rejected"
    try:
        return datetime.fromisoformat(value.upper()).astimezone(UTC)
    except (ValueError, OverflowError):
        return "rejected"


def _two(lo: int, hi: int) -> st.SearchStrategy[str]:
    return st.integers(lo, hi).map("{:02d}".format)


#: each field of a date-time: values in range, and values at or past its edges
_FIELDS: list[tuple[st.SearchStrategy[str], list[str]]] = [
    (st.integers(1, 9999).map("{:04d}".format), ["0000", "0001", "9999"]),
    (_two(1, 12), ["00", "13", "99"]),
    (_two(1, 28), ["00", "29", "30", "31", "32"]),
    (st.sampled_from(["T", "t"]), [" ", "_", ""]),
    (_two(0, 23), ["24", "25", "99"]),
    (_two(0, 59), ["60", "99"]),
    (_two(0, 59), ["60", "61"]),
    (st.sampled_from(["", ".5", ".123456", ".1234567", ".9999999999"]), [".", ",5", ".x"]),
    (
        st.sampled_from(["Z", "z"])
        | st.builds("{}{}:{}".format, st.sampled_from("+-"), _two(0, 23), _two(0, 59)),
        ["+08:60", "+24:00", "-23:60", "+23:59", "-00:00", "+0800", "+08", "+8:00", "", " Z", "Z\n"],
    ),
]


@st.composite
def _datetime_texts(draw: st.DrawFn) -> str:
    """A date-time with every field in range, or with one of them at or past its edge."""
    parts = [draw(valid) for valid, _edges in _FIELDS]
    broken = draw(st.integers(-1, len(_FIELDS) - 1))
    if broken >= 0:
        parts[broken] = draw(st.sampled_from(_FIELDS[broken][1]))
    return "{}-{}-{}{}{}:{}:{}{}{}".format(*parts)


TIMESTAMPS = _datetime_texts() | st.text(max_size=32)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=TIMESTAMPS, as_end=st.booleans())
def test_fast_and_slow_paths_agree_on_timestamps(value: str, as_end: bool) -> None:
    obj = ev(1, end_timestamp=value) if as_end else ev(1, timestamp=value)
    if as_end:
        obj["timestamp"] = "0001-01-01T00:00:00Z"  # never after a valid end
    expected = _schema_oracle(value)
    slow = _outcome(mev._check_slow, obj)
    if expected == "rejected":
        assert slow == "rejected"
    else:
        assert slow == ((datetime(1, 1, 1, tzinfo=UTC), expected) if as_end else (expected, None))
    fast = _fast(obj)
    if expected != "rejected":
        assert fast is not None  # a valid timestamp never leaves the fast path
    if fast is not None:
        assert fast == slow
    assert _outcome(check_line, json.dumps(obj)) == slow
    assert _outcome(check_line, orjson.dumps(obj)) == slow
    if expected == "rejected":
        with pytest.raises(LineRejected):
            mev.parse_timestamp(value, "timestamp")
    else:
        assert mev.parse_timestamp(value, "timestamp") == expected


_JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | TIMESTAMPS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=8,
)
_KEYS = sorted(mev.TOP_LEVEL_KEYS) + ["extra"]
_STATS_KEYS = sorted(mev._WELL_KNOWN) + ["custom"]


def _valid_event(i: int) -> dict[str, Any]:
    return ev(
        i,
        end_timestamp="2025-11-03T10:05:00+08:00",
        source="till-1",
        entities=["bill:1", "till:1"],
        relations=[{"head": "bill:1", "type": "at", "tail": "till:1"}],
        stats={"order_amount": 12.5, "person_count": 2, "zone": "A", "promotion": True, "custom": 1.5},
    )


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fast_and_slow_paths_agree_on_mutated_events(data: st.DataObject) -> None:
    obj: dict[str, Any] = _valid_event(data.draw(st.integers(0, 50)))
    for _ in range(data.draw(st.integers(1, 3))):
        where = data.draw(st.sampled_from(["top", "del", "stats", "list"]))
        if where == "top":
            obj[data.draw(st.sampled_from(_KEYS))] = data.draw(_JSON_VALUES)
        elif where == "del":
            obj.pop(data.draw(st.sampled_from(_KEYS)), None)
        elif where == "stats" and isinstance(obj.get("stats"), dict):
            obj["stats"][data.draw(st.sampled_from(_STATS_KEYS))] = data.draw(_JSON_VALUES)
        elif where == "list":
            key = data.draw(st.sampled_from(["modality", "raw_ref", "entities"]))
            if isinstance(obj.get(key), list):
                obj[key] = [*obj[key], data.draw(_JSON_VALUES | st.sampled_from(mev.MODALITIES))]
    slow = _outcome(mev._check_slow, obj)
    fast = _fast(obj)
    if fast is not None:
        assert fast == slow
    try:
        text = json.dumps(obj)
    except ValueError:
        return
    # check_line parses NaN/Infinity tokens and long integers its own way; it agrees with the
    # slow path wherever the parsed object is the same
    assert _outcome(check_line, text) == _outcome(check_line, text.encode())
    if "NaN" not in text and "Infinity" not in text and not mev._may_hold_long_int(obj):
        assert _outcome(check_line, text) == slow


# -- a rejected line never makes a duplicate -------------------------------------------------------


def _bad(i: int) -> bytes:
    return line(ev(i, timestamp="2025-11-03T10:00:00+08:60"))  # same id, rejected


@pytest.mark.parametrize("batch_size", [1, 2, 1000])
def test_rejected_line_never_makes_a_duplicate(tmp_path: Path, batch_size: int) -> None:
    lines = [
        _bad(1),  # bad, then good with the same id: the good one is accepted
        line(ev(1)),
        line(ev(2)),  # good, then bad with the same id: the good one stays
        _bad(2),
        line(ev(3)),  # good twice: the second is a duplicate
        line(ev(3)),
        b"{not json",  # rejected lines without an id in between
        line(ev(3)),
    ]
    rejected: list[int] = []
    with Store.open(tmp_path / "m.db", timezone="Asia/Shanghai") as store:
        report = store.import_lines(lines, batch_size=batch_size, on_reject=lambda n, _r: rejected.append(n))
        assert report.as_dict() == {"accepted": 3, "rejected": 3, "duplicates": 2, "merged": 0}
        assert rejected == [1, 4, 7]
        # a second run: bad lines again rejected, good ones duplicates
        again = store.import_lines(
            [_bad(3), line(ev(3)), _bad(4), line(ev(4)), line(ev(1))], batch_size=batch_size
        )
        assert again.as_dict() == {"accepted": 1, "rejected": 2, "duplicates": 2, "merged": 0}
    assert stored(tmp_path / "m.db", "ts") == {f"f{i}": "2025-11-03T02:00:00.000000Z" for i in (1, 2, 3, 4)}


# -- a full disk -----------------------------------------------------------------------------------

N_GOOD = 1200


def _full_disk_input() -> list[bytes]:
    """N_GOOD good events, every 50th followed by a bad line and a repeat of an earlier event."""
    out: list[bytes] = []
    for i in range(N_GOOD):
        out.append(line(ev(i, timestamp=f"2025-10-{1 + i % 28:02d}T10:{i % 60:02d}:00+08:00")))
        if i % 50 == 49:
            out.append(_bad(10_000 + i))
            out.append(out[-2])  # a duplicate in the same run
    return out


def _integrity(db: Path) -> tuple[str, int]:
    conn = apsw.Connection(str(db))
    try:
        (ok,) = conn.execute("PRAGMA integrity_check").fetchone()  # type: ignore[misc]
        (n,) = conn.execute("SELECT COUNT(*) FROM events").fetchone()  # type: ignore[misc]
        (ids,) = conn.execute("SELECT COUNT(DISTINCT event_id) FROM events").fetchone()  # type: ignore[misc]
    finally:
        conn.close()
    assert ids == n
    return str(ok), int(n)


def test_full_disk_stops_with_the_count_and_a_rerun_stores_the_rest(tmp_path: Path) -> None:
    """SQLITE_FULL from the writer's own connection (``max_page_count``, set through the public
    writer), mid-import: StoreError (exit 3) with the number stored, which is what is stored."""
    db = tmp_path / "m.db"
    lines = _full_disk_input()
    with Store.open(db, timezone="Asia/Shanghai") as store:
        pages = store.writer.submit(lambda c: int(c.pragma("page_count"))).result()
        store.writer.submit(lambda c: c.pragma("max_page_count", pages + 40)).result()
        with pytest.raises(StoreError, match="is full") as exc:
            store.import_lines(lines, batch_size=100)
        message = str(exc.value)
        assert exc.value.exit_code == 3
        assert "\n" not in message and "run the same import again" in message
        first = int(message.split(": ")[1].split(" events")[0])
        store.writer.submit(lambda c: c.pragma("max_page_count", 1_073_741_823)).result()
        with store.read() as conn:
            (n,) = conn.execute("SELECT COUNT(*) FROM events").fetchone()  # type: ignore[misc]
        assert 0 < first == n < N_GOOD
        report = store.import_lines(lines, batch_size=100)
    assert report.accepted == N_GOOD - first
    assert report.rejected == N_GOOD // 50
    assert report.duplicates == first + N_GOOD // 50  # the stored ones, and the in-file repeats
    assert _integrity(db) == ("ok", N_GOOD)


def _can_mount_tmpfs() -> bool:
    if shutil.which("unshare") is None or sys.platform != "linux":
        return False
    probe = subprocess.run(
        ["unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt || mount -t tmpfs tmpfs /tmp"],
        capture_output=True,
        check=False,
    )
    return probe.returncode == 0


@pytest.mark.skipif(not _can_mount_tmpfs(), reason="needs a tmpfs in a user+mount namespace (unshare -rm)")
def test_full_disk_cli_exit_3_and_rerun_continues(tmp_path: Path) -> None:
    """A real full file system: `adamm import` on a small tmpfs (in a private mount namespace),
    then the same import again after the tmpfs is grown."""
    src = tmp_path / "in.jsonl"
    src.write_bytes(b"\n".join(_full_disk_input()) + b"\n")
    disk = tmp_path / "disk"
    disk.mkdir()
    # an empty memory takes ~0.5 MB (its WAL as much again); each event ~0.5 KB
    script = f"""
set -u
mount -t tmpfs -o size=1300k tmpfs {disk}
{sys.executable} -m edge import --db {disk}/m.db --tz Asia/Shanghai --json --batch-size 100 {src} \
  > {tmp_path}/out1 2> {tmp_path}/err1
echo $? > {tmp_path}/rc1
mount -o remount,size=64m {disk}
{sys.executable} -m edge import --db {disk}/m.db --json --batch-size 100 {src} > {tmp_path}/out2 2> {tmp_path}/err2
echo $? > {tmp_path}/rc2
cp {disk}/m.db {tmp_path}/copy.db
"""
    subprocess.run(
        ["unshare", "-rm", "sh", "-c", script],
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        cwd=REPO,
        check=True,
        timeout=600,
    )
    err1 = (tmp_path / "err1").read_text()
    assert (tmp_path / "rc1").read_text().strip() == "3", err1
    assert "Traceback" not in err1
    last = err1.strip().splitlines()[-1]
    assert "is full" in last and "run the same import again" in last
    first = int(last.split("is full: ")[1].split(" events")[0])
    assert 0 < first < N_GOOD
    assert (tmp_path / "out1").read_text() == ""
    assert (tmp_path / "rc2").read_text().strip() == "1"  # the bad lines
    report = json.loads((tmp_path / "out2").read_text())
    assert report == {
        "accepted": N_GOOD - first,
        "rejected": N_GOOD // 50,
        "duplicates": first + N_GOOD // 50,
        "merged": 0,
    }
    assert _integrity(tmp_path / "copy.db") == ("ok", N_GOOD)
