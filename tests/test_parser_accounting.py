"""Kinds of word accounting (edge.analysis.parser.accounting): what a reading uses is claimed,
what it does not use is named; neither more nor less.

Each test is one kind, over a few wordings in both languages, on the simulator's vocabulary:
- the rest of a word whose other part an extractor took (客 of 客人 when 人最多 was read), and an
  inflection of the measure's own word ("how many people visit" for visitors) are the measure's;
- "which days" is used only by a reading that answers day by day; a level reading of it (the
  total of the month) is never ``ok``;
- "by weekday" groups by the day of the week; "on weekdays" keeps Monday to Friday;
- "moments when ..." asks for the events (a retrieval), not a count of them.
"""

from __future__ import annotations

from datetime import datetime

import pytest

from edge.analysis.parser import parse_question
from edge.analysis.parser.accounting import compounds, literal, stem
from edge.sim.catalog import VOCABULARY

NOW = datetime(2025, 12, 15, 10, 0)


def _parse(q: str) -> tuple[str, dict, tuple[str, ...]]:
    res = parse_question(q, VOCABULARY, now=NOW)
    return res.status, res.plan, res.not_understood


@pytest.mark.parametrize(
    ("question", "metric"),
    [
        ("Does rain affect how many people visit?", "footfall"),
        ("一天中什么时候客人最多？", "footfall"),
        ("Were fewer shoppers visiting on rainy days?", "footfall"),
    ],
)
def test_rest_of_a_measure_word_is_the_measures(question: str, metric: str) -> None:
    status, plan, words = _parse(question)
    assert status == "ok", words
    assert plan["target_metric"] == metric


@pytest.mark.parametrize(
    ("question", "named"),
    [
        ("上个月鱼的销量是多少？", "鱼"),
        ("牛排区的顾客停留时间有多长？", "牛排"),
        ("How many visitors came by scooter last week?", "scooter"),
    ],
)
def test_an_unknown_word_beside_a_claimed_one_is_still_named(question: str, named: str) -> None:
    """Only a word actually in the question finishes a fragment: an unknown word is named."""
    status, _, words = _parse(question)
    assert status != "ok"
    assert any(named in w for w in words), words


@pytest.mark.parametrize(
    ("pieces", "spans"),
    [
        ("店长在的那几天", [(0, 2)]),  # 店 + 长, each a function character
        ("大客户的客单价", [(0, 3)]),  # 大 + the noun 客户
        ("订单的中位数", [(3, 6)]),
        ("最近六周有没有在慢慢改善", []),  # a character repeated: an adverb
        ("多少顾客", []),  # a function word (多少), then a noun alone
        ("门店顾客", []),  # nouns alone
        ("全店的客流高低", []),  # function words (全店, 高低)
    ],
)
def test_function_characters_side_by_side_make_a_content_word(
    pieces: str, spans: list[tuple[int, int]]
) -> None:
    assert compounds(pieces) == spans


def test_stem() -> None:
    assert stem("visitors") == stem("visit") == "visit"


@pytest.mark.parametrize(
    "question",
    [
        "上个月哪几天营业额特别低？",
        "Which days last month had abnormally low revenue?",
        "What days were unusually quiet in November?",
    ],
)
def test_which_days_is_answered_day_by_day(question: str) -> None:
    status, plan, words = _parse(question)
    assert status == "ok", words
    assert plan["intent"] == "anomaly" and plan.get("time_bucket") == "day"


@pytest.mark.parametrize(
    "question", ["上个月哪天营业额最高？", "Which day had the highest revenue last month?"]
)
def test_which_day_ranking_groups_by_date(question: str) -> None:
    status, plan, _ = _parse(question)
    assert status == "ok"
    assert plan["intent"] == "top_k" and plan["group_by"] == ["date"]


def test_which_days_never_claimed_by_a_level_reading() -> None:
    """Forced to read one level (the month's total), "which days" is named, not swallowed."""
    from edge.analysis.parser.stage_intent import WHICH_DAYS
    from edge.analysis.parser.stage_words import cues_for

    assert WHICH_DAYS not in cues_for({"intent": "aggregate"})
    assert WHICH_DAYS in cues_for({"intent": "top_k", "group_by": ["date"]})
    assert WHICH_DAYS in cues_for({"intent": "anomaly", "time_bucket": "day"})


@pytest.mark.parametrize(
    "question",
    [
        "Show me footfall by weekday for the last 8 weeks",
        "What's revenue per weekday?",
        "按星期看一下上个月的客流",
    ],
)
def test_by_weekday_groups_by_day_of_week(question: str) -> None:
    status, plan, _ = _parse(question)
    assert status == "ok"
    assert "day_of_week" in plan["group_by"]
    assert "days_of_week" not in plan.get("filters", {})


