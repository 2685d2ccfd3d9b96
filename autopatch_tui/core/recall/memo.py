"""A per-connection memo for recall that is valid only while the Memory items are unchanged.

The key is what recall reads, not any write to the file: `memory_meta.data_version` (every Memory
item write — consolidation, forget, merge, clear — bumps it in its own transaction) and the highest
`memory_items.row_id` (every new revision raises it, also when written by a tool or test that does
not bump the counter). Both are single B-tree lookups. Turn, job and candidate writes change
neither, so the memo survives `begin_turn`, `complete_turn` and the worker's job bookkeeping: the
Map a request pays for right after its turn was written is the memoized one. Between two item
writes recall results are pure functions of their inputs, so the standing lane and term document
frequencies are reused across the requests of a running app.

Connections are thread-local in the store; the registry of memos is shared and locked, bounded to
the most recently used connections."""

from __future__ import annotations

import sqlite3
import threading
from collections import OrderedDict
from typing import Any

MAX_CONNECTIONS = 16
MAX_ENTRIES = 4096  # per memo; a full memo starts over

_STAMP_SQL = ("SELECT (SELECT data_version FROM memory_meta WHERE id = 1),"
              " (SELECT max(row_id) FROM memory_items)")

STAMP = "stamp"  # a memo holds its own stamp under this key (what it is valid for)

_lock = threading.Lock()
_memos: OrderedDict[int, tuple[sqlite3.Connection, tuple[Any, ...], dict[Any, Any]]] = OrderedDict()


def memo(conn: sqlite3.Connection) -> dict[Any, Any]:
    """The memo of `conn` for the database as it is now (a fresh one after any change). It holds its
    stamp — (`memory_meta.data_version`, highest `memory_items.row_id`) — under STAMP."""
    version = tuple(conn.execute(_STAMP_SQL).fetchone())
    key = id(conn)
    with _lock:
        entry = _memos.get(key)
        if entry is not None and entry[0] is conn and entry[1] == version and len(entry[2]) < MAX_ENTRIES:
            _memos.move_to_end(key)
            return entry[2]
        fresh: dict[Any, Any] = {STAMP: version}
        _memos[key] = (conn, version, fresh)
        _memos.move_to_end(key)
        while len(_memos) > MAX_CONNECTIONS:
            _memos.popitem(last=False)
        return fresh


def clear() -> None:
    """Drop every memo (the benchmark's cold runs)."""
    with _lock:
        _memos.clear()
