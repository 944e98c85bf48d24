"""Typed configuration of the hub (``adamm-hub --config FILE``): :class:`HubConfig`.

Extends :class:`edge.config.base.AdammConfig` (the ``[analysis]`` section and the others the engine
reads) with ``[mqtt]`` (:class:`HubMqttConfig`): the broker credentials and session settings of
``adamm-hub serve``. Credentials may instead come from ``ADAMM_MQTT_USERNAME`` /
``ADAMM_MQTT_PASSWORD`` / ``ADAMM_MQTT_CA`` (the environment wins), never from the command line.
Every field has a default and a description; unknown keys are errors.
"""

from __future__ import annotations

from pydantic import Field

from edge.config.base import AdammConfig, Section


class HubMqttConfig(Section):
    username: str | None = Field(
        None, title="Broker user", description="MQTT user name (ADAMM_MQTT_USERNAME overrides it)"
    )
    password: str | None = Field(
        None, title="Broker password", description="MQTT password (ADAMM_MQTT_PASSWORD overrides it)"
    )
    ca: str | None = Field(
        None,
        title="CA certificate",
        description="PEM file of the CA that signed the broker's certificate, for mqtts:// (ADAMM_MQTT_CA overrides it)",
    )
    session_expiry_s: int = Field(
        7 * 86400,
        ge=60,
        title="Session expiry",
        description="seconds the broker keeps the hub's session (and queues its messages) while it is away",
    )
    keepalive_s: int = Field(30, ge=5, le=3600, title="Keep-alive", description="MQTT keep-alive seconds")
    connect_timeout_s: float = Field(
        60.0,
        gt=0,
        title="Connect timeout",
        description="seconds serve keeps retrying a broker it has never reached before exiting 3",
    )
    backoff_max_s: float = Field(
        30.0, gt=0, title="Longest back-off", description="longest wait between reconnection attempts"
    )


class HubConfig(AdammConfig):
    mqtt: HubMqttConfig = Field(default_factory=HubMqttConfig, description="the hub's broker connection")
