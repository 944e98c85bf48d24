"""Real test media for the daemon tests, built at test time (no camera or microphone needed).

- :func:`make_video`: an MJPG AVI assembled with OpenCV from scikit-image photos (astronaut: one
  person; coffee, chelsea: none) with hard scene changes and a black stretch, plus sensor noise.
- :func:`make_speech_wav`: espeak-ng speaking an English and a pinyin Mandarin sentence between
  silence, with a burst of white noise in between; returns where each part lies.
"""

from __future__ import annotations

import shutil
import subprocess
import time
import wave
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

FPS = 5
SIZE = (640, 480)
#: (name, seconds); "black" is a black stretch
SCENES: list[tuple[str, float]] = [("astronaut", 5.0), ("coffee", 5.0), ("black", 3.0), ("chelsea", 5.0)]
PEOPLE = {"astronaut": 1, "coffee": 0, "chelsea": 0}


def make_video(path: Path, scenes: list[tuple[str, float]] = SCENES, seed: int = 7) -> Path:
    import cv2
    import skimage.data

    rng = np.random.default_rng(seed)
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), FPS, SIZE)
    assert writer.isOpened()
    for name, seconds in scenes:
        if name == "black":
            base = np.zeros((SIZE[1], SIZE[0], 3), np.uint8)
        else:
            rgb = getattr(skimage.data, name)()
            base = cv2.resize(np.ascontiguousarray(rgb[:, :, ::-1]), SIZE, interpolation=cv2.INTER_AREA)
        for _ in range(int(seconds * FPS)):
            noise = rng.normal(0, 2.0, base.shape)
            writer.write(np.clip(base.astype(np.float32) + noise, 0, 255).astype(np.uint8))
    writer.release()
    return path


@dataclass
class SpeechLayout:
    path: Path
    sample_rate: int
    #: (label, start s, end s) of each part
    parts: list[tuple[str, float, float]]


def espeak_available() -> bool:
    return shutil.which("espeak-ng") is not None


def _espeak(text: str, voice: str, out: Path, sample_rate: int) -> np.ndarray:
    subprocess.run(
        ["espeak-ng", "-v", voice, "-s", "150", "-w", str(out), text], check=True, capture_output=True
    )
    with wave.open(str(out), "rb") as w:
        rate = w.getframerate()
        pcm = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float32)
    from math import gcd

    from scipy.signal import resample_poly

    g = gcd(rate, sample_rate)
    return resample_poly(pcm, sample_rate // g, rate // g).astype(np.float32)


EN_TEXT = "Welcome to our store. Can I help you find a pair of running shoes today?"
ZH_TEXT = "ni hao, huan ying guang lin, jin tian you da zhe huo dong."


def make_speech_wav(folder: Path, sample_rate: int = 16000, seed: int = 3) -> SpeechLayout:
    rng = np.random.default_rng(seed)
    en = _espeak(EN_TEXT, "en", folder / "en_raw.wav", sample_rate)
    zh = _espeak(ZH_TEXT, "cmn", folder / "zh_raw.wav", sample_rate)
    sil = lambda s: rng.normal(0, 20, int(s * sample_rate)).astype(np.float32)  # noqa: E731 (room tone)
    noise = rng.normal(0, 3000, int(2.5 * sample_rate)).astype(np.float32)
    pieces = [
        ("silence", sil(1.5)),
        ("en", en),
        ("silence", sil(2.0)),
        ("noise", noise),
        ("silence", sil(2.0)),
        ("zh", zh),
        ("silence", sil(1.5)),
    ]
    parts, t, chunks = [], 0.0, []
    for label, x in pieces:
        parts.append((label, t, t + len(x) / sample_rate))
        t += len(x) / sample_rate
        chunks.append(x)
    pcm = np.clip(np.concatenate(chunks), -32768, 32767).astype("<i2")
    path = folder / "speech.wav"
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(sample_rate)
        w.writeframes(pcm.tobytes())
    return SpeechLayout(path, sample_rate, parts)


def scene_bounds(scenes: list[tuple[str, float]] = SCENES) -> list[tuple[str, float, float]]:
    out, t = [], 0.0
    for name, seconds in scenes:
        out.append((name, t, t + seconds))
        t += seconds
    return out


class MemorySink:
    """The daemon's event sink kept in memory (tests read ``events``, ``components``, ``beats``)."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.components: dict[str, dict[str, Any]] = {}
        self.beats = 0

    def write_events(self, events: list[dict[str, Any]]) -> int:
        self.events += events
        return len(events)

    def write_components(self, rows: list[dict[str, Any]]) -> None:
        self.beats += 1
        for r in rows:
            self.components[r["name"]] = r


def until(pred: Callable[[], bool], what: str, timeout: float = 90.0, poll: float = 0.05) -> None:
    """Wait for a condition (not a timing assertion: the bound only keeps a broken run from hanging)."""
    end = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > end:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(poll)


def daemon_config(tmp: Path, **sections: Any) -> Any:
    """A parsed daemon config for store ``s1`` (Asia/Shanghai) with its files under ``tmp``, plus
    ``sections`` (cameras, microphones, pos, image_text ...)."""
    from edge.config import parse_daemon_config

    return parse_daemon_config(
        {
            "store_id": "s1",
            "timezone": "Asia/Shanghai",
            "db": str(tmp / "store.db"),
            "media_dir": str(tmp / "media"),
            "models_dir": str(tmp / "models"),
            **sections,
        }
    )
