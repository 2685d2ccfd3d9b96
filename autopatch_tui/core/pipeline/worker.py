"""The background worker thread: steps the pipeline whenever work is due, sleeps otherwise.
`wake()` after a turn ends; `stop()` makes it finish its current step and exit.

The pipeline runner (and with it pydantic, the model SDK and the pipeline's modules, ~0.5 s of
CPU) is built in this thread and only once a job is open (`has_work`, one indexed query): the app
starting on a store with nothing to process never imports it, and the thread that starts the
worker (the app's main thread, right after its first frame) imports nothing (issue 33)."""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from autopatch_tui.core.errors import MemoryStoreError

if TYPE_CHECKING:
    from autopatch_tui.core.memory.store import MemoryStore
    from autopatch_tui.core.pipeline.runner import PipelineRunner
    from autopatch_tui.core.recall.layout_rebuild import Rebuild

log = logging.getLogger(__name__)


class BackgroundWorker:
    def __init__(self, runner: Callable[[], PipelineRunner], store: MemoryStore, *, poll_seconds: float = 1.0,
                 before_work: Callable[[], bool] | None = None, cancel_before_work: Callable[[], None] | None = None,
                 has_work: Callable[[], bool] | None = None,
                 built: Callable[[], PipelineRunner | None] | None = None) -> None:
        self._make_runner = runner  # called in the worker's thread, once a job is open
        self._built = built  # the runner when something else built it already (its summary may be due)
        self._runner: PipelineRunner | None = None
        self.store = store
        self.has_work = has_work  # None: always build the runner (no cheap probe)
        self.before_work = before_work  # runs first in the thread (the deep store check); False: no work
        self.cancel_before_work = cancel_before_work  # `stop()` ends it at once
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
                from autopatch_tui.core.recall.layout_rebuild import Rebuild

                rebuild = Rebuild(self.store.conn)
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
        if self.cancel_before_work is not None:
            self.cancel_before_work()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        if self.before_work is not None:  # the deep store check: the rebuild waits for its verdict
            if self._stop.is_set():
                return
            try:
                if not self.before_work() or self._stop.is_set():
                    return
            except MemoryStoreError as exc:  # closed or degraded meanwhile: nothing to do
                log.info("memory worker not started: %s", type(exc).__name__)
                return
        rebuild = self._rebuild_recall_index(None, 0.0) if self.store.healthy else None
        while not self._stop.is_set():
            outcome = None
            runner = self._runner or (self._built() if self._built is not None else None)
            try:
                if runner is None and (self.has_work is None or self.has_work()):
                    runner = self._runner = self._make_runner()
                if runner is not None:
                    outcome = runner.step()
            except MemoryStoreError as exc:  # degraded or closed: stop quietly, status shows why
                log.warning("memory worker stopped: %s", type(exc).__name__)
                return
            except Exception as exc:
                if self._stop.is_set() or (runner is not None and runner.stopped.is_set()):
                    log.warning("memory worker step ended at close: %s", type(exc).__name__)
                    return
                log.exception("memory worker step failed")
            wait = None
            if runner is not None and not self._stop.is_set():
                try:  # the coalesced review-summary refresh, between steps, never inside one
                    wait = runner.summary_schedule.run_if_due()
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
