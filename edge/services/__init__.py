"""Use cases over a memory, shared by every front end (CLI, TUI, demo, daemon, later the hub).

- :mod:`.ask`: a question (or a plan) into a payload: parser, source, engine, configured once.
- :mod:`.actions`: proposing an answer's action as a pending action of the store.
- :mod:`.console`: the store manager's console backend (what the TUI talks to).
"""
