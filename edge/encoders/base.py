"""The encoder interface, the registry by key, and ONNX Runtime provider selection.

Every encoder (text, speech, people, image-text) is a subclass of :class:`Encoder` registered under
a string key; configuration names the key (``[encoders] text = "use_v3_multilingual"``) and
:func:`create` builds it, with an error listing the valid keys when the key is unknown. Model
files are located through ``edge/encoders/manifest.toml`` (see :mod:`edge.encoders.manifest`), never
downloaded. Called by the store (text vectors at import), the daemon and the benchmarks.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from edge.errors import ConfigError

logger = logging.getLogger(__name__)

DEFAULT_PROVIDERS = ("TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider")


class Encoder(ABC):
    """Turns a batch of inputs of one modality into unit-norm float32 vectors (n x dim)."""

    key: ClassVar[str]
    modality: ClassVar[str]  # "text" | "image" | "audio" | "video"
    dim: ClassVar[int]

    @abstractmethod
    def encode(self, items: Sequence[Any]) -> np.ndarray:
        """Encode ``items``; returns an (n, dim) float32 array of unit-norm rows."""

    @property
    def providers(self) -> list[str]:
        """The ONNX Runtime providers in use (for status and logs)."""
        return []


@dataclass(frozen=True)
class ImageText:
    """What an image-text encoder says about a set of frames (one event's keyframes).

    ``space`` is where ``vector`` (unit norm) lives: ``"text"`` (the labels_as_text stand-in:
    comparable with text-encoder query vectors, stored as ``embedding.text``) or ``"image"`` (CLIP:
    stored as ``embedding.image``). ``labels`` are (name, weight) pairs, highest first (empty for CLIP)."""

    vector: np.ndarray
    space: str
    labels: list[tuple[str, float]]


REGISTRY: dict[str, type[Encoder]] = {}


def register(cls: type[Encoder]) -> type[Encoder]:
    """Class decorator: make an encoder available under its ``key``."""
    if cls.key in REGISTRY and REGISTRY[cls.key] is not cls:
        raise ValueError(f"encoder key {cls.key!r} registered twice")
    REGISTRY[cls.key] = cls
    return cls


def create(key: str, **kwargs: Any) -> Encoder:
    """Build the encoder registered under ``key``."""
    _load_builtin()
    try:
        cls = REGISTRY[key]
    except KeyError:
        valid = ", ".join(sorted(REGISTRY)) or "(none)"
        raise ConfigError(f"unknown encoder {key!r}; valid keys: {valid}") from None
    return cls(**kwargs)


def _load_builtin() -> None:
    """Import the built-in encoder modules so their ``@register`` runs."""
    import importlib

    for module in (
        "edge.encoders.text_use",
        "edge.encoders.people_ssd",
        "edge.encoders.whisper_ct2",
        "edge.encoders.whisper",
        "edge.encoders.labels_text",
        "edge.encoders.clip",
    ):
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise


def select_providers(wanted: Sequence[str] = DEFAULT_PROVIDERS) -> list[str]:
    """The wanted ONNX Runtime providers that this machine has, in the wanted order (CPU last resort)."""
    import onnxruntime as ort

    available = set(ort.get_available_providers())
    chosen = [p for p in wanted if p in available]
    if "CPUExecutionProvider" not in chosen:
        chosen.append("CPUExecutionProvider")
    skipped = [p for p in wanted if p not in available]
    if skipped:
        logger.info("ONNX Runtime providers not available here: %s", ", ".join(skipped))
    return chosen


def provider_chain(providers: Sequence[str], engine_cache_dir: Path) -> list[Any]:
    """ORT providers with their options: TensorRT FP16 + engine cache, CUDA, CPU (what this machine has).

    The one provider chain of every ONNX Runtime encoder (speech, CLIP, the ONNX people detector);
    ``engine_cache_dir`` is created only when TensorRT is used."""
    chain: list[Any] = []
    for p in select_providers(providers):
        if p == "TensorrtExecutionProvider":
            engine_cache_dir.mkdir(parents=True, exist_ok=True)
            chain.append(
                (
                    p,
                    {
                        "trt_fp16_enable": True,
                        "trt_engine_cache_enable": True,
                        "trt_engine_cache_path": str(engine_cache_dir),
                    },
                )
            )
        else:
            chain.append(p)
    return chain


def l2_normalize(x: np.ndarray) -> np.ndarray:
    """Row-normalise to unit length (zero rows stay zero)."""
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return x / norms


@lru_cache(maxsize=1)
def bytes_to_unicode() -> dict[int, str]:
    """GPT-2/CLIP byte-level BPE: a printable character standing for each of the 256 bytes."""
    bs = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs, strict=True)}


@lru_cache(maxsize=1)
def byte_decoder() -> dict[str, int]:
    """:func:`bytes_to_unicode` reversed: the byte each printable character stands for."""
    return {c: b for b, c in bytes_to_unicode().items()}


def ort_sessions(
    folder: Path, files: Sequence[str], providers: Sequence[str], engine_cache_dir: Path, threads: int = 0
) -> list[Any]:
    """ONNX Runtime sessions for ``files`` in ``folder``, all on :func:`provider_chain` with full graph
    optimisation (and ``threads`` intra-op threads when > 0)."""
    import onnxruntime as ort

    chain = provider_chain(providers, engine_cache_dir)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if threads > 0:
        options.intra_op_num_threads = int(threads)
    return [ort.InferenceSession(str(folder / f), options, providers=chain) for f in files]
