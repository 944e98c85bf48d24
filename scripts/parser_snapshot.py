"""A golden snapshot of the question parser's output, for refactors that must not change it.

Parses every question of the public sample, the development sets, the exemplar bank and the
question strings of the parser's tests (never a held-out set) against two vocabularies (the
simulator's and a second world's: other ids, German values, Europe/Berlin) with the rules alone
and with the text encoder, and writes one JSON line per (question, world, backend)::

    python3 scripts/parser_snapshot.py before.jsonl      # on the old code
    python3 scripts/parser_snapshot.py after.jsonl       # on the new code
    python3 scripts/parser_snapshot.py --diff before.jsonl after.jsonl

``--diff`` prints each question whose result changed and exits 1 if any did (questions in only
one snapshot, from edited tests, are counted apart). Progress and
timings go to stderr.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

NOW = datetime(2025, 12, 15, 10, 0)
_TEST_FILES = ("test_parser*.py", "test_honest*.py", "test_dev_questions.py", "test_cli_ask.py")
_QUESTIONISH = re.compile(
    r"[\u4e00-\u9fff]|\?|^(what|which|how|is|are|did|does|do|show|when|who|rank|compare)\b", re.I
)


def _jsonl_questions(path: Path) -> list[str]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            q = row.get("question") or row.get("q") or row.get("text")
            if isinstance(q, str):
                out.append(q)
    return out


def _test_strings(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            s = node.value.strip()
            if 4 <= len(s) <= 160 and "\n" not in s and _QUESTIONISH.search(s):
                out.append(s)
    return out


def questions() -> list[str]:
    files = [
        ROOT.parent / "shared" / "eval" / "questions_public.jsonl",
        ROOT / "edge/analysis/parser/exemplars.jsonl",
    ]
    files += sorted((ROOT / "tests/data").glob("dev*/*.jsonl"))
    seen: dict[str, None] = {}
    for f in files:
        if f.exists():
            seen.update(dict.fromkeys(_jsonl_questions(f)))
    for pattern in _TEST_FILES:
        for f in sorted((ROOT / "tests").glob(pattern)):
            seen.update(dict.fromkeys(_test_strings(f)))
    return list(seen)


def _world2_vocab() -> Any:
    """The second test world's vocabulary (``tests/world2.py``: other ids, German values, Berlin)."""
    sys.path.insert(0, str(ROOT / "tests"))
    import world2

    return world2.vocabulary()


def _row(res: Any) -> dict[str, Any]:
    return {
        "status": res.status,
        "plan": res.plan,
        "explanation": res.explanation,
        "not_understood": list(res.not_understood),
        "read_as": [list(p) for p in res.read_as],
        "matches": [[m.phrase, m.key, m.value, m.method, round(m.score, 4)] for m in res.matches],
    }


def snapshot(out: Path) -> None:
    import numpy as np

    from edge.analysis.parser import parse_question
    from edge.config import EncoderConfig
    from edge.encoders.base import create
    from edge.sim.catalog import VOCABULARY

    enc = create(EncoderConfig().text, providers=["CPUExecutionProvider"])

    def embed(texts: Any) -> Any:
        return np.asarray(enc.encode(list(texts)), dtype=np.float32)

    qs = questions()
    worlds = {"sim": VOCABULARY, "world2": _world2_vocab()}
    t0 = time.monotonic()
    with out.open("w", encoding="utf-8") as fh:
        for i, q in enumerate(qs):
            for wname, vocab in worlds.items():
                for backend, emb in (("rules", None), ("encoder", embed)):
                    row = {"q": q, "world": wname, "backend": backend}
                    row.update(_row(parse_question(q, vocab, NOW, embed=emb)))
                    fh.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
            if i % 250 == 0:
                print(f"{i}/{len(qs)} questions, {time.monotonic() - t0:.1f} s", file=sys.stderr)
    print(
        f"{len(qs)} questions x 2 worlds x 2 backends -> {out} ({time.monotonic() - t0:.1f} s)",
        file=sys.stderr,
    )


def diff(a: Path, b: Path) -> int:
    def load(p: Path) -> dict[tuple[str, str, str], dict[str, Any]]:
        rows = {}
        for line in p.read_text(encoding="utf-8").splitlines():
            r = json.loads(line)
            rows[(r["q"], r["world"], r["backend"])] = r
        return rows

    ra, rb = load(a), load(b)
    changed = 0
    for key in sorted(set(ra) & set(rb)):
        x, y = ra[key], rb[key]
        if x != y:
            changed += 1
            print(f"== {key[0]!r} [{key[1]}/{key[2]}]")
            for field in sorted(set(x) | set(y)):
                if x.get(field) != y.get(field):
                    print(f"  {field}:\n    - {json.dumps(x.get(field), ensure_ascii=False)}")
                    print(f"    + {json.dumps(y.get(field), ensure_ascii=False)}")
    only_a, only_b = len(set(ra) - set(rb)), len(set(rb) - set(ra))
    print(
        f"{changed} of {len(set(ra) & set(rb))} results changed"
        f" ({only_a} only before, {only_b} only after: questions added or removed)",
        file=sys.stderr,
    )
    return 1 if changed else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", nargs="?", type=Path, help="where to write the snapshot (JSON lines)")
    ap.add_argument("--diff", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = ap.parse_args()
    if args.diff:
        return diff(*args.diff)
    if args.out is None:
        ap.error("give a file to write, or --diff BEFORE AFTER")
    snapshot(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
