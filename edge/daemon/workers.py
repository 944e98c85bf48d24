"""The daemon's long-running threads: one worker per source, the event writer and the heartbeat.

Each modality has its own worker so a slow model never stalls capture: capture threads fill
bounded queues, workers drain them. A worker runs until its source's ``EndOfStream`` arrives,
so on shutdown every item already queued is still turned into events (nothing accepted is
lost silently; what capture could not queue is counted as dropped). Workers hand finished MEV
dicts to the single :class:`EventWriter`, which imports them through the store in batches.
Built and started by :class:`edge.daemon.app.AdammDaemon`.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, Protocol

import numpy as np

from edge.capture.base import Checkpoint, EndOfStream
from edge.config.daemon import DaemonConfig
from edge.daemon.context import Context
from edge.daemon.media import MediaWriter
from edge.segmentation.emotion import speech_emotion
from edge.segmentation.merge import Candidate, Merger
from edge.segmentation.mev import speech_event, video_event
from edge.segmentation.speech import SpeechSegment, spectral_flatness
from edge.segmentation.topic import TopicTracker, split_sentences, topic_groups
from edge.segmentation.video import SampledFrame, VideoSegment, VideoSegmenter

logger = logging.getLogger(__name__)


class PeopleCounter(Protocol):
    def count_people(self, images: list[Any]) -> list[int]: ...


class ImageTextModel(Protocol):
    """An image-text encoder (``edge.encoders.labels_text`` stand-in or ``edge.encoders.clip``)."""

    key: str

    def encode_event(self, images: list[Any], top: int = 5, objects: Any = None) -> Any:
        """An ``edge.encoders.base.ImageText``: ``vector``, ``space`` ("text"/"image"), ``labels``."""
        ...


class SpeechModel(Protocol):
    key: str
    dim: int

    def transcribe(self, pcm: Any, language: str | None = None) -> Any:
        """``(text, language, embedding)``, or an object with ``text``, ``language`` and
        ``embedding`` attributes (``edge.encoders.whisper.Transcript``)."""
        ...


class TextEncoder(Protocol):
    def encode(self, items: Sequence[Any]) -> Any:
        """Unit-norm text vectors, one row per text."""
        ...


def _transcript(result: Any) -> tuple[str, str, Any]:
    if isinstance(result, tuple):
        text, language, vector = result
        return str(text), str(language), vector
    return str(result.text), str(result.language), getattr(result, "embedding", None)


class EventSink(Protocol):
    """Where finished events go (the store in production)."""

    def write_events(self, events: list[dict[str, Any]]) -> int: ...
    def write_components(self, rows: list[dict[str, Any]]) -> None: ...

    # optional: ``load_setting(key) -> str | None`` and ``save_setting(key, value)`` keep positions
    # (POS tail offset) across restarts; a sink without them starts the tail from the top each run


class _Worker(threading.Thread):
    kind = "worker"

    def __init__(self, name: str, inbox: queue.Queue[Any], outbox: queue.Queue[Any]) -> None:
        super().__init__(name=name, daemon=True)
        self.inbox = inbox
        self.outbox = outbox
        self.state = "starting"
        self.events = 0
        self.dropped_low_quality = 0
        self.last_error: str | None = None
        self.source_id = name.partition(":")[2]

    def run(self) -> None:
        """Run :meth:`loop`; on any failure record it and drain the inbox; always pass the end on."""
        self.state = "running"
        try:
            self.loop()
        except Exception as exc:
            self.state = "error"
            self.last_error = str(exc)
            logger.exception("%s failed", self.name)
            self._drain()
        finally:
            if self.state != "error":
                self.state = "ended"
            self.outbox.put(EndOfStream(self.source_id, self.state))

    def loop(self) -> None:
        """One item at a time until the end of the stream."""
        while True:
            item = self.inbox.get()
            if isinstance(item, EndOfStream):
                self.finish()
                return
            self.handle(item)

    def _drain(self) -> None:
        # keep the capture side unblocked after a failure; count what is thrown away
        lost = 0
        while True:
            item = self.inbox.get()
            if isinstance(item, EndOfStream):
                break
            lost += 1
        if lost:
            logger.error("%s: %d queued items lost after the failure", self.name, lost)

    def handle(self, item: Any) -> None:
        raise NotImplementedError

    def finish(self) -> None:
        pass

    def status(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "events": self.events,
            "dropped_low_quality": self.dropped_low_quality,
            "queue": self.inbox.qsize(),
            "last_error": self.last_error,
        }


class VideoWorker(_Worker):
    """Person counts on sampled frames (batched), scene segmentation, quality, keyframes, merge."""

    kind = "video_worker"

    def __init__(
        self,
        cfg: DaemonConfig,
        camera_id: str,
        zone: str,
        inbox: queue.Queue[Any],
        outbox: queue.Queue[Any],
        *,
        detector: PeopleCounter | None,
        media: MediaWriter,
        context: Context,
        on_count_change: Callable[[], None] | None = None,
        batch_size: int = 8,
        image_text: ImageTextModel | None = None,
    ) -> None:
        super().__init__(f"video:{camera_id}", inbox, outbox)
        self.image_text = image_text
        self.image_text_seconds = 0.0
        self.cfg = cfg
        self.zone = zone
        self.detector = detector
        self.media = media
        self.context = context
        self.on_count_change = on_count_change
        self.batch_size = batch_size
        self.segmenter = VideoSegmenter(
            max_event_seconds=cfg.segmentation.max_event_seconds,
            max_keyframes=cfg.sampling.max_frames_per_event,
            frozen_seconds=cfg.quality.frozen_seconds,
        )
        self.merger = Merger(
            window_seconds=cfg.merge.window_seconds,
            cosine_threshold=cfg.merge.cosine_threshold,
            enabled=cfg.merge.enabled,
        )
        self.frames = 0
        self.detect_seconds = 0.0
        self._last_count: int | None = None
        self._seq = 0
        self._pending_end: EndOfStream | None = None

    def loop(self) -> None:
        # batch: take whatever frames are already queued (up to batch_size) for one detector call
        done = False
        while not done:
            batch: list[SampledFrame] = [self.inbox.get()]
            while len(batch) < self.batch_size and not isinstance(batch[-1], EndOfStream):
                try:
                    batch.append(self.inbox.get_nowait())
                except queue.Empty:
                    break
            frames = [f for f in batch if isinstance(f, SampledFrame)]
            if frames:
                self._process(frames)
            if isinstance(batch[-1], EndOfStream):
                self.finish()
                done = True

    def _process(self, frames: list[SampledFrame]) -> None:
        if self.detector is not None:
            visible = [f for f in frames if not f.quality.black]
            if visible:
                t0 = time.perf_counter()
                coco = getattr(self.image_text, "coco_labels", None)
                det: Any = self.detector
                if coco is not None and hasattr(det, "detect") and hasattr(det, "people_in"):
                    # one detector run gives the person counts and the stand-in's COCO labels
                    floor = min(det.score_threshold, self.image_text.detection_score)  # type: ignore[union-attr]
                    found = det.detect([f.image for f in visible], min_score=floor)
                    for f, dets in zip(visible, found, strict=True):
                        f.person_count = det.people_in(dets)
                        f.objects = coco(dets)
                else:
                    counts = self.detector.count_people([f.image for f in visible])
                    for f, c in zip(visible, counts, strict=True):
                        f.person_count = c
                self.detect_seconds += time.perf_counter() - t0
        for f in frames:
            self.frames += 1
            if f.person_count is not None:
                if (
                    self._last_count is not None
                    and f.person_count != self._last_count
                    and self.on_count_change
                ):
                    self.on_count_change()
                self._last_count = f.person_count
            for seg in self.segmenter.push(f):
                self._segment(seg)
            for ready in self.merger.tick(f.ts):
                self._send(ready)

    def finish(self) -> None:
        for seg in self.segmenter.flush():
            self._segment(seg)
        for cand in self.merger.flush():
            self._send(cand)

    def _segment(self, seg: VideoSegment) -> None:
        q = seg.quality
        too_short = seg.duration < self.cfg.segmentation.min_event_seconds
        if self.cfg.quality.action == "drop" and (q < self.cfg.quality.min_quality or too_short):
            self.dropped_low_quality += 1
            logger.info(
                "%s: dropped a %.1f s scene (quality %.2f%s%s)",
                self.source_id,
                seg.duration,
                q,
                ", black" if seg.black else "",
                ", frozen" if seg.frozen else "",
            )
            return
        self._seq += 1
        probe = video_event(seg, store_id=self.cfg.store_id, zone=self.zone, seq=self._seq, raw_ref=["-"])
        refs = self.media.keyframes(
            seg.source, probe["event_id"], seg.start_ts, [k.image for k in seg.keyframes]
        )
        ev = video_event(
            seg,
            store_id=self.cfg.store_id,
            zone=self.zone,
            seq=self._seq,
            raw_ref=refs,
            context=dict(self.context.labels()),
        )
        if self.image_text is not None and not seg.black:
            self._describe(ev, seg)
        informativeness = q * (1.0 + (seg.person_count or 0)) + 0.01 * len(seg.keyframes)
        cand = Candidate(ev, seg.start_ts, seg.end_ts, seg.signature, informativeness)
        for ready in self.merger.push(cand):
            self._send(ready)

    def _describe(self, ev: dict[str, Any], seg: VideoSegment) -> None:
        """The event's image-text vector (``embedding.text`` for the stand-in, ``embedding.image``
        for CLIP) from evenly spaced keyframes, its top labels and the encoder's key in ``stats``."""
        assert self.image_text is not None
        opts = self.cfg.image_text
        kept = [k for k in seg.keyframes if not k.quality.black]
        if not kept:
            return
        if len(kept) > opts.max_frames:
            kept = [kept[round(i)] for i in np.linspace(0, len(kept) - 1, opts.max_frames)]
        objects = [k.objects for k in kept]
        t0 = time.perf_counter()
        try:
            result = self.image_text.encode_event(
                [k.image for k in kept],
                top=opts.top_labels,
                objects=None if all(o is None for o in objects) else objects,
            )
        except Exception:
            logger.exception("%s: image-text encoding failed for %s", self.source_id, ev["event_id"])
            ev["stats"]["image_encoder"] = f"{self.image_text.key}:error"
            return
        finally:
            self.image_text_seconds += time.perf_counter() - t0
        vector = np.asarray(result.vector, dtype=np.float32).reshape(-1)
        if vector.shape == (512,) and np.isfinite(vector).all() and vector.any():  # the store's width
            ev.setdefault("embedding", {})[result.space] = [round(float(v), 6) for v in vector]
        if result.labels:
            ev["stats"]["image_labels"] = "; ".join(f"{name} {w:.2f}" for name, w in result.labels)
        ev["stats"]["image_encoder"] = self.image_text.key

    def _send(self, cand: Candidate) -> None:
        if cand.absorbed:
            logger.info(
                "%s: merged %d near-duplicate events into %s",
                self.source_id,
                len(cand.absorbed),
                cand.event["event_id"],
            )
        self.events += 1
        self.outbox.put(cand.event)

    def status(self) -> dict[str, Any]:
        s = super().status()
        s.update(frames=self.frames, merges=self.merger.merges, detect_seconds=round(self.detect_seconds, 3))
        if self.image_text is not None:
            s["image_text_seconds"] = round(self.image_text_seconds, 3)
        return s


