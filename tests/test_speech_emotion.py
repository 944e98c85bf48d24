"""Speech emotion: pitch tracking and prosody on synthetic voices with known pitch and loudness, the
zh/en lexicon with negation, and the combined rule; plus prosody of real espeak-ng speech."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from scipy.io import wavfile

from edge.encoders.audio_features import SAMPLE_RATE, resample, to_float32
from edge.encoders.speech_emotion import classify, lexicon, pitch_track, prosody


def _voice(f0: float, seconds: float = 2.0, amp: float = 0.1, vibrato_st: float = 0.0) -> np.ndarray:
    """A harmonic 'vowel' whose pitch swings +-vibrato_st semitones at 2 Hz."""
    t = np.arange(int(seconds * SAMPLE_RATE)) / SAMPLE_RATE
    inst = f0 * 2.0 ** (vibrato_st * np.sin(2 * np.pi * 2 * t) / 12.0)
    phase = 2 * np.pi * np.cumsum(inst) / SAMPLE_RATE
    x = sum(np.sin(k * phase) / k for k in range(1, 6))
    return (amp * x / np.abs(x).max()).astype(np.float32)


def test_pitch_track_finds_the_fundamental() -> None:
    for f0 in (110.0, 180.0, 260.0):
        track, _ = pitch_track(_voice(f0))
        voiced = track[track > 0]
        assert voiced.size > 0.8 * track.size
        assert abs(float(np.median(voiced)) - f0) / f0 < 0.03
    silent, _ = pitch_track(np.zeros(SAMPLE_RATE, np.float32))
    assert (silent == 0).all()


def test_prosody_measures_loudness_and_pitch_spread() -> None:
    flat, lively = prosody(_voice(180.0)), prosody(_voice(180.0, vibrato_st=4.0))
    assert flat.pitch_spread_st < 0.5 and lively.pitch_spread_st > 2.0
    loud = prosody(_voice(180.0, amp=0.2))
    assert loud.loudness_dbfs - flat.loudness_dbfs == pytest.approx(20 * np.log10(2), abs=0.3)
    assert lively.arousal > flat.arousal
    # the transcript sets the rate: 10 Chinese characters over 2 voiced seconds = about 5 syllables/s
    assert prosody(_voice(180.0), "我想买一瓶牛奶谢谢你").speaking_rate == pytest.approx(5.0, rel=0.1)


def test_lexicon_handles_both_languages_and_negation() -> None:
    assert lexicon("Thank you, the bread is great").positive == ["thank", "great"]
    assert lexicon("the milk is not good").negative == ["good"]
    assert lexicon("这个面包不错，谢谢").positive == ["不错", "谢谢"]
    assert lexicon("我不喜欢，太贵了").negative == ["喜欢", "太贵"]
    hits = lexicon("This is ridiculous, I want a refund. 我要投诉")
    assert hits.angry == ["ridiculous", "refund", "投诉"] and hits.valence == -1.0
    assert lexicon("the store opens at nine").valence == 0.0


def test_classify_combines_words_and_prosody() -> None:
    calm, excited = _voice(160.0, amp=0.03), _voice(220.0, amp=0.6, vibrato_st=8.0)
    assert classify(calm, "the store opens at nine").label == "neutral"
    assert classify(calm, "谢谢，面包很好吃").label == "positive"
    assert classify(calm, "the queue is slow and the milk is expensive").label == "negative"
    assert classify(calm, "this is unacceptable, I want a refund").label == "angry"
    # the same negative words said loud, lively and fast read as anger
    angry = classify(excited, "the queue is slow and the milk is expensive " * 2)
    assert angry.label == "angry" and angry.prosody.arousal > 0.8
    assert classify(excited, "").label == "neutral"  # arousal alone is not an emotion
    scores = classify(calm, "great").scores
    assert set(scores) == {"neutral", "positive", "negative", "angry"} and sum(
        scores.values()
    ) == pytest.approx(1.0)


def test_prosody_of_real_speech(tmp_path: Path) -> None:
    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed (apt-get install espeak-ng)")
    path = tmp_path / "en.wav"
    subprocess.run(
        ["espeak-ng", "-v", "en-us", "-s", "160", "-w", str(path), "I would like two apples."], check=True
    )
    rate, pcm = wavfile.read(path)
    p = prosody(resample(to_float32(pcm), rate))
    assert 0.2 < p.voiced_ratio < 1.0
    assert 70.0 < p.pitch_hz < 250.0
    assert 1.0 < p.speaking_rate < 12.0  # from the energy envelope (no transcript)
