"""The rules of actions that need no store: roles, ids, what a weak answer is.

Pure (no memory, no I/O), so the TUI (and the HQ console built on it) and the hub use the same
rules as the store's action use cases (:mod:`edge.services.actions`).
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from edge.errors import UsageError

#: the role an action goes to when the payload's action names none
DEFAULT_ROLE = "store_manager"
#: a role is one MQTT topic level (``adamm/v1/{store}/action/{role}/{action_id}``)
ROLE_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")
#: an answer below this confidence is weak (CONTRACT.md section 4: low_confidence < 0.5)
LOW_CONFIDENCE = 0.5


def action_id_for(store_id: str, action: dict[str, Any], role: str, generation: int = 0) -> str:
    """The stable id of ``action`` for ``role`` at ``store_id`` (a SHA-256 hex digest); a later
    ``generation`` is the same action sent again after the earlier one closed."""
    parts: list[Any] = ["action", store_id, action.get("type"), role, action.get("params") or {}]
    if generation:
        parts.append(generation)
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def check_role(role: str) -> str:
    """``role`` when it can name a topic level, else a usage error."""
    if not ROLE_PATTERN.match(role or ""):
        raise UsageError(
            f"role {role!r} is not usable: letters, digits, _ . : - (it names the MQTT topic the devices read)"
        )
    return role


def answer_is_weak(payload: dict[str, Any]) -> str | None:
    """Why an answer must not be pushed without the manager's confirmation (None when it may)."""
    if payload.get("status") != "ok":
        return f"the answer is {payload.get('status')!r}, not ok"
    if payload.get("low_confidence") or float(payload.get("confidence") or 0.0) < LOW_CONFIDENCE:
        return f"the answer's confidence is low ({float(payload.get('confidence') or 0.0):.2f})"
    return None


def default_role(payload: dict[str, Any]) -> str:
    """The role the payload's action is meant for (its ``params.role``), else ``store_manager``."""
    action = payload.get("action")
    params = action.get("params") if isinstance(action, dict) else None
    role = params.get("role") if isinstance(params, dict) else None
    return str(role) if role else DEFAULT_ROLE


def action_summary(payload: dict[str, Any]) -> str:
    """What a staff device shows of an answer: how the question was read (the payload's
    ``interpretation``, CONTRACT.md section 4) before the answer itself."""
    summary = str(payload.get("summary", ""))
    reading = payload.get("interpretation")
    text = str(reading.get("text") or "") if isinstance(reading, dict) else ""
    if not text:
        return summary
    zh = (
        (payload.get("plan") or {}).get("language") == "zh"
        if isinstance(payload.get("plan"), dict)
        else False
    )
    return f"{text}{summary}" if zh else f"{text} {summary}"
