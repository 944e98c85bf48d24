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


# -- the screens' tests: one simulated store and one hub store, built once a session -------------
@_pytest.fixture(scope="session")
def sim_events() -> list[dict[str, _Any]]:
    """The simulator's events (``test_tui.SIM``: 40 days of a Shanghai store)."""
    from test_tui import SIM

    from edge.sim import simulate

    return list(simulate(SIM))


@_pytest.fixture(scope="session")
def sim_store_file(
    tmp_path_factory: _pytest.TempPathFactory, sim_events: list[dict[str, _Any]]
) -> _pathlib.Path:
    """A store of :func:`sim_events`, imported once and closed: a module opens a copy of its own."""
    from test_tui import SIM

    from edge.memory.store import Store

    path = tmp_path_factory.mktemp("sim") / "store.db"
    with Store.open(path, timezone=SIM.timezone) as store:
        assert store.import_events(sim_events).accepted == len(sim_events)
    return path


@_pytest.fixture(scope="session")
def filled(tmp_path_factory: _pytest.TempPathFactory) -> _pathlib.Path:
    """A hub store with two stores' rollups, facts (one closed) and online statuses, filled through
    the real ingest path (``test_hub_ask``'s stores); a test copies it before it writes."""
    from hub_data import fact
    from test_hub_ask import ZONES, store_events, summaries

    from edge.sync import messages as m
    from hub.db import open_hub
    from hub.ingest import ingest

    path = tmp_path_factory.mktemp("hubconsole") / "hub.db"
    db = open_hub(str(path), create=True)
    msgs = list(summaries(store_events(ZONES), ZONES))
    msgs += [
        fact("s1", "f_rain"),
        fact("s2", "f_rain", statement={"zh": "促销日排队更长", "en": "queues longer on promotion days"}),
        fact("s2", "f_old", valid_to="2025-11-20", statement={"zh": "旧结论", "en": "an old finding"}),
    ]
    for s in msgs:
        assert ingest(db, m.summary_topic(s.store_id), s.encode()).outcome == "stored"
    for sid in ZONES:
        ingest(db, m.status_topic(sid), m.status_payload("online", "2025-12-10T08:00:00Z"))
    db.close()
    return path
