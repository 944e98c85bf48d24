"""Capture: real video and WAV files through the same sources as live devices; fake camera and
microphone hardware (the only mocks) for reconnect, backoff and drop counting."""

from __future__ import annotations

import queue
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from daemon_media import (
    FPS,
    SCENES,
    SpeechLayout,
    espeak_available,
    make_speech_wav,
    make_video,
    scene_bounds,
)

from edge.capture.audio import AudioCaptureSource, _import_sounddevice, read_wav
from edge.capture.base import EndOfStream
from edge.capture.video import VideoCaptureSource
from edge.config import CameraConfig, MicrophoneConfig, QualityConfig, SamplingConfig, VadConfig
from edge.errors import ConfigError, EnvironmentProblem
from edge.segmentation.speech import SpeechSegment
from edge.segmentation.video import SampledFrame

START = "2026-03-01T10:00:00+08:00"
T0 = 1772330400.0  # START as epoch seconds


@pytest.fixture(scope="module")
def scene_video(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_video(tmp_path_factory.mktemp("video") / "scenes.avi")


@pytest.fixture(scope="module")
def speech_wav(tmp_path_factory: pytest.TempPathFactory) -> SpeechLayout:
    if not espeak_available():
        pytest.skip("espeak-ng is not installed (apt-get install espeak-ng)")
    return make_speech_wav(tmp_path_factory.mktemp("audio"))


def drain(q: queue.Queue[Any]) -> list[Any]:
    items = []
    while True:
        item = q.get(timeout=30)
        items.append(item)
        if isinstance(item, EndOfStream):
            return items


def test_file_camera_samples_1fps_with_bursts_at_scene_changes(scene_video: Any) -> None:
    cam = CameraConfig(id="cam", url=str(scene_video), start_time=START)
    sampling = SamplingConfig(fps=1, burst_fps=4, burst_seconds=1, queue_size=4)  # small queue: replay waits
    q: queue.Queue[Any] = queue.Queue(maxsize=sampling.queue_size)
    src = VideoCaptureSource(cam, sampling, QualityConfig(), q, threading.Event())
    src.start()
    items = drain(q)
    src.join(5)
    frames = [f for f in items if isinstance(f, SampledFrame)]
    assert items[-1] == EndOfStream("cam", "eof")
    assert src.dropped == 0  # a file replay never drops
    assert src.frames_read == sum(int(s * FPS) for _, s in SCENES)
    cuts = [round(f.ts - T0, 2) for f in frames if f.scene_cut]
    assert cuts == [b[1] for b in scene_bounds()[1:]]  # every boundary, nothing else
    for f in frames:  # frames are resized to frame_width
        assert f.image.shape[1] == sampling.frame_width
    # between bursts the baseline is 1 fps; inside a burst 4 fps
    gaps = [b.ts - a.ts for a, b in zip(frames, frames[1:], strict=False) if not b.scene_cut]
    assert min(gaps) >= 1 / 4 - 1e-6 and max(gaps) <= 1.0 + 1e-6  # a cut frame is always kept
    burst = [f for f in frames if f.burst]
    assert burst and all(any(0 <= f.ts - T0 - c < 1.0 for c in cuts) for f in burst)
    black = [f for f in frames if f.quality.black]
    lo, hi = scene_bounds()[2][1:]
    assert black and all(lo <= f.ts - T0 < hi for f in black)


class FakeCamera:
    """Camera hardware stand-in: ``script`` lists, per connection, how many frames it delivers
    before the stream breaks (``None``: the connection fails to open)."""

    opened: list[str] = []

    def __init__(self, script: list[int | None], stop: threading.Event) -> None:
        self.script = list(script)
        self.stop = stop
        self.rng = np.random.default_rng(0)

    def __call__(self, url: str) -> Any:
        FakeCamera.opened.append(url)
        n = self.script.pop(0) if self.script else None
        if not self.script and n is None:
            self.stop.set()  # the test is over after the last scripted connection
        return _Conn(n, self.rng)


class _Conn:
    def __init__(self, frames: int | None, rng: np.random.Generator) -> None:
        self.left = frames
        self.rng = rng

    def isOpened(self) -> bool:
        return self.left is not None

    def read(self) -> tuple[bool, Any]:
        if not self.left:
            return False, None
        self.left -= 1
        return True, self.rng.integers(0, 255, (120, 160, 3), dtype=np.uint8)

    def get(self, prop: int) -> float:
        return 0.0

    def release(self) -> None:
        pass


def test_network_camera_reconnects_with_backoff() -> None:
    stop = threading.Event()
    cam = CameraConfig(id="cam_rtsp", url="rtsp://10.0.0.9/stream")
    sampling = SamplingConfig(
        reconnect_initial_s=0.01, reconnect_max_s=0.04, fps=30, burst_fps=30, analysis_fps=60
    )
    waits: list[float] = []
    real_wait = stop.wait

    def recording_wait(timeout: float | None = None) -> bool:
        waits.append(float(timeout or 0))
        return real_wait(0)

    stop.wait = recording_wait  # type: ignore[method-assign]
    fake = FakeCamera([3, None, None, None, 2, None, None], stop)
    q: queue.Queue[Any] = queue.Queue(maxsize=100)
    clock = iter(np.arange(0, 1000, 0.1))
    src = VideoCaptureSource(
        cam, sampling, QualityConfig(), q, stop, opener=fake, clock=lambda: float(next(clock))
    )
    src.start()
    items = drain(q)
    src.join(5)
    frames = [i for i in items if isinstance(i, SampledFrame)]
    assert len(frames) == 5  # every frame of both good connections (a 10 fps camera sampled at up to 30 fps)
    assert src.reconnects == 6
    # backoff doubles up to the cap, and resets after a connection that delivered frames
    assert waits == [0.01, 0.02, 0.04, 0.04, 0.01, 0.02, 0.04]  # the last wait sees stop


def test_live_camera_drops_and_counts_when_downstream_is_full() -> None:
    stop = threading.Event()
    cam = CameraConfig(id="usb", url="0")
    sampling = SamplingConfig(fps=30, burst_fps=30, analysis_fps=60, reconnect_initial_s=0.01)
    clock = iter(np.arange(0, 100, 0.1))
    q: queue.Queue[Any] = queue.Queue(maxsize=2)
    src = VideoCaptureSource(
        cam,
        sampling,
        QualityConfig(),
        q,
        stop,
        opener=FakeCamera([10, None], stop),
        clock=lambda: float(next(clock)),
    )
    src.run()  # in this thread: nothing consumes, the queue stays full
    assert src.emitted == 2 and src.dropped >= 8
    items = [q.get_nowait() for _ in range(q.qsize())]
    assert isinstance(items[-1], EndOfStream)  # the end marker always gets through


def test_missing_video_file_is_a_config_error(tmp_path: Any) -> None:
    with pytest.raises(ConfigError, match="no such video file"):
        VideoCaptureSource(
            CameraConfig(id="c", url=str(tmp_path / "x.mp4")),
            SamplingConfig(),
            QualityConfig(),
            queue.Queue(),
            threading.Event(),
        )


def overlap(a: tuple[float, float], b: tuple[float, float]) -> float:
    return max(0.0, min(a[1], b[1]) - max(a[0], b[0]))


def test_wav_file_vad_finds_the_speech_and_skips_noise(speech_wav: SpeechLayout) -> None:
    mic = MicrophoneConfig(id="mic", device=str(speech_wav.path), start_time=START)
    q: queue.Queue[Any] = queue.Queue(maxsize=8)
    src = AudioCaptureSource(mic, VadConfig(), q, threading.Event())
    src.start()
    segs = [s for s in drain(q) if isinstance(s, SpeechSegment)]
    spans = [(s.start_ts - T0, s.end_ts - T0) for s in segs]
    parts = {label: (a, b) for label, a, b in speech_wav.parts if label != "silence"}
    for label in ("en", "zh"):
        a, b = parts[label]
        covered = sum(overlap(sp, (a, b)) for sp in spans)
        assert covered >= 0.8 * (b - a), (label, spans, parts)
    assert all(overlap(sp, parts["noise"]) == 0 for sp in spans), spans
    assert len(segs) == 2  # one utterance each
    assert all(s.duration <= VadConfig().max_segment_s for s in segs)
    assert src.noise_frames > 0  # webrtcvad called the noise speech; the flatness gate did not


def test_live_microphone_same_interface(speech_wav: SpeechLayout) -> None:
    """A mocked microphone (frames from the WAV at capture time) goes through the same VAD path."""
    pcm = read_wav(speech_wav.path, 16000)
    frames = (pcm[i : i + 480] for i in range(0, len(pcm) - 479, 480))
    mic = MicrophoneConfig(id="mic_live", device="default")
    q: queue.Queue[Any] = queue.Queue(maxsize=8)
    src = AudioCaptureSource(mic, VadConfig(), q, threading.Event(), frames=lambda: frames, clock=lambda: 0.0)
    assert src.live
    src.start()
    segs = [s for s in drain(q) if isinstance(s, SpeechSegment)]
    assert len(segs) == 2


def test_missing_portaudio_gives_an_actionable_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sounddevice", None)
    with pytest.raises(EnvironmentProblem, match="sounddevice"):
        _import_sounddevice()
