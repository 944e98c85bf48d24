"""Typed configuration shared by every edge command.

One TOML file (``--config``; ``ADAMM_CONFIG`` env; else built-in defaults). Every field has a
default and a description; unknown keys are errors (``extra="forbid"``) reported with the key,
the value and why. The daemon's own sections (cameras, microphones, ...) extend this model in
``edge.daemon.config``.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from edge.errors import ConfigError


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class RetrievalConfig(_Section):
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


class AnalysisConfig(_Section):
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


class EncoderConfig(_Section):
    text: str = Field(
        "use_v3_multilingual",
        title="Text encoder",
        description="registry key of the text encoder (see models/manifest.toml)",
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


class LLMConfig(_Section):
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


class AdammConfig(_Section):
    retrieval: RetrievalConfig = Field(
        default_factory=RetrievalConfig, description="hybrid retrieval weights"
    )
    analysis: AnalysisConfig = Field(default_factory=AnalysisConfig, description="honesty rules and evidence")
    encoders: EncoderConfig = Field(default_factory=EncoderConfig, description="model selection")
    llm: LLMConfig = Field(default_factory=LLMConfig, description="optional LLM plan parser")


def format_validation_error(exc: ValidationError, source: str) -> str:
    """One line per problem: ``key = value: reason``."""
    lines = []
    for err in exc.errors():
        key = ".".join(str(p) for p in err["loc"])
        value = err.get("input")
        lines.append(f"{source}: {key} = {value!r}: {err['msg']}")
    return "\n".join(lines)


def parse_config(data: dict[str, Any], source: str = "config") -> AdammConfig:
    try:
        return AdammConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc, source)) from None


def load_config(path: str | os.PathLike[str] | None = None) -> AdammConfig:
    """Load the config file (``path``, else ``$ADAMM_CONFIG``, else defaults)."""
    chosen = path or os.environ.get("ADAMM_CONFIG")
    if not chosen:
        return AdammConfig()
    p = Path(chosen)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(
            f"config file {p} does not exist", hint="pass --config with an existing file"
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: not valid TOML: {exc}") from None
    return parse_config(data, str(p))
