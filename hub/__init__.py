"""adamm hub: receives store summaries over MQTT and runs cross-store analysis.

``db`` (the hub store: SQLite or PostgreSQL), ``ingest`` (validate, park, highest version per
key), ``serve`` (over the one MQTT client, :mod:`edge.sync.mqtt`: MQTT 5, or 3.1.1 where the broker
speaks only that), ``status``, ``source`` (the engine's source port over the daily rollups), ``ask``
(the pure engine of ``edge.analysis`` over it), ``actions`` (hub-issued actions to staff devices),
``broker_setup`` (the locked-down Mosquitto) and ``console`` (the HQ console on the store's TUI).
The hub imports nothing of a store's insides (import-linter).
"""
