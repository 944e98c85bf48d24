"""Config sections of the capture sources: cameras, microphones, frame sampling, quality filter,
voice activity detection and the POS intake. Pydantic models only (see :mod:`edge.config.base`)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from edge.config.base import ID_PATTERN, Section

_ID = ID_PATTERN


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


class CameraConfig(Section):
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


class MicrophoneConfig(Section):
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


class SamplingConfig(Section):
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


class VadConfig(Section):
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


class QualityConfig(Section):
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


class PosConfig(Section):
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
