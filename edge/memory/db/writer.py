"""The one writer thread of a store: every write to the database goes through it.

Owns the write connection. Callers submit a function ``fn(conn)``; it runs on the writer thread
inside ``BEGIN IMMEDIATE ... COMMIT`` (an exception rolls back and is set on the returned future).
One writer means no write-write lock contention inside a process, and ``BEGIN IMMEDIATE`` takes the
lock up front so a transaction never fails half-way on a busy upgrade. Created and stopped by
:class:`edge.memory.store.Store`.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

import apsw

from edge.errors import StoreError, StoreLockedError

logger = logging.getLogger(__name__)

T = TypeVar("T")

_STOP = object()


class Writer(threading.Thread):
    """Runs submitted write functions one at a time, each in its own immediate transaction."""

    def __init__(self, conn: apsw.Connection, name: str = "adamm-writer", max_queue: int = 64) -> None:
        super().__init__(name=name, daemon=True)
        self._conn = conn
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=max_queue)
        self._closed = False
        self._lock = threading.Lock()

    def submit(self, fn: Callable[[apsw.Connection], T]) -> Future[T]:
        """Queue ``fn`` to run in a write transaction; blocks while the queue is full (back-pressure)."""
        future: Future[T] = Future()
        with self._lock:
            if self._closed:
                raise StoreError("the store is closed; no more writes are accepted")
        self._queue.put((fn, future))
        return future

    def run(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            fn, future = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = self._transaction(fn)
            except BaseException as exc:
                future.set_exception(exc)
            else:
                future.set_result(result)

    def _transaction(self, fn: Callable[[apsw.Connection], Any]) -> Any:
        conn = self._conn
        try:
            conn.execute("BEGIN IMMEDIATE")
        except apsw.BusyError:
            raise StoreLockedError(
                "the memory is locked by another process past the busy timeout",
                hint="stop the other adamm process writing to it, or retry later",
            ) from None
        try:
            result = fn(conn)
            conn.execute("COMMIT")
        except BaseException:
            if not conn.getautocommit():
                try:
                    conn.execute("ROLLBACK")
                except apsw.Error:
                    logger.exception("rollback failed")
            raise
        return result

    def close(self, timeout: float | None = None) -> None:
        """Stop after the queued work has run (drains the queue)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if self.is_alive():
            self._queue.put(_STOP)
            self.join(timeout)
