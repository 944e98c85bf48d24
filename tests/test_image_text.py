"""Image-text vectors of video events: the labels_as_text stand-in on real photos, in the daemon,
in the store and in ``adamm search``; CLIP (a CLIP-shaped test model) in the daemon; the config.

The stand-in runs the real models: EfficientNet-Lite3 (TFLite, LiteRT), SSD-MobileNetV2 and the
multilingual USE text encoder, on scikit-image photos (coffee, chelsea the cat, the astronaut).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from daemon_media import SCENES, MemorySink, daemon_config, make_video

from edge.cli import main
from edge.daemon.app import AdammDaemon
from edge.errors import ConfigError

skimage_data = pytest.importorskip("skimage.data")

PHOTOS = ("coffee", "chelsea", "astronaut")

#: events the test video must give: one per scene, none for the black stretch
N_SCENES = sum(name != "black" for name, _ in SCENES)


def _bgr(name: str) -> np.ndarray:
    return np.ascontiguousarray(getattr(skimage_data, name)()[:, :, ::-1])


@pytest.fixture(scope="module")
def stand_in() -> Any:
    from edge.encoders.base import create

    detector = create("ssd_mobilenet_v2_coco")
    return create("labels_as_text", detector=detector)


@pytest.fixture(scope="module")
def described(stand_in: Any) -> dict[str, Any]:
    return {name: stand_in.encode_event([_bgr(name)]) for name in PHOTOS}


def test_labels_name_what_is_in_the_photo(described: dict[str, Any]) -> None:
    names = {k: [n for n, _ in v.labels] for k, v in described.items()}
    assert {"cup", "espresso"} & set(names["coffee"][:3]), names["coffee"]
    assert {"cat", "Egyptian cat", "tabby", "tiger cat"} & set(names["chelsea"][:2]), names["chelsea"]
    assert "person" in names["astronaut"], names["astronaut"]
    for v in described.values():
        assert v.space == "text" and v.vector.shape == (512,)
        assert abs(float(np.linalg.norm(v.vector)) - 1.0) < 1e-5
        weights = [w for _, w in v.labels]
        assert weights == sorted(weights, reverse=True) and 0 < weights[-1] <= 1


@pytest.mark.parametrize(
    ("query", "best"),
    [
        ("咖啡", "coffee"),
        ("一杯咖啡", "coffee"),
        ("a cup of coffee", "coffee"),
        ("猫", "chelsea"),
        ("人", "astronaut"),
    ],
)
def test_text_queries_find_the_photo(stand_in: Any, described: dict[str, Any], query: str, best: str) -> None:
    q = stand_in.text_encoder.encode([query])[0]
    scores = {name: float(v.vector @ q) for name, v in described.items()}
    assert max(scores, key=lambda n: scores[n]) == best, scores


def test_encode_gives_one_unit_vector_per_frame(stand_in: Any, described: dict[str, Any]) -> None:
    vecs = stand_in.encode([_bgr("coffee"), _bgr("chelsea")])
    assert vecs.shape == (2, 512) and vecs.dtype == np.float32
    np.testing.assert_allclose(vecs[0], described["coffee"].vector, atol=1e-5)
    assert stand_in.encode([]).shape == (0, 512)
    black = stand_in.encode_event([np.zeros((240, 320, 3), np.uint8)])
    assert black.vector.shape == (512,)  # whatever it guesses on black, a valid vector (or zero)


def test_detections_from_the_caller_replace_a_second_detector_run(
    stand_in: Any, described: dict[str, Any]
) -> None:
    """The daemon's video worker passes the COCO labels of its own detector run (``objects``): same
    vector and labels as when the stand-in runs the detector itself, and no second run."""
    frames = [_bgr("astronaut"), _bgr("coffee")]
    det = stand_in.detector
    objects = [stand_in.coco_labels(d) for d in det.detect(frames, min_score=0.3)]
    assert "person" in objects[0] and all(s >= stand_in.detection_score for o in objects for s in o.values())
    calls: list[int] = []
    real_detect = det.detect

    def counted(images: Any, min_score: Any = None) -> Any:
        calls.append(len(images))
        return real_detect(images, min_score=min_score)

    det.detect = counted
    try:
        given = stand_in.encode_event(frames, objects=objects)
        assert calls == []
        partly = stand_in.encode_event(frames, objects=[objects[0], None])
        assert calls == [1]  # only the frame without labels went to the detector
    finally:
        del det.detect
    itself = stand_in.encode_event(frames)
    np.testing.assert_allclose(given.vector, itself.vector, atol=1e-6)
    np.testing.assert_allclose(partly.vector, itself.vector, atol=1e-6)
    assert given.labels == itself.labels
    np.testing.assert_allclose(
        stand_in.encode_event([frames[0]], objects=[objects[0]]).vector,
        described["astronaut"].vector,
        atol=1e-6,
    )


# ---- in the daemon ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def video(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_video(tmp_path_factory.mktemp("photos") / "scenes.avi")


def _config(tmp: Path, video: Path, image_text: dict[str, Any]) -> Any:
    camera = {"id": "cam", "url": str(video), "zone": "floor", "start_time": "2026-03-01T10:00:00+08:00"}
    return daemon_config(tmp, cameras=[camera], image_text=image_text)


def _toml(tmp: Path, video: Path) -> Path:
    path = tmp / "edge.toml"
    path.write_text(
        f"""
