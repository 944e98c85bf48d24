"""The sections every edge command reads: retrieval, analysis, encoders, llm (:class:`AdammConfig`).

A leaf of the package graph: pydantic models only, no I/O; :mod:`edge.config.load` reads files.
Every field has a default and a description; unknown keys are errors (``extra="forbid"``); strict
types (TOML values are typed, so ``true`` is not a number and ``"5"`` is not one either).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

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


class AdammConfig(Section):
    retrieval: RetrievalConfig = Field(
        default_factory=RetrievalConfig, description="hybrid retrieval weights"
    )
    analysis: AnalysisConfig = Field(default_factory=AnalysisConfig, description="honesty rules and evidence")
    encoders: EncoderConfig = Field(default_factory=EncoderConfig, description="model selection")
    llm: LLMConfig = Field(default_factory=LLMConfig, description="optional LLM plan parser")
    tiers: TiersConfig = Field(
        default_factory=lambda: TiersConfig(), description="hot/warm/cold tiers and the maintain schedule"
    )
