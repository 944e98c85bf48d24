"""The everyday words of a store, in Chinese and English, for metrics, dimensions and known values.

Owned by :mod:`edge.analysis.parser`. The metric and dimension names are the enums of
``plan.schema.json``; the words are what a store manager says. Store-specific words (event types,
stats values, ids) are not here: they come from the memory's :class:`Vocabulary` at parse time.
Tables are regexes over the normalised (NFKC, lower-cased) question; the longest match wins.
"""

from __future__ import annotations

from edge.analysis.parser.text import compile_table, word

W = word

METRICS = compile_table(
    [
        # avg_order_value
        (
            r"客单价|平均客单|客单|单均|笔单价|平均每单|每单(?:平均)?(?:花(?:了|掉)?(?:多少钱?|几块钱|的钱)?|消费|金额|多少钱)|每笔(?:订单)?(?:花|消费|金额)"
            r"|平均(?:订单|消费)(?:金额|额)?|平均每位顾客(?:花|消费)"
            r"|(?:每|一|单|平均每)(?:单|笔|张小票|次结账|个购物篮)(?:平均|一般|大概|通常)?(?:能|会)?(?:花|消费|买|卖|付)(?:了|掉)?(?:多少钱?|的钱|几块钱|金额)?"
            r"|(?:每|一|单)(?:单|笔)(?:的)?(?:金额|钱)|(?:一次|每次)(?:结账|买单|购物)?(?:平均|一般)?(?:花|消费|买)(?:了)?多少钱?|购物篮(?:金额|大小)",
            "avg_order_value",
        ),
        (
            W(
                r"(?:average|avg\.?|mean|typical) (?:order|basket|ticket|transaction|purchase|bill|spend)"
                r"(?: (?:value|size|amount))?|aov|order values?|basket (?:size|value)s?|ticket size"
                r"|spend(?:ing)? per (?:order|customer|visit|transaction|basket|ticket|receipt|bill|checkout)|average spend|value per order"
                r"|(?:spend|spent|pay|paid|cost|costs|amount|money|come to|comes to)(?: \w+){0,3} (?:per|each|a|every|one|an?) (?:order|basket|ticket|transaction|receipt|bill|checkout|cart)"
                r"|(?:each|every|one|an?|per|typical|usual|average|avg) (?:order|basket|ticket|transaction|receipt|bill|cart)(?: \w+){0,2} (?:cost|costs|come to|comes to|worth|amounts? to|value)"
                r"|(?:order|basket|ticket|cart|bill) (?:size|value|total)s?|dollars? per (?:order|basket|ticket)"
            ),
            "avg_order_value",
        ),
        # footfall
        (
            r"客流量?|人流量?|进店(?:人数|人次|顾客数?|客流|量|的人)|到店(?:人数|人次|顾客数?|客流|量)|来店的?人数"
            r"|来了多少(?:位)?(?:顾客|人|客人)|多少(?:位)?(?:顾客|人|客人)(?:进店|来|到店|进来|光顾)"
            r"|进来了?多少(?:位|个)?(?:顾客|人|客人)|顾客(?:数量|人数|数)|人最多|人多|人少|人最少|忙不忙|有多忙|忙吗|最忙",
            "footfall",
        ),
        (
            W(
                r"footfall|foot traffic|visitors?|visitor counts?|(?:store )?visits|traffic|entries"
                r"|how many (?:customers|people|shoppers|visitors|guests)(?: (?:came|come|visited|walked|entered|did we get|were there))?"
                r"|(?:customers|people|shoppers) (?:came|visited|walked in|entered|come in)"
                r"|number of (?:customers|visitors|shoppers|people)|customer counts?|busiest|busier|busy|crowded|(?:biggest |largest )?crowds?|quiet(?:er|est)?"
                r"|(?:more|fewer|less|most|fewest) (?:customers|people|shoppers|visitors|guests)"
            ),
            "footfall",
        ),
        # order_count
        (
            r"订单(?:数量?|量)?|单量|销量|成交了?多少(?:单|笔)|成交(?:量|数|笔数|单数)|交易(?:数|笔数|量|次数)|卖了多少(?:单|件|份)?"
            r"|多少(?:单|笔)|卖出(?:多少(?:单|件|份|笔)?|的数量)?|售出(?:数量)?|销售(?:数量|件数)|下单(?:数|量|次数)|卖得最好|卖得(?:最)?(?:好|差|多|少)|最畅销|畅销|最受欢迎|受欢迎",
            "order_count",
        ),
        (
            W(
                r"orders?|order counts?|number of orders|transactions?|sales volume|units? sold|items sold"
                r"|how many (?:orders|sales|transactions)|sold the most|sells? (?:the )?most|best[- ]?sell(?:ing|ers?)|selling (?:best|well|the most)|sell(?:s|ing)? best"
                r"|number of sales|bills|purchases|sold|(?:most )?popular"
            ),
            "order_count",
        ),
        # revenue
        (
            r"总?销售额|营业额|营收|收入|流水|成交额|成交金额|销售金额|卖了多少钱|赚了多少钱?|赚得?(?:最)?(?:多|少)|赚钱|业绩|总销售|销售(?!量|数)",
            "revenue",
        ),
        (
            W(
                r"revenues?|sales|turnover|takings|gross sales|income|gmv|earnings|money(?: (?:made|earned|taken))?"
                r"|how much (?:did we |we )?(?:make|made|sell|sold|earn|earned)"
            ),
            "revenue",
        ),
        # conversion_rate
        (
            r"转化率|转化|成交率|购买率|购买转化|进店(?:的人)?(?:里|中)?(?:有多少|多少)?(?:人)?(?:购买|买东西|下单)的?(?:比例|比率|占比)"
            r"|(?:进店(?:的人)?(?:里|中)?)?(?:有)?(?:多少|什么)(?:比例|比率)(?:的人)?(?:买了?东西|购买了?|下单了?)",
            "conversion_rate",
        ),
        (
            W(
                r"conversion(?: rates?)?|convert(?:ed|s|ing)?|purchase rate|close rate"
                r"|(?:share|percentage|proportion|fraction|ratio) of (?:visitors|walk-ins|people|customers|shoppers|entries)(?: who| that)?(?: \w+)? (?:buy|buys|bought|purchase|purchased)"
            ),
            "conversion_rate",
        ),
        # dwell_time
        (
            r"停留(?:的)?(?:时长|时间|多久|很久|多长时间)?|逗留(?:时间|时长)?|平均停留"
            r"|(?:待|呆)(?:了|上|得)?(?:更|最)?(?:多久|多长时间|很久|多少分钟|久|长)",
            "dwell_time",
        ),
        (
            W(
                r"dwell(?:ing)?(?: times?)?|time spent(?: in (?:the )?(?:store|shop))?|linger(?:ing|ed|s)?(?: times?)?|stay(?:ed)? (?:time|duration)"
                r"|(?:hang(?:s|ing)?|hung|stick(?:s|ing)?|stuck) (?:around|about)(?![^?.]{0,25}(?:queue|line)s?(?![a-z]))"
                r"|spend(?:s|ing)? (?:the )?(?:most |more |less |longest |least )?time|how long (?:do |did |does )?(?:customers|people|shoppers|visitors|folks|guests) (?:\w+ )?(?:stay|spend|linger|remain)(?![^?.]{0,25}(?:queue|line)s?(?![a-z]))"
            ),
            "dwell_time",
        ),
        # queue_length
        (r"排队(?:人数|长度|的人|时间)?|队伍(?:长度)?|队列|排长队|排(?:了)?(?:几|多少)个?人", "queue_length"),
        (
            W(
                r"queue(?: lengths?)?|queues|queuing|queueing|line lengths?|waiting lines?|checkout lines?"
                r"|lines? at (?:the )?(?:checkout|till|register)s?|(?:checkout|till|register) (?:queues?|lines?)(?: lengths?)?"
                r"|wait(?:s|ed|ing)? in (?:the )?(?:line|queue)s?"
            ),
            "queue_length",
        ),
        # complaint_count
        (r"投诉(?:数量?|次数|量|率)?|抱怨|客诉|差评", "complaint_count"),
        (
            W(r"complaints?|complain(?:ed|ing|s)?|grievances?|how many (?:customers|people) complain(?:ed)?"),
            "complaint_count",
        ),
        # negative_emotion_rate
        (
            r"负面情绪(?:比例|比率|率|占比)?|(?:生气|不满|不高兴|愤怒)的?(?:顾客|客人)(?:的)?(?:占比|比例|比率)|情绪差|情绪不好|不满情绪|生气|愤怒|不开心|不高兴|不满意?|消极情绪",
            "negative_emotion_rate",
        ),
        (
            W(
                r"negative (?:emotions?|sentiments?|moods?|feelings?)(?: (?:rate|share|ratio|level))?"
                r"|angry|anger|unhappy|upset|frustrat(?:ed|ion)|bad moods?|negativity|dissatisf(?:ied|action)"
                r"|(?:share|percentage|proportion|fraction|ratio) of (?:angry|unhappy|upset|negative|annoyed|frustrated) (?:customers|shoppers|people|voices|conversations)"
            ),
            "negative_emotion_rate",
        ),
        # staff_error_rate
        (
            r"(?:操作)?(?:失误|错误|出错|差错)(?:率|比例|次数)?|错误率|出错率|操作失误(?:率)?",
            "staff_error_rate",
        ),
        (
            W(
                r"(?:staff |employee |operational |operating )?(?:errors?|mistakes?)(?: rates?)?|error rates?"
                r"|(?:(?<=staff )|(?<=cashier )|(?<=cashiers )|(?<=employee )|(?<=employees )|(?<=workers )|(?<=team ))"
                r"(?:mess(?:es|ed)?|screw(?:s|ed)?|slip(?:s|ped)?) up"
            ),
            "staff_error_rate",
        ),
        # peak_hour
        (
            r"(?:客流|进店|人流|到店)?(?:早|午|晚)?高峰(?:期|时段|时间|时刻|的时间)?|峰值时段|最忙的?(?:时段|时候|时间|几点|小时)|人最多的(?:时段|时候|时间|几点|小时)",
            "peak_hour",
        ),
        (
            r"几点(?:来|到店|进店|人最多|客人最多|顾客最多)|什么时候(?:来|人最多)|一般几点|哪个钟点人最多",
            "peak_hour",
        ),
        (
            W(
                r"(?:(?:footfall|traffic|visitor|customer|morning|lunch(?:time)?|evening|afternoon) )?peak(?: hours?| times?| periods?)?"
                r"|busiest (?:hours?|times?)|rush hours?|(?:morning|lunch(?:time)?|afternoon|evening|after-work|weekend) rush|rush|what time is busiest"
                r"|what time (?:do|does|did|are|is) (?:most )?(?:customers|people|shoppers|visitors)"
                r"|when do (?:most )?(?:customers|people|shoppers|visitors) (?:come|visit|arrive|shop)"
            ),
            "peak_hour",
        ),
        # event_count
        (
            r"事件(?:数量?|次数)|多少次|几次|次数|频率|频次|多少起|发生了多少|多少条(?:事件|记录)|(?:各种|所有|全部)?事件(?:分别)?有多少条?",
            "event_count",
        ),
        (
            W(
                r"how many times|number of events|event counts?|frequency|how often|how many events|all (?:the )?events"
                r"|(?:how many |number of )?(?:incidents?|occurrences?)"
            ),
            "event_count",
        ),
    ]
)

