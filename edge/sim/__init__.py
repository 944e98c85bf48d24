"""The store simulator: seeded MEV event streams with planted effects of known size.

Public API used by ``adamm demo``, ``scripts/bench_ask.py`` and the operator tests; see
:mod:`edge.sim.simulator` for what each effect means.
"""

from __future__ import annotations

from edge.sim.simulator import (
    Effects,
    SimConfig,
    anomaly_offsets,
    evening_peak,
    expected,
    promotion_by_day,
    simulate,
    simulate_jsonl,
    simulate_stores,
    training_day,
    weather_by_day,
)

__all__ = [
    "Effects",
    "SimConfig",
    "anomaly_offsets",
    "evening_peak",
    "expected",
    "promotion_by_day",
    "simulate",
    "simulate_jsonl",
    "simulate_stores",
    "training_day",
    "weather_by_day",
]
