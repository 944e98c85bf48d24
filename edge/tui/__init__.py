"""The store manager's Textual app (``adamm tui``). Built on :mod:`edge.presentation` and
:mod:`edge.services.console`; started by :mod:`edge.cli.cmd_tui`."""
