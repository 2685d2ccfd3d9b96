"""Stores whose recall index is still in its first layout (`recall_terms`, written before issue 23).

That layout is an accepted v4 catalog (`schema.layout_ddl`): nothing about such a store is
degraded, and nothing is lost. Its index is rebuilt into the current one (`postings`, about half
the room) once, the first time a process that may write the store needs it:

- every item write (`require_current`, inside the write's own `BEGIN IMMEDIATE`), so no process
  ever writes the old layout;
- the app's Memory worker when it starts, and `memory search` before it searches (`upgrade`): off
  the start-up path, where the phrase index used to be backfilled. Opening a store writes nothing.

The rebuild is one transaction under `BEGIN IMMEDIATE`: it checks the layout again inside it (a
process that waited for the lock finds the work done), gives stored phrases of items written before
the phrase index their keys, stages the old rows that carry over in a temporary table (each becomes
the same posting; the derived `\\x1f` rows the current layout does not need are left out), drops the
old table and index (so the new pages reuse the freed ones: the file does not grow), creates the
current tables, fills them under each text's new ID, and records each item's postings. SQLite
commits all of it or none of it: a process killed at any point leaves the old layout, which the next
writer rebuilds. Only the derived index changes: the spec's tables and every row in them are untouched
(this is the recall index being rebuilt, as `REINDEX` rebuilds an index, not a migration of the
store's data or schema version).

Until then (another process holds the write lock, or this one may only read), readers use a
temporary view that shows the old rows as current postings (`reading`), under a read transaction so
the layout they checked is the layout they read.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from array import array
from collections.abc import Iterator
from contextlib import contextmanager

from autopatch_tui.core.errors import MemoryBusyError
from autopatch_tui.core.memory.schema import RECALL_DDL
from autopatch_tui.core.memory.sqlite import write_txn
from autopatch_tui.core.recall import postings
from autopatch_tui.core.recall.phrase_index import item_phrases, phrase_key

log = logging.getLogger(__name__)

TERMS_TABLE = "recall_terms"
_KEY, _PHRASE_POSTING = "\x1e", "\x1f"  # the first layout's derived rows start with these
_FIELD_CODE = "CASE {c} " + " ".join(f"WHEN '{n}' THEN {v}" for n, v in postings.FIELD.items()) + " END"
# the old rows that are current postings: the five fields, minus the phrase-only posting lists
_CURRENT_ROWS = ("{r}.field IN (" + ", ".join(f"'{n}'" for n in postings.FIELD) + ")"
                 f" AND NOT ({{r}}.term >= char({ord(_PHRASE_POSTING)}) AND {{r}}.term < char({ord(_PHRASE_POSTING) + 1}))")

VIEW = "recall_terms_as_postings"
_VIEW_SQL = (f"CREATE TEMP VIEW IF NOT EXISTS {VIEW} (term_id, field, item_row_id, phrase, need) AS"
             f" SELECT r.term, {_FIELD_CODE.format(c='r.field')}, r.item_row_id, r.phrase,"
             f" CASE WHEN r.field = 'content' THEN NULL ELSE r.need END"
             f" FROM main.{TERMS_TABLE} AS r WHERE {_CURRENT_ROWS.format(r='r')}")
TERMS_VIEW = postings.Source(f"temp.{VIEW}", text_ids=True)


def is_terms_layout(conn: sqlite3.Connection) -> bool:
    """True while the store holds its recall index in the first layout."""
    return conn.execute("SELECT 1 FROM main.sqlite_master WHERE type = 'table' AND name = ?",
                        (TERMS_TABLE,)).fetchone() is not None


def source(conn: sqlite3.Connection) -> postings.Source:
    """Where the postings are for this store now (see `reading`)."""
    if not is_terms_layout(conn):
        return postings.INDEX
    conn.execute(_VIEW_SQL)  # temporary: this connection only, nothing written to the store
    return TERMS_VIEW


@contextmanager
def reading(conn: sqlite3.Connection) -> Iterator[postings.Source]:
    """The postings to read, inside a read transaction (unless the caller holds one) so that a
    rebuild committed by another process meanwhile cannot change the layout under the reads."""
    own = not conn.in_transaction
    if own:
        conn.execute("BEGIN")
    try:
        yield source(conn)
    finally:
        if own and conn.in_transaction:
            conn.execute("COMMIT")


def require_current(conn: sqlite3.Connection) -> None:
    """Inside a write txn (the caller holds `BEGIN IMMEDIATE`): rebuild a first-layout index now,
    so the write goes to the current one."""
    if is_terms_layout(conn):
        _rebuild(conn)


def upgrade(conn: sqlite3.Connection) -> bool:
    """Rebuild a first-layout index in its own write transaction. Returns True when this call did
    it; False when there was nothing to do or the store stayed locked (the next writer does it)."""
    if not is_terms_layout(conn):
        return False
    try:
        with write_txn(conn):
            if not is_terms_layout(conn):  # another process did it while this one waited for the lock
                return False
            _rebuild(conn)
            return True
    except MemoryBusyError:
        log.warning("recall index not rebuilt yet: the store is busy")
        return False


# --------------------------------------------------------------------------- the rebuild


def _json_strings(text: object) -> list[str]:
    """A stored JSON list's strings (the schema checks only that the column is valid JSON)."""
    try:
        data = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return []
    return [v for v in data if isinstance(v, str)] if isinstance(data, list) else []