store_id = "s1"
timezone = "Asia/Shanghai"
db = "{tmp / "store.db"}"
media_dir = "{tmp / "media"}"
models_dir = "{tmp / "models"}"

[[cameras]]
id = "cam"
url = "{video}"
zone = "floor"
start_time = "2026-03-01T10:00:00+08:00"

[image_text]
encoder = "labels_as_text"
""",
        encoding="utf-8",
    )
    return path


@pytest.fixture(scope="module")
def stored(video: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("run")
    cfg = _toml(tmp, video)
    assert main(["run", "--config", str(cfg), "--until-eof", "--jsonl", str(tmp / "events.jsonl")]) == 0
    # the daemon's store sink calls the same Store.import_events as `adamm import`
    db = str(tmp / "store.db")
    assert main(["import", "--db", db, "--tz", "Asia/Shanghai", str(tmp / "events.jsonl")]) == 0
    return tmp


def test_video_events_carry_the_stand_in_vector_and_labels(stored: Path) -> None:
    events = [json.loads(line) for line in (stored / "events.jsonl").read_text(encoding="utf-8").splitlines()]
    video = sorted(events, key=lambda e: e["timestamp"])
    assert len(video) == N_SCENES  # astronaut, coffee, chelsea (none for the black stretch)
    for ev in video:
        assert ev["stats"]["image_encoder"] == "labels_as_text"
        assert set(ev["embedding"]) == {"text"} and len(ev["embedding"]["text"]) == 512
        assert isinstance(ev["stats"]["image_labels"], str) and ev["stats"]["image_labels"]
        assert "text" not in ev  # labels are stats, not an invented transcript
    assert "person" in video[0]["stats"]["image_labels"]
    assert "cup" in video[1]["stats"]["image_labels"] or "espresso" in video[1]["stats"]["image_labels"]


def _search(db: Path, query: str, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    capsys.readouterr()
    assert main(["search", "--db", str(db), "--json", query]) == 0
    return list(json.loads(capsys.readouterr().out)["results"])


def test_chinese_query_finds_the_coffee_scene_in_the_store(
    stored: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events = [json.loads(line) for line in (stored / "events.jsonl").read_text(encoding="utf-8").splitlines()]
    by_time = [e["event_id"] for e in sorted(events, key=lambda e: e["timestamp"])]
    astronaut, coffee, cat = by_time
    results = _search(stored / "store.db", "咖啡", capsys)
    ranked = [r["event_id"] for r in results]
    assert ranked[0] == coffee and sorted(ranked) == sorted(by_time)  # all three scenes, coffee first
    assert _search(stored / "store.db", "a cat sleeping", capsys)[0]["event_id"] == cat
    assert _search(stored / "store.db", "有人", capsys)[0]["event_id"] == astronaut


def test_image_text_none_adds_nothing(video: Path, tmp_path: Path) -> None:
    sink = MemorySink()
    cfg = _config(tmp_path, video, {"encoder": "none"})
    AdammDaemon(cfg, until_eof=True, sink=sink).start()
    assert len(sink.events) == N_SCENES
    assert all("embedding" not in e and "image_encoder" not in e["stats"] for e in sink.events)


def test_clip_in_the_daemon_stores_image_vectors(video: Path, tmp_path: Path) -> None:
    import test_clip
    from test_clip import _write_model

    from edge.encoders.clip import ClipTokenizer, vocab_from_merges

    folder = tmp_path / "clip"
    folder.mkdir()
    tok = ClipTokenizer(vocab_from_merges(test_clip.MERGES), test_clip.MERGES)
    _write_model(folder, tok)
    sink = MemorySink()
    cfg = _config(tmp_path, video, {"encoder": "clip_vit_b16", "model_dir": str(folder)})
    daemon = AdammDaemon(cfg, until_eof=True, sink=sink)
    daemon.start()
    assert len(sink.events) == N_SCENES
    for ev in sink.events:
        assert ev["stats"]["image_encoder"] == "clip_vit_b16" and "image_labels" not in ev["stats"]
        vec = np.asarray(ev["embedding"]["image"])
        assert set(ev["embedding"]) == {"image"} and vec.shape == (512,)
        assert abs(float(np.linalg.norm(vec)) - 1.0) < 1e-3
    # query vectors come from the same model's text tower
    q = daemon.image_text.encode_text(["red"])[0]
    assert q.shape == (512,)


def test_clip_without_its_model_folder_stops_the_start(video: Path, tmp_path: Path) -> None:
    from edge.errors import ModelMissingError

    cfg = _config(tmp_path, video, {"encoder": "clip_vit_b16"})
    with pytest.raises(ModelMissingError, match="export_clip"):
        AdammDaemon(cfg, until_eof=True, sink=MemorySink()).start()


def test_image_text_config_errors_name_the_key(tmp_path: Path, video: Path) -> None:
    with pytest.raises(ConfigError) as err:
        _config(tmp_path, video, {"encoder": "clip"})
    assert "image_text.encoder" in str(err.value)
    with pytest.raises(ConfigError) as err:
        _config(tmp_path, video, {"max_frames": 0, "labels": 3})
    msg = str(err.value)
    assert "image_text.max_frames" in msg and "image_text.labels" in msg


def test_validate_config_reports_a_missing_clip_folder(tmp_path: Path, video: Path) -> None:
    from edge.config import check_sources

    cfg = _config(tmp_path, video, {"encoder": "clip_vit_b16", "model_dir": str(tmp_path / "nope")})
    problems = check_sources(cfg, "e.toml")
    assert len(problems) == 1 and problems[0].startswith("e.toml: image_text.model_dir: ")
    assert "export_clip" in problems[0]
    assert check_sources(_config(tmp_path, video, {})) == []


def test_search_image_ranks_clip_vectors_by_the_clip_text_tower(
    video: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import test_clip
    from test_clip import _write_model

    from edge.encoders.clip import ClipEncoder, ClipTokenizer, vocab_from_merges

    folder = tmp_path / "clip"
    folder.mkdir()
    _write_model(folder, ClipTokenizer(vocab_from_merges(test_clip.MERGES), test_clip.MERGES))
    cfg = _toml(tmp_path, video)
    cfg.write_text(
        cfg.read_text(encoding="utf-8").replace(
            'encoder = "labels_as_text"', f'encoder = "clip_vit_b16"\nmodel_dir = "{folder}"'
        ),
        encoding="utf-8",
    )
    out = tmp_path / "events.jsonl"
    assert main(["run", "--config", str(cfg), "--until-eof", "--jsonl", str(out)]) == 0
    db = str(tmp_path / "store.db")
    assert main(["import", "--db", db, "--tz", "Asia/Shanghai", str(out)]) == 0
    events = {e["event_id"]: e for e in map(json.loads, out.read_text(encoding="utf-8").splitlines())}
    capsys.readouterr()
    assert main(["search", "--db", db, "--config", str(cfg), "--image", "--json", "red"]) == 0
    results = json.loads(capsys.readouterr().out)["results"]
    q = ClipEncoder(model_dir=folder, providers=["CPUExecutionProvider"]).encode_text(["red"])[0]
    want = {i: float(np.dot(e["embedding"]["image"], q)) for i, e in events.items()}
    assert [r["event_id"] for r in results] == sorted(want, key=lambda i: -want[i])
    for r in results:
        assert abs(r["cosine"] - want[r["event_id"]]) < 1e-3


def test_missing_tflite_runtime_only_warns(
    video: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import edge.encoders.labels_text as labels_text
    from edge.errors import ModelMissingError

    def no_runtime() -> Any:
        raise ModelMissingError("no TFLite runtime is installed", hint="pip install ai-edge-litert")

    monkeypatch.setattr(labels_text, "_interpreter_class", no_runtime)  # as on a box without the package
    sink = MemorySink()
    AdammDaemon(_config(tmp_path, video, {}), until_eof=True, sink=sink).start()
    assert len(sink.events) == N_SCENES and all("embedding" not in e for e in sink.events)
    assert "image-text stand-in unavailable" in caplog.text and "ai-edge-litert" in caplog.text
