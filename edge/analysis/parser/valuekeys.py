"""Which field a stored word of several fields means: the one the question or the measure names.

A phrase naming values of several keys (a zone and a category both "premium") is the key named
beside it ("premium zone"), else the one key the measure's events carry; otherwise none is guessed
and the question is refused (:func:`two_fields_reason`). Also run on the LLM parser's plans.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from edge.analysis.metrics import METRIC_EVENT_TYPES
from edge.analysis.operators._words import dimension_label, value_label
from edge.analysis.parser import lexicon as lx
from edge.analysis.parser.vocabmatch import TypeHit, ValueHit
from edge.analysis.source import Vocabulary


@dataclass(frozen=True)
class TwoFields:
    """A phrase that names stored values of several keys the measure's events do not tell apart."""

    phrase: str
    keys: tuple[str, ...]
    events: tuple[str, ...]
    carried: bool | None  # all carry the keys (True), none does (False), not known (None)


def _measure_events(
    vocab: Vocabulary, metrics: Sequence[str], types: Sequence[str], intent_hint: str | None
) -> tuple[str, ...]:
    """The event types the question's measure reads: its metric's (both of a correlation's), the
    named types for a count of events or a question with no metric, every type otherwise."""
    named = tuple(dict.fromkeys(types))
    every = tuple(vocab.event_types) or tuple(sorted(set(vocab.keys_by_type)))
    if intent_hint in ("retrieve", "co_occurrence") or not metrics:
        return named or every
    chosen = metrics[: 2 if intent_hint == "correlation" else 1]
    return tuple(dict.fromkeys(t for m in chosen for t in METRIC_EVENT_TYPES.get(m, ()) or named or every))


def _fitting(
    text: str, span: tuple[int, int] | None, keys: Sequence[str], events: Sequence[str], vocab: Vocabulary
) -> tuple[set[str], set[str], bool | None]:
    """Of the keys a phrase (at ``span`` of ``text``, if found) names values of: those whose
    dimension word stands right by it ("premium zone", "premium 品类"), else those the measure's
    ``events`` carry; the keys named; and what the events carry (:attr:`TwoFields.carried`)."""
    start, end = span or (0, 0)
    after, before = text[end : end + 16], text[max(0, start - 16) : start]
    named: set[str] = set()
    for pattern, dim in lx.DIMENSIONS if span else []:
        gaps = [after[:i] for i, _ in pattern.spans(after)] + [before[j:] for _, j in pattern.spans(before)]
        if dim in keys and any(not gap.strip(" 的") for gap in gaps):
            named.add(str(dim))
    carried = {k: vocab.carried_by(k, events) for k in keys}
    fit = {k for k in keys if (k in named if named else carried[k])}
    return fit, named, None if any(c is None for c in carried.values()) else bool(fit)


def resolve_fields(
    text: str,
    values: Sequence[ValueHit],
    vocab: Vocabulary,
    metrics: Sequence[str],
    types: Sequence[TypeHit],
    intent_hint: str | None,
) -> tuple[list[ValueHit], TwoFields | None]:
    """Each phrase of several keys resolved to one (said in :attr:`ValueHit.set_aside` and
    :attr:`ValueHit.by_events`); the first that cannot be is left out, returned as a :class:`TwoFields`."""
    out: list[ValueHit] = []
    unresolved: TwoFields | None = None
    events = _measure_events(vocab, metrics, [t.event_type for t in types], intent_hint)
    for v in values:
        if not v.alternatives:
            out.append(v)
            continue
        cands = [(v.key, v.values[0]), *[(k, x) for k, x in v.alternatives if k != v.key]]
        keys = tuple(k for k, _ in cands)
        fit, named, state = _fitting(text, (v.start, v.end), keys, events, vocab)
        fits = [(k, x) for k, x in cands if k in fit]
        if len(fits) == 1:
            key, value = fits[0]
            on = () if named else tuple(t for t in events if key in vocab.keys_by_type.get(t, ()))
            aside = tuple(k for k in keys if k != key)
            out.append(replace(v, key=key, values=(value,), alternatives=(), set_aside=aside, by_events=on))
        elif unresolved is None:
            unresolved = TwoFields(v.phrase, keys, events, state)
    return out, unresolved


def guessed_field(text: str, plan: dict[str, Any], vocab: Vocabulary) -> TwoFields | None:
    """For a plan not written by the rules (the LLM parser's): the first stored word its filters or
    groups put in one field of several that neither the question (``text``, normalised) nor the
    measure's events pick alone, as :func:`resolve_fields` decides; None when there is none."""
    filters = plan.get("filters") or {}
    used: list[tuple[str, str]] = [
        (str(k), v)
        for k, vals in (filters.get("attributes") or {}).items()
        for v in (vals if isinstance(vals, list) else [vals])
        if isinstance(v, str)
    ]
    compare = plan.get("compare") or {}
    if (dim := compare.get("dimension")) in vocab.attributes:
        used += [(str(dim), g) for g in compare.get("groups") or [] if isinstance(g, str)]
    metrics = [str(m) for m in (plan.get("target_metric"), plan.get("second_metric")) if m]
    types = [str(t) for t in filters.get("event_type") or []]
    events = _measure_events(vocab, metrics, types, str(plan.get("intent")))
    for key, value in used:
        low = value.lower()
        keys = [key] + [
            k for k, vals in vocab.attributes.items() if k != key and any(str(x).lower() == low for x in vals)
        ]
        if len(keys) == 1:
            continue
        at = text.find(low)
        fit, _, state = _fitting(text, (at, at + len(low)) if at >= 0 else None, keys, events, vocab)
        if fit != {key}:
            return TwoFields(value, tuple(keys), events, state)
    return None


def two_fields_reason(tf: TwoFields) -> tuple[str, str]:
    """Why a word of two fields is not read, as (zh, en): the fields, what the events carry."""
    said = []
    for lang in ("zh", "en"):
        t = lx.TWO_FIELDS[lang]
        named = [value_label("event_type", e, lang) for e in tf.events[:4]]
        events = t["comma"].join(named) + (t["more"] if len(tf.events) > 4 else "")
        why = t[{True: "all", False: "none", None: "unknown"}[tf.carried]].format(events=events)
        fields = t["and"].join(t["field"].format(dimension_label(k, lang)) for k in tf.keys)
        field = dimension_label(tf.keys[0], lang)
        said.append(t["reason"].format(phrase=tf.phrase, fields=fields, why=why, field=field))
    return said[0], said[1]
