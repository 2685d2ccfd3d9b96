"""The review summary, refreshed incrementally where the change journal allows it.

`summary.render` is the reference: a full render that counts every active item per kind and reads
each kind's `MAX_ITEMS_PER_KIND` most recently updated items. This module keeps, per store file and
in this process only, what the last render showed: the version, the highest row ID seen, the
active count per kind and each kind's listed rows (their order key, display key and rendered line;
a revision row is never edited in place, so its line never changes). The next refresh applies the
changes since then:

- new revisions: the rows above the highest row ID seen (one range read, whatever wrote them);
- retired revisions: the rows `change_journal` recorded for every version in between;
- a kind whose listed rows lost one (and had more items than it lists) reads the next most recent
  rows below its old cut-off, as many as are missing.

The counts follow (a listed retired row was active at the last render: rows never return to
active). Whenever the journal does not cover the whole range — another process wrote, a merge, a
clear, an untracked retirement, a restart — or the store identity differs, the refresh is a full
render (which also rebuilds the state, with cheaper per-(recall mode, kind) range counts). Nothing is
persisted: a process that died between refreshes leaves no state to trust, and the next refresh
after an open is a full one. The text is byte-identical to `summary.render` (a test replays random
commits, revisions and forgets against it)."""

from __future__ import annotations

import bisect
import heapq
import json
import sqlite3
import threading
from dataclasses import dataclass, field

from autopatch_tui.core import constants as C
from autopatch_tui.core.memory import change_journal
from autopatch_tui.core.memory.sqlite import read_txn
from autopatch_tui.core.pipeline import summary

_COLS = "row_id, updated_at, status, " + summary._ROW_COLUMNS
_TOP_SQL = (f"SELECT {_COLS} FROM memory_items WHERE status = 'active' AND kind = ?"
            " ORDER BY updated_at DESC, row_id DESC LIMIT ?")
_BELOW_SQL = (f"SELECT {_COLS} FROM memory_items WHERE status = 'active' AND kind = ?"
              " AND (updated_at < ? OR (updated_at = ? AND row_id < ?)) ORDER BY updated_at DESC, row_id DESC LIMIT ?")
_COUNT_SQL = "SELECT count(*) FROM memory_items WHERE status = 'active' AND recall_mode = ? AND kind = ?"
_KIND_SQL = f"SELECT {_COLS} FROM memory_items WHERE status = 'active' AND recall_mode = ? AND kind = ?"
_NEW_SQL = f"SELECT {_COLS} FROM memory_items WHERE row_id > ?"
_KINDS_SQL = "SELECT row_id, kind FROM memory_items WHERE row_id IN (SELECT value FROM json_each(?))"

Listed = tuple[tuple[float, int], tuple[str, str], str]  # (order key, display key, line)


@dataclass
class _Section:
    count: int = 0
    rows: dict[int, Listed] = field(default_factory=dict)  # the listed rows by row ID
    cut: tuple[float, int] | None = None  # the lowest listed order key when more items exist than listed
    order: list[tuple[tuple[str, str], int]] = field(default_factory=list)  # (display key, row ID), sorted
    shown: list[str] = field(default_factory=list)  # the lines, aligned with `order`

    def fill(self, rows: list[sqlite3.Row]) -> None:
        self.rows = {r["row_id"]: _listed(r) for r in rows}
        self.order = sorted((e[1], row_id) for row_id, e in self.rows.items())
        self.shown = [self.rows[row_id][2] for _, row_id in self.order]

    def add(self, row_id: int, entry: Listed) -> None:
        self.rows[row_id] = entry
        at = bisect.bisect_left(self.order, (entry[1], row_id))
        self.order.insert(at, (entry[1], row_id))
        self.shown.insert(at, entry[2])

    def remove(self, row_id: int) -> bool:
        entry = self.rows.pop(row_id, None)
        if entry is None:
            return False
        at = bisect.bisect_left(self.order, (entry[1], row_id))
        del self.order[at], self.shown[at]
        return True

    def lines(self) -> list[str]:
        return self.shown


@dataclass
class _State:
    key: change_journal.StoreKey
    poison: int
    version: int
    max_row_id: int
    sections: dict[str, _Section]


_lock = threading.Lock()
_states: dict[str, _State] = {}
stats = {"full": 0, "incremental": 0}  # how refreshes went (tests, benches)


