"""A per-connection memo for recall that is valid only while the database is unchanged.

The key is (`PRAGMA data_version`, `Connection.total_changes`): the first changes when another
connection commits, the second when this connection writes (even if it later rolls back, which
only drops the memo early). Between two changes recall results are pure functions of their
inputs, so the standing lane and term document frequencies can be reused across the requests of
a running app (a Map and up to four searches per request, and little written in between).

Connections are thread-local in the store; the registry of memos is shared and locked, bounded to
the most recently used connections."""

from __future__ import annotations

import sqlite3
import threading
from collections import OrderedDict
from typing import Any

MAX_CONNECTIONS = 16
MAX_ENTRIES = 4096  # per memo; a full memo starts over

_lock = threading.Lock()
_memos: OrderedDict[int, tuple[sqlite3.Connection, tuple[int, int], dict[Any, Any]]] = OrderedDict()


def memo(conn: sqlite3.Connection) -> dict[Any, Any]:
    """The memo of `conn` for the database as it is now (a fresh one after any change)."""
    version = (conn.execute("PRAGMA data_version").fetchone()[0], conn.total_changes)
    key = id(conn)
    with _lock:
        entry = _memos.get(key)
        if entry is not None and entry[0] is conn and entry[1] == version and len(entry[2]) < MAX_ENTRIES:
            _memos.move_to_end(key)
            return entry[2]
        fresh: dict[Any, Any] = {}
        _memos[key] = (conn, version, fresh)
        _memos.move_to_end(key)
        while len(_memos) > MAX_CONNECTIONS:
            _memos.popitem(last=False)
        return fresh


def clear() -> None:
    """Drop every memo (the benchmark's cold runs)."""
    with _lock:
        _memos.clear()
