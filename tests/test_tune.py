"""``adamm tune``: the grid search finds weights at least as good as the default, and the config it
writes loads with the config loader and keeps the file's other content."""

from __future__ import annotations

import json
import math
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from edge.analysis.source import EventFilter
from edge.cli import main
from edge.config import AdammConfig, load_config
from edge.memory.search.retrieval import hybrid_search
from edge.memory.search.tune import toml_dumps, write_retrieval_weights
from edge.memory.store import Store

# Two families of near-duplicate texts. In the labels the relevant events are the ones whose
# stats.channel equals the preference: text similarity alone cannot tell them apart, so a weight on
# attr_match helps; one query's preference points away from its relevant events, so beta must not
# be too large either.
TEXTS = [
    "customer complains the checkout queue is too long",
    "the queue at the checkout is very long, a customer complained",
    "long line at the cashier, shopper unhappy",
    "shopper upset about waiting in line to pay",
    "fresh milk is missing from the dairy fridge",
    "no milk left in the dairy section",
    "dairy shelf empty, customer asked for milk",
    "customer could not find any milk",
]


def _event(i: int, text: str, channel: str) -> dict[str, object]:
    return {
        "event_id": f"t{i:03d}",
        "timestamp": f"2025-11-{1 + i % 27:02d}T10:00:00Z",
        "store_id": "s1",
        "event_type": "complaint",
        "modality": ["text"],
        "raw_ref": [f"file:///t/{i}.txt"],
        "text": text,
        "stats": {"channel": channel},
    }


EVENTS = [_event(i, t, "hotline" if i % 2 else "app") for i, t in enumerate(TEXTS * 3)]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("tune") / "store.db"
    store = Store.open(str(path), timezone="UTC", config=AdammConfig())
    store.import_lines([json.dumps(e) for e in EVENTS])
    store.close()
    yield path


def labels() -> list[dict[str, object]]:
    hot = [e["event_id"] for e in EVENTS if e["stats"] == {"channel": "hotline"}]  # type: ignore[comparison-overlap]
    queue = {e["event_id"] for e in EVENTS if "queue" in str(e["text"]) or "line" in str(e["text"])}
    milk = {e["event_id"] for e in EVENTS if "milk" in str(e["text"])}
    return [
        {
            "query": "checkout queue complaint",
            "filters": {"prefer": {"channel": "hotline"}},
            "relevant": sorted(queue & set(hot)),
        },
        {
            "query": "收银台排队太长",
            "filters": {"prefer": ["channel=hotline"], "type": "complaint"},
            "relevant": sorted(queue & set(hot)),
        },
        {
            "query": "milk is out of stock",
            "filters": {"prefer": {"channel": "app"}},
            "relevant": sorted(milk - set(hot)),
        },
        {
            "query": "no milk",
            "filters": {"prefer": {"channel": "hotline"}, "since": "2025-11-01"},
            "relevant": sorted(milk),
        },
    ]


def ndcg_of(store: Store, alpha: float, beta: float) -> float:
    """Mean binary nDCG@10 computed here, through the public search call."""
    total = 0.0
    for lab in labels():
        flt_prefer = lab["filters"]["prefer"]  # type: ignore[index]
        prefer = (
            list(flt_prefer.items())
            if isinstance(flt_prefer, dict)
            else [tuple(p.split("=")) for p in flt_prefer]
        )
        rows = hybrid_search(
            store, str(lab["query"]), EventFilter(), 10, prefer=prefer, alpha=alpha, beta=beta
        )
        rel = set(lab["relevant"])  # type: ignore[arg-type]
        dcg = sum(1 / math.log2(i + 2) for i, r in enumerate(rows) if r.event_id in rel)
        ideal = sum(1 / math.log2(i + 2) for i in range(min(len(rel), 10)))
        total += dcg / ideal
    return total / len(labels())


def test_tune_writes_weights_that_load_and_do_not_lose_to_the_default(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lab = tmp_path / "labels.jsonl"
    lab.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in labels()) + "\n", encoding="utf-8")
    cfg = tmp_path / "adamm.toml"
    cfg.write_text(
        "# site config\n[analysis]\ndecay_base = 40.0  # keep me\n\n[retrieval]\nalpha = 0.6\ndefault_k = 7\n"
    )
    rc = main(["tune", "--db", str(db), "--labels", str(lab), "--config", str(cfg), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["queries"] == 4 and len(out["grid"]) == 11
    loaded = load_config(cfg)
    assert (loaded.retrieval.alpha, loaded.retrieval.beta) == (out["best"]["alpha"], out["best"]["beta"])
    assert loaded.analysis.decay_base == 40.0 and loaded.retrieval.default_k == 7
    assert "# keep me" in cfg.read_text()
    store = Store.open(str(db), config=AdammConfig())
    try:
        best = ndcg_of(store, loaded.retrieval.alpha, loaded.retrieval.beta)
        default = ndcg_of(store, 0.6, 0.4)
        text_only = ndcg_of(store, 1.0, 0.0)
    finally:
        store.close()
    assert best >= default - 1e-9
    assert best == pytest.approx(out["best"]["ndcg_at_10"], abs=1e-5)
    assert best > text_only  # the preference carries information the text does not


def test_tune_creates_a_missing_config_and_prints_a_table(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lab = tmp_path / "labels.jsonl"
    lab.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in labels()), encoding="utf-8")
    cfg = tmp_path / "new" / "adamm.toml"
    cfg.parent.mkdir()
    assert main(["tune", "--db", str(db), "--labels", str(lab), "--config", str(cfg)]) == 0
    out = capsys.readouterr().out
    assert "nDCG@10" in out and "<- best" in out
    assert set(tomllib.loads(cfg.read_text())) == {"retrieval"}
    load_config(cfg)


def test_bad_labels_are_usage_errors(db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "c.toml"
    for bad in [
        '{"query": 3, "relevant": []}',
        "not json",
        '{"query": "q", "filters": {"where": {"a b": 1}}, "relevant": []}',
    ]:
        lab = tmp_path / "bad.jsonl"
        lab.write_text(bad)
        assert main(["tune", "--db", str(db), "--labels", str(lab), "--config", str(cfg)]) == 2
        assert "labels line 1" in capsys.readouterr().err
    assert not cfg.exists()


def test_toml_writer_round_trips_and_updates_odd_layouts(tmp_path: Path) -> None:
    data = {
        "top": "x",
        "analysis": {"decay_base": 50.0, "min_buckets": 8},
        "encoders": {"text": 'use "v3"\n多语言', "providers": ["CPUExecutionProvider"]},
        "daemon": {"cameras": {"entrance": {"url": "rtsp://x", "fps": 5, "on": True}}},
    }
    assert tomllib.loads(toml_dumps(data)) == data
    p = tmp_path / "dotted.toml"
    p.write_text("retrieval.alpha = 0.2\n[llm]\nenabled = false\n")
    write_retrieval_weights(p, 0.3, 0.7)
    got = tomllib.loads(p.read_text())
    assert got["retrieval"] == {"alpha": 0.3, "beta": 0.7} and got["llm"] == {"enabled": False}
