"""Why the rule parser refuses a question, in both languages, and the stages' words (``stages.toml``).

Owned by :mod:`edge.analysis.parser`: the stages (:mod:`.slots`, ``stage_*``) read :data:`PATTERNS`
and raise :class:`Refusal`; :mod:`.core` turns it into an ``unsupported`` result told by :func:`said`.
"""

from __future__ import annotations

import importlib.resources
import re
import tomllib

STAGES = tomllib.loads(
    importlib.resources.files("edge.analysis.parser").joinpath("stages.toml").read_text(encoding="utf-8")
)
#: the stages' patterns by name, each the alternation of its lines
PATTERNS = {
    k: re.compile("|".join(line.strip() for line in v.splitlines() if line.strip()))
    for k, v in STAGES["patterns"].items()
}


def said(name: str, lang: str, **fields: str) -> str:
    """The text ``name`` of the ``said`` table in ``lang``, its ``{fields}`` filled."""
    return str(STAGES["said"][name][0 if lang == "zh" else 1]).format(**fields)


class Refusal(Exception):
    """The question is not answered: ``reason`` is a name of the ``said`` table, a (zh, en) pair or
    None (nothing more to say than what was understood); ``final`` when no other reading (the
    exemplar classifier's) may be tried."""

    def __init__(self, reason: str | tuple[str, str] | None = None, *, final: bool = False) -> None:
        super().__init__(reason)
        self.reason = tuple(STAGES["said"][reason]) if isinstance(reason, str) else reason
        self.final = final

    def said(self, lang: str) -> str | None:
        """The reason in ``lang`` (in English a sentence: its first letter upper case)."""
        if self.reason is None:
            return None
        text = self.reason[0 if lang == "zh" else 1]
        return text if lang == "zh" else text[:1].upper() + text[1:]
