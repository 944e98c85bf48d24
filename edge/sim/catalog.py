"""The simulated store's fixed world: products, zones, staff and the phrase templates of its speech.

Owned by the store simulator (:mod:`edge.sim.simulator`), which draws from these tables with its
seeded generator. Nothing here is random; changing a table changes every simulated memory, so the
tests derive their expectations from these tables rather than from copied numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

from edge.analysis.source import Vocabulary


@dataclass(frozen=True)
class Product:
    """One item on the shelves.

    ``popularity`` is the relative chance that a bill line is this product (Zipf-like, so the
    top sellers are well separated); ``gross_margin`` is a fraction of the line amount.
    """

    product_id: str
    name_zh: str
    name_en: str
    category: str
    gross_margin: float
    popularity: float
    high_margin: bool


def _zipf(rank: int) -> float:
    return 1.0 / rank


#: The catalogue, most popular first (popularity falls as 1/rank).
PRODUCTS: tuple[Product, ...] = tuple(
    Product(pid, zh, en, cat, margin, _zipf(i + 1), margin >= 0.35)
    for i, (pid, zh, en, cat, margin) in enumerate(
        [
            ("sku_milk_organic", "有机牛奶", "organic milk", "dairy", 0.22),
            ("sku_bread_whole", "全麦面包", "whole-wheat bread", "bakery", 0.30),
            ("sku_eggs_free_range", "散养鸡蛋", "free-range eggs", "fresh", 0.18),
            ("sku_banana", "香蕉", "bananas", "fruit", 0.20),
            ("sku_yogurt", "希腊酸奶", "Greek yogurt", "dairy", 0.28),
            ("sku_water", "矿泉水", "mineral water", "beverages", 0.25),
            ("sku_apple", "红富士苹果", "Fuji apples", "fruit", 0.24),
            ("sku_noodles", "方便面", "instant noodles", "grocery", 0.15),
            ("sku_rice", "东北大米", "northeast rice", "grocery", 0.12),
            ("sku_salad", "即食沙拉", "ready-to-eat salad", "fresh", 0.32),
            ("sku_orange_juice", "鲜榨橙汁", "fresh orange juice", "beverages", 0.34),
            ("sku_tissue", "抽纸", "tissues", "household", 0.20),
            ("sku_detergent", "洗衣液", "laundry detergent", "household", 0.26),
            ("sku_red_wine", "进口红酒", "imported red wine", "wine_spirits", 0.45),
            ("sku_craft_beer", "精酿啤酒", "craft beer", "wine_spirits", 0.40),
            ("sku_salmon", "挪威三文鱼", "Norwegian salmon", "seafood", 0.38),
            ("sku_steak", "澳洲牛排", "Australian steak", "fresh_meat", 0.42),
            ("sku_cherries", "智利车厘子", "Chilean cherries", "fruit", 0.40),
            ("sku_chocolate", "手工巧克力", "handmade chocolate", "snacks", 0.48),
            ("sku_coffee_beans", "精品咖啡豆", "specialty coffee beans", "beverages", 0.50),
            ("sku_chips", "薯片", "potato chips", "snacks", 0.30),
            ("sku_soy_sauce", "酱油", "soy sauce", "grocery", 0.16),
        ]
    )
)

HIGH_MARGIN_PRODUCTS: tuple[Product, ...] = tuple(p for p in PRODUCTS if p.high_margin)
OTHER_PRODUCTS: tuple[Product, ...] = tuple(p for p in PRODUCTS if not p.high_margin)

#: Camera-watched zones where shoppers dwell, with their Chinese names and mean dwell seconds.
DWELL_ZONES: tuple[tuple[str, str, float], ...] = (
    ("shelf_a", "A区货架", 45.0),
    ("shelf_b", "B区货架", 40.0),
    ("fresh", "生鲜区", 70.0),
    ("wine", "酒水区", 90.0),
    ("checkout", "收银区", 30.0),
)

#: Further dwell zones a store of the fleet may have (``SimConfig.zones``); kept apart from
#: :data:`DWELL_ZONES` so that the default store's draws, and so its memory, stay the same.
EXTRA_DWELL_ZONES: tuple[tuple[str, str, float], ...] = (("bakery", "烘焙区", 55.0),)

#: The default store's shopping zones: :data:`DWELL_ZONES` without the checkout.
DEFAULT_ZONES: tuple[str, ...] = tuple(z for z, _, _ in DWELL_ZONES[:-1])

#: Weather climates (``SimConfig.climate``): the first day's (sunny, cloudy, rain) chances and the
#: Markov chain (row = today, column = tomorrow). ``mild`` is the default store's.
CLIMATES: dict[str, tuple[tuple[float, float, float], tuple[tuple[float, float, float], ...]]] = {
    "mild": ((0.45, 0.28, 0.27), ((0.60, 0.25, 0.15), (0.30, 0.40, 0.30), (0.25, 0.30, 0.45))),
    "rainy": ((0.25, 0.30, 0.45), ((0.40, 0.30, 0.30), (0.20, 0.35, 0.45), (0.12, 0.28, 0.60))),
    "dry": ((0.65, 0.25, 0.10), ((0.75, 0.18, 0.07), (0.50, 0.35, 0.15), (0.45, 0.30, 0.25))),
}

STAFF_IDS: tuple[str, ...] = tuple(f"staff_{i:02d}" for i in range(1, 9))

#: Staff operations (POS or camera observed) and the mistakes that can happen in them.
STAFF_OPERATIONS: tuple[str, ...] = ("restock", "price_tag", "cashier_scan", "stock_count", "refund")
STAFF_ERRORS: tuple[tuple[str, str, str], ...] = (
    ("missed_scan", "{staff}收银时漏扫了一件{p}", "{staff} missed scanning one {pe} at checkout"),
    ("wrong_price_tag", "{staff}给{p}贴错了价签", "{staff} put the wrong price tag on the {pe}"),
    ("wrong_shelf", "{staff}把{p}上错了货架", "{staff} shelved the {pe} in the wrong place"),
    ("refund_error", "{staff}退款金额输错了", "{staff} keyed in the wrong refund amount"),
)

#: Inquiry templates per topic: (Chinese templates, English templates); {p} is a product name.
INQUIRY_TEMPLATES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "high_margin_product": (
        (
            "请问这款{p}有优惠吗",
            "这个{p}是哪里产的？",
            "{p}可以试吃吗？",
            "你们的{p}有没有礼盒装？",
            "{p}和上次买的比哪个更好？",
            "想买点{p}送人，有推荐吗",
        ),
        (
            "Is there any discount on the {pe}?",
            "Can I taste the {pe} before buying?",
            "Which {pe} would you recommend as a gift?",
        ),
    ),
    "price": (
        (
            "{p}现在多少钱？",
            "这个{p}是会员价吗？",
            "{p}今天打折吗",
            "结账的价格和标签上的不一样，{p}到底多少钱",
        ),
        ("How much is the {pe} today?", "Is this the member price for the {pe}?"),
    ),
    "stock": (
        ("{p}还有货吗？", "{p}什么时候补货？", "仓库里还有{p}吗", "{p}卖完了吗"),
        ("Do you still have {pe} in stock?", "When will the {pe} be restocked?"),
    ),
    "location": (
        ("请问{p}放在哪个区？", "{p}在哪里可以找到？", "请问洗手间在哪里", "会员服务台在哪边"),
        ("Where can I find the {pe}?", "Which aisle is the {pe} in?"),
    ),
}

#: Topic shares on a day without rain (high_margin_product is scaled on rain days).
INQUIRY_TOPIC_BASE: dict[str, float] = {
    "high_margin_product": 0.2,
    "price": 0.3,
    "stock": 0.25,
    "location": 0.25,
}

GUIDANCE_TEMPLATES_ZH: tuple[str, ...] = (
    "您好，{p}在{zone}，我带您过去",
    "这款{p}今天有活动，第二件半价",
    "{p}刚到货，很新鲜，您可以看看",
    "会员可以积分，结账时出示会员码就行",
    "您要的{p}在{zone}最里面",
)
GUIDANCE_TEMPLATES_EN: tuple[str, ...] = (
    "Hello, the {pe} is over in the {zone_en}, let me show you",
    "The {pe} is on offer today, second one half price",
)

#: Complaint templates: queue-related ones (used more when the queue is long) and others.
COMPLAINTS_QUEUE_ZH: tuple[str, ...] = (
    "排队太久了，收银台只开了一个",
    "结账等了二十分钟，能不能多开几个收银台",
    "队伍排到货架那边了，也没人管",
    "自助收银机又坏了，只能排长队",
    "高峰期就一个收银员，太慢了",
)
COMPLAINTS_QUEUE_EN: tuple[str, ...] = (
    "The queue is far too long, only one checkout is open",
    "I waited fifteen minutes to pay, please open more tills",
)
COMPLAINTS_OTHER_ZH: tuple[str, ...] = (
    "{p}的价签和结账价格不一样",
    "买的{p}已经过期了",
    "店员态度不好，问个问题都不耐烦",
    "{p}的包装是破的",
    "地面太滑了，差点摔倒",
)
COMPLAINTS_OTHER_EN: tuple[str, ...] = ("The price on the shelf for the {pe} was wrong",)

PROMOTION_BROADCASTS_ZH: tuple[str, ...] = (
    "欢迎光临，今日会员日，全场水果八折",
    "顾客朋友们，{p}限时特价，买二送一",
    "今天下午三点起，{p}现场试吃，欢迎品尝",
    "本店今日满一百减二十，欢迎选购",
)

ZONE_NAMES_EN: dict[str, str] = {
    "shelf_a": "aisle A",
    "shelf_b": "aisle B",
    "fresh": "fresh section",
    "wine": "wine section",
    "checkout": "checkout area",
    "bakery": "bakery",
}


#: the vocabulary a simulated store's memory reports (``Source.vocabulary()``): what the parser
#: tests and ``scripts/eval_parser.py`` parse against without building a memory
VOCABULARY = Vocabulary(
    timezone="Asia/Shanghai",
    store_ids=("sh_xuhui_01", "bj_chaoyang_02"),
    event_types=(
        "customer_enter",
        "purchase",
        "dwell",
        "checkout_queue",
        "complaint",
        "customer_inquiry",
        "staff_guidance",
        "staff_error",
        "staff_operation",
        "promotion_broadcast",
    ),
    attributes={
        "weather": ("sunny", "cloudy", "rain"),
        "zone": ("entrance", "shelf_a", "shelf_b", "fresh", "wine", "checkout", "service_desk"),
        "topic": ("high_margin_product", "price", "stock", "location", "queue"),
        "speech_emotion": ("positive", "neutral", "negative", "angry"),
        "product_category": ("dairy", "bakery", "fruit", "wine_spirits"),
    },
    entities=("customer_123", "staff_07"),
    # the stats keys the simulator writes on each event type (bill and line numbers aside)
    keys_by_type={
        "checkout_queue": ("promotion", "queue_length", "weather", "zone"),
        "complaint": ("speech_emotion", "topic", "weather", "zone"),
        "customer_enter": ("person_count", "promotion", "quality", "weather", "zone"),
        "customer_inquiry": (
            "product_category",
            "product_id",
            "promotion",
            "speech_emotion",
            "staff_id",
            "topic",
            "weather",
        ),
        "dwell": ("dwell_seconds", "person_count", "promotion", "quality", "weather", "zone"),
        "promotion_broadcast": ("product_id", "promotion", "promotion_name", "weather"),
        "purchase": (
            "gross_margin",
            "order_amount",
            "product_category",
            "product_id",
            "promotion",
            "weather",
        ),
        "staff_error": ("error_type", "product_id", "promotion", "staff_id", "weather"),
        "staff_guidance": ("product_id", "promotion", "speech_emotion", "staff_id", "weather", "zone"),
        "staff_operation": ("operation", "promotion", "staff_id", "weather"),
    },
)
