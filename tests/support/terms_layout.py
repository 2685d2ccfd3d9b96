"""Stores with the recall index in its first layout (`recall_terms`, written before issue 23).

- `restore_fixture(db)`: the real store in `tests/fixtures/terms_layout_store.sql`, written by the
  release before issue 23 with its own writer (see `tests/fixtures/make_terms_layout_store.py`);
- `to_terms_layout(conn)`: turn a store written now into what that release would have written for
  the same items: the current index dropped, the old table and index created with their exact SQL,
  and every active item's rows written by `terms_rows` — that release's writer (`index_terms` and
  `phrase_rows`), kept here verbatim as the reference. `phrase_rows=False` gives a store written
  before the phrase index (no derived rows).
- `index_texts(conn)`: the current index as comparable texts (term IDs resolved).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from autopatch_tui.core.memory.schema import RECALL_DDL, TERMS_RECALL_DDL
from autopatch_tui.core.memory.sqlite import write_txn
from autopatch_tui.core.recall import postings
from autopatch_tui.core.recall.terms import content_terms, is_check_id, phrase_terms

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "terms_layout_store.sql"
OLD_KEY, OLD_PHRASE_POSTING = "\x1e", "\x1f"


def restore_fixture(db: Path) -> None:
    """Write the fixture store to `db` (which must not exist); its folder gets the store's .gitignore."""
    db.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    (db.parent / ".gitignore").write_text("*\n")
    (db.parent / ".gitignore").chmod(0o600)
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.executescript(FIXTURE.read_text(encoding="utf-8"))
    finally:
        conn.close()
    db.chmod(0o600)


def terms_rows(row_id: int, subject: str, aliases: list[str], keywords: list[str], statement: str,
               content: str, *, phrase_rows: bool = True) -> set[tuple[str, int, str, int, int]]:
    """The rows the release before issue 23 wrote for one item revision (its `index_terms`)."""
    rows: list[tuple[str, int, str, int, int]] = []

    def add_phrase(field: str, phrase_no: int, phrase: str) -> None:
        terms = phrase_terms(phrase)
        rows.extend((t, row_id, field, phrase_no, len(terms)) for t in terms)
        if phrase_rows and terms:
            need = len(terms)
            rows.append((OLD_KEY + " ".join(terms), row_id, field, phrase_no, need))
            rows.extend((OLD_PHRASE_POSTING + t, row_id, field, phrase_no, need) for t in terms)

    add_phrase("subject", 0, subject)
    for n, alias in enumerate(aliases):
        add_phrase("alias", n, alias)
    for n, kw in enumerate(keywords):
        add_phrase("check_id" if is_check_id(kw.strip()) else "keyword", n, kw)
    body = content_terms(f"{statement}\n{content}")
    rows.extend((t, row_id, "content", 0, min(2, len(body))) for t in body)
    return set(rows)


def expected_terms_rows(conn: sqlite3.Connection, *, phrase_rows: bool = True) -> set[tuple[str, int, str, int, int]]:
    out: set[tuple[str, int, str, int, int]] = set()
    for r in conn.execute("SELECT row_id, subject, aliases, keywords, statement, content FROM memory_items"
                          " WHERE status = 'active'"):
        out |= terms_rows(r[0], r[1], json.loads(r[2]), json.loads(r[3]), r[4], r[5], phrase_rows=phrase_rows)
    return out


def to_terms_layout(conn: sqlite3.Connection, *, phrase_rows: bool = True) -> None:
    """Rewrite a current store's recall index as the release before issue 23 held it."""
    with write_txn(conn):
        rows = expected_terms_rows(conn, phrase_rows=phrase_rows)
        for stmt in RECALL_DDL:
            name = stmt.split("(")[0].split()[-1]
            conn.execute(f"DROP TABLE {name}")
        for stmt in TERMS_RECALL_DDL:
            conn.execute(stmt)
        conn.executemany("INSERT INTO recall_terms (term, item_row_id, field, phrase, need) VALUES (?, ?, ?, ?, ?)",
                         sorted(rows))


def index_texts(conn: sqlite3.Connection) -> set[tuple[str, int, int, int, int | None]]:
    """Every posting of the current index as (text, field, item, phrase, need)."""
    return set(map(tuple, conn.execute("SELECT d.term, p.field, p.item_row_id, p.phrase, p.need FROM recall_postings p"
                            " JOIN recall_dict d ON d.id = p.term_id").fetchall()))


def fresh_index_texts(conn: sqlite3.Connection) -> set[tuple[str, int, int, int, int | None]]:
    """What the current writer posts for the store's active items (from their own fields)."""
    out: set[tuple[str, int, int, int, int | None]] = set()
    for r in conn.execute("SELECT row_id, subject, aliases, keywords, statement, content FROM memory_items"
                          " WHERE status = 'active'"):
        for text, field, phrase, need in postings.item_postings(r[1], json.loads(r[2]), json.loads(r[3]), r[4], r[5]):
            out.add((text, field, r[0], phrase, need))
    return out


def item_postings_consistent(conn: sqlite3.Connection) -> bool:
    """Every item's packed record names exactly its postings' (term ID, field) pairs."""
    recorded: set[tuple[int, int, int]] = set()
    for row_id, blob in conn.execute("SELECT item_row_id, postings FROM recall_item_postings"):
        recorded |= {(row_id, code >> postings.FIELD_BITS, code & 7) for code in postings.unpack(blob)}
    actual = set(map(tuple, conn.execute("SELECT DISTINCT item_row_id, term_id, field FROM recall_postings").fetchall()))
    return recorded == actual
