"""The daemon config: the issue's minimal TOML validates; every problem of a bad file (unreadable,
not UTF-8, not TOML, wrong types, unknown keys, out of range, missing store_id) is one
``FILE: key.path: reason`` line on stderr with exit 2 and never a traceback; the annotated example
is valid and shows the real defaults."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from edge.cli import main
from edge.config import (
    MAX_NESTING,
    ConfigFileError,
    DaemonConfig,
    SamplingConfig,
    check_sources,
    load_config,
    load_daemon_config,
    parse_daemon_config,
    parse_daemon_text,
)
from edge.errors import ConfigError

REPO = Path(__file__).resolve().parents[1]

MINIMAL = """
store_id = "sh_xuhui_01"
timezone = "Asia/Shanghai"
db = "/var/lib/adamm/store.db"
media_dir = "/var/lib/adamm/media"

[[cameras]]
id = "cam_entrance"
url = "0"                    # a device index, an rtsp:// or http:// URL, or a video file path
zone = "entrance"

[[microphones]]
id = "mic_floor"
device = "default"           # a sounddevice name or index, or a .wav file path
zone = "floor"
"""


def test_minimal_config_from_the_issue_validates(tmp_path: Path) -> None:
    path = tmp_path / "edge.toml"
    path.write_text(MINIMAL, encoding="utf-8")
    cfg = load_daemon_config(path)
    assert cfg.store_id == "sh_xuhui_01"
    assert cfg.cameras[0].kind == "device"
    assert cfg.microphones[0].kind == "device"
    assert cfg.sampling.fps == 1.0 and cfg.sampling.max_frames_per_event == 8
    assert cfg.vad.max_segment_s == 30.0 and cfg.vad.frame_ms == 30
    assert main(["run", "--config", str(path), "--validate-config"]) == 0


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("0", "device"),
        ("12", "device"),
        ("rtsp://10.0.0.2/s", "network"),
        ("HTTP://cam/x", "network"),
        ("/data/a.mp4", "file"),
        ("rec 1.avi", "file"),
    ],
)
def test_camera_url_kind(url: str, kind: str) -> None:
    cfg = DaemonConfig.model_validate({"store_id": "s1", "cameras": [{"id": "c", "url": url}]})
    assert cfg.cameras[0].kind == kind


def test_every_error_is_reported_with_key_value_and_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = MINIMAL.replace('timezone = "Asia/Shanghai"', 'timezone = "Asia/Shangai"')
    bad = bad.replace('zone = "entrance"', 'zone = "entrance"\nfps = 3')  # unknown key in a camera
    bad += '\n[sampling]\nfps = -1\nmax_frames_per_event = 0\n\n[vad]\nframe_ms = 25\n\n[quality]\naction = "ignore"\n'
    path = tmp_path / "bad.toml"
    path.write_text(bad, encoding="utf-8")
    rc = main(["run", "--config", str(path), "--validate-config"])
    err = capsys.readouterr().err
    assert rc == 2
    expected = {
        "timezone": "IANA",
        "cameras.0.fps": "unknown key fps",
        "sampling.fps": "greater than 0",
        "sampling.max_frames_per_event": "at least 1",
        "vad.frame_ms": "must be 10, 20 or 30",
        "quality.action": "must be 'drop' or 'downweight'",
    }
    lines = [ln for ln in err.splitlines() if ln.startswith(str(path))]
    assert len(lines) == len(expected), err
    for key, reason in expected.items():
        assert any(ln.startswith(f"{path}: {key}: ") and reason in ln for ln in lines), (key, err)


def test_duplicate_ids_and_missing_files_are_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="used twice"):
        parse_daemon_config(
            {
                "store_id": "s1",
                "cameras": [{"id": "a", "url": "0"}],
                "microphones": [{"id": "a", "device": "default"}],
            }
        )
    path = tmp_path / "e.toml"
    path.write_text(
        f'store_id = "s1"\n[[cameras]]\nid = "a"\nurl = "{tmp_path / "none.mp4"}"\n[[microphones]]\nid = "m"\ndevice = "{tmp_path / "none.wav"}"\n',
        encoding="utf-8",
    )
    cfg = load_daemon_config(path)
    problems = check_sources(cfg, "e.toml")
    assert len(problems) == 2
    assert problems[0].startswith("e.toml: cameras.0.url: no such video file")
    assert problems[1].startswith("e.toml: microphones.0.device: no such WAV file")
    assert main(["run", "--config", str(path), "--validate-config"]) == 2


def test_context_and_pos_need_their_values() -> None:
    with pytest.raises(Exception, match="needs weather set"):
        DaemonConfig.model_validate({"store_id": "s1", "context": {"weather_source": "static"}})
    with pytest.raises(Exception, match="needs drop_folder"):
        DaemonConfig.model_validate({"store_id": "s1", "pos": {"enabled": True}})
    with pytest.raises(Exception, match="offset"):
        DaemonConfig.model_validate(
            {"store_id": "s1", "cameras": [{"id": "c", "url": "x.mp4", "start_time": "2026-03-01T09:00:00"}]}
        )


def _walk(model: type[BaseModel], prefix: str = "") -> list[str]:
    missing = []
    for name, field in model.model_fields.items():
        if not field.description:
            missing.append(prefix + name)
        ann = field.annotation
        inner = getattr(ann, "__args__", (ann,))
        for t in inner:
            if isinstance(t, type) and issubclass(t, BaseModel):
                missing += _walk(t, f"{prefix}{name}.")
    return missing


def test_every_field_is_documented() -> None:
    assert _walk(DaemonConfig) == []


def test_example_config_is_valid_and_shows_the_defaults() -> None:
    path = REPO / "config" / "edge.example.toml"
    cfg = load_daemon_config(path)
    assert cfg.cameras and cfg.microphones
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    assert data["store_id"] == cfg.store_id
    defaults = DaemonConfig(store_id=cfg.store_id)
    for section in (
        "sampling",
        "vad",
        "segmentation",
        "quality",
        "merge",
        "pos",
        "speech",
        "detector",
        "tiers",
    ):
        for key, value in data[section].items():
            assert getattr(getattr(defaults, section), key) == value, (section, key)


# ------------------------------------------------------------------------ every kind of bad input

GOOD = 'store_id = "s1"\ntimezone = "Asia/Shanghai"\n'


def _line(text: str, needle: str, start: int = 0) -> int:
    """1-based line of the first ``needle`` in ``text`` at or after character ``start``."""
    return text[: text.index(needle, start)].count("\n") + 1


def _file(tmp: Path, body: bytes | str) -> Path:
    path = tmp / "edge.toml"
    path.write_bytes(body if isinstance(body, bytes) else body.encode("utf-8"))
    return path


def _not_utf8(tmp: Path) -> tuple[Path, str, str]:
    body = GOOD.encode() + 'db = "café.db"\n'.encode("latin-1")
    offset = body.index(b"\xe9")
    return _file(tmp, body), "db", f"byte offset {offset} (line 3,"


def _folder(tmp: Path) -> tuple[Path, str, str]:
    (tmp / "edge.toml").mkdir()
    return tmp / "edge.toml", "file", "is a folder"


def _fifo(tmp: Path) -> tuple[Path, str, str]:
    os.mkfifo(tmp / "edge.toml")  # opening it would block: must be refused without reading
    return tmp / "edge.toml", "file", "not a regular file"


def _missing(tmp: Path) -> tuple[Path, str, str]:
    return tmp / "edge.toml", "file", "does not exist"


def _deep(tmp: Path) -> tuple[Path, str, str]:
    n = 100_000
    return _file(tmp, GOOD + "a = " + "[" * n + "]" * n + "\n"), "a", "nested"


def _deep_inline_tables(tmp: Path) -> tuple[Path, str, str]:
    n = 50_000
    return _file(tmp, GOOD + "[sampling]\nb = " + "{x = " * n + "1" + "}" * n + "\n"), "sampling.b", "nested"


def _bool_for_float(tmp: Path) -> tuple[Path, str, str]:
    return _file(tmp, GOOD + "[sampling]\nfps = true\n"), "sampling.fps", "expected a number, got a boolean"


def _bool_for_int(tmp: Path) -> tuple[Path, str, str]:
    body = GOOD + "[sampling]\njpeg_quality = false\n"
    return _file(tmp, body), "sampling.jpeg_quality", "expected a number, got a boolean"


def _text_for_number(tmp: Path) -> tuple[Path, str, str]:
    return _file(tmp, GOOD + '[vad]\naggressiveness = "2"\n'), "vad.aggressiveness", "remove the quotes"


def _float_for_int(tmp: Path) -> tuple[Path, str, str]:
    return _file(tmp, GOOD + "[vad]\npadding_ms = 300.5\n"), "vad.padding_ms", "expected a whole number"


def _number_for_text(tmp: Path) -> tuple[Path, str, str]:
    body = GOOD + '[[cameras]]\nid = "c"\nurl = 0\n'
    return _file(tmp, body), "cameras.0.url", "expected text in quotes"


def _no_store_id(tmp: Path) -> tuple[Path, str, str]:
    return _file(tmp, 'timezone = "UTC"\n[sampling]\nfps = 1.0\n'), "store_id", 'store_id = "'


def _store_id_in_a_table(tmp: Path) -> tuple[Path, str, str]:
    return _file(tmp, '[sampling]\nstore_id = "s1"\n'), "store_id", "under [sampling]"


def _duplicate_key(tmp: Path) -> tuple[Path, str, str]:
    body = GOOD + "[sampling]\nfps = 1.0\nburst_fps = 2.0\nfps = 2.0\n"
    lines = body.splitlines()
    first, second = lines.index("fps = 1.0") + 1, lines.index("fps = 2.0") + 1
    return _file(tmp, body), "sampling.fps", f"is defined twice (line {second}); the first is on line {first}"


def _duplicate_table(tmp: Path) -> tuple[Path, str, str]:
    body = GOOD + "[vad]\nframe_ms = 10\n[sampling]\nfps = 1.0\n[vad]\npadding_ms = 300\n"
    second = _line(body, "[vad]", body.index("[sampling]"))
    return _file(tmp, body), "vad", f"defined twice (line {second})"


def _unknown_key(tmp: Path) -> tuple[Path, str, str]:
    name = "max_frames_per_event"
    assert name in SamplingConfig.model_fields
    typo = name[:3] + name[4] + name[3] + name[5:]  # two letters swapped
    return _file(tmp, GOOD + f"[sampling]\n{typo} = 4\n"), f"sampling.{typo}", f"did you mean {name}?"


def _unknown_table(tmp: Path) -> tuple[Path, str, str]:
    return _file(tmp, GOOD + "[samplng]\nfps = 1.0\n"), "samplng", "did you mean sampling?"


def _out_of_range(tmp: Path) -> tuple[Path, str, str]:
    limit = next(m.le for m in SamplingConfig.model_fields["jpeg_quality"].metadata if hasattr(m, "le"))
    body = GOOD + f"[sampling]\njpeg_quality = {limit + 1}\n"
    return _file(tmp, body), "sampling.jpeg_quality", f"at most {limit}, got {limit + 1}"


def _bad_choice(tmp: Path) -> tuple[Path, str, str]:
    return _file(tmp, GOOD + '[quality]\naction = "ignore"\n'), "quality.action", "'drop' or 'downweight'"


def _bad_zone(tmp: Path) -> tuple[Path, str, str]:
    return _file(tmp, 'store_id = "s1"\ntimezone = "Asia"\n'), "timezone", "IANA time zone"


def _unquoted_text(tmp: Path) -> tuple[Path, str, str]:
    return _file(tmp, GOOD + "db = store.db\n"), "db", "line 3, column"


def _unclosed_string(tmp: Path) -> tuple[Path, str, str]:
    return _file(tmp, GOOD + 'media_dir = "media\n'), "media_dir", "not closed"


def _table_instead_of_value(tmp: Path) -> tuple[Path, str, str]:
    return _file(tmp, GOOD + "sampling = 5\n"), "sampling", "expected a table"


def _utf16(tmp: Path) -> tuple[Path, str, str]:
    return _file(tmp, GOOD.encode("utf-16")), "file", "UTF-16"


BAD: list[Callable[[Path], tuple[Path, str, str]]] = [
    _not_utf8,
    _folder,
    _fifo,
    _missing,
    _deep,
    _deep_inline_tables,
    _bool_for_float,
    _bool_for_int,
    _text_for_number,
    _float_for_int,
    _number_for_text,
    _no_store_id,
    _store_id_in_a_table,
    _duplicate_key,
    _duplicate_table,
    _unknown_key,
    _unknown_table,
    _out_of_range,
    _bad_choice,
    _bad_zone,
    _unquoted_text,
    _unclosed_string,
    _table_instead_of_value,
    _utf16,
]

LINE = re.compile(r"^(?P<file>.+?): (?P<key>[A-Za-z0-9_.-]+): (?P<reason>\S.*)$")


def _problem_lines(err: str, path: Path) -> list[re.Match[str]]:
    """The report lines of ``err``; every line but the header must have the shape."""
    lines = err.splitlines()
    assert lines and lines[0].startswith("adamm run: invalid config ("), err
    matches = [LINE.match(ln) for ln in lines[1:]]
    assert all(m is not None and m["file"] == str(path) for m in matches), err
    return [m for m in matches if m is not None]


@pytest.mark.parametrize("make", BAD, ids=[f.__name__.strip("_") for f in BAD])
def test_every_kind_of_bad_input_is_one_clean_line(
    make: Callable[[Path], tuple[Path, str, str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, key, reason = make(tmp_path)
    assert main(["run", "--config", str(path), "--validate-config"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    found = _problem_lines(err, path)
    assert any(m["key"] == key and reason in m["reason"] for m in found), (key, reason, err)
    # without --validate-config: the same report, before anything starts (no store, no media)
    assert main(["run", "--config", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.err == err and captured.out == ""
    assert not (tmp_path / "adamm.db").exists() and not Path("adamm.db").exists()


def test_every_problem_of_one_file_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A syntax error does not hide the others: each bad line is reported, and the rest is validated."""
    body = (
        'timezone = "UTC"\n'  # no store_id
        'db = "a.db"\n'
        'db = "b.db"\n'  # defined twice
        "media_dir = media\n"  # not TOML
        "[sampling]\nfps = true\n"  # not a number
        "fsp = 1.0\n"  # unknown
        "[vad]\nframe_ms = 25\n"  # not a choice
    )
    path = _file(tmp_path, body)
    assert main(["run", "--config", str(path), "--validate-config"]) == 2
    found = {m["key"]: m["reason"] for m in _problem_lines(capsys.readouterr().err, path)}
    assert set(found) == {"store_id", "db", "media_dir", "sampling.fps", "sampling.fsp", "vad.frame_ms"}
    assert f"line {_line(body, 'b.db')}" in found["db"] and f"line {_line(body, 'a.db')}" in found["db"]
    assert f"(line {_line(body, 'frame_ms')})" in found["vad.frame_ms"]


