"""Intent cues (zh/en) and the top-k count of a question.

Owned by :mod:`edge.analysis.parser`. The cues' words are data (``CUES`` and ``FORMS`` of
``lexicon.toml``); the stages weigh them with what else was found, since a cue alone (“比”, "by")
is often not enough.
"""

from __future__ import annotations

import re

from edge.analysis.parser.lexicon import CUES, FORMS
from edge.analysis.parser.text import CN_NUM, EN_NUM, MaskedText, parse_number, word

#: a correlation named by the shape of the question: "越 X 越 Y" and "the more X, the more Y". A
#: strong cue: when the rules cannot build it (one metric), the question is refused rather than
#: answered as another kind (core._combine)
CORRELATION_FORM = FORMS["correlation_form"]
#: 会不会 asks about the future, except 会不会更… under a condition ("下雨的时候…会不会更久"), which compares
WILL_IT = FORMS["will_it"]
#: a comparison with the past, not between groups: a course over time
THAN_BEFORE = FORMS["than_before"]
#: 会不会 of a comparison, not of a forecast: "会不会比晴天低", "促销的日子投诉会不会多一些"
CONDITIONAL_MORE = FORMS["conditional_more"]
#: a question tag after a verb (客流涨了没有): it asks, it does not negate
QUESTION_TAG = FORMS["question_tag"]

_CN_N = r"(?P<n>" + CN_NUM + r")"
_EN_FEW = r"(?P<n>[0-9]+|two|three|four|five|six|seven|eight|nine|ten)"
_UNIT = r"(?:个|名|家|款|种|位|样)"
_TOPK = [
    re.compile(p)
    for p in (
        rf"(?:排名?)?前\s?{_CN_N}\s?(?:个|名|家|款|种|位|大|样)?(?![天周月年日星小分季])",
        rf"(?:最高|最多|最大|最好|最低|最少|最差|最长|最短|最久|最忙|最畅销|最受欢迎)的\s?{_CN_N}\s?{_UNIT}",
        rf"{_CN_N}\s?{_UNIT}(?:最高|最多|最大|最好|最低|最少|最差|最畅销|最受欢迎)",
        word(rf"top[- ]?(?P<n>{EN_NUM})"),
        word(
            rf"(?:the )?(?P<n>{EN_NUM}) (?:highest|best|most|largest|biggest|lowest|worst|least|busiest|top)"
        ),
        word(rf"(?:highest|best|most|lowest|worst|least|busiest) {_EN_FEW}"),
        word(rf"which {_EN_FEW}"),
        # "the 3 staff with the highest error rate", "the 5 days with the longest queues"
        r"(?<![a-z0-9_])(?:the )?" + _EN_FEW + r" (?:[a-z]+ ){1,2}?"
        r"(?=(?:with|that have|that had|where|when) (?:the )?(?:highest|most|longest|biggest|largest|lowest"
        r"|fewest|least|shortest|worst|best|busiest)(?![a-z]))",
        # 排队最长的5天, 客人最爱逗留的两个区域
        r"最[^，。？?的\x00]{1,6}的" + _CN_N + r"(?=\s?(?:个|名|家|款|种|位|样|天|周|小时))",
        rf"哪{_CN_N}\s?{_UNIT}",
    )
]


def find_top_k(mt: MaskedText) -> int | None:
    """The N of 前N / top N / 最高的N个 (consumed), or None."""
    for pattern in _TOPK:
        m = pattern.search(mt.view)
        n = parse_number(m.group("n")) if m else None
        if m and n is not None and 1 <= n <= 1000:
            start, end = m.span("n")  # the count is claimed with its 前 / top / which and its unit
            pre = re.search(r"(?:排名?)?前\s?$|top[- ]?$|which $|哪$", mt.view[:start])
            post = re.match(r"\s?(?:个|名|家|款|种|位|大|样)", mt.view[end:])
            mt.consume(pre.start() if pre else start, end + (post.end() if post else 0))
            return n
    return None


#: cues that name what a 会不会 asks ("does it repeat weekly", "do they turn up together"): with
#: one of them, 会不会 is "does", not "will"
_KINDS_OF_DOES = frozenset({"periodicity", "co_occurrence", "correlation", "anomaly"})


def cues(text: str) -> set[str]:
    """Names of the cue patterns in ``text``, with ``correlation`` for :data:`CORRELATION_FORM` and
    ``forecast`` for a 会不会 neither conditional (会不会更) nor of another kind of question."""
    found = {name for name, p in CUES.items() if p.search(text)}
    if CORRELATION_FORM.search(text):
        found.add("correlation")
    if WILL_IT.search(text) and not CONDITIONAL_MORE.search(text) and not found & _KINDS_OF_DOES:
        found.add("forecast")
    return found
