"""Chat and `/audit` without the project's Memory (issue 30 item 9): a checkout whose store was
merged into one this machine does not know (another `AUTOPATCH_HOME`, another machine) stays
usable. Its turns go to an empty store in a private temporary folder, deleted on close; its Memory
jobs never run (the worker is never started); nothing is registered. The project's own Memory stays
as it is until the user registers the holder (`memory stores add PATH`) and starts again."""

from __future__ import annotations

import logging
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from autopatch_tui.core.memory.health import MERGED

if TYPE_CHECKING:
    from autopatch_tui.core.manager import MemoryManager

log = logging.getLogger(__name__)

NO_MEMORY_NOTE = ("Chat and /audit work without Memory meanwhile: nothing this session says is remembered "
                  "or recalled.")


def merged_away(manager: MemoryManager) -> bool:
    """Whether the manager's store is one that was merged into a store not reachable here."""
    return not manager.healthy and manager.store.health.cause == MERGED


def open_without_memory(manager: MemoryManager) -> MemoryManager:
    """A manager on the same repository and settings, with a throw-away store (see the module)."""
    from autopatch_tui.core.manager import MemoryManager

    scratch = Path(tempfile.mkdtemp(prefix="autopatch-no-memory-"))  # 0700
    try:
        return MemoryManager(manager.repo, manager.settings, clock=manager.clock, scratch=scratch)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise


def close_without_memory(manager: MemoryManager) -> None:
    """Close it and delete its temporary folder (turns included)."""
    manager.close()
    if manager.scratch is not None:
        shutil.rmtree(manager.scratch, ignore_errors=True)
        log.info("chat without Memory: the session's temporary store was deleted")
