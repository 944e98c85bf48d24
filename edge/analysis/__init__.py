"""The pure analysis engine: question -> plan -> operator -> payload.

No I/O lives here (import-linter enforces it): events come through the
:class:`edge.analysis.source.EventSource` port, text vectors through a callable.
"""
