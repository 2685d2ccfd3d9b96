"""What a command does after its answer: the deep store check (docs/memory.md, "What is checked
when").

A store the open-time check passed, and whose deep-check verdict is not remembered for its exact
file state, is checked once the command has printed its answer, for at most
`AFTER_ANSWER_SECONDS` (a store of tens of thousands of items takes longer: the check then goes on
in a detached low-priority process, `check_later`, and the command exits). The verdict is
remembered, so the next command (and the app) does not pay it again; a fault keeps every later
command off the store (exit code 3) until it is cleared, and is named here on stderr. The check
runs in a thread so that ctrl+c and SIGTERM stop it at once (then nothing goes on, and the
command keeps its exit code). One check per store at a time: while another process checks it, a
command does not start a second one."""

from __future__ import annotations

import os
import sys
import threading
import weakref
from typing import TYPE_CHECKING

from autopatch_tui.cli.check_later import HELD, check_lock, continue_later
from autopatch_tui.cli.output import warn
from autopatch_tui.cli.signals import Terminated

if TYPE_CHECKING:
    from autopatch_tui.core.manager import MemoryManager

AFTER_ANSWER_SECONDS = 2.0
_TRIED: weakref.WeakSet[object] = weakref.WeakSet()  # stores this process has checked (or handed on)


def check_after_answer(mgr: MemoryManager, timeout: float = AFTER_ANSWER_SECONDS, *,
                       before_answer: bool = False) -> int | None:
    """Run the deep check (see the module doc). Returns the process ID of a detached continuation,
    if one was started. `before_answer`: the command (`memory status`) reports the verdict itself,
    so a fault is not announced here."""
    store = mgr.store
    if not store.healthy or store.verified or store in _TRIED:
        return None  # `memory status` checks before its answer; the answer's check is then done
    _TRIED.add(store)
    home = mgr.settings.home
    lock = check_lock(home, store.paths.db)
    if lock == HELD:
        return None  # another process checks this store now and remembers its verdict
    try:
        sys.stdout.flush()  # the answer is out before the check starts
    except OSError:
        pass
    found: list[object] = []
    thread = threading.Thread(target=lambda: found.append(mgr.verify_store(timeout)), name="store-check",
                              daemon=True)
    try:
        thread.start()
        try:
            while thread.is_alive():
                thread.join(0.05)
        except (KeyboardInterrupt, Terminated):
            store.cancel_verify()
            thread.join()
            return None
    finally:
        if lock is not None:
            os.close(lock)  # released before a continuation takes it
    verdict = found[0] if found else None
    if verdict is None:
        return continue_later(store.paths.db, home) if store.healthy and not store.verified else None
    if not getattr(verdict, "healthy", True) and not before_answer:
        warn(f"Memory is degraded: {store.health.diagnostic}; the consistency check found it after this "
             "command's answer, and later commands refuse the store; `memory status` shows it, "
             "`memory clear --confirm` starts a clean store")
    return None
