"""Process entry points for multi-process tests (`multiprocessing` "spawn" context).

Kept free of pytest so a spawned child imports only what it needs. Every worker reports through
`results` (a queue): ("ok", payload) or ("error", traceback text)."""

from __future__ import annotations

import traceback
from pathlib import Path
from typing import Any


def _report(results: Any, fn: Any) -> None:
    try:
        results.put(("ok", fn()))
    except BaseException:  # noqa: BLE001 - report everything to the parent
        results.put(("error", traceback.format_exc()))
        raise


def open_store(repo: str, barrier: Any, results: Any) -> None:
    """Open the same (fresh) repo at the same moment as the other workers."""
    from autopatch_tui.core.manager import MemoryManager
    from autopatch_tui.core.settings import load_settings

    settings = load_settings()

    def work() -> dict[str, Any]:
        barrier.wait(timeout=300)
        mgr = MemoryManager.open(repo, settings)
        try:
            return {"healthy": mgr.healthy, "diagnostic": mgr.store.health.diagnostic,
                    "active": mgr.status().active_thread_id}
        finally:
            mgr.close()

    _report(results, work)


def write_turns(repo: str, barrier: Any, results: Any, n: int, tag: str) -> None:
    """`n` begin+complete turns on one manager, started together with the other workers."""
    from autopatch_tui.core.manager import MemoryManager
    from autopatch_tui.core.settings import load_settings

    def work() -> list[str]:
        mgr = MemoryManager.open(repo, load_settings())
        try:
            barrier.wait(timeout=300)
            ids = []
            for i in range(n):
                h = mgr.begin_turn(f"{tag} question {i}")
                mgr.complete_turn(h, f"{tag} answer {i}")
                ids.append(h.turn_id)
            return ids
        finally:
            mgr.close()

    _report(results, work)


class _FrozenClock:
    def __init__(self, now: float) -> None:
        self._now = now

    def now(self) -> float:
        return self._now

    def monotonic(self) -> float:
        import time

        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        import time

        time.sleep(seconds)


def export_many(repo: str, barrier: Any, results: Any, n: int, frozen_now: float) -> None:
    """`n` exports, all stamped with the same second as every other worker's."""
    from autopatch_tui.core.manager import MemoryManager
    from autopatch_tui.core.settings import load_settings

    def work() -> list[str]:
        mgr = MemoryManager.open(repo, load_settings(), clock=_FrozenClock(frozen_now))
        try:
            barrier.wait(timeout=300)
            return [str(Path(mgr.export())) for _ in range(n)]
        finally:
            mgr.close()

    _report(results, work)


def run_parallel(target: Any, count: int, *args: Any, timeout: float = 300) -> list[Any]:
    """Start `count` spawned processes running `target(repo-ish args..., barrier, results, ...)`.

    `args[0]` is passed first, then the shared barrier and result queue, then the rest of `args`
    (plus the worker index as the last argument when `target` takes a tag). Returns the payloads;
    raises AssertionError with the child's traceback when one failed."""
    import multiprocessing
    import queue as queue_mod

    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(count)
    results = ctx.Queue()
    first, rest = args[0], args[1:]
    procs = []
    for i in range(count):
        extra = tuple(a(i) if callable(a) else a for a in rest)
        p = ctx.Process(target=target, args=(first, barrier, results, *extra), daemon=True)
        p.start()
        procs.append(p)
    payloads = []
    errors = []
    try:
        for _ in range(count):
            try:
                status, payload = results.get(timeout=timeout)
            except queue_mod.Empty:
                errors.append("a worker did not report in time")
                break
            (payloads if status == "ok" else errors).append(payload)
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
                p.join()
    assert not errors, "worker failed:\n" + "\n".join(errors)
    assert all(p.exitcode == 0 for p in procs), [p.exitcode for p in procs]
    return payloads