def test_on_weekdays_filters_monday_to_friday() -> None:
    status, plan, _ = _parse("Average order value on weekdays last month")
    assert status == "ok"
    assert plan["filters"]["days_of_week"] == [0, 1, 2, 3, 4]
    assert not plan.get("group_by")


@pytest.mark.parametrize(
    "question",
    ["Find the moments when someone complained about stock", "Show me the times when the queue was long"],
)
def test_moments_when_is_a_retrieval(question: str) -> None:
    status, plan, _ = _parse(question)
    assert status == "ok"
    assert plan["intent"] == "retrieve"


#: one wording per kind read in this session's development round (tests/data/dev's misses)
KINDS = [
    # change words either side of 还是 ask about a course over time, not two groups
    ("每家店过去三个月投诉量是增加还是减少", {"intent": "trend", "group_by": ["store_id"]}),
    ("Are people lingering longer at the wine section than they used to?", {"intent": "trend"}),
    # 谁高 between two named groups compares them
    ("雨天和晴天哪种天气客单价谁高？", {"intent": "compare", "compare.dimension": "weather"}),
    # a share of a rate with nothing to break it down by is the rate itself
    (
        "What share of staff actions were mistakes last month?",
        {"intent": "aggregate", "target_metric": "staff_error_rate"},
    ),
    # a person's events asked to be shown are listed
    (
        "show me every complaint customer_123 made",
        {"intent": "retrieve", "filters.entities": ["customer_123"]},
    ),
    ("调出customer_123最近几次进店的记录", {"intent": "retrieve"}),
    # the day of the week, not the date
    (
        "What's the breakdown of orders by day of the week?",
        {"intent": "breakdown", "group_by": ["day_of_week"]},
    ),
    # 越…，…越 and "days with more X also have more Y" relate two measures
    ("排队越长，顾客负面情绪越多吗？", {"intent": "correlation", "second_metric": "negative_emotion_rate"}),
    (
        "Do days with more staff mistakes also have more complaints?",
        {"intent": "correlation", "target_metric": "staff_error_rate", "second_metric": "complaint_count"},
    ),
    # things happening at the same time
    ("顾客投诉的时候，是不是经常刚好在排长队？", {"intent": "co_occurrence"}),
    ("Are customer inquiries usually followed by staff guidance?", {"intent": "co_occurrence"}),
    # 会不会比 compares (not a forecast), and 高一点 is "a bit higher", not 1 o'clock
    ("雨天的转化率会不会比晴天低", {"intent": "compare", "compare.dimension": "weather"}),
    ("下雨的时候客单价会不会高一点", {"intent": "compare", "filters.hours": None}),
    # a change asked over a span is its course over that span
    ("员工失误率近两个月有没有改善？", {"intent": "trend", "filters.time_range.last": "P2M"}),
    # events by type
    ("Break down all events by type for the past week", {"intent": "breakdown", "group_by": ["event_type"]}),
    # dev7 (session 7): "go with" relates two measures; a money measure said in its currency
    (
        "Do longer queues go with more complaints?",
        {"intent": "correlation", "target_metric": "queue_length", "second_metric": "complaint_count"},
    ),
    ("how much did we sell yesterday, in yuan?", {"intent": "aggregate", "target_metric": "revenue"}),
    # a comparative inside a measure's verb compares; 出单 is orders and 卖的钱 revenue
    ("下雨天大家在店里是不是逛得更久？", {"intent": "compare", "compare.dimension": "weather"}),
    ("上个月哪10个商品出单最多？", {"target_metric": "order_count", "top_k": 10, "group_by": ["product_id"]}),
    ("昨天哪家店卖的钱最多？", {"target_metric": "revenue", "group_by": ["store_id"]}),
    # who asks, set aside; the fleet is every store; "either store" asks by store
    ("HQ here - what was the Beijing store's footfall yesterday?", {"filters.store_id": ["bj_chaoyang_02"]}),
    ("Across the fleet, how many orders did we have last week?", {"target_metric": "order_count"}),
    ("Did either store have unusual queue lengths in the last two weeks?", {"group_by": ["store_id"]}),
    # "take in" is revenue, "take" orders; "together" after the stores counted is their total
    (
        "How much did both stores take in together over the past 7 days?",
        {"intent": "aggregate", "target_metric": "revenue"},
    ),
    ("How many orders did we take three days ago?", {"target_metric": "order_count"}),
    # orders per visitor, visitors turned into buyers: the conversion rate
    ("On rainy days, how many orders do we get per visitor?", {"target_metric": "conversion_rate"}),
    (
        "11月北京店把进店顾客变成买单顾客的能力比上海店强吗？",
        {"intent": "compare", "target_metric": "conversion_rate"},
    ),
    (
        "Did the Beijing store turn visitors into buyers better than the Shanghai store?",
        {"target_metric": "conversion_rate"},
    ),
    ("Have complaints been snowballing over the past month?", {"intent": "trend"}),
    # one store's share: every store's part, no filter to that store
    (
        "What share of the past three months' revenue came from Xuhui?",
        {"group_by": ["store_id"], "filters.store_id": None},
    ),
    ("最近三个月的销售额里，徐汇店占了几成？", {"intent": "breakdown", "group_by": ["store_id"]}),
]


