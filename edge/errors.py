"""One base error for the whole edge, with specific subclasses.

Every error carries the CLI exit code it maps to (CONTRACT.md section 1) and a message a store
manager can act on. The CLI turns these into one stderr line; library callers catch them.
"""

from __future__ import annotations


class AdammError(Exception):
    """Base class of every error adamm raises on purpose."""

    exit_code = 3

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class UsageError(AdammError):
    """The command was called wrongly (bad flag value, unknown key); exit 2."""

    exit_code = 2


class UnknownKeyError(UsageError, ValueError):
    """A grouping key, component or filter key that is not known or not an identifier; exit 2.

    Also a ``ValueError``, as the EventSource port promises for unknown keys and components."""


class ConfigError(UsageError):
    """A configuration file or value is invalid; the message names the key, value and reason."""


class EnvironmentProblem(AdammError):
    """Something outside the input is wrong: database locked or unreadable, model file missing; exit 3."""

    exit_code = 3


class StoreError(EnvironmentProblem):
    """The memory store cannot be opened, migrated or written."""


class ExtensionLoadError(StoreError):
    """sqlite-vec could not be loaded into SQLite."""


class NoMemoryError(StoreError):
    """No file at the path a command that only reads a memory was given."""


class NotAMemoryError(StoreError):
    """The file is not an adamm memory (empty, another program's SQLite database, not SQLite)."""


class NewerMemoryError(StoreError):
    """The memory was written by a newer adamm (a migration or schema version this code lacks)."""


class MemoryDamagedError(StoreError):
    """SQLite found a damaged page (corrupt file); ``adamm check`` says what is wrong."""


class StoreLockedError(StoreError):
    """Another process holds the memory's lock past the busy timeout."""


class ModelMissingError(EnvironmentProblem):
    """An encoder's weights are not installed where the manifest says."""


class PlanError(AdammError):
    """A plan is not valid under plan.schema.json (a bug in a parser backend, never user input)."""

    exit_code = 2


class NotInRecordError(AdammError, ValueError):
    """A strict rollup source was asked what its record of closed days cannot express (a filter or
    grouping on per-event detail) and will not read those days' events, which may be archived; the
    engine answers ``insufficient_data`` with the ``zh``/``en`` reasons; exit 3 elsewhere."""

    exit_code = 3

    def __init__(self, en: str, zh: str) -> None:
        super().__init__(
            en, hint="ask by store, day, hour, event type, weather, promotion, zone or product category"
        )
        self.reasons = {"en": en, "zh": zh}


class TimeRangeError(PlanError):
    """A plan's time range cannot be a window of the calendar (empty, reversed, or outside the
    years a date can have); the engine answers ``unsupported`` with ``zh``/``en`` reasons."""

    def __init__(self, en: str, zh: str) -> None:
        super().__init__(en)
        self.reasons = {"en": en, "zh": zh}


class BrokerError(EnvironmentProblem):
    """The MQTT broker could not be used (``adamm sync``, the daemon's sync worker, the hub); exit 3."""


class BrokerUnreachable(BrokerError):
    """The broker did not accept a connection after the retries (down, wrong host/port, TLS
    failure), or the hub did not confirm what was sent within the time allowed."""


class BrokerProtocolError(BrokerError):
    """The broker does not speak the MQTT version that ``[mqtt] protocol`` asks for ("5" against a
    3.1.1-only broker, or a broker that speaks neither 5 nor 3.1.1): retrying cannot help."""


class BrokerAuthError(BrokerError):
    """The broker refused the credentials ("Bad user name or password" / "Not authorized"):
    retrying cannot help, so the client stops at once."""


class BrokerSessionTakenOver(BrokerError):
    """The broker disconnected this client because another one connected with the same client id
    (MQTT 5 reason "Session taken over"): reconnecting would take it back and start a tug-of-war,
    so the client stops and names its id."""