#: Words naming a dimension (what to group or compare by). Values of a dimension (雨天, 周末) are
#: matched elsewhere.
DIMENSIONS = compile_table(
    [
        (r"天气|晴雨", "weather"),
        (W(r"weather(?: conditions?)?"), "weather"),
        (r"时段|几点钟?|钟点|哪个点|时间段|小时|哪个时间|一天中|一天里|一天当中|一天之中|班次", "hour"),
        (
            W(
                r"hours?|hourly|time of (?:the )?day|time slots?|times of day|throughout the day|over the day"
                r"|parts? of (?:the )?day|(?:work |staff )?shifts"
            ),
            "hour",
        ),
        (r"星期几|周几|礼拜几|一周中的哪天|周内|按星期|按周几|每个星期几|周一到周日", "day_of_week"),
        (
            W(
                r"days? of (?:the )?week|weekdays? vs\.? weekends?|which day of the week"
                r"|(?:by|per|each|across) (?:week ?days?|days? of (?:the )?week)"
            ),
            "day_of_week",
        ),
        (r"是否周末|周末与否", "is_weekend"),
        (r"哪天|哪一天|日期|按天|按日|每天|每日|逐日", "date"),
        (W(r"which days?|dates?|by day|per day|each day|daily"), "date"),
        (r"哪周|哪一周|按周|每周(?![一二三四五六日天末])|逐周", "week"),
        (W(r"which weeks?|by week|per week|each week|weekly"), "week"),
        (r"哪个月|哪月|按月|每个?月|逐月|月份", "month"),
        (W(r"which months?|by month|per month|each month|monthly"), "month"),
        (
            # not the 店 of 店员 / 店长 (a person: "哪个店员" is which staff member)
            r"(?:(?:每个|每一个|各个)门店|每家(?:门)?店|门店|哪家店|哪个店|各店|各门店|分店|店铺|哪家|各家店)(?![员长])",
            "store_id",
        ),
        (W(r"stores?|shops?|branch(?:es)?|locations?|outlets?"), "store_id"),
        (r"品类|类别|类目|商品类别|商品分类|分类|大类", "product_category"),
        (W(r"(?:product )?categor(?:y|ies)|departments?"), "product_category"),
        (r"商品|产品|单品|货品|sku", "product_id"),
        (W(r"products?|items?|skus?|goods"), "product_id"),
        (
            r"分区域|按区域|各个?区域|哪个货架区|哪(?:个|些|一个)区域|区域|哪个区|哪一个区|哪些区|分区|各区|各个区|货架区|陈列区|展区|通道|哪排货架|哪个货架",
            "zone",
        ),
        (W(r"zones?|areas?|aisles?|sections?|floor areas?|parts of the store|corners? of the store"), "zone"),
        (r"摄像头|麦克风|来源|数据源|设备", "source"),
        (W(r"cameras?|mics?|microphones?|sources?|sensors?|devices?"), "source"),
        (r"员工|店员|收银员|导购|营业员|哪位同事", "staff_id"),
        (
            # not the staff of "staff guidance" / "staff errors" (an event type)
            W(
                r"staff(?: members?)?(?! (?:guidance|errors?|mistakes?|operations?|actions?))|employees?|cashiers?|clerks?|associates?|workers?"
            ),
            "staff_id",
        ),
        (r"促销|活动|优惠", "promotion"),
        (W(r"promotions?|promos?|campaigns?|promotion days?"), "promotion"),
        (r"环节|事件类型|哪类事件|什么事件|按(?:事件)?类型|各(?:种|类)事件", "event_type"),
        (
            W(
                r"event types?|types? of events?|kinds? of events?|stages?|steps?|(?:by|per|each) (?:event )?types?"
            ),
            "event_type",
        ),
        (r"情绪|心情", "speech_emotion"),
        (W(r"emotions?|sentiments?|moods?"), "speech_emotion"),
    ]
)

