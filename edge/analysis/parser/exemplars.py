"""A nearest-neighbour intent/metric classifier over a labelled bank of example questions.

Owned by :mod:`edge.analysis.parser`; used by :func:`edge.analysis.parser.core.parse_question`
next to the rules (the rules keep the slots: times, numbers, values, ids). The bank
(``exemplars.jsonl``, package data) holds questions in both languages, formal and colloquial,
each labelled with ``intent``, ``target_metric`` and ``second_metric``; its ``heldout`` split is
never used by the classifier (``scripts/eval_parser.py`` measures on it). Vectors come from the
injected ``embed`` (the store's text encoder through its phrase cache), computed once per encoder
and kept in process. The vote is weighted over the ``k`` nearest examples; ``margin`` is the
share of the vote the best label has over the second best, and the parser trusts the classifier
only at or above a margin.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.resources
import json
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np

from edge.analysis.parser.lexicon import METRICS
from edge.analysis.parser.text import MaskedText, normalize
from edge.analysis.parser.vocabmatch import Embed

logger = logging.getLogger(__name__)

#: neighbours that vote on the intent (over metric-masked texts) and on the metric (raw texts)
K_INTENT = 5
K_METRIC = 9
#: below this share of the vote over the runner-up the classifier is unsure
MARGIN = 0.30
#: a question farther than this (cosine) from every example is not one the bank knows
MIN_SIMILARITY = 0.45
_SHARPNESS = 0.1


def intent_text(question: str) -> str:
    """The question with its metric words cut out: what is asked, not about what (so examples
    of one kind of question meet whatever metric they were written with)."""
    text = normalize(question)
    mt = MaskedText(text)
    for h in sorted(mt.find(METRICS), key=lambda h: -h.start):
        text = text[: h.start] + text[h.end :]
    return re.sub(r"\s+", " ", text).strip() or normalize(question)


#: the train split's intent texts computed ahead (``scripts/refresh_exemplars.py``), so that a new
#: process does not mask some 800 questions before its first answer; used only while they were
#: masked with the lexicon's metric words of now (:func:`masking_key`), recomputed otherwise
INTENT_TEXTS = "exemplars_intent.json"
#: bump when :func:`intent_text` itself changes: the stored texts are then recomputed
_MASKING_VERSION = 1


def masking_key() -> str:
    """What the intent texts depend on: the metric words of the lexicon and the masking's version."""
    h = hashlib.sha256(f"masking {_MASKING_VERSION}\n".encode())
    for pattern, metric in METRICS:
        h.update(f"{pattern.pattern}\x00{metric}\n".encode())
    return h.hexdigest()[:16]


@functools.lru_cache(maxsize=1)
def _stored_intent_texts() -> dict[str, str]:
    try:
        raw = json.loads(
            importlib.resources.files("edge.analysis.parser").joinpath(INTENT_TEXTS).read_text("utf-8")
        )
    except (OSError, ValueError) as exc:
        logger.info("no stored intent texts (%s): the exemplars are masked in process", exc)
        return {}
    if not isinstance(raw, dict) or raw.get("key") != masking_key():
        logger.info("stored intent texts are for other metric words: the exemplars are masked in process")
        return {}
    texts = raw.get("texts")
    return {str(k): str(v) for k, v in texts.items()} if isinstance(texts, dict) else {}


def bank_intent_text(question: str) -> str:
    """:func:`intent_text` of a bank question, from the stored texts when they are current."""
    stored = _stored_intent_texts().get(question)
    return stored if stored is not None else intent_text(question)


@dataclass(frozen=True)
class Exemplar:
    q: str
    intent: str
    target_metric: str | None
    second_metric: str | None
    lang: str
    split: str
    pair: int


@dataclass(frozen=True)
class Guess:
    """The classifier's labels for a question and how sure it is of each."""

    intent: str
    intent_margin: float  # (best vote - second vote) / all votes, 0..1
    target_metric: str | None
    second_metric: str | None
    metric_margin: float
    similarity: float  # cosine of the nearest example (raw texts)
    nearest: str  # the nearest example's text (for logs)

    @property
    def intent_confident(self) -> bool:
        return self.intent_margin >= MARGIN and self.similarity >= MIN_SIMILARITY

    @property
    def metric_confident(self) -> bool:
        return self.metric_margin >= MARGIN and self.similarity >= MIN_SIMILARITY


