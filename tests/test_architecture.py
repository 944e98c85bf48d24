"""Architecture guards: the pure core stays pure, every command is documented and answers --help."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from edge.cli import COMMANDS, build_parser

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("textual", "cv2", "onnxruntime", "paho", "apsw", "sqlite_vec", "sounddevice")


@pytest.mark.parametrize("module", ["edge.analysis.source", "edge.analysis"])
def test_importing_the_pure_core_loads_no_io_or_ui_library(module: str) -> None:
    code = (
        f"import sys, importlib; importlib.import_module({module!r}); "
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "", f"{module} pulled in {out.stdout.strip()}"


def test_every_registered_command_has_help_and_is_in_the_reference() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    reference = (ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
    registered = set(sub.choices)  # type: ignore[attr-defined]
    assert registered, "no sub-command registered"
    assert registered <= set(COMMANDS)
    for name in registered:
        assert f"adamm {name}" in reference, f"`adamm {name}` is not documented in docs/reference.md"
        out = subprocess.run(
            [sys.executable, "-m", "edge", name, "--help"], capture_output=True, text=True, cwd=ROOT
        )
        assert out.returncode == 0, out.stderr
        assert "usage:" in out.stdout


def test_import_contracts_hold() -> None:
    out = subprocess.run(["lint-imports"], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
