"""Semantic records of a memory, as repositories without labels: facts, actions, component
status, single events and the status counts (storage tiers, outbox).

Reads take a reader connection (``Store.read()``); writes go through ``store.writer.submit`` (the
single writer). Nothing here words anything for a person: a status is a code and an age, and
:mod:`edge.presentation` turns it into a sentence. Used by :mod:`edge.services` (the console
backend, proposing actions) and the daemon (component heartbeats).
"""