def _vote(sims: np.ndarray, labels: Sequence[object], k: int) -> tuple[object, float, int]:
    order = np.argsort(-sims)[:k]
    votes: dict[object, float] = {}
    for i in order:
        # sharper than linear: the nearest examples count most
        w = float(np.exp((float(sims[i]) - 1.0) / _SHARPNESS))
        votes[labels[int(i)]] = votes.get(labels[int(i)], 0.0) + w
    ranked = sorted(votes.items(), key=lambda kv: -kv[1])
    total = sum(votes.values()) or 1.0
    second = ranked[1][1] if len(ranked) > 1 else 0.0
    return ranked[0][0], round((ranked[0][1] - second) / total, 4), int(order[0])


@functools.lru_cache(maxsize=1)
def load_bank() -> tuple[Exemplar, ...]:
    """Every example of the bank (both splits), read once from package data."""
    text = importlib.resources.files("edge.analysis.parser").joinpath("exemplars.jsonl").read_text("utf-8")
    out = []
    for line in text.splitlines():
        if line.strip():
            r = json.loads(line)
            out.append(
                Exemplar(
                    r["q"],
                    r["intent"],
                    r.get("target_metric"),
                    r.get("second_metric"),
                    r["lang"],
                    r["split"],
                    int(r["pair"]),
                )
            )
    return tuple(out)


class ExemplarClassifier:
    """Weighted k-nearest-neighbour votes over unit-norm example vectors: the intent over the
    metric-masked texts, the metric (with the second metric of a correlation) over the raw ones."""

    def __init__(self, examples: Sequence[Exemplar], raw: np.ndarray, masked: np.ndarray) -> None:
        self.examples = tuple(examples)
        self.raw = np.asarray(raw, dtype=np.float32)
        self.masked = np.asarray(masked, dtype=np.float32)
        self._intents = [e.intent for e in self.examples]
        self._metrics = [(e.target_metric, e.second_metric) for e in self.examples]

    @property
    def dim(self) -> int:
        return int(self.raw.shape[1])

    def classify_vectors(self, raw: np.ndarray, masked: np.ndarray) -> Guess:
        s_raw = self.raw @ np.asarray(raw, dtype=np.float32)
        s_masked = self.masked @ np.asarray(masked, dtype=np.float32)
        intent, i_margin, _ = _vote(s_masked, self._intents, K_INTENT)
        metric, m_margin, nearest = _vote(s_raw, self._metrics, K_METRIC)
        target, second = cast(tuple[str | None, str | None], metric)
        return Guess(
            str(intent),
            i_margin,
            target,
            second,
            m_margin,
            round(float(s_raw[nearest]), 4),
            self.examples[nearest].q,
        )


_CACHE: OrderedDict[object, ExemplarClassifier | None] = OrderedDict()
_LOCK = threading.Lock()


def _cache_key(embed: Embed) -> object:
    try:
        hash(embed)
    except TypeError:
        return id(embed)
    return embed


def classifier_for(embed: Embed) -> ExemplarClassifier | None:
    """The classifier over the bank's ``train`` split embedded with ``embed`` (once per encoder,
    kept for the process); None when the encoder gives no vectors."""
    key = _cache_key(embed)
    with _LOCK:
        if key in _CACHE:
            _CACHE.move_to_end(key)
            return _CACHE[key]
    train = [e for e in load_bank() if e.split == "train"]
    try:
        raw = embed([e.q for e in train] + [bank_intent_text(e.q) for e in train])
    except Exception as exc:  # the encoder is optional: the rules still answer without it
        logger.warning("exemplar classifier unavailable: %s", exc)
        raw = None
    clf: ExemplarClassifier | None = None
    if raw is not None:
        vecs = np.asarray(raw, dtype=np.float32)
        n = len(train)
        if vecs.ndim == 2 and vecs.shape[0] == 2 * n:
            clf = ExemplarClassifier(train, vecs[:n], vecs[n:])
        else:
            logger.warning("exemplar classifier unavailable: unexpected vector shape %s", vecs.shape)
    with _LOCK:
        _CACHE[key] = clf
        while len(_CACHE) > 4:
            _CACHE.popitem(last=False)
    return clf


def classify(question: str, embed: Embed) -> Guess | None:
    """The classifier's guess for ``question``, or None without an encoder."""
    clf = classifier_for(embed)
    if clf is None:
        return None
    try:
        raw = embed([question.strip(), intent_text(question)])
    except Exception as exc:
        logger.warning("exemplar classifier skipped: %s", exc)
        return None
    if raw is None:
        return None
    vec = np.asarray(raw, dtype=np.float32)
    if vec.ndim != 2 or vec.shape[0] != 2 or vec.shape[1] != clf.dim:
        return None
    return clf.classify_vectors(vec[0], vec[1])
