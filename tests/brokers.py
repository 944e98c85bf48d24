"""Real servers for the sync tests: Mosquitto with the project's configuration
(``config/mosquitto/adamm.conf``) and PostgreSQL from Debian's packages (``initdb`` +
``pg_ctl`` in a temporary folder), each on a free port, started and stopped by the tests."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MOSQUITTO_CONF = ROOT / "config" / "mosquitto" / "adamm.conf"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_port(port: int, proc: subprocess.Popen[bytes], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode} before listening on {port}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on {port} within {timeout} s")


@dataclass
class Mosquitto:
    """A running Mosquitto; :meth:`kill` SIGKILLs it, :meth:`start` (re)starts it on the same port."""

    dir: Path
    port: int
    persistence: bool = False
    extra: str = ""
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"mqtt://127.0.0.1:{self.port}"

    def config_path(self) -> Path:
        text = (
            MOSQUITTO_CONF.read_text()
            .replace("@PORT@", str(self.port))
            .replace("@DIR@", str(self.dir))
            .replace("@PERSISTENCE@", "true" if self.persistence else "false")
        )
        path = self.dir / "mosquitto.conf"
        path.write_text(text + ("\n" + self.extra if self.extra else ""))
        return path

    def start(self) -> Mosquitto:
        exe = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
        self.proc = subprocess.Popen(
            [exe, "-c", str(self.config_path())], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        _wait_port(self.port, self.proc, "mosquitto")
        return self

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)
        self.proc = None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()
        self.proc = None


def mosquitto_available() -> bool:
    return bool(shutil.which("mosquitto") or os.path.exists("/usr/sbin/mosquitto"))


def password_file(dir: Path, users: dict[str, str]) -> Path:
    """A Mosquitto password file for ``users`` (name -> password), written by ``mosquitto_passwd -b``."""
    exe = shutil.which("mosquitto_passwd") or "/usr/bin/mosquitto_passwd"
    path = dir / "passwords"
    path.unlink(missing_ok=True)
    for i, (name, password) in enumerate(users.items()):
        args = [exe, "-b", *(["-c"] if i == 0 else []), str(path), name, password]
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    path.chmod(0o600)
    return path


def make_certificates(dir: Path) -> tuple[Path, Path, Path]:
    """A throw-away CA and a server certificate for 127.0.0.1/localhost (``openssl``): (ca.crt,
    server.crt, server.key)."""
    dir.mkdir(parents=True, exist_ok=True)

    def ossl(*args: str) -> None:
        subprocess.run(
            ["openssl", *args], check=True, cwd=dir, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )

    ossl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "2",
        "-subj",
        "/CN=adamm-test-ca",
    )
    ossl(
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=127.0.0.1",
    )
    (dir / "san.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    ossl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
         "-out", "server.crt", "-days", "2", "-extfile", "san.cnf")  # fmt: skip
    return dir / "ca.crt", dir / "server.crt", dir / "server.key"


@contextlib.contextmanager
def running_mosquitto(
    dir: Path,
    *,
    persistence: bool = False,
    extra: str = "",
    users: dict[str, str] | None = None,
    tls: tuple[Path, Path] | None = None,
) -> Iterator[Mosquitto]:
    """Mosquitto on a free port; with ``users`` (name -> password) anonymous clients are refused
    and only those users may connect; with ``tls`` = (certfile, keyfile) the listener speaks TLS
    only (``mqtts://``)."""
    dir.mkdir(parents=True, exist_ok=True)
    # mosquitto started as root drops to its own user before reading password and key files
    run_as = "user root\n" if os.geteuid() == 0 and (users or tls) else ""
    if users:
        extra = f"allow_anonymous false\npassword_file {password_file(dir, users)}\n" + extra
    if tls:
        extra = f"certfile {tls[0]}\nkeyfile {tls[1]}\n" + extra
    extra = run_as + extra
    broker = Mosquitto(dir, free_port(), persistence, extra).start()
    try:
        yield broker
    finally:
        broker.stop()


def reachable_by_others(dir: Path) -> None:
    """Let a server that drops root (PostgreSQL as ``nobody``, Mosquitto as ``mosquitto``)
    reach ``dir`` through pytest's owner-only temporary folders."""
    for parent in dir.parents:
        if str(parent) in ("/", "/tmp"):
            break
        os.chmod(parent, os.stat(parent).st_mode | 0o711)


def pg_bindir() -> Path | None:
    """Debian's PostgreSQL server binaries (``initdb``, ``pg_ctl``), newest version first."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(os.path.realpath(found)).parent
    for d in sorted(
        glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]), reverse=True
    ):
        if os.path.exists(os.path.join(d, "initdb")):
            return Path(d)
    return None


@dataclass
class Postgres:
    dir: Path
    port: int
    bindir: Path

    @property
    def dsn(self) -> str:
        return f"postgresql://adamm@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str) -> None:
        env = {**os.environ, "LC_ALL": "C.UTF-8"}
        subprocess.run(
            args, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=_demote
        )

    def start(self) -> Postgres:
        data = self.dir / "data"
        if not data.exists():
            self._run(
                str(self.bindir / "initdb"),
                "-D",
                str(data),
                "-U",
                "adamm",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-sync",
            )
        self._run(
            str(self.bindir / "pg_ctl"), "-D", str(data), "-l", str(self.dir / "pg.log"), "-w", "-t", "60",
            "-o", f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off", "start",
        )  # fmt: skip
        return self

    def stop(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            self._run(
                str(self.bindir / "pg_ctl"), "-D", str(self.dir / "data"), "-m", "immediate", "-w", "stop"
            )


def _demote() -> None:
    """PostgreSQL refuses to run as root: run its tools as ``nobody`` when the tests are root."""
    if os.geteuid() == 0:
        import pwd

        nobody = pwd.getpwnam("nobody")
        os.setgid(nobody.pw_gid)
        os.setuid(nobody.pw_uid)


@contextlib.contextmanager
def running_postgres(dir: Path) -> Iterator[Postgres]:
    bindir = pg_bindir()
    if bindir is None:
        pytest.fail(
            "PostgreSQL server binaries (initdb, pg_ctl) not found: install Debian's postgresql package"
        )
    dir.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        import pwd

        nobody = pwd.getpwnam("nobody")
        os.chown(dir, nobody.pw_uid, nobody.pw_gid)
        reachable_by_others(dir)
    pg = Postgres(dir, free_port(), bindir).start()
    try:
        yield pg
    finally:
        pg.stop()
