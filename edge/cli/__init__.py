"""The ``adamm`` command line: thin argument parsing over the library.

Each sub-command lives in its own module ``edge.cli.cmd_<name>`` exposing
``register(subparsers)`` (adds its parser, cheap imports only) and ``run(args) -> int``.
Library errors (:class:`edge.errors.AdammError`) become one stderr line and their exit code;
stdout carries data only (CONTRACT.md section 1).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from edge import __version__
from edge.cliargs import SuggestingParser
from edge.errors import AdammError

logger = logging.getLogger(__name__)

#: sub-command name -> module; the order is the order ``adamm --help`` lists them.
COMMANDS: dict[str, str] = {
    "import": "edge.cli.cmd_import",
    "search": "edge.cli.cmd_search",
    "ask": "edge.cli.cmd_ask",
    "demo": "edge.cli.cmd_demo",
    "procedures": "edge.cli.cmd_procedures",
    "tune": "edge.cli.cmd_tune",
    "tui": "edge.cli.cmd_tui",
    "run": "edge.cli.cmd_run",
    "check": "edge.cli.cmd_check",
    "facts": "edge.cli.cmd_facts",
    "action": "edge.cli.cmd_action",
    "actions": "edge.cli.cmd_actions",
    "maintain": "edge.cli.cmd_maintain",
    "restore": "edge.cli.cmd_restore",
    "sync": "edge.cli.cmd_sync",
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The ``adamm`` parser with every sub-command, or just ``only`` (its module alone is imported:
    ``adamm ask`` does not pay for importing ``import``, ``tui`` or ``run``)."""
    parser = SuggestingParser(
        prog="adamm",
        description="adamm edge: a store's multimodal decision memory (import, search, ask, demo, run, tui).",
    )
    parser.add_argument("--version", action="version", version=f"adamm {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output on stderr")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module_name in COMMANDS.items():
        if only is not None and name != only:
            continue
        importlib.import_module(module_name).register(sub)
    return parser


def setup_logging(verbosity: int) -> None:
    level = logging.WARNING if verbosity <= 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    logging.basicConfig(level=level, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")


def _command_of(argv: Sequence[str]) -> str | None:
    """The sub-command ``argv`` names (its first non-option word) when it is a known one."""
    for arg in argv:
        if arg == "--":
            return None
        if not arg.startswith("-"):
            return arg if arg in COMMANDS else None
    return None


def main(argv: Sequence[str] | None = None) -> int:
    args_in = list(sys.argv[1:] if argv is None else argv)
    for arg in args_in:
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:  # invalid UTF-8 bytes arrive as lone surrogates
            print(
                "adamm: an argument is not valid UTF-8 text; set the terminal to UTF-8 and type it again",
                file=sys.stderr,
            )
            return 2
    parser = build_parser(only=_command_of(args_in))
    args = parser.parse_args(args_in)
    setup_logging(args.verbose)
    if not getattr(args, "command", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        rc = int(args.func(args))
    except AdammError as exc:
        print(f"adamm {args.command}: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"adamm {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:
        mapped = _store_problem(exc, getattr(args, "db", None))
        if mapped is not None:
            print(f"adamm {args.command}: {mapped}", file=sys.stderr)
            return mapped.exit_code
        # a bug: one line for the user, the traceback only with -vv
        logger.debug("unexpected error", exc_info=True)
        print(
            f"adamm {args.command}: internal error ({type(exc).__name__}: {exc}); "
            "please report it (adamm -vv shows the details)",
            file=sys.stderr,
        )
        return 3
    return rc


def _store_problem(exc: BaseException, db: object) -> AdammError | None:
    """An SQLite error that escaped mid-way (a damaged page, a lock held past the busy timeout)
    as the error a store manager can act on; None for anything else (a bug: let it show)."""
    apsw = sys.modules.get("apsw")
    if apsw is None or not isinstance(exc, apsw.Error):
        return None
    from edge.memory.db.connect import store_error

    environment = (
        apsw.CorruptError,
        apsw.NotADBError,
        apsw.BusyError,
        apsw.LockedError,
        apsw.IOError,
        apsw.FullError,
        apsw.CantOpenError,
        apsw.ReadOnlyError,
        apsw.PermissionsError,
    )
    if not isinstance(exc, environment):
        return None
    logger.debug("SQLite error", exc_info=exc)
    return store_error(exc, str(db) if db is not None else "the memory")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
