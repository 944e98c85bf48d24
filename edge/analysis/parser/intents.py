"""Intent cue words (zh/en) and the top-k count of a question.

Owned by :mod:`edge.analysis.parser`. Each intent of ``plan.schema.json`` has cue patterns; the
top-level parser weighs them with what else it found (metrics, dimensions, values, dates), since a
cue alone (“比”, "by") is often not enough.
"""

from __future__ import annotations

import re

from edge.analysis.parser.text import CN_NUM, EN_NUM, MaskedText, parse_number, word

W = word


def _c(p: str) -> re.Pattern[str]:
    return re.compile(p)


CUES: dict[str, re.Pattern[str]] = {
    "forecast": _c(
        r"预测|预估|预计|会是多少|会怎样|会怎么样|照这个趋势下去|照这样下去|这样下去|将来|未来|该怎么备|怎么备货|备多少|"
        + W(
            r"predict(?:ed|ion|s)?|forecast(?:s|ing)?|projection|project(?:ed)?|will (?:be|there|we|it)|going to be|expect(?:ed)? next"
            r"|if (?:this|it|things|that) (?:keeps? (?:up|going)|continues?|goes on)|at this rate|where will"
        )
    ),
    "retrieve_media": _c(
        r"视频|录像|片段|画面|监控|截图|录音|发生了什么|出了什么事|什么情况|那些时刻|瞬间|场景|的记录|"
        + W(
            r"clips?|footage|videos?|recordings?|snapshots?|images?|frames?|audio|what happened|what was going on"
            r"|moments|instances|occasions|scenes?|(?:the )?times? when"
        )
    ),
    "retrieve_verb": _c(
        r"^(?:帮我)?(?:找|查找|搜索|搜一下|调出|调取|给我看)|找一下|找出|找找|"
        + W(r"^(?:show me|find|search|look up|get me|pull up)")
    ),
    "co_occurrence": _c(
        r"同时出现|一起出现|同时发生|一起发生|的时候[^，。？?]{0,6}(?:经常|总是|往往|刚好|正好)|一块儿?(?:出现|发生)|伴随|伴有|共同出现|同时存在|同一时间|同一(?:个)?(?:小时|时段|分钟)(?:内|里)?|"
        + W(
            r"together|co-?occur(?:s|red|ring|rence)?|coincide[sd]?|at the same time|(?:around|about) the same time as|followed by|come up [^?.]{0,12}?when|alongside|in conjunction|accompanied by|in the same (?:hour|minute|time slot)"
        )
    ),
    "correlation": _c(
        r"相关(?:性|系数)?|关联|关系|联系|挂钩|同步|强不强|有多强|(?:多|高|长|少|低)的时候.{0,10}也|的时候.{0,10}也(?:会)?(?:更)?(?:多|长|高|少|低)|"
        + W(
            r"correlat\w*|related|relationship|strongly|how strong|associated|association|linked|links?|connection|connected|tied to|go(?:es)? together with"
            r"|when [^?.]{1,40}? (?:is|are|goes|go|gets?) (?:high|higher|low|lower|up|down|long|longer|busy|crowded)[^?.]{0,40}? (?:too|as well|also)"
            r"|(?:people|customers|shoppers|visitors|guests) who [^?.]{1,25}? longer [^?.]{1,25}? (?:more|less)"
        )
    ),
    "periodicity": _c(
        r"周期性?|规律(?:可循)?|循环|季节性|重复(?:一次)?|固定|起伏|每隔(?:几|[0-9一二三四五六七八九十两]+)?(?:天|周|小时)?(?:就)?(?:会)?|"
        + W(
            r"cycles?|cyclical|seasonal(?:ity)?|periodic(?:ity)?|patterns?|recurring|repeat(?:s|ing)?|rhythm|regularly|regular (?:patterns?|cycles?|rhythms?)"
        )
    ),
    "anomaly": _c(
        r"异常|不(?:太|大)?正常|反常|突增|暴增|骤降|突降|离谱|奇怪|不对劲|突然|波动|飙升|飙涨|暴跌|猛增|猛降|"
        + W(
            r"unusual(?:ly)?|abnormally|exceptionally|oddly|strangely|anomal\w*|spik(?:e|es|ed|ing)|crash(?:es|ed|ing)?|plung\w*|plummet\w*|abnormal|outliers?|strange|weird|odd|irregular|suspicious"
            r"|look(?:s|ed|ing)? off|out of the ordinary|off the charts"
        )
    ),
    "breakdown": _c(
        r"拆解|拆分|拆(?:一下|开)|构成|分解|组成|占比|比重|贡献|分布|按.{1,6}分|分别是|各占|集中在|"
        + W(
            r"break ?down|break (?:\w+ )?down|broken down|split|portion|proportion|percentage|spread (?:across|over|between)|composition|distribution|distributed|share|shares|contribut\w*|makes? up|mix"
        )
    ),
    "breakdown_by": _c(r"按|分|各|每(?:个|一个|家)|" + W(r"by|per|across|for each|each")),
    "top_rank": _c(
        r"最高|最多|最大|最好|最低|最少|最差|最长|最短|最久|最快|最慢|最忙|最受欢迎|排个?名|排行|前几|第一|冠军|"
        + W(
            r"top|highest|most|best|largest|biggest|lowest|least|worst|longest|shortest|rank\w*|leading|busiest|quietest"
            r"|most popular"
        )
    ),
    "which": _c(
        r"哪个|哪些|哪家|哪种|哪款|哪位|哪天|哪周|哪月|哪一|哪|"
        + W(r"which|what (?:store|zone|product|item|category|hour|day)")
    ),
    "compare": _c(
        r"相比|前后对比|前后|比较|对比|比一比|比比|差多少|(?:和|跟|与|同)[^，。？?比]{1,12}比(?![例率重])|差别|区别|差异|不同|还是(?!变|增|减|上升|下降|涨|跌|提|降)|高还是低|谁(?:更|比较)?(?:高|低|多|少|好|差|大|小|长|短|快|慢|强)|是不是比|会不会(?:更)?(?:多|少|高|低|长|短)(?:一些|一点|些)?|比.{0,12}(?:高|低|多|少|好|差|大|小)|"
        + W(
            r"before and after|compare[ds]?|comparison|versus|vs\.?|difference|differ|than|or (?:on )?\w+ days|between"
            r"|stack(?:s|ed)? up(?: against| to)?|measure[sd]? up"
        )
    ),
    "change": _c(
        r"降没降|升没升|下降|上升|降低|提高|提升|减少|增加|改善|好转|变化|变了|有没有变|效果|影响|"
        + W(
            r"drop(?:s|ped)?|fall|fell|decrease[ds]?|increase[ds]?|improve[ds]?|rise|rose|change[ds]?|effect|impact|better|worse|reduce[ds]?|go(?:ne)? (?:up|down)"
        )
    ),
    "effect": _c(
        r"提升|提高|增加|减少|降低|拉动|带动|效果|影响|作用|帮助|"
        + W(
            r"increase[ds]?|boost(?:s|ed)?|lift(?:s|ed)?|effect|impact|improve[ds]?|help(?:s|ed)?|drive[sn]?|raise[ds]?|reduce[ds]?"
            r"|affect(?:s|ed)?|influence[sd]?|hurt(?:s|ing)?|harm(?:s|ed)?|mess(?:es|ed)? up|depend(?:s|ing)? on|var(?:y|ies) with|go(?:es)? (?:up|down) when|rise when|drop when"
        )
    ),
    "pivot": _c(
        r"后|之后|以后|前后|以来|培训|上线|开业|调整|改造|"
        + W(r"after|since|following|before and after|training|launch|opening")
    ),
    "trend": _c(
        r"(?:变.|增加|减少|上升|下降|涨|跌|提高|降低)了?还是(?:变.|增加|减少|上升|下降|涨|跌|提高|降低)|比(?:以前|过去|之前)|趋势|走势|走向|往(?:下|上)走|走(?:低|高)|变化|有没有变|变了|一直在变|变(?:差|好|多|少|高|低|长|短)了?|在变|变没变|越来越|逐渐|一直在|涨|跌|上升|下降|升高|增长|增加|减少|后移|前移|往后移?|往前移?|推迟|提前|移动|增多|变多|变少|多了|少了|"
        + W(
            r"than (?:\w+ ){0,2}used to|than (?:before|it was|they were|in the past)|(?:getting|becoming) (?:worse|better|longer|shorter|higher|lower|bigger|smaller|busier|quieter)|trend\w*|moved|move|shift(?:ed|ing)?|drift(?:ed|ing)|over time|chang(?:ed|ing|e)|increas\w*|decreas\w*|rising|falling|dropping|slipping|climbing|pil(?:e|es|ed|ing) up|grow\w*|declin\w*|evolv\w*|go(?:ne|es|ing)? (?:up|down)|went (?:up|down)"
        )
    ),
    "aggregate": _c(
        r"是多少|多少|多吗|多不多|频繁吗|几个|几次|几位|总共|一共|合计|汇总|平均|总数|怎么样|如何|"
        + W(r"how (?:many|much)|what (?:was|is|were|are)|total|average|overall|sum|count|number of")
    ),
}

