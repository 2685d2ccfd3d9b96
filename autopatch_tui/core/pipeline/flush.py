"""Bounded flushes.

- `exit_flush`: every job pending when it starts (and the consolidation derived from them) gets one
  processing chance; a retry or failure is recorded and the caller moves on.
- `WatermarkFlush` (`/new`): captures the old thread's open extraction jobs, processes them and their
  derived consolidation within a timeout, waiting (bounded) for captured jobs another manager holds or
  whose retry falls before the deadline. Other threads' jobs never count. On timeout the flush keeps
  going in the background until its jobs are done or the manager closes; before each step it renews
  its owner's open turns so a new turn can still complete."""

from __future__ import annotations

import logging
import sqlite3
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from autopatch_tui.core.errors import MemoryBusyError, MemoryStoreError
from autopatch_tui.core.events import FlushProgress
from autopatch_tui.core.memory import jobs

if TYPE_CHECKING:  # the exit of a session that built no pipeline imports none (`MemoryManager.process_pending`)
    from autopatch_tui.core.pipeline.runner import PipelineRunner

log = logging.getLogger(__name__)
TERMINAL = ("succeeded", "succeeded_no_output", "failed")
WAIT_SLICE = 0.05


@dataclass
class ExitFlushResult:
    succeeded: int = 0
    succeeded_no_output: int = 0
    retry_wait: int = 0
    failed: int = 0
    pending: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"succeeded": self.succeeded, "succeeded_no_output": self.succeeded_no_output,
                "retry_wait": self.retry_wait, "failed": self.failed, "pending": self.pending}


def _open_job_ids(conn: sqlite3.Connection, now: float) -> set[str]:
    """Pending and retry-waiting jobs, and leased jobs whose holder stopped renewing the lease (a
    dead process): the claim turns those back into work, so they get their chance here too."""
    return {r[0] for r in conn.execute(
        "SELECT id FROM memory_jobs WHERE status IN ('pending', 'retry_wait')"
        " OR (status = 'leased' AND lease_expires_at < ?)", (now,))}


def exit_flush(runner: PipelineRunner) -> ExitFlushResult:
    """One chance for each open job (pending or retry_wait) and for consolidation derived from them.
    When the manager closes meanwhile it stops quietly with what it counted so far."""
    result = ExitFlushResult()
    store = runner.store
    if not store.healthy:
        return result
    try:
        conn = store.conn()
        captured = _open_job_ids(conn, runner.clock.now())
        if runner.enabled:
            tried: set[str] = set()
            while not runner.stopped.is_set():
                allowed = (captured | set(jobs.derived_open_jobs(conn, captured | tried))) - tried
                if not allowed:
                    break
                outcome = runner.step(force=True, only=allowed)
                if outcome is None:
                    break
                tried.update(outcome.job_ids)
                captured.update(outcome.spawned)  # chunks split off a job get their chance too
                for status in [outcome.status] * len(outcome.job_ids):
                    if hasattr(result, status):
                        setattr(result, status, getattr(result, status) + 1)
        runner.refresh_summary()
        result.pending = conn.execute(
            "SELECT count(*) FROM memory_jobs WHERE status IN ('pending', 'leased')").fetchone()[0]
    except (MemoryStoreError, sqlite3.Error):
        if not runner.stopped.is_set():
            raise
    return result


@dataclass
class WatermarkFlush:
    runner: PipelineRunner
    thread_id: str
    deadline: float  # monotonic
    captured: set[str] = field(default_factory=set)
    done: threading.Event = field(default_factory=threading.Event)
    completed: int = 0
    stop: threading.Event = field(default_factory=threading.Event)

    def capture(self) -> None:
        self.captured = set(jobs.open_jobs_of_thread(self.runner.store.conn(), self.thread_id))

    def remaining(self) -> set[str]:
        """Captured jobs and their derived consolidation that are not terminal yet."""
        if not self.captured:
            return set()
        conn = self.runner.store.conn()
        derived = jobs.derived_jobs(conn, self.captured)
        statuses = jobs.job_statuses(conn, self.captured | derived)
        return {i for i, row in statuses.items() if row["status"] not in TERMINAL}

    def run(self, *, background_after_deadline: bool = True) -> None:
        """Process until every captured job (and derived consolidation) is terminal, the manager
        stops, or — when `background_after_deadline` is False — the deadline passes."""
        clock = self.runner.clock
        try:
            while not self.stop.is_set() and not self.runner.stopped.is_set():
                if not background_after_deadline and clock.monotonic() >= self.deadline:
                    return
                left = self.remaining()
                if not left:
                    return
                self.runner.heartbeat_turns()
                outcome = self.runner.step(force=True, only=left)
                if outcome is not None:
                    self.captured = self.captured | set(outcome.spawned)  # a split job's chunks belong to it too
                    if outcome.status in TERMINAL:
                        self.completed += len(outcome.job_ids)
                    self.runner.events.emit(FlushProgress(self.completed, len(self.captured)))
                    continue
                if not self.runner.enabled:
                    return
                self.stop.wait(WAIT_SLICE)  # leased elsewhere or waiting for its retry time
        except (MemoryBusyError, MemoryStoreError, sqlite3.Error):
            return
        except Exception as exc:  # noqa: BLE001 - a background flush never ends in a traceback
            log.warning("memory watermark flush stopped: %s", type(exc).__name__)
            return
        finally:
            self.runner.store.release_thread_connection()
            self.done.set()
