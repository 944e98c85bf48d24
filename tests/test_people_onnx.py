"""The people detector's ONNX Runtime backend (the tf2onnx export) against OpenCV DNN, and backend choice.

The export needs TensorFlow at build time (``models/export_ssd_onnx.py``), so the comparison runs
only where one was made: set ``ADAMM_SSD_ONNX_DIR`` to the folder holding
``ssd_mobilenet_v2_coco.onnx``. The backend-choice tests always run.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from edge.config import parse_daemon_config
from edge.encoders.people_ssd import ONNX_FILE, PERSON, SsdPeopleDetector, onnx_file
from edge.errors import ConfigError, ModelMissingError

skimage_data = pytest.importorskip("skimage.data")

PHOTOS = {"astronaut": 1, "coffee": 0, "chelsea": 0}


def _bgr(name: str) -> np.ndarray:
    return np.ascontiguousarray(getattr(skimage_data, name)()[:, :, ::-1])


@pytest.fixture(scope="module")
def exported() -> Path:
    folder = os.environ.get("ADAMM_SSD_ONNX_DIR")
    if not folder:
        pytest.skip(
            "no detector ONNX export configured: build one with models/export_ssd_onnx.py (needs "
            "tensorflow-cpu + tf2onnx) and set ADAMM_SSD_ONNX_DIR to its folder"
        )
    path = Path(folder) / ONNX_FILE
    if not path.is_file():
        pytest.skip(f"ADAMM_SSD_ONNX_DIR is set but {path} does not exist")
    return path


def test_onnx_backend_counts_and_boxes_match_opencv(exported: Path) -> None:
    cv = SsdPeopleDetector(backend="opencv")
    ox = SsdPeopleDetector(backend="onnx", onnx_path=exported, providers=["CPUExecutionProvider"])
    assert ox.backend == "onnx" and ox.providers == ["CPUExecutionProvider"]
    images = [_bgr(n) for n in PHOTOS]
    assert ox.count_people(images) == cv.count_people(images) == list(PHOTOS.values())
    for a, b in zip(cv.detect(images, min_score=0.3), ox.detect(images, min_score=0.3), strict=True):
        assert [d.class_id for d in a] == [d.class_id for d in b]
        for da, db in zip(a, b, strict=True):
            assert abs(da.score - db.score) < 0.02
            assert np.allclose(np.clip(da.box, 0, 1), np.clip(db.box, 0, 1), atol=0.02)
    person = ox.detect(images[:1])[0][0]
    assert person.class_id == PERSON and 0 <= person.box[0] < person.box[2] <= 1
    # the frozen graph's own NMS keeps only scores >= 0.3, OpenCV's DetectionOutput keeps lower ones,
    # so the class-score vectors (built from detections >= 0.1) differ only in that faint tail
    cosines = (ox.encode(images) * cv.encode(images)).sum(axis=1)
    assert (cosines > 0.98).all(), cosines


def test_auto_uses_opencv_without_an_export_or_a_gpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ADAMM_SSD_ONNX_DIR", raising=False)
    det = SsdPeopleDetector(backend="auto", models_dir=tmp_path)
    assert det.backend == "opencv" and det.providers == ["OpenCV-DNN-CPU"]
    assert det.count_people([_bgr("astronaut")]) == [1]


def test_onnx_backend_without_the_export_says_how_to_build_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ADAMM_SSD_ONNX_DIR", raising=False)
    with pytest.raises(ModelMissingError) as err:
        SsdPeopleDetector(backend="onnx", models_dir=tmp_path)
    assert str(tmp_path / ONNX_FILE) in str(err.value) and "export_ssd_onnx.py" in str(err.value)


def test_onnx_file_lookup_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADAMM_SSD_ONNX_DIR", str(tmp_path / "env"))
    assert onnx_file("/x/y.onnx", tmp_path) == Path("/x/y.onnx")
    assert onnx_file(None, tmp_path) == tmp_path / "env" / ONNX_FILE
    monkeypatch.delenv("ADAMM_SSD_ONNX_DIR")
    assert onnx_file(None, tmp_path) == tmp_path / ONNX_FILE


def test_detector_backend_config() -> None:
    assert parse_daemon_config({"store_id": "s1"}).detector.backend == "auto"
    assert parse_daemon_config({"store_id": "s1", "detector": {"backend": "onnx"}}).detector.backend == "onnx"
    with pytest.raises(ConfigError) as err:
        parse_daemon_config({"store_id": "s1", "detector": {"backend": "tensorrt"}})
    assert "detector.backend" in str(err.value)