#: Words that set a trend's time bucket.
TIME_BUCKETS = compile_table(
    [
        (r"每天|每日|按天|按日|逐日|日度|每一天", "day"),
        # not "by day of the week" (a day-of-week grouping)
        (W(r"daily|(?:by|per|each) day(?! of)|day[- ]by[- ]day|day[- ]over[- ]day|every day"), "day"),
        (r"每周(?![一二三四五六日天末])|按周|逐周|周度|每个?星期(?![一二三四五六日天几])", "week"),
        (W(r"weekly|by week|per week|each week|week[- ]by[- ]week|week[- ]over[- ]week|every week"), "week"),
        (r"每个?月|按月|逐月|月度", "month"),
        (
            W(
                r"monthly|by month|per month|each month|month[- ]by[- ]month|month[- ]over[- ]month|every month"
            ),
            "month",
        ),
        (r"每小时|按小时|逐小时|每个小时", "hour"),
        (W(r"hourly|by hour|per hour|each hour|hour[- ]by[- ]hour|every hour"), "hour"),
    ]
)

#: Well-known event types of the MEV contract and the words for them.
EVENT_TYPE_WORDS = compile_table(
    [
        (r"进店|入店|进门", "customer_enter"),
        (W(r"(?:customer )?(?:entr(?:y|ies)|enters?|entering|walk[- ]?ins?)"), "customer_enter"),
        (r"购买|买单|结账记录|收银记录|付款", "purchase"),
        (W(r"purchases?|bought|buying|payments?"), "purchase"),
        (r"停留|逗留|驻足|徘徊", "dwell"),
        (W(r"dwell(?:s|ing)?|linger(?:s|ing|ed)?|lingering"), "dwell"),
        (r"(?:收银|结账)?排队|排长队|队伍", "checkout_queue"),
        (W(r"(?:checkout |till )?(?:queues?|queuing|queueing|lines)"), "checkout_queue"),
        (r"投诉|抱怨|客诉", "complaint"),
        (W(r"complaints?|complain(?:ed|ing|s)?"), "complaint"),
        (r"咨询|询问|问询|打听|问价", "customer_inquiry"),
        (
            W(r"(?:customer )?(?:inquir(?:y|ies)|enquir(?:y|ies)|questions? about|asking about|asks? about)"),
            "customer_inquiry",
        ),
        (r"(?:员工|店员)?(?:导购(?:介绍)?|引导)|推荐介绍", "staff_guidance"),
        (W(r"(?:staff )?guidance|recommendations? by staff"), "staff_guidance"),
        (r"(?:员工|店员|操作)?(?:失误|出错|差错)", "staff_error"),
        (W(r"(?:staff )?(?:errors?|mistakes?)"), "staff_error"),
        (r"(?:员工)?操作(?!失误)", "staff_operation"),
        (W(r"staff operations?"), "staff_operation"),
        (r"促销广播(?:播出|播放)?|广播(?:播出|播放)?|促销播报|播报", "promotion_broadcast"),
        (
            W(r"(?:promotion(?:al)?|promo) (?:broadcasts?|announcements?)|broadcasts?|announcements?"),
            "promotion_broadcast",
        ),
    ]
)

