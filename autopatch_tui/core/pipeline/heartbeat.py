"""The heartbeat that runs beside a long provider call: every `interval` seconds it renews the
job lease and the owner's open turns, and checks the store's run-time invariants. It only sets
flags; the worker decides (a fenced or damaged result is never repaired or committed)."""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable

from autopatch_tui.core.errors import MemoryStoreError

log = logging.getLogger(__name__)


class Heartbeat:
    def __init__(self, beat: Callable[[], bool], check: Callable[[], str | None], interval: float,
                 on_exit: Callable[[], None] | None = None) -> None:
        self._on_exit = on_exit
        self._beat = beat
        self._check = check
        self._interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.fenced = False
        self.damage: str | None = None
        self.beats = 0

    def __enter__(self) -> Heartbeat:
        self._thread = threading.Thread(target=self._run, name="memory-heartbeat", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self, timeout: float | None = None) -> None:
        """End the beats and wait (bounded by `timeout`) for the thread; a beat in progress finishes."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _run(self) -> None:
        try:
            self._beat_until_stopped()
        finally:
            if self._on_exit is not None:
                self._on_exit()  # e.g. release this thread's SQLite connection

    def _beat_until_stopped(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self.damage = self._check()
                if self.damage:
                    return
                if not self._beat():
                    self.fenced = True
                    return
                self.beats += 1
            except (MemoryStoreError, sqlite3.Error) as exc:
                # locked past the busy timeout, or an SQLite error `write_txn` does not convert (a
                # read-only database, a disk I/O error, a closed connection): the thread must not die
                # with a traceback and silently stop renewing, so log the type (never the message,
                # which may hold a path) and try again on the next beat
                log.warning("memory heartbeat failed: %s", type(exc).__name__)
