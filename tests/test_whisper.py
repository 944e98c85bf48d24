"""The numpy Whisper path: CTranslate2 v6 parsing, the Slaney mel filterbank, the log-mel front end
and the byte-level token decoding (the full transcription is exercised by tests/test_daemon.py)."""

from __future__ import annotations

import struct

import numpy as np

from edge.encoders.base import byte_decoder
from edge.encoders.whisper_ct2 import read_ct2


def _string(s: str) -> bytes:
    raw = s.encode() + b"\0"
    return struct.pack("<H", len(raw)) + raw


def test_read_ct2_v6_variables_and_aliases() -> None:
    a = np.arange(6, dtype=np.float16).reshape(2, 3)
    b = np.array(8, dtype=np.int16)
    buf = struct.pack("<I", 6) + _string("WhisperSpec") + struct.pack("<II", 3, 2)
    buf += (
        _string("enc/w")
        + struct.pack("<B", 2)
        + struct.pack("<II", 2, 3)
        + struct.pack("<BI", 4, a.nbytes)
        + a.tobytes()
    )
    buf += _string("enc/heads") + struct.pack("<B", 0) + struct.pack("<BI", 2, b.nbytes) + b.tobytes()
    buf += struct.pack("<I", 1) + _string("dec/proj") + _string("enc/w")
    variables, aliases = read_ct2(buf)
    assert np.array_equal(variables["enc/w"], a) and variables["enc/w"].dtype == np.float16
    assert int(variables["enc/heads"]) == 8
    assert aliases == {"dec/proj": "enc/w"}


def test_byte_level_tokens_decode_to_utf8() -> None:
    dec = byte_decoder()
    enc = {v: k for k, v in dec.items()}
    text = "你好 store"
    tokens = "".join(enc[b] for b in text.encode("utf-8"))
    assert bytes(dec[c] for c in tokens).decode("utf-8") == text
