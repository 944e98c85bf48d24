"""Topic-shift cuts in transcripts, on real USE v3 vectors (the default text encoder), in Chinese and
English, and end to end: espeak-ng speaks two topics in one breath, Whisper transcribes it, the
daemon's audio worker cuts it into two speech events, each with its own text vector."""

from __future__ import annotations

import wave
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from daemon_media import MemorySink, _espeak, espeak_available

from edge.config import SegmentationConfig, parse_daemon_config
from edge.daemon.app import AdammDaemon
from edge.segmentation.topic import (
    TopicChunk,
    TopicTracker,
    consecutive_cosines,
    split_sentences,
    topic_cuts,
    topic_groups,
)

THRESHOLD = SegmentationConfig().topic_cosine_threshold
MIN_CHUNK = SegmentationConfig().topic_min_chunk

EN_COFFEE = (
    "Our new coffee beans arrived this morning, a dark roast from Yunnan. "
    "The espresso tastes smoother than last week and customers love the latte. "
)
EN_PARKING = (
    "By the way, the parking lot behind the store floods every time it rains. "
    "We should call the city about the drainage pipe near the parking spaces."
)
ZH_COFFEE = "这款咖啡豆是今天早上到的，云南的深烘焙。拿铁的口感比上周更顺滑，顾客很喜欢这款咖啡。"
ZH_PARKING = "另外，下雨的时候店后面的停车场总是积水。我们应该打电话给市政，问问停车位旁边的排水管。"


@pytest.fixture(scope="module")
def encoder() -> Any:
    from edge.encoders.base import create

    return create("use_v3_multilingual")  # part of the README install: a failure here is a failure


def test_sentences_are_joined_to_the_minimum_and_spans_follow_the_characters() -> None:
    chunks = split_sentences("Hi. Yes. " + EN_COFFEE + "Ok.", 10.0, 20.0, min_chars=MIN_CHUNK)
    assert all(len(c.text) >= MIN_CHUNK for c in chunks)
    assert chunks[0].text.startswith("Hi. Yes. Our new coffee")  # short sentences joined forward
    assert chunks[-1].text.endswith("latte. Ok.")  # a short tail joins the chunk before it
    assert chunks[0].start_s == 10.0 and chunks[-1].end_s == 20.0
    assert all(a.end_s == b.start_s for a, b in zip(chunks, chunks[1:], strict=False))
    zh = split_sentences(ZH_COFFEE + ZH_PARKING, 0.0, 8.0, min_chars=MIN_CHUNK)
    # four Chinese sentences of 17-23 characters: pairs of them make the 30-character chunks
    assert [c.text for c in zh] == [ZH_COFFEE, ZH_PARKING]
    assert split_sentences("   ", 0, 1, min_chars=5) == []
    assert [c.text for c in split_sentences("no punctuation at all", 0, 1, min_chars=99)] == [
        "no punctuation at all"
    ]


@pytest.mark.parametrize(
    ("first", "second"), [(EN_COFFEE, EN_PARKING), (ZH_COFFEE, ZH_PARKING)], ids=["en", "zh"]
)
def test_a_clear_topic_change_is_cut_and_nothing_else(encoder: Any, first: str, second: str) -> None:
    chunks = split_sentences(first + second, 0.0, 30.0, min_chars=MIN_CHUNK)
    vecs = encoder.encode([c.text for c in chunks])
    groups = topic_groups(chunks, vecs, THRESHOLD)
    assert len(groups) == 2, consecutive_cosines(vecs)
    assert groups[0].text.replace(" ", "") == first.replace(" ", "")
    assert groups[1].text.replace(" ", "") == second.replace(" ", "")
    assert groups[1].cut_cosine is not None and groups[1].cut_cosine < THRESHOLD
    assert groups[0].min_cosine >= THRESHOLD and groups[1].min_cosine >= THRESHOLD
    assert groups[0].end_s == groups[1].start_s and groups[1].end_s == 30.0


def test_one_topic_across_languages_is_not_cut(encoder: Any) -> None:
    # the multilingual encoder puts a translation close to its original: no cut at a language switch
    chunks = [TopicChunk(EN_COFFEE.strip(), 0, 1), TopicChunk(ZH_COFFEE, 1, 2)]
    vecs = encoder.encode([c.text for c in chunks])
    assert topic_cuts(vecs, THRESHOLD) == []
    assert len(topic_groups(chunks, vecs, THRESHOLD)) == 1


