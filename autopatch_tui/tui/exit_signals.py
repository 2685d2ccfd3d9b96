"""SIGTERM and SIGHUP for the full-screen app: how they reach it, and the bound on its exit.

A plain `signal.signal` handler, not the loop's `add_signal_handler`: asyncio learns of a signal
through its self-pipe, which a flood of keystrokes fills (Textual's input thread wakes the loop
with `call_soon_threadsafe`, a byte each), and a signal that finds the pipe full is dropped:
SIGTERM during a paste typed as keystrokes did nothing (issue 20). Python runs this handler in the
main thread whatever the pipe holds; it starts the watchdog at once and hands the exit to the
loop (`AutopatchApp._on_exit_signal`).

The watchdog ends the process within the exit flush's bound whatever the UI is doing: if the app
has not ended by then (plus a grace), the flush runs in the watchdog's thread, the manager closes,
the terminal is restored as far as possible and the process exits."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from autopatch_tui.tui.app import AutopatchApp

log = logging.getLogger(__name__)
EXIT_SIGNALS = tuple(s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s)
EXIT_GRACE_SECONDS = 5.0  # after the flush's bound, the app gets this long to end before a hard exit


def install(app: AutopatchApp) -> dict[int, object]:
    """Install the handlers (main thread only); returns each signal's previous handler."""
    installed: dict[int, object] = {}
    if threading.current_thread() is not threading.main_thread():
        return installed
    loop = asyncio.get_running_loop()
    watchdog = Watchdog(app)

    def handler(signum: int, frame: object) -> None:
        watchdog.start(signum)
        loop.call_soon_threadsafe(app._on_exit_signal, signum)  # noqa: SLF001 - the App's own entry

    for signum in EXIT_SIGNALS:
        try:
            installed[signum] = signal.signal(signum, handler)
        except (ValueError, OSError) as exc:  # e.g. no such signal on this platform
            log.info("%s not handled: %s", signal.Signals(signum).name, exc)
    return installed


def remove(installed: dict[int, object]) -> None:
    """Put back the handlers `install` replaced."""
    if threading.current_thread() is not threading.main_thread():
        return
    for signum, previous in installed.items():
        signal.signal(signum, previous if previous is not None else signal.SIG_DFL)  # type: ignore[arg-type]


class Watchdog:
    def __init__(self, app: AutopatchApp) -> None:
        self.app = app
        self.started = False

    def start(self, signum: int) -> None:
        if self.started:
            return
        self.started = True
        threading.Thread(target=self._watch, args=(signum,), name="exit-watchdog", daemon=True).start()

    def _watch(self, signum: int) -> None:
        app = self.app
        limit = app.exit_flush.limit + EXIT_GRACE_SECONDS
        if app.ended.wait(limit):
            return
        log.info("%s: the app did not end within %.0f s; exiting hard", signal.Signals(signum).name, limit)
        if app.exit_flush.run("watchdog") is None:
            app.exit_flush.wait(app.exit_flush.limit)
        app.manager.close()
        driver = app._driver  # noqa: SLF001 - Textual's; restoring the terminal is best effort
        if driver is not None:
            try:
                driver.stop_application_mode()
            except Exception as exc:  # noqa: BLE001 - the process ends either way
                log.debug("terminal not restored: %s", type(exc).__name__)
        logging.shutdown()
        os._exit(128 + int(signum))
