"""The rule-based bilingual question parser (edge.analysis.parser).

Covers: every public sample question (../shared/eval/questions_public.jsonl) gives its expected
plan fields; a project-owned held-out set in the same spirit (other wordings, numbers, stores and
dates, both languages); unsupported questions; and a property test that any question-like string
yields either a schema-valid plan or ``unsupported``. Expected calendar windows are derived here
from the fixed ``NOW`` (Monday 2025-12-15 10:00 in Asia/Shanghai, UTC+8).
"""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edge.analysis.parser import ParseResult, parse_question
from edge.analysis.plan import plan_errors, validate_plan
from edge.analysis.source import Vocabulary
from edge.sim.catalog import VOCABULARY

#: ``shared/eval/questions_public.jsonl`` beside the checkout (or beside one of its parents)
PUBLIC = next(
    (
        p / "shared" / "eval" / "questions_public.jsonl"
        for p in Path(__file__).resolve().parents
        if (p / "shared" / "eval" / "questions_public.jsonl").is_file()
    ),
    Path(__file__).resolve().parents[1].parent / "shared" / "eval" / "questions_public.jsonl",
)
NOW = datetime(2025, 12, 15, 10, 0)  # naive = store-local; a Monday
TZ = "Asia/Shanghai"

VOCAB = VOCABULARY


def _day(y: int, m: int, d: int) -> str:
    return f"{date(y, m, d).isoformat()}T00:00:00+08:00"


def _day_range(y: int, m: int, d: int) -> dict[str, str]:
    start = date(y, m, d)
    return {"since": _day(y, m, d), "until": _day(*(start + timedelta(days=1)).timetuple()[:3])}


LAST_WEEK = {"since": _day(2025, 12, 8), "until": _day(2025, 12, 15)}  # Mon-Mon before NOW
LAST_MONTH = {"since": _day(2025, 11, 1), "until": _day(2025, 12, 1)}
THIS_MONTH = {"since": _day(2025, 12, 1)}
THIS_WEEK = {"since": _day(2025, 12, 15)}
YESTERDAY = _day_range(2025, 12, 14)
TODAY = _day_range(2025, 12, 15)

_MISSING = object()


def _get(plan: dict[str, Any], path: str) -> Any:
    cur: Any = plan
    for part in path.split("."):
        if isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
            cur = cur[int(part)]
        elif isinstance(cur, dict) and part in cur:
            cur = cur[part]
        else:
            return _MISSING
    return cur


def _check(result: ParseResult, expect: dict[str, Any]) -> None:
    assert result.status == "ok", result.explanation
    validate_plan(result.plan)
    for path, want in expect.items():
        got = result.language if path == "language" else _get(result.plan, path)
        if want == "present":
            assert got is not _MISSING, f"{path} missing in {result.plan}"
        elif want == "absent":
            assert got is _MISSING, f"{path} should be absent in {result.plan}"
        else:
            assert got == want, f"{path}: {got!r} != {want!r} in {result.plan}"


