"""The edge daemon (``adamm run``): cameras and microphones in, MEV events into the store's memory.

- the typed daemon configuration (``DaemonConfig``) lives in :mod:`edge.config`.
- :mod:`.app`: :class:`~edge.daemon.app.AdammDaemon`, the one composition root.
- :mod:`.workers`: per-modality worker threads (video, audio), the event writer, the heartbeat.
- :mod:`.media`: keyframe JPEGs and WAV segments under ``media_dir`` (the events' ``raw_ref``).
- :mod:`.context`: weather and promotion labels from static values or files.
- the POS drop folder reader (``purchase`` events) lives in :mod:`edge.capture.pos`.
"""
