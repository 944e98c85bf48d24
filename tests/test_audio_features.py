"""Whisper's numpy log-mel front end against an independent scipy.signal.stft computation, the
Slaney filterbank's shape, and the audio helpers."""

from __future__ import annotations

import numpy as np
from scipy.signal import stft

from edge.encoders.audio_features import (
    N_FRAMES,
    SAMPLE_RATE,
    _hz_to_mel,
    _mel_to_hz,
    log_mel,
    mel_filters,
    pad_or_trim,
    resample,
    to_float32,
)


def _reference_log_mel(audio: np.ndarray) -> np.ndarray:
    x = np.zeros(480000)
    x[: len(audio)] = audio[:480000]
    # scipy: periodic Hann, 'even' boundary extension (= reflect), spectrum scaled by 1/sum(window)
    _, _, z = stft(x, fs=SAMPLE_RATE, window="hann", nperseg=400, noverlap=240, boundary="even", padded=False)
    power = np.abs(z * np.hanning(401)[:-1].sum()) ** 2
    mel = mel_filters(80).astype(np.float64) @ power[:, :-1]
    logspec = np.log10(np.maximum(mel, 1e-10))
    logspec = np.maximum(logspec, logspec.max() - 8.0)
    return (logspec + 4.0) / 4.0


def test_log_mel_matches_an_independent_stft() -> None:
    rng = np.random.default_rng(3)
    t = np.arange(3 * SAMPLE_RATE) / SAMPLE_RATE
    audio = 0.3 * np.sin(2 * np.pi * 440 * t) * (1 + np.sin(2 * np.pi * 3 * t)) + rng.normal(0, 0.01, t.size)
    ours = log_mel(audio.astype(np.float32))
    ref = _reference_log_mel(audio)
    assert ours.shape == ref.shape == (80, N_FRAMES)
    assert np.abs(ours - ref).max() < 1e-4


def test_mel_filters_are_slaney_triangles_with_unit_area() -> None:
    f = mel_filters(80)
    assert f.shape == (80, 201) and (f >= 0).all()
    # the edges are equally spaced on the Slaney mel scale: linear below 1 kHz, log above
    edges = _mel_to_hz(np.linspace(0.0, float(_hz_to_mel(np.array(8000.0))), 82))
    bin_hz = SAMPLE_RATE / 400
    peaks = f.argmax(axis=1) * bin_hz
    assert np.all(np.abs(peaks - edges[1:-1]) <= bin_hz)
    assert np.allclose(_mel_to_hz(_hz_to_mel(np.array([300.0, 1000.0, 4321.0]))), [300.0, 1000.0, 4321.0])
    # Slaney normalisation: height 2 / (upper - lower edge), so each wide triangle integrates to ~1
    assert np.allclose(f[40:].sum(axis=1) * bin_hz, 1.0, atol=0.1)


def test_a_tone_lights_the_filter_covering_its_frequency() -> None:
    t = np.arange(SAMPLE_RATE) / SAMPLE_RATE
    mel = log_mel((0.5 * np.sin(2 * np.pi * 1500 * t)).astype(np.float32))
    voiced = mel[:, 10:90].mean(axis=1)
    assert abs(int(voiced.argmax()) - int(mel_filters(80)[:, round(1500 / 40)].argmax())) <= 1
    assert mel[:, 200:].max() < voiced.max() - 1.0  # the zero padding is far quieter
    assert mel.min() >= mel.max() - 2.0 - 1e-6  # the 8 log10 units clamp, after (x + 4) / 4


def test_audio_helpers() -> None:
    assert to_float32(np.array([16384, -32768], dtype=np.int16)).tolist() == [0.5, -1.0]
    assert to_float32(np.array([[0.2, 0.4]], dtype=np.float32)).tolist() == [np.float32(0.3)]
    assert pad_or_trim(np.ones(5), 3).tolist() == [1, 1, 1] and pad_or_trim(np.ones(2), 3).tolist() == [
        1,
        1,
        0,
    ]
    t = np.arange(22050) / 22050
    y = resample(np.sin(2 * np.pi * 440 * t).astype(np.float32), 22050)
    assert y.shape == (16000,)
    spectrum = np.abs(np.fft.rfft(y))
    assert abs(int(spectrum.argmax()) - 440) <= 1  # 1 s at 16 kHz: 1 Hz per bin
