"""What a command does after its answer: the deep store check (docs/memory.md, "What is checked
when").

A store the open-time check passed, and whose deep-check verdict is not remembered for its exact
file state, is checked once the command has printed its answer, for at most
`AFTER_ANSWER_SECONDS`; the verdict is remembered, so the next command (and the app) does not pay it
again, and a fault keeps every later command off the store (exit code 3) until it is cleared. The
check runs in a thread so that ctrl+c and SIGTERM stop it at once (it then gives no verdict and
the command keeps its exit code)."""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING

from autopatch_tui.cli.output import warn
from autopatch_tui.cli.signals import Terminated

if TYPE_CHECKING:
    from autopatch_tui.core.manager import MemoryManager

AFTER_ANSWER_SECONDS = 15.0


def check_after_answer(mgr: MemoryManager, timeout: float = AFTER_ANSWER_SECONDS) -> None:
    store = mgr.store
    if not store.healthy or store.verified:
        return
    try:
        sys.stdout.flush()  # the answer is out before the check starts
    except OSError:
        pass
    found: list[object] = []
    thread = threading.Thread(target=lambda: found.append(mgr.verify_store(timeout)), name="store-check",
                              daemon=True)
    thread.start()
    try:
        while thread.is_alive():
            thread.join(0.05)
    except (KeyboardInterrupt, Terminated):
        store.cancel_verify()
        thread.join()
        return
    verdict = found[0] if found else None
    if verdict is not None and not getattr(verdict, "healthy", True):
        warn(f"Memory is degraded: {store.health.diagnostic}; the consistency check found it after this "
             "command's answer, and later commands refuse the store; `memory status` shows it, "
             "`memory clear --confirm` starts a clean store")