class AudioWorker(_Worker):
    """Noise check, WAV segment, speech event (no transcript without a speech model)."""

    kind = "audio_worker"

    def __init__(
        self,
        cfg: DaemonConfig,
        mic_id: str,
        zone: str,
        inbox: queue.Queue[Any],
        outbox: queue.Queue[Any],
        *,
        media: MediaWriter,
        context: Context,
        speech: SpeechModel | None = None,
        language: str | None = None,
        text_encoder: TextEncoder | None = None,
    ) -> None:
        super().__init__(f"audio:{mic_id}", inbox, outbox)
        self.speech = speech
        self.text_encoder = text_encoder  # transcript vectors: topic cuts and embedding.text
        self.topics = TopicTracker()
        self.topic_cuts = 0
        self.language = language
        self.asr_seconds = 0.0
        self.cfg = cfg
        self.zone = zone
        self.media = media
        self.context = context
        self._seq = 0
        self.speech_seconds = 0.0

    def handle(self, item: Any) -> None:
        if not isinstance(item, SpeechSegment):
            return
        seg = item
        flatness = spectral_flatness(seg.pcm, seg.sample_rate)
        noise = flatness > self.cfg.quality.noise_flatness
        quality = 0.1 if noise else min(1.0, 0.5 + 0.5 * seg.voiced_ratio)
        if noise and self.cfg.quality.action == "drop":
            self.dropped_low_quality += 1
            logger.info(
                "%s: dropped a %.1f s noise-only segment (flatness %.2f)",
                self.source_id,
                seg.duration,
                flatness,
            )
            return
        transcript: str | None = None
        asr = "not_installed"
        extra: dict[str, Any] = {"spectral_flatness": round(flatness, 3), "noise": noise}
        embedding: dict[str, list[float]] = {}
        if self.speech is not None and not noise:
            t0 = time.perf_counter()
            text, language, vector = _transcript(self.speech.transcribe(seg.pcm, self.language))
            self.asr_seconds += time.perf_counter() - t0
            asr = self.speech.key
            extra["language"] = language
            if text.strip():
                transcript = text.strip()
            else:
                asr = f"{self.speech.key}:empty"
                quality *= 0.5  # speech the model could not make words of
            if vector is not None and len(vector) == 512:  # the store's vector width
                embedding["audio"] = [round(float(v), 6) for v in vector]
        for part, text_part, text_vec, part_stats in self._topic_parts(seg, transcript):
            self._emit(part, text_part, text_vec, quality, asr, {**extra, **part_stats}, embedding)

    def _topic_parts(
        self, seg: SpeechSegment, transcript: str | None
    ) -> list[tuple[SpeechSegment, str | None, Any, dict[str, Any]]]:
        """The segment, or its parts at topic shifts, each with its text and text vector."""
        if not transcript or self.text_encoder is None:
            return [(seg, transcript, None, {})]
        sc = self.cfg.segmentation
        chunks = split_sentences(transcript, 0.0, seg.duration, min_chars=sc.topic_min_chunk)
        # the chunks and the whole transcript in one encoder call (the whole is the usual answer)
        vecs = self.text_encoder.encode([*(c.text for c in chunks if len(chunks) >= 2), transcript])
        chunk_vecs, whole = vecs[:-1], vecs[-1]
        groups = []
        if len(chunks) >= 2:
            threshold = sc.topic_cosine_threshold
            groups = topic_groups(chunks, chunk_vecs, threshold if threshold > 0 else -2.0)
            cont = self._continuity(chunk_vecs[0], chunk_vecs[-1], seg.start_ts, seg.end_ts)
        else:
            cont = self._continuity(whole, whole, seg.start_ts, seg.end_ts)
        rate = seg.sample_rate
        last_k = len(groups) - 1
        bounds = [
            (
                int(round(g.start_s * rate)) if k else 0,
                int(round(g.end_s * rate)) if k < last_k else len(seg.pcm),
            )
            for k, g in enumerate(groups)
        ]
        # one topic, or a part that would be a sliver of audio: the segment stays whole
        if len(groups) < 2 or any(hi - lo < 0.25 * rate for lo, hi in bounds):
            return [(seg, transcript, whole, cont)]
        group_vecs = self.text_encoder.encode([g.text for g in groups])
        parts: list[tuple[SpeechSegment, str | None, Any, dict[str, Any]]] = []
        self.topic_cuts += len(groups) - 1
        logger.info(
            "%s: %.1f s of speech cut at %d topic shifts (cosine %s)",
            self.source_id,
            seg.duration,
            len(groups) - 1,
            ", ".join(f"{g.cut_cosine:.2f}" for g in groups[1:] if g.cut_cosine is not None),
        )
        for k, (g, vec) in enumerate(zip(groups, group_vecs, strict=True)):
            lo, hi = bounds[k]
            part = replace(
                seg,
                start_ts=seg.start_ts + lo / rate,
                end_ts=seg.start_ts + hi / rate if k < len(groups) - 1 else seg.end_ts,
                pcm=seg.pcm[lo:hi],
                cut_reason="topic_shift" if k < len(groups) - 1 else seg.cut_reason,
            )
            stats: dict[str, Any] = {"topic_part": k + 1, "topic_parts": len(groups)}
            if g.cut_cosine is not None:
                stats["topic_cosine"] = g.cut_cosine
            if k == 0:
                stats.update(cont)
            parts.append((part, g.text, vec, stats))
        return parts

    def _continuity(self, first: Any, last: Any, start_ts: float, end_ts: float) -> dict[str, Any]:
        """Cosine of this segment's first chunk with the previous segment's last (same mic)."""
        cos = self.topics.push(first, last, start_ts, end_ts)
        return {} if cos is None else {"topic_cosine_prev": round(cos, 4)}

    def _emit(
        self,
        seg: SpeechSegment,
        transcript: str | None,
        text_vec: Any,
        quality: float,
        asr: str,
        extra: dict[str, Any],
        embedding: dict[str, list[float]],
    ) -> None:
        extra = dict(extra)
        if transcript:
            emotion = speech_emotion(transcript, seg.pcm, seg.sample_rate)
            if emotion:
                extra["speech_emotion"] = emotion
        embedding = dict(embedding)
        if text_vec is not None and len(text_vec) == 512:
            embedding["text"] = [round(float(v), 6) for v in text_vec]
        self._seq += 1
        probe = speech_event(
            seg, store_id=self.cfg.store_id, zone=self.zone, seq=self._seq, raw_ref=["-"], quality=quality
        )
        ref = self.media.speech(seg.source, probe["event_id"], seg.start_ts, seg.pcm, seg.sample_rate)
        ev = speech_event(
            seg,
            store_id=self.cfg.store_id,
            zone=self.zone,
            seq=self._seq,
            raw_ref=[ref],
            quality=quality,
            transcript=transcript,
            asr=asr,
            context=dict(self.context.labels()),
            extra_stats=extra,
        )
        if embedding:
            ev["embedding"] = embedding
        self.speech_seconds += seg.duration
        self.events += 1
        self.outbox.put(ev)

    def status(self) -> dict[str, Any]:
        s = super().status()
        s.update(
            speech_seconds=round(self.speech_seconds, 2),
            asr_seconds=round(self.asr_seconds, 2),
            topic_cuts=self.topic_cuts,
        )
        return s


