"""adamm hub: receives store summaries over MQTT and runs cross-store analysis.

``db`` (the hub store: SQLite or PostgreSQL), ``ingest`` (validate, park, highest version per
key), ``transport`` (the MQTT 5 link), ``serve``, ``status``, ``source`` (the engine's source port
over the daily rollups) and ``ask`` (the pure engine of ``edge.analysis`` over it). The hub imports
nothing of a store's insides (import-linter). ``adamm-hub console`` is not built yet.
"""
