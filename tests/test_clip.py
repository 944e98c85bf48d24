"""CLIP: the pure-Python BPE tokenizer and the ONNX encoder class, end to end on CLIP-shaped graphs.

No CLIP weights are obtainable here, so the encoder runs a tiny CLIP-shaped pair of ONNX graphs
built in the test with the ``onnx`` helper API (same inputs, outputs, shapes and model folder as
``models/export_clip.py`` writes): the image tower is the mean colour of the normalised picture
times a 3 x 512 matrix, the text tower the mean of token embeddings whose rows for "red", "green"
and "blue" are the rows of that matrix, so a red picture must find "red". The tokenizer's exact ids
are checked against open_clip's vocabulary when its BPE file is installed (``make setup``
installs ``open-clip-torch --no-deps`` for it); its properties are checked on a small vocabulary
made here.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from edge.encoders.base import create
from edge.encoders.clip import (
    CLIP_MEAN,
    CLIP_STD,
    EOT,
    SOT,
    ClipEncoder,
    ClipTokenizer,
    bytes_to_unicode,
    vocab_from_merges,
)
from edge.errors import ModelMissingError

DIM = 512
SIZE = 32
CONTEXT = 77

# tiny merge list: enough to make "red", "green", "blue", "cat" single tokens
MERGES = [
    ("e", "d</w>"),
    ("r", "ed</w>"),
    ("e", "n</w>"),
    ("e", "en</w>"),
    ("r", "een</w>"),
    ("g", "reen</w>"),
    ("u", "e</w>"),
    ("l", "ue</w>"),
    ("b", "lue</w>"),
    ("a", "t</w>"),
    ("c", "at</w>"),
]


def _open_clip_bpe() -> Path | None:
    spec = importlib.util.find_spec("open_clip")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "bpe_simple_vocab_16e6.txt.gz"
    return path if path.is_file() else None


@pytest.fixture(scope="module")
def small_tokenizer() -> ClipTokenizer:
    return ClipTokenizer(vocab_from_merges(MERGES), MERGES, context_length=CONTEXT)


# ---- tokenizer -------------------------------------------------------------------------------


# ids of open_clip 3.3.0's SimpleTokenizer on its bpe_simple_vocab_16e6 (checked against it with
# ftfy as identity; these strings are clean text, where ftfy changes nothing)
KNOWN_IDS = {
    "a photo of a cat": [320, 1125, 539, 320, 2368],
    "A PHOTO of a Dog": [320, 1125, 539, 320, 1929],
    "Hello World!": [3306, 1002, 256],
    "running shoes at the entrance": [2761, 4079, 536, 518, 9129],
    "咖啡": [161, 240, 244, 161, 243, 350],
    "顾客在收银台排队": [165, 94, 122, 27047, 95, 37746, 101, 162, 242, 114, 165, 241, 114, 34517, 108, 162, 236, 240, 165, 246, 509],
    "it's 3.14 o'clock, isn't it?": [585, 568, 274, 269, 272, 275, 334, 262, 6716, 267, 2923, 713, 585, 286],
    "naïve café résumé": [1097, 35689, 563, 15304, 29106, 7054, 4166],
    "emoji 😀 test": [16327, 7334, 1628],
    "   lots   of\n\twhitespace  ": [2958, 539, 4699, 2138],
    "&amp; html &lt;b&gt;": [261, 18231, 283, 321, 285],
}  # fmt: skip


def test_tokenizer_matches_open_clip_ids() -> None:
    bpe = _open_clip_bpe()
    if bpe is None:
        pytest.skip("open_clip's BPE file is not installed (pip install --no-deps open-clip-torch==3.3.0)")
    tok = ClipTokenizer.from_bpe_gz(bpe)
    assert (tok.sot, tok.eot, len(tok.encoder)) == (49406, 49407, 49408)
    for text, ids in KNOWN_IDS.items():
        assert tok.encode(text) == ids, text
    row = tok(["a photo of a cat"])[0]
    assert row[:7].tolist() == [49406, 320, 1125, 539, 320, 2368, 49407]
    assert row.shape == (77,) and not row[7:].any()
    assert tok.decode(row) == "a photo of a cat"
    assert tok.decode(tok.encode("顾客在收银台排队")) == "顾客在收银台排队"


def test_export_script_tokenizer_files_match_the_bpe_file(tmp_path: Path) -> None:
    bpe = _open_clip_bpe()
    if bpe is None:
        pytest.skip("open_clip's BPE file is not installed (pip install --no-deps open-clip-torch==3.3.0)")
    from models.export_clip import write_tokenizer_from_bpe

    write_tokenizer_from_bpe(bpe, tmp_path)
    a = ClipTokenizer.from_bpe_gz(bpe)
    b = ClipTokenizer.from_folder(tmp_path)
    texts = list(KNOWN_IDS) + ["two customers queue at the checkout"]
    assert (a(texts) == b(texts)).all()
    assert json.loads((tmp_path / "vocab.json").read_text(encoding="utf-8"))[EOT] == 49407


def test_tokenizer_start_end_padding_and_truncation(small_tokenizer: ClipTokenizer) -> None:
    tok = small_tokenizer
    assert tok.sot == len(tok.encoder) - 2 and tok.eot == len(tok.encoder) - 1
    ids = tok(["red cat", ""])
    assert ids.shape == (2, CONTEXT) and ids.dtype == np.int64
    red, cat = tok.encoder["red</w>"], tok.encoder["cat</w>"]
    assert ids[0, :4].tolist() == [tok.sot, red, cat, tok.eot]
    assert not ids[0, 4:].any()  # padded with 0
    assert ids[1, :2].tolist() == [tok.sot, tok.eot]
    long = tok(["red " * 200])[0]
    assert long[0] == tok.sot and long[-1] == tok.eot and (long[1:-1] == red).all()


def test_tokenizer_lowercases_and_cleans_whitespace(small_tokenizer: ClipTokenizer) -> None:
    tok = small_tokenizer
    assert tok.encode("RED  Green\n\tBLUE") == tok.encode("red green blue")
    assert tok.encode("red green blue") == [tok.encoder[w + "</w>"] for w in ("red", "green", "blue")]


def test_tokenizer_falls_back_to_bytes(small_tokenizer: ClipTokenizer) -> None:
    tok = small_tokenizer
    b2u = bytes_to_unicode()
    # no merges for these: every UTF-8 byte is its own symbol, the last one with </w>
    for text in ("咖啡", "zq", "😀"):
        raw = text.encode("utf-8")
        want = [tok.encoder[b2u[b]] for b in raw[:-1]] + [tok.encoder[b2u[raw[-1]] + "</w>"]]
        assert tok.encode(text) == want
        assert tok.decode(tok.encode(text)) == text
    assert tok.encode("red!") == [tok.encoder["red</w>"], tok.encoder["!</w>"]]


# ---- encoder on CLIP-shaped graphs ---------------------------------------------------------------


def _write_model(folder: Path, tok: ClipTokenizer, seed: int = 0) -> np.ndarray:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    w, _ = np.linalg.qr(rng.normal(size=(DIM, 3)))  # 3 orthonormal directions
    proj = w.T.astype(np.float32)  # (3, DIM): row c = colour channel c (R, G, B)
    image = helper.make_graph(
        [
            helper.make_node("GlobalAveragePool", ["pixel_values"], ["pooled"]),
            helper.make_node("Flatten", ["pooled"], ["flat"], axis=1),
            helper.make_node("MatMul", ["flat", "proj"], ["image_embeds"]),
        ],
        "clip_image_tiny",
        [helper.make_tensor_value_info("pixel_values", TensorProto.FLOAT, ["batch", 3, SIZE, SIZE])],
        [helper.make_tensor_value_info("image_embeds", TensorProto.FLOAT, ["batch", DIM])],
        [numpy_helper.from_array(proj, "proj")],
    )
    table = rng.normal(scale=0.01, size=(len(tok.encoder), DIM)).astype(np.float32)
    table[[0, tok.sot, tok.eot]] = 0.0
    for c, word in enumerate(("red", "green", "blue")):
        table[tok.encoder[word + "</w>"]] = proj[c]
    text = helper.make_graph(
        [
            helper.make_node("Gather", ["table", "input_ids"], ["emb"], axis=0),
            helper.make_node("ReduceMean", ["emb"], ["text_embeds"], axes=[1], keepdims=0),
        ],
        "clip_text_tiny",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", CONTEXT])],
        [helper.make_tensor_value_info("text_embeds", TensorProto.FLOAT, ["batch", DIM])],
        [numpy_helper.from_array(table, "table")],
    )
    opset = [helper.make_opsetid("", 13)]
    for graph, name in ((image, "image.onnx"), (text, "text.onnx")):
        model = helper.make_model(graph, opset_imports=opset)
        model.ir_version = 8
        onnx.checker.check_model(model)
        onnx.save(model, str(folder / name))
    (folder / "vocab.json").write_text(json.dumps(tok.encoder), encoding="utf-8")
    merges = ["#version: 0.2", *(f"{a} {b}" for a, b in MERGES)]
    (folder / "merges.txt").write_text("\n".join(merges) + "\n", encoding="utf-8")
    cfg = {
        "model": "tiny-test",
        "embed_dim": DIM,
        "image_size": SIZE,
        "context_length": CONTEXT,
        "mean": list(CLIP_MEAN),
        "std": list(CLIP_STD),
        "sot_token": tok.sot,
        "eot_token": tok.eot,
        "pad_token": 0,
        "sot_text": SOT,
        "eot_text": EOT,
    }
    (folder / "config.json").write_text(json.dumps(cfg), encoding="utf-8")
    return proj


@pytest.fixture(scope="module")
def tiny_clip(tmp_path_factory: pytest.TempPathFactory, small_tokenizer: ClipTokenizer) -> Path:
    folder = tmp_path_factory.mktemp("models") / "clip_vit_b16"
    folder.mkdir()
    _write_model(folder, small_tokenizer)
    return folder


def _solid(bgr: tuple[int, int, int], h: int = 120, w: int = 200) -> np.ndarray:
    return np.full((h, w, 3), bgr, dtype=np.uint8)


def test_encoder_finds_the_colour_by_text(tiny_clip: Path) -> None:
    enc = create("clip_vit_b16", models_dir=tiny_clip.parent, providers=["CPUExecutionProvider"])
    assert isinstance(enc, ClipEncoder)
    assert enc.providers == ["CPUExecutionProvider"] and enc.dim == DIM and enc.space == "image"
    images = [_solid((0, 0, 255)), _solid((0, 255, 0)), _solid((255, 0, 0))]  # BGR: red, green, blue
    iv = enc.encode(images)
    tv = enc.encode_text(["RED", "a green one", "blue"])
    assert iv.shape == (3, DIM) and tv.shape == (3, DIM) and iv.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(iv, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(tv, axis=1), 1.0, rtol=1e-5)
    sims = iv @ tv.T
    assert sims.argmax(axis=1).tolist() == [0, 1, 2]
    assert sims.argmax(axis=0).tolist() == [0, 1, 2]


def test_encoder_batches_and_event_pooling(tiny_clip: Path) -> None:
    enc = ClipEncoder(model_dir=tiny_clip, providers=["CPUExecutionProvider"], batch_size=2)
    rng = np.random.default_rng(1)
    images = [rng.integers(0, 256, (90 + 10 * i, 160, 3), dtype=np.uint8) for i in range(5)]
    one_by_one = np.concatenate([enc.encode([im]) for im in images])
    np.testing.assert_allclose(enc.encode(images), one_by_one, atol=1e-5)
    event = enc.encode_event(images)
    assert event.space == "image" and event.labels == []
    mean = one_by_one.mean(axis=0)
    np.testing.assert_allclose(event.vector, mean / np.linalg.norm(mean), atol=1e-5)
    assert enc.encode([]).shape == (0, DIM) and enc.encode_text([]).shape == (0, DIM)


def test_missing_model_folder_says_how_to_make_it(tmp_path: Path) -> None:
    with pytest.raises(ModelMissingError) as err:
        ClipEncoder(models_dir=tmp_path)
    assert "image.onnx" in str(err.value) and "models.export_clip" in str(err.value)


def test_export_script_without_torch_says_so(
    tiny_clip: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import models.export_clip as export_clip

    if importlib.util.find_spec("torch") is not None:
        pytest.skip("torch is installed: the export itself would run (no CLIP checkpoint here)")
    monkeypatch.setattr("sys.argv", ["export_clip", "--hf-dir", str(tiny_clip)])
    assert export_clip.main() == 3
    assert "needs torch" in capsys.readouterr().err


def _with_sums(folder: Path) -> None:
    cfg = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    names = ("image.onnx", "text.onnx", "vocab.json", "merges.txt")
    cfg["sha256"] = {n: hashlib.sha256((folder / n).read_bytes()).hexdigest() for n in names}
    (folder / "config.json").write_text(json.dumps(cfg), encoding="utf-8")


def test_model_files_are_checked_against_the_exports_sha256(
    tmp_path: Path, small_tokenizer: ClipTokenizer
) -> None:
    folder = tmp_path / "clip_vit_b16"
    folder.mkdir()
    _write_model(folder, small_tokenizer)
    _with_sums(folder)
    enc = ClipEncoder(model_dir=folder, providers=["CPUExecutionProvider"])
    assert enc.encode([_solid((0, 0, 255))]).shape == (1, DIM)  # the image tower checked and loaded
    record = json.loads((folder / ".sha256-verified.json").read_text(encoding="utf-8"))
    assert sorted(record) == ["image.onnx", "merges.txt", "vocab.json"]  # frames only: no text tower
    assert enc.encode_text(["red"]).shape == (1, DIM)
    record = json.loads((folder / ".sha256-verified.json").read_text(encoding="utf-8"))
    assert sorted(record) == ["image.onnx", "merges.txt", "text.onnx", "vocab.json"]

    # a file changed after the export: the next load says which one
    with (folder / "merges.txt").open("a", encoding="utf-8") as f:
        f.write("r ed\n")
    with pytest.raises(ModelMissingError, match=r"merges\.txt does not match its sha256") as err:
        ClipEncoder(model_dir=folder, providers=["CPUExecutionProvider"])
    assert "models.export_clip" in str(err.value)


def test_a_damaged_image_tower_is_found_when_it_loads(tmp_path: Path, small_tokenizer: ClipTokenizer) -> None:
    folder = tmp_path / "clip_vit_b16"
    folder.mkdir()
    _write_model(folder, small_tokenizer)
    _with_sums(folder)
    data = bytearray((folder / "image.onnx").read_bytes())
    data[-1] ^= 0xFF
    (folder / "image.onnx").write_bytes(bytes(data))
    enc = ClipEncoder(model_dir=folder, providers=["CPUExecutionProvider"])
    assert enc.encode_text(["red"]).shape == (1, DIM)  # text queries never read the image tower
    with pytest.raises(ModelMissingError, match=r"image\.onnx does not match"):
        enc.encode([_solid((0, 0, 255))])
