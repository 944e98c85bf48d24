"""The sections every edge command reads: retrieval, analysis, encoders, llm, mqtt, actions
(:class:`AdammConfig`).

``[mqtt]`` holds the broker credentials of this machine's MQTT user (a store, the hub or a staff
device): the ``ADAMM_MQTT_USERNAME`` / ``ADAMM_MQTT_PASSWORD`` / ``ADAMM_MQTT_CA`` environment
variables win over these keys; credentials never come from the command line. ``[actions]``: how
long an action stays open and how often an unacknowledged one is re-sent (:func:`parse_duration`).

A leaf of the package graph: pydantic models only, no I/O; :mod:`edge.config.load` reads files.
Every field has a default and a description; unknown keys are errors (``extra="forbid"``); strict
types (TOML values are typed, so ``true`` is not a number and ``"5"`` is not one either).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from edge.errors import UsageError

#: source, camera, microphone, zone and terminal ids
ID_PATTERN = r"^[A-Za-z0-9_.-]{1,64}$"


class Section(BaseModel):
    """Base of every config section: unknown keys are errors, assignments are validated."""

    # strict: TOML values are typed, so true is not a number and "5" is not a number either
    model_config = ConfigDict(extra="forbid", validate_assignment=True, strict=True)


class RetrievalConfig(Section):
    alpha: float = Field(
        0.6, ge=0, le=1, title="Vector weight", description="weight of cosine similarity in the hybrid score"
    )
    beta: float = Field(
        0.4,
        ge=0,
        le=1,
        title="Attribute weight",
        description="weight of attr_match (soft preferences, time proximity) in the hybrid score",
    )
    time_scale_hours: float = Field(
        72.0,
        gt=0,
        title="Time proximity scale",
        description="hours over which the time-proximity preference halves",
    )
    default_k: int = Field(
        10, ge=1, le=1000, title="Default k", description="results returned by search when --k is not given"
    )


class AnalysisConfig(Section):
    decay_base: float = Field(
        50.0, gt=0, title="Confidence decay base", description="confidence = n / (n + decay_base)"
    )
    min_events_per_group: int = Field(
        30,
        ge=1,
        title="Minimum evidence per group",
        description="below this an operator answers insufficient_data",
    )
    min_buckets: int = Field(
        8,
        ge=2,
        title="Minimum buckets",
        description="minimum points of a series (trend, anomaly, periodicity, correlation)",
    )
    evidence_cap: int = Field(
        20,
        ge=1,
        le=1000,
        title="Evidence list cap",
        description="most evidence entries listed in a payload; evidence_count has the full number",
    )
    similarity_threshold: float = Field(
        0.55,
        ge=0,
        le=1,
        title="Vocabulary similarity threshold",
        description="minimum text-encoder cosine for matching a question word to a stored attribute value",
    )


class EncoderConfig(Section):
    text: str = Field(
        "use_v3_multilingual",
        title="Text encoder",
        description="registry key of the text encoder (see edge/encoders/manifest.toml)",
    )
    providers: list[str] = Field(
        default_factory=lambda: [
            "TensorrtExecutionProvider",
            "CUDAExecutionProvider",
            "CPUExecutionProvider",
        ],
        title="ONNX Runtime providers",
        description="tried in order; those not available on this machine are skipped",
    )
    batch_size: int = Field(
        64, ge=1, le=4096, title="Encoder batch size", description="texts encoded per ONNX Runtime call"
    )


class LLMConfig(Section):
    enabled: bool = Field(
        False,
        title="Use an LLM parser",
        description="ask an OpenAI-compatible endpoint first; the rule parser takes over on any failure",
    )
    endpoint: str = Field(
        "http://127.0.0.1:8080/v1",
        title="Endpoint",
        description="base URL of an OpenAI-compatible chat API (llama.cpp server, vLLM, Ollama)",
    )
    model: str = Field("local", title="Model name", description="model name sent to the endpoint")
    timeout_s: float = Field(
        10.0, gt=0, title="Timeout", description="seconds before falling back to the rule parser"
    )
    api_key_env: str = Field(
        "ADAMM_LLM_API_KEY",
        title="API key variable",
        description="environment variable holding the API key, if any",
    )


_ISO_DURATION = re.compile(
    r"^P(?:(?P<w>\d+(?:\.\d+)?)W)?(?:(?P<d>\d+(?:\.\d+)?)D)?"
    r"(?:T(?:(?P<h>\d+(?:\.\d+)?)H)?(?:(?P<m>\d+(?:\.\d+)?)M)?(?:(?P<s>\d+(?:\.\d+)?)S)?)?$",
    re.IGNORECASE,
)
_SHORT_DURATION = re.compile(r"^(?P<n>\d+(?:\.\d+)?)\s*(?P<u>s|m|min|h|d|w)?$", re.IGNORECASE)
_UNIT_SECONDS = {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_now(text: str | None) -> datetime | None:
    """``--now`` as a datetime (naive = store-local; None when not given); a bad value is a usage error."""
    if text is None:
        return None
    t = text.strip()
    if t.endswith(("Z", "z")):
        t = t[:-1] + "+00:00"
    try:
        now = datetime.fromisoformat(t)
    except ValueError:
        raise UsageError(
            f"--now {text!r} is not an ISO 8601 time", hint="e.g. 2025-12-01T09:00:00+08:00"
        ) from None
    if not 1900 <= now.year <= 9000:
        raise UsageError(
            f"--now {text!r} is too far from any store's data: give a year between 1900 and 9000"
        )
    return now


def parse_duration(text: str) -> timedelta:
    """An ISO 8601 duration without years or months (``PT2H``, ``P1DT30M``, ``PT90S``) or a short
    one (``90s``, ``30m``, ``2h``, ``1d``, ``1w``; a bare number is seconds). Raises ValueError
    for anything else, and for a duration that is not positive."""
    t = text.strip()
    seconds: float
    m = _ISO_DURATION.match(t)
    if m and t.upper() not in ("P", "PT") and not t.upper().endswith("T"):
        parts = {k: float(v) for k, v in m.groupdict().items() if v is not None}
        seconds = (
            parts.get("w", 0) * 604800
            + parts.get("d", 0) * 86400
            + parts.get("h", 0) * 3600
            + parts.get("m", 0) * 60
            + parts.get("s", 0)
        )
    else:
        s = _SHORT_DURATION.match(t)
        if not s:
            raise ValueError(f"{text!r} is not a duration: give e.g. PT2H, P1D, 30m or 2h")
        seconds = float(s.group("n")) * _UNIT_SECONDS[(s.group("u") or "s").lower()]
    if not 0 < seconds <= 366 * 86400:
        raise ValueError(f"{text!r}: a duration must be more than 0 and at most a year")
    return timedelta(seconds=seconds)


class MqttConfig(Section):
    username: str | None = Field(
        default=None,
        title="MQTT user name",
        description="this machine's broker user (a store id, hub, staff-ID); $ADAMM_MQTT_USERNAME wins",
    )
    password: str | None = Field(
        default=None,
        title="MQTT password",
        description="the user's password (keep the file owner-readable); $ADAMM_MQTT_PASSWORD wins",
    )
    ca: str | None = Field(
        default=None,
        title="CA certificate",
        description="path of the CA that signed the broker's certificate, for mqtts:// URLs; "
        "$ADAMM_MQTT_CA wins; unset: the system's CAs",
    )
    session_expiry_s: int = Field(
        default=7 * 86400,
        ge=60,
        title="Session expiry",
        description="seconds the broker keeps this client's session (subscriptions and queued messages) "
        "while it is offline: the outage budget (MQTT 5; over MQTT 3.1.1 the broker's own limit applies, "
        "Mosquitto's persistent_client_expiration)",
    )
    connect_attempts: int = Field(
        default=6,
        ge=1,
        le=100,
        title="Connect attempts",
        description="attempts (exponential backoff with jitter, from 0.5 s up to 30 s) before a "
        "command gives up on an unreachable broker (exit 3)",
    )
    protocol: Literal["auto", "5", "3.1.1"] = Field(
        default="auto",
        title="MQTT version",
        description='"auto": MQTT 5, and MQTT 3.1.1 when the broker answers that it does not speak 5 '
        '(logged once; no session or message expiry, no user properties); "5" or "3.1.1": only that '
        "version (a broker that does not speak it is an error, exit 3)",
    )
    keepalive_s: int = Field(30, ge=5, le=3600, title="Keep-alive", description="MQTT keep-alive seconds")
    connect_timeout_s: float = Field(
        60.0,
        gt=0,
        title="Connect timeout",
        description="seconds a long-running client (adamm-hub serve) keeps retrying a broker it has "
        "never reached before it exits 3",
    )
    backoff_initial_s: float = Field(
        0.5,
        gt=0,
        title="First back-off",
        description="first wait before reconnecting (seconds; doubles, with jitter)",
    )
    backoff_max_s: float = Field(
        30.0, gt=0, title="Longest back-off", description="longest wait between reconnection attempts"
    )


class ActionsConfig(Section):
    default_expires_in: str = Field(
        default="PT4H",
        title="Action expiry",
        description="how long an action stays open when `adamm action send` gets no --expires-in and for "
        "the TUI's send-as-action (ISO 8601 duration, PT2H, or 2h)",
    )
    resend_base_s: float = Field(
        default=60.0,
        gt=0,
        title="First re-send",
        description="seconds after a send before an unacknowledged action is re-sent; each re-send "
        "doubles it",
    )
    resend_max_s: float = Field(
        default=3600.0,
        gt=0,
        title="Longest re-send gap",
        description="the re-send gap never grows beyond this many seconds",
    )
    sender_give_up_s: float = Field(
        default=300.0,
        gt=0,
        title="Hub action sender give-up",
        description="adamm-hub serve: seconds its action sender may fail on every round before the worker "
        "stops with exit 3 (adamm-hub status shows the sender's failures meanwhile)",
    )

    effect_window_days: int = Field(
        default=14,
        ge=7,
        le=364,
        title="Action effect window",
        description="days on each side of an action's done acknowledgement that `adamm maintain` "
        "compares to measure its effect (CONTRACT.md section 7); a multiple of 7 keeps the weekdays "
        "matched",
    )

    @field_validator("default_expires_in")
    @classmethod
    def _duration(cls, v: str) -> str:
        parse_duration(v)
        return v


class TiersConfig(Section):
    """``[tiers]``: hot / warm / cold storage by age (CONTRACT.md section 6), run by ``adamm maintain``."""

    warm_after_days: int = Field(
        30,
        ge=1,
        title="Warm after",
        description="events older than this many days get quantized vectors and their media moved to warm_media_dir",
    )
    cold_after_days: int = Field(
        180,
        ge=2,
        title="Cold after",
        description="store-local days older than this are closed in the rollup and their events moved to the archive",
    )
    warm_media_dir: str | None = Field(
        None,
        title="Warm media folder",
        description="where media files of warm events are moved (default: <database>.warm-media beside the database)",
    )
    archive_dir: str | None = Field(
        None,
        title="Archive folder",
        description="folder of the compressed event archive, one <database>.<store>.<YYYY-MM>.mev.jsonl.gz per store-month (default: the database's folder)",
    )
    restore_keep_days: int = Field(
        30,
        ge=0,
        title="Keep restored events",
        description="days a restored event stays in the hot tier before maintain drops it again (it stays archived)",
    )
    batch_events: int = Field(
        5000,
        ge=1,
        le=1_000_000,
        title="Events per transaction",
        description="events moved down a tier per transaction (smaller: shorter write locks)",
    )
    vacuum_free_share: float = Field(
        0.25,
        ge=0,
        le=1,
        title="Compact the file",
        description=(
            "after a maintain run, VACUUM the database when at least this share of its pages is free "
            "(what the cold tier deleted; needs free disk space of the database's size); 1 never compacts"
        ),
    )
    maintain_enabled: bool = Field(
        True, title="Daemon maintain", description="adamm run runs maintain on its schedule"
    )
    maintain_at: str = Field(
        "03:00",
        pattern=r"^([01][0-9]|2[0-3]):[0-5][0-9]$",
        title="Maintain time",
        description="store-local time (HH:MM) at which the daemon runs maintain each night",
    )
    maintain_every_hours: float = Field(
        24.0,
        gt=0,
        title="Maintain interval",
        description="hours between daemon maintain runs, counted from maintain_at (24: nightly)",
    )

    @model_validator(mode="after")
    def _cold_after_warm(self) -> TiersConfig:
        if self.cold_after_days <= self.warm_after_days:
            raise ValueError(
                f"cold_after_days ({self.cold_after_days}) must be larger than warm_after_days "
                f"({self.warm_after_days})"
            )
        return self


class SyncConfig(Section):
    """``[sync]``: what this store syncs to the hub and how often (``adamm sync``, the daemon's sync
    worker); the connection itself (credentials, CA, session, keep-alive, back-off) is ``[mqtt]``.
    The daemon runs the worker only when the section is present."""

    broker: str | None = Field(
        None,
        title="Broker URL",
        description="mqtt://HOST:PORT or mqtts://HOST:PORT (TLS); `adamm sync --broker` overrides it",
    )
    interval_s: float = Field(
        60.0,
        gt=0,
        title="Sync interval",
        description="seconds between two derivations of pending rollups in the daemon's sync worker",
    )
    open_day_interval_s: float = Field(
        900.0,
        gt=0,
        title="Current-day interval",
        description="the daemon summarises the store's current (still filling) day at most this often "
        "(seconds): each time is a new version of its six summaries on the wire",
    )
    max_pending: int = Field(
        20000,
        ge=10,
        title="Outbox bound",
        description="most pending (unconfirmed) summaries in the outbox; when full, days not yet "
        "summarised stay marked dirty and are summarised once the hub confirms what is pending",
    )
    window: int = Field(
        100,
        ge=1,
        le=65535,
        title="Publish window",
        description="QoS 1 summaries in flight at once (published, broker's PUBACK not yet received)",
    )
    resend_after_s: float = Field(
        30.0,
        gt=0,
        title="Resend after",
        description="re-publish a summary the hub has not confirmed this many seconds after sending it",
    )


class AdammConfig(Section):
    retrieval: RetrievalConfig = Field(
        default_factory=RetrievalConfig, description="hybrid retrieval weights"
    )
    analysis: AnalysisConfig = Field(default_factory=AnalysisConfig, description="honesty rules and evidence")
    encoders: EncoderConfig = Field(default_factory=EncoderConfig, description="model selection")
    llm: LLMConfig = Field(default_factory=LLMConfig, description="optional LLM plan parser")
    mqtt: MqttConfig = Field(default_factory=MqttConfig, description="broker credentials of this machine")
    actions: ActionsConfig = Field(default_factory=ActionsConfig, description="action expiry and re-sends")
    tiers: TiersConfig = Field(
        default_factory=lambda: TiersConfig(), description="hot/warm/cold tiers and the maintain schedule"
    )
    sync: SyncConfig | None = Field(
        None, description="store-to-hub sync over MQTT (absent: the daemon runs no sync worker)"
    )
