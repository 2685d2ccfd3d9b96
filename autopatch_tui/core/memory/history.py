"""Read models for the thread history: threads with counts, a thread's turns (paged), text
search across turns, and a thread as Markdown. Reads only."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from autopatch_tui.core.bounded_json import loads_column
from autopatch_tui.core.clock import iso_utc
from autopatch_tui.core.errors import MemoryNotFoundError
from autopatch_tui.core.secrets import mask

MAX_PAGE = 500


@dataclass(frozen=True)
class ThreadInfo:
    id: str
    status: str
    created_at: str
    archived_at: str | None
    turns: int
    last_turn_at: str | None


@dataclass(frozen=True)
class TurnInfo:
    id: str
    thread_id: str
    sequence: int
    intent: str
    state: str
    user_text: str
    assistant_text: str
    scope_paths: tuple[str, ...]
    created_at: str
    memory_used: tuple = ()  # the Memory items that reached its answer (`memory_used.UsedItem`), when read


def _turn(row: sqlite3.Row) -> TurnInfo:
    """A turn for display or a thread's Markdown export: its texts with secrets masked (contracts §10;
    the store keeps the RAW turn as typed)."""
    return TurnInfo(row["id"], row["thread_id"], row["sequence"], row["intent"], row["state"], mask(row["user_text"]),
                    mask(row["assistant_text"] or ""), tuple(loads_column(row["scope_paths"], [])),
                    iso_utc(row["created_at"]))


def list_threads(conn: sqlite3.Connection) -> list[ThreadInfo]:
    rows = conn.execute(
        "SELECT t.id, t.status, t.created_at, t.archived_at,"
        " (SELECT count(*) FROM turns u WHERE u.thread_id = t.id) AS n,"
        " (SELECT max(created_at) FROM turns u WHERE u.thread_id = t.id) AS last"
        " FROM threads t ORDER BY (t.status = 'active') DESC, t.created_at DESC"
    ).fetchall()
    return [ThreadInfo(r["id"], r["status"], iso_utc(r["created_at"]),
                       iso_utc(r["archived_at"]) if r["archived_at"] else None, r["n"],
                       iso_utc(r["last"]) if r["last"] else None) for r in rows]


def thread_turns(conn: sqlite3.Connection, thread_id: str, *, offset: int = 0, limit: int = 100,
                 newest_first: bool = False) -> list[TurnInfo]:
    order = "DESC" if newest_first else "ASC"
    rows = conn.execute(
        f"SELECT * FROM turns WHERE thread_id = ? ORDER BY sequence {order} LIMIT ? OFFSET ?",
        (thread_id, min(limit, MAX_PAGE), offset),
    ).fetchall()
    return [_turn(r) for r in rows]


def recent_turns(conn: sqlite3.Connection, thread_id: str, limit: int = 30) -> list[TurnInfo]:
    return list(reversed(thread_turns(conn, thread_id, limit=limit, newest_first=True)))


def turns_before(conn: sqlite3.Connection, thread_id: str, sequence: int, limit: int) -> list[TurnInfo]:
    """Up to `limit` turns of the thread just before `sequence`, oldest first (the chat pages back)."""
    rows = conn.execute("SELECT * FROM turns WHERE thread_id = ? AND sequence < ? ORDER BY sequence DESC LIMIT ?",
                        (thread_id, sequence, min(limit, MAX_PAGE))).fetchall()
    return [_turn(r) for r in reversed(rows)]


def search_turns(conn: sqlite3.Connection, text: str, *, limit: int = 200) -> list[TurnInfo]:
    """Turns whose user or assistant text contains `text` (case-insensitive for ASCII), newest first."""
    like = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    rows = conn.execute(
        "SELECT * FROM turns WHERE user_text LIKE ? ESCAPE '\\' OR assistant_text LIKE ? ESCAPE '\\'"
        " ORDER BY created_at DESC LIMIT ?", (like, like, min(limit, MAX_PAGE))
    ).fetchall()
    return [_turn(r) for r in rows]


def get_turn_info(conn: sqlite3.Connection, turn_id: str) -> TurnInfo:
    row = conn.execute("SELECT * FROM turns WHERE id = ?", (turn_id,)).fetchone()
    if row is None:
        raise MemoryNotFoundError(f"no turn {turn_id}")
    return _turn(row)


def thread_markdown(conn: sqlite3.Connection, thread_id: str) -> str:
    thread = conn.execute("SELECT * FROM threads WHERE id = ?", (thread_id,)).fetchone()
    if thread is None:
        raise MemoryNotFoundError(f"no thread {thread_id}")
    lines = [f"# Thread {thread_id}", "", f"Created {iso_utc(thread['created_at'])}, status {thread['status']}.", ""]
    for r in conn.execute("SELECT * FROM turns WHERE thread_id = ? ORDER BY sequence", (thread_id,)):
        t = _turn(r)
        lines += [f"## Turn {t.sequence} — {t.intent} ({t.state}, {t.created_at})", "", "**User**", "",
                  t.user_text, ""]
        if t.assistant_text:
            lines += ["**Assistant**", "", t.assistant_text, ""]
    return "\n".join(lines)