#: Synonyms for stats values: key -> [(question words, tokens a stored value may be made of)].
#: A stored value matches when it equals one of the tokens or one of its ``_``-separated parts does.
VALUE_WORDS: dict[str, list[tuple[str, tuple[str, ...]]]] = {
    "weather": [
        (
            r"下雨天?|雨天|暴雨天?|大雨天?|小雨天?|雷雨天?|毛毛雨|阵雨|雨|"
            + W(
                r"rainy|raining|rains|rained|rain|wet days?|wet weather|drizzl\w*|showers|stormy|storms?|thunderstorms?|downpours?"
            ),
            ("rain", "rainy", "storm", "drizzle", "雨", "雨天", "下雨"),
        ),
        (
            r"晴天|晴朗|晴|" + W(r"sunny|sunshine|sun|clear (?:days?|skies|weather)|fine weather"),
            ("sunny", "sun", "clear", "晴", "晴天"),
        ),
        (
            r"阴天|多云|阴|" + W(r"cloudy|overcast|grey days?|gray days?"),
            ("cloudy", "overcast", "阴", "多云", "阴天"),
        ),
        (
            r"下雪天?|雪天|暴雪|大雪|小雪|雪|" + W(r"snowy|snowing|snowed|snow|blizzards?|sleet"),
            ("snow", "snowy", "雪", "雪天"),
        ),
        (
            r"雾天|有雾|大雾|雾霾|起雾|" + W(r"foggy|fog|misty|mist|haze|hazy|smog"),
            ("fog", "foggy", "haze", "雾"),
        ),
        (r"大风天?|刮风|风大|" + W(r"windy|wind|gales?|gusty"), ("wind", "windy", "风")),
        (
            r"高温天?|天热|热天|炎热|酷暑|"
            + W(r"hot (?:days?|weather)|heat ?waves?|when it'?s hot|scorching"),
            ("hot", "heat", "高温"),
        ),
        (
            r"天冷|冷天|寒冷|降温|低温天?|"
            + W(r"cold (?:days?|weather|snaps?)|when it'?s cold|freezing|chilly"),
            ("cold", "freezing", "低温"),
        ),
    ],
    "zone": [
        (
            r"收银台|收银区|收银处|收银|结账处|结账区|结账|" + W(r"checkouts?|cashiers?|tills?|registers?"),
            ("checkout", "cashier", "收银", "收银台"),
        ),
        (r"入口处?|门口|进门处|" + W(r"entrances?|doors?|entry"), ("entrance", "door", "entry", "入口")),
        (
            r"(?<!哪个)(?<!哪些)(?<!各个)(?<!每个)(?<!各)货架(?!区)|" + W(r"shel(?:f|ves)"),
            ("shelf", "shelves", "货架"),
        ),
        (r"生鲜区?|" + W(r"fresh (?:food|produce) (?:area|section)|fresh area"), ("fresh", "生鲜")),
        (r"酒水区|" + W(r"wine (?:area|section|aisle|shel(?:f|ves))"), ("wine", "酒水")),
        (r"服务台|" + W(r"service desk|help desk"), ("service", "desk", "服务台")),
    ],
    # everyday retail categories: a stored label matches when it or one of its parts is a token
    # (dairy, wine_spirits, fresh_fruit ...); a category the memory lacks matches nothing
    "product_category": [
        (r"(?:乳制品|奶制品|牛奶|酸奶|奶)类?|" + W(r"dairy|milk"), ("dairy", "milk", "乳制品")),
        (
            r"(?:面包|烘焙|糕点|西点)类?|" + W(r"bakery|breads?|baked goods|pastr(?:y|ies)"),
            ("bakery", "bread", "烘焙"),
        ),
        (r"(?:水果|果品)类?|" + W(r"fruits?"), ("fruit", "fruits", "水果")),
        (
            r"(?:蔬菜|青菜)类?|" + W(r"vegetables?|veg|veggies|produce"),
            ("vegetable", "vegetables", "veg", "produce", "蔬菜"),
        ),
        (
            r"酒类|酒水|洋酒|红酒|白酒|葡萄酒|烈酒|" + W(r"wines?|spirits|liquor|alcohol|booze"),
            ("wine", "spirits", "liquor", "alcohol", "酒"),
        ),
        (r"肉类|肉品|鲜肉|" + W(r"meats?|butcher"), ("meat", "meats", "肉")),
        (r"海鲜|水产|" + W(r"seafood|fish"), ("seafood", "fish", "海鲜")),
        (
            r"零食|小吃|休闲食品|" + W(r"snacks?|confectioner(?:y|ies)|sweets|candy"),
            ("snack", "snacks", "candy", "零食"),
        ),
        (
            r"饮料|饮品|" + W(r"drinks|beverages?|soft drinks"),
            ("drink", "drinks", "beverage", "beverages", "饮料"),
        ),
        (r"冷冻食品|冻品|速冻|" + W(r"frozen(?: food)?"), ("frozen", "冷冻")),
        (r"日用品|家居用品|日化|" + W(r"household|home goods|toiletries"), ("household", "home", "日用品")),
    ],
    "topic": [
        (r"问价(?:格|钱)?|价格|价钱|多少钱|" + W(r"prices?|pricing|cost of"), ("price", "pricing", "价格")),
        (
            r"库存|缺货|断货|有没有货|有货|没货|补货|"
            + W(r"stock|out of stock|in stock|restock\w*|inventory"),
            ("stock", "inventory", "库存"),
        ),
        (
            r"位置|在哪(?:里|儿)?|怎么走|找不到|" + W(r"locations? of|where (?:to find|is|are)|finding"),
            ("location", "where", "位置"),
        ),
        (r"排队|" + W(r"queues?|queuing|waiting in line"), ("queue", "排队")),
        (r"退货|退款|" + W(r"returns?|refunds?"), ("return", "returns", "refund", "退货")),
    ],
}

