"""Whether a checkout has Memory at all, decided without creating anything (issue 30 item 12):
`memory status`, `list` and `search` in a folder that never held a store report "no Memory here
yet" instead of creating an empty store there."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

from autopatch_tui.core.errors import AutopatchError
from autopatch_tui.core.identity.names import canonical_location, store_name_for_location
from autopatch_tui.core.memory.store_files import write_problem
from autopatch_tui.core.paths import StorePaths
from autopatch_tui.core.stores.registry import REGISTRY_FILE, Registry

NO_MEMORY_YET = "No Memory here yet"


def has_memory(repo: Path, home: Path) -> bool:
    """True when opening the checkout's store would find one: its own `memory.db` (healthy or
    not — also a link or anything else in its place, which the store itself reports), or a
    registry alias that sends this checkout to the store it was merged into. Nothing is created:
    the registry is only read when its file exists."""
    paths = StorePaths(repo)
    try:
        state = os.lstat(paths.state_dir)
    except FileNotFoundError:
        if write_problem(paths):
            return True  # a read-only checkout: opening says that no store can be created here
    except OSError:
        return True  # the store itself reports what is wrong with the folder
    else:
        if not stat.S_ISDIR(state.st_mode):
            return True  # a link or a file in the folder's place: the store reports it (degraded)
        try:
            os.lstat(paths.db)
            return True
        except FileNotFoundError:
            pass
        except OSError:
            return True  # e.g. a folder without search permission: the store reports it
    if not os.path.isfile(home / REGISTRY_FILE) or os.path.islink(home / REGISTRY_FILE):
        return False
    name = store_name_for_location(canonical_location(repo))
    try:
        with Registry(home) as reg:
            return reg.holder_of(name) is not None
    except (sqlite3.Error, OSError, AutopatchError):  # an unusable registry: the normal open reports it
        return True
