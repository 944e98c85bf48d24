"""The systemd units of a real install (config/systemd: the edge daemon, the hub's serve workers,
the broker) are valid (``systemd-analyze verify``, where that binary exists) and hardened."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
UNITS = ROOT / "config" / "systemd"
NAMES = ("adamm-edge.service", "adamm-hub-serve@.service", "adamm-broker.service")
#: the usual hardening every unit carries
HARDENING = (
    "NoNewPrivileges=yes",
    "ProtectSystem=strict",
    "ProtectHome=yes",
    "PrivateTmp=yes",
    "ProtectKernelTunables=yes",
    "ProtectKernelModules=yes",
    "ProtectControlGroups=yes",
    "RestrictSUIDSGID=yes",
    "RestrictNamespaces=yes",
    "LockPersonality=yes",
    "CapabilityBoundingSet=",
    "SystemCallFilter=@system-service",
    "RestrictAddressFamilies=",
    "ReadWritePaths=",
)


@pytest.mark.parametrize("name", NAMES)
def test_every_unit_is_hardened_and_runs_as_its_own_user(name: str) -> None:
    text = (UNITS / name).read_text(encoding="utf-8")
    lines = [line.strip() for line in text.splitlines()]
    for option in HARDENING:
        assert any(line.startswith(option) for line in lines), f"{name}: {option}"
    user = next(line.split("=", 1)[1] for line in lines if line.startswith("User="))
    assert user and user != "root"
    assert "Restart=on-failure" in lines and "WantedBy=multi-user.target" in lines


def test_systemd_analyze_verifies_the_units(tmp_path: Path) -> None:
    exe = shutil.which("systemd-analyze")
    if exe is None:
        pytest.skip("systemd-analyze is not installed")
    # verify wants every ExecStart binary to exist: stand-ins where the install puts adamm
    bin = tmp_path / "bin"
    bin.mkdir()
    for script in ("adamm", "adamm-hub"):
        (bin / script).write_text("#!/bin/sh\n")
        (bin / script).chmod(0o755)
    mosquitto = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
    for name in NAMES:
        text = (UNITS / name).read_text(encoding="utf-8")
        text = text.replace("/opt/adamm/venv/bin/", f"{bin}/").replace("/usr/sbin/mosquitto", mosquitto)
        if not Path(mosquitto).exists():
            text = text.replace(mosquitto, str(bin / "adamm"))
        (tmp_path / name).write_text(text, encoding="utf-8")
    out = subprocess.run(
        [exe, "verify", *(str(tmp_path / n) for n in NAMES)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    problems = [line for line in out.stderr.splitlines() if any(n.split("@")[0] in line for n in NAMES)]
    assert problems == [], problems
