"""Camera capture: one OpenCV ``VideoCapture`` per camera in its own thread, with sampling.

Sources: a device index (USB camera), an ``rtsp://``/``http://`` URL, or a video file; all go
through the same loop. Network and device sources reconnect with exponential backoff when reads
fail; files end at EOF. Sampling keeps 1 frame/s (``sampling.fps``) and switches to
``sampling.burst_fps`` for ``burst_seconds`` when the scene-change score (colour histogram and thumbnail
difference, :func:`edge.segmentation.frames.scene_change_score`) between consecutive analysed frames
passes ``scene_change_threshold`` or when a worker calls :meth:`request_burst` (the
person count changed). Frames are resized to ``frame_width`` and handed over as
:class:`edge.segmentation.video.SampledFrame`. Started by the daemon.
"""

from __future__ import annotations

import functools
import logging
import os
import queue
import re
import threading
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

import cv2
import numpy as np

from edge.capture.base import CaptureSource
from edge.config.capture import CameraConfig, QualityConfig, SamplingConfig
from edge.errors import ConfigError
from edge.segmentation.frames import frame_quality, scene_change_score, signature, thumbnail
from edge.segmentation.video import SampledFrame

logger = logging.getLogger(__name__)


class FrameReader(Protocol):
    """What the capture loop needs from ``cv2.VideoCapture`` (tests substitute a fake camera)."""

    def isOpened(self) -> bool: ...
    def read(self) -> tuple[bool, Any]: ...
    def get(self, prop: int) -> float: ...
    def release(self) -> None: ...


_FFMPEG_ENV = "OPENCV_FFMPEG_CAPTURE_OPTIONS"
_ffmpeg_env_lock = threading.Lock()


def open_capture(url: str, *, rtsp_transport: str = "tcp", timeout_s: float | None = None) -> FrameReader:
    """Open a camera URL the OpenCV way: an integer string is a device index. Network URLs open
    through the FFmpeg backend with open/read timeouts (``timeout_s``); ``rtsp://`` ones with the
    given RTSP transport (FFmpeg reads it from ``OPENCV_FFMPEG_CAPTURE_OPTIONS`` at open time, so
    the variable is set under a lock for the open call only)."""
    if url.isdigit():
        return cv2.VideoCapture(int(url))
    if not re.match(r"^[a-z][a-z0-9+.-]*://", url, re.IGNORECASE):
        return cv2.VideoCapture(url)
    params: list[int] = []
    if timeout_s is not None:
        ms = int(timeout_s * 1000)
        params = [cv2.CAP_PROP_OPEN_TIMEOUT_MSEC, ms, cv2.CAP_PROP_READ_TIMEOUT_MSEC, ms]
    if not url.lower().startswith(("rtsp://", "rtsps://")):
        return cv2.VideoCapture(url, cv2.CAP_FFMPEG, params)
    with _ffmpeg_env_lock:
        before = os.environ.get(_FFMPEG_ENV)
        os.environ[_FFMPEG_ENV] = f"rtsp_transport;{rtsp_transport}"
        try:
            return cv2.VideoCapture(url, cv2.CAP_FFMPEG, params)
        finally:
            if before is None:
                os.environ.pop(_FFMPEG_ENV, None)
            else:
                os.environ[_FFMPEG_ENV] = before


def _epoch(start_time: str | None) -> float | None:
    if start_time is None:
        return None
    return datetime.fromisoformat(start_time.replace("Z", "+00:00")).timestamp()


class Sampler:
    """Decides which decoded frames are kept: baseline rate, bursts, scene-change cuts."""

    def __init__(self, cfg: SamplingConfig) -> None:
        self.cfg = cfg
        self._last_analysed = -1e18
        self._last_kept = -1e18
        self._prev_sig: np.ndarray | None = None
        self._prev_thumb: np.ndarray | None = None
        self._burst_until = -1e18
        self._pending_cut = False
        self.last_score = 0.0

    def burst(self, now: float) -> None:
        self._burst_until = max(self._burst_until, now + self.cfg.burst_seconds)

    def offer(self, t: float, small: np.ndarray) -> tuple[bool, bool, bool, np.ndarray | None]:
        """Stream time ``t`` and a downscaled frame -> (keep, scene_cut, in_burst, signature)."""
        sig: np.ndarray | None = None
        if t - self._last_analysed >= 1.0 / self.cfg.analysis_fps - 1e-6:
            self._last_analysed = t
            sig = signature(small)
            thumb = thumbnail(small)
            if self._prev_sig is not None:
                self.last_score = scene_change_score(self._prev_sig, sig, self._prev_thumb, thumb)
                if self.last_score >= self.cfg.scene_change_threshold:
                    self._pending_cut = True
                    self.burst(t)
            self._prev_sig, self._prev_thumb = sig, thumb
        in_burst = t < self._burst_until
        period = 1.0 / (self.cfg.burst_fps if in_burst else self.cfg.fps)
        keep = self._pending_cut or t - self._last_kept >= period - 1e-6
        if not keep:
            return False, False, in_burst, sig
        cut = self._pending_cut
        self._pending_cut = False
        self._last_kept = t
        return True, cut, in_burst, sig


