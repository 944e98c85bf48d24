"""The operator base class, what an operator returns, and the registry by intent.

Owns :class:`Operator` (the ABC every operator module subclasses), :class:`Context` (what the
engine hands an operator), :class:`Outcome` (what an operator hands back: result, the weakest
``n``, p-value, evidence groups), :func:`register` / :func:`get` / :func:`descriptors` (the
procedural memory: :mod:`edge.memory.semantic.procedures` persists the descriptors). Built-in operators are
named in :data:`BUILTIN_OPERATORS` and imported lazily, one module per intent asked for. Called by
:mod:`edge.analysis.engine`; adding an operator is registering a subclass, not editing the engine.
"""

from __future__ import annotations

import importlib
import logging
import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar

from edge.analysis import metrics as M
from edge.analysis.source import EventFilter, EventSource, Period
from edge.config import AnalysisConfig

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Context:
    """Everything an operator may use: the plan, the source, the resolved filter and settings."""

    plan: dict[str, Any]
    source: EventSource
    question: str
    now: datetime
    config: AnalysisConfig
    language: str
    timezone: str
    flt: EventFilter
    #: the values of the compared field the question named (the one asked about), not a group list
    asked: tuple[str, ...] = ()

    def rows(
        self,
        keys: Sequence[str],
        components: Sequence[str],
        flt: EventFilter | None = None,
        periods: Sequence[Period] = (),
    ) -> list[dict[str, Any]]:
        """One aggregation through the port, rows as dicts keyed by column name."""
        res = self.source.aggregate(flt if flt is not None else self.flt, keys, components, periods)
        return [dict(zip(res.columns, r, strict=True)) for r in res.rows]

    @property
    def metric(self) -> str | None:
        m = self.plan.get("target_metric")
        return str(m) if m else None


@dataclass(frozen=True)
class EvidenceSpec:
    """One group, bucket or anomaly whose representative events become evidence."""

    role: str
    flt: EventFilter
    weight: float = 1.0
    periods: tuple[Period, ...] = ()


@dataclass
class Outcome:
    """An operator's answer before the engine applies the honesty rules."""

    status: str  # "ok" | "insufficient_data" | "refused"
    result: dict[str, Any] = field(default_factory=dict)
    n: int = 0  # evidence behind the weakest part of the conclusion
    p_value: float | None = None
    evidence: list[EvidenceSpec] = field(default_factory=list)
    evidence_count: int = 0
    missing: list[str] = field(default_factory=list)
    summary: str | None = None  # for non-ok outcomes: the statement to make
    direct: list[tuple[str, str, float]] = field(default_factory=list)  # (event_id, role, weight)


class Operator(ABC):
    """One analysis method for one intent (CONTRACT.md section 3)."""

    name: ClassVar[str]
    intent: ClassVar[str]
    version: ClassVar[str] = "1.0"
    description: ClassVar[str]
    output_keys: ClassVar[tuple[str, ...]]
    #: minimum evidence, e.g. {"events_per_group": 30} or {"buckets": 8}; from the config at run time
    min_evidence: ClassVar[dict[str, str]] = {}
    default_params: ClassVar[dict[str, Any]] = {}
    confidence_method: ClassVar[str] = "n/(n+decay_base), n = weakest part; capped at 0.5 when p >= 0.05"
    templates: ClassVar[dict[str, str]] = {}
    #: the ``group_by`` keys the operator answers per group: None for any key, else those listed
    #: (none: it computes one answer over every group). The engine never answers ``ok`` on a
    #: grouping the operator did not make (:func:`edge.analysis.honesty.ungrouped`)
    group_keys: ClassVar[frozenset[str] | None] = frozenset()

    @abstractmethod
    def compute(self, ctx: Context) -> Outcome:
        """Compute the plan; never raises for thin data (returns insufficient_data)."""

    @abstractmethod
    def summarize(self, ctx: Context, result: Mapping[str, Any]) -> str:
        """One or two sentences in ``ctx.language``; every number taken from ``result``."""

    def as_run(self, plan: dict[str, Any]) -> dict[str, Any]:
        """``plan`` as :meth:`compute` runs it: a grouping it leaves to this operator's default
        (``default_params``: ``group_by``, ``dimension``) filled in, for the interpretation to say."""
        groups = self.default_params.get("group_by")
        if groups and not [g for g in plan.get("group_by") or [] if g != "period"]:
            return {**plan, "group_by": list(groups)}
        cmp = plan.get("compare") or {}
        dim = self.default_params.get("dimension")
        if dim and not (cmp.get("dimension") or cmp.get("periods") or plan.get("group_by")):
            return {**plan, "compare": {**cmp, "dimension": dim}}
        return plan

    def required_event_types(self) -> dict[str, list[str]]:
        """Per metric, the event types the operator needs (CONTRACT.md section 2)."""
        return {m: list(t) for m, t in M.METRIC_EVENT_TYPES.items()}

    def descriptor(self) -> dict[str, Any]:
        """What the procedural memory stores about this operator."""
        return {
            "name": self.name,
            "intent": self.intent,
            "version": self.version,
            "description": self.description,
            "output_keys": list(self.output_keys),
            "min_evidence": dict(self.min_evidence),
            "required_event_types": self.required_event_types(),
            "default_params": dict(self.default_params),
            "confidence_method": self.confidence_method,
            "templates": dict(self.templates),
        }


_REGISTRY: dict[str, Operator] = {}

