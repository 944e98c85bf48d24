"""The sections every edge command reads: retrieval, analysis, encoders, llm (:class:`AdammConfig`).

A leaf of the package graph: pydantic models only, no I/O; :mod:`edge.config.load` reads files.
Every field has a default and a description; unknown keys are errors (``extra="forbid"``); strict
types (TOML values are typed, so ``true`` is not a number and ``"5"`` is not one either).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

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


class SyncConfig(Section):
    """``[sync]``: how this store reaches the hub's MQTT broker (``adamm sync``, the daemon's sync
    worker). The daemon runs the worker only when the section is present."""

    broker: str | None = Field(
        None,
        title="Broker URL",
        description="mqtt://HOST:PORT or mqtts://HOST:PORT (TLS); `adamm sync --broker` overrides it",
    )
    username: str | None = Field(
        None,
        title="User name",
        description="MQTT user name (else $ADAMM_MQTT_USERNAME; none: connect anonymously)",
    )
    password: str | None = Field(
        None, title="Password", description="MQTT password (else $ADAMM_MQTT_PASSWORD)"
    )
    ca_file: str | None = Field(
        None,
        title="CA certificate",
        description="PEM file of the CA that signed the broker's certificate, for mqtts:// "
        "(else $ADAMM_MQTT_CA; none: the system's CAs)",
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
    session_expiry_s: int = Field(
        7 * 24 * 3600,
        ge=0,
        title="Session expiry",
        description="MQTT 5 Session Expiry Interval in seconds: the broker keeps this store's session "
        "(subscriptions, queued receipts) this long while it is away; at least the outage budget",
    )
    keepalive_s: int = Field(30, ge=5, le=65535, title="Keepalive", description="MQTT keepalive seconds")
    backoff_initial_s: float = Field(
        0.5, gt=0, title="Backoff start", description="first wait before reconnecting (seconds; doubles)"
    )
    backoff_max_s: float = Field(
        30.0, gt=0, title="Backoff cap", description="longest wait between reconnect attempts (seconds)"
    )


class AdammConfig(Section):
    retrieval: RetrievalConfig = Field(
        default_factory=RetrievalConfig, description="hybrid retrieval weights"
    )
    analysis: AnalysisConfig = Field(default_factory=AnalysisConfig, description="honesty rules and evidence")
    encoders: EncoderConfig = Field(default_factory=EncoderConfig, description="model selection")
    llm: LLMConfig = Field(default_factory=LLMConfig, description="optional LLM plan parser")
    sync: SyncConfig | None = Field(
        None, description="store-to-hub sync over MQTT (absent: the daemon runs no sync worker)"
    )
