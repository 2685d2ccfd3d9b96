"""The phrase index: derived rows in `recall_terms` that let recall find an item *named* by the query
(its subject, an alias, a keyword or a check ID written out in the query), however common the single
words of that phrase are.

Two kinds of rows, next to the ordinary term rows, in the same table (schema v4 is unchanged: no new
table, no new index, `user_version` stays 4; the rows are derived from the item and die with it):

- a **phrase key** row, `term = PHRASE_KEY + " ".join(phrase_terms(phrase))`, one per stored phrase,
  `(field, phrase, need)` as the phrase's term rows. A query looks keys up by exact B-tree seeks.
- a **phrase posting** row, `term = PHRASE_TERM + t`, one per term of a stored phrase: the phrase-only
  posting list of a term, so "items whose subject/alias/keyword has term t" is one range read that
  skips the (much longer) content postings (the consolidation related-items query uses it).

No query term can start with either prefix (the tokenizer never yields control characters).

Query side (`query_phrase_keys`): the query texts are tokenized like a stored phrase (index-side
terms: CJK runs give bigrams only, stopwords and single letters dropped, plurals folded) into a term
stream; every window of the stream, read from each start position until `MAX_PHRASE_TERMS` distinct
terms (duplicates inside a window are skipped, as `phrase_terms` skips them), gives one key. So a query
that contains a stored phrase produces exactly that phrase's key. The stream is capped
(`MAX_STREAM_TERMS` positions), so a query has at most `MAX_STREAM_TERMS * MAX_PHRASE_TERMS` keys.

A key carried by more than `PHRASE_KEY_ITEMS` phrases is *common*: it does not name anything, and it
is skipped (its posting count stops at `PHRASE_KEY_ITEMS + 1`), which keeps the evaluation bounded.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Iterable, Iterator

from autopatch_tui.core.errors import MemoryBusyError
from autopatch_tui.core.memory.sqlite import write_txn
from autopatch_tui.core.recall.terms import (
    MAX_PHRASE_TERMS,
    MAX_TERM_CHARS,
    STOPWORDS,
    _acceptable,
    _raw_terms,
    fold_plural,
    is_check_id,
    path_terms,
    phrase_terms,
)

log = logging.getLogger(__name__)

PHRASE_KEY = "\x1e"
PHRASE_TERM = "\x1f"
PHRASE_KEY_ITEMS = 32  # a phrase shared by more stored phrases than this names nothing
MAX_STREAM_TERMS = 64  # query positions that start a window
MAX_WINDOW_SPAN = 2 * MAX_PHRASE_TERMS  # raw positions one window may cover (duplicates included)
PHRASE_FIELDS = ("subject", "alias", "keyword", "check_id")


def phrase_key(terms: Iterable[str]) -> str:
    return PHRASE_KEY + " ".join(terms)


def phrase_rows(row_id: int, field: str, phrase_no: int, terms: list[str]) -> list[tuple[str, int, str, int, int]]:
    """The derived rows of one stored phrase (empty for a phrase without terms)."""
    if not terms:
        return []
    need = len(terms)
    rows = [(phrase_key(terms), row_id, field, phrase_no, need)]
    rows += [(PHRASE_TERM + t, row_id, field, phrase_no, need) for t in terms]
    return rows


def item_phrases(subject: str, aliases: Iterable[str], keywords: Iterable[str]) -> list[tuple[str, int, list[str]]]:
    """(field, phrase number, terms) of every stored phrase of an item, as `index_terms` numbers them."""
    out = [("subject", 0, phrase_terms(subject))]
    out += [("alias", n, phrase_terms(a)) for n, a in enumerate(aliases)]
    out += [("check_id" if is_check_id(k.strip()) else "keyword", n, phrase_terms(k)) for n, k in enumerate(keywords)]
    return out


# --------------------------------------------------------------------------- query side


def _stream(text: str) -> Iterator[str]:
    """Index-side terms of `text` in order, duplicates kept (what `phrase_terms` sees before dedup)."""
    for raw in _raw_terms(text, query=False):
        if not _acceptable(raw) or raw in STOPWORDS:
            continue
        term = fold_plural(raw)
        if term and len(term) <= MAX_TERM_CHARS:
            yield term


def _windows(stream: list[str], out: dict[str, None]) -> None:
    for start in range(len(stream)):
        window: list[str] = []
        seen: set[str] = set()
        for term in stream[start:start + MAX_WINDOW_SPAN]:
            if term in seen:
                continue
            seen.add(term)
            window.append(term)
            out[phrase_key(window)] = None
            if len(window) == MAX_PHRASE_TERMS:
                break


def query_phrase_keys(texts: Iterable[str], paths: Iterable[str] = ()) -> list[str]:
    """Phrase keys of the query texts (in priority order) and of its paths' query terms, distinct,
    ordered; at most `MAX_STREAM_TERMS` window starts in all."""
    out: dict[str, None] = {}
    budget = MAX_STREAM_TERMS
    streams: list[list[str]] = []
    for text in texts:
        if budget <= 0:
            break
        stream: list[str] = []
        for term in _stream(text):
            stream.append(term)
            if len(stream) >= budget:
                break
        budget -= len(stream)
        streams.append(stream)
    for p in paths:
        if budget <= 0:
            break
        stream = path_terms(p)[:budget]
        budget -= len(stream)
        streams.append(stream)
    for stream in streams:
        _windows(stream, out)
    return list(out)


# --------------------------------------------------------------------------- stores written before the index


def missing(conn: sqlite3.Connection) -> bool:
    """True when the store has active items but no phrase row at all (written by a release without
    the phrase index). One index seek each."""
    has_rows = conn.execute(
        "SELECT 1 FROM recall_terms WHERE term >= ? AND term < ? LIMIT 1", (PHRASE_KEY, chr(0x20))).fetchone()
    if has_rows:
        return False
    return conn.execute("SELECT 1 FROM memory_items WHERE status = 'active' LIMIT 1").fetchone() is not None


def backfill(conn: sqlite3.Connection) -> int:
    """Inside a write txn: add the phrase rows of every active item that has none. Returns the number
    of items indexed. Idempotent (INSERT OR IGNORE on the primary key)."""
    rows = conn.execute(
        "SELECT row_id, subject, aliases, keywords FROM memory_items m WHERE status = 'active' AND NOT EXISTS"
        " (SELECT 1 FROM recall_terms r WHERE r.item_row_id = m.row_id AND r.term >= ? AND r.term < ?)",
        (PHRASE_KEY, chr(0x20))).fetchall()
    for r in rows:
        derived: list[tuple[str, int, str, int, int]] = []
        for field, n, terms in item_phrases(r["subject"], json.loads(r["aliases"]), json.loads(r["keywords"])):
            derived += phrase_rows(r["row_id"], field, n, terms)
        conn.executemany(
            "INSERT OR IGNORE INTO recall_terms (term, item_row_id, field, phrase, need) VALUES (?, ?, ?, ?, ?)",
            derived)
    return len(rows)


def ensure(conn: sqlite3.Connection) -> int:
    """Backfill the phrase rows of a store written before the phrase index (one cheap check when
    nothing is missing). Returns the number of items indexed."""
    if not missing(conn):
        return 0
    try:
        with write_txn(conn):
            return backfill(conn)
    except MemoryBusyError:  # another process holds the write lock: the next open tries again
        log.warning("phrase index not backfilled: the store is busy")
        return 0
