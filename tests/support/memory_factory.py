"""Realistic Memory data for tests, written through the store API where one exists and plain SQL
where none does yet (semantic items are normally created by the consolidation pipeline).

`add_item` writes, in one `BEGIN IMMEDIATE` transaction, what a committed consolidation leaves behind:
an accepted candidate, its sources, an item revision (superseding the previous active revision of the
same logical ID when `revision > 1`), the `item_candidates` link and the item's recall index postings (`item_writes.index_terms`).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass

from autopatch_tui.core import constants as C
from autopatch_tui.core.ids import new_id
from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.memory.item_writes import index_terms
from autopatch_tui.core.memory.items import ItemFields
from autopatch_tui.core.memory.sqlite import write_txn
from autopatch_tui.core.memory.turns import TurnHandle


@dataclass(frozen=True)
class CreatedItem:
    logical_id: str
    item_id: str  # the revision row's own ID
    row_id: int
    candidate_id: str
    identity_key: str


def identity_key(kind: str, subject: str, *, thread_id: str | None = None,
                 applies_to_paths: Sequence[str] = ()) -> str:
    scope = f"thread:{thread_id}" if kind == "discussion_context" else "project"
    return f"{scope}|{subject.strip().lower()}|{','.join(sorted(applies_to_paths))}"


def add_item(
    conn: sqlite3.Connection,
    *,
    kind: str = "project_decision",
    subject: str,
    statement: str,
    content: str | None = None,
    strength: str = "hard",
    origin: str = "explicit",
    recall_mode: str = "on_match",
    applies_to_paths: Sequence[str] = (),
    aliases: Sequence[str] = (),
    keywords: Sequence[str] = (),
    thread_id: str | None = None,
    sources: Sequence[tuple[str, str, str]] = (),
    status: str = "active",
    logical_id: str | None = None,
    revision: int = 1,
    now: float | None = None,
) -> CreatedItem:
    """Insert one item revision with its provenance. `sources` = [(turn_id, role, quote), ...]."""
    assert kind in C.ITEM_KINDS and status in C.ITEM_STATUSES
    if kind == "discussion_context" and thread_id is None:
        thread_id = conn.execute("SELECT id FROM threads WHERE status = 'active'").fetchone()[0]
    if kind != "discussion_context":
        thread_id = None
    now = time.time() if now is None else now
    content = statement if content is None else content
    logical_id = logical_id or new_id("mem")
    item_id = new_id("item")
    cand_id = new_id("cand")
    key = identity_key(kind, subject, thread_id=thread_id, applies_to_paths=applies_to_paths)
    paths_j, aliases_j, keywords_j = (json.dumps(list(v), ensure_ascii=False)
                                      for v in (applies_to_paths, aliases, keywords))
    with write_txn(conn):
        conn.execute(
            "INSERT INTO memory_candidates (id, thread_id, status, kind, subject, statement, content, strength,"
            " origin, recall_mode, applies_to_paths, aliases, keywords, created_at)"
            " VALUES (?, ?, 'accepted', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (cand_id, thread_id, kind, subject, statement, content, strength, origin, recall_mode,
             paths_j, aliases_j, keywords_j, now),
        )
        for ordinal, (turn_id, role, quote) in enumerate(sources):
            conn.execute(
                "INSERT INTO candidate_sources (candidate_id, ordinal, turn_id, role, quote) VALUES (?, ?, ?, ?, ?)",
                (cand_id, ordinal, turn_id, role, quote),
            )
        if status == "active" and revision > 1:
            conn.execute(
                "UPDATE memory_items SET status = 'superseded', replaced_by = ?, updated_at = ?"
                " WHERE logical_id = ? AND status = 'active'",
                (item_id, now, logical_id),
            )
        cur = conn.execute(
            "INSERT INTO memory_items (id, logical_id, revision, status, kind, subject, statement, content,"
            " strength, origin, recall_mode, applies_to_paths, aliases, keywords, thread_id, identity_key,"
            " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (item_id, logical_id, revision, status, kind, subject, statement, content, strength, origin,
             recall_mode, paths_j, aliases_j, keywords_j, thread_id, key, now, now),
        )
        row_id = int(cur.lastrowid)
        conn.execute("INSERT INTO item_candidates (item_row_id, candidate_id) VALUES (?, ?)", (row_id, cand_id))
        if status == "active":  # the recall index, as the Store's writer posts it
            index_terms(conn, row_id, ItemFields(kind, subject, statement, content, strength, origin, recall_mode,
                                                 tuple(applies_to_paths), tuple(aliases), tuple(keywords), thread_id))
        conn.execute("UPDATE memory_meta SET data_version = data_version + 1 WHERE id = 1")
    return CreatedItem(logical_id, item_id, row_id, cand_id, key)


def add_turns(manager: MemoryManager, n: int, *, prefix: str = "turn", intent: str = "general_chat",
              complete: bool = True) -> list[TurnHandle]:
    """`n` ordinary turns on the active thread (begin + complete unless `complete=False`)."""
    handles = []
    for i in range(n):
        h = manager.begin_turn(f"{prefix} {i}: how does module {i} work?", intent=intent)
        if complete:
            manager.complete_turn(h, f"{prefix} {i}: module {i} parses the config.")
        handles.append(h)
    return handles
