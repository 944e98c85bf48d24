"""adamm edge: the per-store process (capture, encoders, memory store, analysis engine, sync, TUI).

Sub-packages:
- ``edge.memory``: the SQLite + sqlite-vec store (episodic, semantic and procedural memory).
- ``edge.analysis``: the pure analysis engine (question -> plan -> operator -> payload).
- ``edge.encoders``: ONNX Runtime encoders behind one interface and a registry.
- ``edge.cli``: the thin ``adamm`` command line.
"""

__version__ = "0.1.0"