class VideoCaptureSource(CaptureSource):
    """One camera. Emits :class:`SampledFrame` objects, then an ``EndOfStream``."""

    kind = "camera"

    def __init__(
        self,
        cam: CameraConfig,
        sampling: SamplingConfig,
        quality: QualityConfig,
        out: queue.Queue[Any],
        stop: threading.Event,
        *,
        opener: Callable[[str], FrameReader] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(cam.id, out, stop, live=cam.kind != "file")
        self.cam = cam
        self.cfg = sampling
        self.quality_cfg = quality
        self.opener = opener or functools.partial(
            open_capture, rtsp_transport=cam.rtsp_transport, timeout_s=cam.timeout_s
        )
        self.clock = clock
        self.sampler = Sampler(sampling)
        self.frames_read = 0
        self._lock = threading.Lock()
        if cam.kind == "file" and not Path(cam.url).is_file():
            raise ConfigError(f"cameras[{cam.id}].url = {cam.url!r}: no such video file")

    def request_burst(self) -> None:
        """Called by the video worker when the person count changes."""
        with self._lock:
            self.sampler.burst(self._stream_time)

    _stream_time = 0.0

    def capture(self) -> str:
        delay = self.cfg.reconnect_initial_s
        while not self.stop_event.is_set():
            cap = self.opener(self.cam.url)
            if not cap.isOpened():
                cap.release()
                if not self.live:
                    raise ConfigError(f"camera {self.cam.id}: OpenCV cannot open {self.cam.url!r}")
                self.state = "reconnecting"
                self.last_error = f"cannot open {self.cam.url}"
                logger.warning("camera %s: cannot open, retrying in %.3g s", self.cam.id, delay)
                if self.stop_event.wait(delay):
                    break
                delay = min(delay * 2, self.cfg.reconnect_max_s)
                self.reconnects += 1
                continue
            self.state = "running"
            if self.live and self.reconnects:
                logger.info("camera %s reconnected (%d reconnects so far)", self.cam.id, self.reconnects)
            logger.info("camera %s opened (%s)", self.cam.id, self.cam.kind)
            got_any = self._read_loop(cap)
            cap.release()
            if not self.live:
                return "eof"
            if self.stop_event.is_set():
                break
            if got_any:
                delay = self.cfg.reconnect_initial_s
            self.state = "reconnecting"
            self.reconnects += 1
            logger.warning("camera %s: stream lost, reconnecting in %.3g s", self.cam.id, delay)
            if self.stop_event.wait(delay):
                break
            delay = min(delay * 2, self.cfg.reconnect_max_s)
        return "stopped"

    def _read_loop(self, cap: FrameReader) -> bool:
        file_start = _epoch(self.cam.start_time) if not self.live else None
        if not self.live and file_start is None:
            file_start = self.clock()
        fps = cap.get(cv2.CAP_PROP_FPS) if not self.live else 0.0
        if not fps or fps != fps or fps > 240:
            fps = 25.0
        index = 0
        got_any = False
        while not self.stop_event.is_set():
            ok, frame = cap.read()
            if not ok or frame is None:
                return got_any
            got_any = True
            self.frames_read += 1
            ts = file_start + index / fps if file_start is not None else self.clock()
            index += 1
            self._stream_time = ts
            frame = self._resize(np.asarray(frame))
            small = frame[::4, ::4]
            with self._lock:
                keep, cut, in_burst, sig = self.sampler.offer(ts, small)
            if not keep:
                continue
            q = frame_quality(
                frame,
                black_luma=self.quality_cfg.black_luma,
                blur_threshold=self.quality_cfg.blur_threshold,
            )
            self.emit(
                SampledFrame(
                    source=self.cam.id,
                    ts=ts,
                    index=index - 1,
                    image=frame,
                    signature=sig if sig is not None else signature(small),
                    quality=q,
                    scene_cut=cut,
                    burst=in_burst,
                )
            )
        return got_any

    def _resize(self, frame: np.ndarray) -> np.ndarray:
        if frame.ndim == 2:
            frame = cv2.cvtColor(frame, cv2.COLOR_GRAY2BGR)
        h, w = frame.shape[:2]
        if w == self.cfg.frame_width:
            return frame
        height = max(1, round(h * self.cfg.frame_width / w))
        return cv2.resize(frame, (self.cfg.frame_width, height), interpolation=cv2.INTER_AREA)

    def status(self) -> dict[str, Any]:
        s = super().status()
        s.update(
            frames_read=self.frames_read, url_kind=self.cam.kind, last_scene_score=self.sampler.last_score
        )
        return s
