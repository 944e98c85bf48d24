"""Shared fixtures. Real components only: real SQLite with sqlite-vec, real ONNX models."""

# -- store (edge.memory.store) --------------------------------------------------------------------
import pathlib as _pathlib
from collections.abc import Callable as _Callable
from collections.abc import Iterator as _Iterator
from typing import Any as _Any

import pytest as _pytest


@_pytest.fixture
def store_factory(tmp_path: _pathlib.Path) -> _Iterator[_Callable[..., _Any]]:
    """``store_factory(name="store.db", **open_kwargs)`` opens a Store under tmp_path; all are closed after."""
    from edge.memory.store import Store

    opened: list[Store] = []

    def make(name: str = "store.db", **kwargs: _Any) -> Store:
        store = Store.open(tmp_path / name, **kwargs)
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


# -- the store's default text encoder, as `adamm ask` parses with it ------------------------------
@_pytest.fixture(scope="session")
def store_text_embed() -> _Callable[..., _Any]:
    """The default text encoder (``EncoderConfig().text``) as the parser's ``embed``: questions are
    parsed with it in every real ask, so tests of what a question reads use it too."""
    import numpy as np

    from edge.config import EncoderConfig
    from edge.encoders.base import create

    enc = create(EncoderConfig().text, providers=["CPUExecutionProvider"])

    def embed(texts: _Any) -> _Any:
        return np.asarray(enc.encode(list(texts)), dtype=np.float32)

    return embed
