"""Why the rule parser refuses a question, in both languages, and the stages' words (``stages.toml``).

Owned by :mod:`edge.analysis.parser`: the stages (:mod:`.slots`, ``stage_*``) read :data:`PATTERNS`
and raise :class:`Refusal`; :mod:`.core` turns it into an ``unsupported`` result told by :func:`said`.
"""

from __future__ import annotations

import importlib.resources
import tomllib

from edge.analysis.parser.lexicon import LexiconError, TomlReader

STAGES = tomllib.loads(
    importlib.resources.files("edge.analysis.parser").joinpath("stages.toml").read_text(encoding="utf-8")
)
_STAGES = TomlReader("stages.toml", STAGES)
#: the stages' patterns by name, each the alternation of its lines (a bad one named as the lexicon's are)
PATTERNS = {k: _STAGES.regex(_STAGES.section("patterns"), k, "patterns") for k in _STAGES.section("patterns")}
for _name, _texts in _STAGES.section("said").items():
    if not (isinstance(_texts, list) and len(_texts) == 2 and all(isinstance(t, str) for t in _texts)):
        raise LexiconError(f"stages.toml: said.{_name}: a [zh, en] pair of texts is needed")


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
