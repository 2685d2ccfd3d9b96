"""`ExitFlush`: the one exit flush of a process — once however many exit paths fire, within its bound
however long a model call blocks, after the process's open turns ended (bounded too)."""

from __future__ import annotations

import threading
import time

from autopatch_tui.core.pipeline.exit_once import ExitFlush
from autopatch_tui.core.pipeline.flush import ExitFlushResult


class FakeWorker:
    def __init__(self) -> None:
        self.stopped_with: list[float] = []

    def stop(self, timeout: float | None = None) -> None:
        self.stopped_with.append(timeout or 0.0)


class FakeStore:
    def __init__(self, mgr: FakeManager) -> None:
        self.mgr = mgr
        self.released = 0

    def conn(self):
        mgr = self.mgr

        class Conn:
            def execute(self, sql, args):
                assert "state = 'open'" in sql and args == (mgr.owner,)

                class Row:
                    def fetchone(self):
                        return (mgr.open_turns,)

                return Row()

        return Conn()

    def release_thread_connection(self) -> None:
        self.released += 1


class FakeManager:
    owner = "host:1:abc"
    healthy = True

    def __init__(self, *, block: threading.Event | None = None, open_turns: int = 0) -> None:
        self.block = block
        self.open_turns = open_turns
        self.calls = 0
        self.worker = FakeWorker()
        self.store = FakeStore(self)

    def process_pending(self) -> ExitFlushResult:
        self.calls += 1
        if self.block is not None:
            self.block.wait(10)
        return ExitFlushResult(succeeded=1)


def test_two_paths_at_once_flush_exactly_once() -> None:
    gate = threading.Event()
    mgr = FakeManager(block=gate)
    flush = ExitFlush(lambda: mgr, limit=5)
    results: list[object] = []
    threads = [threading.Thread(target=lambda r=r: results.append(flush.run(r))) for r in ("ctrl+q", "SIGTERM")]
    for t in threads:
        t.start()
    time.sleep(0.1)
    gate.set()
    for t in threads:
        t.join(5)
    assert mgr.calls == 1
    assert sorted(results, key=lambda r: r is not None) == [None, flush.outcome]
    assert flush.outcome is not None and flush.outcome.result == ExitFlushResult(succeeded=1)
    assert flush.run("palette") is None and mgr.calls == 1  # a late third path
    assert mgr.worker.stopped_with and mgr.store.released == 1


def test_the_bound_holds_while_the_flush_blocks() -> None:
    gate = threading.Event()
    mgr = FakeManager(block=gate)
    flush = ExitFlush(lambda: mgr, limit=0.3)
    started = time.monotonic()
    outcome = flush.run("ctrl+q")
    elapsed = time.monotonic() - started
    gate.set()
    assert outcome is not None and outcome.timed_out and outcome.result is None
    assert elapsed < 2.0  # the bound, not the blocked call, decides (10 s here)


def test_it_waits_for_open_turns_then_flushes_and_a_stuck_turn_cannot_hold_the_exit() -> None:
    mgr = FakeManager(open_turns=1)
    flush = ExitFlush(lambda: mgr, limit=5)
    threading.Timer(0.2, lambda: setattr(mgr, "open_turns", 0)).start()  # the reply arrives
    outcome = flush.run("ctrl+q")
    assert outcome is not None and not outcome.timed_out and mgr.calls == 1

    stuck = FakeManager(open_turns=1)  # a turn that never ends (its lease expires; the next start recovers it)
    started = time.monotonic()
    outcome = ExitFlush(lambda: stuck, limit=0.6).run("ctrl+q")
    assert time.monotonic() - started < 2.0
    assert outcome is not None and not outcome.timed_out and stuck.calls == 1  # the flush still got its share

    ask = FakeManager(open_turns=1)  # `ask` owns its only turn: it never waits for it
    outcome = ExitFlush(lambda: ask, limit=5, wait_for_turns=False).run("ask")
    assert outcome is not None and not outcome.timed_out and ask.calls == 1
