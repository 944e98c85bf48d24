"""The words of the operators' summaries: dimensions, group values, signed changes, in zh and en.

Pure tables and helpers used by every operator's ``summarize()`` and by the presentation layer
(:mod:`edge.presentation.tables` labels result rows with them), so an answer names a group the
same way in its sentence and in its table: ``is_weekend=true`` reads "weekends" / "周末",
``promotion=false`` "normal days" / "非促销日", ``hour=19`` "19:00-20:00", ``day_of_week=0``
"Monday" / "周一", ``weather=rain`` "rainy days" / "雨天". A value with no word (a product id, a
zone name) is shown as it is stored.
"""

from __future__ import annotations

import re
from typing import Any

#: a dimension (a plan's ``group_by`` / ``compare.dimension`` key) as a noun
DIMENSIONS: dict[str, dict[str, str]] = {
    "weather": {"zh": "天气", "en": "weather"},
    "hour": {"zh": "时段", "en": "hour"},
    "day_of_week": {"zh": "星期", "en": "weekday"},
    "is_weekend": {"zh": "周末/工作日", "en": "weekend or weekday"},
    "promotion": {"zh": "促销", "en": "promotion"},
    "date": {"zh": "日期", "en": "date"},
    "week": {"zh": "周", "en": "week"},
    "month": {"zh": "月份", "en": "month"},
    "store_id": {"zh": "门店", "en": "store"},
    "product_category": {"zh": "品类", "en": "product category"},
    "product_id": {"zh": "商品", "en": "product"},
    "zone": {"zh": "区域", "en": "zone"},
    "source": {"zh": "来源", "en": "source"},
    "staff_id": {"zh": "员工", "en": "staff member"},
    "event_type": {"zh": "事件类型", "en": "event type"},
    "period": {"zh": "时期", "en": "period"},
    "topic": {"zh": "话题", "en": "topic"},
    "speech_emotion": {"zh": "语音情绪", "en": "speech emotion"},
}

WEEKDAYS: dict[str, tuple[str, ...]] = {
    "zh": ("周一", "周二", "周三", "周四", "周五", "周六", "周日"),
    "en": ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"),
}

#: values with a word of their own, per dimension and language (keys lower case)
VALUES: dict[str, dict[str, dict[str, str]]] = {
    "is_weekend": {
        "zh": {"true": "周末", "false": "工作日"},
        "en": {"true": "weekends", "false": "weekdays"},
    },
    "promotion": {
        "zh": {"true": "促销日", "false": "非促销日"},
        "en": {"true": "promotion days", "false": "normal days"},
    },
    "weather": {
        "zh": {
            "rain": "雨天",
            "rainy": "雨天",
            "sunny": "晴天",
            "sun": "晴天",
            "clear": "晴天",
            "cloudy": "阴天",
            "overcast": "阴天",
            "snow": "雪天",
            "snowy": "雪天",
            "fog": "雾天",
            "foggy": "雾天",
            "storm": "暴雨天",
            "windy": "大风天",
        },
        "en": {
            "rain": "rainy days",
            "rainy": "rainy days",
            "sunny": "sunny days",
            "sun": "sunny days",
            "clear": "clear days",
            "cloudy": "cloudy days",
            "overcast": "overcast days",
            "snow": "snowy days",
            "snowy": "snowy days",
            "fog": "foggy days",
            "foggy": "foggy days",
            "storm": "stormy days",
            "windy": "windy days",
        },
    },
    "period": {
        "zh": {"before": "之前", "after": "之后", "current": "本期", "previous": "上期"},
        "en": {},
    },
    "event_type": {
        "zh": {
            "customer_enter": "顾客进店",
            "purchase": "购买",
            "dwell": "停留",
            "checkout_queue": "收银排队",
            "complaint": "投诉",
            "customer_inquiry": "顾客咨询",
            "staff_guidance": "员工引导",
            "staff_error": "员工操作失误",
            "staff_operation": "员工操作",
            "promotion_broadcast": "促销广播",
        },
        "en": {
            "customer_enter": "customer entries",
            "purchase": "purchases",
            "dwell": "dwells",
            "checkout_queue": "checkout queues",
            "complaint": "complaints",
            "customer_inquiry": "customer inquiries",
            "staff_guidance": "staff guidance",
            "staff_error": "staff errors",
            "staff_operation": "staff operations",
            "promotion_broadcast": "promotion broadcasts",
        },
    },
    "topic": {
        "zh": {
            "high_margin_product": "高毛利商品",
            "price": "价格",
            "stock": "库存",
            "location": "商品位置",
            "queue": "排队",
        },
        "en": {
            "high_margin_product": "high-margin products",
            "price": "prices",
            "stock": "stock",
            "location": "where things are",
            "queue": "queues",
        },
    },
    "speech_emotion": {
        "zh": {"negative": "负面", "angry": "愤怒", "positive": "正面", "neutral": "中性", "happy": "开心"},
        "en": {},
    },
}

#: a statistical test in words (the result keeps scipy's name in ``test``)
TESTS: dict[str, dict[str, str]] = {
    "ttest_ind": {"zh": "韦尔奇 t 检验", "en": "Welch's t-test"},
    "ttest_ind_from_stats": {"zh": "韦尔奇 t 检验", "en": "Welch's t-test"},
    "chi2_contingency": {"zh": "卡方检验", "en": "chi-square test"},
    "mannwhitneyu": {"zh": "秩和检验", "en": "rank-sum test"},
}


def test_label(test: object, lang: str) -> str:
    """``ttest_ind_from_stats`` -> "Welch's t-test" / "韦尔奇 t 检验" (unknown names as they are)."""
    return TESTS.get(str(test), {}).get(_lang(lang), str(test))


