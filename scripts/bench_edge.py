#!/usr/bin/env python3
"""Benchmark of the edge daemon on this machine's CPU: per-encoder latency and throughput, VAD
real-time factor, capture-to-event latency of a replay, and how many 1 fps cameras / mics one
box sustains.

Media are built the same way as the tests (scikit-image photos into an MJPG AVI, espeak-ng speech
into a WAV). Measured:

- people detector (SSD-MobileNetV2, OpenCV DNN): ms per frame and frames/s at batch 1 and 8;
- text encoder (USE v3 int8 ONNX): ms per sentence at batch 1 and 32;
- capture path per decoded frame (decode, resize, scene score) and VAD + noise gate real-time factor;
- speech: Whisper base (numpy over the CTranslate2 weights) on the English clip: real-time factor;
- end-to-end: ``AdammDaemon`` replay of the test media (wall time vs media time). The issue's
  capture-to-searchable p95 on a live 1 fps source is NOT measured yet (it needs a live source
  and the store's import path; see the README's "left to do");
- sustained sources: a 1 fps camera costs (capture per frame x source fps + detector per frame)
  per second, so one core sustains ``1 / cost`` cameras with zero drops; the same for mics.

Prints a Markdown table on stdout; progress on stderr. Usage: ``python3 scripts/bench_edge.py``.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

logger = logging.getLogger("bench_edge")


def timed(fn: Any, repeats: int) -> float:
    fn()  # warm-up
    t = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - t) / repeats


def live_latency(video: Path, tmp: Path, det: Any, speech_model: Any) -> list[tuple[str, str, str]]:
    """Capture-to-written latency on paced live sources: the test video played as a 5 fps 'USB
    camera' and the WAV as a microphone, both in real time; latency = write time - event end."""
    import threading

    import cv2

    from edge.capture.audio import read_wav
    from edge.daemon.app import AdammDaemon
    from edge.daemon.config import parse_daemon_config

    class PacedCamera:
        def __init__(self) -> None:
            self.cap = cv2.VideoCapture(str(video))
            self.next_t = time.monotonic()

        def isOpened(self) -> bool:
            return True

        def read(self) -> tuple[bool, Any]:
            delay = self.next_t - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            self.next_t += 0.2
            return self.cap.read()

        def get(self, prop: int) -> float:
            return 5.0

        def release(self) -> None:
            self.cap.release()

    opened: list[PacedCamera] = []

    def opener(url: str) -> Any:
        cam = PacedCamera()
        if opened:  # replay once; later reconnects see an empty stream
            cam.cap.release()
        opened.append(cam)
        return cam

    def mic_frames(_mic: str) -> Any:
        pcm = read_wav(tmp / "speech.wav", 16000)
        t = time.monotonic()
        for i in range(0, len(pcm) - 479, 480):
            t += 0.03
            delay = t - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            yield pcm[i : i + 480]

    class LatencySink:
        def __init__(self) -> None:
            self.lat: dict[str, list[float]] = {"video": [], "audio": []}

        def write_events(self, events: list[dict[str, Any]]) -> int:
            from datetime import datetime

            now = time.time()
            for e in events:
                end = datetime.fromisoformat(e.get("end_timestamp", e["timestamp"]).replace("Z", "+00:00"))
                self.lat["audio" if "audio" in e["modality"] else "video"].append(now - end.timestamp())
            return len(events)

        def write_components(self, rows: list[dict[str, Any]]) -> None:
            pass

    cfg: dict[str, Any] = {
        "store_id": "bench",
        "media_dir": str(tmp / "media_live"),
        "models_dir": str(tmp / "models"),
        "cameras": [{"id": "cam_live", "url": "0", "zone": "entrance"}],
        "sampling": {"reconnect_initial_s": 0.5},
    }
    if speech_model is not None:
        cfg["microphones"] = [{"id": "mic_live", "device": "default"}]
    else:
        cfg["speech"] = {"enabled": False}
    sink = LatencySink()
    daemon = AdammDaemon(
        parse_daemon_config(cfg), sink=sink, detector=det, camera_opener=opener, mic_frames=mic_frames
    )
    if speech_model is not None:
        daemon.speech = speech_model
        daemon.init_encoders = lambda: None  # type: ignore[method-assign]  # reuse the loaded models
    runner = threading.Thread(target=daemon.start)
    runner.start()
    time.sleep(24.0)  # 18 s of video, 21.6 s of audio, then the last segments close
    daemon.request_stop()
    runner.join(120)
    rows = []
    for kind, values in sink.lat.items():
        if values:
            p50 = statistics.median(values)
            p95 = sorted(values)[max(0, int(round(0.95 * len(values))) - 1)]
            rows.append(
                (
                    f"live capture-to-written latency, {kind} ({len(values)} events)",
                    f"p50 {p50:.2f} s",
                    f"p95 {p95:.2f} s",
                )
            )
    drops = daemon.summary.dropped_capture
    rows.append(("live run: capture items dropped", str(drops), "-"))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--skip-live", action="store_true", help="skip the real-time live-source run (~25 s)")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")
    import cv2
    from daemon_media import espeak_available, make_speech_wav, make_video

    from edge.capture.audio import read_wav
    from edge.daemon.app import AdammDaemon
    from edge.daemon.config import parse_daemon_config
    from edge.encoders.base import create
    from edge.segmentation.frames import scene_change_score, signature, thumbnail
    from edge.segmentation.speech import frame_flatness

    rows: list[tuple[str, str, str]] = []
    tmp = Path(tempfile.mkdtemp(prefix="bench_edge_"))
    video = make_video(tmp / "scenes.avi")
    cap = cv2.VideoCapture(str(video))
    frames = []
    while True:
        ok, f = cap.read()
        if not ok:
            break
        frames.append(f)
    logger.info("media: %d frames in %s", len(frames), tmp)

    det = create("ssd_mobilenet_v2_coco")
    batch1 = timed(lambda: det.count_people([frames[0]]), args.repeats)
    batch8 = timed(lambda: det.count_people(frames[:8]), args.repeats) / 8
    rows.append(("people detector, batch 1", f"{batch1 * 1000:.1f} ms/frame", f"{1 / batch1:.1f} frames/s"))
    rows.append(("people detector, batch 8", f"{batch8 * 1000:.1f} ms/frame", f"{1 / batch8:.1f} frames/s"))

    try:
        text = create("use_v3_multilingual")
        s1 = timed(lambda: text.encode(["顾客在收银台排队很久"]), args.repeats)
        s32 = (
            timed(lambda: text.encode(["a customer asks for running shoes in size 42"] * 32), args.repeats)
            / 32
        )
        rows.append(("text encoder, batch 1", f"{s1 * 1000:.1f} ms/sentence", f"{1 / s1:.0f} sentences/s"))
        rows.append(("text encoder, batch 32", f"{s32 * 1000:.2f} ms/sentence", f"{1 / s32:.0f} sentences/s"))
    except Exception as exc:  # the text encoder belongs to the store issue
        logger.warning("text encoder not measured: %s", exc)

    try:  # the labels_as_text image-text stand-in (TFLite classifier + COCO labels + text encoder)
        stand_in: Any = create("labels_as_text", detector=det)
        stand_in.encode_event(frames[:1])  # label vectors cached from here on
        cls1 = timed(lambda: stand_in.classifier.probabilities(frames[0]), args.repeats)
        ev4 = timed(lambda: stand_in.encode_event(frames[:4]), args.repeats)
        rows.append(
            ("image-text stand-in: classifier", f"{cls1 * 1000:.1f} ms/frame", f"{1 / cls1:.1f} frames/s")
        )
        rows.append(
            (
                "image-text stand-in: event of 4 keyframes",
                f"{ev4 * 1000:.0f} ms/event",
                f"{1 / ev4:.1f} events/s",
            )
        )
    except Exception as exc:
        logger.warning("image-text stand-in not measured: %s", exc)

    def capture_step() -> None:
        for f in frames[:20]:
            small = cv2.resize(f, (640, 480))[::4, ::4]
            scene_change_score(signature(small), signature(small), thumbnail(small), thumbnail(small))

    cap_t = timed(capture_step, args.repeats) / 20
    t0 = time.perf_counter()
    cap = cv2.VideoCapture(str(video))
    n = 0
    while cap.read()[0]:
        n += 1
    decode = (time.perf_counter() - t0) / max(1, n)
    rows.append(
        ("capture: decode 640x480 MJPG", f"{decode * 1000:.2f} ms/frame", f"{1 / decode:.0f} frames/s")
    )
    rows.append(
        ("capture: resize + scene score", f"{cap_t * 1000:.2f} ms/frame", f"{1 / cap_t:.0f} frames/s")
    )

    mic_rtf = None
    speech_model: Any = None
    if espeak_available():
        import webrtcvad

        layout = make_speech_wav(tmp)
        pcm = read_wav(layout.path, 16000)
        vad = webrtcvad.Vad(3)
        chunks = [pcm[i : i + 480] for i in range(0, len(pcm) - 479, 480)]

        def vad_all() -> None:
            for c in chunks:
                if vad.is_speech(c.tobytes(), 16000):
                    frame_flatness(c)

        vt = timed(vad_all, args.repeats)
        mic_rtf = vt / (len(pcm) / 16000)
        rows.append(("VAD + noise gate", f"RTF {mic_rtf:.4f}", f"{1 / mic_rtf:.0f}x real time"))
        try:
            speech_model = create("whisper_base_ct2")
            en = read_wav(tmp / "en_raw.wav", 16000)
            speech_model.transcribe(en)  # type: ignore[attr-defined]  # warm-up (first-call allocations)
            t = time.perf_counter()
            text_out, _lang, _vec = speech_model.transcribe(en)  # type: ignore[attr-defined]
            dt = time.perf_counter() - t
            rtf = dt / (len(en) / 16000)
            rows.append(
                (
                    f"speech: Whisper base numpy, {len(en) / 16000:.1f} s clip",
                    f"{dt:.2f} s (RTF {rtf:.2f})",
                    f"{1 / rtf:.2f}x real time",
                )
            )
            t = time.perf_counter()
            speech_model.encode([en])
            enc_s = time.perf_counter() - t
            rows.append(("speech: Whisper base encoder only (30 s window)", f"{enc_s:.2f} s", "-"))
            logger.info("transcript: %s", text_out)
            rows.append(
                ("microphones per CPU core, all speech transcribed", f"RTF {rtf:.2f}", f"{1 / rtf:.1f} mics")
            )
        except Exception as exc:
            logger.warning("speech model not measured: %s", exc)

    # end-to-end replay
    class TimedSink:
        def __init__(self) -> None:
            self.written: list[tuple[float, dict[str, Any]]] = []

        def write_events(self, events: list[dict[str, Any]]) -> int:
            now = time.monotonic()
            self.written += [(now, e) for e in events]
            return len(events)

        def write_components(self, rows: list[dict[str, Any]]) -> None:
            pass

    cfg: dict[str, Any] = {
        "store_id": "bench",
        "media_dir": str(tmp / "media"),
        "models_dir": str(tmp / "models"),
        "cameras": [{"id": "cam", "url": str(video), "zone": "entrance"}],
    }
    if espeak_available():
        cfg["microphones"] = [{"id": "mic", "device": str(tmp / "speech.wav")}]
    cfg["speech"] = {"enabled": False}  # measured above; the replay row is capture + detection
    sink = TimedSink()
    d = AdammDaemon(parse_daemon_config(cfg), until_eof=True, sink=sink, detector=det)  # type: ignore[arg-type]
    t0 = time.perf_counter()
    summary = d.start()
    wall = time.perf_counter() - t0
    media_s = len(frames) / 5
    rows.append(
        (
            "end-to-end replay, speech model off (18 s video + 22 s WAV)",
            f"{wall:.2f} s wall",
            f"{media_s / wall:.1f}x real time",
        )
    )
    rows.append(
        (
            "events written / dropped (low quality)",
            str(summary.events_written),
            str(summary.dropped_low_quality),
        )
    )

    if not args.skip_live:
        rows += live_latency(video, tmp, det, speech_model if espeak_available() else None)

    # sustained 1 fps cameras per core: per second a camera decodes its native fps (here 5 fps,
    # typical RTSP sub-streams run 5-15 fps) and analyses them, and the detector sees ~1 frame
    # (plus bursts, counted as 1.5 frames/s on average).
    for native in (5, 15):
        per_cam = native * (decode + cap_t) + 1.5 * min(batch1, batch8)
        rows.append(
            (
                f"1 fps cameras per CPU core ({native} fps source)",
                f"{per_cam * 1000:.0f} ms CPU per camera-second",
                f"{int(1 / per_cam)} cameras",
            )
        )
    if mic_rtf:
        rows.append(("microphones per CPU core (VAD only)", f"RTF {mic_rtf:.4f}", f"{int(1 / mic_rtf)} mics"))

    print(f"Edge benchmark on {os.cpu_count()} CPU cores (no GPU), {time.strftime('%Y-%m-%d')}\n")
    print("| measurement | latency / cost | throughput |")
    print("|---|---|---|")
    for name, a, b in rows:
        print(f"| {name} | {a} | {b} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
