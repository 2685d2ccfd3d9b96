"""The recall index (`schema.RECALL_DDL`): what an active item revision posts, how it enters and
leaves the index, and how a text becomes its term ID.

An item revision posts, all derived from its own fields (docs/recall.md, "The index"):

- each term of its subject, of each alias, keyword and check ID: `(term, field, phrase number,
  need)`, where need is the number of terms of that phrase;
- each stored phrase's key (`phrase_index.phrase_key`: the phrase's terms, in order, behind a
  control character no term can hold) with the same `(field, phrase number, need)`: a query that
  writes the phrase out finds it by one seek, however common its words;
- each content term (statement and content) once, in field `content`, phrase 0, need NULL (the
  content's own rule is "two distinct terms", `matching`).

A field is stored as its rank (`constants.RECALL_FIELDS`: 1 content … 5 check ID), so the strongest
field of a match is `max(field)`, and every text as an integer from `recall_dict`: a posting is a
few bytes. IDs are given out from `recall_meta.last_term_id` and never reused; a dictionary entry
outlives its postings (only `memory clear` empties the dictionary), so an ID always means one text.

Each indexed item also has one `recall_item_postings` row: its `(term ID, field)` pairs, packed
(`pack`). Taking the item out reads that row and deletes by primary-key seeks, so removal needs no
index on the item and never depends on tokenizing the item again.

Everything here runs inside the caller's write transaction. Readers go through
`layout_upgrade.reading`, which also serves a store whose index is still in the first layout.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from autopatch_tui.core.constants import RECALL_FIELDS
from autopatch_tui.core.errors import MemorySchemaError
from autopatch_tui.core.memory.schema import MAX_TERM_ID
from autopatch_tui.core.recall.phrase_index import item_phrases, phrase_key
from autopatch_tui.core.recall.terms import content_terms

log = logging.getLogger(__name__)

FIELD = {name: rank for rank, name in enumerate(RECALL_FIELDS, start=1)}  # field name -> stored code
CONTENT = FIELD["content"]
FIELD_BITS = 3  # a pair (term ID, field) packs as term_id << FIELD_BITS | field
assert max(FIELD.values()) < 1 << FIELD_BITS

Posting = tuple[str, int, int, "int | None"]  # (text, field, phrase, need)


@dataclass(frozen=True)
class Source:
    """Where readers find the postings: the table (or, for a store still in the first layout, a
    read-only view over it) and how a text maps to the ID it is posted under."""

    table: str
    text_ids: bool = False  # the view posts the texts themselves

    def ids(self, conn: sqlite3.Connection, texts: Iterable[str]) -> dict[str, int | str]:
        """The ID of each text that has one (a text never indexed has none: it posts nothing)."""
        wanted = list(dict.fromkeys(texts))
        if self.text_ids or not wanted:
            return {t: t for t in wanted}
        return dict(conn.execute(
            "SELECT d.term, d.id FROM json_each(?) AS j CROSS JOIN main.recall_dict AS d ON d.term = j.value",
            (json.dumps(wanted, ensure_ascii=False),)).fetchall())


INDEX = Source("main.recall_postings")  # qualified: a store attached beside it (a merge) is never read


# --------------------------------------------------------------------------- what an item posts


def item_postings(subject: str, aliases: Iterable[str], keywords: Iterable[str], statement: str,
                  content: str) -> list[Posting]:
    """Every posting of an item revision, in a fixed order (texts, not yet IDs)."""
    rows: list[Posting] = []
    for name, number, terms in item_phrases(subject, aliases, keywords):
        if not terms:  # a phrase without terms is never indexed (it would match everything)
            continue
        field, need = FIELD[name], len(terms)
        rows.extend((t, field, number, need) for t in terms)
        rows.append((phrase_key(terms), field, number, need))
    rows.extend((t, CONTENT, 0, None) for t in content_terms(f"{statement}\n{content}"))
    return rows


# --------------------------------------------------------------------------- the packed pairs of an item


def pack(codes: Iterable[int]) -> bytes:
    """Distinct non-negative integers, ascending, as LEB128 varints of their gaps."""
    out = bytearray()
    prev = 0
    for code in sorted(set(codes)):
        gap = code - prev
        prev = code
        while gap >= 0x80:
            out.append(gap & 0x7F | 0x80)
            gap >>= 7
        out.append(gap)
    return bytes(out)


MAX_RECORD_CODES = 1 << 16  # far above what one item posts; a longer record is taken as damage
_VALUE_LIMIT = 1 << 63  # SQLite's integers: a pair never comes near (term IDs stay below 2^40)


def unpack(blob: bytes) -> list[int]:
    """The integers `pack` wrote. Raises ValueError for bytes it cannot have written: a value or
    total of 2^63 or more, more than MAX_RECORD_CODES values, a repeat, a cut-off varint."""
    if len(blob) > MAX_RECORD_CODES * 9:
        raise ValueError("the packed record is too long")
    out: list[int] = []
    prev = value = shift = 0
    for byte in blob:
        value |= (byte & 0x7F) << shift
        if byte & 0x80:
            shift += 7
            if shift > 56:  # a tenth byte: 63 bits is the most a value may have
                raise ValueError("a packed value is too long")
            continue
        if out and value == 0:
            raise ValueError("a packed value repeats")
        prev += value
        if prev >= _VALUE_LIMIT:
            raise ValueError("a packed value is out of range")
        if len(out) == MAX_RECORD_CODES:
            raise ValueError("the packed record holds too many values")
        out.append(prev)
        value = shift = 0
    if shift:
        raise ValueError("the packed values are cut short")
    return out


# --------------------------------------------------------------------------- writing


def _last_term_id(conn: sqlite3.Connection) -> int:
    """The highest term ID given out: the counter, or a posting's ID above it (a counter set back by
    damage must not give an ID twice; `health` checks the dictionary against the counter)."""
    counter, top = conn.execute("SELECT (SELECT last_term_id FROM main.recall_meta WHERE id = 1),"
                                " (SELECT max(term_id) FROM main.recall_postings)").fetchone()
    if counter is None:  # the counter row is gone (only damage does that): the dictionary says what was given
        counter = conn.execute("SELECT coalesce(max(id), 0) FROM main.recall_dict").fetchone()[0]
    if not isinstance(counter, int) or not isinstance(top, int | None):  # the CHECKs keep these out
        raise MemorySchemaError("the recall index's term ID counter is damaged")
    return max(counter, top or 0)


def reserve_ids(conn: sqlite3.Connection, count: int) -> int:
    """Inside a write txn: give out `count` new term IDs. Returns the last ID given before them (the
    new ones are that + 1 … that + count)."""
    last = _last_term_id(conn)
    if last + count > MAX_TERM_ID:
        raise MemorySchemaError("the recall index's term IDs are used up (its counter is damaged)")
    conn.execute("INSERT OR REPLACE INTO main.recall_meta (id, last_term_id) VALUES (1, ?)", (last + count,))
    return last


def add_texts(conn: sqlite3.Connection, new_texts: str, params: Sequence[object] = ()) -> int:
    """Inside a write txn: give IDs, in text order, to the texts the query `new_texts` selects (one
    column, distinct, none of them in the dictionary yet). Returns how many (the rebuild's bulk path)."""
    last = _last_term_id(conn)
    try:
        conn.execute(f"WITH t (term) AS ({new_texts}) INSERT INTO main.recall_dict (term, id)"
                     " SELECT term, ? + row_number() OVER (ORDER BY term) FROM t", (*params, last))
    except sqlite3.IntegrityError as exc:  # above MAX_TERM_ID: only a damaged counter gets there
        raise MemorySchemaError("the recall index's term IDs are used up (its counter is damaged)") from exc
    added = int(conn.execute("SELECT changes()").fetchone()[0])  # (a WITH statement has no rowcount)
    if added:
        conn.execute("INSERT OR REPLACE INTO main.recall_meta (id, last_term_id) VALUES (1, ?)", (last + added,))
    return added


def assign_ids(conn: sqlite3.Connection, texts: Iterable[str]) -> dict[str, int]:
    """Inside a write txn: the ID of every text, new ones given out for texts never seen."""
    wanted = list(dict.fromkeys(texts))
    ids: dict[str, int] = INDEX.ids(conn, wanted)  # type: ignore[assignment]
    new = [t for t in wanted if t not in ids]
    if new:
        last = reserve_ids(conn, len(new))
        fresh = {t: last + n for n, t in enumerate(new, start=1)}
        conn.executemany("INSERT INTO main.recall_dict (term, id) VALUES (?, ?)", fresh.items())
        ids.update(fresh)
    return ids


def index_item(conn: sqlite3.Connection, row_id: int, postings: list[Posting]) -> None:
    """Inside a write txn: post an item revision (`item_postings`) and record its pairs."""
    ids = assign_ids(conn, (p[0] for p in postings))
    rows = [(ids[text], field, row_id, phrase, need) for text, field, phrase, need in postings]
    conn.executemany("INSERT OR IGNORE INTO main.recall_postings (term_id, field, item_row_id, phrase, need)"
                     " VALUES (?, ?, ?, ?, ?)", rows)
    conn.execute("INSERT OR REPLACE INTO main.recall_item_postings (item_row_id, postings) VALUES (?, ?)",
                 (row_id, pack(term_id << FIELD_BITS | field for term_id, field, *_ in rows)))


def unindex_item(conn: sqlite3.Connection, row_id: int, *, known: Collection[int] | None = None) -> None:
    """Inside a write txn: take every posting of an item out (its revision left `active`).

    `known`: while the index is being rebuilt (`layout_upgrade`), the item's pairs as the first
    layout holds them; an item the rebuild has not reached has no record, and no postings but those."""
    row = conn.execute("SELECT postings FROM main.recall_item_postings WHERE item_row_id = ?", (row_id,)).fetchone()
    codes: list[int] | None = [] if row is None and known is not None else None
    if row is not None and isinstance(row[0], bytes):
        try:
            codes = unpack(row[0])
        except ValueError:
            codes = None
    if codes is None:
        # no readable record of what it posted (damage, or an item written around the index):
        # one scan of the postings finds every row of the item; nothing is left behind
        log.warning("recall index: an item's postings record is missing or unreadable; scanning")
        conn.execute("DELETE FROM main.recall_postings WHERE item_row_id = ?", (row_id,))
    else:
        mask = (1 << FIELD_BITS) - 1
        conn.executemany("DELETE FROM main.recall_postings WHERE term_id = ? AND field = ? AND item_row_id = ?",
                         [(code >> FIELD_BITS, code & mask, row_id) for code in sorted({*codes, *(known or ())})])
    conn.execute("DELETE FROM main.recall_item_postings WHERE item_row_id = ?", (row_id,))
