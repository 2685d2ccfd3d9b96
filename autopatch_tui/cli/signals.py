"""SIGTERM/SIGHUP (and ctrl+c) for one-shot commands.

Every command that opens a store (`memory process`, `new`, `memory merge`, …) runs inside
`command_signals()`: a signal ends the command's work like ctrl+c does — it is raised in the main
thread as `Terminated` (a BaseException, so no library retry loop swallows it) and unwinds to the
manager's clean close, which hands back the jobs it holds (their claims are not spent). Once the
close starts (`CloseGate.started`), signals are noted and ignored: the close is bounded, and
interrupting it would leave a job leased.

`ask` nests `exit_signals(flush)` inside: before its exit flush starts a signal ends the turn (kept
as failed) and the flush still runs; once the flush runs, signals are noted and ignored.

In both, only the first signal raises: later ones arrive while the command already unwinds towards
its bounded flush or close and are noted and ignored."""

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


class CloseGate:
    """Set `started` when the command's clean close begins: signals are ignored from then on."""

    def __init__(self) -> None:
        self.started = False


@contextmanager
def exit_signals(flush: _Flush, *, then: str = "the exit flush") -> Iterator[None]:
    """Handle SIGTERM, SIGHUP and SIGINT as described above while the block runs (main thread only;
    elsewhere, e.g. an in-process caller's worker thread, the block runs unchanged). `then`: what
    runs after the command's work ends (for the log)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    raised: list[str] = []

    def on_signal(signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if flush.started:
            log.info("%s during %s: it finishes first", name, then)
            return
        if raised:
            log.info("%s while the command ends after %s: ignored", name, raised[0])
            return
        raised.append(name)
        log.info("%s: ending the command, then %s", name, then)
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise Terminated(signum)

    previous = {s: signal.signal(s, on_signal) for s in (*EXIT_SIGNALS, signal.SIGINT)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


@contextmanager
def command_signals() -> Iterator[CloseGate]:
    """`exit_signals` for a store command: the caller sets the gate's `started` before it closes."""
    gate = CloseGate()
    with exit_signals(gate, then="the close"):
        yield gate