def _get(plan: dict, path: str) -> object:
    cur: object = plan
    for part in path.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    return cur


@pytest.mark.parametrize(("question", "expect"), KINDS, ids=[q[:30] for q, _ in KINDS])
def test_kinds_of_wording(question: str, expect: dict[str, object]) -> None:
    status, plan, words = _parse(question)
    assert status == "ok", words
    for path, want in expect.items():
        assert _get(plan, path) == want, (path, plan)


@pytest.mark.parametrize(
    ("question", "last"),
    [
        ("投诉数量这几个月有上升趋势吗", "P3M"),
        ("revenue over the last few weeks", "P3W"),
        ("the past couple of months revenue trend", "P2M"),
    ],
)
def test_a_few_is_read_as_three(question: str, last: str) -> None:
    """几 / "a few" in a span is read as 3 (2 for "a couple"); the interpretation shows the dates."""
    status, plan, _ = _parse(question)
    assert status == "ok"
    assert plan["filters"]["time_range"] == {"last": last}


@pytest.mark.parametrize(
    "question",
    [
        "Are queues getting longer?",
        "Is customer mood getting worse? Trend of negative emotion over the last 6 weeks",
    ],
)
def test_getting_worse_is_a_course_over_time(question: str) -> None:
    """ "Getting longer / worse" asks how a measure went, not a comparison of groups, and a word
    of the measure's own name (mood) is not a grouping."""
    status, plan, _ = _parse(question)
    assert status == "ok"
    assert plan["intent"] == "trend" and not plan.get("group_by")


@pytest.mark.parametrize(
    ("question", "intent"),
    [
        # a correlation's levels ("is high ... high too") say what it asks
        ("when AOV is high, is dwell time high too", "correlation"),
        ("when visitors are up, are sales up too", "correlation"),
        # a co-occurrence's verbs ("turn up", 出现)
        ("do complaints and angry voices turn up together", "co_occurrence"),
        # a periodicity's "regular"
        ("do visitors come in a regular weekly rhythm", "periodicity"),
    ],
)
def test_the_words_of_a_kind_are_claimed_by_a_plan_of_that_kind(question: str, intent: str) -> None:
    status, plan, words = _parse(question)
    assert status == "ok", words
    assert plan["intent"] == intent


@pytest.mark.parametrize(
    ("question", "word"),
    [
        # never a cue: a level word alone does not make a correlation, nor leave the plan it is in
        ("average order value of our regular customers", "regular"),
        # and a field's words belong only to a plan that uses the field
        ("complaints and angry voices last week", "voices"),
        # an unknown thing "turning up" with a known one is still unknown
        ("do refunds and complaints turn up together", "refunds"),
    ],
)
def test_the_words_of_a_kind_are_not_claimed_by_another_plan(question: str, word: str) -> None:
    status, _, words = _parse(question)
    assert status == "unsupported" and word in words


@pytest.mark.parametrize(
    ("question", "expect"),
    [
        # the propensity to buy is the conversion rate; a comparative beside it stays a comparison
        ("停留越久是不是越容易买", {"intent": "correlation", "second_metric": "conversion_rate"}),
        (
            "are people more likely to buy when it rains",
            {"intent": "compare", "target_metric": "conversion_rate"},
        ),
        # "how much did we take" is revenue; 排多长的队 is the queue
        ("how much did we take this week", {"intent": "aggregate", "target_metric": "revenue"}),
        ("结账要排多长的队", {"intent": "aggregate", "target_metric": "queue_length"}),
    ],
)
def test_measures_named_by_what_customers_do(question: str, expect: dict[str, object]) -> None:
    status, plan, words = _parse(question)
    assert status == "ok", words
    for path, want in expect.items():
        assert _get(plan, path) == want, (path, plan)


