"""Keeps an open turn's lease alive for as long as its request runs (FR durable turns).

The owner of an open turn renews that turn — and only it — every heartbeat while the main call,
the tool loop, an audit batch or a revise runs; the renewals stop when the request ends. The
lease itself (default 120 s) stays the recovery bound after a process dies: another process
recovers a turn as `interrupted` only when nobody renewed it for a whole lease.

`TurnKeepers` is the manager's registry: `close()` stops every keeper before the store closes,
so no renewal is written after close returns."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from autopatch_tui.core.errors import MemoryStoreError
from autopatch_tui.core.pipeline.heartbeat import Heartbeat

log = logging.getLogger(__name__)


class TurnKeepers:
    def __init__(self, renew: Callable[[str], bool], interval: float,
                 release_connection: Callable[[], None]) -> None:
        self._renew = renew
        self._interval = interval
        self._release = release_connection
        self._lock = threading.Lock()
        self._active: dict[str, Heartbeat] = {}
        self._closed = False

    @contextmanager
    def keep(self, turn_id: str) -> Iterator[Heartbeat]:
        """Renew `turn_id` every interval while the block runs."""
        hb = Heartbeat(lambda: self._beat(turn_id), lambda: None, self._interval, on_exit=self._release)
        with self._lock:
            if self._closed:
                raise MemoryStoreError("the Memory store is closed")
            self._active[turn_id] = hb
        hb.__enter__()
        try:
            yield hb
        finally:
            hb.stop()
            with self._lock:
                self._active.pop(turn_id, None)
            if hb.fenced:  # completing the turn reports how (TurnLeaseLostError or MemoryFencedError)
                log.warning("an open turn's lease was lost while its request ran")

    def _beat(self, turn_id: str) -> bool:
        with self._lock:
            if self._closed:
                return True  # stopping: write nothing, the keeper ends with its request
            return self._renew(turn_id)

    def running(self) -> list[str]:
        with self._lock:
            return [t for t, hb in self._active.items() if hb.running]

    def close(self, timeout: float) -> None:
        """Stop every keeper; after this no renewal is written."""
        with self._lock:
            self._closed = True
            keepers = list(self._active.values())
        for hb in keepers:
            hb.stop(timeout)
