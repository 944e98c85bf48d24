"""The project's schema copies (edge/schemas) are identical to the shared spec when it is present."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "spec"
NAMES = sorted(p.name for p in (ROOT / "edge" / "schemas").glob("*.json"))


def test_the_project_carries_every_schema() -> None:
    assert {"mev.schema.json", "plan.schema.json", "payload.schema.json"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_schema_copy_is_identical_to_the_shared_spec(name: str) -> None:
    shared = SHARED / name
    if not shared.exists():
        pytest.skip(f"{shared} is not here (outside the development workspace)")
    ours = (ROOT / "edge" / "schemas" / name).read_bytes()
    assert ours == shared.read_bytes(), f"edge/schemas/{name} differs from {shared}: copy it over"
    json.loads(ours)
