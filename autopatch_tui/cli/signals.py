"""SIGTERM/SIGHUP (and ctrl+c) for one-shot commands that end with the exit flush (`ask`).

Before the flush starts, a signal ends the command's work like ctrl+c does: it is raised in the main
thread as `Terminated` (a BaseException, so no library retry loop swallows it), the open turn is
marked failed by the usual path, and the exit flush still runs. Once the flush runs, the signals are
noted and ignored: the flush is bounded, and interrupting it would leave a job leased."""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Protocol

log = logging.getLogger(__name__)
EXIT_SIGNALS = tuple(s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s)


class Terminated(BaseException):
    """The process got SIGTERM or SIGHUP while a command worked."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        self.name = signal.Signals(signum).name
        super().__init__(self.name)


class _Flush(Protocol):
    @property
    def started(self) -> bool: ...


@contextmanager
def exit_signals(flush: _Flush) -> Iterator[None]:
    """Handle SIGTERM, SIGHUP and SIGINT as described above while the block runs (main thread only;
    elsewhere, e.g. an in-process caller's worker thread, the block runs unchanged)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_signal(signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if flush.started:
            log.info("%s during the exit flush: the flush finishes first", name)
            return
        log.info("%s: ending the command, then the exit flush", name)
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise Terminated(signum)

    previous = {s: signal.signal(s, on_signal) for s in (*EXIT_SIGNALS, signal.SIGINT)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
