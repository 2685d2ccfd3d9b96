"""Which item revisions left `active` in which committed Memory version — an in-process journal.

The incremental review summary (`pipeline/summary_state.py`) and the standing lane's carried
caches (`recall/standing_carry.py`) need, between two reads, the revisions that stopped being
active: new revisions they find themselves (their row IDs are above the highest one seen), but a
retired row keeps its row ID. So the writers that retire rows record them here:

- a writer wraps its write transaction in `tracked(conn)`; inside it, `note_retired` (called by
  `item_writes.retire_revision` and `forget_item` for a row that really changed) and `note_bump`
  (called by `bump_data_version`, which reads the version the transaction produces) collect the
  entry; it is published only when the transaction committed (the block ends without an
  exception), and dropped on rollback;
- a retirement outside any tracked transaction (a merge, a tool, a test) raises `poison()`; a
  version bump outside one simply leaves a gap.

A reader trusts the journal only for a range of versions it fully covers (`retired_between`), for
the same store file, creation time and generation (a `memory clear` bumps the generation), and
while `poison()` is unchanged. Anything else — another process's commit, a merge, a clear, a restart
— is a gap, and the reader falls back to a full read. Entries stay until MAX_VERSIONS newer ones
push them out (two readers use them). Nothing here is written to disk.

Every retirement the product makes is either tracked (consolidation, forget) or comes with a version
bump in its own transaction (a merge), which leaves a gap. `poison` guards a retirement that does
neither (a test or a tool calling `retire_revision` directly): the next refresh notices it, unless
that transaction was still uncommitted while the refresh read. So such a writer must bump the
version (`bump_data_version`) as every product writer does."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from autopatch_tui.core.memory.sqlite import opened_file

MAX_VERSIONS = 4096  # per store; older entries are dropped (a reader that far behind renders in full)

StoreKey = tuple[str, float, int]  # (database file, memory_meta.created_at, generation)

_lock = threading.Lock()
_local = threading.local()
_journal: dict[StoreKey, dict[int, frozenset[int]]] = {}
_poison = 0


@dataclass
class _Entry:
    conn: sqlite3.Connection
    retired: set[int] = field(default_factory=set)
    key: StoreKey | None = None
    versions: list[int] = field(default_factory=list)


def store_key(conn: sqlite3.Connection) -> StoreKey:
    created_at, generation = conn.execute("SELECT created_at, generation FROM memory_meta WHERE id = 1").fetchone()
    return (opened_file(conn), float(created_at), int(generation))


def _current(conn: sqlite3.Connection) -> _Entry | None:
    entry = getattr(_local, "entry", None)
    return entry if entry is not None and entry.conn is conn else None


@contextmanager
def tracked(conn: sqlite3.Connection) -> Iterator[None]:
    """Around one `write_txn`: what it retires is published once it committed."""
    outer = getattr(_local, "entry", None)
    entry = _local.entry = _Entry(conn)
    try:
        yield
    finally:
        _local.entry = outer
    # reached only when the block (and so its COMMIT) succeeded
    if entry.retired and not entry.versions:  # retired rows without a version bump: no range covers them
        global _poison
        with _lock:
            _poison += 1
        return
    if entry.key is not None and entry.versions:
        with _lock:
            for stale in [k for k in _journal if k[0] == entry.key[0] and k != entry.key]:
                del _journal[stale]  # the same file recreated or cleared: its old versions are moot
            versions = _journal.setdefault(entry.key, {})
            rows = frozenset(entry.retired)
            for v in entry.versions:
                versions[v] = rows if v == entry.versions[-1] else frozenset()
            while len(versions) > MAX_VERSIONS:
                versions.pop(next(iter(versions)))  # the oldest published (versions publish in order)


def note_retired(conn: sqlite3.Connection, row_id: int) -> None:
    """Inside a write txn: revision `row_id` went from active to retired."""
    entry = _current(conn)
    if entry is not None:
        entry.retired.add(int(row_id))
        return
    global _poison
    with _lock:
        _poison += 1


def note_bump(conn: sqlite3.Connection) -> None:
    """Inside a write txn, right after `data_version` was raised."""
    entry = _current(conn)
    if entry is None:
        return
    entry.key = store_key(conn)
    entry.versions.append(int(conn.execute("SELECT data_version FROM memory_meta WHERE id = 1").fetchone()[0]))


def poison() -> int:
    """Raised by every untracked retirement in this process."""
    with _lock:
        return _poison


def retired_between(key: StoreKey, after: int, upto: int) -> set[int] | None:
    """The rows retired by the versions after `after` up to `upto`, or None when any of those
    versions is not journaled (written elsewhere, untracked, or dropped)."""
    with _lock:
        versions = _journal.get(key, {})
        out: set[int] = set()
        for v in range(after + 1, upto + 1):
            rows = versions.get(v)
            if rows is None:
                return None
            out |= rows
        return out
