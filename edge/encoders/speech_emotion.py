"""Speech emotion: neutral / positive / negative / angry from prosody plus a zh/en lexicon.

No speech-emotion model is obtainable from the package registries, so this is a transparent rule
system, not a learned classifier:

* **Prosody** (numpy, 16 kHz mono): loudness (RMS in dBFS over voiced frames), pitch from a
  normalised autocorrelation per 40 ms frame (70-400 Hz; its spread in semitones), the voiced
  share and the speaking rate (syllables per second: Chinese characters or English words x 1.4 of
  the transcript per voiced second; from energy-envelope peaks when there is no transcript).
  Together they give an *arousal* score in [0, 1] (calm ... excited).
* **Lexicon** on the transcript: small Chinese and English word lists of positive, negative and
  anger words with negation handling (``not good``, ``不喜欢``; ``不错`` is positive). They give the
  *valence* and the anger cue.
* **Rule**: anger words, or negative valence with high arousal -> ``angry``; otherwise the sign of
  the valence -> ``positive`` / ``negative``; high arousal alone is not an emotion -> ``neutral``.

Limits (say so wherever the label is shown): prosody thresholds are fixed for adult speech at a
normal microphone distance, not calibrated per speaker, room or microphone; loud stores raise
arousal; the lexicon is small, misses sarcasm, dialect and most context, and for a language other
than zh/en only prosody counts (so such speech is at most ``neutral`` or ``angry``-free). Use the
label as a weak, aggregate signal (share of negative conversations per day), never per person.

Called by the daemon's audio worker after :mod:`edge.encoders.whisper` transcribes a segment.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field

import numpy as np

from edge.encoders.audio_features import SAMPLE_RATE, to_float32

logger = logging.getLogger(__name__)

LABELS = ("neutral", "positive", "negative", "angry")
FRAME = 640  # 40 ms at 16 kHz
HOP = 160  # 10 ms
F0_MIN, F0_MAX = 70.0, 400.0

POSITIVE_EN = frozenset(
    "good great thanks thank love like nice excellent perfect happy delicious wonderful awesome "
    "amazing glad pleased fresh friendly helpful beautiful fantastic cheap recommend".split()
)
NEGATIVE_EN = frozenset(
    "bad expensive slow wait waiting broken disappointed disappointing problem wrong dirty stale "
    "rude sad poor missing late cold overpriced crowded sorry unhappy".split()
)
ANGRY_EN = frozenset(
    "angry furious terrible ridiculous unacceptable worst awful refund complaint complain "
    "manager hate disgusting outrageous scam".split()
)
NEGATORS_EN = frozenset("not no never don't doesn't didn't isn't wasn't aren't can't won't hardly".split())
# longest first, so 不错 (positive) wins over 不 + 错 and 不好 over 好
POSITIVE_ZH = (
    "太好了",
    "好吃",
    "好喝",
    "不错",
    "谢谢",
    "喜欢",
    "满意",
    "开心",
    "漂亮",
    "新鲜",
    "实惠",
    "便宜",
    "推荐",
    "棒",
    "赞",
    "好",
)
NEGATIVE_ZH = (
    "不好",
    "难吃",
    "太贵",
    "失望",
    "问题",
    "排队",
    "麻烦",
    "太慢",
    "很慢",
    "不新鲜",
    "坏了",
    "贵",
    "慢",
    "差",
    "脏",
    "冷",
)
ANGRY_ZH = (
    "气死",
    "生气",
    "投诉",
    "退款",
    "太差",
    "垃圾",
    "凭什么",
    "什么破",
    "骗人",
    "恶心",
    "讨厌",
    "经理",
)
NEGATORS_ZH = ("不", "没", "别", "没有")


@dataclass(frozen=True)
class Prosody:
    """Prosodic features of one speech segment."""

    duration_s: float
    voiced_ratio: float
    loudness_dbfs: float
    pitch_hz: float
    pitch_spread_st: float
    speaking_rate: float  # syllables per voiced second

    @property
    def arousal(self) -> float:
        """0 (calm) .. 1 (excited): loudness, pitch spread and rate against fixed adult-speech norms."""
        loud = np.clip((self.loudness_dbfs + 30.0) / 20.0, 0.0, 1.0)  # -30 dBFS calm .. -10 loud
        spread = np.clip((self.pitch_spread_st - 2.0) / 4.0, 0.0, 1.0)  # 2 st flat .. 6 st lively
        rate = np.clip((self.speaking_rate - 3.0) / 3.5, 0.0, 1.0)  # 3 syl/s slow .. 6.5 fast
        return float(0.45 * loud + 0.35 * spread + 0.20 * rate)


@dataclass(frozen=True)
class Lexicon:
    positive: list[str] = field(default_factory=list)
    negative: list[str] = field(default_factory=list)
    angry: list[str] = field(default_factory=list)

    @property
    def valence(self) -> float:
        """-1 .. 1 from the word counts (anger words count as negative)."""
        pos, neg = len(self.positive), len(self.negative) + len(self.angry)
        return 0.0 if pos + neg == 0 else (pos - neg) / (pos + neg)


@dataclass(frozen=True)
class SpeechEmotion:
    label: str
    scores: dict[str, float]
    prosody: Prosody
    lexicon: Lexicon


def _frames(x: np.ndarray) -> np.ndarray:
    if x.shape[0] < FRAME:
        x = np.pad(x, (0, FRAME - x.shape[0]))
    return np.lib.stride_tricks.sliding_window_view(x, FRAME)[::HOP]


def pitch_track(audio: np.ndarray, sample_rate: int = SAMPLE_RATE) -> tuple[np.ndarray, np.ndarray]:
    """Per 10 ms frame: f0 in Hz (0 where unvoiced) and RMS, by normalised autocorrelation."""
    x = to_float32(audio).astype(np.float64)
    frames = _frames(x)
    frames = frames - frames.mean(axis=1, keepdims=True)
    rms = np.sqrt((frames**2).mean(axis=1))
    lag_min, lag_max = int(sample_rate / F0_MAX), int(sample_rate / F0_MIN)
    n = 2 * FRAME
    spec = np.fft.rfft(frames * np.hanning(FRAME), n=n, axis=1)
    ac = np.fft.irfft(np.abs(spec) ** 2, n=n, axis=1)[:, : lag_max + 1]
    ac = ac / np.maximum(ac[:, :1], 1e-12)
    lag = lag_min + np.argmax(ac[:, lag_min : lag_max + 1], axis=1)
    peak = ac[np.arange(ac.shape[0]), lag]
    loud_enough = rms > max(1e-3, 0.1 * float(np.percentile(rms, 95)) if rms.size else 1e-3)
    voiced = (peak > 0.45) & loud_enough
    f0 = np.where(voiced, sample_rate / lag, 0.0)
    return f0, rms


def prosody(audio: np.ndarray, transcript: str = "", sample_rate: int = SAMPLE_RATE) -> Prosody:
    """Prosodic features of a segment (the transcript, if any, gives the speaking rate)."""
    x = to_float32(audio)
    duration = x.shape[0] / sample_rate
    if x.size == 0:
        return Prosody(0.0, 0.0, -120.0, 0.0, 0.0, 0.0)
    f0, rms = pitch_track(x, sample_rate)
    voiced = f0 > 0
    voiced_s = max(float(voiced.sum()) * HOP / sample_rate, 1e-3)
    level = rms[voiced] if voiced.any() else rms
    loudness = float(20.0 * np.log10(max(float(np.sqrt((level**2).mean())), 1e-6)))
    if voiced.sum() >= 3:
        st = 12.0 * np.log2(f0[voiced] / np.median(f0[voiced]))
        pitch, spread = float(np.median(f0[voiced])), float(np.std(st))
    else:
        pitch, spread = 0.0, 0.0
    syllables = _syllables(transcript) if transcript.strip() else _envelope_peaks(rms)
    return Prosody(duration, float(voiced.mean()), loudness, pitch, spread, syllables / voiced_s)


def _syllables(text: str) -> float:
    han = len(re.findall(r"[\u4e00-\u9fff]", text))
    words = len(re.findall(r"[A-Za-z']+", text))
    return han + 1.4 * words


def _envelope_peaks(rms: np.ndarray) -> float:
    """Syllable nuclei as peaks of the smoothed energy envelope (at least 100 ms apart)."""
    if rms.size < 5:
        return 0.0
    env = np.convolve(rms, np.ones(5) / 5, mode="same")
    thresh = 0.3 * float(env.max())
    peaks, last = 0, -100
    for i in range(1, env.size - 1):
        if env[i] > thresh and env[i] >= env[i - 1] and env[i] > env[i + 1] and i - last >= 10:
            peaks, last = peaks + 1, i
    return float(peaks)


def lexicon(text: str) -> Lexicon:
    """Positive / negative / anger words in a zh/en transcript, negation flipping polarity."""
    pos: list[str] = []
    neg: list[str] = []
    ang: list[str] = []
    words = re.findall(r"[a-z']+", text.lower())
    for i, w in enumerate(words):
        negated = any(p in NEGATORS_EN for p in words[max(0, i - 2) : i])
        if w in ANGRY_EN:
            ang.append(w)
        elif w in POSITIVE_EN:
            (neg if negated else pos).append(w)
        elif w in NEGATIVE_EN:
            (pos if negated and w not in ("wait", "waiting", "sorry") else neg).append(w)
    for run in re.findall(r"[\u4e00-\u9fff]+", text):
        i = 0
        while i < len(run):
            hit = _match(run, i)
            if hit is None:
                i += 1
                continue
            word, kind = hit
            negated = kind == "pos" and any(run[max(0, i - len(n)) : i] == n for n in NEGATORS_ZH)
            if kind == "ang":
                ang.append(word)
            elif kind == "pos":
                (neg if negated else pos).append(word)
            else:
                neg.append(word)
            i += len(word)
    return Lexicon(pos, neg, ang)


def _match(run: str, i: int) -> tuple[str, str] | None:
    best: tuple[str, str] | None = None
    for kind, words in (("ang", ANGRY_ZH), ("neg", NEGATIVE_ZH), ("pos", POSITIVE_ZH)):
        for w in words:
            if run.startswith(w, i) and (best is None or len(w) > len(best[0])):
                best = (w, kind)
    return best


def classify(audio: np.ndarray, transcript: str = "", sample_rate: int = SAMPLE_RATE) -> SpeechEmotion:
    """The emotion label of one speech segment, with the scores and the evidence behind it."""
    p = prosody(audio, transcript, sample_rate)
    lex = lexicon(transcript)
    arousal, valence = p.arousal, lex.valence
    logits = {
        "neutral": 1.0 - abs(valence),
        "positive": max(valence, 0.0) * (1.0 + 0.3 * arousal) * 1.5,
        "negative": max(-valence, 0.0) * (1.5 - 0.5 * arousal),
        "angry": (2.0 if lex.angry else 0.0) + max(-valence, 0.0) * max(arousal - 0.55, 0.0) * 4.0,
    }
    e = {k: float(np.exp(3.0 * v)) for k, v in logits.items()}
    total = sum(e.values())
    scores = {k: e[k] / total for k in LABELS}
    label = max(LABELS, key=lambda k: scores[k])
    logger.debug("speech emotion %s (arousal %.2f, valence %.2f)", label, arousal, valence)
    return SpeechEmotion(label, scores, p, lex)
