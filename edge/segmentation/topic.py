"""Topic-shift cuts in a transcript stream: split where the text-embedding cosine drops.

A speech segment can hold more than one happening (a customer asks about coffee, then about the
parking lot). The transcript is split into sentence chunks (at ``. ! ? 。 ！ ？ ；`` and line
breaks), short sentences are joined until a chunk has at least ``min_chars`` characters (so one
short Chinese clause does not stand alone), and each chunk is given a time span in proportion to
its characters (Whisper decodes without timestamps). The caller embeds the chunks with the text
encoder; :func:`topic_groups` cuts between two consecutive chunks whose cosine is below the
threshold (USE v3: sentences on one topic score about 0.4-0.8, unrelated ones 0.0-0.2).
:class:`TopicTracker` carries the last chunk across segments of one microphone, so a later
segment can say whether it continues the previous topic.

Pure numpy and dataclasses; the daemon's audio worker calls it (:mod:`edge.daemon.workers`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

_SENTENCE_END = re.compile(r"(?<=[.!?。！？；;])\s*|\n+")


@dataclass(frozen=True)
class TopicChunk:
    """Part of a transcript: text and its span in seconds (relative to whatever the caller uses)."""

    text: str
    start_s: float
    end_s: float


def split_sentences(text: str, start_s: float, end_s: float, *, min_chars: int) -> list[TopicChunk]:
    """Sentence chunks of ``text`` of at least ``min_chars`` characters each (a shorter last one
    joins the chunk before it), with spans proportional to their share of the characters."""
    parts = [p.strip() for p in _SENTENCE_END.split(text) if p and p.strip()]
    if not parts:
        return []
    joined: list[str] = []
    buf = ""
    for p in parts:
        buf = _join(buf, p)
        if len(buf) >= min_chars:
            joined.append(buf)
            buf = ""
    if buf:
        if joined:
            joined[-1] = _join(joined[-1], buf)
        else:
            joined.append(buf)
    total = sum(len(j) for j in joined)
    span = max(0.0, end_s - start_s)
    chunks = []
    pos = 0
    for j in joined:
        a = start_s + span * pos / total
        pos += len(j)
        b = start_s + span * pos / total
        chunks.append(TopicChunk(j, round(a, 3), round(b, 3)))
    return chunks


def _join(a: str, b: str) -> str:
    if not a:
        return b
    # no space between CJK sentences; one space after Latin punctuation
    if a[-1] in "。！？；" or (b and ord(b[0]) > 0x2E80):
        return a + b
    return a + " " + b


def consecutive_cosines(vectors: np.ndarray) -> list[float]:
    """Cosine of each row with the row before it (``len - 1`` values)."""
    v = np.asarray(vectors, dtype=np.float64)
    if v.ndim != 2 or v.shape[0] < 2:
        return []
    norms = np.linalg.norm(v, axis=1)
    norms[norms == 0] = 1.0
    u = v / norms[:, None]
    return [float(x) for x in np.sum(u[1:] * u[:-1], axis=1)]


def topic_cuts(vectors: np.ndarray, threshold: float) -> list[int]:
    """Indices ``i`` such that a new topic starts at chunk ``i`` (cosine with chunk ``i-1`` below
    ``threshold``)."""
    return _cuts(consecutive_cosines(vectors), threshold)


def _cuts(cosines: Sequence[float], threshold: float) -> list[int]:
    return [i + 1 for i, c in enumerate(cosines) if c < threshold]


@dataclass(frozen=True)
class TopicGroup:
    """Consecutive chunks on one topic; ``min_cosine`` is the lowest cosine inside the group
    (1.0 for a single chunk), ``cut_cosine`` the cosine to the group before it (None for the first)."""

    chunks: tuple[TopicChunk, ...]
    min_cosine: float
    cut_cosine: float | None

    @property
    def text(self) -> str:
        out = ""
        for c in self.chunks:
            out = _join(out, c.text)
        return out

    @property
    def start_s(self) -> float:
        return self.chunks[0].start_s

    @property
    def end_s(self) -> float:
        return self.chunks[-1].end_s


def topic_groups(chunks: Sequence[TopicChunk], vectors: np.ndarray, threshold: float) -> list[TopicGroup]:
    """``chunks`` cut into groups at every topic shift (one row of ``vectors`` per chunk)."""
    rows = 0 if np.asarray(vectors).size == 0 else len(vectors)
    if len(chunks) != rows:
        raise ValueError(f"{len(chunks)} chunks but {rows} vectors")
    if not chunks:
        return []
    cos = consecutive_cosines(vectors)
    bounds = [0, *_cuts(cos, threshold), len(chunks)]
    groups: list[TopicGroup] = []
    for start, end in zip(bounds, bounds[1:], strict=False):
        inner = cos[start : end - 1]
        groups.append(
            TopicGroup(
                chunks=tuple(chunks[start:end]),
                min_cosine=round(min(inner), 4) if inner else 1.0,
                cut_cosine=round(cos[start - 1], 4) if start > 0 else None,
            )
        )
    return groups


class TopicTracker:
    """The last chunk vector of one microphone's transcript stream: :meth:`push` returns the cosine
    between the previous segment's last chunk and this segment's first (None for the first segment
    or after ``max_gap_s`` of silence) and remembers this segment's last chunk."""

    def __init__(self, *, max_gap_s: float = 60.0) -> None:
        self.max_gap_s = max_gap_s
        self._last: np.ndarray | None = None
        self._last_end: float | None = None

    def push(self, first: np.ndarray, last: np.ndarray, start_ts: float, end_ts: float) -> float | None:
        prev, prev_end = self._last, self._last_end
        self._last, self._last_end = np.asarray(last, dtype=np.float64), end_ts
        if prev is None or prev_end is None or start_ts - prev_end > self.max_gap_s:
            return None
        return consecutive_cosines(np.stack([prev, np.asarray(first, dtype=np.float64)]))[0]