def test_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    plain = load_daemon_config(_file(tmp_path, MINIMAL))
    with_bom = load_daemon_config(_file(tmp_path, b"\xef\xbb\xbf" + MINIMAL.encode("utf-8")))
    assert with_bom == plain


def test_unquoted_toml_date_time_is_a_start_time(tmp_path: Path) -> None:
    body = GOOD + '[[cameras]]\nid = "c"\nurl = "a.mp4"\nstart_time = 2026-03-01T09:00:00+08:00\n'
    cfg = load_daemon_config(_file(tmp_path, body))
    assert cfg.cameras[0].start_time == "2026-03-01T09:00:00+08:00"


@pytest.mark.skipif(not hasattr(os, "setuid") or os.geteuid() != 0, reason="needs root to drop to nobody")
def test_unreadable_file_says_permission_denied(tmp_path: Path) -> None:
    """Root reads everything, so the check runs as nobody (after importing as root)."""
    path = _file(tmp_path, MINIMAL)
    path.chmod(0o000)
    tmp_path.chmod(0o755)
    script = (
        "import os, sys\n"
        "from edge.cli import main\n"
        "import edge.cli.cmd_run, edge.config\n"
        "os.setgid(65534); os.setuid(65534)\n"
        f"sys.exit(main(['run', '--config', {str(path)!r}, '--validate-config']))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    found = _problem_lines(proc.stderr, path)
    assert [(m["key"], "permission denied" in m["reason"]) for m in found] == [("file", True)]


def test_other_commands_use_the_same_loader(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``adamm import --config`` takes the daemon's file (one file per box) and reports its problems
    the same way."""
    good = _file(tmp_path, MINIMAL)
    assert isinstance(load_config(good), DaemonConfig)
    bad = tmp_path / "bad.toml"
    bad.write_text(GOOD + "[retrieval]\nalpha = true\n", encoding="utf-8")
    events = tmp_path / "events.jsonl"
    events.write_text("", encoding="utf-8")
    db = tmp_path / "store.db"
    assert main(["import", "--db", str(db), "--config", str(bad), str(events)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and not db.exists()
    assert f"{bad}: retrieval.alpha: expected a number, got a boolean" in err


def test_nesting_limit_is_where_the_parser_would_fail(tmp_path: Path) -> None:
    ok = GOOD + "[encoders]\nproviders = " + "[" * MAX_NESTING + "]" * MAX_NESTING + "\n"
    with pytest.raises(ConfigFileError) as exc:  # a list of lists is not a list of names, but parses
        load_daemon_config(_file(tmp_path, ok))
    assert not any("nested" in p for p in exc.value.problems)
    deeper = GOOD + "[encoders]\nproviders = " + "[" * (MAX_NESTING + 1) + "]" * (MAX_NESTING + 1) + "\n"
    with pytest.raises(ConfigFileError) as exc:
        load_daemon_config(_file(tmp_path, deeper))
    assert any(": encoders.providers: " in p and "nested" in p for p in exc.value.problems)


# ------------------------------------------------------------------------------ never anything else

KEYS = sorted({*DaemonConfig.model_fields, *SamplingConfig.model_fields, "id", "url", "zone", "x"})
VALUES = st.one_of(
    st.integers(-(10**20), 10**20).map(str),
    st.floats(allow_nan=True).map(repr),
    st.sampled_from(["true", "false", "inf", "nan", "1979-05-27T07:32:00Z", "07:32:00", "[", "{", "]"]),
    st.text(max_size=12).map(lambda t: '"' + t.replace("\\", "").replace('"', "") + '"'),
    st.recursive(
        st.just("1"), lambda inner: st.lists(inner, max_size=3).map(lambda v: "[" + ", ".join(v) + "]")
    ),
)
TOMLISH_LINE = st.one_of(
    st.tuples(st.sampled_from(KEYS), VALUES).map(lambda kv: f"{kv[0]} = {kv[1]}"),
    st.sampled_from(["[sampling]", "[[cameras]]", "[[microphones]]", "[vad]", "[x]", "[[", "# c", "", '"""']),
    st.text(max_size=20),
)


def _only_config_errors(raw: bytes | str) -> None:
    try:
        cfg = parse_daemon_text(raw, "fuzz.toml")
    except ConfigFileError as exc:
        assert exc.problems and all(p.startswith("fuzz.toml: ") and LINE.match(p) for p in exc.problems)
    else:
        assert isinstance(cfg, DaemonConfig)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=400))
def test_random_bytes_give_only_config_errors(raw: bytes) -> None:
    _only_config_errors(raw)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(TOMLISH_LINE, max_size=12))
def test_random_tomlish_text_gives_only_config_errors(lines: list[str]) -> None:
    _only_config_errors('store_id = "s"\n' + "\n".join(lines))
    _only_config_errors("\n".join(lines).encode("utf-8", errors="surrogatepass"))
