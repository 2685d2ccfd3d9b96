"""The standing lane's caches, carried across a Memory write that changed no `always` item.

The recall memo (`memo.py`) starts over after every Memory item write, and the standing base — every
active `always` row, ranked, with its line-cost bounds (5,003 rows at 100k items) — was then read
and built again by the next request: ~50 ms at 100k after each consolidation commit, although most
commits only add or revise `on_match` items. The standing base and its lanes depend only on the
active `always` rows, so they stay valid when, between the two memo stamps:

- no row above the old highest row ID is an `always` row (new revisions get higher row IDs), and
- no row the writes retired is an `always` row — known from the in-process change journal
  (`memory/change_journal.py`), trusted only for a range of versions it fully covers, for the same
  store file, creation time and generation, and while no untracked retirement happened (`poison`).

Anything else — a gap in the journal (another process's write, a merge, a clear), a lower highest
row ID — builds them again. The stamps are the memos' own (`memo.STAMP`: no second read). Nothing
here is written to disk; entries are per connection, bounded."""

from __future__ import annotations

import sqlite3
import threading
from collections import OrderedDict
from typing import Any

from autopatch_tui.core.memory import change_journal
from autopatch_tui.core.recall.memo import STAMP

MAX_CONNECTIONS = 16
KEY = "standing_caches"  # in a memo

Caches = tuple[dict[Any, Any], dict[Any, Any]]  # (standing bases, standing lanes)

_lock = threading.Lock()
# per connection: the stamp of the memo that last held the caches, the journal key, poison, caches
_carried: OrderedDict[int, tuple[sqlite3.Connection, tuple[int, int], Any, int, Caches]] = OrderedDict()
stats = {"carried": 0, "built": 0}  # what the last requests did (tests and the bench read it)


def _always_changed(conn: sqlite3.Connection, key: Any, old: tuple[int, int], new: tuple[int, int]) -> bool:
    if new[0] < old[0] or new[1] < old[1]:
        return True
    retired = change_journal.retired_between(key, old[0], new[0])
    if retired is None:
        return True
    if conn.execute("SELECT 1 FROM memory_items WHERE row_id > ? AND recall_mode = 'always' LIMIT 1",
                    (old[1],)).fetchone():
        return True
    ids = sorted(retired)
    for at in range(0, len(ids), 500):
        chunk = ids[at:at + 500]
        if conn.execute(f"SELECT 1 FROM memory_items WHERE recall_mode = 'always' AND row_id IN"
                        f" ({','.join('?' * len(chunk))}) LIMIT 1", chunk).fetchone():
            return True
    return False


def caches_for(conn: sqlite3.Connection, m: dict[Any, Any]) -> Caches:
    """The standing caches of memo `m` of `conn`, kept in it: the ones an earlier memo of this
    connection held when no `always` row changed between the two memos' stamps, else new ones."""
    caches = m.get(KEY)
    if caches is not None:
        return caches
    version, highest = m[STAMP]
    stamp = (int(version), int(highest or 0))  # an empty store has no highest row ID
    key = change_journal.store_key(conn)
    poison = change_journal.poison()
    with _lock:
        entry = _carried.get(id(conn))
    if entry is not None and entry[0] is conn and entry[2] == key and entry[3] == poison \
            and not _always_changed(conn, key, entry[1], stamp):
        caches = entry[4]
        stats["carried"] += 1
    else:
        caches = ({}, {})
        stats["built"] += 1
    m[KEY] = caches
    with _lock:
        _carried[id(conn)] = (conn, stamp, key, poison, caches)
        _carried.move_to_end(id(conn))
        while len(_carried) > MAX_CONNECTIONS:
            _carried.popitem(last=False)
    return caches


def clear() -> None:
    """Forget every carried cache (the benchmark's cold runs, tests)."""
    with _lock:
        _carried.clear()
