"""CLIP ViT-B/16 image and text towers through ONNX Runtime (key ``clip_vit_b16``), and the CLIP BPE tokenizer.

No CLIP weights are obtainable from the package registries, so the model folder is made once by
``models/export_clip.py`` from an open_clip or Hugging Face checkpoint the operator has (torch is
a build-time need only). The folder (``<models_dir>/clip_vit_b16/`` unless configured) holds:

* ``image.onnx``: input ``pixel_values`` float32 (n, 3, S, S), output ``image_embeds`` (n, D);
* ``text.onnx``: input ``input_ids`` int64 (n, L), output ``text_embeds`` (n, D);
  both outputs are the projected, not yet normalised embeddings;
* ``vocab.json`` + ``merges.txt``: the CLIP byte-level BPE (Hugging Face layout; open_clip's
  ``bpe_simple_vocab_16e6.txt.gz`` converted by the export script);
* ``config.json``: ``embed_dim`` (D), ``image_size`` (S), ``context_length`` (L), ``mean``/``std``
  (RGB pixel normalisation), ``sot_token``/``eot_token``/``pad_token``, where it came from, and
  ``sha256`` of the four files above: each is checked before use (recorded in
  ``.sha256-verified.json`` with its size and mtime, so it is hashed again only when it changed).

Image pre-processing follows CLIP's: RGB, resize the short side to S (bicubic), centre crop
S x S, scale to [0, 1], normalise by mean/std. Text: :class:`ClipTokenizer` (pure Python, same
algorithm as open_clip's ``SimpleTokenizer``: whitespace-cleaned, lower-cased, regex
pre-tokenised, byte-level BPE with ``</w>`` word ends), ``<|startoftext|>`` (49406) first,
``<|endoftext|>`` (49407) last, truncated to L with the end token kept, padded with 0 (the text
tower pools at the end token, the highest id). Unlike open_clip it does not run ``ftfy`` (a
mojibake fixer); text is NFC-normalised and HTML-unescaped instead, which is the same for clean text.

Providers: TensorRT EP (FP16, engine cache under the model folder) -> CUDA EP -> CPU, as every
encoder (:func:`edge.encoders.base.provider_chain`). Image vectors go into ``embedding.image``;
:meth:`ClipEncoder.encode_text` gives query vectors in the same space. Called by the daemon's video
worker (``[image_text] encoder = "clip_vit_b16"``), ``scripts/gpu_check.sh`` and the tests.
"""

from __future__ import annotations

import gzip
import html
import json
import logging
import os
import threading
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from edge.encoders.base import (
    DEFAULT_PROVIDERS,
    Encoder,
    ImageText,
    byte_decoder,
    bytes_to_unicode,
    l2_normalize,
    ort_sessions,
    register,
)
from edge.encoders.manifest import verify_folder_files
from edge.errors import ModelMissingError

logger = logging.getLogger(__name__)

SOT = "<|startoftext|>"
EOT = "<|endoftext|>"
FOLDER = "clip_vit_b16"
CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
#: the number of merges CLIP uses from its BPE file (vocabulary 49408 = 512 byte symbols + merges + 2)
CLIP_MERGES = 49152 - 256 - 2


def vocab_from_merges(merges: Sequence[tuple[str, str]]) -> dict[str, int]:
    """CLIP's vocabulary as open_clip builds it from the merge list: 256 byte symbols, the same with
    ``</w>``, one token per merge, then the start and end tokens."""
    symbols = list(bytes_to_unicode().values())
    vocab = symbols + [s + "</w>" for s in symbols] + ["".join(m) for m in merges] + [SOT, EOT]
    return {tok: i for i, tok in enumerate(vocab)}


def read_bpe_gz(path: str | os.PathLike[str], n_merges: int = CLIP_MERGES) -> list[tuple[str, str]]:
    """The merges of open_clip's ``bpe_simple_vocab_16e6.txt.gz`` (first line is a header)."""
    lines = gzip.open(path, "rt", encoding="utf-8").read().split("\n")
    return [_pair(line) for line in lines[1 : n_merges + 1]]


def _pair(line: str) -> tuple[str, str]:
    a, b = line.split()
    return a, b


