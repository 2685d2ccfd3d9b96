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
from collections.abc import Iterable
from dataclasses import dataclass

from autopatch_tui.core.constants import RECALL_FIELDS
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


def unpack(blob: bytes) -> list[int]:
    """The integers `pack` wrote. Raises ValueError for bytes it cannot have written."""
    out: list[int] = []
    prev = value = shift = 0
    for byte in blob:
        value |= (byte & 0x7F) << shift
        if byte & 0x80:
            shift += 7
            if shift > 63:
                raise ValueError("a packed value is too long")
            continue
        if out and value == 0:
            raise ValueError("a packed value repeats")
        prev += value
        out.append(prev)
        value = shift = 0
    if shift:
        raise ValueError("the packed values are cut short")
    return out


# --------------------------------------------------------------------------- writing


def _last_term_id(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT last_term_id FROM main.recall_meta WHERE id = 1").fetchone()
    if row is not None:
        return int(row[0])
    # the counter row is gone (only damage does that): the dictionary itself says what was given out
    return int(conn.execute("SELECT coalesce(max(id), 0) FROM main.recall_dict").fetchone()[0])


def assign_ids(conn: sqlite3.Connection, texts: Iterable[str]) -> dict[str, int]:
    """Inside a write txn: the ID of every text, new ones given out for texts never seen."""
    wanted = list(dict.fromkeys(texts))
    ids: dict[str, int] = INDEX.ids(conn, wanted)  # type: ignore[assignment]
    new = [t for t in wanted if t not in ids]
    if new:
        last = _last_term_id(conn)
        fresh = {t: last + n for n, t in enumerate(new, start=1)}
        conn.executemany("INSERT INTO main.recall_dict (term, id) VALUES (?, ?)", fresh.items())
        conn.execute("INSERT OR REPLACE INTO main.recall_meta (id, last_term_id) VALUES (1, ?)", (last + len(new),))
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


def unindex_item(conn: sqlite3.Connection, row_id: int) -> None:
    """Inside a write txn: take every posting of an item out (its revision left `active`)."""
    row = conn.execute("SELECT postings FROM main.recall_item_postings WHERE item_row_id = ?", (row_id,)).fetchone()
    codes: list[int] | None = None
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
                         [(code >> FIELD_BITS, code & mask, row_id) for code in codes])
    conn.execute("DELETE FROM main.recall_item_postings WHERE item_row_id = ?", (row_id,))
