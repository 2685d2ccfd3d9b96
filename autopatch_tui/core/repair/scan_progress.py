"""What a running scan says while it runs (issue 30 item 14): files done of the total and the time
so far — "scanning: 120 of 450 files done (semgrep) · 14 s". The scanner reports each analyzer's
start and end; a ticker thread repeats the line once a second, so the time moves while one
analyzer works through a whole repository."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

ScanStep = Callable[[int, int, str], None]  # (files done, files in all, the analyzer running or "")


class ScanTicker:
    """Turns scan steps into progress lines for `progress`, and repeats the last one every
    `interval` seconds until closed. A progress callback that raises (e.g. a cancelled request)
    stops the ticker only; the scan notices the cancel at its own next step."""

    def __init__(self, progress: Callable[[str], None], *, interval: float = 1.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._progress = progress
        self._interval = interval
        self._clock = clock
        self._started = clock()
        self._state = (0, 0, "")
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def line(self) -> str:
        done, total, what = self._state
        elapsed = int(self._clock() - self._started)
        running = f" ({what})" if what else ""
        return f"scanning: {done} of {total} files done{running} · {elapsed} s"

    def step(self, done: int, total: int, what: str) -> None:
        """A scan step, from the scanning thread: said at once (exceptions go to the scan)."""
        with self._lock:
            self._state = (done, total, what)
        self._progress(self.line())

    def __enter__(self) -> ScanTicker:
        self._thread = threading.Thread(target=self._tick, name="scan-ticker", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)

    def _tick(self) -> None:
        while not self._stop.wait(self._interval):
            with self._lock:
                if not self._state[1]:
                    continue  # nothing counted yet
            try:
                self._progress(self.line())
            except Exception as exc:  # noqa: BLE001 — a cancelled request: the scan itself stops at its next step
                log.debug("scan ticker stopped: %s", type(exc).__name__)
                return
