"""The operators, one module per intent, behind :class:`~edge.analysis.operators.base.Operator`.

The built-in operators are listed in :data:`~edge.analysis.operators.base.BUILTIN_OPERATORS` and
imported on first use: :func:`get` loads the one module of the intent asked for (so ``adamm ask``
does not import every operator's statistics dependencies), :func:`registry` and
:func:`descriptors` (the procedural memory) load them all.
"""

from __future__ import annotations

from edge.analysis.operators.base import (
    BUILTIN_OPERATORS,
    Operator,
    descriptors,
    get,
    load_builtins,
    register,
    registry,
)

__all__ = [
    "BUILTIN_OPERATORS",
    "Operator",
    "descriptors",
    "get",
    "load_builtins",
    "register",
    "registry",
]