def _public_rows() -> list[dict[str, Any]]:
    if not PUBLIC.exists():
        return []
    return [json.loads(line) for line in PUBLIC.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.mark.skipif(not PUBLIC.exists(), reason=f"{PUBLIC} is not present")
@pytest.mark.parametrize("row", _public_rows(), ids=lambda r: r["q"][:40])
def test_public_question_gives_expected_plan_fields(row: dict[str, Any], store_text_embed: Any) -> None:
    # parsed as `adamm ask` parses: with the store's text encoder
    result = parse_question(row["q"], VOCAB, NOW, embed=store_text_embed)
    _check(result, row["expect"])
    assert result.plan["language"] == result.language


# Project-owned held-out questions: other wordings, numbers, dates and stores than the public file.
HELD_OUT: list[tuple[str, dict[str, Any]]] = [
    # --- aggregate, metrics by everyday words, time expressions
    (
        "上个月的转化率是多少？",
        {"intent": "aggregate", "target_metric": "conversion_rate", "filters.time_range": LAST_MONTH},
    ),
    (
        "每单花多少钱？上周",
        {"intent": "aggregate", "target_metric": "avg_order_value", "filters.time_range": LAST_WEEK},
    ),
    ("本月平均客单是多少", {"target_metric": "avg_order_value", "filters.time_range": THIS_MONTH}),
    (
        "What was the spend per order this month?",
        {"target_metric": "avg_order_value", "filters.time_range": THIS_MONTH},
    ),
    ("What is the AOV this week?", {"target_metric": "avg_order_value", "filters.time_range": THIS_WEEK}),
    (
        "basket size on sunny days",
        {"target_metric": "avg_order_value", "filters.attributes": {"weather": "sunny"}},
    ),
    (
        "昨天来了多少顾客？",
        {"intent": "aggregate", "target_metric": "footfall", "filters.time_range": YESTERDAY},
    ),
    ("今天进店人数", {"target_metric": "footfall", "filters.time_range": TODAY, "language": "zh"}),
    (
        "How many visitors did we get today?",
        {"target_metric": "footfall", "filters.time_range": TODAY, "language": "en"},
    ),
    (
        "What was the footfall in the past 30 days?",
        {"target_metric": "footfall", "filters.time_range.last": "P30D"},
    ),
    (
        "last 2 weeks sales",
        {"intent": "aggregate", "target_metric": "revenue", "filters.time_range.last": "P2W"},
    ),
    ("过去两周的营业额", {"target_metric": "revenue", "filters.time_range.last": "P2W"}),
    ("过去6个月的收入", {"target_metric": "revenue", "filters.time_range.last": "P6M"}),
    ("近7天的订单数", {"target_metric": "order_count", "filters.time_range.last": "P7D"}),
    ("最近十二个月的销量", {"target_metric": "order_count", "filters.time_range.last": "P12M"}),
    (
        "How many transactions were there on 2025-11-15?",
        {"target_metric": "order_count", "filters.time_range": _day_range(2025, 11, 15)},
    ),
    ("11月10号的营业额", {"target_metric": "revenue", "filters.time_range": _day_range(2025, 11, 10)}),
    ("11月10日的客流", {"target_metric": "footfall", "filters.time_range": _day_range(2025, 11, 10)}),
    (
        "What was revenue on Nov 10?",
        {"target_metric": "revenue", "filters.time_range": _day_range(2025, 11, 10)},
    ),
    (
        "2025年11月3日的客单价",
        {"target_metric": "avg_order_value", "filters.time_range": _day_range(2025, 11, 3)},
    ),
    (
        "since 2025-11-01, how many complaints?",
        {"target_metric": "complaint_count", "filters.time_range": {"since": _day(2025, 11, 1)}},
    ),
    (
        "自2025-11-01以来投诉有多少",
        {"target_metric": "complaint_count", "filters.time_range": {"since": _day(2025, 11, 1)}},
    ),
    (
        "从11月1日到11月15日的客流",
        {
            "target_metric": "footfall",
            "filters.time_range": {"since": _day(2025, 11, 1), "until": _day(2025, 11, 16)},
        },
    ),
    ("今天的排队人数", {"target_metric": "queue_length", "filters.time_range": TODAY}),
    ("上周平均停留时长", {"target_metric": "dwell_time", "filters.time_range": LAST_WEEK}),
    ("How many complaints yesterday?", {"target_metric": "complaint_count", "filters.time_range": YESTERDAY}),
    ("上周员工出错多少次", {"target_metric": "event_count", "filters.event_type": ["staff_error"]}),
    (
        "How many promotion broadcasts last week?",
        {"target_metric": "event_count", "filters.event_type": ["promotion_broadcast"]},
    ),
    ("高峰时段是几点", {"intent": "aggregate", "target_metric": "peak_hour"}),
    ("What was the busiest hour yesterday?", {"target_metric": "peak_hour", "filters.time_range": YESTERDAY}),
    ("上个月一共多少单", {"target_metric": "order_count", "filters.time_range": LAST_MONTH}),
    ("过去半年的客单价", {"target_metric": "avg_order_value", "filters.time_range.last": "P6M"}),
    ("过去半个月的投诉", {"target_metric": "complaint_count", "filters.time_range.last": "P15D"}),
    ("上周五的营业额", {"target_metric": "revenue", "filters.time_range": _day_range(2025, 12, 12)}),
    ("last friday footfall", {"target_metric": "footfall", "filters.time_range": _day_range(2025, 12, 12)}),
    (
        "上周末的客流",
        {
            "target_metric": "footfall",
            "filters.time_range": {"since": _day(2025, 12, 13), "until": _day(2025, 12, 15)},
        },
    ),
    (
        "上上周的客流",
        {
            "target_metric": "footfall",
            "filters.time_range": {"since": _day(2025, 12, 1), "until": _day(2025, 12, 8)},
        },
    ),
    (
        "last year revenue",
        {
            "target_metric": "revenue",
            "filters.time_range": {"since": _day(2024, 1, 1), "until": _day(2025, 1, 1)},
        },
    ),
    (
        "11月的客单价",
        {
            "target_metric": "avg_order_value",
            "filters.time_range": {"since": _day(2025, 11, 1), "until": _day(2025, 12, 1)},
        },
    ),
    ("过去一个季度的销售额", {"target_metric": "revenue", "filters.time_range.last": "P3M"}),
    (
        "上个季度的销售额",
        {
            "target_metric": "revenue",
            "filters.time_range": {"since": _day(2025, 7, 1), "until": _day(2025, 10, 1)},
        },
    ),
    ("What time do most customers come in?", {"target_metric": "peak_hour"}),
    ("大家一般几点来店里", {"target_metric": "peak_hour"}),
    (
        "How long do customers stay at the wine shelf on average?",
        {"target_metric": "dwell_time", "filters.attributes": {"zone": "wine"}},
    ),
    # --- hours and weekday filters
    (
        "工作日晚上的客流是多少",
        {
            "target_metric": "footfall",
            "filters.hours": list(range(18, 23)),
            "filters.days_of_week": [0, 1, 2, 3, 4],
        },
    ),
    (
        "周末下午的销售额",
        {"target_metric": "revenue", "filters.hours": list(range(12, 18)), "filters.days_of_week": [5, 6]},
    ),
    ("上午的客单价", {"target_metric": "avg_order_value", "filters.hours": [8, 9, 10, 11]}),
    (
        "Evening footfall on weekends",
        {"target_metric": "footfall", "filters.hours": list(range(18, 23)), "filters.days_of_week": [5, 6]},
    ),
    (
        "Morning revenue last week",
        {"target_metric": "revenue", "filters.hours": [8, 9, 10, 11], "filters.time_range": LAST_WEEK},
    ),
    ("晚上7点到9点的客流", {"target_metric": "footfall", "filters.hours": [19, 20]}),
    ("revenue from 7pm to 9pm", {"target_metric": "revenue", "filters.hours": [19, 20]}),
    ("下午3点到5点的排队人数", {"target_metric": "queue_length", "filters.hours": [15, 16]}),
    # --- stores and entities
    ("sh_xuhui_01上周的销售额", {"filters.store_id": ["sh_xuhui_01"], "target_metric": "revenue"}),
    (
        "bj_chaoyang_02 footfall yesterday",
        {"filters.store_id": ["bj_chaoyang_02"], "target_metric": "footfall"},
    ),
    (
        "staff_07的失误率趋势",
        {"intent": "trend", "target_metric": "staff_error_rate", "filters.entities": ["staff_07"]},
    ),
    # --- trend
    (
        "过去两周每天的客流趋势",
        {
            "intent": "trend",
            "target_metric": "footfall",
            "time_bucket": "day",
            "filters.time_range.last": "P2W",
        },
    ),
    (
        "过去6个月销售额有什么变化",
        {"intent": "trend", "target_metric": "revenue", "filters.time_range.last": "P6M"},
    ),
    (
        "How did queue length change over the past two months?",
        {"intent": "trend", "target_metric": "queue_length", "filters.time_range.last": "P2M"},
    ),
    (
        "Weekly revenue trend for the last 6 months",
        {
            "intent": "trend",
            "target_metric": "revenue",
            "time_bucket": "week",
            "filters.time_range.last": "P6M",
        },
    ),
    ("每个月的订单数趋势", {"intent": "trend", "target_metric": "order_count", "time_bucket": "month"}),
    ("负面情绪比例是不是越来越高", {"intent": "trend", "target_metric": "negative_emotion_rate"}),
    (
        "Has dwell time gone up over the past 8 weeks?",
        {"intent": "trend", "target_metric": "dwell_time", "filters.time_range.last": "P8W"},
    ),
    (
        "过去三个月高峰期有没有往后移？",
        {"intent": "trend", "target_metric": "peak_hour", "filters.time_range.last": "P3M"},
    ),
    # 哪个环节的投诉明显增多 ("which stage's complaints rose") grouped one event type by event type:
    # named since 2026-12-06 (test_parser_kinds: a single type split by type)
    ("投诉明显增多了吗？", {"intent": "trend", "target_metric": "complaint_count"}),
    (
        "这位顾客最近半年是不是越来越常在周末来？customer_456",
        {"intent": "trend", "filters.entities": ["customer_456"], "filters.time_range.last": "P6M"},
    ),
    # --- compare
    (
        "阴天和晴天的客流对比",
        {
            "intent": "compare",
            "target_metric": "footfall",
            "compare.dimension": "weather",
            "compare.groups": ["cloudy", "sunny"],
        },
    ),
    (
        "雨天的销售额比晴天低多少",
        {
            "intent": "compare",
            "target_metric": "revenue",
            "compare.dimension": "weather",
            "compare.groups": ["rain", "sunny"],
        },
    ),
    (
        "Rainy days vs sunny days: which has higher footfall?",
        {"intent": "compare", "target_metric": "footfall", "compare.dimension": "weather"},
    ),
    (
        "Is revenue higher on weekends than weekdays?",
        {"intent": "compare", "target_metric": "revenue", "compare.dimension": "is_weekend"},
    ),
    (
        "工作日和周末的客单价相比怎么样",
        {
            "intent": "compare",
            "target_metric": "avg_order_value",
            "compare.dimension": "is_weekend",
            "compare.groups": [False, True],
        },
    ),
    (
        "是不是促销日的排队更长？",
        {"intent": "compare", "target_metric": "queue_length", "compare.dimension": "promotion"},
    ),
    (
        "促销日和平时的销售额差多少",
        {
            "intent": "compare",
            "target_metric": "revenue",
            "compare.dimension": "promotion",
            "compare.groups": ["true", "false"],
        },
    ),
    (
        "sh_xuhui_01和bj_chaoyang_02的客单价对比",
        {
            "intent": "compare",
            "compare.dimension": "store_id",
            "compare.groups": ["sh_xuhui_01", "bj_chaoyang_02"],
        },
    ),
    (
        "Compare revenue this week and last week",
        {
            "intent": "compare",
            "target_metric": "revenue",
            "compare.periods": [
                {"label": "this week", "time_range": THIS_WEEK},
                {"label": "last week", "time_range": LAST_WEEK},
            ],
        },
    ),
    (
        "培训后两周内的失误率有没有下降？培训日期是2025-11-10",
        {
            "intent": "compare",
            "target_metric": "staff_error_rate",
            "compare.periods": [
                {"label": "before", "time_range": {"since": _day(2025, 10, 27), "until": _day(2025, 11, 10)}},
                {"label": "after", "time_range": {"since": _day(2025, 11, 10), "until": _day(2025, 11, 24)}},
            ],
        },
    ),
    (
        "Did complaints drop in the week after the new cashier training on Nov 20?",
        {
            "intent": "compare",
            "target_metric": "complaint_count",
            "compare.periods": [
                {"label": "before", "time_range": {"since": _day(2025, 11, 13), "until": _day(2025, 11, 20)}},
                {"label": "after", "time_range": {"since": _day(2025, 11, 20), "until": _day(2025, 11, 27)}},
            ],
        },
    ),
    (
        "What was the staff error rate before and after the training on Nov 10?",
        {"intent": "compare", "target_metric": "staff_error_rate", "compare.periods.0.label": "before"},
    ),
    (
        "培训前后一周的操作失误率对比，培训日期2025-11-10",
        {"intent": "compare", "compare.periods.1.time_range.until": _day(2025, 11, 17)},
    ),
    (
        "How does weather affect average order value?",
        {"intent": "compare", "target_metric": "avg_order_value", "compare.dimension": "weather"},
    ),
    (
        "Does the number of visitors go up when it rains?",
        {"intent": "compare", "target_metric": "footfall", "compare.dimension": "weather"},
    ),
    (
        "Mondays footfall compared with Fridays",
        {"intent": "compare", "compare.dimension": "day_of_week", "compare.groups": [0, 4]},
    ),
    # --- anomaly, periodicity
    (
        "Any anomalies in revenue this month?",
        {"intent": "anomaly", "target_metric": "revenue", "filters.time_range": THIS_MONTH},
    ),
    (
        "过去两周投诉有没有突增的日子",
        {"intent": "anomaly", "target_metric": "complaint_count", "filters.time_range.last": "P2W"},
    ),
    (
        "Were there unusual spikes in queue length at the checkout?",
        {"intent": "anomaly", "target_metric": "queue_length", "filters.attributes": {"zone": "checkout"}},
    ),
    ("Does footfall follow a weekly pattern?", {"intent": "periodicity", "target_metric": "footfall"}),
    ("销售额有没有周期性", {"intent": "periodicity", "target_metric": "revenue"}),
    (
        "Is there a seasonal cycle in complaints?",
        {"intent": "periodicity", "target_metric": "complaint_count"},
    ),
    # --- co-occurrence
    (
        "促销广播和排队是不是一起出现",
        {"intent": "co_occurrence", "pair.a": "promotion_broadcast", "pair.b": "checkout_queue"},
    ),
    (
        "Do complaints and checkout queues happen together?",
        {"intent": "co_occurrence", "pair.a": "complaint", "pair.b": "checkout_queue"},
    ),
    (
        "Do complaints and negative emotion co-occur within 10 minutes?",
        {
            "intent": "co_occurrence",
            "pair.a": "complaint",
            "pair.b": "speech_emotion=negative",
            "pair.window_seconds": 600,
        },
    ),
    (
        "下雨天和投诉是否同时出现",
        {"intent": "co_occurrence", "pair.a": "weather=rain", "pair.b": "complaint"},
    ),
    # --- breakdown
    (
        "各品类销售额占比",
        {"intent": "breakdown", "target_metric": "revenue", "group_by": ["product_category"]},
    ),
    ("按门店拆解客流", {"intent": "breakdown", "target_metric": "footfall", "group_by": ["store_id"]}),
    (
        "Break down footfall by zone",
        {"intent": "breakdown", "target_metric": "footfall", "group_by": ["zone"]},
    ),
    (
        "What share of sales comes from each category?",
        {"intent": "breakdown", "target_metric": "revenue", "group_by": ["product_category"]},
    ),
    ("Revenue by hour", {"intent": "breakdown", "target_metric": "revenue", "group_by": ["hour"]}),
    ("客流在一天中怎么分布的", {"intent": "breakdown", "target_metric": "footfall", "group_by": ["hour"]}),
    (
        "What's the revenue split between weekdays and weekends?",
        {"intent": "breakdown", "group_by": ["is_weekend"], "filters.days_of_week": "absent"},
    ),
    # --- top_k
    (
        "前十的商品销量",
        {"intent": "top_k", "target_metric": "order_count", "top_k": 10, "group_by": ["product_id"]},
    ),
    (
        "销量前五的商品",
        {"intent": "top_k", "target_metric": "order_count", "top_k": 5, "group_by": ["product_id"]},
    ),
    (
        "top 10 products by revenue",
        {"intent": "top_k", "target_metric": "revenue", "top_k": 10, "group_by": ["product_id"]},
    ),
    (
        "Which 5 products sold the most last month?",
        {
            "intent": "top_k",
            "target_metric": "order_count",
            "top_k": 5,
            "group_by": ["product_id"],
            "filters.time_range": LAST_MONTH,
        },
    ),
    ("最受欢迎的3个商品", {"intent": "top_k", "top_k": 3, "group_by": ["product_id"]}),
    ("哪家店的客单价最高", {"intent": "top_k", "target_metric": "avg_order_value", "group_by": ["store_id"]}),
    # a number after 门店 that carries a calendar unit is a time, not a store named 10
    (
        "哪个门店10月的客流最多？",
        {
            "intent": "top_k",
            "target_metric": "footfall",
            "group_by": ["store_id"],
            "filters.time_range": {
                "since": "2025-10-01T00:00:00+08:00",
                "until": "2025-11-01T00:00:00+08:00",
            },
            "filters.store_id": "absent",
        },
    ),
    ("哪个区域停留时间最长", {"intent": "top_k", "target_metric": "dwell_time", "group_by": ["zone"]}),
    (
        "Which hour has the highest footfall?",
        {"intent": "top_k", "target_metric": "footfall", "group_by": ["hour"]},
    ),
    (
        "Which day of the week is busiest?",
        {"intent": "top_k", "target_metric": "footfall", "group_by": ["day_of_week"]},
    ),
    (
        "The 3 busiest hours last week",
        {"intent": "top_k", "target_metric": "footfall", "top_k": 3, "group_by": ["hour"]},
    ),
    (
        "哪位员工失误率最高",
        {"intent": "top_k", "target_metric": "staff_error_rate", "group_by": ["staff_id"]},
    ),
    # --- correlation
    (
        "销售额和客流有关系吗",
        {"intent": "correlation", "target_metric": "revenue", "second_metric": "footfall"},
    ),
    (
        "Is there a relationship between queue length and complaints?",
        {"intent": "correlation", "target_metric": "queue_length", "second_metric": "complaint_count"},
    ),
    (
        "停留时长和转化率相关吗？",
        {"intent": "correlation", "target_metric": "dwell_time", "second_metric": "conversion_rate"},
    ),
    (
        "Is there a link between queue length and complaints?",
        {"intent": "correlation", "target_metric": "queue_length", "second_metric": "complaint_count"},
    ),
    (
        "投诉多的时候排队也长吗",
        {"intent": "correlation", "target_metric": "complaint_count", "second_metric": "queue_length"},
    ),
    (
        "Which products are selling best this month?",
        {"intent": "top_k", "target_metric": "order_count", "group_by": ["product_id"]},
    ),
    # --- retrieve
    (
        "查一下昨天收银台排队的录像",
        {
            "intent": "retrieve",
            "filters.event_type": ["checkout_queue"],
            "filters.attributes": {"zone": "checkout"},
            "filters.time_range": YESTERDAY,
        },
    ),
    (
        "Find footage of customers lingering at the wine shelf on Nov 3",
        {
            "intent": "retrieve",
            "filters.event_type": ["dwell"],
            "filters.time_range": _day_range(2025, 11, 3),
            "semantic_query": "present",
        },
    ),
    (
        "Show me videos of staff_07 at the checkout yesterday evening",
        {"intent": "retrieve", "filters.entities": ["staff_07"], "filters.hours": list(range(18, 23))},
    ),
    # --- forecast
    ("下个月客流会是多少？", {"intent": "forecast", "target_metric": "footfall", "horizon": "P1M"}),
    (
        "Forecast revenue for the next 2 weeks",
        {"intent": "forecast", "target_metric": "revenue", "horizon": "P2W"},
    ),
    ("未来7天的销售额预测", {"intent": "forecast", "target_metric": "revenue", "horizon": "P7D"}),
    ("Will revenue go up next month?", {"intent": "forecast", "target_metric": "revenue"}),
    ("下个月需要备多少货", {"intent": "forecast", "horizon": "P1M"}),
    (
        "sh_xuhui_01 vs bj_chaoyang_02 footfall",
        {"intent": "compare", "compare.groups": ["sh_xuhui_01", "bj_chaoyang_02"]},
    ),
    ("the five best-selling products last week", {"intent": "top_k", "top_k": 5, "group_by": ["product_id"]}),
]


def test_a_value_only_the_encoder_reads_is_read_with_it(store_text_embed: Any) -> None:
    q = "How often do rainy days and high-margin inquiries coincide?"
    result = parse_question(q, VOCAB, NOW, embed=store_text_embed)
    _check(
        result, {"intent": "co_occurrence", "pair.a": "weather=rain", "pair.b": "topic=high_margin_product"}
    )
    # the rules alone cannot read "high-margin": named, not dropped for every inquiry
    alone = parse_question(q, VOCAB, NOW)
    assert alone.status == "unsupported" and {"high", "margin"} <= set(alone.not_understood)


@pytest.mark.parametrize(("question", "expect"), HELD_OUT, ids=[q[:40] for q, _ in HELD_OUT])
def test_held_out_question(question: str, expect: dict[str, Any]) -> None:
    result = parse_question(question, VOCAB, NOW)
    _check(result, expect)
    assert result.backend == "rules"


UNSUPPORTED = [
    ("今天股票怎么样", "zh"),
    ("write me a poem", "en"),
    ("asdfgh qwerty zxcv", "en"),
    ("你好", "zh"),
    ("告诉我一个笑话", "zh"),
    ("How are you?", "en"),
    ("???", "en"),
    ("What's the weather tomorrow?", "en"),
    ("明天会下雨吗", "zh"),
    ("", "en"),
    ("销售额和", "zh"),  # a correlation-less fragment: a metric but nothing to pair -> aggregate is fine
]


@pytest.mark.parametrize(("question", "lang"), UNSUPPORTED[:-1])
def test_unmappable_questions_are_unsupported_with_an_explanation(question: str, lang: str) -> None:
    result = parse_question(question, VOCAB, NOW)
    assert result.status == "unsupported"
    assert result.plan == {}
    assert result.language == lang
    assert result.explanation
    if lang == "zh":
        assert "客流" in result.explanation and "我理解到的" in result.explanation
    else:
        assert "footfall" in result.explanation and "What I understood" in result.explanation


def test_unsupported_explanation_says_what_was_understood() -> None:
    result = parse_question("上周的股票收益率怎么样", VOCAB, NOW)
    assert result.status == "unsupported"
    assert result.explanation is not None and "上周" in result.explanation


def test_correlation_with_one_metric_and_nothing_to_compare_is_unsupported() -> None:
    result = parse_question("Is revenue correlated with anything?", VOCAB, NOW)
    assert result.status == "unsupported"
    assert result.explanation is not None and "two metrics" in result.explanation


def test_correlation_of_a_metric_with_a_day_attribute_becomes_a_compare() -> None:
    result = parse_question("下雨和客单价有没有关系？", VOCAB, NOW)
    _check(result, {"intent": "compare", "target_metric": "avg_order_value", "compare.dimension": "weather"})
    assert "attributes" not in result.plan.get("filters", {})


def test_language_follows_cjk_characters() -> None:
    assert parse_question("sh_xuhui_01 客流", VOCAB, NOW).language == "zh"
    assert parse_question("footfall at sh_xuhui_01", VOCAB, NOW).language == "en"


def test_timezone_offset_follows_the_vocabulary() -> None:
    ny = Vocabulary(timezone="America/New_York")
    result = parse_question("revenue yesterday", ny, NOW)
    # 2025-12-14 is in EST (UTC-5)
    assert result.plan["filters"]["time_range"] == {
        "since": "2025-12-14T00:00:00-05:00",
        "until": "2025-12-15T00:00:00-05:00",
    }


def test_aware_now_is_read_in_the_store_zone() -> None:
    # 2025-12-14 20:00 UTC is already 2025-12-15 04:00 in Shanghai: "yesterday" is the 14th there
    aware = datetime.fromisoformat("2025-12-14T20:00:00+00:00")
    result = parse_question("昨天的销售额", VOCAB, aware)
    assert result.plan["filters"]["time_range"] == _day_range(2025, 12, 14)


def test_month_day_without_year_in_the_future_means_last_year() -> None:
    result = parse_question("12月20号的客流", VOCAB, NOW)  # NOW is 2025-12-15
    assert result.plan["filters"]["time_range"] == _day_range(2024, 12, 20)


def test_new_store_vocabulary_works_without_code_changes() -> None:
    vocab = Vocabulary(
        timezone=TZ,
        store_ids=("gz_tianhe_09",),
        event_types=("customer_enter", "purchase", "fitting_room_visit"),
        attributes={"zone": ("fitting_room", "cashier_desk"), "weather": ("晴", "雨")},
    )
    r = parse_question("find clips of fitting room visit at gz_tianhe_09 yesterday", vocab, NOW)
    _check(
        r,
        {
            "intent": "retrieve",
            "filters.store_id": ["gz_tianhe_09"],
            "filters.event_type": ["fitting_room_visit"],
        },
    )
    assert r.plan["filters"]["attributes"] == {"zone": "fitting_room"}
    r2 = parse_question("雨天和晴天的客流对比", vocab, NOW)
    _check(r2, {"compare.dimension": "weather", "compare.groups": ["雨", "晴"]})
    r3 = parse_question("收银台的排队人数", vocab, NOW)
    assert r3.plan["filters"]["attributes"] == {"zone": "cashier_desk"}
    assert any(m.method == "synonym" and m.value == "cashier_desk" for m in r3.matches)


def test_exact_attribute_value_is_recorded_as_an_exact_match() -> None:
    r = parse_question("revenue in the wine_spirits category last week", VOCAB, NOW)
    assert r.plan["filters"]["attributes"] == {"product_category": "wine_spirits"}
    assert [(m.key, m.value, m.method) for m in r.matches] == [("product_category", "wine_spirits", "exact")]


_WORDS = st.sampled_from(
    "客流 客单价 销售额 上周 过去三个月 前5个 top 3 雨天 晴天 周末 工作日 和 比 相比 趋势 异常 周期 拆解 按 时段 商品 "
    "哪家店 最高 多少 同时出现 相关 视频 找 预测 下个月 revenue footfall by hour zone store last week past 8 weeks "
    "compare vs versus trend anomaly together correlated with show me clips predict next month what was how many "
    "晚上7点到9点 2025-11-10 11月10号 Nov 10 since 2025-11-01 customer_123 sh_xuhui_01 staff_07 ？ ? 的 是 吗".split()
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.lists(_WORDS, min_size=0, max_size=8).map(" ".join), st.text(max_size=40)))
def test_any_question_like_string_gives_a_valid_plan_or_unsupported(question: str) -> None:
    result = parse_question(question, VOCAB, NOW)
    assert result.status in ("ok", "unsupported")
    if result.status == "ok":
        assert plan_errors(result.plan) == []
        assert result.plan["language"] == result.language
    else:
        assert result.explanation
        # a reading with words it does not use keeps its plan, to say what it read
        assert result.plan == {} or (result.not_understood and plan_errors(result.plan) == [])


