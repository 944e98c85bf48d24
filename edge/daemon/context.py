"""Context labels for ``stats``: the weather and the running promotion.

Sources per label: ``none``, ``static`` (a value in config) or ``file`` (a small file a feeder
script keeps current: one word, or JSON ``{"weather": "rain"}``; re-read when its mtime changes).
A new source kind implements :class:`LabelProvider`. Called by the workers for every event.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path
from typing import Protocol

from edge.config.daemon import ContextConfig

logger = logging.getLogger(__name__)


class LabelProvider(Protocol):
    def value(self) -> str | None: ...


class StaticLabel:
    def __init__(self, value: str | None) -> None:
        self._value = value

    def value(self) -> str | None:
        return self._value


class FileLabel:
    """Reads ``path`` (one word or a JSON object with ``key``); a missing file means no label."""

    def __init__(self, path: str, key: str) -> None:
        self.path = Path(path)
        self.key = key
        self._mtime: float | None = None
        self._value: str | None = None
        self._lock = threading.Lock()

    def value(self) -> str | None:
        with self._lock:
            try:
                mtime = os.stat(self.path).st_mtime
            except OSError:
                return None
            if mtime != self._mtime:
                self._mtime = mtime
                self._value = self._parse(self.path.read_text(encoding="utf-8").strip())
            return self._value

    def _parse(self, text: str) -> str | None:
        if text.startswith("{"):
            try:
                data = json.loads(text)
            except json.JSONDecodeError:
                logger.warning("%s: not valid JSON; no %s label", self.path, self.key)
                return None
            v = data.get(self.key)
            return str(v) if v not in (None, "") else None
        return text.split()[0] if text else None


class Context:
    def __init__(self, cfg: ContextConfig) -> None:
        self.providers: dict[str, LabelProvider] = {}
        for name in ("weather", "promotion"):
            kind = getattr(cfg, f"{name}_source")
            if kind == "static":
                self.providers[name] = StaticLabel(getattr(cfg, name))
            elif kind == "file":
                self.providers[name] = FileLabel(getattr(cfg, f"{name}_file"), name)

    def labels(self) -> dict[str, str]:
        out = {}
        for name, provider in self.providers.items():
            v = provider.value()
            if v:
                out[name] = v
        return out
