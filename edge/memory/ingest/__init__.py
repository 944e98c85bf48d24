"""Import: MEV validation (:mod:`.mev`) and building the rows of one event (:mod:`.build`); the
batching pipeline itself is :meth:`edge.memory.store.Store.import_lines`."""
