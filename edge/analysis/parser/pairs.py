"""The two things a co-occurrence pairs, and the window it pairs them within.

Owned by :mod:`edge.analysis.parser`; read by :mod:`.stage_intent` and :mod:`.stage_fields`. Items
are metric words (as the events they stand for), stored values (``key=value``), event types and
entity ids; a joining word (和, with, vs) splits them in two.
"""

from __future__ import annotations

import re

from edge.analysis.parser.slots import Slots
from edge.analysis.parser.text import parse_number

#: what a metric word stands for when it is one side of a co-occurrence
METRIC_ITEM = {
    "complaint_count": "complaint",
    "queue_length": "checkout_queue",
    "footfall": "customer_enter",
    "order_count": "purchase",
    "revenue": "purchase",
    "avg_order_value": "purchase",
    "dwell_time": "dwell",
    "staff_error_rate": "staff_error",
    "negative_emotion_rate": "speech_emotion=negative",
}
CONJ = re.compile(r"和|与|跟|同|及|以及|还有|(?<![a-z])(?:and|with|vs\.?|versus|&)(?![a-z])")
CO_WINDOW = re.compile(
    r"(?P<n>[0-9]+|[一二两三四五六七八九十]+|同一)\s?(?:个)?(?P<u>分钟|小时|秒)(?:内|之内|以内|里)?"
    r"|(?<![a-z])(?:within|in|during) (?:(?P<n2>[0-9]+|an?|one|two|three|five|ten|fifteen|thirty|the same) )?(?P<u2>minute|min|hour|hr|second|sec)s?(?![a-z])"
)
_UNIT_SECONDS = {"分钟": 60, "小时": 3600, "秒": 1, "minute": 60, "min": 60, "hour": 3600, "hr": 3600}
_UNIT_SECONDS |= {"second": 1, "sec": 1}

#: (start, end, item, rank): rank 0 a metric word, 1 an event type, 2 a stored value, 3 an entity
Item = tuple[int, int, str, int]


def co_items(s: Slots) -> list[Item]:
    """The things the question names, in question order; of overlapping spans the longer wins,
    then the more specific."""
    items: list[Item] = [
        (h.start, h.end, METRIC_ITEM[str(h.value)], 0) for h in s.metric_hits if str(h.value) in METRIC_ITEM
    ]
    items += [(v.start, v.end, f"{v.key}={v.values[0]}", 2) for v in s.values]
    items += [(t.start, t.end, t.event_type, 1) for t in s.types]
    for e in s.entities:
        pos = max(s.text.find(e.lower()), 0)
        items.append((pos, pos + len(e), e, 3))
    items.sort(key=lambda it: (-(it[1] - it[0]), -it[3]))
    kept: list[Item] = []
    for it in items:
        if all(it[1] <= k[0] or it[0] >= k[1] for k in kept):
            kept.append(it)
    return sorted(kept, key=lambda it: it[0])


def pair(items: list[Item], text: str) -> tuple[str, str] | None:
    """The two items a joining word stands between (the most specific on each side), else the
    first two different items; None with fewer than two."""
    for m in CONJ.finditer(text):
        left = [it for it in items if it[1] <= m.start()]
        right = [it for it in items if it[0] >= m.end()]
        if left and right:
            a = max(left, key=lambda it: (it[3], it[0]))
            b = max(right, key=lambda it: (it[3], -it[0]))
            if a[2] != b[2]:
                return a[2], b[2]
    names = list(dict.fromkeys(it[2] for it in items))
    return (names[0], names[1]) if len(names) >= 2 else None


def co_window(text: str) -> int | None:
    """The seconds of "within 10 minutes" / 同一小时内, or None."""
    m = CO_WINDOW.search(text)
    if not m:
        return None
    unit = m.group("u") or m.group("u2")
    n_text = m.group("n") or m.group("n2") or "1"
    n = 1 if n_text in ("同一", "the same") else (parse_number(n_text) or 1)
    return n * _UNIT_SECONDS[unit]
