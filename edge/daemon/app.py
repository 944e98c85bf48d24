"""The daemon's composition root: :class:`AdammDaemon` wires config, store, encoders, capture and workers.

``start()`` reads as the boot sequence (``init_*`` then ``start_*``) and ends in ``finally: stop()``;
nothing else wires components together. Threads:

- ``capture:<id>`` per camera / microphone (:mod:`edge.capture`), feeding bounded queues;
- ``video:<id>`` / ``audio:<id>`` workers (:mod:`edge.daemon.workers`), one per source;
- ``pos`` (POS drop folder), ``event-writer`` (batched import into the store), ``heartbeat``
  (``components`` rows every ``heartbeat_seconds``), ``maintain`` (:mod:`edge.daemon.maintain`:
  the tiers on ``[tiers]``'s schedule; its component row shows the last run and each tier's size).

Shutdown (SIGINT/SIGTERM via :meth:`request_stop`, or every file source at EOF with ``until_eof``):
capture stops and sends end-of-stream markers, the workers finish what is queued, the writer
imports the rest, the final heartbeat marks components stopped, the store closes. A summary
(events written, dropped, merged) is logged. Called by ``edge.cli.cmd_run``.
"""

from __future__ import annotations

import functools
import logging
import queue
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from edge.capture.audio import AudioCaptureSource
from edge.capture.base import CaptureSource, EndOfStream
from edge.capture.pos import PosWatcher
from edge.capture.video import FrameReader, VideoCaptureSource
from edge.config.daemon import DaemonConfig
from edge.daemon.context import Context
from edge.daemon.media import MediaWriter
from edge.daemon.workers import (
    AudioWorker,
    EventSink,
    EventWriter,
    Heartbeat,
    PeopleCounter,
    VideoWorker,
    _Worker,
    component_row,
)

if TYPE_CHECKING:
    from edge.daemon.maintain import MaintainScheduler
    from edge.memory.store import ImportReport

logger = logging.getLogger(__name__)


class StoreSink:
    """:class:`EventSink` over the memory store (``edge.memory.store.Store``)."""

    def __init__(self, db: str, timezone: str, config: Any = None) -> None:
        from edge.memory.store import Store

        Path(db).expanduser().parent.mkdir(parents=True, exist_ok=True)
        self.store = Store.open(db, timezone=timezone, config=config)
        self._lock = threading.Lock()

    def write_events(self, events: list[dict[str, Any]]) -> int:
        with self._lock:
            report = self.store.import_events(events)
        return _count_written(report, len(events))

    def write_components(self, rows: list[dict[str, Any]]) -> None:
        from edge.memory.semantic.components import upsert_components

        upsert_components(self.store, rows)

    def load_setting(self, key: str) -> str | None:
        return self.store.setting(key)

    def save_setting(self, key: str, value: str) -> None:
        self.store.set_setting(key, value)

    def text_encoder(self) -> Any:
        """The store's text encoder (None when not installed): the daemon's transcripts share it."""
        return self.store.text_encoder()

    def close(self) -> None:
        self.store.close()


def _wait(result: Any) -> Any:
    """``writer.submit`` may return a future; wait for it so errors surface here."""
    get = getattr(result, "result", None)
    return get(timeout=30) if callable(get) else result


def _count_written(report: ImportReport, offered: int) -> int:
    """Events the store kept from one import call: accepted plus duplicate (already stored: replay)
    and merged lines; rejected lines are logged by the store."""
    if report.rejected:
        logger.error("the store rejected %d of %d daemon events (see its log)", report.rejected, offered)
    return report.accepted + report.duplicates + report.merged


@dataclass
class RunSummary:
    events_written: int = 0
    events_failed: int = 0
    dropped_capture: int = 0
    dropped_low_quality: int = 0
    merges: int = 0
    by_source: dict[str, dict[str, Any]] = field(default_factory=dict)