# a category's area is a zone ("面包区", "the bakery section"): a stored zone named like the category
VALUE_WORDS["zone"] += [
    (
        rf"(?:{zh})(?:区|专区|货架|柜台)|" + W(rf"(?:{en}) (?:area|section|aisle|zone|corner|counter)s?"),
        tokens,
    )
    for zh, en, tokens in (
        ("乳制品|奶制品|牛奶|酸奶", "dairy|milk", ("dairy", "milk")),
        ("面包|烘焙|糕点", "bakery|bread", ("bakery", "bread")),
        ("水果", "fruits?", ("fruit", "fruits")),
        ("蔬菜", "vegetables?|veg|produce", ("vegetable", "vegetables", "veg", "produce")),
        ("酒类|酒|红酒|洋酒", "wines?|spirits|liquor", ("wine", "spirits", "liquor")),
        ("肉类|鲜肉", "meats?|butcher", ("meat", "butcher")),
        ("海鲜|水产", "seafood|fish", ("seafood", "fish")),
        ("零食", "snacks?", ("snack", "snacks")),
        ("饮料|饮品", "drinks|beverages?", ("drink", "drinks", "beverage", "beverages")),
        ("冷冻|冻品", "frozen(?: food)?", ("frozen",)),
    )
]

#: Words that describe a measure's own events ("customers' voices" of the negative-emotion rate,
#: "staff actions" of the error rate, "ring up" of orders): claimed only when the plan computes
#: that measure, never a cue for it.
MEASURE_CONTEXT: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "negative_emotion_rate": (
        ("说话", "讲话", "语音", "声音", "语气", "情绪", "通话"),
        (
            "voice",
            "voices",
            "speech",
            "tone",
            "tones",
            "calls",
            "call",
            "conversation",
            "conversations",
            "mood",
        ),
    ),
    "staff_error_rate": (("操作", "动作", "作业"), ("action", "actions", "operation", "operations", "tasks")),
    "order_count": (("收银", "成交"), ("ring", "rang", "rung", "rings", "placed", "processed")),
    "complaint_count": (("收到", "提出"), ("filed", "raised", "made", "lodged", "received")),
}