def _listed(r: sqlite3.Row) -> Listed:
    return ((r["updated_at"], r["row_id"]), summary.display_key(r), summary.item_line(r))


def _full(conn: sqlite3.Connection, key: change_journal.StoreKey, poison: int, version: int) -> _State:
    limit = summary.MAX_ITEMS_PER_KIND
    sections = {kind: _Section(count=sum(conn.execute(_COUNT_SQL, (mode, kind)).fetchone()[0]
                                         for mode in C.RECALL_MODES)) for kind in summary.KIND_TITLES}
    total = sum(sec.count for sec in sections.values())
    for kind, sec in sections.items():
        if sec.count * sec.count <= limit * total:
            # a rare kind: walking the (status, updated_at) index for its most recent rows would pass
            # over ~limit * total / count rows of other kinds; reading all of its own rows is cheaper
            rows = [r for mode in C.RECALL_MODES for r in conn.execute(_KIND_SQL, (mode, kind))]
            rows = heapq.nlargest(limit, rows, key=lambda r: (r["updated_at"], r["row_id"]))
        else:
            rows = conn.execute(_TOP_SQL, (kind, limit)).fetchall()
        sec.fill(rows)
        _set_cut(sec)
    max_row_id = conn.execute("SELECT coalesce(max(row_id), 0) FROM memory_items").fetchone()[0]
    return _State(key, poison, version, max_row_id, sections)


def _set_cut(sec: _Section) -> None:
    sec.cut = min(e[0] for e in sec.rows.values()) if sec.count > len(sec.rows) else None


def _apply(conn: sqlite3.Connection, st: _State, retired: set[int], version: int) -> None:
    limit = summary.MAX_ITEMS_PER_KIND
    old = sorted(r for r in retired if r <= st.max_row_id)  # newer rows are read below, in their state now
    touched: set[str] = set()
    if old:
        for row_id, kind in conn.execute(_KINDS_SQL, (json.dumps(old),)).fetchall():
            sec = st.sections.get(kind)
            if sec is None:
                continue
            sec.count -= 1  # it was active at the last render
            if sec.remove(row_id):
                touched.add(kind)
    for r in conn.execute(_NEW_SQL, (st.max_row_id,)).fetchall():
        st.max_row_id = max(st.max_row_id, r["row_id"])
        sec = st.sections.get(r["kind"])
        if r["status"] != "active" or sec is None:
            continue
        sec.count += 1
        if sec.cut is None or (r["updated_at"], r["row_id"]) > sec.cut:
            sec.add(r["row_id"], _listed(r))
            touched.add(r["kind"])
    for kind in touched:
        sec = st.sections[kind]
        if sec.cut is not None and len(sec.rows) < limit:  # rows below the old cut-off move up
            missing = limit - len(sec.rows)
            at, row_id = sec.cut
            for r in conn.execute(_BELOW_SQL, (kind, at, at, row_id, missing)):
                sec.add(r["row_id"], _listed(r))
        excess = len(sec.rows) - limit
        if excess > 0:  # the least recently updated leave the list
            for row_id, _ in heapq.nsmallest(excess, sec.rows.items(), key=lambda kv: kv[1][0]):
                sec.remove(row_id)
        _set_cut(sec)
    st.version = version


def render(conn: sqlite3.Connection, *, now: float) -> tuple[str, int]:
    """`summary.render`'s text and version, from the state of the last render plus what changed."""
    with _lock, read_txn(conn):
        version = conn.execute("SELECT data_version FROM memory_meta WHERE id = 1").fetchone()[0]
        key = change_journal.store_key(conn)
        poison = change_journal.poison()
        st = _states.pop(key[0], None)  # put back only when the refresh succeeded
        retired = None
        if st is not None and st.key == key and st.poison == poison and st.version <= version:
            retired = change_journal.retired_between(key, st.version, version)
        if retired is None:
            st = _full(conn, key, poison, version)
            stats["full"] += 1
        else:
            _apply(conn, st, retired, version)
            stats["incremental"] += 1
        text = summary.assemble(version, now, {k: s.count for k, s in st.sections.items()},
                                {k: s.lines() for k, s in st.sections.items()})
        _states[key[0]] = st
    return text, version


def reset() -> None:
    """Forget every state (as a fresh process would)."""
    with _lock:
        _states.clear()
