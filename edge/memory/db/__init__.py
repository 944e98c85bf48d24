"""The database: connections (:mod:`.connect`), named migrations (:mod:`.migrations`) and the single
writer thread (:mod:`.writer`)."""
