"""Builds MEV dicts (mev.schema.json) from segments: one event_id binds a happening's media and stats.

Event ids are deterministic (source, start time in UTC milliseconds, sequence number), so replaying
the same file yields the same ids and re-import is idempotent. Pure: the caller has already written
the media and passes the paths as ``raw_ref``. Called by the daemon's workers.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from edge.segmentation.speech import SpeechSegment
from edge.segmentation.video import VideoSegment

#: zone -> event type of a scene with people in it; other zones give "dwell"
ZONE_EVENT_TYPES = {"entrance": "customer_enter", "checkout": "checkout_queue"}
#: event type of a scene in which nobody was seen (or detection is off)
EMPTY_SCENE = "scene"
SPEECH = "speech"


def iso_utc(ts: float) -> str:
    """Epoch seconds -> RFC 3339 UTC with milliseconds and ``Z``."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def make_event_id(source: str, ts: float, seq: int) -> str:
    stamp = datetime.fromtimestamp(ts, UTC).strftime("%Y%m%dT%H%M%S.%f")[:-3]
    return f"{source}.{stamp}Z.{seq:04d}"


def video_event_type(zone: str, person_count: int | None) -> str:
    if not person_count:
        return EMPTY_SCENE
    return ZONE_EVENT_TYPES.get(zone, "dwell")


def video_event(
    seg: VideoSegment,
    *,
    store_id: str,
    zone: str,
    seq: int,
    raw_ref: list[str],
    context: dict[str, Any] | None = None,
    quality: float | None = None,
) -> dict[str, Any]:
    """The MEV of one scene. ``raw_ref`` are the written keyframes (at least one)."""
    count = seg.person_count
    etype = video_event_type(zone, count)
    stats: dict[str, Any] = {
        "zone": zone,
        "quality": round(seg.quality if quality is None else quality, 3),
        "frames_sampled": seg.frames,
        "keyframes": len(seg.keyframes),
        "duration_seconds": round(seg.duration, 3),
        "cut_reason": seg.cut_reason,
    }
    if count is not None:
        stats["person_count"] = int(count)
        stats["person_count_max"] = int(max(seg.person_counts))
    if etype == "dwell":
        stats["dwell_seconds"] = seg.occupied_seconds
    if etype == "checkout_queue" and count is not None:
        stats["queue_length"] = int(count)
    if seg.black:
        stats["black"] = True
    if seg.frozen:
        stats["frozen"] = True
    if seg.blurred_ratio > 0.5:
        stats["blurred"] = True
    stats.update({k: v for k, v in (context or {}).items() if v is not None})
    ev: dict[str, Any] = {
        "event_id": make_event_id(seg.source, seg.start_ts, seq),
        "timestamp": iso_utc(seg.start_ts),
        "store_id": store_id,
        "source": seg.source,
        "event_type": etype,
        "modality": ["video"],
        "stats": stats,
        "raw_ref": list(raw_ref),
    }
    if seg.end_ts > seg.start_ts:
        ev["end_timestamp"] = iso_utc(seg.end_ts)
    return ev


def speech_event(
    seg: SpeechSegment,
    *,
    store_id: str,
    zone: str,
    seq: int,
    raw_ref: list[str],
    quality: float,
    transcript: str | None = None,
    asr: str | None = None,
    context: dict[str, Any] | None = None,
    extra_stats: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The MEV of one speech segment. Without a speech model there is no transcript: ``text`` is
    absent and ``stats.asr`` says why (no invented text)."""
    stats: dict[str, Any] = {
        "zone": zone,
        "quality": round(quality, 3),
        "duration_seconds": round(seg.duration, 3),
        "voiced_ratio": round(seg.voiced_ratio, 3),
        "cut_reason": seg.cut_reason,
    }
    if asr is not None:
        stats["asr"] = asr
    stats.update(extra_stats or {})
    stats.update({k: v for k, v in (context or {}).items() if v is not None})
    modality = ["audio", "text"] if transcript else ["audio"]
    ev: dict[str, Any] = {
        "event_id": make_event_id(seg.source, seg.start_ts, seq),
        "timestamp": iso_utc(seg.start_ts),
        "end_timestamp": iso_utc(max(seg.end_ts, seg.start_ts)),
        "store_id": store_id,
        "source": seg.source,
        "event_type": SPEECH,
        "modality": modality,
        "stats": stats,
        "raw_ref": list(raw_ref),
    }
    if transcript:
        ev["text"] = transcript
    return ev
