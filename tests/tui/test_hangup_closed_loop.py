"""The hang-up exit thread finishes its flush and close after the app already ended and its event
loop is closed: asking the app to exit is then skipped quietly (a debug line), never a thread
traceback "Event loop is closed"."""

from __future__ import annotations

import asyncio
import logging
import threading
from types import SimpleNamespace

from autopatch_tui.tui.app import AutopatchApp


def test_the_hangup_thread_tolerates_a_closed_loop(monkeypatch, caplog) -> None:
    loop_closed = threading.Event()
    closed: list[bool] = []
    crashes: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: crashes.append(args.exc_value))
    finished = threading.Event()
    finished.set()  # the app's run has ended: no hard exit

    def close() -> None:
        loop_closed.wait(5)  # the close outlasts the app
        closed.append(True)

    app = SimpleNamespace(_exiting=False, exit_flush=SimpleNamespace(run=lambda reason: object()),
                          manager=SimpleNamespace(close=close), run_finished=finished, exit=lambda: None)

    async def hang_up() -> threading.Thread:
        return AutopatchApp.hangup_exit(app, "SIGHUP")  # type: ignore[arg-type]

    caplog.set_level(logging.DEBUG, logger="autopatch_tui.tui.app")
    thread = asyncio.run(hang_up())  # asyncio.run closes its loop on return
    loop_closed.set()
    thread.join(5)
    assert not thread.is_alive() and closed == [True]
    assert crashes == []
    assert any("loop is gone (RuntimeError)" in r.getMessage() for r in caplog.records)
