"""Text that fits a terminal: cells cut with ``…``, free text wrapped, tables capped to a width.

Pure (no Textual): the three terminal apps (the store manager's :mod:`edge.tui`, the HQ console
:mod:`hub.console`, the staff device :mod:`edge.staff`) fit their tables with :func:`fit_table`
(a table never runs past the screen's edge nor scrolls sideways) and show what a cell lost, whole
and wrapped, with :func:`cut_lines` in the detail below the table. Widths are terminal columns:
a CJK character takes two.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from edge.presentation.text import display_width

ELLIPSIS = "…"

#: columns a table spends on each cell besides its text (Textual's DataTable: one space each side)
CELL_PADDING = 2


def clip(text: str, width: int) -> str:
    """``text`` on one line of at most ``width`` terminal columns, ending in ``…`` when cut, at a
    word boundary when one is near: a cell never hides that it was shortened."""
    text = " ".join(text.split())
    if display_width(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:width]
    out, used = [], 0
    for ch in text:
        w = display_width(ch)
        if used + w > width - 1:
            break
        out.append(ch)
        used += w
    cut = "".join(out)
    space = cut.rfind(" ")
    if space >= width // 2:
        cut = cut[:space]
    return cut.rstrip() + ELLIPSIS


def _tokens(para: str) -> list[str]:
    """Words (runs without spaces or CJK), single CJK characters and spaces: the places a line
    may break are between tokens."""
    return re.findall(r"\s+|[\u2e80-\u9fff\uff00-\uffef]|[^\s\u2e80-\u9fff\uff00-\uffef]+", para)


def wrap(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` terminal columns, broken between words (CJK, which
    has no spaces, between characters); a word longer than a line is cut."""
    width = max(1, width)
    out: list[str] = []
    for para in text.splitlines() or [""]:
        line = ""
        for tok in _tokens(para):
            if display_width(line + tok) <= width:
                line += tok
                continue
            if tok.isspace():
                out.append(line.rstrip())
                line = ""
                continue
            if line.strip():
                out.append(line.rstrip())
            line = tok
            while display_width(line) > width:  # a word longer than a line
                cut = 0
                while display_width(line[: cut + 1]) <= width:
                    cut += 1
                out.append(line[:cut])
                line = line[cut:]
        out.append(line.rstrip())
    return out


def fit_widths(natural: Sequence[int], floors: Sequence[int], available: int) -> list[int]:
    """Column widths that add up to at most ``available``: each column its ``natural`` width
    when all fit; else the widest are capped first (one cap for all, none below its floor); when
    even the floors do not fit, every column is capped alike down to one column."""
    natural = [max(0, n) for n in natural]
    if sum(natural) <= available:
        return list(natural)
    floors = [min(f, n) for f, n in zip(floors, natural, strict=True)]
    if sum(floors) > available:
        floors = [min(1, n) for n in natural]

    def widths(cap: int) -> list[int]:
        return [min(n, max(f, cap)) for n, f in zip(natural, floors, strict=True)]

    lo, hi = 0, max(natural)  # the largest cap that fits
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if sum(widths(mid)) <= available:
            lo = mid
        else:
            hi = mid - 1
    out = widths(lo)
    spare = available - sum(out)
    for i in sorted(range(len(out)), key=lambda i: -natural[i]):  # what the cap left, to the widest
        if spare <= 0:
            break
        more = min(spare, natural[i] - out[i])
        out[i] += more
        spare -= more
    return out


def table_room(width: int, height: int, rows: int, header: bool = True, scrollbar: int = 2) -> int:
    """The terminal columns a table's cells may take in a ``width`` x ``height`` box: less the
    vertical scrollbar's when its rows (and header) need to scroll; 0 while it has no size."""
    if width <= 0:
        return 0
    if rows + (1 if header else 0) > height:
        width -= scrollbar
    return max(width, 1)


@dataclass(frozen=True)
class Fitted:
    """A table as it fits: its labels and cells cut to ``widths`` (``…`` where cut)."""

    labels: list[str]
    widths: list[int]
    rows: list[list[str]]


def fit_table(
    labels: Sequence[str],
    rows: Sequence[Sequence[str]],
    available: int,
    *,
    keep: Collection[int] = (),
    caps: Mapping[int, int] | None = None,
) -> Fitted:
    """``labels`` and ``rows`` cut so the table is at most ``available`` terminal columns wide
    (:data:`CELL_PADDING` a column included). A column is never cut below its label, nor a
    column in ``keep`` (times, states, numbers) at all, unless the table cannot fit otherwise;
    ``caps`` (column index -> width) cut a column further whatever the room (a long text)."""
    caps = caps or {}
    count = len(labels)
    flat = [[" ".join(str(c).split()) for c in row] for row in rows]
    natural = [
        max([display_width(labels[i]), *(display_width(r[i]) for r in flat if i < len(r))])
        for i in range(count)
    ]
    natural = [min(n, caps[i]) if i in caps else n for i, n in enumerate(natural)]
    floors = [natural[i] if i in keep else display_width(labels[i]) for i in range(count)]
    widths = fit_widths(natural, floors, max(count, available - CELL_PADDING * count))
    return Fitted(
        labels=[clip(label, w) for label, w in zip(labels, widths, strict=True)],
        widths=widths,
        rows=[[clip(c, widths[i]) if i < count else c for i, c in enumerate(row)] for row in flat],
    )


def cut_lines(
    labels: Sequence[str], whole: Sequence[str], shown: Sequence[str], width: int, lang: str = "en"
) -> list[str]:
    """What a row's cut cells hold, whole: ``label: text`` (``label：text`` in Chinese) wrapped to
    ``width``, one per cell that is shown shortened (none when nothing was cut)."""
    sep = "：" if lang == "zh" else ": "
    lines: list[str] = []
    for label, full, cell in zip(labels, whole, shown, strict=False):
        if " ".join(str(full).split()) != str(cell):
            lines += wrap(f"{label}{sep}{full}", width)
    return lines
