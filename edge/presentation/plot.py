"""Which plot fits a payload: ``choose_plot(payload) -> PlotSpec | None``.

Pure; the TUI draws a :class:`PlotSpec` with textual-plotext, the HQ console may draw it its own
way. A trend (also of ``peak_hour``) is a line over its buckets; an anomaly result is its series
(when the operator returns one) or its anomalous buckets, with the anomalies marked and the
expected values as a second line; periodicity plots the series or autocorrelation the operator
returns, when it returns one; breakdown and top_k are bars; compare is bars of its groups.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from edge.analysis import metrics as M
from edge.analysis.operators import _words
from edge.presentation.format import as_float, fmt_value, intent_of, metric_of, payload_lang
from edge.presentation.labels import t
from edge.presentation.tables import cell, group_dimensions


@dataclass(frozen=True)
class PlotSpec:
    """A plot, independent of the drawing library.

    ``x`` are the category/bucket labels, ``y`` the values (same length). ``marks`` are indexes
    into ``x`` to highlight (anomalies); ``y2`` an optional second line (expected values).
    """

    kind: str  # "line" or "bar"
    title: str
    x: tuple[str, ...]
    y: tuple[float, ...]
    y_label: str = ""
    marks: tuple[int, ...] = ()
    y2: tuple[float, ...] | None = None
    y2_label: str = ""
    #: indexes of buckets not over yet (a trend's last, ``partial: true``): marked, not joined
    partial: tuple[int, ...] = ()
    partial_label: str = ""
    x_label: str = ""
    #: what ``marks`` are (the anomalies), for the legend
    marks_label: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _series(
    rows: Any, xkey: str, ykey: str, lang: str = "en", dims: Sequence[str] = ()
) -> tuple[list[str], list[float]]:
    xs: list[str] = []
    ys: list[float] = []
    if not isinstance(rows, Sequence):
        return xs, ys
    for row in rows:
        if not isinstance(row, Mapping):
            continue
        y = as_float(row.get(ykey))
        if y is None:
            continue
        xs.append(cell(xkey, row.get(xkey), lang, dims))
        ys.append(y)
    return xs, ys


def _anomaly_plot(result: Mapping[str, Any], title: str, expected_label: str, lang: str) -> PlotSpec | None:
    anomalies = [a for a in result.get("anomalies") or [] if isinstance(a, Mapping)]
    flagged = {fmt_value(a.get("bucket")) for a in anomalies}
    if isinstance(result.get("series"), list) and result["series"]:
        xs, ys = _series(result["series"], "bucket", "value")
        expected = {fmt_value(a.get("bucket")): as_float(a.get("expected")) for a in anomalies}
        marks = tuple(i for i, x in enumerate(xs) if x in flagged)
        y2_list = [expected.get(x) for x in xs]
        y2: tuple[float, ...] | None = None
        if any(v is not None for v in y2_list) and all(v is not None for v in y2_list):
            y2 = tuple(v for v in y2_list if v is not None)
        if len(xs) >= 2:
            return PlotSpec(
                "line",
                title,
                tuple(xs),
                tuple(ys),
                marks=marks,
                y2=y2,
                y2_label=expected_label,
                marks_label=t("role.anomaly", lang),
                x_label=t("plot.x.bucket", lang),
            )
    pts = sorted(anomalies, key=lambda a: str(a.get("bucket")))
    xs = [fmt_value(a.get("bucket")) for a in pts]
    vals = [as_float(a.get("value")) for a in pts]
    exps = [as_float(a.get("expected")) for a in pts]
    if not xs or any(v is None for v in vals):
        return None
    y2v = tuple(e for e in exps if e is not None) if all(e is not None for e in exps) else None
    return PlotSpec(
        "bar",
        title,
        tuple(xs),
        tuple(v for v in vals if v is not None),
        marks=tuple(range(len(xs))),
        y2=y2v,
        y2_label=expected_label,
        marks_label=t("role.anomaly", lang),
        x_label=t("plot.x.bucket", lang),
    )


def choose_plot(payload: Mapping[str, Any], lang: str | None = None) -> PlotSpec | None:
    """The plot for this payload, or ``None`` when its result has nothing to plot; its title and
    labels in ``lang`` (default: the question's language)."""
    if payload.get("status") != "ok":
        return None
    result = payload.get("result")
    if not isinstance(result, Mapping) or not result:
        return None
    intent = intent_of(payload)
    metric = metric_of(payload) or ""
    lang = payload_lang(payload, lang)
    try:
        title = M.label(metric, lang) if metric else ""
    except KeyError:
        title = metric
    title = title or str(intent or "")
    if intent == "trend":
        rows = [
            r
            for r in result.get("series") or []
            if isinstance(r, Mapping) and as_float(r.get("value")) is not None
        ]
        xs, ys = _series(rows, "bucket", "value")
        partial = tuple(i for i, r in enumerate(rows) if r.get("partial"))
        if len(xs) < 2:
            return None
        return PlotSpec(
            "line",
            title,
            tuple(xs),
            tuple(ys),
            y_label=title,
            partial=partial,
            partial_label=t("plot.partial", lang) if partial else "",
            x_label=t("plot.x.bucket", lang),
        )
    if intent == "anomaly":
        return _anomaly_plot(result, title, t("expected", lang), lang)
    if intent == "periodicity":
        for key, xkey, ykey in (("series", "bucket", "value"), ("acf", "lag", "value")):
            xs, ys = _series(result.get(key), xkey, ykey)
            if len(xs) >= 2:
                return PlotSpec("line", title, tuple(xs), tuple(ys), y_label=title)
        return None
    bar_keys = {"breakdown": "parts", "top_k": "items", "compare": "groups"}
    if intent in bar_keys:
        dims = group_dimensions(payload)
        xs, ys = _series(result.get(bar_keys[intent]), "key", "value", lang, dims)
        x_label = _words.dimensions_label(dims, lang) or t("plot.x.group", lang)
        return PlotSpec("bar", title, tuple(xs), tuple(ys), y_label=title, x_label=x_label) if xs else None
    return None
