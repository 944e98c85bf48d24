"""The in-memory vector matrix's scoring kernels: selections of runs and gathers, and the dot.

Pure numpy against brute force; the retrieval tests cover the same code through real stores.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edge.memory.search import vector_index
from edge.memory.search.vector_index import MIN_RUN, TWO_THREAD_ROWS, Selection, Snapshot, dot

ROWS = 400


def snapshot(n: int = ROWS, dim: int = 16, seed: int = 0) -> Snapshot:
    x = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return Snapshot(
        matrix=x,
        rowids=np.arange(1, n + 1, dtype=np.int64),
        positions=np.arange(-1, n, dtype=np.int64),
        ranges={},
        tail_keys=np.zeros(0, dtype=object),
        n_sorted=n,
    )


# sorted unique positions made of a few runs (some long enough to be slices) and loose rows
positions = st.lists(
    st.tuples(st.integers(0, ROWS - 1), st.integers(1, 3 * MIN_RUN)), min_size=0, max_size=8
).map(lambda runs: np.array(sorted({p for s, n in runs for p in range(s, min(ROWS, s + n))}), dtype=np.int64))


@settings(max_examples=150, deadline=None)
@given(pos=positions, seed=st.integers(0, 3))
def test_a_selection_scores_exactly_its_rows(pos: np.ndarray, seed: int) -> None:
    snap = snapshot()
    q = np.random.default_rng(seed).standard_normal(16).astype(np.float32)
    sel = Selection.of_positions(pos)
    assert sel.size == pos.shape[0]
    assert np.array_equal(sel.positions(), pos)
    assert all(e - s >= MIN_RUN for s, e in sel.spans)  # short runs are gathered, not sliced
    scores = snap.score(sel, q)
    at = sel.positions_at(np.arange(sel.size))
    assert np.array_equal(np.sort(at), pos)
    np.testing.assert_allclose(scores, snap.matrix[at] @ q, rtol=1e-5, atol=1e-6)
    # score_positions keeps the caller's (sorted) order whatever the selection's own order is
    np.testing.assert_allclose(snap.score_positions(pos, q), snap.matrix[pos] @ q, rtol=1e-5, atol=1e-6)


def test_known_spans_come_first_then_the_runs_and_gathers_of_the_rest() -> None:
    pos = np.array([*range(100, 100 + MIN_RUN), 200, 205], dtype=np.int64)
    sel = Selection.of_positions(pos, spans=[(0, 10)])
    assert sel.spans == ((0, 10), (100, 100 + MIN_RUN))
    assert sel.scattered.tolist() == [200, 205]
    assert sel.positions_at(np.array([0, 9, 10, 10 + MIN_RUN, 11 + MIN_RUN])).tolist() == [
        0,
        9,
        100,
        200,
        205,
    ]


@pytest.mark.parametrize("n", [1, 50, TWO_THREAD_ROWS - 1, TWO_THREAD_ROWS, 3 * TWO_THREAD_ROWS + 7])
def test_dot_is_the_matrix_vector_product_on_one_or_two_threads(n: int) -> None:
    rng = np.random.default_rng(n)
    x = rng.standard_normal((n, 64)).astype(np.float32)
    q = rng.standard_normal(64).astype(np.float32)
    out = np.full(n + 4, np.nan, dtype=np.float32)
    dot(x, q, out=out[2 : n + 2])  # a view: both halves write where they are told
    np.testing.assert_allclose(out[2 : n + 2], x.astype(np.float64) @ q, rtol=1e-4, atol=1e-4)
    assert np.isnan(out[:2]).all() and np.isnan(out[n + 2 :]).all()


def test_dot_restores_the_blas_thread_count() -> None:
    setter = vector_index._set_blas_threads
    if setter is None:
        pytest.skip("numpy's BLAS thread count cannot be set here; dot uses numpy's own loop")
    before = setter(2)  # the setter answers the previous value; dot sets 1 while it scans
    try:
        dot(np.ones((TWO_THREAD_ROWS, 8), dtype=np.float32), np.ones(8, dtype=np.float32))
        assert setter(2) == 2
    finally:
        setter(before)


def test_overlapping_scans_on_several_threads_restore_the_blas_thread_count() -> None:
    setter = vector_index._set_blas_threads
    if setter is None:
        pytest.skip("numpy's BLAS thread count cannot be set here; dot uses numpy's own loop")
    x = np.random.default_rng(5).standard_normal((TWO_THREAD_ROWS + 100, 32)).astype(np.float32)
    q = np.ones(32, dtype=np.float32)
    want = x.astype(np.float64) @ q
    errors: list[BaseException] = []

    def scan_many() -> None:
        try:
            for _ in range(30):
                np.testing.assert_allclose(dot(x, q), want, rtol=1e-4, atol=1e-4)
        except BaseException as exc:
            errors.append(exc)

    before = setter(2)
    try:
        threads = [threading.Thread(target=scan_many) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        assert setter(2) == 2  # not left at the one thread a scan runs with
    finally:
        setter(before)
