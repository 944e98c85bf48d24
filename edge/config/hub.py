"""Typed configuration of the hub (``adamm-hub --config FILE``): :class:`HubConfig`.

The same sections as :class:`edge.config.base.AdammConfig`: ``[analysis]`` and the others the
engine reads, and ``[mqtt]`` (:class:`edge.config.base.MqttConfig`: the broker credentials and
session settings of ``adamm-hub serve``). Credentials may instead come from
``ADAMM_MQTT_USERNAME`` / ``ADAMM_MQTT_PASSWORD`` / ``ADAMM_MQTT_CA`` (the environment wins),
never from the command line. Every field has a default and a description; unknown keys are errors.
"""

from __future__ import annotations

from edge.config.base import AdammConfig


class HubConfig(AdammConfig):
    """The hub's configuration file."""
