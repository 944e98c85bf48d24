"""The statistical tests of the operators, computed without importing ``scipy.stats``.

``import scipy.stats`` costs about a second of start-up (it builds every distribution and parses
their docstrings), more than a whole ``adamm ask`` may take. The tests the common questions need
reduce to the regularized incomplete beta function, computed here in plain Python (continued
fraction, modified Lentz, with a Stirling-series log-beta for large arguments) over numpy
moments. Results equal ``scipy.stats``' within 1e-12 (tests/test_stats_fast.py compares them):

- :func:`welch_from_stats` = ``ttest_ind_from_stats(..., equal_var=False)``;
- :func:`welch` = ``ttest_ind(a, b, equal_var=False)``;
- :func:`linregress` = ``linregress(x, y)`` (slope, intercept, r, two-sided p, stderr);
- :func:`pearsonr` = ``pearsonr(x, y)``; :func:`spearmanr` = ``spearmanr(x, y)``;
- :func:`t_sf2` (two-sided Student t tail) and :func:`betainc`, the building blocks.

Pure: math and numpy only. Used by the trend, compare and correlation operators.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

__all__ = [
    "LinregressResult",
    "TestResult",
    "betainc",
    "linregress",
    "pearsonr",
    "rankdata",
    "spearmanr",
    "t_sf2",
    "welch",
    "welch_from_stats",
]

_EPS = 1e-16
_FPMIN = 1e-300
_MAX_ITER = 200_000
#: scipy.stats.linregress keeps t finite at |r| = 1 with this
_TINY = 1.0e-20
_LOG2 = math.log(2.0)
_LOGPI = math.log(math.pi)
_LGAMMA_HALF = math.lgamma(0.5)


class TestResult(NamedTuple):
    """A test statistic and its two-sided p-value (NaN where scipy gives NaN)."""

    statistic: float
    pvalue: float


class LinregressResult(NamedTuple):
    """What ``scipy.stats.linregress`` returns (two-sided p-value)."""

    slope: float
    intercept: float
    rvalue: float
    pvalue: float
    stderr: float
    intercept_stderr: float


def _stirling_tail(z: float) -> float:
    """``lgamma(z) - ((z - 0.5) log z - z + log(2 pi) / 2)`` for z >= 10 (error < 1e-17)."""
    z2 = z * z
    return (1.0 / 12.0 - (1.0 / 360.0 - (1.0 / 1260.0 - 1.0 / (1680.0 * z2)) / z2) / z2) / z


def _lbeta(a: float, b: float) -> float:
    """``log B(a, b)`` without the cancellation of ``lgamma(a) - lgamma(a + b)`` for large ``a``."""
    if a < b:
        a, b = b, a
    if a < 10.0:
        return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
    # lgamma(a) - lgamma(a + b) through Stirling's series, the large terms cancelled analytically
    diff = (
        -(a - 0.5) * math.log1p(b / a) - b * math.log(a + b) + b + _stirling_tail(a) - _stirling_tail(a + b)
    )
    return math.lgamma(b) + diff


def _lentz(aa: float, c: float, d: float) -> tuple[float, float]:
    """One modified-Lentz step of a continued fraction with partial numerator ``aa``: new (c, 1/d)."""
    d = 1.0 + aa * d
    if abs(d) < _FPMIN:
        d = _FPMIN
    c = 1.0 + aa / c
    if abs(c) < _FPMIN:
        c = _FPMIN
    return c, 1.0 / d


def _betacf(a: float, b: float, x: float, xc: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = (a * xc + 1.0 - b * x) / qap  # 1 - (a + b) x / (a + 1) without cancellation near x = 1
    if abs(d) < _FPMIN:
        d = _FPMIN
    d = 1.0 / d
    h = d
    for m in range(1, _MAX_ITER + 1):
        m2 = 2 * m
        c, d = _lentz(m * (b - m) * x / ((qam + m2) * (a + m2)), c, d)
        h *= d * c
        c, d = _lentz(-(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)), c, d)
        step = d * c
        h *= step
        if abs(step - 1.0) < _EPS:
            return h
    raise ArithmeticError(f"incomplete beta did not converge (a={a}, b={b}, x={x})")


def betainc(a: float, b: float, x: float, xc: float | None = None) -> float:
    """The regularized incomplete beta function ``I_x(a, b)`` (``scipy.special.betainc``).

    ``xc`` is ``1 - x`` when the caller knows it more precisely than the subtraction would."""
    if math.isnan(a) or math.isnan(b) or math.isnan(x) or a <= 0 or b <= 0:
        return math.nan
    if xc is None:
        xc = 1.0 - x
    if x <= 0.0:
        return 0.0
    if xc <= 0.0:
        return 1.0
    if a == b and 0.25 <= x <= 0.75:
        # x^a (1-x)^a / B(a, a) near x = 1/2 through 4 x (1 - x) = 1 - (1 - 2x)^2 and Legendre's duplication
        # formula: no large terms to cancel when a is large (Student t, Pearson's r)
        log_front = a * math.log1p(-((xc - x) ** 2)) - _LOG2 - 0.5 * _LOGPI - (_lbeta(a, 0.5) - _LGAMMA_HALF)
    else:
        # log x and log(1 - x) from whichever of x, xc is small (no rounding blown up by a large a)
        log_x = math.log1p(-xc) if x > 0.5 else math.log(x)
        log_xc = math.log1p(-x) if xc > 0.5 else math.log(xc)
        log_front = a * log_x + b * log_xc - _lbeta(a, b)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _betacf(a, b, x, xc) / a
    return 1.0 - math.exp(log_front) * _betacf(b, a, xc, x) / b


def t_sf2(t: float, df: float) -> float:
    """Two-sided Student t p-value ``2 * stdtr(df, -|t|)``, as scipy's tests compute it."""
    if math.isnan(t) or math.isnan(df) or df <= 0:
        return math.nan
    if math.isinf(t):
        return 0.0
    if math.isinf(df):  # the normal limit
        return math.erfc(abs(t) / math.sqrt(2.0))
    # 2 * F(-|t|) = 2 * I_x(df/2, df/2), x = (1 - |t| / s) / 2, s = sqrt(t^2 + df): the symmetric
    # form stays accurate for large df (the usual I_{df/(df+t^2)}(df/2, 1/2) loses digits there)
    at = abs(t)
    s = math.sqrt(at * at + df)
    x = df / (2.0 * s * (at + s))
    xc = 0.5 + at / (2.0 * s)
    return min(1.0, 2.0 * betainc(df / 2.0, df / 2.0, x, xc))