#: the words of "no" / "yes" for a boolean value outside a known dimension
BOOL_WORDS = {"zh": {"true": "是", "false": "否"}, "en": {"true": "yes", "false": "no"}}

_HOUR_RANGE = re.compile(r"^(\d{1,2})-(\d{1,2})h$")
_HOUR_LIST = re.compile(r"^(\d{1,2}(?:,\d{1,2})*)h$")
_BOOL_TEXT = {"true": "true", "false": "false", "1": "true", "0": "false", "yes": "true", "no": "false"}


def _lang(lang: str) -> str:
    return "zh" if lang == "zh" else "en"


def dimension_label(dimension: str | None, lang: str) -> str:
    """A dimension as a noun: ``product_id`` -> "product" / "商品" (unknown keys as they are)."""
    if not dimension:
        return ""
    return DIMENSIONS.get(dimension, {}).get(_lang(lang), dimension)


def dimensions_label(dimensions: Any, lang: str) -> str:
    """Several dimensions joined (``["zone", "hour"]`` -> "zone/hour" / "区域/时段")."""
    dims = [str(d) for d in dimensions or []]
    return "/".join(dimension_label(d, lang) for d in dims)


def clock(hour: int) -> str:
    """``19`` -> ``19:00``."""
    return f"{int(hour):02d}:00"


def hour_label(value: Any, lang: str) -> str:
    """An hour group as clock times: ``19`` -> ``19:00-20:00``, ``"19-21h"`` -> ``19:00-21:00``."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int) or (isinstance(value, float) and float(value).is_integer()):
        h = int(value)
        return f"{clock(h)}-{clock(h + 1)}" if 0 <= h <= 23 else str(value)
    text = str(value).strip()
    if text.isdigit():
        return hour_label(int(text), lang)
    m = _HOUR_RANGE.match(text)
    if m:
        return f"{clock(int(m.group(1)))}-{clock(int(m.group(2)))}"
    m = _HOUR_LIST.match(text)
    if m:
        sep = "、" if _lang(lang) == "zh" else ", "
        return sep.join(hour_label(int(h), lang) for h in m.group(1).split(","))
    if text == "other_hours":
        return "其他时段" if _lang(lang) == "zh" else "other hours"
    return text


def weekday_label(value: Any, lang: str) -> str:
    """``0`` (Monday, as the store's ``day_of_week``) -> "Monday" / "周一"."""
    try:
        i = int(value)
    except (TypeError, ValueError):
        return str(value)
    return WEEKDAYS[_lang(lang)][i] if 0 <= i <= 6 else str(value)


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def value_label(dimension: str | None, value: Any, lang: str) -> str:
    """A group value as the answer names it, never ``true``/``false``/``1``/``0``."""
    lang = _lang(lang)
    dim = dimension or ""
    if dim == "hour":
        return hour_label(value, lang)
    if dim == "day_of_week":
        return weekday_label(value, lang)
    text = _as_text(value)
    low = text.lower()
    if dim in ("is_weekend", "promotion"):
        low = _BOOL_TEXT.get(low, low)
    table = VALUES.get(dim, {}).get(lang, {})
    if low in table:
        return table[low]
    if isinstance(value, bool):
        return BOOL_WORDS[lang][low]
    return text


def keys_label(dimensions: Any, value: Any, lang: str) -> str:
    """A group of one or more dimensions (multi-key groups are ``"a|b"``) as words."""
    dims = [str(d) for d in dimensions or []]
    if len(dims) > 1 and isinstance(value, str) and value.count("|") == len(dims) - 1:
        parts = value.split("|")
        return "/".join(value_label(d, p, lang) for d, p in zip(dims, parts, strict=True))
    return value_label(dims[0] if dims else None, value, lang)


def side_label(side: str, lang: str) -> str:
    """A co-occurrence side: ``weather=rain`` -> "rainy days" / "雨天", an event type by its name."""
    lang = _lang(lang)
    if "=" in side:
        k, v = (x.strip() for x in side.split("=", 1))
        word = value_label(k, v, lang)
        if word != v:
            return word
        dim = dimension_label(k, lang)
        return f"{dim}「{v}」" if lang == "zh" else f"{dim} {v}"
    return VALUES["event_type"][lang].get(side, side)


def signed_pct(x: float | None, lang: str, fmt_number: Any = None) -> str:
    """A change in words: ``-62.7`` -> "down 62.7%" / "下降 62.7%"; ``None`` -> "change n/a"."""
    lang = _lang(lang)
    if x is None:
        return "无法计算变化" if lang == "zh" else "change not defined"
    mag = f"{abs(float(x)):.1f}%"
    if round(float(x), 1) == 0:
        return "基本持平" if lang == "zh" else "about unchanged"
    if x > 0:
        return f"上升 {mag}" if lang == "zh" else f"up {mag}"
    return f"下降 {mag}" if lang == "zh" else f"down {mag}"


def higher_lower(x: float | None, lang: str) -> str:
    """``32.7`` -> "32.7% higher" / "高 32.7%"; a negative value is "lower" / "低"."""
    lang = _lang(lang)
    if x is None:
        return "无法计算差异" if lang == "zh" else "difference not defined"
    mag = f"{abs(float(x)):.1f}%"
    if round(float(x), 1) == 0:
        return "基本相同" if lang == "zh" else "about the same"
    if x > 0:
        return f"高 {mag}" if lang == "zh" else f"{mag} higher"
    return f"低 {mag}" if lang == "zh" else f"{mag} lower"
