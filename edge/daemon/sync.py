"""The daemon's sync worker: :class:`SyncWorker`, one thread running
:meth:`edge.sync.runner.SyncRun.forever` over the daemon's store when the config has ``[sync]``.

One MQTT connection per store (client id ``adamm-edge-{store_id}``, settings from ``[mqtt]``) for
the whole process, held under the store's connection lock (``{db}.mqtt.lock``,
:mod:`edge.sync.actions`): it also carries the store's actions (acks recorded, unacknowledged
actions re-sent, expired ones marked), so ``adamm action send`` and the TUI only queue. The worker
summarises changed days every ``[sync] interval_s`` and publishes as summaries appear; while
another process (``adamm sync``) holds the lock it waits, retrying every interval. Refused credentials end the worker (logged
as an error, its component ``failed``; the daemon keeps capturing and the outbox keeps everything);
any other failure is logged and retried after the interval. On stop it summarises once more and
gives the hub up to ``drain_s`` seconds to confirm, then publishes ``offline`` and disconnects:
what is unconfirmed stays in the outbox for the next run.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from typing import Any

from edge.config import ActionsConfig, MqttConfig, SyncConfig
from edge.errors import AdammError, BrokerAuthError, ConfigError
from edge.sync.actions import ConnectionLock
from edge.sync.mqtt import LinkSettings, link_settings
from edge.sync.runner import SyncRun

logger = logging.getLogger(__name__)


def worker_link_settings(cfg: SyncConfig, mqtt: MqttConfig | None = None) -> LinkSettings:
    """The connection settings of the worker: ``[sync] broker`` (required here) and ``[mqtt]``;
    a worker keeps retrying an unreachable broker (no attempt limit)."""
    if not cfg.broker:
        raise ConfigError('[sync] needs broker = "mqtt://HOST:PORT" (or mqtts://) for the daemon to sync')
    return dataclasses.replace(
        link_settings(cfg.broker, mqtt, max_inflight=cfg.window), connect_attempts=None
    )


class SyncWorker(threading.Thread):
    """Runs the store's sync until :meth:`stop`."""

    def __init__(
        self,
        store: Any,
        cfg: SyncConfig,
        mqtt: MqttConfig | None = None,
        actions: ActionsConfig | None = None,
        *,
        drain_s: float = 5.0,
    ) -> None:
        super().__init__(name="sync", daemon=True)
        self.cfg = cfg
        self.store = store
        self.settings = worker_link_settings(cfg, mqtt)
        self.drain_s = drain_s
        self.run_: SyncRun = SyncRun(
            store,
            self.settings,
            max_pending=cfg.max_pending,
            window=cfg.window,
            resend_after_s=cfg.resend_after_s,
            actions=actions or ActionsConfig(),
        )
        self._halt = threading.Event()
        self.state = "starting"
        self.error: str | None = None

    @property
    def connection(self) -> SyncRun:
        """The running sync (its ``syncs[store_id].link`` is the store's MQTT connection)."""
        return self.run_

    def run(self) -> None:
        self.state = "running"
        lock = None
        while lock is None and not self._halt.is_set():
            lock = ConnectionLock.try_acquire(self.store.path)
            if lock is None:
                self.error = "another process holds the store's MQTT connection (adamm sync?)"
                logger.warning("sync: %s; retrying in %.0f s", self.error, self.cfg.interval_s)
                self._halt.wait(self.cfg.interval_s)
        if lock is None:
            self.state = "stopped"
            return
        self.error = None
        try:
            self._run_locked()
        finally:
            lock.release()

    def _run_locked(self) -> None:
        while not self._halt.is_set():
            try:
                self.run_.forever(self._halt, self.cfg.interval_s, self.cfg.open_day_interval_s)
            except BrokerAuthError as exc:
                self.state, self.error = "failed", str(exc)
                logger.error("sync stopped: %s", exc)
                return
            except AdammError as exc:
                self.error = str(exc)
                logger.warning("sync: %s; retrying in %.0f s", exc, self.cfg.interval_s)
                self.run_.syncs.clear()
                self._halt.wait(self.cfg.interval_s)
        self.state = "stopped"

    def stop(self, timeout: float = 30.0) -> None:
        """Summarise once more, let the hub confirm for up to ``drain_s``, then disconnect."""
        if self.state == "running" and self.ident is not None:
            deadline = time.monotonic() + self.drain_s
            try:
                self.run_.derive()
            except AdammError as exc:
                logger.warning("sync: final summary failed: %s", exc)
            while time.monotonic() < deadline and self.run_.outbox.counts()["pending"] > 0:
                time.sleep(0.05)
        self._halt.set()
        if self.ident is not None:
            self.join(timeout)

    def status(self) -> dict[str, Any]:
        counts = self.run_.counts()
        st: dict[str, Any] = {"state": self.state, **counts.as_dict()}
        if self.error:
            st["error"] = self.error
        return st
