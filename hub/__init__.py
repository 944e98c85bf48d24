"""adamm hub: receives store summaries over MQTT and runs cross-store analysis.

The hub reuses the pure analysis engine (``edge.analysis``). Its ingest, store and console are
built by the hub issue; until then ``adamm-hub`` says so instead of pretending.
"""