def test_tracker_compares_segments_of_one_stream() -> None:
    a, b = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    t = TopicTracker(max_gap_s=10)
    assert t.push(a, a, 0, 5) is None
    assert t.push(a, b, 6, 8) == pytest.approx(1.0)
    assert t.push(a, a, 9, 10) == pytest.approx(0.0)
    assert t.push(a, a, 30, 31) is None  # a long silence starts a new conversation
    with pytest.raises(ValueError, match="2 chunks but 1 vectors"):
        topic_groups([TopicChunk("x", 0, 1), TopicChunk("y", 1, 2)], np.ones((1, 2)), 0.5)


def test_daemon_cuts_one_utterance_at_the_topic_shift(tmp_path: Path, encoder: Any) -> None:
    if not espeak_available():
        pytest.skip("espeak-ng is not installed (apt-get install espeak-ng)")
    speech = _espeak(EN_COFFEE + EN_PARKING, "en", tmp_path / "raw.wav", 16000)
    room = np.random.default_rng(1).normal(0, 20, 16000).astype(np.float32)
    pcm = np.clip(np.concatenate([room, speech, room]), -32768, 32767).astype("<i2")
    wav = tmp_path / "talk.wav"
    with wave.open(str(wav), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(pcm.tobytes())
    cfg = parse_daemon_config(
        {
            "store_id": "s1",
            "media_dir": str(tmp_path / "media"),
            "models_dir": str(tmp_path / "models"),
            "microphones": [{"id": "mic", "device": str(wav), "start_time": "2026-03-01T10:00:00+08:00"}],
            # sentence pauses of espeak-ng stay inside one segment: only the topic can cut it
            "vad": {"hangover_ms": 1500, "max_segment_s": 60},
            "speech": {"language": "en"},
        }
    )
    sink = MemorySink()
    AdammDaemon(cfg, until_eof=True, sink=sink).start()
    events = sorted(sink.events, key=lambda e: e["timestamp"])
    assert len(events) == 2, [e.get("text") for e in events]
    first, second = events
    assert "coffee" in first["text"].lower() and "parking" not in first["text"].lower()
    assert "parking" in second["text"].lower() and "coffee" not in second["text"].lower()
    assert first["stats"]["cut_reason"] == "topic_shift"
    assert second["stats"]["topic_cosine"] < THRESHOLD and second["stats"]["topic_parts"] == 2
    assert first["end_timestamp"] <= second["timestamp"]
    for ev in events:
        text_vec = np.asarray(ev["embedding"]["text"])
        assert text_vec.shape == (512,) and len(ev["embedding"]["audio"]) == 512
        # the stored vector is the encoder's vector of the event's own text
        assert float(text_vec @ encoder.encode([ev["text"]])[0]) > 0.999
        (ref,) = ev["raw_ref"]
        with wave.open(ref) as w:
            assert abs(w.getnframes() / 16000 - ev["stats"]["duration_seconds"]) < 0.05


@pytest.mark.parametrize("source", ["microphones", "cameras"])
def test_the_daemon_uses_the_stores_own_text_encoder(tmp_path: Path, source: str) -> None:
    """Transcripts (a microphone) and the image-text stand-in's labels (a camera) share one session."""
    from edge.daemon.app import StoreSink

    cfg = parse_daemon_config(
        {
            "store_id": "s1",
            "db": str(tmp_path / "store.db"),
            "media_dir": str(tmp_path / "media"),
            "models_dir": str(tmp_path / "models"),
            source: [
                {"id": "src", ("device" if source == "microphones" else "url"): str(tmp_path / "media.file")}
            ],
        }
    )
    sink = StoreSink(cfg.db, cfg.timezone, cfg)
    try:
        daemon = AdammDaemon(cfg, sink=sink)
        if source == "microphones":
            daemon.speech = object()  # transcripts on (the speech model itself is not needed here)
        daemon.init_text_encoder()
        assert daemon.text_encoder is not None
        assert daemon.text_encoder is sink.store.text_encoder()  # one ONNX session, not two
    finally:
        sink.close()
