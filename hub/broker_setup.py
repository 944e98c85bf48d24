"""``adamm-hub broker-setup``: a locked-down Mosquitto set-up for a fleet (CONTRACT.md sections 1 and 5).

Writes to one folder, which ``mosquitto -c DIR/mosquitto.conf`` runs as it is:

- ``mosquitto.conf``: one TLS listener (TLS 1.2 or newer; no plain listener; on every interface or
  only ``--bind ADDRESS``), ``max_packet_size`` (:data:`MAX_PACKET_BYTES`), no anonymous
  users, a password file and an ACL, persistence, and ``use_username_as_clientid`` so a client
  can never take over another user's session: whatever client id it asks for, its session is its
  user's (so each user is one connection; several hub workers use ``hub``, ``hub-2`` ... from
  ``hub_workers``, several devices of one store ``staff-ID-1`` ... from ``staff_devices``);
- ``ca.crt`` / ``ca.key``: a CA made here (kept on reruns), ``server.crt`` / ``server.key``:
  the broker's certificate, valid for ``localhost``, ``127.0.0.1`` and the host's name;
- ``passwd``: Mosquitto's password file (PBKDF2-SHA512, the ``$7$`` format of
  ``mosquitto_passwd``); ``acl``: the contract's ACL, one block per user;
- ``credentials/NAME.env``: ``ADAMM_MQTT_USERNAME``, ``ADAMM_MQTT_PASSWORD``, ``ADAMM_MQTT_CA``
  for each user (readable by the owner only).

Running it again with more store ids adds them and keeps every existing password, the CA and the
server certificate (unless the certificate lacks a host name now asked for, or nears expiry).
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import logging
import os
import re
import secrets
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from edge.errors import UsageError
from edge.sync.messages import MAX_MESSAGE_BYTES, TOPIC_ROOT, valid_store_id

logger = logging.getLogger(__name__)

#: PBKDF2 iterations of Mosquitto's ``$7$`` password hashes (``mosquitto_passwd``'s default)
PBKDF2_ITERATIONS = 101
DEFAULT_PORT = 8883
CA_DAYS = 3650
SERVER_DAYS = 825
#: a server certificate closer than this to its end is renewed on a rerun
RENEW_BEFORE = timedelta(days=30)


@dataclass(frozen=True)
class BrokerSetup:
    """What :func:`broker_setup` wrote."""

    dir: Path
    users: tuple[str, ...]
    added: tuple[str, ...]
    port: int


def hash_password(password: str, salt: bytes | None = None, iterations: int = PBKDF2_ITERATIONS) -> str:
    """A Mosquitto password-file hash (``$7$iterations$salt$hash``, PBKDF2-SHA512)."""
    salt = salt if salt is not None else secrets.token_bytes(12)
    digest = hashlib.pbkdf2_hmac("sha512", password.encode(), salt, iterations, 64)
    return f"$7${iterations}${base64.b64encode(salt).decode()}${base64.b64encode(digest).decode()}"


def users_for(stores: Sequence[str], staff_devices: int = 0, hub_workers: int = 1) -> list[str]:
    """Every user of the set-up: ``hub`` (and ``hub-2``..), each store, ``staff-ID`` (and ``-1``..)."""
    users = ["hub"] + [f"hub-{i}" for i in range(2, hub_workers + 1)]
    for s in stores:
        users.append(s)
        users.append(f"staff-{s}")
        users.extend(f"staff-{s}-{i}" for i in range(1, staff_devices + 1))
    return users


def acl_text(stores: Sequence[str], staff_devices: int = 0, hub_workers: int = 1) -> str:
    """The contract's ACL (section 5): a store publishes only under its own id and reads only its
    acks and receipts; the hub reads all status/summary/ack and writes actions and receipts;
    ``staff-ID`` reads ``ID``'s actions and writes ``ID``'s acks."""
    r = TOPIC_ROOT
    out = ["# written by adamm-hub broker-setup; rerun it to add stores (do not edit by hand)", ""]
    for hub in users_for([], 0, hub_workers):
        out += [
            f"user {hub}",
            f"topic read {r}/+/status",
            f"topic read {r}/+/summary",
            f"topic read {r}/+/ack/#",
            f"topic write {r}/+/action/#",
            f"topic write {r}/+/receipt",
            "",
        ]
    for s in stores:
        out += [
            f"user {s}",
            f"topic write {r}/{s}/status",
            f"topic write {r}/{s}/summary",
            f"topic write {r}/{s}/action/#",
            f"topic read {r}/{s}/ack/#",
            f"topic read {r}/{s}/receipt",
            "",
        ]
        for staff in [f"staff-{s}"] + [f"staff-{s}-{i}" for i in range(1, staff_devices + 1)]:
            out += [f"user {staff}", f"topic read {r}/{s}/action/#", f"topic write {r}/{s}/ack/#", ""]
    return "\n".join(out)


#: the broker's ``max_packet_size``: the largest message as sent (``MAX_MESSAGE_BYTES``, measured
#: with its ``sent_at``) plus room for the fixed header, the topic and the properties
MAX_PACKET_BYTES = MAX_MESSAGE_BYTES + 8192


def conf_text(dir: Path, port: int, bind: str | None = None) -> str:
    d = dir.resolve()
    return "\n".join(
        [
            "# written by adamm-hub broker-setup: run it with `mosquitto -c "
            + str(d / "mosquitto.conf")
            + "`",
            "per_listener_settings false",
            "allow_anonymous false",
            f"password_file {d / 'passwd'}",
            f"acl_file {d / 'acl'}",
            "persistence true",
            f"persistence_location {d / 'data'}/",
            "max_queued_messages 100000",
            "persistent_client_expiration 14d",
            "# the largest packet a client may send: a summary at its limit fits, anything larger is",
            "# refused by the broker (the client is disconnected with reason 0x95, Packet too large)",
            f"max_packet_size {MAX_PACKET_BYTES}",
            "",
            "# TLS only: no plain listener" + (f"; bound to {bind} only" if bind else ""),
            f"listener {port} {bind}" if bind else f"listener {port}",
            "# a client's session is its user's, whatever client id it sends: no session takeover",
            "use_username_as_clientid true",
            f"cafile {d / 'ca.crt'}",
            f"certfile {d / 'server.crt'}",
            f"keyfile {d / 'server.key'}",
            "tls_version tlsv1.2",
            "require_certificate false",
            "",
        ]
    )


def _write_private(path: Path, data: bytes | str) -> None:
    """Write ``path`` readable by its owner only (atomically: a crash leaves the old file)."""
    raw = data.encode() if isinstance(data, str) else data
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(raw)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _read_env(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in path.read_text().splitlines():
        m = re.match(r"^([A-Z_]+)=(.*)$", line.strip())
        if m:
            out[m.group(1)] = m.group(2).strip().strip("'\"")
    return out


def _hostnames() -> list[str]:
    names = ["localhost"]
    for n in (socket.gethostname(), socket.getfqdn()):
        if n and n not in names and re.match(r"^[A-Za-z0-9.-]+$", n):
            names.append(n)
    return names


def _make_ca(dir: Path) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "adamm broker CA")])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(days=CA_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )  # key_cert_sign, crl_sign
        .sign(key, hashes.SHA256())
    )
    _write_private(
        dir / "ca.key",
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ),
    )
    (dir / "ca.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def _server_cert_ok(dir: Path, names: Sequence[str]) -> bool:
    from cryptography import x509

    path = dir / "server.crt"
    if not path.exists() or not (dir / "server.key").exists():
        return False
    cert = x509.load_pem_x509_certificate(path.read_bytes())
    ca = x509.load_pem_x509_certificate((dir / "ca.crt").read_bytes())
    if cert.issuer != ca.subject or cert.not_valid_after_utc - datetime.now(UTC) < RENEW_BEFORE:
        return False
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return set(names) <= set(san.get_values_for_type(x509.DNSName))


def _make_server_cert(dir: Path, names: Sequence[str]) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    ca_key = serialization.load_pem_private_key((dir / "ca.key").read_bytes(), password=None)
    ca = x509.load_pem_x509_certificate((dir / "ca.crt").read_bytes())
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.now(UTC)
    alt: list[x509.GeneralName] = [x509.DNSName(n) for n in names]
    alt.append(x509.IPAddress(ipaddress.ip_address("127.0.0.1")))
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[-1])]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(days=SERVER_DAYS))
        .add_extension(x509.SubjectAlternativeName(alt), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())  # type: ignore[arg-type]
    )
    _write_private(
        dir / "server.key",
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ),
    )
    (dir / "server.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))


#: what the broker process must read (and ``data/``, where it writes its persistence file)
_BROKER_READS = ("passwd", "acl", "server.key", "data")


def _hand_to_broker_user(dir: Path) -> None:
    """Started as root, Mosquitto drops to its ``mosquitto`` user before it reads the password
    file and keys: give that user the files it reads (owner-only modes stay). Started as any
    other user it keeps that user, who owns them already."""
    if os.geteuid() != 0:
        return
    import pwd

    try:
        broker = pwd.getpwnam("mosquitto")
    except KeyError:
        return
    for name in _BROKER_READS:
        os.chown(dir / name, broker.pw_uid, broker.pw_gid)
    for parent in dir.resolve().parents:
        if not os.stat(parent).st_mode & 0o001:
            logger.warning(
                "the broker's user 'mosquitto' cannot enter %s, so it cannot read %s: "
                "`chmod o+x %s` or choose another --dir",
                parent,
                dir / "passwd",
                parent,
            )
            break


def broker_setup(
    dir: Path,
    stores: Sequence[str],
    *,
    port: int | None = None,
    staff_devices: int = 0,
    hub_workers: int = 1,
    hostnames: Sequence[str] | None = None,
    bind: str | None = None,
) -> BrokerSetup:
    """Write (or extend) the set-up in ``dir``; see the module docstring. ``bind``: the address
    the listener listens on (default every interface; a rerun keeps the set-up's)."""
    bad = [s for s in stores if not valid_store_id(s) or s == "hub" or s.startswith(("staff-", "hub-"))]
    if bad or not stores:
        raise UsageError(
            f"store ids must be letters, digits, '_', '.', '-' (not 'hub', 'hub-N' or 'staff-...'): {', '.join(bad) or 'none given'}"
        )
    conf = dir / "mosquitto.conf"
    old = re.search(r"^listener (\d+)(?: (\S+))?$", conf.read_text(), re.M) if conf.exists() else None
    if port is None:  # a rerun keeps the port of the set-up it extends
        port = int(old.group(1)) if old else DEFAULT_PORT
    if bind is None and old is not None:  # and its bind address
        bind = old.group(2)
    if bind is not None:
        try:
            bind = str(ipaddress.ip_address(bind))
        except ValueError:
            raise UsageError(
                f"--bind {bind!r} is not an IP address",
                hint="give one of this host's addresses, e.g. 127.0.0.1",
            ) from None
    if not 1 <= port <= 65535 or staff_devices < 0 or hub_workers < 1:
        raise UsageError("--port must be 1-65535, --staff-devices >= 0, --hub-workers >= 1")
    dir.mkdir(parents=True, exist_ok=True)
    creds = dir / "credentials"
    creds.mkdir(mode=0o700, exist_ok=True)
    # stores from earlier runs are kept: the set-up only grows
    known = sorted({p.stem for p in creds.glob("*.env")} - {"hub"})
    old_stores = [u for u in known if not u.startswith(("staff-", "hub-"))]
    all_stores = list(dict.fromkeys([*old_stores, *stores]))
    old_staff = max(
        [
            int(u[len(f"staff-{st}-") :])
            for st in old_stores
            for u in known
            if re.fullmatch(rf"staff-{re.escape(st)}-\d+", u)
        ]
        + [0]
    )
    old_hubs = max([int(u.split("-")[1]) for u in known if re.match(r"^hub-\d+$", u)] + [1])
    staff_devices = max(staff_devices, old_staff)
    hub_workers = max(hub_workers, old_hubs)

    if not (dir / "ca.crt").exists() or not (dir / "ca.key").exists():
        _make_ca(dir)
    names = list(hostnames) if hostnames is not None else _hostnames()
    if not _server_cert_ok(dir, names):
        _make_server_cert(dir, names)

    users = users_for(all_stores, staff_devices, hub_workers)
    added: list[str] = []
    lines: list[str] = []
    for user in users:
        env_path = creds / f"{user}.env"
        password = _read_env(env_path).get("ADAMM_MQTT_PASSWORD") if env_path.exists() else None
        if not password:
            password = secrets.token_urlsafe(24)
            added.append(user)
            _write_private(
                env_path,
                f"ADAMM_MQTT_USERNAME={user}\nADAMM_MQTT_PASSWORD={password}\nADAMM_MQTT_CA={(dir / 'ca.crt').resolve()}\n",
            )
        lines.append(f"{user}:{hash_password(password)}")
    _write_private(dir / "passwd", "\n".join(lines) + "\n")
    _write_private(dir / "acl", acl_text(all_stores, staff_devices, hub_workers))
    (dir / "data").mkdir(exist_ok=True)
    (dir / "mosquitto.conf").write_text(conf_text(dir, port, bind))
    _hand_to_broker_user(dir)
    logger.info("broker set-up in %s: %d users (%d new)", dir, len(users), len(added))
    return BrokerSetup(dir, tuple(users), tuple(added), port)