class EventWriter(threading.Thread):
    """Imports finished events in batches until every producer has sent its ``EndOfStream``."""

    kind = "writer"

    def __init__(
        self,
        sink: EventSink,
        inbox: queue.Queue[Any],
        producers: int,
        *,
        batch: int = 32,
        flush_s: float = 0.5,
    ) -> None:
        super().__init__(name="event-writer", daemon=True)
        self.sink = sink
        self.inbox = inbox
        self.producers = producers
        self.batch = batch
        self.flush_s = flush_s
        self.written = 0
        self.failed = 0
        self.state = "starting"
        self.last_error: str | None = None

    def run(self) -> None:
        self.state = "running"
        pending: list[dict[str, Any]] = []
        ended = 0
        deadline = time.monotonic() + self.flush_s
        while ended < self.producers:
            try:
                item = self.inbox.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                item = None
            if isinstance(item, EndOfStream):
                ended += 1
            elif isinstance(item, dict):
                pending.append(item)
            elif isinstance(item, Checkpoint):
                if pending:
                    self._flush(pending)
                    pending = []
                self._checkpoint(item)
            if pending and (
                len(pending) >= self.batch or time.monotonic() >= deadline or ended >= self.producers
            ):
                self._flush(pending)
                pending = []
            if time.monotonic() >= deadline:
                deadline = time.monotonic() + self.flush_s
        if pending:
            self._flush(pending)
        self.state = "ended"

    def _checkpoint(self, cp: Checkpoint) -> None:
        if self.failed:
            # an earlier write failed: keep the old position so a restart re-reads from there
            logger.error("not saving %s: %d events of this run failed to write", cp.key, self.failed)
            return
        save = getattr(self.sink, "save_setting", None)
        if not callable(save):
            return
        try:
            save(cp.key, cp.value)
        except Exception:
            logger.exception("could not save %s", cp.key)

    def _flush(self, events: list[dict[str, Any]]) -> None:
        try:
            n = self.sink.write_events(events)
        except Exception as exc:
            self.failed += len(events)
            self.last_error = str(exc)
            logger.exception("could not write %d events", len(events))
            return
        self.written += n
        if n < len(events):
            self.failed += len(events) - n
        logger.debug("wrote %d events", n)

    def status(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "written": self.written,
            "failed": self.failed,
            "queue": self.inbox.qsize(),
            "last_error": self.last_error,
        }


class Heartbeat(threading.Thread):
    """Every ``interval`` seconds, one ``components`` row per component (the TUI reads them)."""

    def __init__(
        self,
        sink: EventSink,
        collect: Callable[[], list[dict[str, Any]]],
        stop: threading.Event,
        interval: float,
    ) -> None:
        super().__init__(name="heartbeat", daemon=True)
        self.sink = sink
        self.collect = collect
        self.stop_event = stop
        self.interval = interval
        self.beats = 0

    def run(self) -> None:
        while True:
            self.beat()
            if self.stop_event.wait(self.interval):
                break

    def beat(self) -> None:
        try:
            self.sink.write_components(self.collect())
            self.beats += 1
        except Exception:
            logger.exception("heartbeat failed")


def component_row(
    name: str, kind: str, status: dict[str, Any], provider: str | None = None
) -> dict[str, Any]:
    detail = {k: v for k, v in status.items() if k != "state"}
    return {
        "name": name,
        "kind": kind,
        "state": str(status.get("state", "unknown")),
        "provider": provider,
        "detail_json": json.dumps(detail, sort_keys=True, default=str),
        "updated_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
    }
