"""Hot, warm and cold tiers of a memory (CONTRACT.md section 6): what ``adamm maintain`` moves down
by age, what ``adamm restore`` brings back and what ``adamm check`` verifies.

- hot: everything, float32 vectors in the vec0 tables;
- warm (older than ``[tiers] warm_after_days``): vectors quantized to int8 with a per-vector
  scale (``vec_*_warm``; the vector index reads them dequantized, so search still covers them),
  media files moved to the warm folder with ``raw_ref`` updated, and the event written to the
  archive (while its float32 vectors and its imported ``raw_ref`` are still there);
- cold (store-local days older than ``cold_after_days``): the days are closed in the rollup
  (:func:`edge.memory.rollup.build.close_days`: their rollup rows are the record) and their events
  deleted from the events tables; the archive holds them.

Modules: :mod:`.records` (an event's rows back into its MEV as imported), :mod:`.archive` (the
gzip JSON Lines files, one per store-month, and their index), :mod:`.steps` (the warm and cold
steps, one transaction per batch, resumable after a SIGKILL at any point), :mod:`.restore`,
:mod:`.state` (tier boundaries, the tiers a time range reaches, tier sizes) and :mod:`.check`.
The use case that runs the steps is :mod:`edge.services.maintain`.
"""

from edge.memory.tiers.state import TierSizes, archive_only_count, late_not_counted, tier_sizes, tiers_for

__all__ = ["TierSizes", "archive_only_count", "late_not_counted", "tier_sizes", "tiers_for"]
