"""Pure segmentation: scene-change scores, frame quality, scene cuts, keyframe choice, VAD
segments, noise scoring, near-duplicate merge and MEV building (validated against the schema)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import numpy as np
import pytest
import skimage.data

from edge.segmentation.frames import frame_quality, scene_change_score, signature, thumbnail
from edge.segmentation.merge import Candidate, Merger
from edge.segmentation.mev import iso_utc, make_event_id, speech_event, video_event
from edge.segmentation.speech import SpeechSegmenter, frame_flatness, spectral_flatness
from edge.segmentation.video import SampledFrame, VideoSegmenter

SCHEMA = json.loads(
    (Path(__file__).resolve().parents[1] / "edge" / "schemas" / "mev.schema.json").read_text()
)
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.FormatChecker())


def photo(name: str) -> np.ndarray:
    img = getattr(skimage.data, name)()
    if img.ndim == 2:
        img = np.stack([img] * 3, axis=2)
    return np.ascontiguousarray(img[:, :, ::-1])


def score(a: np.ndarray, b: np.ndarray) -> float:
    return scene_change_score(signature(a), signature(b), thumbnail(a), thumbnail(b))


def test_scene_change_score_separates_cuts_from_noise_and_people() -> None:
    rng = np.random.default_rng(0)
    astro = photo("astronaut")
    noisy = np.clip(astro + rng.normal(0, 3, astro.shape), 0, 255).astype(np.uint8)
    coffee = photo("coffee")[:512, :512]
    coffee = np.pad(coffee, ((0, 512 - coffee.shape[0]), (0, 0), (0, 0)))
    walker = astro.copy()
    walker[300:460, 40:110] = 30  # a dark figure (about 4 % of the picture) walks in
    assert score(astro, astro) == 0.0
    assert score(astro, noisy) < 0.05
    assert score(astro, walker) < 0.35
    assert score(astro, coffee) > 0.35
    assert score(astro, np.zeros_like(astro)) > 0.9


def box_blur(img: np.ndarray, k: int) -> np.ndarray:
    out = img.astype(np.float32)
    for axis in (0, 1):
        acc = np.zeros_like(out)
        for s in range(-k, k + 1):
            acc += np.roll(out, s, axis=axis)
        out = acc / (2 * k + 1)
    return out.astype(np.uint8)


def test_frame_quality_black_blurred_sharp() -> None:
    sharp = photo("astronaut")
    q = frame_quality(sharp, black_luma=16, blur_threshold=15)
    assert not q.black and not q.blurred and q.score == 1.0
    blurred = frame_quality(box_blur(sharp, 6), black_luma=16, blur_threshold=15)
    assert blurred.blurred and blurred.score < q.score
    black = frame_quality(np.full_like(sharp, 5), black_luma=16, blur_threshold=15)
    assert black.black and black.score == 0.0


def frame(
    img: np.ndarray, ts: float, *, cut: bool = False, people: int | None = None, source: str = "cam"
) -> SampledFrame:
    return SampledFrame(
        source=source,
        ts=ts,
        index=int(ts),
        image=img,
        signature=signature(img[::4, ::4]),
        quality=frame_quality(img, black_luma=16, blur_threshold=15),
        scene_cut=cut,
        person_count=people,
    )


def jitter(img: np.ndarray, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.clip(img + rng.normal(0, 2, img.shape), 0, 255).astype(np.uint8)


def test_video_segmenter_cuts_scenes_black_and_max_duration() -> None:
    astro, cat = photo("astronaut")[::2, ::2], photo("chelsea")[::2, ::2]
    black = np.zeros_like(astro)
    seg = VideoSegmenter(max_event_seconds=6, max_keyframes=8, frozen_seconds=30)
    out = []
    t = 0.0
    for i in range(4):  # astronaut 0..3
        out += seg.push(frame(jitter(astro, i), t, cut=i == 0, people=1))
        t += 1
    for i in range(2):  # black 4..5
        out += seg.push(frame(black, t, cut=i == 0))
        t += 1
    for i in range(10):  # chelsea 6..15: cut by max duration at 12
        out += seg.push(
            frame(jitter(cat[: astro.shape[0], : astro.shape[1]], 10 + i), t, cut=i == 0, people=0)
        )
        t += 1
    out += seg.flush()
    assert [(s.start_ts, s.end_ts, s.cut_reason) for s in out] == [
        (0.0, 4.0, "black"),
        (4.0, 6.0, "picture"),
        (6.0, 12.0, "max_duration"),
        (12.0, 15.0, "end"),
    ]
    assert [s.black for s in out] == [False, True, False, False]
    assert out[0].person_count == 1 and out[0].occupied_seconds == 4.0
    assert out[1].quality == 0.0 and out[0].quality == 1.0
    assert out[2].person_count == 0


def test_keyframes_keep_first_and_most_informative() -> None:
    astro = photo("astronaut")[::2, ::2]
    seg = VideoSegmenter(max_event_seconds=100, max_keyframes=3, frozen_seconds=30)
    people = [0, 0, 2, 0, 3, 0, 0, 1, 0]
    for i, p in enumerate(people):
        seg.push(frame(jitter(astro, i), float(i), people=p))
    (s,) = seg.flush()
    assert len(s.keyframes) == 3
    assert [k.ts for k in s.keyframes] == [0.0, 2.0, 4.0]  # the first, then the two busiest
    assert s.person_count == 0  # the most frequent count


def test_frozen_camera_is_detected() -> None:
    astro = photo("astronaut")[::2, ::2]
    seg = VideoSegmenter(max_event_seconds=1000, max_keyframes=8, frozen_seconds=10)
    for i in range(15):
        seg.push(frame(astro, float(i)))  # byte-identical frames: a stalled feed
    (frozen,) = seg.flush()
    assert frozen.frozen and frozen.quality == 0.0
    seg2 = VideoSegmenter(max_event_seconds=1000, max_keyframes=8, frozen_seconds=10)
    for i in range(15):
        seg2.push(frame(jitter(astro, i), float(i)))
    (live,) = seg2.flush()
    assert not live.frozen


def run_vad(pattern: str, **kw: float) -> list:  # type: ignore[type-arg]
    seg = SpeechSegmenter(
        "mic",
        sample_rate=16000,
        frame_ms=30,
        padding_ms=300,
        hangover_ms=int(kw.get("hangover_ms", 600)),
        max_segment_s=kw.get("max_segment_s", 30.0),
        min_speech_s=kw.get("min_speech_s", 0.5),
    )
    out = []
    for i, ch in enumerate(pattern):
        pcm = np.full(480, i % 100, dtype=np.int16)
        out += seg.push(pcm, ch == "#", i * 0.03)
    return out + seg.flush()


def test_speech_segments_follow_vad_with_hangover_and_limits() -> None:
    # 1 s silence, 2 s speech with a 0.3 s pause, 1.5 s silence, 0.15 s blip, 1 s silence, 1.2 s speech
    pattern = "." * 33 + "#" * 30 + "." * 10 + "#" * 27 + "." * 50 + "#" * 5 + "." * 33 + "#" * 40 + "." * 40
    segs = run_vad(pattern)
    assert len(segs) == 2  # the pause does not split; the blip is too short to open
    first, second = segs
    assert first.start_ts == pytest.approx(0.99) and 3.0 < first.end_ts < 3.7
    assert second.start_ts == pytest.approx((33 + 30 + 10 + 27 + 50 + 5 + 33) * 0.03)
    assert first.voiced_ratio > 0.6
    assert len(first.pcm) == pytest.approx((first.end_ts - first.start_ts) * 16000, rel=0.02)


def test_long_speech_is_cut_at_max_segment() -> None:
    segs = run_vad("#" * 1200, max_segment_s=10.0)  # 36 s of speech
    durations = [round(s.duration, 2) for s in segs]
    assert all(d <= 10.0 for d in durations) and len(segs) == 4
    assert sum(durations) == pytest.approx(36.0, abs=0.1)
    assert segs[0].cut_reason == "max_duration"


def test_spectral_flatness_tells_noise_from_voice() -> None:
    rng = np.random.default_rng(1)
    sr = 16000
    t = np.arange(sr) / sr
    voice = sum(np.sin(2 * np.pi * 140 * k * t) / k for k in range(1, 20))  # a 140 Hz harmonic series
    voice = (voice * 0.5 * (1 + np.sin(2 * np.pi * 4 * t)) * 3000).astype(np.int16)
    noise = rng.normal(0, 3000, sr).astype(np.int16)
    assert spectral_flatness(noise, sr) > 0.45
    assert spectral_flatness(voice, sr) < 0.1
    assert frame_flatness(noise[:480]) > 0.45 > frame_flatness(voice[:480])


def cand(source: str, ts: float, vec: list[float], info: float, n: int) -> Candidate:
    ev = {
        "event_id": f"e{n}",
        "timestamp": iso_utc(ts),
        "end_timestamp": iso_utc(ts + 5),
        "source": source,
        "event_type": "scene",
        "raw_ref": [f"/m/{n}.jpg"],
        "stats": {},
    }
    return Candidate(ev, ts, ts + 5, np.array(vec, np.float32), info)


def test_near_duplicates_merge_and_keep_every_raw_ref() -> None:
    m = Merger(window_seconds=60, cosine_threshold=0.97)
    out = []
    out += m.push(cand("cam", 0, [1, 0, 0], 0.5, 1))
    out += m.push(cand("cam", 10, [0.99, 0.05, 0], 0.9, 2))  # duplicate, more informative
    out += m.push(cand("cam2", 12, [1, 0, 0], 0.5, 3))  # other source: never merged
    out += m.push(cand("cam", 20, [0, 1, 0], 0.5, 4))  # different picture
    out += m.push(cand("cam", 100, [1, 0, 0], 0.5, 5))  # outside the window: releases the others
    out += m.flush()
    assert m.merges == 1
    ids = {c.event["event_id"]: c for c in out}
    assert set(ids) == {"e2", "e3", "e4", "e5"}
    kept = ids["e2"].event
    assert kept["raw_ref"] == ["/m/2.jpg", "/m/1.jpg"]
    assert kept["stats"]["merged_events"] == 1
    assert kept["timestamp"] == iso_utc(0) and kept["end_timestamp"] == iso_utc(15)


def test_mev_events_validate_against_the_schema() -> None:
    astro = photo("astronaut")[::2, ::2]
    seg = VideoSegmenter(max_event_seconds=100, max_keyframes=8, frozen_seconds=30)
    t0 = 1_772_330_400.0
    for i in range(3):
        seg.push(frame(jitter(astro, i), t0 + i, people=2, source="cam_checkout"))
    (vs,) = seg.flush()
    ev = video_event(
        vs, store_id="s1", zone="checkout", seq=1, raw_ref=["/m/a.jpg"], context={"weather": "rain"}
    )
    VALIDATOR.validate(ev)
    assert ev["event_type"] == "checkout_queue" and ev["stats"]["queue_length"] == 2
    assert ev["stats"]["weather"] == "rain" and ev["event_id"] == make_event_id("cam_checkout", t0, 1)
    dwell = video_event(vs, store_id="s1", zone="shelf_a", seq=2, raw_ref=["/m/a.jpg"])
    assert dwell["event_type"] == "dwell" and dwell["stats"]["dwell_seconds"] == 2.0
    segs = run_vad("." * 20 + "#" * 60 + "." * 40)
    sp = speech_event(
        segs[0], store_id="s1", zone="floor", seq=1, raw_ref=["/m/a.wav"], quality=0.9, asr="not_installed"
    )
    VALIDATOR.validate(sp)
    assert "text" not in sp and sp["modality"] == ["audio"]
    sp2 = speech_event(
        segs[0], store_id="s1", zone="floor", seq=1, raw_ref=["/m/a.wav"], quality=0.9, transcript="hello"
    )
    VALIDATOR.validate(sp2)
    assert sp2["modality"] == ["audio", "text"] and sp2["text"] == "hello"


def harmonic(f0: np.ndarray, amp: float, sr: int = 16000) -> np.ndarray:
    phase = 2 * np.pi * np.cumsum(f0) / sr
    wave = sum(np.sin(k * phase) / k for k in range(1, 8))
    return (amp * wave / 2.0).astype(np.int16)


def test_prosody_measures_loudness_and_pitch_movement() -> None:
    from edge.segmentation.emotion import f0_track, prosody

    sr = 16000
    flat = harmonic(np.full(2 * sr, 140.0), 1500)
    sweep = harmonic(np.concatenate([np.linspace(120, 320, sr), np.linspace(320, 120, sr)]), 12000)
    track = f0_track(flat, sr)
    assert track.size > 20 and abs(float(np.median(track)) - 140.0) < 5.0
    calm, excited = prosody(flat, sr), prosody(sweep, sr)
    assert calm.pitch_cv < 0.05 < 0.2 < excited.pitch_cv
    assert excited.loudness_dbfs > calm.loudness_dbfs + 15
    assert excited.high_arousal and not calm.high_arousal


@pytest.mark.parametrize(
    ("text", "loud", "label"),
    [
        ("Thank you, this is great!", False, "positive"),
        ("谢谢，很满意", False, "positive"),
        ("The shoes are broken and I want a refund", False, "negative"),
        ("The shoes are broken and I want a refund", True, "angry"),
        ("这是什么态度，我要投诉", False, "angry"),
        ("Where are the running shoes?", False, "neutral"),
        ("", False, None),
    ],
)
def test_speech_emotion_rules(text: str, loud: bool, label: str | None) -> None:
    from edge.segmentation.emotion import speech_emotion

    sr = 16000
    f0 = (
        np.concatenate([np.linspace(120, 320, sr), np.linspace(320, 120, sr)])
        if loud
        else np.full(2 * sr, 140.0)
    )
    pcm = harmonic(f0, 12000 if loud else 1500)
    assert speech_emotion(text, pcm, sr) == label


def test_merger_releases_when_stream_time_passes_the_window() -> None:
    m = Merger(window_seconds=10, cosine_threshold=0.97)
    assert m.push(cand("cam", 0, [1, 0, 0], 0.5, 1)) == []  # ends at 5: held until 15
    assert m.tick(14.9) == []
    (ready,) = m.tick(15.1)
    assert ready.event["event_id"] == "e1" and m.flush() == []