def test_large_vocabulary_ids_and_values_are_found() -> None:
    vocab = Vocabulary(
        timezone=TZ,
        store_ids=tuple(f"store_{i:03d}" for i in range(50)),
        event_types=("purchase", "dwell"),
        attributes={"product_id": tuple(f"sku_item_{i}" for i in range(600))},
        entities=tuple(f"customer_{i}" for i in range(500)),
    )
    r = parse_question("revenue of sku_item_42 at store_007 for customer_77 last week", vocab, NOW)
    _check(
        r,
        {
            "intent": "aggregate",
            "target_metric": "revenue",
            "filters.store_id": ["store_007"],
            "filters.entities": ["customer_77"],
            "filters.attributes": {"product_id": "sku_item_42"},
            "filters.time_range": LAST_WEEK,
        },
    )


_FLEET = Vocabulary(
    timezone="Asia/Shanghai",
    store_ids=("sh_xuhui_01", "bj_chaoyang_02", "gz_tianhe_03"),
    event_types=VOCAB.event_types,
    attributes=VOCAB.attributes,
)


@pytest.mark.parametrize(
    "q",
    [
        "rank stores by revenue last month",
        "Rank the stores by average order value",
        "每个门店上周的客流",
        "各门店过去三个月的销售额趋势",
        "Which store has the highest conversion rate?",
    ],
)
def test_which_or_each_store_names_the_stores(q: str) -> None:
    result = parse_question(q, _FLEET, NOW)
    assert result.status == "ok", result.explanation
    plan = result.plan
    by_store = (
        "store_id" in (plan.get("group_by") or [])
        or (plan.get("compare") or {}).get("dimension") == "store_id"
    )
    assert by_store, plan
    assert "store_id" not in (plan.get("filters") or {}), plan  # "rank" is no store


