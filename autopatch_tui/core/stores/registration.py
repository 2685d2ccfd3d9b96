"""A store's own entry in the registry of project stores: what its meta row says of it, recorded
when it is opened, or — for a store opened empty (a `memory status` in some folder) — once it holds
a turn or an item (issue 20)."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from pathlib import Path

from autopatch_tui.core.errors import AutopatchError
from autopatch_tui.core.stores.info import holds_something
from autopatch_tui.core.stores.registry import Registry

log = logging.getLogger(__name__)


def own_meta(conn: sqlite3.Connection) -> sqlite3.Row:
    """What a store says about itself: its one meta row."""
    return conn.execute("SELECT store_name, root, remote, label FROM memory_meta").fetchone()


def record(registry: Registry, meta: sqlite3.Row, db_path: Path, now: float) -> None:
    """A live store in the registry, as its meta row describes it."""
    registry.upsert(name=meta["store_name"], db_path=db_path.resolve(), root=meta["root"], remote=meta["remote"],
                    label=meta["label"], retired_into=None, now=now)


def register_if_used(home: Path, conn: Callable[[], sqlite3.Connection], db_path: Path, now: float) -> bool:
    """Record a store that holds something; True when it is recorded. A failure is logged and never
    fails the caller (it tries again next time)."""
    try:
        store = conn()
        if not holds_something(store):
            return False
        registry = Registry(home)
        try:
            record(registry, own_meta(store), db_path, now)
        finally:
            registry.close()
        return True
    except (sqlite3.Error, OSError, AutopatchError) as exc:
        log.warning("store not registered: %s", type(exc).__name__)
        return False
