"""Semantic facts (the ``facts`` table): listing them. Facts are written by maintenance, never
by asking (CONTRACT.md section 1)."""

from __future__ import annotations

from typing import Any

import apsw

from edge.memory.semantic._sql import rows


def list_facts(conn: apsw.Connection, limit: int = 200) -> list[dict[str, Any]]:
    """Semantic facts, most recently updated first."""
    return rows(conn, "SELECT * FROM facts ORDER BY updated_at DESC LIMIT ?", (limit,))
