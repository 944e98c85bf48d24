"""The one argument parser of every adamm command line (``adamm``, ``adamm-hub``, ``adamm-staff``,
``python -m edge.sim``): argparse that names the flag or command meant when one is mistyped.

``adamm sync --db s.db --tiemout 5`` says ``unrecognized arguments: --tiemout (did you mean
--timeout?)`` (exit 2, as argparse); the closest names come from :func:`difflib.get_close_matches`
over the options of the (sub-)command being parsed, so a flag of another sub-command is never
offered. Sub-parsers are of this class too (argparse makes them of the parent's class). A leaf:
it imports nothing of adamm.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

#: how alike a typo and a name must be to be offered (difflib's ratio)
CUTOFF = 0.6


def closest(word: str, names: Sequence[str]) -> str | None:
    """The name ``word`` most likely meant, or None when none is close."""
    found = difflib.get_close_matches(word, list(names), n=1, cutoff=CUTOFF)
    return found[0] if found else None


class SuggestingParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose unknown options and commands come with the name meant."""

    def _options(self) -> list[str]:
        return [s for s in self._option_string_actions if s.startswith("--")]

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: Any = None
    ) -> tuple[argparse.Namespace, list[str]]:
        given = list(sys.argv[1:] if args is None else args)
        if self._subparsers is None:  # a leaf: before "required" errors hide the typo
            self._suggest(given)
        parsed, extras = super().parse_known_args(given, namespace)
        self._suggest(extras)
        return parsed, extras

    def _suggest(self, tokens: Sequence[str]) -> None:
        options = self._options()
        for token in tokens:
            if token == "--":
                return
            if not token.startswith("--"):
                continue
            name = token.split("=", 1)[0]
            if any(o.startswith(name) for o in options):  # the name, or a prefix argparse accepts
                continue
            meant = closest(name, options)
            if meant is not None:
                self.error(f"unrecognized arguments: {name} (did you mean {meant}?)")

    def error(self, message: str) -> NoReturn:
        choice = re.match(r"argument .*: invalid choice: '([^']*)' \(choose from (.*)\)$", message)
        if choice:
            names = re.findall(r"'([^']*)'", choice.group(2))
            meant = closest(choice.group(1), names)
            if meant is not None:
                message = f"{message}; did you mean {meant!r}?"
        super().error(message)
