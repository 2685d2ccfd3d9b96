"""Alias resolution (FR-058): a checkout whose store was merged away resolves to the living holder.

Only when the checkout has no live store of its own: its memory.db is missing, or it is retired
(`memory_meta.retired_into`). The holder is followed transitively (A→B→C). A holder that cannot be
reached here yields a clear diagnostic instead of a fresh empty store."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from autopatch_tui.core.memory.store_files import symlink_in
from autopatch_tui.core.paths import StorePaths

from autopatch_tui.core.stores.info import StoreUnreadable, read_store_name
from autopatch_tui.core.stores.registry import Registry

MAX_HOPS = 16
ADD_FIX = ("register it with `autopatch-tui memory stores add PATH` (the checkout or memory.db of {name}), "
           "then start again")


@dataclass(frozen=True)
class Redirect:
    alias: str  # the identity this checkout had
    holder: str  # the living store it resolves to
    db_path: Path | None  # None when the holder is not reachable here
    diagnostic: str | None = None

    @property
    def notice(self) -> str:
        if self.db_path is None:
            return f"this checkout's Memory ({self.alias}) was merged into {self.holder}, which is not reachable here"
        return f"this checkout's Memory ({self.alias}) was merged into {self.holder}; using that store ({self.db_path})"


def _follow(registry: Registry, alias: str, holder: str) -> Redirect:
    name = holder
    for _ in range(MAX_HOPS):
        entry = registry.get(name)
        if entry is None:
            return Redirect(alias, name, None, f"Memory was merged into {name}, which is not registered on this "
                            f"machine; {ADD_FIX.format(name=name)}")
        try:
            _, retired_into = read_store_name(Path(entry.db_path))
        except StoreUnreadable:
            return Redirect(alias, name, None, f"Memory was merged into {name}, whose store is not reachable here; "
                            f"{ADD_FIX.format(name=name)}")
        if not retired_into:
            return Redirect(alias, name, Path(entry.db_path))
        name = retired_into
    return Redirect(alias, name, None, "Memory merge aliases form a loop")


def resolve_holder(db: Path, store_name: str, registry: Registry) -> Redirect | None:
    """Where a checkout's Memory lives when it is not its own memory.db; None for the normal case
    (and whenever the checkout's files must not be read: a link, a permission problem — the
    manager then reports the degraded store itself)."""
    try:
        if symlink_in(StorePaths.for_db(db)) is not None:
            return None
    except OSError:
        return None
    if os.path.lexists(db):
        try:
            name, retired_into = read_store_name(db)
        except StoreUnreadable:
            return None  # the manager reports the degraded store itself
        if retired_into:
            return _follow(registry, name, retired_into)
        return None
    holder = registry.holder_of(store_name)
    if holder is None:
        return None
    return _follow(registry, store_name, holder)
