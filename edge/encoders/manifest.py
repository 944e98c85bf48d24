"""Reads ``edge/encoders/manifest.toml`` and locates model files, checking their sha256.

Called by encoders when they load. A missing or altered file is a :class:`ModelMissingError`
naming the package to install.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import json
import logging
import os
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from edge.errors import ModelMissingError

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelEntry:
    key: str
    modality: str
    dim: int
    package: str | None
    install: str | None
    raw: dict[str, Any]


@lru_cache(maxsize=1)
def load_manifest() -> dict[str, ModelEntry]:
    text = importlib.resources.files("edge.encoders").joinpath("manifest.toml").read_text(encoding="utf-8")
    data = tomllib.loads(text)
    entries = {}
    for key, raw in data.get("models", {}).items():
        entries[key] = ModelEntry(
            key=key,
            modality=raw["modality"],
            dim=int(raw.get("dim", 0)),
            package=raw.get("package"),
            install=raw.get("install"),
            raw=raw,
        )
    return entries


def entry(key: str) -> ModelEntry:
    try:
        return load_manifest()[key]
    except KeyError:
        raise ModelMissingError(f"model {key!r} is not in edge/encoders/manifest.toml") from None


def sha256_file(path: str | Path) -> str:
    """The hex SHA-256 of a file, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@lru_cache(maxsize=16)
def _sha256(path: str, size: int, mtime: float) -> str:
    return sha256_file(path)


def resource_path(
    key: str,
    *,
    verify: bool = True,
    field: str = "resource",
    sha_field: str = "sha256",
    what: str = "model file",
) -> Path:
    """The installed file of a package-shipped model (or, with ``field``/``sha_field``, another file
    its manifest entry names, e.g. a labels file), checked against its sha256."""
    e = entry(key)
    res = str(e.raw.get(field) or "")
    if not res:
        raise ModelMissingError(f"model {key!r} has no packaged {field} in the manifest")
    top, _, rest = res.partition("/")
    try:
        path = Path(str(importlib.resources.files(top).joinpath(rest)))
    except ModuleNotFoundError:
        path = Path("/nonexistent")
    if not path.is_file():
        raise ModelMissingError(
            f"{what} for {key!r} is not installed ({res})",
            hint=e.install or f"install {e.package}",
        )
    want = e.raw.get(sha_field)
    if verify and want:
        st = path.stat()
        digest = _sha256(str(path), st.st_size, st.st_mtime)
        if digest != want:
            raise ModelMissingError(
                f"{what} {path} does not match its {sha_field} in edge/encoders/manifest.toml",
                hint=e.install or "reinstall its package",
            )
    return path


#: per model folder: the files whose sha256 was checked, with the size and mtime they had then
VERIFIED_RECORD = ".sha256-verified.json"


def verify_folder_files(
    folder: Path, expected: Mapping[str, str], names: Iterable[str], *, hint: str
) -> None:
    """Check the files ``names`` of an exported model folder against ``expected`` (file name ->
    sha256, as the export wrote them into the folder's ``config.json``; names without a digest are
    not checked). A file hashed once is recorded in :data:`VERIFIED_RECORD` with its size and mtime,
    so later loads hash it again only when it changed (hundreds of MB take a second or two).
    Raises :class:`ModelMissingError` naming the file that does not match."""
    record_path = folder / VERIFIED_RECORD
    try:
        record = json.loads(record_path.read_text(encoding="utf-8"))
        if not isinstance(record, dict):
            record = {}
    except (OSError, ValueError):
        record = {}
    changed = False
    for name in names:
        want = expected.get(name)
        if not want:
            continue
        path = folder / name
        st = path.stat()
        stamp = [st.st_size, st.st_mtime_ns, want]
        if record.get(name) == stamp:
            continue
        if _sha256(str(path), st.st_size, st.st_mtime) != want:
            raise ModelMissingError(
                f"{path} does not match its sha256 in {folder / 'config.json'}: it changed or was damaged "
                "after the export",
                hint=hint,
            )
        record[name] = stamp
        changed = True
    if changed:
        tmp = record_path.with_name(record_path.name + ".tmp")
        try:
            tmp.write_text(json.dumps(record, indent=1), encoding="utf-8")
            os.replace(tmp, record_path)
        except OSError as exc:  # a read-only folder: check again next time
            logger.debug("cannot record verified model files in %s: %s", folder, exc)
