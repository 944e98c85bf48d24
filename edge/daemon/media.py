"""Writes the raw media an event refers to: keyframe JPEGs and speech WAVs under ``media_dir``.

Layout: ``<media_dir>/<source>/<YYYY-MM-DD>/<event_id>_k<n>.jpg`` and ``.../<event_id>.wav`` (UTC
date). Paths returned are absolute and go into the event's ``raw_ref``. Called by the workers.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path

import cv2
import numpy as np

from edge.capture.audio import write_wav
from edge.errors import EnvironmentProblem

logger = logging.getLogger(__name__)


class MediaWriter:
    def __init__(self, media_dir: str | Path, *, jpeg_quality: int = 85) -> None:
        self.root = Path(media_dir).expanduser().resolve()
        self.jpeg_quality = jpeg_quality
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise EnvironmentProblem(
                f"cannot create media_dir {self.root} ({exc})", hint="set media_dir to a writable folder"
            ) from None
        self.bytes_written = 0

    def _folder(self, source: str, ts: float) -> Path:
        day = datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d")
        folder = self.root / source / day
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def keyframes(self, source: str, event_id: str, ts: float, images: list[np.ndarray]) -> list[str]:
        folder = self._folder(source, ts)
        paths = []
        for n, img in enumerate(images):
            path = folder / f"{event_id}_k{n}.jpg"
            ok, buf = cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, self.jpeg_quality])
            if not ok:
                raise EnvironmentProblem(f"OpenCV could not encode a keyframe for {event_id}")
            path.write_bytes(buf.tobytes())
            self.bytes_written += len(buf)
            paths.append(str(path))
        return paths

    def speech(self, source: str, event_id: str, ts: float, pcm: np.ndarray, sample_rate: int) -> str:
        path = self._folder(source, ts) / f"{event_id}.wav"
        write_wav(path, pcm, sample_rate)
        self.bytes_written += path.stat().st_size
        return str(path)