@pytest.mark.parametrize(
    ("question", "intent"),
    [
        # courtesy, hedges, tags and pronouns are not content
        ("麻烦帮我看下咱们店上周一共进来多少客人，谢谢", "aggregate"),
        ("Daily order count trend for the past 30 days, thx", "trend"),
        ("Do we get more visitors on sunny days than on rainy ones?", "compare"),
        ("过去30天店员的操作出错率是多少，其实有点担心", "aggregate"),
        # retrieval verbs anywhere in the question
        ("把staff_07上个月的出错记录调出来看看", "retrieve"),
        ("could you pull up customer_123's visits from last month", "retrieve"),
        # words of a sudden change are an anomaly's
        ("排队长度最近四周有没有不正常的峰值", "anomaly"),
        ("when did negative emotions suddenly jump in the past two months", "anomaly"),
    ],
)
def test_padding_and_everyday_verbs(question: str, intent: str) -> None:
    status, plan, words = _parse(question)
    assert status == "ok", words
    assert plan["intent"] == intent


@pytest.mark.parametrize(
    ("question", "word"),
    [
        # padding words never carry a condition that is dropped
        ("thanks, what was revenue after the renovation", "renovation"),
        ("其实我想知道装修以后的营业额", "装修"),
    ],
)
def test_padding_does_not_hide_a_condition(question: str, word: str) -> None:
    status, _, words = _parse(question)
    assert status == "unsupported" and any(word in w for w in words), words


@pytest.mark.parametrize(
    ("question", "expect"),
    [
        # every store counted is all the memory's stores; "combined" keeps them one
        ("Total revenue for both stores combined in November?", {"intent": "aggregate", "group_by": None}),
        ("两家店加起来11月的生意额是多少", {"intent": "aggregate", "group_by": None}),
        # without it the store noun is the grouping (分别, 各)
        ("两个店的客流趋势分别怎样，近两个月", {"intent": "trend", "group_by": ["store_id"]}),
        (
            "how do the two stores compare on queue length",
            {"intent": "compare", "compare.dimension": "store_id"},
        ),
    ],
)
def test_every_store_counted(question: str, expect: dict[str, object]) -> None:
    status, plan, words = _parse(question)
    assert status == "ok", words
    stores = _get(plan, "filters.store_id") or _get(plan, "compare.groups")
    assert stores == sorted(VOCABULARY.store_ids)
    for path, want in expect.items():
        assert _get(plan, path) == want, (path, plan)


def test_a_count_of_stores_the_memory_does_not_hold_is_named() -> None:
    status, _, words = _parse("三家店的营业额")  # the simulated memory holds two
    assert status == "unsupported" and "三家" in words


@pytest.mark.parametrize(
    ("question", "intent"),
    [
        # two measures moving together are a correlation, events turning up together a co-occurrence
        ("Do order counts and queue length move together day by day?", "correlation"),
        ("Looking at both stores together, is footfall correlated with order count?", "correlation"),
        ("投诉和排队是不是经常一起出现", "co_occurrence"),
        # 会不会 with another kind's cue asks "does", not "will"
        ("顾客咨询的次数会不会按周重复", "periodicity"),
        ("下个月客流会不会下降", "forecast"),
    ],
)
def test_the_kind_a_question_names(question: str, intent: str) -> None:
    status, plan, words = _parse(question)
    assert status == "ok", words
    assert plan["intent"] == intent


@pytest.mark.parametrize(
    ("question", "n", "group"),
    [
        # the N of "the N things with the most ..." / 最…的N天 is a ranking's count
        ("Who are the 3 staff with the highest error rate", 3, ["staff_id"]),
        ("List the 5 days with the longest queues", 5, ["date"]),
        ("排队最长的5天列出来", 5, ["date"]),
    ],
)
def test_the_count_of_a_ranking_before_what_is_ranked(question: str, n: int, group: list[str]) -> None:
    status, plan, words = _parse(question)
    assert status == "ok", words
    assert (plan["intent"], plan["top_k"], plan["group_by"]) == ("top_k", n, group)


@pytest.mark.parametrize(
    "question", ["staff_03和staff_05谁出错率更高", "Who makes more mistakes, staff_03 or staff_05?"]
)
def test_ids_of_one_field_compared_are_its_groups(question: str) -> None:
    """Never one figure over both ids: the ids are the groups of their field, and no filter."""
    status, plan, words = _parse(question)
    assert status == "ok", words
    assert plan["compare"] == {"dimension": "staff_id", "groups": ["staff_03", "staff_05"]}
    assert "entities" not in (plan.get("filters") or {})


