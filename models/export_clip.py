#!/usr/bin/env python3
"""Build step (run once, where torch and a CLIP checkpoint are): CLIP -> the ONNX model folder of ``edge.encoders.clip``.

No CLIP weights are on the package registries, so this script converts a checkpoint the operator
already has; torch (and open_clip or transformers) are build-time needs only, the box runs the
result with ONNX Runtime. Two sources:

* open_clip: ``--open-clip ViT-B-16 --checkpoint PATH`` (a local ``open_clip_pytorch_model.bin``
  or ``.safetensors``; open_clip's own BPE file gives the tokenizer);
* Hugging Face: ``--hf-dir PATH`` (a local ``CLIPModel`` folder such as clip-vit-base-patch16:
  ``config.json``, weights, ``vocab.json``, ``merges.txt``, ``preprocessor_config.json``).

Output folder (default ``<models_dir>/clip_vit_b16``): ``image.onnx`` (``pixel_values`` ->
``image_embeds``), ``text.onnx`` (``input_ids`` int64 -> ``text_embeds``), both with a dynamic
batch axis and unnormalised projected outputs; ``vocab.json`` + ``merges.txt``; ``config.json``
(``embed_dim``, ``image_size``, ``context_length``, ``mean``, ``std``, ``sot_token``, ``eot_token``,
``pad_token``, the source, and the sha256 of each file). After the export both graphs are run with
ONNX Runtime on the export inputs and compared with torch (max abs difference printed; the script
fails above 1e-3). ``--check FOLDER`` needs no torch: it loads the folder with the encoder and
prints a zero-shot table of scikit-image photos against a few prompts (coffee should pick
"a photo of a cup of coffee"), the smoke test on a box.

Status: written against open_clip 2.x/3.x and transformers 4.x; NOT run in this project (there is
neither torch nor a CLIP checkpoint on the build machine). The encoder side is tested with
random CLIP-shaped graphs (tests/test_clip.py).

Usage::

    python -m models.export_clip --open-clip ViT-B-16 --checkpoint ~/ckpt/vit_b16.bin
    python -m models.export_clip --hf-dir ~/ckpt/clip-vit-base-patch16 --out models_cache/clip_vit_b16
    python -m models.export_clip --check models_cache/clip_vit_b16
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import shutil
import sys
from pathlib import Path
from typing import Any

from edge.encoders.clip import CLIP_MEAN, CLIP_STD, EOT, SOT, default_folder, read_bpe_gz, vocab_from_merges

OPSET = 17


def write_tokenizer_from_bpe(bpe_gz: Path, out: Path) -> None:
    """open_clip's ``bpe_simple_vocab_16e6.txt.gz`` -> ``vocab.json`` + ``merges.txt`` (HF layout)."""
    merges = read_bpe_gz(bpe_gz)
    vocab = vocab_from_merges(merges)
    (out / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    lines = ["#version: 0.2", *(f"{a} {b}" for a, b in merges)]
    (out / "merges.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _export(module: Any, dummy: Any, path: Path, input_name: str, output_name: str) -> None:
    import torch

    kwargs: dict[str, Any] = {
        "input_names": [input_name],
        "output_names": [output_name],
        "dynamic_axes": {input_name: {0: "batch"}, output_name: {0: "batch"}},
        "opset_version": OPSET,
        "do_constant_folding": True,
    }
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        kwargs["dynamo"] = False  # the TorchScript exporter: dynamic_axes as above
    torch.onnx.export(module, (dummy,), str(path), **kwargs)


def _towers_open_clip(arch: str, checkpoint: str) -> tuple[Any, Any, dict[str, Any], Path]:
    import open_clip
    import torch

    model, _, _ = open_clip.create_model_and_transforms(arch, pretrained=checkpoint)
    model.eval()

    class Image(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.m = model

        def forward(self, pixel_values: Any) -> Any:
            return self.m.encode_image(pixel_values)

    class Text(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.m = model

        def forward(self, input_ids: Any) -> Any:
            return self.m.encode_text(input_ids)

    size = model.visual.image_size
    size = int(size[0] if isinstance(size, tuple | list) else size)
    mean = getattr(model.visual, "image_mean", None) or CLIP_MEAN
    std = getattr(model.visual, "image_std", None) or CLIP_STD
    cfg = {
        "image_size": size,
        "context_length": int(getattr(model, "context_length", 77)),
        "mean": [float(x) for x in mean],
        "std": [float(x) for x in std],
        "source": f"open_clip {arch} {Path(checkpoint).name}",
    }
    bpe = Path(open_clip.tokenizer.default_bpe())
    return Image(), Text(), cfg, bpe


def _towers_hf(hf_dir: Path) -> tuple[Any, Any, dict[str, Any]]:
    import torch
    from transformers import CLIPModel

    model = CLIPModel.from_pretrained(str(hf_dir)).eval()

    class Image(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.m = model

        def forward(self, pixel_values: Any) -> Any:
            return self.m.get_image_features(pixel_values=pixel_values)

    class Text(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.m = model

        def forward(self, input_ids: Any) -> Any:
            return self.m.get_text_features(input_ids=input_ids)

    mean, std = list(CLIP_MEAN), list(CLIP_STD)
    pre = hf_dir / "preprocessor_config.json"
    if pre.is_file():
        p = json.loads(pre.read_text(encoding="utf-8"))
        mean, std = p.get("image_mean", mean), p.get("image_std", std)
    cfg = {
        "image_size": int(model.config.vision_config.image_size),
        "context_length": int(model.config.text_config.max_position_embeddings),
        "mean": [float(x) for x in mean],
        "std": [float(x) for x in std],
        "source": f"huggingface {hf_dir.name}",
    }
    return Image(), Text(), cfg


def export(args: argparse.Namespace) -> Path:
    import numpy as np
    import onnxruntime as ort
    import torch

    from edge.encoders.clip import ClipTokenizer

    out = Path(args.out).expanduser() if args.out else default_folder(args.models_dir)
    out.mkdir(parents=True, exist_ok=True)
    if args.hf_dir:
        hf = Path(args.hf_dir).expanduser()
        image, text, cfg = _towers_hf(hf)
        for name in ("vocab.json", "merges.txt"):
            shutil.copyfile(hf / name, out / name)
    else:
        image, text, cfg, bpe = _towers_open_clip(args.open_clip, args.checkpoint)
        write_tokenizer_from_bpe(bpe, out)
    tok = ClipTokenizer.from_folder(out, cfg["context_length"])
    ids = torch.from_numpy(tok(["a photo of a cat", "顾客在收银台排队"]))
    pixels = torch.randn(2, 3, cfg["image_size"], cfg["image_size"])
    with torch.no_grad():
        want_img = image(pixels).numpy()
        want_txt = text(ids).numpy()
    _export(image, pixels, out / "image.onnx", "pixel_values", "image_embeds")
    _export(text, ids, out / "text.onnx", "input_ids", "text_embeds")
    got_img = ort.InferenceSession(str(out / "image.onnx")).run(None, {"pixel_values": pixels.numpy()})[0]
    got_txt = ort.InferenceSession(str(out / "text.onnx")).run(None, {"input_ids": ids.numpy()})[0]
    diff = max(float(np.abs(got_img - want_img).max()), float(np.abs(got_txt - want_txt).max()))
    print(f"ONNX Runtime vs torch: max abs difference {diff:.2e}", file=sys.stderr)
    if diff > 1e-3:
        raise SystemExit(f"export_clip: the ONNX graphs disagree with torch ({diff:.2e} > 1e-3)")
    cfg.update(
        model="ViT-B-16",
        embed_dim=int(want_img.shape[1]),
        sot_token=tok.sot,
        eot_token=tok.eot,
        pad_token=0,
        sot_text=SOT,
        eot_text=EOT,
        sha256={
            n: hashlib.sha256((out / n).read_bytes()).hexdigest()
            for n in ("image.onnx", "text.onnx", "vocab.json", "merges.txt")
        },
    )
    (out / "config.json").write_text(json.dumps(cfg, indent=2), encoding="utf-8")
    print(f"wrote {out}", file=sys.stderr)
    return out


def check(folder: Path) -> int:
    """Zero-shot smoke test of an exported folder on scikit-image photos (no torch needed)."""
    import numpy as np

    from edge.encoders.clip import ClipEncoder

    try:
        import skimage.data
    except ImportError:
        print("export_clip --check: needs scikit-image for its test photos", file=sys.stderr)
        return 3
    enc = ClipEncoder(model_dir=folder)
    prompts = [
        "a photo of a cup of coffee",
        "a photo of a cat",
        "a photo of an astronaut",
        "a photo of a rocket",
    ]
    names = ["coffee", "chelsea", "astronaut", "rocket"]
    imgs = [np.ascontiguousarray(getattr(skimage.data, n)()[:, :, ::-1]) for n in names]
    sims = enc.encode(imgs) @ enc.encode_text(prompts).T
    print(f"{'photo':<10} " + " | ".join(prompts))
    ok = True
    for i, n in enumerate(names):
        print(f"{n:<10} " + " | ".join(f"{s:.3f}" for s in sims[i]))
        ok &= int(np.argmax(sims[i])) == i
    print("zero-shot: " + ("every photo picks its own prompt" if ok else "MISMATCH: check the export"))
    return 0 if ok else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--open-clip", metavar="ARCH", help="open_clip architecture, e.g. ViT-B-16")
    src.add_argument("--hf-dir", metavar="PATH", help="a local Hugging Face CLIPModel folder")
    src.add_argument("--check", metavar="FOLDER", help="smoke-test an exported folder (no torch)")
    ap.add_argument("--checkpoint", metavar="PATH", help="with --open-clip: the local checkpoint file")
    ap.add_argument("--out", metavar="FOLDER", help="output folder (default <models_dir>/clip_vit_b16)")
    ap.add_argument(
        "--models-dir", metavar="PATH", help="default: $ADAMM_MODELS_DIR or ~/.cache/adamm/models"
    )
    args = ap.parse_args()
    if args.check:
        return check(Path(args.check).expanduser())
    if args.open_clip and not args.checkpoint:
        ap.error("--open-clip needs --checkpoint PATH (a local file; nothing is downloaded)")
    try:
        import torch  # noqa: F401
    except ImportError:
        print("export_clip: needs torch (and open_clip or transformers) at build time", file=sys.stderr)
        print("  pip install torch open_clip_torch   # or: transformers", file=sys.stderr)
        return 3
    export(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