#: intent -> ``module:Class`` of the built-in operators, in the order the procedural memory lists
#: them. Each is imported the first time its intent is asked for (:func:`get`), so answering a
#: question loads one operator module (and its statistics dependencies), not all of them.
BUILTIN_OPERATORS: dict[str, str] = {
    "retrieve": "edge.analysis.operators.retrieve:RetrieveOperator",
    "aggregate": "edge.analysis.operators.aggregate:AggregateOperator",
    "trend": "edge.analysis.operators.trend:TrendOperator",
    "compare": "edge.analysis.operators.compare:CompareOperator",
    "anomaly": "edge.analysis.operators.anomaly:AnomalyOperator",
    "periodicity": "edge.analysis.operators.periodicity:PeriodicityOperator",
    "co_occurrence": "edge.analysis.operators.co_occurrence:CoOccurrenceOperator",
    "breakdown": "edge.analysis.operators.breakdown:BreakdownOperator",
    "top_k": "edge.analysis.operators.top_k:TopKOperator",
    "correlation": "edge.analysis.operators.correlation:CorrelationOperator",
    "forecast": "edge.analysis.operators.forecast:ForecastOperator",
}


def register(op: Operator) -> Operator:
    """Register ``op`` as the operator of its intent (a later registration replaces it)."""
    _REGISTRY[op.intent] = op
    return op


def _load_builtin(intent: str) -> Operator | None:
    spec = BUILTIN_OPERATORS.get(intent)
    if spec is None:
        return None
    module_name, _, class_name = spec.partition(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    return _REGISTRY.setdefault(intent, cls())  # a registration made meanwhile wins


def get(intent: str) -> Operator | None:
    """The operator registered for ``intent`` (a built-in one is imported on first use)."""
    op = _REGISTRY.get(intent)
    return op if op is not None else _load_builtin(intent)


def load_builtins() -> None:
    """Import and register every built-in operator whose intent has none yet."""
    for intent in BUILTIN_OPERATORS:
        if intent not in _REGISTRY:
            _load_builtin(intent)


def registry() -> dict[str, Operator]:
    """intent -> operator: the built-in intents in their listed order, then any others."""
    load_builtins()
    ordered = {i: _REGISTRY[i] for i in BUILTIN_OPERATORS if i in _REGISTRY}
    ordered.update({i: op for i, op in _REGISTRY.items() if i not in ordered})
    return ordered


def descriptors() -> list[dict[str, Any]]:
    """Every registered operator's descriptor (imports every built-in operator)."""
    return [op.descriptor() for op in registry().values()]


# -- helpers shared by operators ---------------------------------------------------------------


def fmt(x: Any, digits: int = 2) -> str:
    """A number as the summary writes it (rounded, no thousands separators)."""
    if x is None:
        return "-"
    if isinstance(x, bool):
        return str(x).lower()
    if isinstance(x, int):
        return str(x)
    if isinstance(x, float):
        if math.isnan(x) or math.isinf(x):
            return "-"
        if x.is_integer() and abs(x) < 1e15:
            return str(int(x))
        if abs(x) < 1:
            return f"{x:.3g}"  # rates and shares keep three significant digits
        return f"{x:.{digits}f}".rstrip("0").rstrip(".")
    return str(x)


def fmt_p(p: float | None) -> str:
    """A p-value with two significant digits."""
    if p is None:
        return "-"
    return f"{p:.2g}"


def fmt_pct(x: float | None) -> str:
    """A signed percentage with one decimal."""
    if x is None:
        return "-"
    return f"{x:+.1f}%"


def key_text(v: Any) -> str:
    """A group key as text (booleans lower case)."""
    if isinstance(v, bool):
        return str(v).lower()
    return str(v)


#: readable names of boolean-like group values, per dimension and language
GROUP_LABELS: dict[str, dict[str, dict[str, str]]] = {
    "is_weekend": {
        "zh": {"true": "周末", "false": "工作日"},
        "en": {"true": "weekends", "false": "weekdays"},
    },
    "promotion": {
        "zh": {"true": "促销日", "false": "平日"},
        "en": {"true": "promotion days", "false": "normal days"},
    },
    "period": {"zh": {"before": "之前", "after": "之后"}, "en": {}},
}


def group_label(dimension: str | None, value: Any, lang: str) -> str:
    """A group key as the summary names it (``true`` on ``is_weekend`` -> weekends)."""
    text = key_text(value)
    return GROUP_LABELS.get(dimension or "", {}).get(lang, {}).get(text.lower(), text)


def same_key(a: Any, b: Any) -> bool:
    """Group values compare as text (``True`` == ``"true"``, ``19`` == ``"19"``)."""
    return key_text(a).lower() == key_text(b).lower()


def metric_types_filter(flt: EventFilter, metric: str | None) -> EventFilter:
    """``flt`` narrowed to the event types ``metric`` is about (for evidence)."""
    if not metric or flt.event_types:
        return flt
    types = M.METRIC_EVENT_TYPES.get(metric, ())
    return flt.narrowed(event_types=types) if types else flt


def insufficient(missing: Sequence[str]) -> Outcome:
    """An insufficient_data outcome saying what to collect."""
    return Outcome(status="insufficient_data", missing=list(missing))


def safe_float(x: Any) -> float | None:
    """``x`` as a finite float, else None (NaN from scipy on degenerate samples)."""
    if x is None:
        return None
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None
