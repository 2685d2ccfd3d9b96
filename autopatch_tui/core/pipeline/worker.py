"""The background worker thread: steps the pipeline whenever work is due, sleeps otherwise.
`wake()` after a turn ends; `stop()` makes it finish its current step and exit."""

from __future__ import annotations

import logging
import sqlite3
import threading
import time

from autopatch_tui.core.errors import MemoryStoreError
from autopatch_tui.core.pipeline.runner import PipelineRunner
from autopatch_tui.core.recall.layout_rebuild import Rebuild

log = logging.getLogger(__name__)


class BackgroundWorker:
    def __init__(self, runner: PipelineRunner, *, poll_seconds: float = 1.0) -> None:
        self.runner = runner
        self.poll_seconds = poll_seconds
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def thread(self) -> threading.Thread | None:
        return self._thread

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        if self.running:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="memory-worker", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def _rebuild_recall_index(self, rebuild: Rebuild | None, seconds: float) -> Rebuild | None:
        """A store written before issue 23 gets its recall index rebuilt here, in short transactions
        while the pipeline has nothing to do (`layout_rebuild`; one catalog lookup when there is
        nothing to rebuild). Steps for up to `seconds`, or until woken or stopped. Returns the
        rebuild to go on with, or None when it is over (done, or stopped by an error: the next
        start tries again)."""
        deadline = time.monotonic() + seconds
        try:
            if rebuild is None:
                rebuild = Rebuild(self.runner.store.conn)
            while not self._stop.is_set():
                pause = rebuild.step()
                if pause is None:
                    return None
                if self._wake.wait(min(pause, max(0.0, deadline - time.monotonic()))) or time.monotonic() >= deadline:
                    return rebuild
        except (MemoryStoreError, sqlite3.Error) as exc:
            log.warning("recall index not rebuilt: %s", type(exc).__name__)
            return None
        return rebuild

    def stop(self, timeout: float | None = None) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        rebuild = self._rebuild_recall_index(None, 0.0) if self.runner.store.healthy else None
        while not self._stop.is_set():
            outcome = None
            try:
                outcome = self.runner.step()
            except MemoryStoreError as exc:  # degraded or closed: stop quietly, status shows why
                log.warning("memory worker stopped: %s", type(exc).__name__)
                return
            except Exception as exc:
                if self._stop.is_set() or self.runner.stopped.is_set():
                    log.warning("memory worker step ended at close: %s", type(exc).__name__)
                    return
                log.exception("memory worker step failed")
            wait = None
            if not self._stop.is_set():
                try:  # the coalesced review-summary refresh, between steps, never inside one
                    wait = self.runner.summary_schedule.run_if_due()
                except Exception:
                    log.exception("memory summary refresh failed")
            if outcome is not None and not self._stop.is_set():
                continue
            timeout = self.poll_seconds if wait is None else min(self.poll_seconds, wait)
            if rebuild is not None and not self._stop.is_set():
                rebuild = self._rebuild_recall_index(rebuild, timeout)  # waits as long, between its steps
            else:
                self._wake.wait(timeout)
            self._wake.clear()
