"""Capture: camera and microphone sources behind one interface for live devices and files.

- :mod:`.base`: the :class:`~edge.capture.base.CaptureSource` thread base (stop event, bounded
  output queue with drop counters, status for heartbeats) and the end-of-stream marker.
- :mod:`.video`: OpenCV ``VideoCapture`` per camera (file, USB index, RTSP/HTTP with reconnect and
  backoff) with 1 fps baseline sampling and scene-change bursts.
- :mod:`.audio`: a ``.wav`` file or a sounddevice ``InputStream`` (16 kHz mono), webrtcvad on
  30 ms frames, speech segments of at most 30 s.

Started by :class:`edge.daemon.app.AdammDaemon`; consumed by the daemon's workers.
"""
