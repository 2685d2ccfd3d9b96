"""The one-time rebuild of a first-layout recall index into the current one, in short transactions.

The states and what readers and item writers do in each are in `layout_upgrade`. The rebuild walks
them forward, one `BEGIN IMMEDIATE` transaction per `Rebuild.step()`:

1. `terms` → `building`: the current tables are created, empty (one short transaction).
2. postings: the old rows are copied in key order, a chunk of `TERM_CHUNK_ROWS` rows at a time:
   their texts get IDs in text order (so the postings are appended, not scattered) and each current
   row becomes its posting (`INSERT OR IGNORE`: an item written meanwhile is posted already).
3. records: the active items in row order, `ITEM_CHUNK` at a time: each item not recorded yet
   gets its packed `(term ID, field)` record from its old rows (read from the old item index alone),
   and stored phrases of items written before the phrase index get their keys.
4. the switch: the old item index is dropped, so readers read the current tables. Nothing is left to
   reconcile: every item written or taken out since step 1 went to both layouts (`layout_upgrade`),
   and an item added above the last one step 3 saw is checked for its record in this transaction.
5. the old table is dropped.

A transaction takes chunks until it has run `BATCH_SECONDS`; the next one starts no sooner than
`MIN_PAUSE_SECONDS` later, and no sooner than the last one took: a chat turn's write (or another
process's) waits for at most one transaction, and the rebuild leaves the UI thread the GIL at least
half the time. The two drops are single statements: they free the old pages without zero-filling
them (`secure_delete = FAST` for that statement only: rewriting every freed page is what made them
slow), so they only walk the old B-trees (`bench/layout_rebuild.py` prints every figure).

The progress of steps 2 and 3 is this object's: a process that stops (closed, killed, crashed) leaves
a `building` store, healthy, that the next rebuild walks again from the start (the copies skip what
is there). Two processes rebuilding at once each finish their own walk; the first switch wins.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from autopatch_tui.core.bounded_json import loads_column
from autopatch_tui.core.errors import MemoryBusyError
from autopatch_tui.core.memory.health import check_runtime_invariants
from autopatch_tui.core.memory.schema import BUILDING, CURRENT, SWITCHED, TERMS
from autopatch_tui.core.memory.sqlite import write_txn
from autopatch_tui.core.recall import layout_upgrade as layout
from autopatch_tui.core.recall import postings
from autopatch_tui.core.recall.phrase_index import item_phrases, phrase_key

log = logging.getLogger(__name__)

BATCH_SECONDS = 0.04
MIN_PAUSE_SECONDS = 0.05
BUSY_PAUSE_SECONDS = 1.0  # the store stayed locked for the whole busy timeout: try again later
TERM_CHUNK_ROWS = 2000
ITEM_CHUNK = 100

_T = f"main.{layout.TERMS_TABLE}"
_CURRENT = layout.CURRENT_ROWS.format(r="r")
_FIELD = layout.FIELD_CODE.format(c="r.field")
_KEY, _R_KEY = "(term, item_row_id, field, phrase)", "(r.term, r.item_row_id, r.field, r.phrase)"  # the old PK
_FIRST_ROW: tuple[object, ...] = ("", 0, "", -1)  # below every old row's key


@dataclass(frozen=True)
class Transaction:
    """One transaction of the rebuild: what it did, its wall time and this thread's CPU time."""

    phase: str
    wall: float
    cpu: float


@contextmanager
def _without_zero_fill(conn: sqlite3.Connection) -> Iterator[None]:
    before = int(conn.execute("PRAGMA main.secure_delete").fetchone()[0])
    conn.execute("PRAGMA main.secure_delete = FAST")
    try:
        yield
    finally:
        conn.execute(f"PRAGMA main.secure_delete = {before}")


def _json_strings(text: object) -> list[str]:
    """A stored JSON list's strings (the schema checks only that the column is valid JSON)."""
    data = loads_column(text, None)
    return [v for v in data if isinstance(v, str)] if isinstance(data, list) else []


