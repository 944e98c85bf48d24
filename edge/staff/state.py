"""The staff device's local state: which actions it has shown and how it acknowledged them.

A JSON file, by default ``$XDG_STATE_HOME/adamm/staff-{store}-{role}.json`` (``XDG_STATE_HOME``
defaults to ``~/.local/state``; ``adamm-staff --state FILE`` overrides it)::

    {"actions": {"<action_id>": {"shown_at": ISO, "ack": "done"|null, "by": ..., "at": ISO|null}}}

The device de-duplicates by ``action_id`` with it: an action that arrives again (an issuer's
re-send, a broker's redelivery) is not shown again; when it was acknowledged, the same ack is sent
again (harmless at the issuer, whose acks are idempotent, and it heals an ack that was lost).
Written atomically (a crash leaves the previous file).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from edge.errors import EnvironmentProblem


def default_path(store_id: str, role: str) -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "adamm" / f"staff-{store_id}-{role}.json"


class StaffState:
    """The actions a device has shown and acknowledged, kept in one JSON file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.actions: dict[str, dict[str, Any]] = {}
        if path.exists():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                found = data.get("actions") if isinstance(data, dict) else None
                if not isinstance(found, dict):
                    raise ValueError("no actions object")
                self.actions = {str(k): v for k, v in found.items() if isinstance(v, dict)}
            except (OSError, ValueError) as exc:
                raise EnvironmentProblem(
                    f"the staff state file {path} cannot be read ({exc})",
                    hint="move it away (the device then shows every open action again) or pass --state",
                ) from None

    def get(self, action_id: str) -> dict[str, Any] | None:
        return self.actions.get(action_id)

    def shown(self, action_id: str, at: str) -> None:
        self.actions.setdefault(action_id, {"shown_at": at, "ack": None, "by": None, "at": None})
        self.save()

    def acked(self, action_id: str, state: str, by: str, at: str) -> None:
        entry = self.actions.setdefault(action_id, {"shown_at": at})
        entry.update({"ack": state, "by": by, "at": at})
        self.save()

    def save(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(self.path.name + ".tmp")
            tmp.write_text(
                json.dumps({"actions": self.actions}, ensure_ascii=False, indent=1), encoding="utf-8"
            )
            os.replace(tmp, self.path)
        except OSError as exc:
            raise EnvironmentProblem(
                f"the staff state file {self.path} cannot be written ({exc})", hint="pass --state FILE"
            ) from None
