#!/usr/bin/env python3
"""Measure the question parser: intent + metric accuracy of the rules alone and of the rules with
the exemplar classifier, on the exemplar bank's held-out split and on the public sample questions.

The text encoder is the store's default (``EncoderConfig().text``), built directly (no memory
needed). A bank question is right when its intent, ``target_metric`` and (for correlations)
``second_metric`` all match; a public question when every ``expect`` path it gives matches
(``--intent-metric`` checks only its intent and metric). Prints a Markdown table on stdout; with
``--misses`` the combined parser's misses go to stderr.

``--dev [PATH]`` also scores the development set (``tests/data/dev``, written to be read while
tuning) as the held-out sets are scored, and with ``--misses`` lists its misses too.

Usage: ``python3 scripts/eval_parser.py [--public PATH] [--misses] [--intent-metric] [--dev [PATH]]``.
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

# this checkout's code, not an installed copy's (a worktree measures itself)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from edge.analysis.parser import ParseResult, parse_question
from edge.analysis.parser.exemplars import load_bank
from edge.config import EncoderConfig
from edge.encoders.base import create
from edge.sim.catalog import VOCABULARY

NOW = datetime(2025, 12, 15, 10, 0)
VOCAB = VOCABULARY
#: ``shared/eval/questions_public.jsonl`` beside the checkout (or one of its parents)
PUBLIC = next(
    (
        p / "shared" / "eval" / "questions_public.jsonl"
        for p in Path(__file__).resolve().parents
        if (p / "shared" / "eval" / "questions_public.jsonl").is_file()
    ),
    Path(__file__).resolve().parents[1].parent / "shared" / "eval" / "questions_public.jsonl",
)
#: issue 23's held-out questions: written by another session, never read while building (scores
#: only). ``heldout5`` (2026-12-05, session 6, written blind by a helper) is the default;
#: ``heldout4`` (scored about nine times while building), ``heldout3`` (four), ``heldout2`` (five)
#: and the first set (``tests/data/heldout``, about eight) are kept for comparison
#: (``--heldout tests/data/heldout4``)
HELDOUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "heldout5"
#: the development set: scored like the held-out sets, but its misses may be read (its README)
DEV = Path(__file__).resolve().parents[1] / "tests" / "data" / "dev"
_MISSING = object()


def _get(plan: dict[str, Any], path: str) -> Any:
    cur: Any = plan
    for part in path.split("."):
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        else:
            return _MISSING
    return cur


def bank_right(res: ParseResult, intent: str, metric: str | None, second: str | None) -> bool:
    if res.status != "ok":
        return False
    p = res.plan
    if p.get("intent") != intent:
        return False
    if metric is not None and p.get("target_metric") != metric:
        return False
    return second is None or p.get("second_metric") == second


def public_right(res: ParseResult, expect: dict[str, Any], intent_metric: bool) -> bool:
    if res.status != "ok":
        return False
    for path, want in expect.items():
        if intent_metric and path not in ("intent", "target_metric"):
            continue
        got = res.language if path == "language" else _get(res.plan, path)
        if want == "present":
            if got is _MISSING:
                return False
        elif got != want:
            return False
    return True


def _answer_level(
    path: Path,
    embed: Callable[[Sequence[str]], np.ndarray],
    title: str = "cannot-honour",
    list_ok: bool = False,
) -> None:
    """The held-out cannot-honour questions answered as `adamm ask` answers them, on a simulated
    memory covering up to the evening before NOW: the share answered ``ok`` (goal 0), per kind."""
    import tempfile

    from edge.analysis.engine import AnalysisConfig, answer
    from edge.memory.store import Store
    from edge.sim import SimConfig, simulate

    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    config = SimConfig(days=(NOW.date() - SimConfig().start).days)
    with tempfile.TemporaryDirectory(prefix="adamm-eval-") as tmp:
        store = Store.open(Path(tmp) / "eval.db", timezone=config.timezone)
        try:
            store.import_events(simulate(config))
            source = store.event_source()
            print(f"| {title}, answered | n | ok answers (goal 0) |")
            print("|---|---|---|")
            for kind in sorted({r["kind"] for r in rows}):
                qs = [r["q"] for r in rows if r["kind"] == kind]
                ok = 0
                for q in qs:
                    payload = answer(q, source, now=NOW, config=AnalysisConfig(), embed=embed)
                    if payload["status"] == "ok":
                        ok += 1
                        if list_ok:  # a development set's wrong answers may be read
                            print(f"OK [{title}: {kind}] {q} -> {payload['summary'][:120]}", file=sys.stderr)
                print(f"| {kind} | {len(qs)} | {ok} |")
            print()
        finally:
            store.close()


def heldout_right(res: ParseResult, expect: dict[str, Any]) -> bool:
    """Right when ``ok`` with the expected intent, and the expected metric where the plan has one
    (a retrieval or a co-occurrence carries none)."""
    if res.status != "ok" or res.plan.get("intent") != expect.get("intent"):
        return False
    if res.plan.get("intent") in ("retrieve", "co_occurrence", "forecast") or "target_metric" not in expect:
        return True
    return res.plan.get("target_metric") == expect["target_metric"] and (
        "second_metric" not in expect or res.plan.get("second_metric") == expect["second_metric"]
    )


def encoder_embed() -> Callable[[Sequence[str]], np.ndarray]:
    enc = create(EncoderConfig().text, providers=["CPUExecutionProvider"])

    def embed(texts: Sequence[str]) -> np.ndarray:
        return np.asarray(enc.encode(list(texts)), dtype=np.float32)

    return embed


def _hide(questions: Sequence[str], record: logging.LogRecord) -> bool:
    """Keep ``record``, its message replaced when it quotes one of ``questions``."""
    text = record.getMessage()
    if any(q in text for q in questions):
        record.msg, record.args = "(a log line quoting a held-out question, hidden)", ()
    return True


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--public", type=Path, default=PUBLIC)
    ap.add_argument("--misses", action="store_true", help="list the combined parser's misses on stderr")
    ap.add_argument("--intent-metric", action="store_true", help="public: check only intent and metric")
    ap.add_argument("--split", default="heldout", help="bank split to measure (train: a tuning check only)")
    ap.add_argument(
        "--answers",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also answer the cannot-honour set on a simulated memory (the rate of ok answers)",
    )
    ap.add_argument(
        "--heldout",
        type=Path,
        default=HELDOUT,
        help="folder with answerable.jsonl and unanswerable.jsonl (never listed: only their scores print)",
    )
    ap.add_argument(
        "--dev",
        type=Path,
        nargs="?",
        const=DEV,
        default=None,
        help=f"also score the development set in this folder (default {DEV.relative_to(DEV.parents[2])}); "
        "--misses lists its misses",
    )
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    embed = encoder_embed()

    sets: list[tuple[str, list[tuple[str, Callable[[ParseResult], bool]]]]] = []
    held = [e for e in load_bank() if e.split == args.split]
    for lang in ("zh", "en"):
        rows = [e for e in held if e.lang == lang]
        sets.append(
            (
                f"bank {args.split} ({lang})",
                [
                    (e.q, lambda r, e=e: bank_right(r, e.intent, e.target_metric, e.second_metric))
                    for e in rows
                ],
            )
        )
    if args.public.exists():
        pub = [json.loads(x) for x in args.public.read_text(encoding="utf-8").splitlines() if x.strip()]
        sets.append(
            (
                "public sample",
                [(r["q"], lambda res, r=r: public_right(res, r["expect"], args.intent_metric)) for r in pub],
            )
        )

    # the held-out sets of issue 23: scores only, never their questions (--misses skips them)
    unseen: set[str] = set()
    answerable = args.heldout / "answerable.jsonl"
    unanswerable = args.heldout / "unanswerable.jsonl"
    if answerable.exists():
        rows = [json.loads(x) for x in answerable.read_text(encoding="utf-8").splitlines() if x.strip()]
        sets.append(
            (
                "held-out answerable",
                [(r["q"], lambda res, r=r: heldout_right(res, r["expect"])) for r in rows],
            )
        )
        unseen.add("held-out answerable")
    if unanswerable.exists():
        rows = [json.loads(x) for x in unanswerable.read_text(encoding="utf-8").splitlines() if x.strip()]
        for kind in sorted({r["kind"] for r in rows}):
            name = f"held-out cannot-honour: {kind} (right = not ok)"
            sets.append((name, [(r["q"], lambda res: res.status != "ok") for r in rows if r["kind"] == kind]))
            unseen.add(name)

    # a log line that quotes a held-out question (the parser logs an invalid plan with its question)
    # is shown without it: the sets stay unseen
    hidden = [q for name, rows_ in sets if name in unseen for q, _ in rows_]
    for handler in logging.getLogger().handlers:
        handler.addFilter(functools.partial(_hide, hidden))

    # the development set: the same scoring, and its misses may be listed (expected vs got)
    wanted: dict[tuple[str, str], str] = {}
    if args.dev is not None:
        if not (args.dev / "answerable.jsonl").exists() or not (args.dev / "unanswerable.jsonl").exists():
            print(f"no answerable.jsonl / unanswerable.jsonl in {args.dev}", file=sys.stderr)
            return 2
        rows = [
            json.loads(x)
            for x in (args.dev / "answerable.jsonl").read_text(encoding="utf-8").splitlines()
            if x.strip()
        ]
        for name, right in (
            ("dev answerable", lambda res, r: heldout_right(res, r["expect"])),
            ("dev answerable, every expect path", lambda res, r: public_right(res, r["expect"], False)),
        ):
            sets.append((name, [(r["q"], lambda res, r=r, right=right: right(res, r)) for r in rows]))
            wanted.update({(name, r["q"]): json.dumps(r["expect"], ensure_ascii=False) for r in rows})
        dev_un = [
            json.loads(x)
            for x in (args.dev / "unanswerable.jsonl").read_text(encoding="utf-8").splitlines()
            if x.strip()
        ]
        for kind in sorted({r["kind"] for r in dev_un}):
            name = f"dev cannot-honour: {kind} (right = not ok)"
            sets.append(
                (name, [(r["q"], lambda res: res.status != "ok") for r in dev_un if r["kind"] == kind])
            )
            wanted.update({(name, r["q"]): f"not ok ({kind})" for r in dev_un if r["kind"] == kind})

    if unanswerable.exists() and args.answers:
        _answer_level(unanswerable, embed)
    if args.dev is not None and args.answers:
        _answer_level(args.dev / "unanswerable.jsonl", embed, title="dev cannot-honour", list_ok=args.misses)
    print("| set | n | rules alone | rules + exemplars |")
    print("|---|---|---|---|")
    for name, items in sets:
        a = b = 0
        for q, right in items:
            ra = parse_question(q, VOCAB, NOW)
            rb = parse_question(q, VOCAB, NOW, embed=embed)
            a += right(ra)
            ok = right(rb)
            b += ok
            if args.misses and not ok and name not in unseen:
                if (name, q) in wanted:
                    got = f"{rb.status} intent={rb.plan.get('intent')} metric={rb.plan.get('target_metric')}"
                    if rb.status == "ok":
                        got += f" plan={json.dumps(rb.plan, ensure_ascii=False)}"
                    else:
                        got += f" ({(rb.explanation or '')[:60]})"
                    print(f"MISS [{name}] {q} | expected {wanted[(name, q)]} | got {got}", file=sys.stderr)
                else:
                    got = rb.plan if rb.status == "ok" else (rb.explanation or "")[:60]
                    print(f"MISS [{name}] {q} -> {got}", file=sys.stderr)
        n = len(items)
        print(f"| {name} | {n} | {a} ({100 * a / n:.0f}%) | {b} ({100 * b / n:.0f}%) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
