"""``adamm sync``: publish the memory's pending summaries to the hub over MQTT.

Thin over :class:`edge.sync.runner.SyncRun`: derives the rollup summaries of the days that changed
into the outbox, publishes what is pending (QoS 1) and marks a summary done only when the hub's
receipt confirms it. The same connection carries the store's actions: it collects the staff
devices' acks, re-sends unacknowledged actions and marks expired ones (:mod:`edge.sync.runner`);
the command holds the store's connection lock (``{db}.mqtt.lock``, :mod:`edge.sync.actions`) while
it runs, so ``adamm action send`` only queues. ``--once`` drains what is pending at the start and
exits 0, or 3 when the broker stays unreachable or the hub has not confirmed within ``--timeout``
seconds (what is unconfirmed stays pending); with nothing to send it says so in one line and
exits 0 without connecting. Without it, runs until SIGINT/SIGTERM. Credentials that are not the
memory's store's (a store's MQTT user is its store id) are refused before connecting (exit 3).
Progress on stderr; ``--json`` prints ``{"published", "confirmed", "parked", "pending"}`` on
stdout on every exit once the memory is open (with ``"error"`` when it exits 3).
Credentials come from ``ADAMM_MQTT_USERNAME`` / ``ADAMM_MQTT_PASSWORD`` (``ADAMM_MQTT_CA`` for
mqtts) or the config file's ``[mqtt]`` section, never from the command line.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import signal
import sys
import threading
from typing import Any

from edge.errors import AdammError, UsageError

logger = logging.getLogger(__name__)

#: seconds to wait for the store's connection lock (an ``adamm action send`` publishing directly
#: holds it for a moment; a running sync worker holds it for good: exit 3); with ``--once`` at
#: most ``--timeout``
LOCK_WAIT_S = 30.0


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "sync",
        help="publish pending summaries to the hub (MQTT)",
        description=(
            "Publish the memory's pending daily rollups and facts to the hub's MQTT broker; a summary "
            "is done only when the hub's receipt confirms it. Resumes where it stopped. Also collects "
            "action acks and re-sends unacknowledged actions. Credentials: ADAMM_MQTT_USERNAME / "
            "ADAMM_MQTT_PASSWORD (ADAMM_MQTT_CA: the CA for mqtts://) or the config file's [mqtt]."
        ),
    )
    p.add_argument("--db", required=True, help="the memory database file")
    p.add_argument(
        "--broker", metavar="URL", help="mqtt://HOST:PORT or mqtts://HOST:PORT (default: [sync] broker)"
    )
    p.add_argument(
        "--once",
        action="store_true",
        help="drain what is pending until the hub confirms it, then exit (3 if not within --timeout)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        metavar="S",
        help="with --once: seconds to wait for the broker and the hub's receipts (default 120)",
    )
    p.add_argument("--json", action="store_true", help="print the counts as JSON on stdout")
    p.add_argument("--config", help="configuration file (TOML) with [sync] and [mqtt] sections")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from edge.cli._common import open_existing_store
    from edge.config import SyncConfig, load_config
    from edge.sync.actions import ConnectionLock
    from edge.sync.mqtt import link_settings, parse_broker_url
    from edge.sync.runner import SyncRun

    if not args.timeout > 0:
        raise UsageError(f"--timeout must be a positive number of seconds, got {args.timeout:g}")
    config = load_config(args.config)
    cfg = config.sync or SyncConfig()
    url = args.broker or cfg.broker
    if not url:
        raise UsageError("no broker: pass --broker mqtt://HOST:PORT or set broker in the config's [sync]")
    address = parse_broker_url(url)
    # --once waits --timeout for the broker, not a number of attempts
    settings = dataclasses.replace(
        link_settings(address, config.mqtt, max_inflight=cfg.window), connect_attempts=None
    )

    def progress(text: str) -> None:
        print(f"adamm sync: {text}", file=sys.stderr, flush=True)

    lock_wait = min(LOCK_WAIT_S, args.timeout) if args.once else LOCK_WAIT_S
    with (
        open_existing_store(args.db, config, readonly=False) as store,
        ConnectionLock.acquire(args.db, lock_wait),
    ):
        sync = SyncRun(
            store,
            settings,
            max_pending=cfg.max_pending,
            window=cfg.window,
            resend_after_s=cfg.resend_after_s,
            progress=progress,
            actions=config.actions,
        )
        try:
            sync.check_user()
            if args.once:
                counts = sync.once(args.timeout)
            else:
                counts = _forever(sync, cfg, address.url, progress)
        except AdammError as exc:
            if args.json:  # the summary on every exit, with why it stopped
                print(json.dumps({**_counts_now(sync), "error": str(exc)}))
            raise
    if args.json:
        print(json.dumps(counts.as_dict()))
    else:
        progress(
            f"{counts.published} published, {counts.confirmed} confirmed, {counts.parked} parked, "
            f"{counts.pending} pending"
        )
    return 0


def _counts_now(sync: Any) -> dict[str, int]:
    """The counts of a run that stopped on an error (zeros for what cannot be read now)."""
    try:
        return dict(sync.counts().as_dict())
    except Exception:  # the memory itself may be what failed
        logger.debug("counts after an error", exc_info=True)
        return {"published": 0, "confirmed": 0, "parked": 0, "pending": 0}


def _forever(sync: Any, cfg: Any, url: str, progress: Any) -> Any:
    stop = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, on_signal)
    progress(f"syncing to {url} until stopped (Ctrl-C)")
    sync.forever(stop, cfg.interval_s, cfg.open_day_interval_s)
    return sync.counts()
