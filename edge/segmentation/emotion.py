"""Speech emotion from prosody and a small zh/en lexicon: neutral, positive, negative or angry.

No emotion model is obtainable from the package registries, so this is a documented heuristic:

- *valence* from the transcript: counts of positive, negative and angry words/phrases (Chinese and
  English lists below; substring match, so Chinese needs no word segmentation; English matches
  whole words);
- *arousal* from the audio: loudness (RMS dBFS of the voiced frames) and pitch variability (the
  coefficient of variation of an autocorrelation F0 track over 60-400 Hz).

Rules: an angry word, or a negative transcript spoken with high arousal -> ``angry``; more negative
than positive -> ``negative``; more positive -> ``positive``; otherwise ``neutral``. Without a
transcript the label is None (prosody alone cannot tell delight from anger). Limits: sarcasm,
negation ("not bad"), domain words and speakers who are loud by habit all fool it; treat the label
as a weak attribute, not a verdict. Pure numpy; called by the daemon's audio worker.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

POSITIVE = {
    "en": [
        "thank",
        "thanks",
        "great",
        "love",
        "perfect",
        "excellent",
        "nice",
        "happy",
        "awesome",
        "helpful",
        "wonderful",
    ],
    "zh": ["谢谢", "感谢", "太好了", "喜欢", "满意", "不错", "很好", "真棒", "开心", "好评"],
}
NEGATIVE = {
    "en": [
        "bad",
        "wrong",
        "broken",
        "disappointed",
        "slow",
        "problem",
        "return",
        "refund",
        "complain",
        "dirty",
        "waiting",
    ],
    "zh": ["不好", "失望", "太慢", "问题", "退货", "退款", "坏了", "脏", "等了", "不满意", "差评"],
}
ANGRY = {
    "en": [
        "angry",
        "ridiculous",
        "unacceptable",
        "furious",
        "terrible",
        "worst",
        "manager",
        "disgusting",
        "outrageous",
    ],
    "zh": ["生气", "气死", "太差", "投诉", "凭什么", "什么态度", "受不了", "叫你们经理", "离谱"],
}


def _count(text: str, words: dict[str, list[str]]) -> int:
    low = text.lower()
    n = sum(len(re.findall(rf"\b{re.escape(w)}\w*\b", low)) for w in words["en"])
    return n + sum(low.count(w) for w in words["zh"])


def f0_track(pcm: np.ndarray, sample_rate: int, frame_ms: int = 40) -> np.ndarray:
    """F0 (Hz) of the voiced frames by autocorrelation over 60-400 Hz (unvoiced frames left out)."""
    x = np.asarray(pcm, dtype=np.float32) / 32768.0
    n = int(sample_rate * frame_ms / 1000)
    lo, hi = int(sample_rate / 400), int(sample_rate / 60)
    f0 = []
    for i in range(0, len(x) - n + 1, n):
        fr = x[i : i + n] - x[i : i + n].mean()
        energy = float((fr**2).sum())
        if energy < 1e-4 * n / 512:
            continue
        ac = np.correlate(fr, fr, mode="full")[n - 1 :]
        seg = ac[lo : min(hi, n - 1)]
        if seg.size == 0:
            continue
        lag = int(np.argmax(seg)) + lo
        if ac[lag] / ac[0] > 0.4:  # clearly periodic: voiced
            f0.append(sample_rate / lag)
    return np.array(f0, dtype=np.float32)


@dataclass(frozen=True)
class Prosody:
    loudness_dbfs: float
    pitch_cv: float

    @property
    def high_arousal(self) -> bool:
        return self.loudness_dbfs > -14.0 or (self.loudness_dbfs > -22.0 and self.pitch_cv > 0.25)


def prosody(pcm: np.ndarray, sample_rate: int) -> Prosody:
    x = np.asarray(pcm, dtype=np.float32) / 32768.0
    n = max(1, sample_rate // 50)
    frames = x[: len(x) // n * n].reshape(-1, n) if len(x) >= n else x.reshape(1, -1)
    rms = np.sqrt((frames**2).mean(axis=1))
    voiced = rms[rms >= np.percentile(rms, 50)] if rms.size else rms
    loud = 20.0 * float(np.log10(max(float(voiced.mean()) if voiced.size else 0.0, 1e-9)))
    f0 = f0_track(pcm, sample_rate)
    cv = float(f0.std() / f0.mean()) if f0.size >= 3 else 0.0
    return Prosody(round(loud, 2), round(cv, 3))


def speech_emotion(text: str | None, pcm: np.ndarray, sample_rate: int) -> str | None:
    """neutral / positive / negative / angry, or None without a transcript."""
    if not text or not text.strip():
        return None
    pos, neg, angry = _count(text, POSITIVE), _count(text, NEGATIVE), _count(text, ANGRY)
    p = prosody(pcm, sample_rate)
    if angry or (neg > pos and p.high_arousal):
        return "angry"
    if neg > pos:
        return "negative"
    if pos > neg:
        return "positive"
    return "neutral"