def test_ids_of_no_field_compared_are_refused_not_summed() -> None:
    status, plan, _ = _parse("customer_123和customer_472谁的客单价高")
    assert status == "unsupported" and not plan


@pytest.mark.parametrize(
    ("question", "word"),
    [
        # a negation no extractor reads is named, never dropped: the filter would be the opposite
        # (days and promotion days left out are read: test_days_left_out_are_the_other_days)
        ("不算雨天的营业额", "不算"),
        ("revenue excluding the bakery", "excluding"),
        # "leaving" was read as the slip "leading" and the exclusion dropped (`ok`)
        ("What was the average dwell time last month, leaving out the fresh section?", "leaving"),
        ("不下雨的时候客单价", "不"),
        ("revenue on days that were not rainy", "not"),
        ("revenue on days it didn't rain", "didn"),
    ],
)
def test_a_negation_is_never_dropped(question: str, word: str) -> None:
    status, _, words = _parse(question)
    assert status == "unsupported" and any(word in w for w in words), words  # 不, or 不下雨的时候


@pytest.mark.parametrize(
    ("question", "filters"),
    [
        ("revenue last month excluding weekends", {"days_of_week": [0, 1, 2, 3, 4]}),
        ("footfall not counting Sundays", {"days_of_week": [0, 1, 2, 3, 4, 5]}),
        ("上个月除周末外的营业额", {"days_of_week": [0, 1, 2, 3, 4]}),
        ("不算促销日的营业额", {"attributes": {"promotion": "false"}}),
        ("orders without promotion days", {"attributes": {"promotion": "false"}}),
        (
            "What was the average order value last month, weekends excluded?",
            {"days_of_week": [0, 1, 2, 3, 4]},
        ),
        ("上个月刨掉周末，客单价是多少？", {"days_of_week": [0, 1, 2, 3, 4]}),
        # a store left out: the other stores held (the store list is whole, unlike a field's values)
        ("除了徐汇店，其他门店上个月一共卖了多少钱？", {"store_id": ["bj_chaoyang_02"]}),
        (
            "Leaving Xuhui aside, what did our other stores take in last month?",
            {"store_id": ["bj_chaoyang_02"]},
        ),
    ],
)
def test_days_left_out_are_the_other_days(question: str, filters: dict[str, object]) -> None:
    """ "excluding weekends" was refused (a negation named): days of a closed set (the weekdays,
    promotion days or not) left out are the others, and the word is claimed."""
    status, plan, words = _parse(question)
    assert status == "ok", words
    assert {k: plan["filters"].get(k) for k in filters} == filters


@pytest.mark.parametrize(
    ("question", "intent"),
    [("客流涨了没有", "trend"), ("过去一个月排队变长了没", "trend"), ("投诉多了没有？", "trend")],
)
def test_a_question_tag_after_a_verb_asks(question: str, intent: str) -> None:
    status, plan, words = _parse(question)
    assert (status, plan["intent"], words) == ("ok", intent, ())


@pytest.mark.parametrize(
    ("question", "named"),
    [("不下雨的日子客流多少", "不"), ("没有下雨的时候营业额是多少", "没"), ("revenue on dry days", "dry")],
)
def test_the_other_weathers_are_not_a_filter_of_one(question: str, named: str) -> None:
    """不下雨 is never read as rain; alone (no comparison) the rest of the weathers is named."""
    status, plan, words = _parse(question)
    assert status != "ok" and any(named in w for w in words), words
    assert "weather" not in ((plan.get("filters") or {}).get("attributes") or {})


@pytest.mark.parametrize(
    "question",
    [
        "雨天和不下雨的日子客单价比较",
        "雨天跟没下雨的时候比客流怎么样",
        "Is the queue longer on rainy days than on dry days?",
    ],
)
def test_rain_set_against_the_rest_compares_the_weathers(question: str) -> None:
    status, plan, words = _parse(question)
    assert status == "ok", words
    assert plan["compare"] == {"dimension": "weather"} and "filters" not in plan


@pytest.mark.parametrize(
    ("question", "bucket"),
    [
        ("revenue month after month", "month"),
        ("footfall week on week", "week"),
        ("complaints day after day", "day"),
    ],
)
def test_unit_after_unit_is_a_series_bucket(question: str, bucket: str) -> None:
    status, plan, words = _parse(question)
    assert (status, plan.get("time_bucket")) == ("ok", bucket), words