class Rebuild:
    """A walk of the rebuild from whatever state the store is in (see the module docstring).

    `conn` gives the connection to use (called at each step: a store degraded or closed meanwhile
    raises there); `guard` returns a diagnostic when the store lost an invariant (the rebuild then
    stops and writes nothing)."""

    def __init__(self, conn: Callable[[], sqlite3.Connection], *,
                 guard: Callable[[sqlite3.Connection], str | None] | None = check_runtime_invariants,
                 batch_seconds: float = BATCH_SECONDS, min_pause: float = MIN_PAUSE_SECONDS) -> None:
        self._conn = conn
        self._guard = guard
        self._batch = batch_seconds
        self._min_pause = min_pause
        self._terms_from: tuple[object, ...] | None = _FIRST_ROW  # the next old row's key (None: all copied)
        self._items_after: int | None = 0  # the last item recorded (None: all recorded)
        self._last_item = 0
        self.transactions: list[Transaction] = []
        self.done = False

    def step(self) -> float | None:
        """Run one transaction. Returns the seconds to pause before the next step, or None when the
        index is current (or the store lost an invariant: nothing more is done)."""
        if self.done:
            return None
        conn = self._conn()
        if layout.state(conn) == CURRENT:  # a read: a store with nothing to do takes no write lock
            self.done = True
            return None
        wall, cpu = time.perf_counter(), time.thread_time()
        try:
            with write_txn(conn):
                problem = self._guard(conn) if self._guard is not None else None
                phase = "stopped" if problem else self._advance(conn)
        except MemoryBusyError:
            log.info("recall index rebuild: the store is busy; trying again later")
            return BUSY_PAUSE_SECONDS
        wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
        self.transactions.append(Transaction(phase, wall, cpu))
        if phase in ("done", "stopped", "dropped"):
            if phase == "stopped":
                log.warning("recall index rebuild stopped: the store lost an invariant")
            self.done = True
            return None
        return max(self._min_pause, wall)

    def run(self, *, pause: bool = True) -> bool:
        """Every step to the end (tests and benches; the app steps from its Memory worker). True when
        this walk changed the layout."""
        while (wait := self.step()) is not None:
            if pause:
                time.sleep(wait)
        return any(t.phase not in ("done", "stopped") for t in self.transactions)

    # ----------------------------------------------------------------------- inside the transaction

    def _advance(self, conn: sqlite3.Connection) -> str:
        now = layout.state(conn)  # again, under the lock: another process may have moved it on
        if now == CURRENT:
            return "done"
        if now == TERMS:
            layout.create_current(conn)
            log.info("recall index rebuild started")
            return "created"
        if now == SWITCHED:
            with _without_zero_fill(conn):
                conn.execute(f"DROP TABLE {_T}")
            log.info("recall index rebuilt in the current layout")
            return "dropped"
        assert now == BUILDING
        deadline = time.perf_counter() + self._batch
        if self._terms_from is not None:
            while self._terms_from is not None:
                self._copy_terms(conn)
                if time.perf_counter() >= deadline:
                    break
            return "postings"
        if self._items_after is not None:
            while self._items_after is not None:
                self._record_items(conn)
                if time.perf_counter() >= deadline:
                    break
            return "records"
        if self._unrecorded(conn):  # an item added without a record: walk the records again from it
            return "records"
        with _without_zero_fill(conn):
            conn.execute(f"DROP INDEX main.{layout.TERMS_INDEX}")
        return "switched"

    def _copy_terms(self, conn: sqlite3.Connection) -> None:
        """The postings of the next chunk of old rows, in key order. The chunk is a range of the old
        table's whole primary key, not of texts: one text may have more rows than a chunk holds (a
        common word at 100k items has tens of thousands), and every chunk moves the walk on."""
        low = self._terms_from or _FIRST_ROW
        if layout.PHRASE_POSTING <= low[0] < " ":  # the phrase-only rows: nothing there carries over
            low = (" ", *_FIRST_ROW[1:])
        high = conn.execute(f"SELECT term, item_row_id, field, phrase FROM {_T} WHERE {_KEY} >= (?, ?, ?, ?)"
                            f" ORDER BY term, item_row_id, field, phrase LIMIT 1 OFFSET ?",
                            (*low, TERM_CHUNK_ROWS)).fetchone()
        where, params = (f"{_R_KEY} >= (?, ?, ?, ?)", [*low]) if high is None else \
            (f"{_R_KEY} >= (?, ?, ?, ?) AND {_R_KEY} < (?, ?, ?, ?)", [*low, *high])
        where = f"{where} AND {_CURRENT}"
        postings.add_texts(conn, f"SELECT DISTINCT r.term FROM {_T} AS r WHERE {where} AND NOT EXISTS"
                                 " (SELECT 1 FROM main.recall_dict AS d WHERE d.term = r.term)", params)
        conn.execute("INSERT OR IGNORE INTO main.recall_postings (term_id, field, item_row_id, phrase, need)"
                     f" SELECT d.id, {_FIELD}, r.item_row_id, r.phrase, CASE WHEN r.field = 'content' THEN NULL"
                     f" ELSE r.need END FROM {_T} AS r CROSS JOIN main.recall_dict AS d ON d.term = r.term"
                     f" WHERE {where}", params)
        self._terms_from = None if high is None else tuple(high)

    def _record_items(self, conn: sqlite3.Connection) -> None:
        """The records of the next chunk of active items (those without one)."""
        rows = conn.execute(
            "SELECT m.row_id, EXISTS (SELECT 1 FROM main.recall_item_postings AS f WHERE f.item_row_id = m.row_id)"
            " FROM main.memory_items AS m WHERE m.row_id > ? AND m.status = 'active' ORDER BY m.row_id LIMIT ?",
            (self._items_after, ITEM_CHUNK)).fetchall()
        if not rows:
            self._items_after = None
            return
        self._items_after = self._last_item = rows[-1][0]
        codes: dict[int, list[int]] = {row_id: [] for row_id, recorded in rows if not recorded}
        if not codes:
            return
        todo = json.dumps(list(codes))
        for item, code in conn.execute(
                f"SELECT r.item_row_id, d.id << {postings.FIELD_BITS} | {_FIELD} FROM json_each(?) AS j"
                f" CROSS JOIN {_T} AS r ON r.item_row_id = j.value"
                f" CROSS JOIN main.recall_dict AS d ON d.term = r.term WHERE {_CURRENT}", (todo,)):
            codes[item].append(code)
        for row_id, subject, aliases, keywords in conn.execute(  # written before the phrase index: no key rows
                "SELECT m.row_id, m.subject, m.aliases, m.keywords FROM json_each(?) AS j"
                " CROSS JOIN main.memory_items AS m ON m.row_id = j.value WHERE NOT EXISTS"
                f" (SELECT 1 FROM {_T} AS r WHERE r.item_row_id = m.row_id AND r.term >= ? AND r.term < ?)",
                (todo, layout.KEY_PREFIX, layout.PHRASE_POSTING)).fetchall():
            codes[row_id].extend(self._add_keys(conn, row_id, subject, aliases, keywords))
        conn.executemany("INSERT INTO main.recall_item_postings (item_row_id, postings) VALUES (?, ?)",
                         [(row_id, postings.pack(c)) for row_id, c in codes.items()])

    @staticmethod
    def _add_keys(conn: sqlite3.Connection, row_id: int, subject: str, aliases: object, keywords: object) -> list[int]:
        keys = [(phrase_key(terms), postings.FIELD[field], n, len(terms))
                for field, n, terms in item_phrases(subject, _json_strings(aliases), _json_strings(keywords)) if terms]
        if not keys:
            return []
        ids = postings.assign_ids(conn, (k[0] for k in keys))
        rows = [(ids[text], field, row_id, n, need) for text, field, n, need in keys]
        conn.executemany("INSERT OR IGNORE INTO main.recall_postings (term_id, field, item_row_id, phrase, need)"
                         " VALUES (?, ?, ?, ?, ?)", rows)
        return [term_id << postings.FIELD_BITS | field for term_id, field, *_ in rows]

    def _unrecorded(self, conn: sqlite3.Connection) -> bool:
        """An active item above the last one recorded, without a record (every item write since the
        rebuild began records its item, so this finds none unless something wrote around the index)."""
        row = conn.execute(
            "SELECT m.row_id FROM main.memory_items AS m WHERE m.row_id > ? AND m.status = 'active' AND NOT EXISTS"
            " (SELECT 1 FROM main.recall_item_postings AS f WHERE f.item_row_id = m.row_id) ORDER BY m.row_id LIMIT 1",
            (self._last_item,)).fetchone()
        if row is None:
            return False
        self._items_after = row[0] - 1
        return True


def rebuild_now(conn: sqlite3.Connection) -> bool:
    """The whole rebuild on `conn`, without pauses (tests, benches, tools). True when it changed the layout."""
    return Rebuild(lambda: conn, min_pause=0.0).run(pause=False)