@pytest.mark.parametrize(
    "q",
    [
        "Which store's complaints rose most last month?",  # a change, not the most complaints
        "哪家店上个月投诉涨得最多？",
    ],
)
def test_a_change_word_a_level_plan_leaves_out_is_named(q: str) -> None:
    result = parse_question(q, _FLEET, NOW)
    assert result.status == "unsupported" and result.not_understood, result.plan


@pytest.mark.parametrize(
    ("q", "counted"),
    [
        ("How many staff mistakes were there last week?", {"event_type": ["staff_error"]}),
        ("上周员工失误了多少次", {"event_type": ["staff_error"]}),
        (
            "How many negative emotion events last week?",
            {"attributes": {"speech_emotion": ["negative", "angry"]}},
        ),
    ],
)
def test_a_count_asked_is_a_count_not_a_rate(q: str, counted: dict[str, Any]) -> None:
    result = parse_question(q, VOCAB, NOW)
    assert result.status == "ok", result.explanation
    assert result.plan["target_metric"] == "event_count"
    for key, want in counted.items():
        assert result.plan["filters"][key] == want


@pytest.mark.parametrize("q", ["staff error rate last week", "上周员工失误率", "负面情绪占比是多少"])
def test_a_rate_asked_stays_a_rate(q: str) -> None:
    result = parse_question(q, VOCAB, NOW)
    assert result.status == "ok" and result.plan["target_metric"].endswith("_rate")