def welch_from_stats(
    mean1: float, std1: float, nobs1: float, mean2: float, std2: float, nobs2: float
) -> TestResult:
    """Welch's t-test from summary statistics (``ttest_ind_from_stats(..., equal_var=False)``)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        vn1 = np.float64(std1) ** 2 / np.float64(nobs1)
        vn2 = np.float64(std2) ** 2 / np.float64(nobs2)
        df = float((vn1 + vn2) ** 2 / (vn1**2 / (np.float64(nobs1) - 1) + vn2**2 / (np.float64(nobs2) - 1)))
        if math.isnan(df):  # both variances zero: df does not matter (scipy uses 1)
            df = 1.0
        t = float(np.divide(np.float64(mean1) - np.float64(mean2), np.sqrt(vn1 + vn2)))
    return TestResult(t, t_sf2(t, df))


def welch(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> TestResult:
    """Welch's t-test of two samples (``ttest_ind(a, b, equal_var=False)``)."""
    x = np.asarray(a, dtype=float)
    y = np.asarray(b, dtype=float)
    if x.size < 2 or y.size < 2:
        return TestResult(math.nan, math.nan)
    return welch_from_stats(
        float(np.mean(x)),
        float(np.std(x, ddof=1)),
        float(x.size),
        float(np.mean(y)),
        float(np.std(y, ddof=1)),
        float(y.size),
    )