class AdammDaemon:
    """One store box. ``AdammDaemon(cfg, until_eof=True).start()`` replays file sources and returns."""

    def __init__(
        self,
        config: DaemonConfig,
        *,
        until_eof: bool = False,
        sink: EventSink | None = None,
        detector: PeopleCounter | None = None,
        camera_opener: Callable[[str], FrameReader] | None = None,
        mic_frames: Callable[[str], Iterator[np.ndarray]] | None = None,
    ) -> None:
        self.config = config
        self.until_eof = until_eof
        self.stop_event = threading.Event()  # tells capture to stop
        self.hb_stop = threading.Event()
        self.maintain_stop = threading.Event()
        self.maintain: MaintainScheduler | None = None
        self.sink = sink
        self.detector = detector
        self.detector_provider: str | None = None
        self.camera_opener = camera_opener  # None: open_capture with each camera's transport/timeout
        self.mic_frames = mic_frames  # a microphone stand-in (benchmarks, tests): mic id -> PCM frames
        self.speech: Any = None
        self.text_encoder: Any = None
        self.image_text: Any = None
        self.captures: list[CaptureSource] = []
        self.workers: list[_Worker] = []
        self.pos: PosWatcher | None = None
        self.writer: EventWriter | None = None
        self.heartbeat: Heartbeat | None = None
        self.sync: Any = None  # edge.daemon.sync.SyncWorker when [sync] is configured
        self.events_q: queue.Queue[Any] = queue.Queue(maxsize=1000)
        self.summary = RunSummary()
        self._own_sink = sink is None
        self._started = False

    # ---- boot sequence -------------------------------------------------------------------
    def start(self) -> RunSummary:
        try:
            self.init_config()
            self.init_store()
            self.init_encoders()
            self.init_media()
            self.start_writer()
            self.start_workers()
            self.start_capture()
            self.start_maintain()
            self.start_heartbeat()
            self.start_sync()
            self._started = True
            self.wait()
        finally:
            self.stop()
        return self.summary

    def init_config(self) -> None:
        cfg = self.config
        live = [c.id for c in cfg.cameras if c.enabled and c.kind != "file"]
        live += [m.id for m in cfg.microphones if m.enabled and m.kind != "file"]
        if self.until_eof and live:
            logger.warning("--until-eof: live sources %s run until stopped (SIGINT/SIGTERM)", ", ".join(live))
        self.context = Context(cfg.context)
        Path(cfg.models_dir).expanduser().mkdir(parents=True, exist_ok=True)
        logger.info(
            "store %s (%s): %d cameras, %d microphones, POS %s",
            cfg.store_id,
            cfg.timezone,
            len(cfg.cameras),
            len(cfg.microphones),
            "on" if cfg.pos.enabled else "off",
        )

    def init_store(self) -> None:
        if self.sink is None:
            self.sink = StoreSink(self.config.db, self.config.timezone, self.config)
        logger.info("memory store: %s", self.config.db)

    def init_encoders(self) -> None:
        cfg = self.config
        if self.detector is None and cfg.detector.enabled and any(c.enabled for c in cfg.cameras):
            from edge.encoders.base import create

            det = create(
                cfg.detector.key,
                score_threshold=cfg.detector.score_threshold,
                backend=cfg.detector.backend,
                onnx_path=cfg.detector.onnx_path,
                models_dir=cfg.models_dir,
                providers=cfg.encoders.providers,
            )
            self.detector = det  # type: ignore[assignment]
            self.detector_provider = ",".join(det.providers)
        self.speech = None
        if cfg.speech.enabled and any(m.enabled for m in cfg.microphones):
            from edge.encoders.base import create
            from edge.errors import ModelMissingError

            try:
                self.speech = create(
                    cfg.speech.key,
                    model_dir=cfg.speech.model_dir,
                    max_tokens=cfg.speech.max_tokens,
                    models_dir=cfg.models_dir,  # ONNX exports and engine caches live here
                    providers=cfg.encoders.providers,
                )
            except ModelMissingError as exc:
                logger.warning("speech model unavailable (%s): speech events will carry no transcript", exc)
        self.init_text_encoder()
        self.image_text = self._image_text_encoder()
        logger.info(
            "encoders: people=%s (%s); speech=%s (%s); image-text=%s",
            cfg.detector.key if self.detector else "off",
            self.detector_provider or "-",
            cfg.speech.key if self.speech else "none (no transcripts)",
            ",".join(self.speech.providers) if self.speech else "-",
            cfg.image_text.encoder if self.image_text else "none",
        )

    def init_text_encoder(self) -> None:
        """The text encoder of transcripts (topic-shift cuts, ``embedding.text``) and of the
        image-text stand-in's labels: the store's own session (a sink without one, e.g. a test's,
        gets its own), loaded only when one of them runs."""
        self.text_encoder = None
        cfg = self.config
        labels = cfg.image_text.encoder == "labels_as_text" and any(c.enabled for c in cfg.cameras)
        if self.speech is None and not labels:
            return
        from edge.encoders.base import create
        from edge.errors import ModelMissingError

        shared = getattr(self.sink, "text_encoder", None)
        try:
            if shared is not None:
                self.text_encoder = shared()
            else:
                enc = cfg.encoders
                self.text_encoder = create(enc.text, providers=enc.providers, batch_size=enc.batch_size)
        except ModelMissingError as exc:
            logger.warning("text encoder unavailable (%s)", exc)
        if self.text_encoder is None:
            logger.warning("no text encoder: no transcript vectors or topic-shift cuts, no image-text labels")

    def _image_text_encoder(self) -> Any:
        """``[image_text]``: the labels_as_text stand-in (default; missing packages only warn) or
        CLIP (an operator's explicit choice: a missing model folder stops the start)."""
        cfg = self.config
        choice = cfg.image_text.encoder
        if choice == "none" or not any(c.enabled for c in cfg.cameras):
            return None
        from edge.encoders.base import create
        from edge.errors import ModelMissingError

        if choice == "clip_vit_b16":
            return create(
                choice,
                model_dir=cfg.image_text.model_dir,
                models_dir=cfg.models_dir,
                providers=cfg.encoders.providers,
            )
        try:
            return create(
                choice,
                detector=self.detector if hasattr(self.detector, "detect") else None,
                text_encoder=self.text_encoder,  # the store's session (None: the stand-in warns)
                text_key=cfg.encoders.text,
                top_k=cfg.image_text.top_labels,
                min_probability=cfg.image_text.min_probability,
            )
        except ModelMissingError as exc:
            logger.warning("image-text stand-in unavailable (%s): video events carry no image vector", exc)
            return None

    def init_media(self) -> None:
        self.media = MediaWriter(self.config.media_dir, jpeg_quality=self.config.sampling.jpeg_quality)

    def start_writer(self) -> None:
        cfg = self.config
        producers = sum(1 for c in cfg.cameras if c.enabled) + sum(1 for m in cfg.microphones if m.enabled)
        producers += 1 if cfg.pos.enabled else 0
        assert self.sink is not None
        self.writer = EventWriter(self.sink, self.events_q, producers)
        self.writer.start()

    def start_workers(self) -> None:
        cfg = self.config
        for cam in cfg.cameras:
            if not cam.enabled:
                continue
            frames: queue.Queue[Any] = queue.Queue(maxsize=cfg.sampling.queue_size)
            src = VideoCaptureSource(
                cam, cfg.sampling, cfg.quality, frames, self.stop_event, opener=self.camera_opener
            )
            worker = VideoWorker(
                cfg,
                cam.id,
                cam.zone,
                frames,
                self.events_q,
                detector=self.detector,
                media=self.media,
                context=self.context,
                on_count_change=src.request_burst,
                image_text=self.image_text,
            )
            self.captures.append(src)
            self.workers.append(worker)
        for mic in cfg.microphones:
            if not mic.enabled:
                continue
            segs: queue.Queue[Any] = queue.Queue(maxsize=cfg.vad.queue_size)
            pcm_frames: Callable[[], Iterator[np.ndarray]] | None = None
            if self.mic_frames is not None:
                pcm_frames = functools.partial(self.mic_frames, mic.id)
            asrc = AudioCaptureSource(
                mic,
                cfg.vad,
                segs,
                self.stop_event,
                noise_flatness=cfg.quality.noise_flatness,
                frames=pcm_frames,
            )
            self.captures.append(asrc)
            self.workers.append(
                AudioWorker(
                    cfg,
                    mic.id,
                    mic.zone,
                    segs,
                    self.events_q,
                    media=self.media,
                    context=self.context,
                    speech=self.speech,
                    language=cfg.speech.language,
                    text_encoder=self.text_encoder,
                )
            )
        if cfg.pos.enabled:
            self.pos = PosWatcher(
                cfg,
                self.events_q,
                self.stop_event,
                until_eof=self.until_eof,
                load_setting=getattr(self.sink, "load_setting", None),
            )
        for w in self.workers:
            w.start()

    def start_capture(self) -> None:
        for src in self.captures:
            src.start()
        if self.pos is not None:
            self.pos.start()
        logger.info("capture started: %s", ", ".join(s.name for s in self.captures) or "(no sources)")

    def start_maintain(self) -> None:
        """The nightly maintain schedule (``[tiers]``), on the daemon's own store."""
        store = getattr(self.sink, "store", None)
        if store is None or not self.config.tiers.maintain_enabled:
            return
        from edge.daemon.maintain import MaintainScheduler

        self.maintain = MaintainScheduler(store, self.config, self.maintain_stop)
        self.maintain.start()
        logger.info("maintain scheduled: next run %s", self.maintain.next_at.isoformat())

    def start_heartbeat(self) -> None:
        assert self.sink is not None
        self.heartbeat = Heartbeat(
            self.sink, self.component_rows, self.hb_stop, self.config.heartbeat_seconds
        )
        self.heartbeat.start()

    def start_sync(self) -> None:
        """The sync worker (:mod:`edge.daemon.sync`) when the config has ``[sync]`` and the sink
        is the memory store (one MQTT connection per store for the whole process)."""
        store = getattr(self.sink, "store", None)
        if self.config.sync is None or store is None:
            return
        from edge.daemon.sync import SyncWorker

        self.sync = SyncWorker(store, self.config.sync, self.config.mqtt, self.config.actions)
        self.sync.start()
        logger.info("sync to %s started", self.sync.settings.address.url)

    # ---- running ------------------------------------------------------------------------
    def wait(self) -> None:
        """Until stop is requested, or (``until_eof``) every source has ended and all is written."""
        assert self.writer is not None
        while self.writer.is_alive() and not self.stop_event.is_set():
            self.writer.join(timeout=0.2)

    def request_stop(self) -> None:
        """Signal handlers call this: capture stops; queued items are still processed."""
        if not self.stop_event.is_set():
            logger.info("stop requested: finishing queued items")
        self.stop_event.set()

    def stop(self) -> None:
        self.stop_event.set()
        # a boot that failed half-way: stand in with end markers for what never started
        for src in self.captures:
            if src.ident is None:
                src.out.put(EndOfStream(src.source_id, "not started"))
        ended_early = sum(1 for w in self.workers if w.ident is None)
        if self.pos is not None and self.pos.ident is None:
            ended_early += 1
        if self.writer is not None and self.writer.ident is not None:
            built = len(self.workers) + (1 if self.pos is not None else 0)
            for _ in range(ended_early + max(0, self.writer.producers - built)):
                self.events_q.put(EndOfStream("-", "not started"))
        for src in self.captures:
            if src.ident is not None:
                src.join(timeout=10)
        if self.pos is not None and self.pos.ident is not None:
            self.pos.join(timeout=10)
        for w in self.workers:
            if w.ident is None:
                continue
            w.join(timeout=60)
            if w.is_alive():
                logger.error("%s did not finish its queue in 60 s", w.name)
        if self.writer is not None and self.writer.ident is not None:
            self.writer.join(timeout=60)
        self.maintain_stop.set()
        if self.maintain is not None and self.maintain.ident is not None:
            self.maintain.join(timeout=60)
            if self.maintain.is_alive():
                logger.warning("maintain is still running; the next run finishes what it leaves")
        if self.sync is not None:
            self.sync.stop()  # after the writer: what it committed is summarised once more
        self.hb_stop.set()
        if self.heartbeat is not None:
            self.heartbeat.join(timeout=10)
            if self.sink is not None and self._started:
                self.heartbeat.beat()  # final state of every component
        self._summarise()
        if self._own_sink and self.sink is not None:
            close = getattr(self.sink, "close", None)
            if callable(close):
                close()
            self.sink = None

    def _summarise(self) -> None:
        s = self.summary
        if self.writer is not None:
            s.events_written, s.events_failed = self.writer.written, self.writer.failed
        s.dropped_capture = sum(c.dropped for c in self.captures)
        s.dropped_low_quality = sum(w.dropped_low_quality for w in self.workers)
        s.merges = sum(w.merger.merges for w in self.workers if isinstance(w, VideoWorker))
        for c in self.captures:
            s.by_source[c.source_id] = c.status()
        for w in self.workers:
            s.by_source.setdefault(w.source_id, {}).update({f"worker_{k}": v for k, v in w.status().items()})
        queues = [w.inbox for w in self.workers] + [self.events_q]
        pending = sum(1 for q in queues for item in list(q.queue) if not isinstance(item, EndOfStream))
        logger.warning(
            "daemon stopped: %d events written, %d failed, %d capture items dropped, %d low-quality "
            "segments dropped, %d near-duplicates merged, %d items still queued (lost)",
            s.events_written,
            s.events_failed,
            s.dropped_capture,
            s.dropped_low_quality,
            s.merges,
            pending,
        )

    def component_rows(self) -> list[dict[str, Any]]:
        rows = []
        final = self.hb_stop.is_set()
        for c in self.captures:
            st = c.status()
            if final:
                st["state"] = "stopped"
            rows.append(component_row(c.name, c.kind, st))
        for w in self.workers:
            st = w.status()
            if final:
                st["state"] = "stopped"
            provider = self.detector_provider if isinstance(w, VideoWorker) else None
            rows.append(component_row(w.name, w.kind, st, provider))
        if self.writer is not None:
            st = self.writer.status()
            if final:
                st["state"] = "stopped"
            rows.append(component_row(self.writer.name, "writer", st))
        if self.pos is not None:
            st = self.pos.status()
            if final:
                st["state"] = "stopped"
            rows.append(component_row(self.pos.name, "pos", st))
        if self.maintain is not None:
            st = self.maintain.status()
            if final:
                st["state"] = "stopped"
            rows.append(component_row("maintain", "maintain", st))
        if self.sync is not None:
            st = self.sync.status()
            if final and st["state"] != "failed":
                st["state"] = "stopped"
            rows.append(component_row("sync", "sync", st))
        return rows
