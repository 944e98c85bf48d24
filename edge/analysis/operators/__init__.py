"""The operators, one module per intent, behind :class:`~edge.analysis.operators.base.Operator`.

Importing this package registers every built-in operator (:func:`registry_ready`); the engine
looks operators up by intent through :mod:`edge.analysis.operators.base`.
"""

from __future__ import annotations

from edge.analysis.operators.aggregate import AggregateOperator
from edge.analysis.operators.anomaly import AnomalyOperator
from edge.analysis.operators.base import Operator, descriptors, get, register, registry
from edge.analysis.operators.breakdown import BreakdownOperator
from edge.analysis.operators.co_occurrence import CoOccurrenceOperator
from edge.analysis.operators.compare import CompareOperator
from edge.analysis.operators.correlation import CorrelationOperator
from edge.analysis.operators.forecast import ForecastOperator
from edge.analysis.operators.periodicity import PeriodicityOperator
from edge.analysis.operators.retrieve import RetrieveOperator
from edge.analysis.operators.top_k import TopKOperator
from edge.analysis.operators.trend import TrendOperator

BUILTIN: tuple[type[Operator], ...] = (
    RetrieveOperator,
    AggregateOperator,
    TrendOperator,
    CompareOperator,
    AnomalyOperator,
    PeriodicityOperator,
    CoOccurrenceOperator,
    BreakdownOperator,
    TopKOperator,
    CorrelationOperator,
    ForecastOperator,
)


def registry_ready() -> None:
    """Register the built-in operators for intents that have none yet."""
    for cls in BUILTIN:
        if get(cls.intent) is None:
            register(cls())


registry_ready()

__all__ = ["BUILTIN", "Operator", "descriptors", "get", "register", "registry", "registry_ready"]
