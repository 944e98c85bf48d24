"""Retrieval: hybrid ranking (:mod:`.retrieval`), the hot vector matrix (:mod:`.vector_index`) and
ranking-weight tuning (:mod:`.tune`)."""
