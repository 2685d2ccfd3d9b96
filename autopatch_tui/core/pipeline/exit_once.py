"""The exit flush of a process: once, and within one bound, whichever way the process ends.

Every exit path — the app's ctrl+q, `/quit`, the command palette's built-in Quit, SIGTERM or SIGHUP
of the terminal, and the end (or termination) of `autopatch-tui ask` — calls `ExitFlush.run()`.
The first call does the work; any later call returns None at once, so two paths that fire together
flush exactly once. Within `limit` seconds it

1. waits (for at most half the bound) for this process's open turns to end: a reply still streaming
   is saved, and its extraction job exists before the flush captures the queue;
2. stops the background worker, letting its in-flight job finish (its lease is not left behind);
3. gives every open job, and the consolidation derived from them, one processing chance
   (`MemoryManager.process_pending`).

What the bound cuts short stays queued for the next start; closing the manager (the caller's next
step) stops the rest. The work runs in a helper thread, so the bound holds even while a model call
blocks."""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from autopatch_tui.core.errors import AutopatchError

if TYPE_CHECKING:  # the pipeline is imported when a flush runs, not when the app starts
    from autopatch_tui.core.pipeline.flush import ExitFlushResult
    from autopatch_tui.core.manager import MemoryManager

log = logging.getLogger(__name__)
EXIT_FLUSH_SECONDS = 30.0
POLL_SECONDS = 0.05
TURN_WAIT_SHARE = 0.5  # at most half the bound goes to waiting for open turns


@dataclass(frozen=True)
class ExitOutcome:
    result: ExitFlushResult | None  # None: the bound passed (`timed_out`) or the flush failed (see the log)
    timed_out: bool
    reason: str  # the exit path that ran the flush, e.g. "ctrl+q", "SIGTERM"


def open_turns_of(mgr: MemoryManager) -> int:
    return int(mgr.store.conn().execute(
        "SELECT count(*) FROM turns WHERE state = 'open' AND owner = ?", (mgr.owner,)).fetchone()[0])


class ExitFlush:
    def __init__(self, manager: Callable[[], MemoryManager], *, limit: float = EXIT_FLUSH_SECONDS,
                 wait_for_turns: bool = True, monotonic: Callable[[], float] = time.monotonic) -> None:
        """`manager`: returns the manager at exit time (the app may have reopened another store).
        `wait_for_turns`: False where the caller itself ran the only turn and it has ended (`ask`)."""
        self._manager = manager
        self.limit = limit
        self.wait_for_turns = wait_for_turns
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._started = False
        self._done = threading.Event()
        self.outcome: ExitOutcome | None = None

    @property
    def started(self) -> bool:
        return self._started

    def wait(self, timeout: float | None = None) -> ExitOutcome | None:
        """The outcome of the flush another path started (None while it still runs)."""
        self._done.wait(timeout)
        return self.outcome

    def run(self, reason: str) -> ExitOutcome | None:
        """Flush (bounded) and return the outcome; None when another exit path already flushed."""
        with self._lock:
            if self._started:
                log.info("exit via %s: the exit flush already ran or runs", reason)
                return None
            self._started = True
        mgr = self._manager()
        deadline = self._monotonic() + self.limit
        box: dict[str, ExitFlushResult | str] = {}
        helper = threading.Thread(target=self._work, args=(mgr, deadline, box), name="memory-exit-flush",
                                  daemon=True)
        started = self._monotonic()
        helper.start()
        helper.join(max(0.0, deadline - self._monotonic()))
        from autopatch_tui.core.pipeline.flush import ExitFlushResult

        got = box.get("result")
        result = got if isinstance(got, ExitFlushResult) else None
        # no result and no error: the bound passed before the flush itself could start
        outcome = ExitOutcome(result, helper.is_alive() or (result is None and "failed" not in box), reason)
        r = outcome.result
        log.info("exit flush via %s: %s after %.2f s%s", reason, "timed out" if outcome.timed_out else "done",
                 self._monotonic() - started,
                 "" if r is None else f" (succeeded={r.succeeded} no_output={r.succeeded_no_output}"
                                      f" retry_wait={r.retry_wait} failed={r.failed} pending={r.pending})")
        self.outcome = outcome
        self._done.set()
        return outcome

    def _left(self, deadline: float) -> float:
        return max(0.0, deadline - self._monotonic())

    def _work(self, mgr: MemoryManager, deadline: float, box: dict[str, ExitFlushResult | str]) -> None:
        try:
            if mgr.healthy and self.wait_for_turns:
                turns_deadline = deadline - self.limit * (1 - TURN_WAIT_SHARE)  # the flush keeps its share
                while open_turns_of(mgr) and self._left(turns_deadline) > 0:
                    time.sleep(min(POLL_SECONDS, self._left(turns_deadline)))
            mgr.worker.stop(self._left(deadline))  # its in-flight job finishes; it takes no new one
            if self._left(deadline) > 0:
                box["result"] = mgr.process_pending()
        except (AutopatchError, sqlite3.Error) as exc:
            box["failed"] = type(exc).__name__
            log.warning("exit flush failed: %s", exc)
        except Exception as exc:  # noqa: BLE001 - a bug: its type only (the message may quote the user)
            box["failed"] = type(exc).__name__
            log.warning("exit flush failed: %s", type(exc).__name__)
        finally:
            if mgr.healthy:
                mgr.store.release_thread_connection()
