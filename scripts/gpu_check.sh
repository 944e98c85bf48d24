#!/usr/bin/env bash
# One prepared GPU check for the edge encoders (run on the 16 GB NVIDIA store box or any CUDA box).
#
# For every ONNX model found in MODELS_DIR (default models_cache/: outputs of the models/ export
# scripts) it builds the TensorRT engine (FP16, engine cache in MODELS_DIR/trt_cache), then prints
# for each model TensorRT EP vs CUDA EP vs CPU EP throughput at batch 1 and 8, and the GPU memory
# in use (nvidia-smi) after all sessions are loaded. Goals (issue 4): TensorRT >= 1.3x CUDA EP at
# batch 8; all models together within 4 GB of GPU memory.
#
# Needs: pip install -e '.[gpu]' (onnxruntime-gpu, tensorrt), an NVIDIA driver, nvidia-smi.
# Models and where they are looked for (each skipped when absent):
#   people detector  $ADAMM_SSD_ONNX_DIR (else MODELS_DIR)/ssd_mobilenet_v2_coco.onnx  (models/export_ssd_onnx.py)
#   Whisper base     MODELS_DIR/whisper_base/encoder.onnx                             (python -m models.export_whisper)
#   CLIP ViT-B/16    MODELS_DIR/clip_vit_b16/image.onnx and text.onnx                 (python -m models.export_clip)
# The labels_as_text image-text stand-in's classifier is TFLite (LiteRT, CPU only): not measured here.
# Status: written, NOT run yet (no GPU was lent to the tasks that wrote it).
set -euo pipefail
MODELS_DIR="${MODELS_DIR:-${ADAMM_MODELS_DIR:-models_cache}}"
REPEATS="${REPEATS:-20}"
mkdir -p "$MODELS_DIR/trt_cache"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 - "$MODELS_DIR" "$REPEATS" <<'PY'
import os, subprocess, sys, time
from pathlib import Path

import numpy as np
import onnxruntime as ort

models_dir, repeats = Path(sys.argv[1]), int(sys.argv[2])
print("available providers:", ort.get_available_providers())
ssd_dir = Path(os.environ.get("ADAMM_SSD_ONNX_DIR") or models_dir)


def clip_ids(n):
    ids = np.zeros((n, 77), dtype=np.int64)
    ids[:, :7] = [49406, 320, 1125, 539, 320, 2368, 49407]  # "a photo of a cat"
    return ids


# model file -> (input name, input builder for a batch)
MODELS = {
    ssd_dir / "ssd_mobilenet_v2_coco.onnx": ("image_tensor:0", lambda n: np.random.randint(0, 255, (n, 300, 300, 3), dtype=np.uint8)),
    models_dir / "whisper_base" / "encoder.onnx": ("mel", lambda n: np.random.randn(n, 80, 3000).astype(np.float32)),
    models_dir / "clip_vit_b16" / "image.onnx": ("pixel_values", lambda n: np.random.randn(n, 3, 224, 224).astype(np.float32)),
    models_dir / "clip_vit_b16" / "text.onnx": ("input_ids", clip_ids),
}
PROVIDERS = {
    "TensorRT": [("TensorrtExecutionProvider", {"trt_fp16_enable": True, "trt_engine_cache_enable": True,
                                                "trt_engine_cache_path": str(models_dir / "trt_cache")}),
                 "CUDAExecutionProvider"],
    "CUDA": ["CUDAExecutionProvider"],
    "CPU": ["CPUExecutionProvider"],
}
sessions = []
print(f"{'model':<32} {'provider':<9} {'batch':>5} {'items/s':>10} {'ms/batch':>9}")
for path, (inp, make) in MODELS.items():
    fname = f"{path.parent.name}/{path.name}" if path.parent not in (models_dir, ssd_dir) else path.name
    if not path.is_file():
        print(f"{fname:<32} (absent: skipped)")
        continue
    for label, providers in PROVIDERS.items():
        try:
            sess = ort.InferenceSession(str(path), providers=providers)
        except Exception as exc:  # noqa: BLE001
            print(f"{fname:<32} {label:<9} failed to load: {exc}")
            continue
        sessions.append(sess)
        for batch in (1, 8):
            x = make(batch)
            sess.run(None, {inp: x})  # warm-up (TensorRT builds / loads its engine here)
            t = time.perf_counter()
            for _ in range(repeats):
                sess.run(None, {inp: x})
            dt = (time.perf_counter() - t) / repeats
            print(f"{fname:<32} {label:<9} {batch:>5} {batch / dt:>10.1f} {dt * 1000:>9.2f}")
used = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader"],
                      capture_output=True, text=True).stdout.strip()
print(f"GPU memory used with all sessions loaded: {used}")
PY
