"""Tests of the pure presentation layer (edge.presentation): text, tables, plot choice, labels.

Payloads here are hand-built from payload.schema.json and CONTRACT.md section 3; they exercise only
the pure formatting functions (the TUI's tests run against a real store).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema

from edge.presentation import choose_plot, event_detail_text, payload_text, result_table
from edge.presentation.labels import LABELS, default_lang, t

SCHEMA = json.loads((Path(__file__).parents[1] / "edge/schemas/payload.schema.json").read_text())


def _payload(**over: Any) -> dict[str, Any]:
    p: dict[str, Any] = {
        "status": "ok",
        "question": "下雨天和晴天相比，哪种天气客单价更高？",
        "plan": {"intent": "compare", "metric": "avg_order_value"},
        "summary": "雨天客单价 128 高于晴天 96",
        "result": {
            "groups": [
                {"key": "rainy", "value": 128.0, "n": 412},
                {"key": "sunny", "value": 96.0, "n": 1930},
            ],
            "diff_pct": 33.33,
            "p_value": 0.0001,
            "test": "ttest_ind",
            "significant": True,
            "per": None,
        },
        "evidence": [{"event_id": f"ev-{i}", "role": "rainy", "weight": 1.0} for i in range(15)],
        "evidence_count": 2342,
        "confidence": 0.89,
        "low_confidence": False,
        "missing": [],
        "action": {"type": "recommendation", "params": {"what": "tasting"}},
        "interpretation": {
            "text": "计算的是客单价的对比，按天气分组。",
            "measure": "avg_order_value",
            "period": None,
            "filters": {},
            "groups": ["weather"],
            "stores": [],
            "not_understood": [],
        },
    }
    p.update(over)
    jsonschema.validate(p, SCHEMA)
    return p


def test_text_ok_shows_summary_confidence_numbers_action_evidence() -> None:
    text = payload_text(_payload())
    assert "雨天客单价 128 高于晴天 96" in text
    assert "0.89" in text
    assert "rainy" in text and "1930" in text
    assert "试吃/试饮" in text  # the action's value in the answer's language
    assert "ev-0" in text and "ev-9" in text and "ev-10" not in text
    assert "还有 5 条" in text
    assert "置信度低" not in text


def test_text_low_confidence_and_insufficient_data_in_english() -> None:
    p = _payload(
        status="insufficient_data",
        result={},
        confidence=0.1,
        low_confidence=True,
        missing=["at least 30 rainy-day purchases"],
        action=None,
        evidence=[],
        evidence_count=0,
    )
    text = payload_text(p, "en")
    # not a low-confidence result: no result at all, and the status line says why
    assert "LOW CONFIDENCE" not in text and "weak evidence" not in text
    assert "insufficient data" in text
    assert "at least 30 rainy-day purchases" in text
    weak = payload_text(_payload(low_confidence=True, confidence=0.4), "en")
    assert "LOW CONFIDENCE" in weak


def test_refused_and_unsupported_answers_carry_no_low_confidence_warning() -> None:
    for status in ("refused", "unsupported"):
        p = _payload(
            status=status,
            plan={},
            result={},
            confidence=0.0,
            low_confidence=True,
            action=None,
            evidence=[],
            evidence_count=0,
        )
        for lang in ("zh", "en"):
            text = payload_text(p, lang)
            assert t("low_confidence", lang) not in text and t(f"status.{status}", lang) in text


def test_tables_name_groups_in_words_in_the_answer_language() -> None:
    weekend = _payload(
        question="周末和工作日的转化率差多少？",
        plan={"intent": "compare", "compare": {"dimension": "is_weekend", "groups": ["true", "false"]}},
        result={
            "groups": [{"key": "true", "value": 0.503, "n": 60}, {"key": "false", "value": 0.399, "n": 120}],
            "diff_pct": 26.07,
            "p_value": 0.001,
            "test": "ttest_ind",
            "significant": True,
            "per": None,
        },
    )
    _, rows = result_table(weekend)
    assert [r[0] for r in rows] == ["周末", "工作日"] and rows[0][1] == "0.503"
    text = payload_text(weekend)
    assert "显著: 是" in text and "true" not in text and "false" not in text
    _, rows_en = result_table(weekend, "en")
    assert [r[0] for r in rows_en] == ["weekends", "weekdays"]
    hours = _payload(
        question="Top hours by footfall",
        plan={"intent": "top_k", "group_by": ["hour"]},
        result={"items": [{"key": 19, "value": 300.0, "n": 300}, {"key": 8, "value": 120.0, "n": 120}]},
    )
    assert [r[0] for r in result_table(hours)[1]] == ["19:00-20:00", "08:00-09:00"]
    days = _payload(
        question="Revenue by weekday",
        plan={"intent": "breakdown", "group_by": ["day_of_week"]},
        result={
            "parts": [
                {"key": 5, "value": 9.0, "n": 40, "share": 0.6},
                {"key": 0, "value": 6.0, "n": 40, "share": 0.4},
            ],
            "top_contributor": 5,
        },
    )
    assert [r[0] for r in result_table(days)[1]] == ["Saturday", "Monday"]
    assert "top contributor: Saturday" in payload_text(days)


def test_result_table_per_intent() -> None:
    headers, rows = result_table(_payload())
    assert headers == ["key", "value", "n"]
    assert [r[0] for r in rows] == ["rainy", "sunny"]
    agg = _payload(plan={"intent": "aggregate"}, result={"value": 12.5, "n": 40})
    assert result_table(agg) == (["key", "value"], [["value", "12.50"], ["n", "40"]])
    assert result_table(_payload(status="unsupported", plan={}, result={})) == ([], [])


def test_choose_plot_trend_anomaly_bars_and_none() -> None:
    series = [{"bucket": f"2026-10-{d:02d}", "value": float(d), "n": 40} for d in range(1, 11)]
    trend = _payload(plan={"intent": "trend", "metric": "footfall"}, result={"series": series})
    spec = choose_plot(trend)
    assert spec is not None and spec.kind == "line" and len(spec.x) == 10 and spec.y[-1] == 10.0
    anom = _payload(
        plan={"intent": "anomaly", "metric": "footfall"},
        result={
            "series": series,
            "anomalies": [
                {"bucket": "2026-10-04", "value": 4.0, "expected": 2.0, "score": 5.0, "direction": "up"}
            ],
            "method": "robust_z",
        },
    )
    spec = choose_plot(anom)
    assert spec is not None and spec.marks == (3,)
    assert choose_plot(_payload()) is not None
    assert choose_plot(_payload(plan={"intent": "correlation"}, result={"r": 0.5, "n": 40})) is None


def test_labels_complete_and_locale_default() -> None:
    assert all({"zh", "en"} <= set(v) for v in LABELS.values())
    assert default_lang({"LANG": "zh_CN.UTF-8"}) == "zh"
    assert default_lang({"LANG": "en_US.UTF-8"}) == "en"
    assert default_lang({}) == "en"


def test_compact_text_leaves_the_numbers_and_evidence_ids_to_the_tables() -> None:
    p = _payload(low_confidence=True, confidence=0.4)
    text = payload_text(p, "en", compact=True)
    assert p["summary"] in text and "0.40" in text and "tasting" in text  # en
    assert "1930" not in text and "ev-0" not in text  # shown as tables beside the text
    assert str(p["evidence_count"]) in text
    assert "weak" not in text.lower()  # the UI styles the low-confidence warning itself
    assert "weak" in payload_text(p, "en").lower()


def test_event_detail_text_names_the_media_location() -> None:
    ev = {
        "event_id": "e1",
        "ts": "2025-11-03T06:00:00Z",
        "event_type": "dwell",
        "tier": "hot",
        "raw_refs": ["file:///var/lib/adamm/media/cam/e1.jpg"],
        "text": None,
        "stats": {"zone": "shelf_a", "dwell_seconds": 95.5},
        "entities": ["customer_123"],
    }
    text = event_detail_text(ev, "en", "e1")
    assert "file:///var/lib/adamm/media/cam/e1.jpg" in text and "zone=shelf_a" in text
    assert "customer_123" in text
    assert event_detail_text(None, "en", "missing-id").startswith("missing-id")


def test_ui_language_from_flag_then_locale_then_store_zone() -> None:
    from edge.presentation.labels import ui_lang

    assert ui_lang("zh", "Europe/Berlin", {"LANG": "en_US.UTF-8"}) == "zh"
    assert ui_lang(None, "Asia/Shanghai", {"LANG": "en_US.UTF-8"}) == "en"
    assert ui_lang(None, "Europe/Berlin", {"LANG": "zh_CN.UTF-8"}) == "zh"
    assert ui_lang(None, "Asia/Shanghai", {"LANG": "C.UTF-8"}) == "zh"
    assert ui_lang(None, "Asia/Shanghai", {}) == "zh"
    assert ui_lang(None, "Europe/Berlin", {}) == "en"


def test_local_time_is_the_store_zone_without_iso_marks() -> None:
    from edge.presentation.format import local_time

    assert local_time("2025-10-03T07:15:24.000000Z", "Asia/Shanghai") == "2025-10-03 15:15:24"
    assert local_time("2025-10-03T07:15:24Z", None) == "2025-10-03 07:15:24"
    ev = {"event_id": "e1", "ts": "2025-11-03T06:00:00Z", "event_type": "dwell", "tier": "hot"}
    assert "2025-11-03 14:00:00" in event_detail_text(ev, "zh", "e1", "Asia/Shanghai")


def test_a_table_fits_its_width_cutting_the_widest_columns_first() -> None:
    from edge.presentation.fit import CELL_PADDING, cut_lines, fit_table, fit_widths
    from edge.presentation.text import display_width

    assert fit_widths([5, 10], [1, 1], 20) == [5, 10]  # room for all: nothing cut
    assert fit_widths([5, 40, 30], [2, 2, 2], 45) == [5, 20, 20]  # one cap, the widest cut first
    assert fit_widths([5, 40, 30], [5, 38, 2], 45) == [5, 38, 2]  # a column not below its floor
    assert sum(fit_widths([20, 20, 20], [20, 20, 20], 30)) <= 30  # floors that cannot fit give way
    summary = "Rainy days' average order value is 126.40, higher than sunny days' 95.10 (33% higher)"
    zh = "计算的是客单价的对比，时间 2025-11-01 至 2025-11-30，按天气分组。雨天客单价 126.40，比晴天高 33%。"
    labels = ["state", "summary", "issued"]
    rows = [["pending", summary, "2025-12-10 16:00:00 CST"], ["done", zh, "2025-12-10 17:00:00 CST"]]
    fitted = fit_table(labels, rows, 60, keep=[0, 2])
    assert sum(fitted.widths) + CELL_PADDING * len(labels) <= 60
    assert [r[2] for r in fitted.rows] == [r[2] for r in rows]  # kept whole
    for (_, whole, _), (_, shown, _), width in zip(rows, fitted.rows, [fitted.widths[1]] * 2, strict=True):
        assert shown != whole and shown.endswith("…") and display_width(shown) <= width
    # what the row lost, whole and wrapped: words kept whole, Chinese broken between characters
    lines = cut_lines(labels, rows[0], fitted.rows[0], 30)
    assert " ".join(lines) == f"summary: {summary}" and all(display_width(x) <= 30 for x in lines)
    lines = cut_lines(["状态", "结论", "时间"], rows[1], fitted.rows[1], 30, "zh")
    assert "".join(lines).replace(" ", "") == f"结论：{zh}".replace(" ", "") and len(lines) > 2
    assert fit_table(labels, rows, 500).rows == rows  # room for everything: nothing cut
