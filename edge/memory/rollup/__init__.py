"""The rollup, the record of closed days: maintenance and day states (:mod:`.build`) and the
table-agnostic query compiler (:mod:`.query`) that the rollup source (and later the hub) uses."""
