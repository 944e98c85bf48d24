"""Stream segmentation into multimodal events (pure: numpy arrays and dataclasses in, events out).

- :mod:`.frames`: per-frame statistics (histogram, scene-change score, black/blur/frozen quality).
- :mod:`.video`: cuts a camera's sampled frames into scenes (scene change, black stretch, maximum
  duration) and keeps the most informative keyframes.
- :mod:`.speech`: turns per-frame VAD decisions into speech segments (padding, max length) and
  scores noise-only audio.
- :mod:`.merge`: near-duplicate merging (same source, time window, cosine threshold).
- :mod:`.mev`: builds MEV dicts (mev.schema.json) binding frames, audio and stats to one event_id.

No capture, storage, model-runtime or network imports (import-linter contract); called by the
daemon's workers (:mod:`edge.daemon.workers`) and by tests.
"""
