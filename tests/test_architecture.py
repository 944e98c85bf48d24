"""Architecture guards: the pure core stays pure, every command is documented and answers --help,
the CONTRACT's command list matches what ``adamm`` registers (with the gaps named), and the
import-linter contracts hold."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from edge.cli import COMMANDS, build_parser

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("textual", "cv2", "onnxruntime", "paho", "apsw", "sqlite_vec", "sounddevice")


#: what the engine may load from edge outside edge.analysis: the config models and the errors
ENGINE_MAY_LOAD = ("edge.errors", "edge.config")

#: CONTRACT.md section 1 commands not built yet; the test fails when one of them lands (remove it here)
EXPECTED_GAPS = {
    "adamm": set(),
    "adamm-hub": set(),
    "adamm-staff": set(),
}


def _loaded_by(code: str) -> dict[str, list[str]]:
    probe = (
        f"{code}\n"
        "import json, sys\n"
        f"print(json.dumps({{'edge': sorted(m for m in sys.modules if m.split('.')[0] == 'edge'), "
        f"'heavy': [m for m in {HEAVY!r} if m in sys.modules]}}))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT)
    loaded: dict[str, list[str]] = json.loads(out.stdout.strip().splitlines()[-1])
    return loaded


@pytest.mark.parametrize("module", ["edge.analysis.source", "edge.analysis"])
def test_importing_the_pure_core_loads_no_io_or_ui_library(module: str) -> None:
    loaded = _loaded_by(f"import importlib; importlib.import_module({module!r})")
    assert loaded["heavy"] == [], f"{module} pulled in {loaded['heavy']}"


def test_the_engine_parser_and_every_operator_load_only_config_and_errors_from_edge() -> None:
    loaded = _loaded_by(
        "import edge.analysis.engine, edge.analysis.parser\n"
        "from edge.analysis.operators import base\n"
        "base.load_builtins()\n"
        "assert base.registry(), 'no operator registered'"
    )
    assert "edge.analysis.engine" in loaded["edge"] and "edge.analysis.parser" in loaded["edge"]
    operators = [m for m in loaded["edge"] if m.startswith("edge.analysis.operators.")]
    assert len(operators) > 3, operators
    outside = [
        m
        for m in loaded["edge"]
        if m != "edge"
        and not any(m == ok or m.startswith(ok + ".") for ok in ("edge.analysis", *ENGINE_MAY_LOAD))
    ]
    assert outside == [], f"the engine loaded {outside}"
    assert loaded["heavy"] == [], f"the engine pulled in {loaded['heavy']}"


def _contract() -> Path:
    """The repository's copy of the contract (tests/test_schema_copies.py keeps it equal to the
    shared spec when that is beside the checkout)."""
    return ROOT / "docs" / "CONTRACT.md"


def _contract_commands() -> dict[str, set[str]]:
    """program -> its sub-commands, from the command tables of CONTRACT.md section 1."""
    text = _contract().read_text(encoding="utf-8")
    section = text.split("\n## 1.", 1)[1].split("\n## 2.", 1)[0]
    found: dict[str, set[str]] = {}
    for m in re.finditer(r"^\| `(adamm(?:-[a-z]+)?)((?: [a-z][a-z-]*)?)", section, re.MULTILINE):
        found.setdefault(m.group(1), set()).add(m.group(2).strip())
    return found


def test_the_contract_command_list_is_registered_but_for_the_named_gaps() -> None:
    contract = _contract_commands()
    assert set(contract) == {"adamm", "adamm-hub", "adamm-staff"}, contract
    assert {"import", "ask", "search", "demo", "run", "tui", "check"} <= contract["adamm"]
    for program, gaps in EXPECTED_GAPS.items():
        assert gaps <= contract[program], f"{program}: gaps not in CONTRACT.md: {gaps - contract[program]}"
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    registered = set(sub.choices)  # type: ignore[attr-defined]
    missing = contract["adamm"] - registered - EXPECTED_GAPS["adamm"]
    assert not missing, f"CONTRACT.md commands not registered by adamm: {sorted(missing)}"
    landed = EXPECTED_GAPS["adamm"] & registered
    assert not landed, f"adamm {sorted(landed)} now exist: remove them from EXPECTED_GAPS"
    # the hub registers placeholders that say so; a real command landing closes its gap
    from hub.cli import HUB_COMMANDS

    for name in sorted(contract["adamm-hub"]):
        out = subprocess.run(
            [sys.executable, "-c", f"import sys; from hub.cli import main; sys.exit(main([{name!r}]))"],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        built = name in HUB_COMMANDS and "not built yet" not in out.stderr
        assert built is not (name in EXPECTED_GAPS["adamm-hub"]), (
            f"adamm-hub {name}: built={built}; keep EXPECTED_GAPS in step with the hub"
        )
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert ("adamm-staff" in pyproject) is not ("" in EXPECTED_GAPS["adamm-staff"]), (
        "adamm-staff's console script landed: remove it from EXPECTED_GAPS"
    )


def test_every_registered_command_has_help_and_is_in_the_reference() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    reference = (ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
    registered = set(sub.choices)  # type: ignore[attr-defined]
    assert registered, "no sub-command registered"
    assert registered <= set(COMMANDS)
    for name in registered:
        assert f"adamm {name}" in reference, f"`adamm {name}` is not documented in docs/reference.md"
        out = subprocess.run(
            [sys.executable, "-m", "edge", name, "--help"], capture_output=True, text=True, cwd=ROOT
        )
        assert out.returncode == 0, out.stderr
        assert "usage:" in out.stdout


def test_import_contracts_hold() -> None:
    out = subprocess.run(["lint-imports"], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr


def test_no_import_cycles() -> None:
    """No module of edge/ or hub/ reaches itself through imports (lazy ones included): a cycle
    hidden behind a function-level import is still a cycle (the old retrieval <-> source_sql)."""
    import grimp

    graph = grimp.build_graph("edge", "hub")
    ours = {m for m in graph.modules if m.split(".")[0] in ("edge", "hub")}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.find_modules_directly_imported_by(v) & ours:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for m in sorted(ours):
        if m not in index:
            visit(m)
    assert cycles == []


def test_the_shared_vocabulary_is_the_contracts() -> None:
    """edge.contract (the one copy the memory, the sync messages and the hub use) says what
    CONTRACT.md and payload.schema.json say: the fact fields in order, the ack states, the
    action fields and types."""
    from edge import contract

    text = _contract().read_text(encoding="utf-8")
    section6 = text[text.index("## 6.") :]
    fact = section6[section6.index('`{"fact_id"') : section6.index("}`", section6.index('`{"fact_id"'))]
    top_level = re.sub(r"\{[^{}]*\}", "", fact[2:])  # without the nested statement's {"zh", "en"}
    assert tuple(re.findall(r'"(\w+)"', top_level)) == contract.FACT_FIELDS
    ack_row = next(line for line in text.splitlines() if line.startswith("| `adamm/v1/{store_id}/ack/"))
    assert tuple(re.findall(r'"(accepted|done|rejected)"', ack_row)) == contract.ACK_STATES
    action_row = next(line for line in text.splitlines() if line.startswith("| `adamm/v1/{store_id}/action/"))
    assert tuple(re.findall(r'"(\w+)"', action_row)) == contract.ACTION_FIELDS
    schema = json.loads((ROOT / "edge" / "schemas" / "payload.schema.json").read_text(encoding="utf-8"))
    action = next(o for o in schema["properties"]["action"]["oneOf"] if o.get("type") == "object")
    assert tuple(action["properties"]["type"]["enum"]) == contract.ACTION_TYPES
    assert set(contract.ACK_RANK) == set(contract.ACTION_STATES) - {"expired"}
    assert set(contract.OPEN_STATES) | set(contract.FINAL_STATES) | {"accepted"} == set(
        contract.ACTION_STATES
    )