def linregress(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> LinregressResult:
    """Least-squares line and the two-sided p-value of its slope (``scipy.stats.linregress``)."""
    xa = np.asarray(x, dtype=float)
    ya = np.asarray(y, dtype=float)
    if xa.size == 0 or ya.size == 0:
        raise ValueError("Inputs must not be empty.")
    if xa.size > 1 and float(np.amax(xa)) == float(np.amin(xa)):
        raise ValueError("Cannot calculate a linear regression if all x values are identical")
    n = xa.size
    xmean = float(np.mean(xa))
    ymean = float(np.mean(ya))
    ssxm, ssxym, _, ssym = (float(v) for v in np.cov(xa, ya, bias=True).flat)
    if ssxm == 0.0 or ssym == 0.0:
        r = math.nan if ssxym == 0 else 0.0
    else:
        r = ssxym / math.sqrt(ssxm * ssym)
        r = min(1.0, max(-1.0, r))
    slope = ssxym / ssxm
    intercept = ymean - slope * xmean
    if n == 2:
        p = 1.0 if ya[0] == ya[1] else 0.0
        return LinregressResult(slope, intercept, r, p, 0.0, 0.0)
    df = n - 2
    t = r * math.sqrt(df / ((1.0 - r + _TINY) * (1.0 + r + _TINY)))
    p = t_sf2(t, df)
    stderr = math.sqrt((1 - r * r) * ssym / ssxm / df)
    return LinregressResult(slope, intercept, r, p, stderr, stderr * math.sqrt(ssxm + xmean * xmean))


def pearsonr(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> TestResult:
    """Pearson's r and its two-sided p-value (``scipy.stats.pearsonr``); NaN for constant input."""
    xa = np.asarray(x, dtype=float)
    ya = np.asarray(y, dtype=float)
    n = xa.size
    if n != ya.size or n < 2:
        raise ValueError("`x` and `y` must have the same length, at least 2.")
    if bool(np.all(xa == xa[0])) or bool(np.all(ya == ya[0])):
        return TestResult(math.nan, math.nan)
    xm = xa - np.mean(xa)
    ym = ya - np.mean(ya)
    xmax = float(np.max(np.abs(xm)))
    ymax = float(np.max(np.abs(ym)))
    normxm = xmax * float(np.linalg.norm(xm / xmax))
    normym = ymax * float(np.linalg.norm(ym / ymax))
    r = float(np.dot(xm / normxm, ym / normym))
    r = min(1.0, max(-1.0, r))
    if n == 2:
        return TestResult(float(round(r)), 1.0)
    ab = n / 2.0 - 1.0
    # 2 * P(R >= |r|) under the null: R = 2 B - 1 with B ~ Beta(ab, ab)
    p = 2.0 * betainc(ab, ab, (1.0 - abs(r)) / 2.0, (1.0 + abs(r)) / 2.0)
    return TestResult(r, min(1.0, p))


def rankdata(a: Sequence[float] | np.ndarray) -> np.ndarray:
    """Ranks from 1, ties averaged (``scipy.stats.rankdata(method="average")``)."""
    arr = np.asarray(a)
    sorter = np.argsort(arr, kind="mergesort")
    inv = np.empty(sorter.size, dtype=np.intp)
    inv[sorter] = np.arange(sorter.size, dtype=np.intp)
    ordered = arr[sorter]
    obs = np.r_[True, ordered[1:] != ordered[:-1]]
    dense = obs.cumsum()[inv]
    count = np.r_[np.nonzero(obs)[0], len(obs)]
    return 0.5 * (count[dense] + count[dense - 1] + 1)


def spearmanr(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> TestResult:
    """Spearman's rho and its two-sided p-value (``scipy.stats.spearmanr``); NaN for constant input."""
    xa = np.asarray(x, dtype=float)
    ya = np.asarray(y, dtype=float)
    n = xa.size
    if n <= 1 or bool(np.all(xa == xa[0])) or bool(np.all(ya == ya[0])):
        return TestResult(math.nan, math.nan)
    if np.isnan(xa).any() or np.isnan(ya).any():
        return TestResult(math.nan, math.nan)
    rs = float(np.corrcoef(rankdata(xa), rankdata(ya))[1, 0])
    dof = n - 2
    with np.errstate(divide="ignore"):
        t = rs * float(np.sqrt(np.clip(np.float64(dof) / ((rs + 1.0) * (1.0 - np.float64(rs))), 0, None)))
    return TestResult(rs, t_sf2(t, dof) if dof > 0 else math.nan)


def binom_equal_counts(a: int, b: int) -> float:
    """Two-sided p-value that counts ``a`` and ``b`` over the same exposure come from one rate:
    the exact binomial test of ``a`` out of ``a + b`` against 1/2 (``scipy.stats.binomtest``'s
    two-sided p for p = 0.5, where the distribution is symmetric)."""
    a, b = int(a), int(b)
    n = a + b
    if n <= 0 or a == b:
        return 1.0
    k = min(a, b)
    # P(X <= k) for X ~ Binomial(n, 1/2) = I_{1/2}(n - k, k + 1)
    return min(1.0, 2.0 * betainc(n - k, k + 1, 0.5, 0.5))
