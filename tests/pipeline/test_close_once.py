"""`MemoryManager.close()` from two exit paths at once (the SIGHUP exit thread and the app's unmount):
only the first caller closes; the second waits until that close has ended (so "after close returns,
nothing is written" holds for both) and does not close again."""

from __future__ import annotations

import threading

from autopatch_tui.core import manager as manager_module


def test_a_concurrent_second_close_waits_for_the_first_and_does_not_close_again(manager, monkeypatch) -> None:
    entered, release = threading.Event(), threading.Event()
    calls: list[str] = []

    real = manager_module.MemoryManager._close_now

    def slow_close_now(mgr, join_timeout: float) -> None:
        calls.append(threading.current_thread().name)
        entered.set()
        release.wait(5)
        real(mgr, join_timeout)

    monkeypatch.setattr(manager_module.MemoryManager, "_close_now", slow_close_now)
    first = threading.Thread(target=manager.close, name="hangup-exit")
    second = threading.Thread(target=manager.close, name="unmount")
    first.start()
    assert entered.wait(5)
    second.start()
    second.join(0.3)
    assert second.is_alive()  # it waits for the close in progress instead of returning early
    release.set()
    first.join(5)
    second.join(5)
    assert not first.is_alive() and not second.is_alive()
    assert calls == ["hangup-exit"]
