"""Turns per-frame voice-activity decisions into speech segments, and scores noise-only audio.

The capture layer runs webrtcvad on 10/20/30 ms frames and pushes ``(pcm, is_speech, ts)``
here. A segment opens when 90 % of the frames in the padding window are speech and closes when
90 % of the frames in the (longer) hangover window are not (the webrtcvad ring buffer, with a
hangover so the pause between two sentences does not split an utterance), or when it reaches
``max_segment_s``.
:func:`spectral_flatness` tells speech (peaky spectrum) from hiss and hum (flat spectrum).
Pure numpy; called by the daemon's audio worker.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass

import numpy as np


@dataclass
class SpeechSegment:
    source: str
    start_ts: float
    end_ts: float
    pcm: np.ndarray  # int16 mono
    sample_rate: int
    voiced_ratio: float
    cut_reason: str

    @property
    def duration(self) -> float:
        return len(self.pcm) / self.sample_rate


class SpeechSegmenter:
    """Stateful per-microphone segmenter."""

    def __init__(
        self,
        source: str,
        *,
        sample_rate: int,
        frame_ms: int,
        padding_ms: int,
        max_segment_s: float,
        hangover_ms: int | None = None,
        min_speech_s: float,
    ) -> None:
        self.source = source
        self.sample_rate = sample_rate
        self.frame_s = frame_ms / 1000.0
        self.max_segment_s = max_segment_s
        self.min_speech_s = min_speech_s
        self._ring: collections.deque[tuple[np.ndarray, bool, float]] = collections.deque(
            maxlen=max(1, padding_ms // frame_ms)
        )
        self._close_ring: collections.deque[bool] = collections.deque(
            maxlen=max(1, (hangover_ms or padding_ms) // frame_ms)
        )
        self._triggered = False
        self._frames: list[np.ndarray] = []
        self._voiced = 0
        self._start_ts = 0.0
        self._last_ts = 0.0

    def push(self, pcm: np.ndarray, is_speech: bool, ts: float) -> list[SpeechSegment]:
        out: list[SpeechSegment] = []
        self._last_ts = ts
        ring = self._ring
        if not self._triggered:
            ring.append((pcm, is_speech, ts))
            voiced = sum(1 for _, s, _ in ring if s)
            if len(ring) == ring.maxlen and voiced > 0.9 * ring.maxlen:
                self._triggered = True
                self._start_ts = ring[0][2]
                self._frames = [p for p, _, _ in ring]
                self._voiced = voiced
                ring.clear()
            return out
        if (len(self._frames) + 1) * self.frame_s > self.max_segment_s + 1e-9:
            seg = self._close("max_duration", ts)
            if seg is not None:
                out.append(seg)
            # speech continues: the next segment opens straight away with this frame
            self._triggered = True
            self._start_ts = ts
        self._frames.append(pcm)
        self._voiced += int(is_speech)
        tail = self._close_ring
        tail.append(is_speech)
        unvoiced = sum(1 for s in tail if not s)
        if len(tail) == tail.maxlen and unvoiced > 0.9 * tail.maxlen:
            seg = self._close("silence", ts + self.frame_s)
            if seg is not None:
                out.append(seg)
        return out

    def flush(self) -> list[SpeechSegment]:
        if not self._triggered:
            return []
        seg = self._close("end", self._last_ts + self.frame_s)
        return [seg] if seg is not None else []

    def _close(self, reason: str, end_ts: float) -> SpeechSegment | None:
        frames, voiced = self._frames, self._voiced
        self._frames, self._voiced, self._triggered = [], 0, False
        self._ring.clear()
        self._close_ring.clear()
        if not frames:
            return None
        pcm = np.concatenate(frames).astype(np.int16)
        if len(pcm) / self.sample_rate < self.min_speech_s:
            return None
        return SpeechSegment(
            source=self.source,
            start_ts=self._start_ts,
            end_ts=end_ts,
            pcm=pcm,
            sample_rate=self.sample_rate,
            voiced_ratio=voiced / len(frames),
            cut_reason=reason,
        )


def spectral_flatness(pcm: np.ndarray, sample_rate: int, frame_ms: int = 32) -> float:
    """Median spectral flatness (geometric / arithmetic mean of the power spectrum) over voiced-loud
    frames, in [0, 1]: white noise is near 1, speech well below 0.3."""
    x = np.asarray(pcm, dtype=np.float32) / 32768.0
    n = max(64, int(sample_rate * frame_ms / 1000))
    if len(x) < n:
        return 1.0
    frames = x[: len(x) // n * n].reshape(-1, n)
    energy = (frames**2).mean(axis=1)
    loud = frames[energy >= np.percentile(energy, 50)]
    spec = np.abs(np.fft.rfft(loud * np.hanning(n), axis=1)) ** 2 + 1e-12
    flat = np.exp(np.log(spec).mean(axis=1)) / spec.mean(axis=1)
    return float(np.median(flat))


def frame_flatness(pcm: np.ndarray) -> float:
    """Spectral flatness of one short frame (10-30 ms): near 0.5-0.6 for white noise, far lower
    for voiced speech. Used as a noise gate on top of the VAD decision."""
    x = np.asarray(pcm, dtype=np.float32)
    spec = np.abs(np.fft.rfft(x * np.hanning(len(x)))) ** 2 + 1e-12
    return float(np.exp(np.log(spec).mean()) / spec.mean())


def rms_dbfs(pcm: np.ndarray) -> float:
    x = np.asarray(pcm, dtype=np.float32) / 32768.0
    rms = float(np.sqrt((x**2).mean())) if len(x) else 0.0
    return 20.0 * np.log10(max(rms, 1e-9))