def test_a_bi_comparison_of_two_hours_is_a_comparison() -> None:
    result = parse_question("上午10点比晚上8点人多吗", VOCAB, NOW)
    _check(result, {"intent": "compare", "target_metric": "footfall", "compare.dimension": "hour"})


@pytest.mark.parametrize(
    ("q", "word"),
    [
        ("排队长的时候生气的顾客是不是更多", "生气"),  # a second measure the plan would not compute
        ("Are angry customers more common when the queue is long?", "queue"),
        ("这周营业额跟上周比怎么样的", None),  # a second period: compared or named, never dropped
    ],
)
def test_a_measure_or_period_read_but_not_used_is_named(q: str, word: str | None) -> None:
    result = parse_question(q, VOCAB, NOW)
    if result.status == "ok" and result.plan["intent"] == "correlation":
        # answered only when both measures are used: one the condition of the other
        assert {result.plan["target_metric"], result.plan["second_metric"]} == {
            "queue_length",
            "negative_emotion_rate",
        }
    elif result.status == "ok":
        # answered only when every period read is used: the periods are compared
        assert len((result.plan.get("compare") or {}).get("periods") or []) == 2, result.plan
        assert word is None
    else:
        assert word is None or word in result.not_understood, result.not_understood


@pytest.mark.parametrize(
    ("q", "window"),
    [
        ("How often are price questions and complaints seen in the same hour?", 3600),
        ("排队和投诉同一个小时内出现的次数", 3600),
    ],
)
def test_the_same_hour_is_a_co_occurrence_window(q: str, window: int) -> None:
    result = parse_question(q, VOCAB, NOW)
    _check(result, {"intent": "co_occurrence", "pair.window_seconds": window})


def test_pai_qian_san_is_a_top_three() -> None:
    _check(
        parse_question("销量排前三的商品是哪些", VOCAB, NOW),
        {"intent": "top_k", "top_k": 3, "group_by": ["product_id"]},
    )
