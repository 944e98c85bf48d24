"""The project's copies of the contract (docs/CONTRACT.md) and its schemas (edge/schemas) are
identical to the shared spec when it is present (``../shared/spec`` beside the checkout); without
it the repository's own copies are the contract."""

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


def test_the_project_carries_the_contract() -> None:
    text = (ROOT / "docs" / "CONTRACT.md").read_text(encoding="utf-8")
    assert text.startswith("# adamm interface contract") and "## 1. Commands" in text
    for name in ("mev.schema.json", "plan.schema.json", "payload.schema.json"):
        assert name in text


def test_contract_copy_is_identical_to_the_shared_spec() -> None:
    shared = SHARED / "CONTRACT.md"
    if not shared.exists():
        pytest.skip(f"{shared} is not here (outside the development workspace)")
    ours = (ROOT / "docs" / "CONTRACT.md").read_bytes()
    assert ours == shared.read_bytes(), f"docs/CONTRACT.md differs from {shared}: copy it over"