@pytest.mark.parametrize(
    ("question", "named"),
    [("其实我想知道装修以后的营业额", "装修以后"), ("新来的收银员上岗以后排队变长了吗", "上岗以后")],
)
def test_after_what_without_a_date_is_named(question: str, named: str) -> None:
    """之后 / 以后 is used by a plan around a date (or a co-occurrence's "followed by"), never
    claimed by a reading that has no pivot."""
    status, _plan, words = _parse(question)
    assert status != "ok" and named in words, words


def test_a_peak_moving_word_is_a_peak_hours() -> None:
    status, _plan, words = _parse("把货架挪到门口之后营业额涨了吗")
    assert status != "ok" and any("挪" in w for w in words), words


def test_a_pattern_spells_no_word_of_its_lookarounds() -> None:
    assert literal(r"(?<![不没])(?<!不下)(?:下雨天?|雨)(?=(?:是不是)?多)[^，]{1,8}").split() == [
        "(?:下雨天?|雨)",
        "{1,8}",
    ]


@pytest.mark.parametrize(
    ("question", "types"),
    [
        # complaints about the queue: complaints of that topic, not complaints and queue events
        ("Could you pull up the complaints about the queue from yesterday?", ["complaint"]),
        ("I'd like to see the mistakes staff_07 made in November, thanks", ["staff_error"]),
        ("有没有顾客抱怨店员态度不好的，找出来我看下", ["complaint"]),
        ("其实我就想看看上周六下午收银区排队的那几条", ["checkout_queue"]),
    ],
)
def test_events_a_retrieval_verb_names_are_listed(question: str, types: list[str]) -> None:
    """ "pull up the complaints about X": the events, not their count."""
    status, plan, words = _parse(question)
    assert (status, plan["intent"]) == ("ok", "retrieve"), words
    assert plan["filters"]["event_type"] == types


@pytest.mark.parametrize(
    "question", ["Find how many complaints we had last week", "帮我找一下上周投诉一共多少"]
)
def test_a_retrieval_verb_with_a_figure_asked_is_the_figure(question: str) -> None:
    status, plan, _words = _parse(question)
    assert (status, plan["intent"], plan["target_metric"]) == ("ok", "aggregate", "complaint_count")


@pytest.mark.parametrize(
    ("question", "intent"),
    [
        ("Complaints per week are rising, aren't they?", "trend"),
        ("排队长度和负面情绪比例之间有联系不", "correlation"),
        ("avg checkout queue length over the past 7 days", "aggregate"),
        ("Is the weekend peak hour any different from the weekday one?", "compare"),
        ("投诉有没有周期性，比如每隔几天来一波", "periodicity"),
        ("Is there any periodicity in complaints, like waves every few days?", "periodicity"),
        ("客人最爱逗留的两个区域", "top_k"),
        ("上个月的收入按天气拆一拆？", "breakdown"),
        ("周一和周六的客流哪个多？", "compare"),
    ],
)
def test_tags_abbreviations_and_everyday_cues(question: str, intent: str) -> None:
    status, plan, words = _parse(question)
    assert (status, plan.get("intent")) == ("ok", intent), words
    assert plan.get("group_by") != ["date"]  # 按天气 is by weather, not 按天


@pytest.mark.parametrize(
    ("question", "named"),
    [
        ("Since we moved the wine display to the entrance, have wine sales gone up?", "since we moved the"),
        ("footfall after the rain stopped", "after the rain stopped"),
    ],
)
def test_a_condition_told_as_a_clause_is_named(question: str, named: str) -> None:
    """ "since we moved X to Y" is something that happened, which no event dates: never two zones
    compared in its place."""
    status, _plan, words = _parse(question)
    assert status != "ok" and named in words, words


@pytest.mark.parametrize(
    ("question", "window"),
    [
        ("revenue since the start of november", {"since": "2025-11-01T00:00:00+08:00"}),
        ("revenue from the beginning of october", {"since": "2025-10-01T00:00:00+08:00"}),
        ("revenue until the end of october", {"until": "2025-11-01T00:00:00+08:00"}),
    ],
)
def test_since_the_start_of_a_month_is_open(question: str, window: dict[str, str]) -> None:
    status, plan, words = _parse(question)
    assert (status, plan["filters"]["time_range"]) == ("ok", window), words