#: Day-attribute values with a fixed meaning: promotion days (values of ``promotion``).
PROMOTION_VALUES = compile_table(
    [
        (
            r"(?:做|搞)促销(?:的)?(?:那几天|那些天|日子)?|促销(?:的)?(?:那几天|那些天)|促销日|促销期间|有促销的?日子|有促销|做活动的?日子|活动日|搞活动",
            "true",
        ),
        (
            W(r"promotion days?|promo days?|days with (?:a )?promotions?|on promotion|during promotions?"),
            "true",
        ),
        (r"平时|平常|正常日子?|非促销日?|没有促销的?日子|没有促销|没活动的?日子|普通日子", "false"),
        (
            W(
                r"normal days?|regular days?|non[- ]promotion days?|other days|ordinary days?|days without (?:a )?promotions?"
            ),
            "false",
        ),
    ]
)

#: Characters and words that separate phrases (split points for similarity candidates).
STOP_SPLIT = (
    r"[的了吗呢吧啊和与跟及或在是把被对给从到有没不都很就也还这那哪些个位家种按各每越最更]|什么|怎么|多少|一下|是不是|有没有"
    r"|经常|同时|出现|一起|突然|暴增|骤降|突增|突降|异常|哪|相比|比较|情况|里面|时候|时间|顾客|客人|\s|[,.?!;:'\"()\[\]，。？！；：、]"
)

EN_STOPWORDS = frozenset(
    "a an the of in on at to for by with and or vs versus is are was were be been do does did how what which who "
    "when where why there any this that these those our we my me i you it its than more less most least higher lower "
    "highest lowest often together occur same time times day days week weeks month months year last past over "
    "between compare show find get give tell much many has have had all per each about from into during customers "
    "customer people shoppers store follow follows followed share shares come comes came make made go goes went "
    "see look looks happen happens happened occur occurs occurred get gets got rate value number any some every "
    "there their them they up down out off so if then also just only really usually normally compared "
    "like please want need know think can could would should will may might must new old good bad big small "
    "long short high low great nice recent latest".split()
)
