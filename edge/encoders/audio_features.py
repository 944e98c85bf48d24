"""Whisper's log-mel front end in numpy: 16 kHz audio -> (n_mels, 3000) features for 30 s windows.

Same recipe as ``whisper.audio.log_mel_spectrogram``: pad/cut to 30 s, centred STFT (reflect
padding, periodic Hann window, n_fft 400, hop 160), power spectrum, Slaney-style mel filterbank
(librosa ``filters.mel(sr=16000, n_fft=400, n_mels, htk=False, norm="slaney")``, computed here),
``log10(max(x, 1e-10))``, clamp to 8 below the maximum, then ``(x + 4) / 4``. Also the audio
normalisation helpers (int16 -> float, resampling for file sources).

Called by :mod:`edge.encoders.whisper`.
"""

from __future__ import annotations

import logging
from functools import lru_cache

import numpy as np

logger = logging.getLogger(__name__)

SAMPLE_RATE = 16000
N_FFT = 400
HOP_LENGTH = 160
CHUNK_SECONDS = 30
N_SAMPLES = CHUNK_SECONDS * SAMPLE_RATE  # 480000
N_FRAMES = N_SAMPLES // HOP_LENGTH  # 3000


def _hz_to_mel(f: np.ndarray) -> np.ndarray:
    """Slaney mel scale: linear below 1 kHz, logarithmic above (librosa ``htk=False``)."""
    f = np.asarray(f, dtype=np.float64)
    mel = f / (200.0 / 3.0)
    logstep = np.log(6.4) / 27.0
    return np.where(f >= 1000.0, 15.0 + np.log(np.maximum(f, 1e-12) / 1000.0) / logstep, mel)


def _mel_to_hz(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, dtype=np.float64)
    logstep = np.log(6.4) / 27.0
    return np.where(m >= 15.0, 1000.0 * np.exp(logstep * (m - 15.0)), m * (200.0 / 3.0))


@lru_cache(maxsize=4)
def mel_filters(n_mels: int = 80, sample_rate: int = SAMPLE_RATE, n_fft: int = N_FFT) -> np.ndarray:
    """The (n_mels, n_fft // 2 + 1) Slaney-normalised triangular filterbank, float32 (read-only)."""
    fft_freqs = np.linspace(0.0, sample_rate / 2.0, 1 + n_fft // 2)
    mel_edges = np.linspace(_hz_to_mel(np.array(0.0)), _hz_to_mel(np.array(sample_rate / 2.0)), n_mels + 2)
    hz_edges = _mel_to_hz(mel_edges)
    widths = np.diff(hz_edges)
    ramps = hz_edges[:, None] - fft_freqs[None, :]
    lower = -ramps[:-2] / widths[:-1, None]
    upper = ramps[2:] / widths[1:, None]
    weights = np.maximum(0.0, np.minimum(lower, upper))
    weights *= (2.0 / (hz_edges[2 : n_mels + 2] - hz_edges[:n_mels]))[:, None]  # unit area (Slaney)
    out = weights.astype(np.float32)
    out.setflags(write=False)
    return out


def to_float32(audio: np.ndarray) -> np.ndarray:
    """Mono float32 in [-1, 1] from int16 / int32 / float PCM (a (n, ch) array is averaged)."""
    a = np.asarray(audio)
    if a.ndim == 2:
        a = a.mean(axis=1) if a.dtype.kind == "f" else a.astype(np.float64).mean(axis=1).astype(a.dtype)
    if a.dtype == np.int16:
        return a.astype(np.float32) / 32768.0
    if a.dtype == np.int32:
        return a.astype(np.float32) / 2147483648.0
    return a.astype(np.float32, copy=False)


def resample(audio: np.ndarray, rate: int, target: int = SAMPLE_RATE) -> np.ndarray:
    """Polyphase resampling (scipy) of float audio from ``rate`` to ``target`` Hz."""
    if rate == target:
        return np.asarray(audio, dtype=np.float32)
    from math import gcd

    from scipy.signal import resample_poly

    g = gcd(int(rate), int(target))
    return resample_poly(np.asarray(audio, dtype=np.float64), target // g, rate // g).astype(np.float32)


def pad_or_trim(audio: np.ndarray, length: int = N_SAMPLES) -> np.ndarray:
    """Zero-pad or cut 1-d audio to ``length`` samples."""
    a = np.asarray(audio, dtype=np.float32)
    if a.shape[0] >= length:
        return a[:length]
    out = np.zeros(length, dtype=np.float32)
    out[: a.shape[0]] = a
    return out


def log_mel(audio: np.ndarray, n_mels: int = 80) -> np.ndarray:
    """Whisper log-mel features (n_mels, 3000) float32 of float audio at 16 kHz, padded/cut to 30 s."""
    x = pad_or_trim(to_float32(audio)).astype(np.float64)
    x = np.pad(x, N_FFT // 2, mode="reflect")
    window = 0.5 - 0.5 * np.cos(2.0 * np.pi * np.arange(N_FFT) / N_FFT)  # periodic Hann (torch default)
    n_frames = 1 + (x.shape[0] - N_FFT) // HOP_LENGTH
    frames = np.lib.stride_tricks.sliding_window_view(x, N_FFT)[::HOP_LENGTH][:n_frames]
    power = np.abs(np.fft.rfft(frames * window, axis=1)) ** 2  # (n_frames, 201)
    mel = mel_filters(n_mels).astype(np.float64) @ power[:-1].T  # whisper drops the last frame
    logspec = np.log10(np.maximum(mel, 1e-10))
    logspec = np.maximum(logspec, logspec.max() - 8.0)
    return ((logspec + 4.0) / 4.0).astype(np.float32)


def log_mel_batch(chunks: list[np.ndarray], n_mels: int = 80) -> np.ndarray:
    """(B, n_mels, 3000) features of several <= 30 s chunks."""
    if not chunks:
        return np.zeros((0, n_mels, N_FRAMES), dtype=np.float32)
    return np.stack([log_mel(c, n_mels) for c in chunks])
