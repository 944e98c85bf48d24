"""Typed configuration of every edge command, a leaf package (it imports only :mod:`edge.errors`).

One TOML file (``--config``; ``ADAMM_CONFIG`` env; else built-in defaults) read by one loader,
:func:`edge.config.load.load_config`. The models:

* :mod:`edge.config.base`: :class:`AdammConfig` with the sections every command reads
  (``[retrieval]``, ``[analysis]``, ``[encoders]``, ``[llm]``, ``[mqtt]``, ``[actions]``, ``[tiers]``);
* :mod:`edge.config.capture`: cameras, microphones, ``[sampling]``, ``[quality]``, ``[vad]``, ``[pos]``;
* :mod:`edge.config.daemon`: :class:`DaemonConfig`, ``adamm run``'s superset of :class:`AdammConfig`.

Every field has a default and a description; unknown keys are errors (``extra="forbid"``) reported
as ``FILE: key.path: reason``, every problem at once.
"""

from edge.config.base import (
    ID_PATTERN,
    ActionsConfig,
    AdammConfig,
    AnalysisConfig,
    EncoderConfig,
    LLMConfig,
    MqttConfig,
    RetrievalConfig,
    Section,
    SyncConfig,
    TiersConfig,
    parse_duration,
    parse_now,
)
from edge.config.capture import (
    CameraConfig,
    MicrophoneConfig,
    PosConfig,
    QualityConfig,
    SamplingConfig,
    VadConfig,
)
from edge.config.daemon import (
    ContextConfig,
    DaemonConfig,
    DetectorConfig,
    ImageTextConfig,
    MergeConfig,
    SegmentationConfig,
    SpeechConfig,
    check_sources,
)
from edge.config.load import (
    MAX_CONFIG_BYTES,
    MAX_NESTING,
    ConfigFileError,
    format_problem,
    format_validation_error,
    load_config,
    load_daemon_config,
    model_for,
    parse_config,
    parse_config_text,
    parse_daemon_config,
    parse_daemon_text,
    parse_toml_text,
    read_config_bytes,
    validate_config_data,
    validation_problems,
)

__all__ = [
    "ID_PATTERN",
    "MAX_CONFIG_BYTES",
    "MAX_NESTING",
    "ActionsConfig",
    "AdammConfig",
    "AnalysisConfig",
    "CameraConfig",
    "ConfigFileError",
    "ContextConfig",
    "DaemonConfig",
    "DetectorConfig",
    "EncoderConfig",
    "ImageTextConfig",
    "LLMConfig",
    "MergeConfig",
    "MicrophoneConfig",
    "MqttConfig",
    "PosConfig",
    "QualityConfig",
    "RetrievalConfig",
    "SamplingConfig",
    "Section",
    "SegmentationConfig",
    "SpeechConfig",
    "TiersConfig",
    "SyncConfig",
    "VadConfig",
    "check_sources",
    "format_problem",
    "format_validation_error",
    "load_config",
    "load_daemon_config",
    "model_for",
    "parse_config",
    "parse_config_text",
    "parse_daemon_config",
    "parse_daemon_text",
    "parse_duration",
    "parse_now",
    "parse_toml_text",
    "read_config_bytes",
    "validate_config_data",
    "validation_problems",
]
