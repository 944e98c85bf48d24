"""Real servers for the sync tests: Mosquitto with the project's configuration
(``config/mosquitto/adamm.conf``) and PostgreSQL from Debian's packages (``initdb`` +
``pg_ctl`` in a temporary folder), each on a free port, started and stopped by the tests; and an
MQTT 3.1.1-only broker (:func:`running_mqtt311`: a TCP proxy in front of a real Mosquitto that
refuses MQTT 5 clients as a 3.1.1 broker does, or with ``silent=True`` never answers them); amqtt, a
real 3.1.1-only broker (:func:`running_amqtt`); and :class:`SilentServer`, a port that accepts TCP
and answers no CONNECT."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
    # started as root, the project's configuration keeps root (its `user root`), so the broker
    # reads the password and key files written here
    if users:
        extra = f"allow_anonymous false\npassword_file {password_file(dir, users)}\n" + extra
    if tls:
        extra = f"certfile {tls[0]}\nkeyfile {tls[1]}\n" + extra
    broker = Mosquitto(dir, free_port(), persistence, extra).start()
    try:
        yield broker
    finally:
        broker.stop()


#: what a 3.1.1 broker answers an MQTT 5 CONNECT: CONNACK, no session, return code 1
#: ("unacceptable protocol version")
CONNACK_UNACCEPTABLE_PROTOCOL = bytes([0x20, 0x02, 0x00, 0x01])


def read_exact(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


def read_packet(sock: socket.socket) -> bytes:
    """One whole MQTT control packet (fixed header, remaining length, the rest)."""
    head = read_exact(sock, 1)
    length, shift, raw = 0, 0, b""
    while True:
        b = read_exact(sock, 1)
        raw += b
        length |= (b[0] & 0x7F) << shift
        shift += 7
        if not b[0] & 0x80:
            break
        if shift > 21:
            raise ConnectionError("bad remaining length")
    return head + raw + read_exact(sock, length)


def connect_fields(packet: bytes) -> tuple[int, str]:
    """(protocol level, client id) of a CONNECT packet (level 4 is MQTT 3.1.1, 5 is MQTT 5)."""
    i = 1
    while packet[i] & 0x80:
        i += 1
    i += 1  # past the remaining length
    name_len = int.from_bytes(packet[i : i + 2], "big")
    i += 2 + name_len
    level = packet[i]
    i += 1 + 1 + 2  # level, connect flags, keep alive
    if level == 5:  # the CONNECT properties: a variable byte integer length, then the properties
        plen, shift = 0, 0
        while True:
            b = packet[i]
            i += 1
            plen |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        i += plen
    id_len = int.from_bytes(packet[i : i + 2], "big")
    return level, packet[i + 2 : i + 2 + id_len].decode("utf-8", "replace")


class Mqtt311Proxy:
    """An MQTT 3.1.1-only broker on a free port: a TCP proxy in front of a real broker (``upstream``,
    a port on 127.0.0.1) that reads each client's first packet, its CONNECT; protocol level 5 is
    answered with CONNACK return code 1 (:data:`CONNACK_UNACCEPTABLE_PROTOCOL`) and closed, any
    other level is forwarded, and the bytes then flow both ways untouched. :attr:`connects` lists
    (protocol level, client id) of every CONNECT, in order. ``silent``: an MQTT 5 CONNECT gets no
    answer at all (the connection stays open until the client closes it), as some 3.1.1 brokers do."""

    def __init__(self, upstream: int, silent: bool = False) -> None:
        self.upstream = upstream
        self.silent = silent
        self.connects: list[tuple[int, str]] = []
        self._lock = threading.Lock()
        self._socks: list[socket.socket] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._closed = False
        self._thread = threading.Thread(target=self._accept, name="mqtt311-proxy", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"mqtt://127.0.0.1:{self.port}"

    def levels(self, client_id: str) -> list[int]:
        """The protocol levels ``client_id`` connected with, in order."""
        with self._lock:
            return [lvl for lvl, cid in self.connects if cid == client_id]

    def _track(self, sock: socket.socket) -> None:
        with self._lock:
            self._socks.append(sock)

    def _accept(self) -> None:
        while True:
            try:
                client, _addr = self._listener.accept()
            except OSError:
                return
            self._track(client)
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        try:
            first = read_packet(client)
            if first[0] & 0xF0 != 0x10:  # not a CONNECT: a broker closes the connection
                raise ConnectionError("the first packet is not a CONNECT")
            level, client_id = connect_fields(first)
            with self._lock:
                self.connects.append((level, client_id))
            if level == 5 and self.silent:
                while client.recv(4096):  # nothing answered, until the client gives up
                    pass
                raise ConnectionError("MQTT 5 ignored")
            if level == 5:
                client.sendall(CONNACK_UNACCEPTABLE_PROTOCOL)
                raise ConnectionError("MQTT 5 refused")
            upstream = socket.create_connection(("127.0.0.1", self.upstream), timeout=10)
            upstream.settimeout(None)
            self._track(upstream)
            upstream.sendall(first)
        except (OSError, ConnectionError, IndexError):
            with contextlib.suppress(OSError):
                client.close()
            return
        threading.Thread(target=self._pipe, args=(upstream, client), daemon=True).start()
        self._pipe(client, upstream)

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):  # either side gone: both connections end
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                s.close()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the thread blocked in accept()
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._lock:
            socks, self._socks = self._socks, []
        for s in socks:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                s.close()
        self._thread.join(5)


@contextlib.contextmanager
def running_mqtt311(dir: Path, **mosquitto: Any) -> Iterator[tuple[Mqtt311Proxy, Mosquitto]]:
    """A real Mosquitto (:func:`running_mosquitto` with ``mosquitto``'s options) behind an
    :class:`Mqtt311Proxy`: (the proxy, the broker). Clients connect to the proxy's URL."""
    with running_mosquitto(dir, **mosquitto) as broker:
        proxy = Mqtt311Proxy(broker.port)
        try:
            yield proxy, broker
        finally:
            proxy.close()


class SilentServer:
    """A port that accepts TCP connections and never answers anything (no MQTT version)."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self.accepted = 0
        self._socks: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, name="silent-server", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"mqtt://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while True:
            try:
                sock, _addr = self._listener.accept()
            except OSError:
                return
            self.accepted += 1
            self._socks.append(sock)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the thread blocked in accept()
        with contextlib.suppress(OSError):
            self._listener.close()
        for s in self._socks:
            with contextlib.suppress(OSError):
                s.close()
        self._thread.join(5)


def amqtt_command() -> str | None:
    """The ``amqtt`` broker command (a 3.1.1-only broker from PyPI, in the dev extras), or None."""
    beside = Path(sys.executable).parent / "amqtt"
    return str(beside) if beside.exists() else shutil.which("amqtt")


@contextlib.contextmanager
def running_amqtt(dir: Path) -> Iterator[str]:
    """amqtt on a free loopback port (anonymous): its ``mqtt://`` URL."""
    command = amqtt_command()
    if command is None:
        pytest.skip("amqtt is not installed (pip install -e '.[dev]')")
    dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    conf = dir / "amqtt.yaml"
    conf.write_text(
        "listeners:\n  default:\n    type: tcp\n"
        f"    bind: 127.0.0.1:{port}\n"
        "plugins:\n  amqtt.plugins.authentication.AnonymousAuthPlugin:\n    allow_anonymous: true\n"
    )
    with (dir / "amqtt.log").open("wb") as log:
        proc = subprocess.Popen([command, "-c", str(conf)], stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait_port(port, proc, "amqtt", timeout=30)
        yield f"mqtt://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


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
