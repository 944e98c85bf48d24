"""edge.analysis.stats_fast against scipy.stats: the same statistics and p-values within 1e-12."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import special, stats

from edge.analysis import stats_fast as sf

ROOT = Path(__file__).resolve().parents[1]


def close(a: float, b: float) -> bool:
    """Equal within 1e-12 absolute, and within 1e-9 relative (tiny p-values keep their digits)."""
    if np.isnan(a) or np.isnan(b):
        return bool(np.isnan(a) and np.isnan(b))
    return abs(a - b) <= 1e-12 and abs(a - b) <= 1e-9 * max(abs(a), abs(b)) + 1e-300


@pytest.mark.parametrize(
    ("a", "b", "x"),
    [
        (0.5, 0.5, 0.3),
        (2.0, 3.0, 0.01),
        (2.0, 3.0, 0.99),
        (45.0, 45.0, 0.2),
        (45.0, 45.0, 1e-6),
        (5000.0, 0.5, 0.999),
        (5000.0, 0.5, 0.9),
        (500000.0, 0.5, 0.99999),
        (0.5, 500000.0, 1e-6),
        (2.5e6, 2.5e6, 0.4999),
        (300.0, 300.0, 0.45),
        (12.5, 7.25, 0.6),
    ],
)
def test_betainc_equals_scipy(a: float, b: float, x: float) -> None:
    assert close(sf.betainc(a, b, x), float(special.betainc(a, b, x)))


@pytest.mark.parametrize("df", [1.0, 2.5, 10.0, 91.0, 1234.5, 2e5, 5e6])
@pytest.mark.parametrize("t", [0.0, 0.3, -1.2, 2.0, 4.5, -12.0, 40.0])
def test_t_tail_equals_scipy(t: float, df: float) -> None:
    assert close(sf.t_sf2(t, df), float(2 * special.stdtr(df, -abs(t))))


def _samples(seed: int, n1: int, n2: int, shift: float) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.gamma(3.0, 30.0, n1), rng.gamma(3.0, 30.0, n2) + shift


@pytest.mark.parametrize(
    ("n1", "n2", "shift"), [(2, 3, 1.0), (12, 30, 5.0), (400, 900, 3.0), (2293, 8215, 31.0), (50, 50, 0.0)]
)
def test_welch_equals_scipy(n1: int, n2: int, shift: float) -> None:
    a, b = _samples(n1 + n2, n1, n2, shift)
    ref = stats.ttest_ind(a, b, equal_var=False)
    got = sf.welch(a, b)
    assert close(got.statistic, float(ref.statistic)) and close(got.pvalue, float(ref.pvalue))
    ref_s = stats.ttest_ind_from_stats(
        a.mean(), a.std(ddof=1), n1, b.mean(), b.std(ddof=1), n2, equal_var=False
    )
    got_s = sf.welch_from_stats(a.mean(), a.std(ddof=1), n1, b.mean(), b.std(ddof=1), n2)
    assert close(got_s.statistic, float(ref_s.statistic)) and close(got_s.pvalue, float(ref_s.pvalue))


def test_welch_degenerate_cases_follow_scipy() -> None:
    with np.errstate(all="ignore"):
        ref = stats.ttest_ind_from_stats(5.0, 0.0, 10, 5.0, 0.0, 12, equal_var=False)
        got = sf.welch_from_stats(5.0, 0.0, 10, 5.0, 0.0, 12)
        assert close(got.pvalue, float(ref.pvalue))
        ref = stats.ttest_ind_from_stats(5.0, 0.0, 10, 6.0, 0.0, 12, equal_var=False)
        got = sf.welch_from_stats(5.0, 0.0, 10, 6.0, 0.0, 12)
        assert close(got.pvalue, float(ref.pvalue)) and got.statistic == float(ref.statistic)
    assert np.isnan(sf.welch([1.0], [2.0, 3.0]).pvalue)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("n", [3, 8, 13, 92])
def test_linregress_equals_scipy(seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    x = np.arange(n, dtype=float)
    y = 100 + rng.normal(0, 5, n) + (0.4 * x if seed % 2 else 0.0)
    ref = stats.linregress(x, y)
    got = sf.linregress(x, y)
    for field in ("slope", "intercept", "rvalue", "pvalue", "stderr", "intercept_stderr"):
        assert close(getattr(got, field), float(getattr(ref, field))), field


def test_linregress_perfect_line_and_two_points() -> None:
    x = np.arange(10, dtype=float)
    for y in (3 * x + 1, np.array([1.0, 2.0])):
        xs = x[: len(y)]
        ref, got = stats.linregress(xs, y), sf.linregress(xs, y)
        assert close(got.pvalue, float(ref.pvalue)) and close(got.rvalue, float(ref.rvalue))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("n", [3, 10, 60, 92])
def test_pearson_and_spearman_equal_scipy(seed: int, n: int) -> None:
    rng = np.random.default_rng(100 + seed)
    x = rng.normal(10, 3, n)
    y = 0.3 * seed * x + rng.normal(0, 3, n)
    if seed == 5:  # ties
        x, y = np.round(x), np.round(y)
    pr, sr = stats.pearsonr(x, y), stats.spearmanr(x, y)
    got_p, got_s = sf.pearsonr(x, y), sf.spearmanr(x, y)
    assert close(got_p.statistic, float(pr.statistic)) and close(got_p.pvalue, float(pr.pvalue))
    assert close(got_s.statistic, float(sr.statistic)) and close(got_s.pvalue, float(sr.pvalue))


def test_rankdata_equals_scipy() -> None:
    a = np.array([3.0, 1.0, 3.0, 2.0, 5.0, 1.0, 3.0])
    assert np.array_equal(sf.rankdata(a), stats.rankdata(a))


def test_importing_it_loads_no_scipy() -> None:
    code = "import sys, edge.analysis.stats_fast; print(any(m.startswith('scipy') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize(
    ("a", "b"), [(3901, 3899), (120, 80), (0, 5), (7, 7), (1, 0), (5000, 4700), (31, 12)]
)
def test_binom_equal_counts_equals_scipy(a: int, b: int) -> None:
    want = stats.binomtest(max(a, b), a + b, 0.5).pvalue if a + b else 1.0
    assert sf.binom_equal_counts(a, b) == pytest.approx(want, rel=1e-9, abs=1e-300)
