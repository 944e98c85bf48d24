"""Reading a CTranslate2 ``model.bin`` (format v6) into numpy arrays, without CTranslate2 itself.

Used by :mod:`edge.encoders.whisper_export` (ONNX conversion) and :mod:`edge.encoders.whisper_ct2`
(the numpy reference decoder); the ``models/`` scripts import it from here.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from edge.errors import ModelMissingError

_CT2_DTYPES = {0: np.float32, 1: np.int8, 2: np.int16, 3: np.int32, 4: np.float16, 5: np.float16}


def read_ct2(buf: bytes | memoryview) -> tuple[dict[str, np.ndarray], dict[str, str], str]:
    """Parse a CTranslate2 ``model.bin`` (format v6): variables by name, aliases, spec name.

    Layout (little endian): u32 version, str spec name, u32 revision, u32 n; n times {str name,
    u8 rank, u32 dims[rank], u8 dtype, u32 nbytes, bytes}; u32 n_alias; n_alias times {str alias,
    str target}; a str is a u16 length (with the trailing NUL) then the bytes."""
    mv = memoryview(buf)
    off = 0

    def unpack(fmt: str) -> tuple[Any, ...]:
        nonlocal off
        vals = struct.unpack_from("<" + fmt, mv, off)
        off += struct.calcsize("<" + fmt)
        return vals

    def string() -> str:
        nonlocal off
        (n,) = unpack("H")
        s = bytes(mv[off : off + n]).rstrip(b"\0").decode("utf-8")
        off += n
        return s

    (version,) = unpack("I")
    if version != 6:
        raise ModelMissingError(
            f"CTranslate2 model format v{version} is not supported (v6 expected)",
            hint="re-convert the checkpoint with CTranslate2 3.x/4.x",
        )
    spec = string()
    unpack("I")  # spec revision
    (count,) = unpack("I")
    variables: dict[str, np.ndarray] = {}
    for _ in range(count):
        name = string()
        (rank,) = unpack("B")
        dims = unpack("I" * rank)
        (dtype_id,) = unpack("B")
        (nbytes,) = unpack("I")
        if dtype_id not in _CT2_DTYPES or dtype_id == 5:
            raise ModelMissingError(f"CTranslate2 variable {name} has unsupported dtype id {dtype_id}")
        dtype = np.dtype(_CT2_DTYPES[dtype_id])
        arr = np.frombuffer(mv, dtype=dtype, count=nbytes // dtype.itemsize, offset=off)
        variables[name] = arr.reshape(dims)
        off += nbytes
    (n_alias,) = unpack("I")
    aliases = {}
    for _ in range(n_alias):
        alias = string()
        aliases[alias] = string()
    if off != len(mv):
        raise ModelMissingError(f"CTranslate2 model.bin has {len(mv) - off} trailing bytes (damaged file?)")
    return variables, aliases, spec
