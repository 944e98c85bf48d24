"""Per-frame statistics on grayscale numpy arrays: histograms, scene-change score, quality.

Pure numpy. Called by the capture sampler (scene-change bursts) and the video segmenter.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

HIST_BINS = 32


def to_gray(image: np.ndarray) -> np.ndarray:
    """BGR/RGB uint8 (h, w, 3) or gray (h, w) -> float32 luma (h, w)."""
    img = np.asarray(image)
    if img.ndim == 3:
        img = img[..., :3].astype(np.float32)
        # channel order only matters for colour weights; use equal weights: order-independent
        return img.mean(axis=2)
    return img.astype(np.float32)


def signature(image: np.ndarray) -> np.ndarray:
    """A picture's colour signature: concatenated per-channel 32-bin histograms, L1 = 1 per channel.

    Used for scene-change scores and as the near-duplicate vector of a video event.
    """
    img = np.asarray(image)
    channels = [img] if img.ndim == 2 else [img[..., c] for c in range(min(3, img.shape[2]))]
    parts = []
    for ch in channels:
        hist, _ = np.histogram(ch, bins=HIST_BINS, range=(0, 256))
        total = hist.sum()
        parts.append(hist.astype(np.float32) / (total if total else 1.0))
    return np.concatenate(parts)


def thumbnail(image: np.ndarray, width: int = 32, height: int = 24) -> np.ndarray:
    """A tiny grey picture (block means): where things are, not just which colours."""
    gray = to_gray(image)
    h, w = gray.shape
    bh, bw = max(1, h // height), max(1, w // width)
    gray = gray[: bh * min(height, h), : bw * min(width, w)]
    return gray.reshape(gray.shape[0] // bh, bh, gray.shape[1] // bw, bw).mean(axis=(1, 3))


def scene_change_score(
    sig_a: np.ndarray,
    sig_b: np.ndarray,
    thumb_a: np.ndarray | None = None,
    thumb_b: np.ndarray | None = None,
) -> float:
    """Scene-change score in [0, 1]: the larger of the histogram distance (0 same colours, 1
    disjoint) and the thumbnails' mean absolute difference / 128 (a cut between two pictures with
    similar colours; a person walking through moves it far less)."""
    channels = max(1, sig_a.size // HIST_BINS)
    score = float(np.abs(sig_a - sig_b).sum() / (2.0 * channels))
    if thumb_a is not None and thumb_b is not None and thumb_a.shape == thumb_b.shape:
        score = max(score, min(1.0, float(np.abs(thumb_a - thumb_b).mean()) / 128.0))
    return score


def laplacian_variance(gray: np.ndarray) -> float:
    """Variance of the 4-neighbour Laplacian: low for blurred or flat pictures."""
    g = np.asarray(gray, dtype=np.float32)
    if g.shape[0] < 3 or g.shape[1] < 3:
        return 0.0
    lap = -4.0 * g[1:-1, 1:-1] + g[:-2, 1:-1] + g[2:, 1:-1] + g[1:-1, :-2] + g[1:-1, 2:]
    return float(lap.var())


@dataclass(frozen=True)
class FrameQuality:
    """Quality facts about one frame. ``score`` in [0, 1]: 0 unusable, 1 clear picture."""

    luma: float
    contrast: float
    sharpness: float
    black: bool
    blurred: bool

    @property
    def score(self) -> float:
        if self.black:
            return 0.0
        s = 1.0
        if self.blurred:
            s *= 0.3
        if self.contrast < 10:
            s *= 0.5
        return s


def frame_quality(image: np.ndarray, *, black_luma: float, blur_threshold: float) -> FrameQuality:
    gray = to_gray(image)
    luma = float(gray.mean())
    contrast = float(gray.std())
    sharp = laplacian_variance(gray)
    return FrameQuality(
        luma=luma,
        contrast=contrast,
        sharpness=sharp,
        black=luma < black_luma,
        blurred=sharp < blur_threshold and luma >= black_luma,
    )


def frames_identical(gray_a: np.ndarray, gray_b: np.ndarray, tolerance: float = 0.5) -> bool:
    """True when two frames differ by less than ``tolerance`` grey levels on average (a stalled feed).

    Real sensors always add some noise, so a live picture never passes this for long.
    """
    if gray_a.shape != gray_b.shape:
        return False
    return float(np.abs(gray_a.astype(np.float32) - gray_b.astype(np.float32)).mean()) < tolerance