def _add_missing_keys(conn: sqlite3.Connection) -> int:
    """Active items written before the phrase index (no derived row at all) get their phrase keys,
    as old rows, so the copy below carries them. Returns the number of items."""
    rows = conn.execute(
        f"SELECT row_id, subject, aliases, keywords FROM memory_items AS m WHERE status = 'active' AND NOT EXISTS"
        f" (SELECT 1 FROM {TERMS_TABLE} AS r WHERE r.item_row_id = m.row_id AND r.term >= ? AND r.term < ' ')",
        (_KEY,)).fetchall()
    for row_id, subject, aliases, keywords in rows:
        keys = [(phrase_key(terms), row_id, field, n, len(terms))
                for field, n, terms in item_phrases(subject, _json_strings(aliases), _json_strings(keywords)) if terms]
        conn.executemany(f"INSERT OR IGNORE INTO {TERMS_TABLE} (term, item_row_id, field, phrase, need)"
                         " VALUES (?, ?, ?, ?, ?)", keys)
    return len(rows)


def _record_item_postings(conn: sqlite3.Connection) -> None:
    """Each item's (term ID, field) pairs, gathered in one pass over the new postings (a few bytes an
    entry in memory), then packed, one row per item that exists (rows of a missing item stay orphans,
    as they were)."""
    pairs: dict[int, array] = {}
    for term_id, field, item in conn.execute("SELECT term_id, field, item_row_id FROM recall_postings"):
        codes = pairs.get(item)
        if codes is None:
            codes = pairs[item] = array("q")
        codes.append(term_id << postings.FIELD_BITS | field)
    conn.executemany("INSERT INTO recall_item_postings (item_row_id, postings) SELECT ?, ?"
                     " WHERE EXISTS (SELECT 1 FROM memory_items WHERE row_id = ?)",
                     ((item, postings.pack(codes), item) for item, codes in pairs.items()))
    conn.execute("INSERT INTO recall_item_postings (item_row_id, postings) SELECT row_id, x'' FROM memory_items AS m"
                 " WHERE status = 'active' AND NOT EXISTS (SELECT 1 FROM recall_item_postings AS f"
                 " WHERE f.item_row_id = m.row_id)")  # an active item that posts nothing


_STAGED = "temp.recall_terms_staged"  # the old rows the current layout keeps, while the old table goes


def _rebuild(conn: sqlite3.Connection) -> None:
    """Inside a write txn. The old rows that carry over are staged in a temporary table first and the
    old table and index dropped before the new ones are written, so the new pages reuse the freed
    ones: the file never grows (it keeps its size, its free pages are reused as Memory grows)."""
    keyed = _add_missing_keys(conn)
    conn.execute(f"CREATE TABLE {_STAGED} (term TEXT NOT NULL, item_row_id INTEGER NOT NULL, field INTEGER NOT NULL,"
                 " phrase INTEGER NOT NULL, need INTEGER, PRIMARY KEY (term, item_row_id, field, phrase)) WITHOUT ROWID")
    try:
        conn.execute(f"INSERT INTO {_STAGED} SELECT r.term, r.item_row_id, {_FIELD_CODE.format(c='r.field')}, r.phrase,"
                     f" CASE WHEN r.field = 'content' THEN NULL ELSE r.need END"
                     f" FROM {TERMS_TABLE} AS r WHERE {_CURRENT_ROWS.format(r='r')} ORDER BY r.term, r.item_row_id")
        conn.execute("DROP INDEX recall_terms_item")
        conn.execute(f"DROP TABLE {TERMS_TABLE}")
        for stmt in RECALL_DDL:
            conn.execute(stmt)
        conn.execute(f"INSERT INTO recall_dict (term, id) SELECT term, row_number() OVER (ORDER BY term)"
                     f" FROM (SELECT DISTINCT term FROM {_STAGED})")
        conn.execute(f"INSERT INTO recall_postings (term_id, field, item_row_id, phrase, need)"
                     f" SELECT d.id, s.field, s.item_row_id, s.phrase, s.need"
                     f" FROM {_STAGED} AS s CROSS JOIN recall_dict AS d ON d.term = s.term")
    finally:
        conn.execute(f"DROP TABLE IF EXISTS {_STAGED}")
    _record_item_postings(conn)
    conn.execute("INSERT INTO recall_meta (id, last_term_id) SELECT 1, count(*) FROM recall_dict")
    log.info("recall index rebuilt in the current layout (%d item(s) given phrase keys)", keyed)
