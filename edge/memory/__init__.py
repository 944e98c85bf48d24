"""The store's memory: one SQLite file (apsw + sqlite-vec) per store.

Rooms, one job each: :mod:`.store` (lifecycle: open/close, readers, the writer, zones, import),
:mod:`.db` (connections, migrations, the single writer), :mod:`.ingest` (MEV validation, event rows),
:mod:`.query` (filters, rows, the events and rollup sources), :mod:`.rollup` (the record of closed
days and its query compiler), :mod:`.search` (retrieval, vector index, tuning), :mod:`.semantic`
(facts, actions, components, procedures, status), :mod:`.caches` (start-up caches) and
:mod:`.integrity` (``adamm check``). Arrows point inward: nothing here imports a UI.
"""
