"""Cuts one camera's sampled frames into scenes and keeps each scene's most informative keyframes.

A scene ends at a scene-change cut (flagged by the sampler), at a switch between black and
non-black picture, or when it reaches the maximum event duration. Quality is measured, not
decided, here: each :class:`VideoSegment` says whether it is black, frozen or blurred and the
daemon's quality filter drops or down-weights it. Called by the daemon's video worker.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from edge.segmentation.frames import FrameQuality, frames_identical, to_gray


@dataclass
class SampledFrame:
    """One sampled frame as the capture layer hands it over (``image`` is BGR uint8)."""

    source: str
    ts: float  # epoch seconds (UTC)
    index: int  # frame number in the source
    image: np.ndarray
    signature: np.ndarray
    quality: FrameQuality
    scene_cut: bool = False  # the sampler saw a scene change just before this frame
    burst: bool = False  # sampled at the burst rate
    person_count: int | None = None  # filled by the people detector
    #: COCO class name -> best detection score (filled by the people detector for the image-text
    #: stand-in, so it need not run the detector again on the keyframes)
    objects: dict[str, float] | None = None

    @property
    def informativeness(self) -> float:
        people = self.person_count or 0
        return self.quality.score * (1.0 + 0.5 * min(people, 10)) + min(self.quality.sharpness, 2000.0) / 1e4


@dataclass
class VideoSegment:
    """One scene of one camera."""

    source: str
    start_ts: float
    end_ts: float
    frames: int
    keyframes: list[SampledFrame]
    person_counts: list[int]
    black: bool
    frozen: bool
    blurred_ratio: float
    mean_quality: float
    signature: np.ndarray
    cut_reason: str

    @property
    def duration(self) -> float:
        return max(0.0, self.end_ts - self.start_ts)

    @property
    def person_count(self) -> int | None:
        """The most frequent per-frame count (ties: the higher); None when nothing was detected."""
        if not self.person_counts:
            return None
        counts = Counter(self.person_counts)
        return max(counts.items(), key=lambda kv: (kv[1], kv[0]))[0]

    @property
    def occupied_seconds(self) -> float:
        """Seconds of the scene with at least one person (share of frames times duration)."""
        if not self.person_counts:
            return 0.0
        share = sum(1 for c in self.person_counts if c > 0) / len(self.person_counts)
        return round(share * self.duration, 3)

    @property
    def quality(self) -> float:
        """0..1: 0 for black or frozen pictures, else the mean frame quality."""
        if self.black or self.frozen:
            return 0.0
        return round(self.mean_quality, 3)


@dataclass
class _Open:
    first: SampledFrame
    last: SampledFrame
    black: bool
    frames: int = 0
    keyframes: list[SampledFrame] = field(default_factory=list)
    person_counts: list[int] = field(default_factory=list)
    quality_sum: float = 0.0
    blurred: int = 0
    sig_sum: np.ndarray | None = None
    identical_since: float | None = None
    longest_identical: float = 0.0
    prev_gray: np.ndarray | None = None


class VideoSegmenter:
    """Stateful per-camera segmenter: :meth:`push` frames in time order, get closed scenes back."""

    def __init__(self, *, max_event_seconds: float, max_keyframes: int, frozen_seconds: float) -> None:
        self.max_event_seconds = max_event_seconds
        self.max_keyframes = max_keyframes
        self.frozen_seconds = frozen_seconds
        self._open: _Open | None = None

    def push(self, frame: SampledFrame) -> list[VideoSegment]:
        closed: list[VideoSegment] = []
        cur = self._open
        if cur is not None:
            reason = None
            if frame.quality.black != cur.black:
                reason = "black" if frame.quality.black else "picture"
            elif frame.scene_cut and not cur.black:
                reason = "scene_change"
            elif frame.ts - cur.first.ts >= self.max_event_seconds:
                reason = "max_duration"
            if reason is not None:
                closed.append(self._close(reason, end_ts=frame.ts))
                cur = None
        if cur is None:
            cur = self._open = _Open(first=frame, last=frame, black=frame.quality.black)
        self._add(cur, frame)
        return closed

    def flush(self) -> list[VideoSegment]:
        """Close the open scene (end of file, shutdown)."""
        if self._open is None:
            return []
        return [self._close("end", end_ts=self._open.last.ts)]

    def _add(self, cur: _Open, frame: SampledFrame) -> None:
        cur.frames += 1
        cur.last = frame
        cur.quality_sum += frame.quality.score
        cur.blurred += int(frame.quality.blurred)
        cur.sig_sum = frame.signature.copy() if cur.sig_sum is None else cur.sig_sum + frame.signature
        if frame.person_count is not None:
            cur.person_counts.append(frame.person_count)
        gray = to_gray(frame.image[::4, ::4])
        if cur.prev_gray is not None and frames_identical(cur.prev_gray, gray):
            if cur.identical_since is None:
                cur.identical_since = frame.ts
            cur.longest_identical = max(cur.longest_identical, frame.ts - cur.identical_since)
        else:
            cur.identical_since = None
        cur.prev_gray = gray
        cur.keyframes.append(frame)
        if len(cur.keyframes) > self.max_keyframes:
            # keep the first frame (what the scene opened with) and the most informative others
            rest = sorted(cur.keyframes[1:], key=lambda f: f.informativeness)
            rest.pop(0)
            cur.keyframes = [cur.keyframes[0], *sorted(rest, key=lambda f: f.ts)]

    def _close(self, reason: str, *, end_ts: float) -> VideoSegment:
        cur = self._open
        assert cur is not None
        self._open = None
        sig = cur.sig_sum if cur.sig_sum is not None else np.zeros(1, np.float32)
        return VideoSegment(
            source=cur.first.source,
            start_ts=cur.first.ts,
            end_ts=max(end_ts, cur.first.ts),
            frames=cur.frames,
            keyframes=list(cur.keyframes),
            person_counts=list(cur.person_counts),
            black=cur.black,
            frozen=cur.longest_identical >= self.frozen_seconds,
            blurred_ratio=cur.blurred / max(1, cur.frames),
            mean_quality=cur.quality_sum / max(1, cur.frames),
            signature=(sig / max(1, cur.frames)).astype(np.float32),
            cut_reason=reason,
        )