#: a correlation named by the shape of the question: "越 X 越 Y" (not 越来越, 超越, 越…越好) and "the
#: more X, the more Y". A strong cue: when the rules cannot build it (one metric), the question is
#: refused rather than answered as another kind (core._combine)
CORRELATION_FORM = _c(
    r"(?<!越来)(?<!超)越(?!来越)[^越。？?.]{1,12}越(?!来越|好)|"
    + W(
        r"the (?:more|longer|higher|bigger|larger|busier) [^?.]{1,40}? the (?:more|longer|higher|less|lower|bigger|fewer|better|worse)"
        r"|with (?:more|fewer|higher|lower) [^?.]{1,30}? (?:also|too) (?:have|get|see|show) (?:more|fewer|higher|lower)"
    )
)
#: 会不会 asks about the future, except 会不会更… under a condition ("下雨的时候…会不会更久"), which compares
WILL_IT = _c(r"会不会")
#: a comparison with the past, not between groups: a course over time
THAN_BEFORE = _c(
    r"比(?:以前|过去|之前)|"
    + W(
        r"than (?:\w+ ){0,2}used to|than (?:before|it was|they were|in the past)"
        r"|(?:getting|becoming|gotten|grown|growing) (?:worse|better|higher|lower|longer|shorter|bigger|smaller|more|less)"
    )
)
#: 会不会 of a comparison, not of a forecast: "会不会比晴天低", "促销的日子投诉会不会多一些"
CONDITIONAL_MORE = _c(
    r"(?:的时候|时候|期间|如果|要是|雨天|晴天|下雨|促销时|有促销|的日子|那几天).{0,12}会不会(?:更|多|少|高|低|长|短)"
    r"|会不会比"
)