@pytest.mark.parametrize(
    ("question", "window"),
    [
        ("revenue at the start of november", ("2025-11-01", "2025-11-11")),
        ("revenue in the first week of November", ("2025-11-01", "2025-11-08")),
        ("footfall in mid-November", ("2025-11-11", "2025-11-21")),
        ("11月上旬的营业额", ("2025-11-01", "2025-11-11")),
        ("10月底的客流", ("2025-10-21", "2025-11-01")),
    ],
)
def test_a_part_of_a_month_is_its_days_not_the_month(question: str, window: tuple[str, str]) -> None:
    status, plan, words = _parse(question)
    tr = plan["filters"]["time_range"]
    assert (status, tr["since"][:10], tr["until"][:10]) == ("ok", *window), words


@pytest.mark.parametrize(
    ("question", "named"),
    [
        ("下个月VIP顾客的客流会是多少", "vip"),
        ("how much will revenue from loyalty members be next month", "loyalty"),
        ("春节客流会不会更多", "春节"),  # a lunar holiday (圣诞节 is read: its day ahead)
        ("下个月雨天的客流会是多少", "雨天"),
        ("forecast revenue on promotion days next month", "promotion days"),
    ],
)
def test_a_forecast_uses_every_word_too(question: str, named: str) -> None:
    """A forecast of the whole store is never the answer to one about a group it cannot tell."""
    status, _plan, words = _parse(question)
    assert status != "ok" and any(named in w for w in words), words


@pytest.mark.parametrize(
    ("question", "horizon"),
    [
        ("if this keeps up, where will revenue be in two weeks", "P2W"),
        ("接下来一周投诉会不会变多，预估一下", "P1W"),
        ("按现在的势头，月底投诉会有多少", "P16D"),  # 2025-12-15: the 16 days after today
        ("Can you project revenue for the rest of the month?", "P16D"),
    ],
)
def test_a_forecasts_horizon_in_everyday_words(question: str, horizon: str) -> None:
    status, plan, words = _parse(question)
    assert (status, plan["intent"], plan.get("horizon")) == ("ok", "forecast", horizon), words


@pytest.mark.parametrize(
    ("question", "pair"),
    [
        ("客流多的日子客单价是不是反而低", ("footfall", "avg_order_value")),
        ("On busier days, is average order value actually lower?", ("footfall", "avg_order_value")),
        ("if people dwell longer, does conversion go up too", ("dwell_time", "conversion_rate")),
        (
            "I'd expect a longer queue to mean more complaints - is that so?",
            ("queue_length", "complaint_count"),
        ),
    ],
)
def test_one_measure_as_the_condition_of_another_is_a_correlation(
    question: str, pair: tuple[str, str]
) -> None:
    status, plan, words = _parse(question)
    assert (status, plan["intent"], (plan["target_metric"], plan["second_metric"])) == (
        "ok",
        "correlation",
        pair,
    ), words


@pytest.mark.parametrize(
    ("question", "expect"),
    [
        ("Any weeks where the staff error rate was way off?", {"intent": "anomaly", "time_bucket": "week"}),
        ("Do queue lengths repeat on a day-of-week cycle?", {"intent": "periodicity"}),
        ("revenue by day-of-week", {"intent": "breakdown", "group_by": ["day_of_week"]}),
        (
            "Compare revenue between the Xuhui and Chaoyang stores",
            {
                "intent": "compare",
                "compare": {"dimension": "store_id", "groups": ["sh_xuhui_01", "bj_chaoyang_02"]},
            },
        ),
        ("Let me look at the checkout queue events from last Saturday afternoon", {"intent": "retrieve"}),
    ],
)
def test_buckets_cycles_and_places_in_everyday_words(question: str, expect: dict[str, object]) -> None:
    status, plan, words = _parse(question)
    assert status == "ok", words
    assert {k: plan.get(k) for k in expect} == expect


@pytest.mark.parametrize(
    ("question", "named"),
    [
        ("how did sales do yesterday compared to the day after", "compared to"),
        ("同比去年客流", ""),
    ],
)
def test_a_comparison_word_of_a_plan_that_compares_nothing_is_named(question: str, named: str) -> None:
    """ "compared to the day after" read as yesterday alone would answer half the question ("the
    day before" is read: test_parser_kinds); 同比去年 alone is the same period last year with
    nothing to set it against, refused as 去年同期 is."""
    status, _plan, words = _parse(question)
    assert status != "ok" and (named in words if named else not _plan), words


@pytest.mark.parametrize(
    ("question", "window"),
    [
        ("前俩月的营业额", {"last": "P2M"}),
        (
            "昨儿个收银台排队多长",
            {"since": "2025-12-14T00:00:00+08:00", "until": "2025-12-15T00:00:00+08:00"},
        ),
    ],
)
def test_colloquial_days_and_numbers(question: str, window: dict[str, str]) -> None:
    status, plan, words = _parse(question)
    assert (status, plan["filters"]["time_range"]) == ("ok", window), words


