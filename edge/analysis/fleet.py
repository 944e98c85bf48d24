"""Does a finding hold in every store: the statistics of the fleet check (CONTRACT.md section 7).

Owned by :mod:`edge.analysis`; used by the hub's fleet check (:mod:`hub.fleet`), which runs one
comparison per store and kind of fact through the engine and hands the results here. Pure:

- :func:`se_from_p`: a relative effect's standard error from its two-sided p-value (the test the
  operator ran; normal approximation), so stores tested by different tests pool on one scale;
- :func:`bh_adjust`: Benjamini-Hochberg adjusted p-values (``scipy.stats.false_discovery_control``)
  over every store and kind tested, before anything is called a finding;
- :func:`random_effects`: the DerSimonian-Laird pooled estimate with its 95% interval, tau^2 and
  the heterogeneity I^2;
- :func:`verdict`: holds / reversed / null / thin for one store.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

#: two-sided 95% normal quantile
Z95 = 1.959963984540054
#: the false discovery rate the fleet check controls
FDR = 0.05


def se_from_p(effect: float, p_value: float) -> float | None:
    """The standard error that gives ``effect`` the two-sided ``p_value`` under a normal test;
    None where it is undefined (no effect, or p = 1)."""
    from scipy.stats import norm

    if not math.isfinite(effect) or effect == 0 or not (0.0 < p_value < 1.0):
        if effect != 0 and p_value == 0.0:
            return abs(effect) / 8.0  # beyond any float p: an effect 8 SE from zero
        return None
    z = float(norm.isf(p_value / 2.0))
    return abs(effect) / z if z > 0 else None


def interval(effect: float, se: float | None) -> list[float] | None:
    """The 95% interval ``effect +- 1.96 se`` (None without an se), never below -1: the effects
    here are relative changes and correlations, neither of which goes below -100% / -1."""
    if se is None:
        return None
    return [max(-1.0, effect - Z95 * se), effect + Z95 * se]


def bh_adjust(p_values: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values, in the order given."""
    if not p_values:
        return []
    from scipy.stats import false_discovery_control

    return [float(x) for x in false_discovery_control(list(p_values), method="bh")]


@dataclass(frozen=True)
class Pooled:
    """A random-effects pooled estimate (DerSimonian-Laird)."""

    effect: float
    ci: list[float]
    i2: float  # 0..1
    tau2: float
    k: int


def random_effects(effects: Sequence[float], ses: Sequence[float]) -> Pooled | None:
    """The DerSimonian-Laird pooled effect of ``effects`` with standard errors ``ses`` (None with
    fewer than two studies or a zero se)."""
    k = len(effects)
    if k < 2 or len(ses) != k or any(not (s > 0) for s in ses):
        return None
    w = [1.0 / (s * s) for s in ses]
    sw = sum(w)
    fixed = sum(wi * e for wi, e in zip(w, effects, strict=True)) / sw
    q = sum(wi * (e - fixed) ** 2 for wi, e in zip(w, effects, strict=True))
    df = k - 1
    c = sw - sum(wi * wi for wi in w) / sw
    tau2 = max(0.0, (q - df) / c) if c > 0 else 0.0
    w_star = [1.0 / (s * s + tau2) for s in ses]
    sws = sum(w_star)
    pooled = sum(wi * e for wi, e in zip(w_star, effects, strict=True)) / sws
    se = math.sqrt(1.0 / sws)
    i2 = max(0.0, (q - df) / q) if q > 0 else 0.0
    return Pooled(pooled, [pooled - Z95 * se, pooled + Z95 * se], i2, tau2, k)


def verdict(effect: float | None, p_adjusted: float | None, direction: int, *, thin: bool) -> str:
    """``thin`` (too little data to test), ``holds`` (significant after the FDR control, the
    learned direction), ``reversed`` (significant, the other way) or ``null``."""
    if thin or effect is None or p_adjusted is None:
        return "thin"
    if p_adjusted < FDR and effect != 0:
        return "holds" if (effect > 0) == (direction > 0) else "reversed"
    return "null"
