"""When `memory_summary.md` is re-rendered: coalesced, never on the commit path.

A consolidation that changed items only marks the summary due (`mark`). The background worker calls
`run_if_due` between steps and while idle: it renders at most once per `interval` seconds (however
many commits happened meanwhile), and returns how long to wait when a refresh is due but too early.
`flush` renders at once when something is due (the exit flush, `memory process`, organize and
`MemoryManager.close` call it), so a session never ends with a summary behind its data.
`memory status` says `stale` while a refresh is pending, which is the truth."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

SUMMARY_INTERVAL_SECONDS = 3.0


class SummarySchedule:
    def __init__(self, refresh: Callable[[], None], *, interval: float = SUMMARY_INTERVAL_SECONDS,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self._refresh = refresh
        self.interval = interval
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._due = False
        self._last: float | None = None
        self.refreshes = 0  # how many renders this schedule started (tests, benches)

    @property
    def due(self) -> bool:
        return self._due

    def mark(self) -> None:
        """Items changed: the summary is behind (cheap; called right after a commit)."""
        with self._lock:
            self._due = True

    def run_if_due(self) -> float | None:
        """Render when due and the last render is at least `interval` ago. Returns None when nothing
        is left to do, else the seconds until the pending refresh may run."""
        with self._lock:
            if not self._due:
                return None
            now = self._monotonic()
            if self._last is not None and now - self._last < self.interval:
                return self.interval - (now - self._last)
            self._take(now)
        self._run()
        return None

    def flush(self) -> None:
        """Render now if anything is due (exit, close, explicit processing)."""
        with self._lock:
            if not self._due:
                return
            self._take(self._monotonic())
        self._run()

    def _take(self, now: float) -> None:
        self._due = False
        self._last = now
        self.refreshes += 1

    def _run(self) -> None:
        self._refresh()