@pytest.mark.parametrize(
    ("question", "group"),
    [
        ("highest revenue day last month", ["date"]),
        ("the day with the most complaints", ["date"]),
        ("what was our best-selling day last month", ["date"]),
        ("who sold the most", ["staff_id"]),
        ("who made the most errors", ["staff_id"]),
    ],
)
def test_a_superlative_ranks_what_it_is_said_of(question: str, group: list[str]) -> None:
    """ "the day with the most complaints" is a ranking of days, never the month's total."""
    status, plan, words = _parse(question)
    assert (status, plan.get("intent"), plan.get("group_by")) == ("ok", "top_k", group), words


@pytest.mark.parametrize(
    "question", ["customers who made the most purchases", "what was the highest queue length last week"]
)
def test_a_superlative_no_plan_ranks_is_named(question: str) -> None:
    status, plan, words = _parse(question)
    assert status != "ok" and any(w in words for w in ("most", "highest")), (plan, words)


@pytest.mark.parametrize(("question", "named"), [("两周内的投诉", "两周内"), ("三天内的营业额", "三天内")])
def test_a_window_around_no_date_is_named(question: str, named: str) -> None:
    """三天内 sets a window around a date; with none, the whole memory's total is not its answer."""
    status, _plan, words = _parse(question)
    assert status != "ok" and named in words, words


@pytest.mark.parametrize(
    ("question", "group"),
    [("最忙的一周", ["week"]), ("上个月营业额最高的那天", ["date"]), ("出错最多的是谁", ["staff_id"])],
)
def test_a_superlative_ranks_what_it_is_said_of_in_chinese(question: str, group: list[str]) -> None:
    status, plan, words = _parse(question)
    assert (status, plan.get("intent"), plan.get("group_by")) == ("ok", "top_k", group), words


@pytest.mark.parametrize(
    ("question", "hours"),
    [
        ("revenue after 6pm", list(range(18, 24))),
        ("footfall before noon", list(range(0, 12))),
        ("晚上6点以后的营业额", list(range(18, 24))),
        ("10点以前的订单", list(range(0, 10))),
    ],
)
def test_hours_open_on_one_side(question: str, hours: list[int]) -> None:
    """ "after 6pm" is every hour from six, never the one hour at six; "before noon" the morning."""
    status, plan, words = _parse(question)
    assert (status, plan["filters"]["hours"]) == ("ok", hours), words


@pytest.mark.parametrize(
    ("question", "expect"),
    [
        ("revenue before and after november 1", {"intent": "compare"}),
        ("rain vs no rain footfall", {"intent": "compare", "compare": {"dimension": "weather"}}),
        (
            "周一和周五哪天营业额高",
            {"intent": "compare", "compare": {"dimension": "day_of_week", "groups": [0, 4]}},
        ),
    ],
)
def test_around_a_date_the_rest_of_a_field_and_which_of_two_days(
    question: str, expect: dict[str, object]
) -> None:
    status, plan, words = _parse(question)
    assert status == "ok", words
    assert {k: plan.get(k) for k in expect} == expect
    if question.startswith("revenue before"):
        assert [p["label"] for p in plan["compare"]["periods"]] == ["before", "after"]


@pytest.mark.parametrize(
    "question", ["revenue on days that were not rainy", "it's not raining, how is footfall"]
)
def test_a_negated_value_is_never_a_filter(question: str) -> None:
    status, plan, _words = _parse(question)
    assert status != "ok" and "attributes" not in (plan.get("filters") or {})


@pytest.mark.parametrize(
    ("question", "intent"),
    [
        ("list staff_07's errors this month", "retrieve"),
        ("What has customer_123 bought since October?", "retrieve"),
        ("do complaints tend to come with long queues", "co_occurrence"),
        ("Does a promo broadcast usually come with a queue right after, within 10 min?", "co_occurrence"),
    ],
)
def test_listing_a_persons_events_and_pairs_in_everyday_words(question: str, intent: str) -> None:
    status, plan, words = _parse(question)
    assert (status, plan.get("intent")) == ("ok", intent), words


def test_a_count_of_events_names_the_measures_of_other_events() -> None:
    """ "staff errors and complaints" counted as staff errors alone would drop the complaints."""
    status, plan, words = _parse("how many staff errors and complaints yesterday")
    assert status != "ok" and "complaints" in words, (plan, words)
    status, plan, words = _parse("投诉和员工失误一共多少次")
    assert status == "ok" and sorted(plan["filters"]["event_type"]) == ["complaint", "staff_error"], words
