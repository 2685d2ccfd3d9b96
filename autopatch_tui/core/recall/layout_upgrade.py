"""The recall index in every layout a store may hold, for its readers and its writers.

Stores written before issue 23 hold the index in its first layout (`recall_terms`, an index on the
item). The app's Memory worker rebuilds it into the current one once, in short transactions
(`layout_rebuild`). The states, each an exact catalog the health check accepts
(`schema.RECALL_LAYOUTS`), and what each side uses in each:

| state      | catalog                              | readers                | item writes              |
|------------|--------------------------------------|------------------------|--------------------------|
| `terms`    | `recall_terms` + its item index       | the old rows (view)    | the old rows             |
| `building` | both layouts                         | the old rows (view)    | both layouts             |
| `switched` | the current one + `recall_terms`     | the current index      | the current index        |
| `current`  | the current one                      | the current index      | the current index        |

While `building`, the old rows stay complete and are what every reader sees; the rebuild fills the
current tables behind them. Every item written or taken out meanwhile is written to (or taken out of)
both layouts in its own transaction, so the current tables never miss a change and the switch has no
delta left to reconcile: it drops the old table's index (readers now use the current tables, which
hold the same postings), and a later short transaction drops the old table. A process killed at any
point leaves one of the four states, all healthy; the next rebuild takes it from there.

Readers use `reading`: inside one read transaction they see one state and the postings of that
state (the old rows through a temporary view, with the texts as their IDs). Opening a store and
reading it write nothing.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from autopatch_tui.core.errors import MemorySchemaError
from autopatch_tui.core.memory.schema import (
    BUILDING,
    CURRENT,
    RECALL_DDL,
    TERMS,
    recall_layout,
)
from autopatch_tui.core.recall import postings

TERMS_TABLE, TERMS_INDEX = "recall_terms", "recall_terms_item"
KEY_PREFIX, PHRASE_POSTING = "\x1e", "\x1f"  # the first layout's derived rows start with these
FIELD_NAME = {code: name for name, code in postings.FIELD.items()}
FIELD_CODE = "CASE {c} " + " ".join(f"WHEN '{n}' THEN {v}" for n, v in postings.FIELD.items()) + " END"
# the old rows that are current postings: the five fields, minus the phrase-only posting lists
CURRENT_ROWS = ("{r}.field IN (" + ", ".join(f"'{n}'" for n in postings.FIELD) + ")"
                f" AND NOT ({{r}}.term >= char({ord(PHRASE_POSTING)}) AND {{r}}.term < char({ord(PHRASE_POSTING) + 1}))")
OLD_STATES = (TERMS, BUILDING)  # the states whose readers read the old rows

VIEW = "recall_terms_as_postings"
_VIEW_SQL = (f"CREATE TEMP VIEW IF NOT EXISTS {VIEW} (term_id, field, item_row_id, phrase, need) AS"
             f" SELECT r.term, {FIELD_CODE.format(c='r.field')}, r.item_row_id, r.phrase,"
             f" CASE WHEN r.field = 'content' THEN NULL ELSE r.need END"
             f" FROM main.{TERMS_TABLE} AS r WHERE {CURRENT_ROWS.format(r='r')}")
TERMS_VIEW = postings.Source(f"temp.{VIEW}", text_ids=True)
_RECALL_OBJECTS = "SELECT name FROM main.sqlite_master WHERE name LIKE 'recall\\_%' ESCAPE '\\'"


def state(conn: sqlite3.Connection) -> str:
    """The layout state of the store (`schema.RECALL_LAYOUTS`). Raises `MemorySchemaError` for a
    catalog in none of them (only damage after the store was checked does that)."""
    found = recall_layout(r[0] for r in conn.execute(_RECALL_OBJECTS))
    if found is None:
        raise MemorySchemaError("the recall index is in no known layout")
    return found


def source(conn: sqlite3.Connection) -> postings.Source:
    """Where the postings are for this store now (see `reading`)."""
    if state(conn) not in OLD_STATES:
        return postings.INDEX
    conn.execute(_VIEW_SQL)  # temporary: this connection only, nothing written to the store
    return TERMS_VIEW


@contextmanager
def reading(conn: sqlite3.Connection) -> Iterator[postings.Source]:
    """The postings to read, inside a read transaction (unless the caller holds one) so that a
    rebuild step committed by another connection meanwhile cannot change the layout under the reads."""
    own = not conn.in_transaction
    if own:
        conn.execute("BEGIN")
    try:
        yield source(conn)
    finally:
        if own and conn.in_transaction:
            conn.execute("COMMIT")


# --------------------------------------------------------------------------- item writes


def _terms_rows(row_id: int, rows: list[postings.Posting]) -> list[tuple[str, int, str, int, int]]:
    """An item's postings as the first layout holds them (content rows carry the old `need`, which
    readers never see; the phrase-only `\\x1f` rows of that layout are read by nobody now)."""
    content = sum(1 for _, field, _, _ in rows if field == postings.CONTENT)
    return [(text, row_id, FIELD_NAME[field], phrase, min(2, content) if need is None else need)
            for text, field, phrase, need in rows]


def index_item(conn: sqlite3.Connection, row_id: int, rows: list[postings.Posting]) -> None:
    """Inside a write txn: post an active item revision in the layout(s) the store holds."""
    now = state(conn)
    if now in OLD_STATES:
        conn.executemany(f"INSERT OR IGNORE INTO main.{TERMS_TABLE} (term, item_row_id, field, phrase, need)"
                         " VALUES (?, ?, ?, ?, ?)", _terms_rows(row_id, rows))
    if now != TERMS:
        postings.index_item(conn, row_id, rows)


def terms_codes(conn: sqlite3.Connection, row_id: int) -> list[int]:
    """While `building`: an item's (term ID, field) pairs as its old rows say (one seek in the item
    index, then the dictionary; a text without an ID was never posted in the current tables)."""
    return [code for (code,) in conn.execute(
        f"SELECT d.id << {postings.FIELD_BITS} | {FIELD_CODE.format(c='r.field')}"
        f" FROM main.{TERMS_TABLE} AS r CROSS JOIN main.recall_dict AS d ON d.term = r.term"
        f" WHERE r.item_row_id = ? AND {CURRENT_ROWS.format(r='r')}", (row_id,))]


def unindex_item(conn: sqlite3.Connection, row_id: int) -> None:
    """Inside a write txn: take an item revision out of the layout(s) the store holds."""
    now = state(conn)
    if now == BUILDING:  # the rebuild may not have reached it: its old rows say what it posted
        postings.unindex_item(conn, row_id, known=terms_codes(conn, row_id))
    elif now != TERMS:
        postings.unindex_item(conn, row_id)  # `switched`: the old table is garbage, left as it is
    if now in OLD_STATES:
        conn.execute(f"DELETE FROM main.{TERMS_TABLE} WHERE item_row_id = ?", (row_id,))


def clear_index(conn: sqlite3.Connection) -> None:
    """Inside `memory clear`'s write txn, before the items go: the old layout's rows and objects
    are deleted (so no item's deletion cascades into them), leaving the current tables, empty of
    postings (the caller empties them with the rest)."""
    now = state(conn)
    if now == CURRENT:
        return
    conn.execute(f"DELETE FROM main.{TERMS_TABLE}")
    if now in OLD_STATES:
        conn.execute(f"DROP INDEX main.{TERMS_INDEX}")
    conn.execute(f"DROP TABLE main.{TERMS_TABLE}")
    if now == TERMS:
        create_current(conn)


def create_current(conn: sqlite3.Connection) -> None:
    """Inside a write txn: the current layout's tables, empty, and its ID counter."""
    for stmt in RECALL_DDL:
        conn.execute(stmt)
    conn.execute("INSERT INTO main.recall_meta (id, last_term_id) VALUES (1, 0)")

