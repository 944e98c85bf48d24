#!/usr/bin/env python3
"""Write the exemplar bank's intent texts ahead (``edge/analysis/parser/exemplars_intent.json``),
and the digest of the lexicon checked whole (``edge/analysis/parser/lexicon.checked``).

The exemplar classifier embeds each train question twice: as written, and with its metric words
cut out (:func:`edge.analysis.parser.exemplars.intent_text`). Masking some 800 questions costs a
new ``adamm ask`` process about 0.1 s, so the texts ship with the bank, keyed by the lexicon's
metric words; a process whose metric words differ masks them itself. Run this after changing the
metric words of the lexicon, the masking, or the bank (``tests/test_parser_exemplars.py`` fails
until then). A process also skips compiling the word tables of a lexicon file checked whole
ahead (:data:`edge.analysis.parser.lexicon.CHECKED`): run this after any change to
``lexicon.toml`` (``tests/test_word_tables.py`` fails until then).

Usage: ``python3 scripts/refresh_exemplars.py``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from edge.analysis.parser import lexicon  # noqa: E402
from edge.analysis.parser.exemplars import INTENT_TEXTS, intent_text, load_bank, masking_key  # noqa: E402


def main() -> int:
    train = [e.q for e in load_bank() if e.split == "train"]
    out = {"key": masking_key(), "texts": {q: intent_text(q) for q in train}}
    path = ROOT / "edge" / "analysis" / "parser" / INTENT_TEXTS
    path.write_text(json.dumps(out, ensure_ascii=False, indent=0, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{len(train)} intent texts -> {path.relative_to(ROOT)}", file=sys.stderr)
    source = ROOT / "edge" / "analysis" / "parser" / "lexicon.toml"
    lexicon.load(source)  # checked whole: a bad entry stops here
    checked = source.with_name(lexicon.CHECKED)
    checked.write_text(lexicon.digest(source.read_text("utf-8")) + "\n", encoding="utf-8")
    print(f"lexicon checked -> {checked.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
