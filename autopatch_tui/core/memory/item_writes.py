"""Writing item revisions: Store-owned logical IDs, the identity invariant, and the recall term
index. Identity is checked against the complete active set through the unique index on
`identity_key` (one B-tree lookup), never by scanning items."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable

from autopatch_tui.core.errors import MemoryContractError
from autopatch_tui.core.ids import new_id
from autopatch_tui.core.memory import change_journal
from autopatch_tui.core.memory.items import ItemFields
from autopatch_tui.core.recall import layout_upgrade, postings
from autopatch_tui.core.recall.paths import normalize_path
from autopatch_tui.core.recall.terms import normalize_phrase

MAX_RECALL_PHRASES = 16


def identity_key(kind: str, subject: str, applies_to_paths: Iterable[str], thread_id: str | None) -> str:
    """Project preferences and decisions share one identity space (they may share a revision
    chain); a discussion is scoped to its thread."""
    scope = f"thread:{thread_id}" if kind == "discussion_context" else "project"
    paths = sorted({normalize_path(p) for p in applies_to_paths} - {""})
    return f"{scope}|{normalize_phrase(subject)}|{','.join(paths)}"


def dedupe_phrases(*groups: Iterable[str], cap: int = MAX_RECALL_PHRASES) -> tuple[str, ...]:
    """Union of phrase lists, first spelling wins, compared by normalized form."""
    seen: set[str] = set()
    out: list[str] = []
    for group in groups:
        for phrase in group:
            norm = normalize_phrase(phrase)
            if not norm or norm in seen:
                continue
            seen.add(norm)
            out.append(phrase.strip())
            if len(out) == cap:
                return tuple(out)
    return tuple(out)


def active_row_by_identity(conn: sqlite3.Connection, key: str) -> sqlite3.Row | None:
    return conn.execute(
        "SELECT row_id, logical_id FROM memory_items WHERE identity_key = ? AND status = 'active'", (key,)
    ).fetchone()


def index_terms(conn: sqlite3.Connection, row_id: int, f: ItemFields) -> None:
    """Inside a write txn: post an active revision to the recall index (`recall/postings.py`), in
    the layout(s) the store holds (`recall/layout_upgrade.py`)."""
    layout_upgrade.index_item(conn, row_id,
                              postings.item_postings(f.subject, f.aliases, f.keywords, f.statement, f.content))


def unindex(conn: sqlite3.Connection, row_id: int) -> None:
    """Inside a write txn: a revision that left `active` leaves the recall index."""
    layout_upgrade.unindex_item(conn, row_id)


def insert_revision(conn: sqlite3.Connection, f: ItemFields, *, logical_id: str | None, revision: int,
                    now: float, origin_store: str | None = None) -> tuple[int, str]:
    """Inside a write txn: insert an active revision and index it. Raises MemoryContractError when
    another active item already holds the identity. Returns (row_id, logical_id)."""
    key = identity_key(f.kind, f.subject, f.applies_to_paths, f.thread_id)
    holder = active_row_by_identity(conn, key)
    if holder is not None and holder["logical_id"] != logical_id:
        raise MemoryContractError("duplicate_identity", "an active item already has this subject and applicability")
    logical_id = logical_id or new_id("mem")
    cur = conn.execute(
        "INSERT INTO memory_items (id, logical_id, revision, status, kind, subject, statement, content, strength,"
        " origin, recall_mode, applies_to_paths, aliases, keywords, thread_id, identity_key, origin_store,"
        " created_at, updated_at) VALUES (?, ?, ?, 'active', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (new_id("rev"), logical_id, revision, f.kind, f.subject, f.statement, f.content, f.strength, f.origin,
         f.recall_mode, json.dumps(list(f.applies_to_paths), ensure_ascii=False),
         json.dumps(list(f.aliases), ensure_ascii=False), json.dumps(list(f.keywords), ensure_ascii=False),
         f.thread_id if f.kind == "discussion_context" else None, key, origin_store, now, now),
    )
    row_id = int(cur.lastrowid)
    index_terms(conn, row_id, f)
    return row_id, logical_id


def retire_revision(conn: sqlite3.Connection, row_id: int, *, status: str, replaced_by: str | None, now: float) -> None:
    """Inside a write txn: an active revision becomes superseded (or forgotten) and leaves recall."""
    cur = conn.execute(
        "UPDATE memory_items SET status = ?, replaced_by = ?, updated_at = ? WHERE row_id = ? AND status = 'active'",
        (status, replaced_by, now, row_id),
    )
    if cur.rowcount:
        change_journal.note_retired(conn, row_id)  # the incremental review summary's delta
    unindex(conn, row_id)


def link_candidates(conn: sqlite3.Connection, row_id: int, candidate_ids: Iterable[str]) -> None:
    conn.executemany(
        "INSERT OR IGNORE INTO item_candidates (item_row_id, candidate_id) VALUES (?, ?)",
        [(row_id, c) for c in candidate_ids],
    )
    conn.executemany("UPDATE memory_candidates SET status = 'accepted' WHERE id = ?", [(c,) for c in candidate_ids])
