"""Microphone capture: a ``.wav`` file or a sounddevice ``InputStream``, gated by webrtcvad.

Both sources deliver 16-bit mono PCM at ``vad.sample_rate`` (files are mixed down and resampled)
in ``vad.frame_ms`` frames; webrtcvad marks each frame speech or not and
:class:`edge.segmentation.speech.SpeechSegmenter` turns that into speech segments of at most
``vad.max_segment_s``. Only speech segments travel downstream: silence and noise never reach the
speech model. sounddevice (PortAudio) is imported only when a live microphone is opened.
Started by the daemon.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import wave
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from edge.capture.base import CaptureSource
from edge.config.capture import MicrophoneConfig, VadConfig
from edge.errors import ConfigError, EnvironmentProblem
from edge.segmentation.speech import SpeechSegmenter, frame_flatness, rms_dbfs

logger = logging.getLogger(__name__)


def read_wav(path: str | Path, sample_rate: int) -> np.ndarray:
    """A WAV file as int16 mono at ``sample_rate`` (mixed down and resampled when needed)."""
    try:
        with wave.open(str(path), "rb") as w:
            channels, width, rate = w.getnchannels(), w.getsampwidth(), w.getframerate()
            raw = w.readframes(w.getnframes())
    except (wave.Error, EOFError) as exc:
        raise ConfigError(f"{path}: not a PCM WAV file ({exc})") from None
    if width == 2:
        data = np.frombuffer(raw, dtype="<i2").astype(np.float32)
    elif width == 1:
        data = (np.frombuffer(raw, dtype=np.uint8).astype(np.float32) - 128.0) * 256.0
    elif width == 4:
        data = np.frombuffer(raw, dtype="<i4").astype(np.float32) / 65536.0
    else:
        raise ConfigError(f"{path}: {8 * width}-bit WAV is not supported (use 16-bit PCM)")
    if channels > 1:
        data = data.reshape(-1, channels).mean(axis=1)
    if rate != sample_rate:
        from math import gcd

        from scipy.signal import resample_poly

        g = gcd(rate, sample_rate)
        data = resample_poly(data, sample_rate // g, rate // g)
    return np.clip(data, -32768, 32767).astype(np.int16)


def write_wav(path: str | Path, pcm: np.ndarray, sample_rate: int) -> None:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(sample_rate)
        w.writeframes(np.asarray(pcm, dtype="<i2").tobytes())


def _import_sounddevice() -> Any:
    try:
        import sounddevice
    except OSError as exc:  # raised by sounddevice itself when libportaudio is missing
        raise EnvironmentProblem(
            f"live microphones need the PortAudio library ({exc})",
            hint="apt-get install libportaudio2, or use a .wav file as the microphone device",
        ) from None
    except ImportError:
        raise EnvironmentProblem(
            "live microphones need the sounddevice package",
            hint="pip install sounddevice, or use a .wav file as the microphone device",
        ) from None
    return sounddevice


class AudioCaptureSource(CaptureSource):
    """One microphone. Emits :class:`~edge.segmentation.speech.SpeechSegment` objects."""

    kind = "microphone"

    def __init__(
        self,
        mic: MicrophoneConfig,
        vad_cfg: VadConfig,
        out: queue.Queue[Any],
        stop: threading.Event,
        *,
        frames: Callable[[], Iterator[np.ndarray]] | None = None,
        clock: Callable[[], float] = time.time,
        noise_flatness: float = 0.45,
    ) -> None:
        super().__init__(mic.id, out, stop, live=mic.kind != "file")
        self.noise_flatness = noise_flatness
        import webrtcvad

        self.mic = mic
        self.cfg = vad_cfg
        self.clock = clock
        self.vad = webrtcvad.Vad(vad_cfg.aggressiveness)
        self.frame_len = vad_cfg.sample_rate * vad_cfg.frame_ms // 1000
        self.segmenter = SpeechSegmenter(
            mic.id,
            sample_rate=vad_cfg.sample_rate,
            frame_ms=vad_cfg.frame_ms,
            padding_ms=vad_cfg.padding_ms,
            hangover_ms=vad_cfg.hangover_ms,
            max_segment_s=vad_cfg.max_segment_s,
            min_speech_s=vad_cfg.min_speech_s,
        )
        self._frames_factory = frames
        self.frames_seen = 0
        self.speech_frames = 0
        self.noise_frames = 0
        self._sd: Any = None
        if self.live and frames is None:
            self._sd = _import_sounddevice()  # fail at start, not in the thread, when PortAudio is missing
        if mic.kind == "file" and not Path(mic.device).is_file():
            raise ConfigError(f"microphones[{mic.id}].device = {mic.device!r}: no such WAV file")

    def capture(self) -> str:
        if self._frames_factory is not None:
            frames = self._frames_factory()
            start = self.clock()
        elif not self.live:
            frames = self._file_frames()
            start = (
                datetime.fromisoformat(self.mic.start_time.replace("Z", "+00:00")).timestamp()
                if self.mic.start_time
                else self.clock()
            )
        else:
            frames = self._live_frames()
            start = self.clock()
        self.state = "running"
        frame_s = self.cfg.frame_ms / 1000.0
        n = 0
        for pcm in frames:
            if self.stop_event.is_set():
                break
            ts = start + n * frame_s if not self.live or self._frames_factory else self.clock() - frame_s
            n += 1
            self.frames_seen += 1
            speech = self.vad.is_speech(pcm.astype("<i2").tobytes(), self.cfg.sample_rate)
            if speech and frame_flatness(pcm) > self.noise_flatness and rms_dbfs(pcm) > -60.0:
                speech = False  # hiss, fans, rain: webrtcvad alone calls broadband noise speech
                self.noise_frames += 1
            self.speech_frames += int(speech)
            for seg in self.segmenter.push(pcm, speech, ts):
                self.emit(seg)
        for seg in self.segmenter.flush():
            self.emit(seg)
        return "stopped" if self.stop_event.is_set() else "eof"

    def _file_frames(self) -> Iterator[np.ndarray]:
        pcm = read_wav(self.mic.device, self.cfg.sample_rate)
        for i in range(0, len(pcm) - self.frame_len + 1, self.frame_len):
            yield pcm[i : i + self.frame_len]

    def _live_frames(self) -> Iterator[np.ndarray]:
        sd = self._sd or _import_sounddevice()
        device: int | str | None = None if self.mic.device == "default" else self.mic.device
        if isinstance(device, str) and device.isdigit():
            device = int(device)
        blocks: queue.Queue[np.ndarray] = queue.Queue(maxsize=200)

        def callback(indata: Any, _frames: int, _time: Any, status: Any) -> None:
            if status:
                logger.debug("microphone %s: %s", self.mic.id, status)
            try:
                blocks.put_nowait(np.asarray(indata[:, 0], dtype=np.int16).copy())
            except queue.Full:
                self.dropped += 1

        with sd.InputStream(
            samplerate=self.cfg.sample_rate,
            channels=1,
            dtype="int16",
            blocksize=self.frame_len,
            device=device,
            callback=callback,
        ):
            logger.info("microphone %s opened (device %s)", self.mic.id, self.mic.device)
            while not self.stop_event.is_set():
                try:
                    block = blocks.get(timeout=0.5)
                except queue.Empty:
                    continue
                if len(block) == self.frame_len:
                    yield block

    def status(self) -> dict[str, Any]:
        s = super().status()
        s.update(
            frames_seen=self.frames_seen, speech_frames=self.speech_frames, noise_frames=self.noise_frames
        )
        return s