_TOPK = [
    _c(r"(?:排名?)?前\s?(?P<n>" + CN_NUM + r")\s?(?:个|名|家|款|种|位|大|样)?(?![天周月年日星小分季])"),
    _c(
        r"(?:最高|最多|最大|最好|最低|最少|最差|最长|最短|最久|最忙|最畅销|最受欢迎)的\s?(?P<n>"
        + CN_NUM
        + r")\s?(?:个|名|家|款|种|位|样)"
    ),
    _c(
        r"(?P<n>"
        + CN_NUM
        + r")\s?(?:个|名|家|款|种|位|样)(?:最高|最多|最大|最好|最低|最少|最差|最畅销|最受欢迎)"
    ),
    _c(W(r"top[- ]?(?P<n>" + EN_NUM + r")")),
    _c(
        W(
            r"(?:the )?(?P<n>"
            + EN_NUM
            + r") (?:highest|best|most|largest|biggest|lowest|worst|least|busiest|top)"
        )
    ),
    _c(
        W(
            r"(?:highest|best|most|lowest|worst|least|busiest) (?P<n>[0-9]+|two|three|four|five|six|seven|eight|nine|ten)"
        )
    ),
    _c(W(r"which (?P<n>[0-9]+|two|three|four|five|six|seven|eight|nine|ten)")),
    _c(r"哪(?P<n>" + CN_NUM + r")\s?(?:个|名|家|款|种|位|样)"),
]


def find_top_k(mt: MaskedText) -> int | None:
    """The N of 前N / top N / 最高的N个 (consumed), or None."""
    for pattern in _TOPK:
        m = pattern.search(mt.view)
        if m:
            n = parse_number(m.group("n"))
            if n is not None and 1 <= n <= 1000:
                start, end = m.span("n")
                view = mt.view
                pre = re.search(r"(?:排名?)?前\s?$|top[- ]?$|which $|哪$", view[:start])
                post = re.match(r"\s?(?:个|名|家|款|种|位|大|样)", view[end:])
                mt.consume(pre.start() if pre else start, end + (post.end() if post else 0))
                return n
    return None


def cues(text: str) -> set[str]:
    """Names of the cue patterns present in ``text`` (``correlation`` also for
    :data:`CORRELATION_FORM`, ``forecast`` also for a 会不会 that is not a conditional 会不会更)."""
    found = {name for name, p in CUES.items() if p.search(text)}
    if CORRELATION_FORM.search(text):
        found.add("correlation")
    if WILL_IT.search(text) and not CONDITIONAL_MORE.search(text):
        found.add("forecast")
    return found