class ClipTokenizer:
    """CLIP's byte-level BPE tokenizer in pure Python; see the module docstring. Thread-safe."""

    def __init__(
        self,
        vocab: dict[str, int],
        merges: Sequence[tuple[str, str]],
        context_length: int = 77,
        pad_token: int = 0,
    ) -> None:
        import regex

        self.encoder = dict(vocab)
        self.decoder = {i: t for t, i in self.encoder.items()}
        self.bpe_ranks = {tuple(m): i for i, m in enumerate(merges)}
        self.context_length = int(context_length)
        self.sot = self.encoder[SOT]
        self.eot = self.encoder[EOT]
        self.pad = int(pad_token)
        self.byte_encoder = bytes_to_unicode()
        self.byte_decoder = byte_decoder()
        self._cache: dict[str, str] = {SOT: SOT, EOT: EOT}
        self._lock = threading.Lock()
        self._pat = regex.compile(
            r"""<\|startoftext\|>|<\|endoftext\|>|'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+""",
            regex.IGNORECASE,
        )

    @classmethod
    def from_folder(
        cls, folder: str | os.PathLike[str], context_length: int = 77, pad_token: int = 0
    ) -> ClipTokenizer:
        """From ``vocab.json`` + ``merges.txt`` (Hugging Face layout, ``#version`` header skipped)."""
        folder = Path(folder)
        vocab = json.loads((folder / "vocab.json").read_text(encoding="utf-8"))
        lines = (folder / "merges.txt").read_text(encoding="utf-8").split("\n")
        merges = [_pair(line) for line in lines if line.strip() and not line.startswith("#version")]
        return cls(vocab, merges, context_length, pad_token)

    @classmethod
    def from_bpe_gz(cls, path: str | os.PathLike[str], context_length: int = 77) -> ClipTokenizer:
        """From open_clip's ``bpe_simple_vocab_16e6.txt.gz`` (the vocabulary is derived from the merges)."""
        merges = read_bpe_gz(path)
        return cls(vocab_from_merges(merges), merges, context_length)

    @staticmethod
    def clean(text: str) -> str:
        text = html.unescape(html.unescape(unicodedata.normalize("NFC", text)))
        return " ".join(text.split()).lower()

    def bpe(self, token: str) -> str:
        """The BPE pieces of one pre-token (byte symbols), space-separated, the last with ``</w>``."""
        cached = self._cache.get(token)
        if cached is not None:
            return cached
        word: tuple[str, ...] = (*token[:-1], token[-1] + "</w>")
        while len(word) > 1:
            pairs = {(word[i], word[i + 1]) for i in range(len(word) - 1)}
            best = min(pairs, key=lambda p: self.bpe_ranks.get(p, float("inf")))
            if best not in self.bpe_ranks:
                break
            first, second = best
            merged: list[str] = []
            i = 0
            while i < len(word):
                if i < len(word) - 1 and word[i] == first and word[i + 1] == second:
                    merged.append(first + second)
                    i += 2
                else:
                    merged.append(word[i])
                    i += 1
            word = tuple(merged)
        out = " ".join(word)
        with self._lock:
            if len(self._cache) < 100_000:
                self._cache[token] = out
        return out

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` without the start/end tokens."""
        ids: list[int] = []
        for token in self._pat.findall(self.clean(text)):
            symbols = "".join(self.byte_encoder[b] for b in token.encode("utf-8"))
            ids.extend(self.encoder[piece] for piece in self.bpe(symbols).split(" "))
        return ids

    def decode(self, ids: Sequence[int]) -> str:
        """Text of token ids (start, end and padding left out); word ends become spaces."""
        skip = {self.sot, self.eot, self.pad}
        text = "".join(self.decoder.get(int(i), "") for i in ids if int(i) not in skip)
        words = [bytes(self.byte_decoder[c] for c in w if c in self.byte_decoder) for w in text.split("</w>")]
        return b" ".join(words).decode("utf-8", errors="replace").strip()

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        """(n, context_length) int64: start, tokens, end (kept when truncated), then padding."""
        out = np.full((len(texts), self.context_length), self.pad, dtype=np.int64)
        for row, text in enumerate(texts):
            ids = [self.sot, *self.encode(text), self.eot]
            if len(ids) > self.context_length:
                ids = ids[: self.context_length]
                ids[-1] = self.eot
            out[row, : len(ids)] = ids
        return out


def default_folder(models_dir: str | os.PathLike[str] | None = None) -> Path:
    """``<models_dir>/clip_vit_b16`` (models_dir: argument, else ``$ADAMM_MODELS_DIR``, else
    ``~/.cache/adamm/models``)."""
    root = models_dir or os.environ.get("ADAMM_MODELS_DIR") or "~/.cache/adamm/models"
    return Path(root).expanduser() / FOLDER


def preprocess(
    images: Sequence[np.ndarray], size: int, mean: Sequence[float], std: Sequence[float]
) -> np.ndarray:
    """BGR uint8 frames -> (n, 3, size, size) float32: short side to ``size`` (bicubic), centre crop,
    [0, 1], normalised per RGB channel."""
    import cv2

    m = np.asarray(mean, dtype=np.float32).reshape(1, 1, 3)
    s = np.asarray(std, dtype=np.float32).reshape(1, 1, 3)
    out = np.empty((len(images), 3, size, size), dtype=np.float32)
    for i, img in enumerate(images):
        h, w = img.shape[:2]
        scale = size / min(h, w)
        nh, nw = max(size, round(h * scale)), max(size, round(w * scale))
        rgb = cv2.cvtColor(np.ascontiguousarray(img), cv2.COLOR_BGR2RGB)
        resized = cv2.resize(rgb, (nw, nh), interpolation=cv2.INTER_CUBIC)
        top, left = (nh - size) // 2, (nw - size) // 2
        crop = resized[top : top + size, left : left + size].astype(np.float32) / 255.0
        out[i] = ((crop - m) / s).transpose(2, 0, 1)
    return out


@register
class ClipEncoder(Encoder):
    """CLIP image + text towers from an exported model folder; see the module docstring."""

    key = "clip_vit_b16"
    modality = "image"
    dim = 512
    space: ClassVar[str] = "image"

    def __init__(
        self,
        model_dir: str | os.PathLike[str] | None = None,
        models_dir: str | os.PathLike[str] | None = None,
        providers: Sequence[str] = DEFAULT_PROVIDERS,
        engine_cache_dir: str | os.PathLike[str] | None = None,
        batch_size: int = 8,
        threads: int = 0,
        **_: Any,
    ) -> None:

        folder = Path(model_dir).expanduser() if model_dir else default_folder(models_dir)
        need = ("image.onnx", "text.onnx", "vocab.json", "merges.txt", "config.json")
        missing = [n for n in need if not (folder / n).is_file()]
        if missing:
            raise ModelMissingError(
                f"the CLIP model folder {folder} lacks {', '.join(missing)} (no CLIP weights ship in "
                "any package)",
                hint="export it once from a checkpoint you have: python -m models.export_clip --help",
            )
        self.folder = folder
        self.config: dict[str, Any] = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        # the sha256 sums export_clip wrote; each tower's file is checked when it loads
        self._sha256: dict[str, str] = dict(self.config.get("sha256") or {})
        self._verify("vocab.json", "merges.txt")
        self.dim = int(self.config.get("embed_dim", 512))  # type: ignore[misc]
        self.image_size = int(self.config.get("image_size", 224))
        self.mean = tuple(self.config.get("mean", CLIP_MEAN))
        self.std = tuple(self.config.get("std", CLIP_STD))
        self.tokenizer = ClipTokenizer.from_folder(
            folder, int(self.config.get("context_length", 77)), int(self.config.get("pad_token", 0))
        )
        for name in ("sot_token", "eot_token"):
            want = self.config.get(name)
            got = self.tokenizer.sot if name == "sot_token" else self.tokenizer.eot
            if want is not None and int(want) != got:
                raise ModelMissingError(f"{folder}/config.json says {name} {want}, vocab.json has {got}")
        engines = Path(engine_cache_dir).expanduser() if engine_cache_dir else folder / "trt_engines"
        # each tower on first use: the daemon needs only the image tower, a text query only the text one
        self._session_args = (tuple(providers), engines, threads)
        self._sessions: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._batch = max(1, int(batch_size))
        logger.info("image-text encoder %s (%d-d, %d px) in %s", self.key, self.dim, self.image_size, folder)

    @property
    def providers(self) -> list[str]:
        """What ONNX Runtime gave the towers loaded so far (loads the text tower when none is)."""
        session = next(iter(self._sessions.values()), None) or self._tower("text.onnx")
        return list(session.get_providers())

    def _verify(self, *names: str) -> None:
        verify_folder_files(
            self.folder, self._sha256, names, hint="export it again: python -m models.export_clip --help"
        )

    def _tower(self, name: str) -> Any:
        with self._lock:
            session = self._sessions.get(name)
            if session is None:
                self._verify(name)
                (session,) = ort_sessions(self.folder, (name,), *self._session_args)
                self._sessions[name] = session
                logger.info("%s: %s loaded; providers %s", self.key, name, ", ".join(session.get_providers()))
            return session

    def encode(self, items: Sequence[Any]) -> np.ndarray:
        """Unit-norm image vectors of BGR uint8 frames."""
        images = list(items)
        if not images:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = []
        for i in range(0, len(images), self._batch):
            x = preprocess(images[i : i + self._batch], self.image_size, self.mean, self.std)
            image = self._tower("image.onnx")
            (y,) = image.run([image.get_outputs()[0].name], {image.get_inputs()[0].name: x})
            out.append(np.asarray(y, dtype=np.float32))
        return l2_normalize(np.concatenate(out, axis=0))

    def encode_text(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-norm text vectors in the image space (for queries and zero-shot labels)."""
        texts = [str(t) for t in texts]
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = []
        for i in range(0, len(texts), self._batch):
            ids = self.tokenizer(texts[i : i + self._batch])
            text = self._tower("text.onnx")
            (y,) = text.run([text.get_outputs()[0].name], {text.get_inputs()[0].name: ids})
            out.append(np.asarray(y, dtype=np.float32))
        return l2_normalize(np.concatenate(out, axis=0))

    def encode_event(self, images: Sequence[np.ndarray], top: int = 5, objects: Any = None) -> ImageText:
        """One vector for a set of keyframes: the mean of their image vectors, re-normalised
        (``objects``, the frames' detector labels, is not used by CLIP)."""
        vecs = self.encode(list(images))
        v = vecs.mean(axis=0, keepdims=True) if len(vecs) else np.zeros((1, self.dim), np.float32)
        return ImageText(l2_normalize(v)[0], self.space, [])
