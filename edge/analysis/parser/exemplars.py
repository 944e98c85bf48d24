"""A nearest-neighbour intent/metric classifier over a labelled bank of example questions.

Used by :func:`.core.parse_question` next to the rules, which keep the slots. The bank
(``exemplars.jsonl``) is labelled with intent and metrics; its ``heldout`` split is never used here.
Vectors come from the injected ``embed``, once per encoder; the parser trusts only a wide margin.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.resources
import json
import logging
import re
from collections import defaultdict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import NamedTuple, TypeVar

import numpy as np

from edge.analysis.parser.lexicon import METRICS
from edge.analysis.parser.text import MaskedText, normalize
from edge.analysis.parser.vocabmatch import Embed, vectors

logger = logging.getLogger(__name__)
L = TypeVar("L")
_DATA = importlib.resources.files("edge.analysis.parser")

#: neighbours that vote on the intent (over metric-masked texts) and on the metric (raw texts)
K_INTENT = 5
K_METRIC = 9
#: below this share of the vote over the runner-up the classifier is unsure
MARGIN = 0.30
#: a question farther than this (cosine) from every example is not one the bank knows
MIN_SIMILARITY = 0.45
_SHARPNESS = 0.1


def intent_text(question: str) -> str:
    """The question with its metric words cut out: what is asked, not about what."""
    text = normalize(question)
    for h in reversed(MaskedText(text).find(METRICS)):
        text = text[: h.start] + text[h.end :]
    return re.sub(r"\s+", " ", text).strip() or normalize(question)


#: the train split's intent texts computed ahead (``scripts/refresh_exemplars.py``), used only
#: while they were masked with the lexicon's metric words of now (:func:`masking_key`)
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
        raw = json.loads(_DATA.joinpath(INTENT_TEXTS).read_text("utf-8"))
        if raw["key"] == masking_key():
            return {str(k): str(v) for k, v in raw["texts"].items()}
        logger.info("stored intent texts are for other metric words: the exemplars are masked in process")
    except (OSError, ValueError, LookupError, TypeError, AttributeError) as exc:
        logger.info("no stored intent texts (%s): the exemplars are masked in process", exc)
    return {}


def bank_intent_text(question: str) -> str:
    """:func:`intent_text` of a bank question, from the stored texts when they are current."""
    return _stored_intent_texts().get(question) or intent_text(question)


@dataclass(frozen=True)
class Exemplar:
    """One labelled question of the bank."""

    q: str
    intent: str
    lang: str
    split: str
    pair: int
    target_metric: str | None = None  # a question of no metric may leave them out
    second_metric: str | None = None


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


@functools.lru_cache(maxsize=1)
def load_bank() -> tuple[Exemplar, ...]:
    """Every example of the bank (both splits), read once from package data."""
    text = _DATA.joinpath("exemplars.jsonl").read_text("utf-8")
    return tuple(Exemplar(**json.loads(line)) for line in text.splitlines() if line.strip())


class ExemplarClassifier(NamedTuple):
    """The bank's train split and the unit-norm vectors of its raw and metric-masked texts."""

    examples: tuple[Exemplar, ...]
    raw: np.ndarray
    masked: np.ndarray

    def vote(self, sims: np.ndarray, label: Callable[[Exemplar], L], k: int) -> tuple[L, float, int]:
        """The best ``label`` of the ``k`` examples nearest by ``sims``, its margin, the nearest's index."""
        order = np.argsort(-sims)[:k]
        votes: defaultdict[L, float] = defaultdict(float)
        for i in order:  # weights sharper than linear: the nearest examples count most
            votes[label(self.examples[i])] += float(np.exp((float(sims[i]) - 1.0) / _SHARPNESS))
        ranked = sorted(votes.items(), key=lambda kv: -kv[1])
        total = sum(votes.values()) or 1.0
        second = ranked[1][1] if len(ranked) > 1 else 0.0
        return ranked[0][0], round((ranked[0][1] - second) / total, 4), int(order[0])


@dataclass(frozen=True)
class _Encoder:
    """An encoder as a cache key: itself, or its id when it cannot be hashed."""

    key: object
    embed: Embed = field(compare=False)


def classifier_for(embed: Embed) -> ExemplarClassifier | None:
    """The classifier over the bank's ``train`` split embedded by ``embed`` (cached, the last four), or None."""
    return _classifier(_Encoder(embed if isinstance(embed, Hashable) else id(embed), embed))


@functools.lru_cache(maxsize=4)
def _classifier(encoder: _Encoder) -> ExemplarClassifier | None:
    train = tuple(e for e in load_bank() if e.split == "train")
    texts = [e.q for e in train] + [bank_intent_text(e.q) for e in train]
    vecs, n = vectors(encoder.embed, texts, "exemplar classifier"), len(train)
    return None if vecs is None else ExemplarClassifier(train, vecs[:n], vecs[n:])


def classify(question: str, embed: Embed) -> Guess | None:
    """The classifier's guess for ``question``, or None without an encoder."""
    clf = classifier_for(embed)
    texts = [question.strip(), intent_text(question)]
    vec = None if clf is None else vectors(embed, texts, "exemplar classifier")
    if clf is None or vec is None or vec.shape[1] != clf.raw.shape[1]:
        return None
    s_raw = clf.raw @ vec[0]
    intent, i_margin, _ = clf.vote(clf.masked @ vec[1], lambda e: e.intent, K_INTENT)
    metrics, m_margin, near = clf.vote(s_raw, lambda e: (e.target_metric, e.second_metric), K_METRIC)
    return Guess(intent, i_margin, *metrics, m_margin, round(float(s_raw[near]), 4), clf.examples[near].q)
