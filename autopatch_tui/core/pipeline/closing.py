"""A manager's clean close: stop scheduling, hand back what this owner holds, never write after.

1. The runner stops (every pipeline write passes its gate, so none starts after this), the
   watermark flushes and the worker are told to stop, and the turn keepers end.
2. The jobs this owner holds are released in one transaction (back to `pending` / a due
   `retry_wait`, the claim undone), so no claim is spent by a lease expiry. An open turn keeps
   its lease: the lease stays the recovery bound after a process stops (spec).
3. Threads finishing a SQLite step are waited for (bounded); a thread inside a provider call is
   abandoned: its late result is fenced by the stopped gate, and closing the HTTP client under it
   ends it quietly (the runner turns that error into a silent stop, never a traceback).
4. The store closes; nothing is written after this returns."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from autopatch_tui.core.errors import MemoryStoreError
from autopatch_tui.core.memory import jobs

log = logging.getLogger(__name__)
GRACE_SECONDS = 0.2  # how long a provider call in flight may still finish by itself


def _release(mgr: Any) -> None:
    store = mgr.store
    if not store.healthy:
        return
    try:
        conn = store.conn()
        now = mgr.clock.now()
        released = jobs.release_leases(conn, mgr.owner, now=now)
        if released:
            log.info("released %d job lease(s) at close", released)
    except MemoryStoreError as exc:  # locked past the busy timeout, retired, …: the leases expire instead
        log.warning("leases not released at close: %s", type(exc).__name__)
    except Exception as exc:  # noqa: BLE001 - a damaged file must not turn close into a traceback
        log.warning("leases not released at close: %s", type(exc).__name__)


def _join(threads: list[threading.Thread], runner: Any, join_timeout: float) -> None:
    deadline = time.monotonic() + join_timeout
    grace_end: float | None = None
    for thread in threads:
        while thread.is_alive():
            now = time.monotonic()
            if now >= deadline:
                return
            if runner.calls_in_flight:
                grace_end = grace_end or now + GRACE_SECONDS
                if now >= grace_end:
                    return  # abandoned: the call ends when the client closes, its result is fenced
            thread.join(0.02)


def stop_closing(mgr: Any, join_timeout: float) -> None:
    runner, worker = mgr._runner, mgr._worker  # None when never used: nothing to stop (and no import)
    mgr.store.cancel_verify()  # a deep store check in progress ends at once, without a verdict
    if runner is not None:
        runner.summary_schedule.flush()  # a coalesced summary refresh still due is written now
        runner.stop()
    for wf, _ in mgr._flushes:
        wf.stop.set()
    if worker is not None:
        worker.stop(0)
    if mgr._turn_keepers is not None:  # none was built: no request ran
        mgr._turn_keepers.close(join_timeout)
    threads = [t for _, t in mgr._flushes]
    if worker is not None and worker.thread is not None:
        threads.append(worker.thread)
    _release(mgr)
    if runner is not None:
        _join(threads, runner, join_timeout)
    if mgr.built_client is not None:  # never builds one to close it
        mgr.built_client.close()  # an abandoned call ends now, quietly (see PipelineRunner._guarded_call)
    mgr.store.close()
