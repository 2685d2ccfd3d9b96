"""The background worker thread: steps the pipeline whenever work is due, sleeps otherwise.
`wake()` after a turn ends; `stop()` makes it finish its current step and exit."""

from __future__ import annotations

import logging
import sqlite3
import threading

from autopatch_tui.core.errors import MemoryStoreError
from autopatch_tui.core.pipeline.runner import PipelineRunner
from autopatch_tui.core.recall import layout_upgrade

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

    def _upgrade_recall_index(self) -> None:
        """A store written before issue 23 gets its recall index rebuilt here, once, off the start-up
        path (`layout_upgrade`; one catalog lookup when there is nothing to do)."""
        try:
            if self.runner.store.healthy and not self._stop.is_set():
                layout_upgrade.upgrade(self.runner.store.conn())
        except (MemoryStoreError, sqlite3.Error) as exc:
            log.warning("recall index not rebuilt: %s", type(exc).__name__)

    def stop(self, timeout: float | None = None) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        self._upgrade_recall_index()
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
            self._wake.wait(self.poll_seconds if wait is None else min(self.poll_seconds, wait))
            self._wake.clear()
