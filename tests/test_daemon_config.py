"""The daemon config: the issue's minimal TOML validates, every error is reported with key, value
and reason (exit 2), the annotated example is valid and shows the real defaults."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from pydantic import BaseModel

from edge.cli import main
from edge.daemon.config import DaemonConfig, check_sources, load_daemon_config, parse_daemon_config
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
    cfg = DaemonConfig.model_validate({"cameras": [{"id": "c", "url": url}]})
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
        "timezone = 'Asia/Shangai'": "IANA",
        "cameras.0.fps = 3": "Extra inputs",
        "sampling.fps = -1": "greater than 0",
        "sampling.max_frames_per_event = 0": "greater than or equal to 1",
        "vad.frame_ms = 25": "Input should be",
        "quality.action = 'ignore'": "Input should be",
    }
    lines = [ln for ln in err.splitlines() if ln.startswith(str(path))]
    assert len(lines) == len(expected), err
    for key_value, reason in expected.items():
        assert any(key_value in ln and reason in ln for ln in lines), (key_value, err)


def test_duplicate_ids_and_missing_files_are_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="used twice"):
        parse_daemon_config(
            {"cameras": [{"id": "a", "url": "0"}], "microphones": [{"id": "a", "device": "default"}]}
        )
    path = tmp_path / "e.toml"
    path.write_text(
        f'[[cameras]]\nid = "a"\nurl = "{tmp_path / "none.mp4"}"\n[[microphones]]\nid = "m"\ndevice = "{tmp_path / "none.wav"}"\n',
        encoding="utf-8",
    )
    cfg = load_daemon_config(path)
    problems = check_sources(cfg, "e.toml")
    assert len(problems) == 2
    assert "cameras.0.url" in problems[0] and "no such video file" in problems[0]
    assert "microphones.0.device" in problems[1] and "no such WAV file" in problems[1]
    assert main(["run", "--config", str(path), "--validate-config"]) == 2


def test_context_and_pos_need_their_values() -> None:
    with pytest.raises(Exception, match="needs weather set"):
        DaemonConfig.model_validate({"context": {"weather_source": "static"}})
    with pytest.raises(Exception, match="needs drop_folder"):
        DaemonConfig.model_validate({"pos": {"enabled": True}})
    with pytest.raises(Exception, match="offset"):
        DaemonConfig.model_validate(
            {"cameras": [{"id": "c", "url": "x.mp4", "start_time": "2026-03-01T09:00:00"}]}
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
    defaults = DaemonConfig()
    for section in ("sampling", "vad", "segmentation", "quality", "merge", "pos", "speech", "detector"):
        for key, value in data[section].items():
            assert getattr(getattr(defaults, section), key) == value, (section, key)
