"""The hang-up exit thread finishes its flush and close after the app already ended and its event
loop is closed: asking the app to exit is then skipped quietly (a debug line), never a thread
traceback "Event loop is closed"."""

from __future__ import annotations

import asyncio
import logging
import signal
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


def _hangup_app(finished: threading.Event, order: list[str]) -> SimpleNamespace:
    return SimpleNamespace(_exiting=False, manager=SimpleNamespace(close=lambda: order.append("close")),
                           exit_flush=SimpleNamespace(run=lambda reason: order.append(f"flush {reason}") or object()),
                           run_finished=finished, exit=lambda: order.append("exit asked"))


def test_an_app_that_does_not_end_after_a_hangup_exits_hard_after_its_flush(monkeypatch) -> None:
    """Drawing on a dead terminal can block the app's loop for ever: once Memory is flushed and the
    store closed, the process ends with 128+SIGHUP after the grace period, not never."""
    order: list[str] = []
    exits: list[int] = []
    monkeypatch.setattr("autopatch_tui.tui.app.HANGUP_EXIT_GRACE_SECONDS", 0.2)
    monkeypatch.setattr("autopatch_tui.tui.app.os._exit", lambda code: exits.append(code))
    app = _hangup_app(threading.Event(), order)  # run() never returns: the loop is stuck

    async def hang_up() -> threading.Thread:
        thread = AutopatchApp.hangup_exit(app, "SIGHUP")  # type: ignore[arg-type]
        await asyncio.sleep(0.05)  # the loop runs the queued exit request
        return thread

    thread = asyncio.run(hang_up())
    thread.join(5)
    assert not thread.is_alive()
    assert order == ["flush SIGHUP", "close", "exit asked"]  # Memory safe before any exit
    assert exits == [128 + int(signal.SIGHUP)]


def test_an_app_that_ends_after_a_hangup_is_not_killed(monkeypatch) -> None:
    order: list[str] = []
    exits: list[int] = []
    monkeypatch.setattr("autopatch_tui.tui.app.HANGUP_EXIT_GRACE_SECONDS", 2.0)
    monkeypatch.setattr("autopatch_tui.tui.app.os._exit", lambda code: exits.append(code))
    finished = threading.Event()
    app = _hangup_app(finished, order)
    app.exit = lambda: (order.append("exit asked"), finished.set())  # the app ends when asked

    async def hang_up() -> threading.Thread:
        thread = AutopatchApp.hangup_exit(app, "SIGHUP")  # type: ignore[arg-type]
        await asyncio.sleep(0.05)
        return thread

    thread = asyncio.run(hang_up())
    thread.join(5)
    assert not thread.is_alive() and order == ["flush SIGHUP", "close", "exit asked"]
    assert exits == []
