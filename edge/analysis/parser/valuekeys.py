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


Reading = tuple[str, str]  # (key, value)


def _fitting(
    text: str, span: tuple[int, int] | None, cands: list[Reading], events: Sequence[str], vocab: Vocabulary
) -> tuple[list[Reading], bool, bool | None]:
    """Of a phrase's readings (at ``span`` of ``text``, if found): those whose dimension word stands
    right by it ("premium zone", "premium 品类"), else those whose key the measure's ``events``
    carry; whether a key was named so; and what the events carry (:attr:`TwoFields.carried`)."""
    start, end = span or (0, 0)
    after, before = text[end : end + 16], text[max(0, start - 16) : start]
    carried = {k: vocab.carried_by(k, events) for k, _ in cands}
    named: set[object] = set()
    for pattern, dim in lx.DIMENSIONS if span else []:
        gaps = [after[:i] for i, _ in pattern.spans(after)] + [before[j:] for _, j in pattern.spans(before)]
        if dim in carried and any(not gap.strip(" 的") for gap in gaps):
            named.add(dim)
    fits = [(k, x) for k, x in cands if (k in named if named else carried[k])]
    return fits, bool(named), None if None in carried.values() else bool(fits)


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
        fits, named, state = _fitting(text, (v.start, v.end), cands, events, vocab)
        if len(fits) == 1:
            (key, value), aside = fits[0], tuple(k for k in keys if k != fits[0][0])
            on = () if named else tuple(t for t in events if key in vocab.keys_by_type.get(t, ()))
            out.append(replace(v, key=key, values=(value,), alternatives=(), set_aside=aside, by_events=on))
        elif unresolved is None:
            unresolved = TwoFields(v.phrase, keys, events, state)
    return out, unresolved


def guessed_field(text: str, plan: dict[str, Any], vocab: Vocabulary) -> TwoFields | None:
    """For a plan not written by the rules (the LLM parser's): the first stored word its filters or
    groups put in one field of several that neither the question (``text``, normalised) nor the
    measure's events pick alone, as :func:`resolve_fields` decides; None when there is none."""
    filters, compare = plan.get("filters") or {}, plan.get("compare") or {}
    fields = [*(filters.get("attributes") or {}).items()]  # field -> a value or a list of values
    if (dim := compare.get("dimension")) in vocab.attributes:
        fields.append((dim, list(compare.get("groups") or [])))
    used = [(str(k), v) for k, x in fields for v in (x if isinstance(x, list) else [x]) if isinstance(v, str)]
    metrics = [str(m) for m in (plan.get("target_metric"), plan.get("second_metric")) if m]
    types = [str(t) for t in filters.get("event_type") or []]
    events = _measure_events(vocab, metrics, types, str(plan.get("intent")))
    for key, value in used:
        low, at = value.lower(), text.find(value.lower())
        same = [k for k, xs in vocab.attributes.items() if k != key and low in {str(x).lower() for x in xs}]
        cands = [(key, value), *[(k, value) for k in same]]
        fits, _, state = _fitting(text, (at, at + len(low)) if at >= 0 else None, cands, events, vocab)
        if same and fits != cands[:1]:
            return TwoFields(value, (key, *same), events, state)
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
