"""Threads and turns: the RAW user text before the model call, the shown answer after it.

Every function takes an open connection and does its own `BEGIN IMMEDIATE` transaction. Nothing
but RAW user text and the final shown answer is stored for a turn."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from autopatch_tui.core import constants as C
from autopatch_tui.core.errors import (
    MemoryFencedError,
    MemoryNotFoundError,
    MemorySchemaError,
    StoreRetiredError,
    TurnLeaseLostError,
    UsageError,
)
from autopatch_tui.core.ids import new_id
from autopatch_tui.core.memory.sqlite import write_txn


@dataclass(frozen=True)
class TurnHandle:
    """A started request's binding: it keeps its thread even if `/new` runs meanwhile."""

    turn_id: str
    thread_id: str
    sequence: int
    intent: str
    scope_paths: tuple[str, ...]  # complete, as the caller gave them
    stored_scope_paths: tuple[str, ...]  # the bounded projection that was persisted


def bounded_scope(scope_paths: Sequence[str]) -> list[str]:
    """The first MAX_SCOPE_PATHS paths in input order (the persisted and extraction projection)."""
    return [str(p) for p in list(scope_paths)[: C.MAX_SCOPE_PATHS]]


def ensure_writable(conn: sqlite3.Connection) -> sqlite3.Row:
    """Inside a transaction: the meta row, or a typed error when it is gone or the store is retired."""
    meta = conn.execute("SELECT generation, store_name, retired_into FROM memory_meta WHERE id = 1").fetchone()
    if meta is None:
        raise MemorySchemaError("the memory_meta singleton is missing")
    if meta["retired_into"]:
        raise StoreRetiredError(meta["store_name"], meta["retired_into"])
    return meta


def active_thread_id(conn: sqlite3.Connection) -> str:
    rows = conn.execute("SELECT id FROM threads WHERE status = 'active'").fetchall()
    if len(rows) != 1:
        raise MemorySchemaError(f"expected exactly one active thread, found {len(rows)}")
    return rows[0]["id"]


def begin_turn(
    conn: sqlite3.Connection,
    *,
    user_text: str,
    intent: str,
    owner: str,
    now: float,
    lease_seconds: float,
    scope_paths: Sequence[str] = (),
    evidence_keys: Sequence[str] = (),
) -> TurnHandle:
    """Persist the RAW user turn (state `open`) on the active thread, before any model call."""
    if intent not in C.INTENTS:
        raise UsageError(f"unknown intent {intent!r}; expected one of {', '.join(C.INTENTS)}")
    if not isinstance(user_text, str):
        raise UsageError("user text must be a string")
    stored = bounded_scope(scope_paths)
    keys = [str(k) for k in evidence_keys][:C.MAX_EVIDENCE_KEYS]
    turn_id = new_id("turn")
    with write_txn(conn):
        ensure_writable(conn)
        thread_id = active_thread_id(conn)
        seq = conn.execute(
            "SELECT coalesce(max(sequence), 0) + 1 FROM turns WHERE thread_id = ?", (thread_id,)
        ).fetchone()[0]
        conn.execute(
            "INSERT INTO turns (id, thread_id, sequence, intent, state, user_text, scope_paths, evidence_keys,"
            " owner, lease_expires_at, created_at) VALUES (?, ?, ?, ?, 'open', ?, ?, ?, ?, ?, ?)",
            (turn_id, thread_id, seq, intent, user_text, json.dumps(stored, ensure_ascii=False),
             json.dumps(keys, ensure_ascii=False), owner, now + lease_seconds, now),
        )
    return TurnHandle(turn_id, thread_id, seq, intent, tuple(str(p) for p in scope_paths), tuple(stored))


def _enqueue_extraction(conn: sqlite3.Connection, turn: sqlite3.Row, now: float) -> None:
    conn.execute(
        "INSERT OR IGNORE INTO memory_jobs (id, kind, status, thread_id, turn_id, sequence, available_at,"
        " created_at, updated_at) VALUES (?, 'extraction', 'pending', ?, ?, ?, ?, ?, ?)",
        (new_id("job"), turn["thread_id"], turn["id"], turn["sequence"], now, now, now),
    )


def _end_turn(conn: sqlite3.Connection, turn_id: str, state: str, assistant_text: str | None, now: float) -> None:
    with write_txn(conn):
        ensure_writable(conn)
        turn = conn.execute("SELECT id, thread_id, sequence, state FROM turns WHERE id = ?", (turn_id,)).fetchone()
        if turn is None:
            raise MemoryFencedError("the turn no longer exists (Memory was cleared or merged)")
        if turn["state"] == "interrupted":
            job = conn.execute("SELECT attempts FROM memory_jobs WHERE turn_id = ?", (turn_id,)).fetchone()
            if job is not None and job["attempts"] > 0:
                raise TurnLeaseLostError(
                    f"turn {turn_id}: its lease ran out while the request was still running, so another Memory"
                    " process recovered it as interrupted and already processed it; this answer was not saved")
        elif turn["state"] != "open":
            raise MemoryFencedError(f"the turn already ended ({turn['state']})")
        conn.execute(
            "UPDATE turns SET state = ?, assistant_text = ?, ended_at = ?, owner = NULL, lease_expires_at = NULL"
            " WHERE id = ?",
            (state, assistant_text, now, turn_id),
        )
        _enqueue_extraction(conn, turn, now)


def complete_turn(conn: sqlite3.Connection, turn_id: str, assistant_text: str, *, now: float) -> None:
    """Store the final answer exactly as the user saw it, and queue the turn's extraction job."""
    if not isinstance(assistant_text, str):
        raise UsageError("assistant text must be a string")
    _end_turn(conn, turn_id, "completed", assistant_text, now)


def fail_turn(conn: sqlite3.Connection, turn_id: str, *, now: float, assistant_text: str | None = None) -> None:
    """The model call failed: keep the user text, mark `failed`, queue extraction."""
    _end_turn(conn, turn_id, "failed", assistant_text, now)


def heartbeat_open_turns(conn: sqlite3.Connection, owner: str, *, now: float, lease_seconds: float) -> int:
    """Renew the leases of `owner`'s open turns. Returns how many were renewed."""
    with write_txn(conn):
        cur = conn.execute(
            "UPDATE turns SET lease_expires_at = ? WHERE state = 'open' AND owner = ?", (now + lease_seconds, owner)
        )
        return cur.rowcount


def renew_turn(conn: sqlite3.Connection, turn_id: str, owner: str, *, now: float, lease_seconds: float) -> bool:
    """Renew one open turn's lease (only this turn, only while `owner` holds it). False when the
    turn is no longer open under `owner` (recovered as interrupted, ended, cleared)."""
    with write_txn(conn):
        cur = conn.execute("UPDATE turns SET lease_expires_at = ? WHERE id = ? AND state = 'open' AND owner = ?",
                           (now + lease_seconds, turn_id, owner))
        return cur.rowcount == 1


def recover_expired_turns(conn: sqlite3.Connection, *, now: float) -> list[str]:
    """Open turns whose lease expired (their process died) become `interrupted` and get queued.
    Every open runs this: the write lock is taken only when such a turn exists (a read through the
    `turns_open` index first), so opening a store never waits for another process's writes."""
    expired = "SELECT 1 FROM turns WHERE state = 'open' AND lease_expires_at < ? LIMIT 1"
    if conn.execute(expired, (now,)).fetchone() is None:
        return []
    with write_txn(conn):
        rows = conn.execute(
            "SELECT id, thread_id, sequence FROM turns WHERE state = 'open' AND lease_expires_at < ?", (now,)
        ).fetchall()
        for turn in rows:
            conn.execute(
                "UPDATE turns SET state = 'interrupted', ended_at = ?, owner = NULL, lease_expires_at = NULL"
                " WHERE id = ?",
                (now, turn["id"]),
            )
            _enqueue_extraction(conn, turn, now)
    return [r["id"] for r in rows]


def new_thread(conn: sqlite3.Connection, *, now: float) -> tuple[str, str]:
    """Archive the active thread and create a new empty one, atomically. Returns (old, new)."""
    new = new_id("thr")
    with write_txn(conn):
        ensure_writable(conn)
        old = active_thread_id(conn)
        conn.execute("UPDATE threads SET status = 'archived', archived_at = ? WHERE id = ?", (now, old))
        conn.execute("INSERT INTO threads (id, status, created_at) VALUES (?, 'active', ?)", (new, now))
    return old, new


def get_turn(conn: sqlite3.Connection, turn_id: str) -> sqlite3.Row:
    row = conn.execute("SELECT * FROM turns WHERE id = ?", (turn_id,)).fetchone()
    if row is None:
        raise MemoryNotFoundError(f"no turn {turn_id}")
    return row


def set_evidence_keys(conn: sqlite3.Connection, turn_id: str, keys: Sequence[str]) -> None:
    """A repair workflow learns its evidence (`<scan id>:<finding id>`) after the RAW text was
    saved; only an open turn may change it. At most MAX_EVIDENCE_KEYS are kept, in order."""
    bounded = list(dict.fromkeys(str(k) for k in keys))[:C.MAX_EVIDENCE_KEYS]
    with write_txn(conn):
        cur = conn.execute("UPDATE turns SET evidence_keys = ? WHERE id = ? AND state = 'open'",
                           (json.dumps(bounded, ensure_ascii=False), turn_id))
        if cur.rowcount != 1:
            raise MemoryFencedError("the turn is no longer open")


def set_intent(conn: sqlite3.Connection, turn_id: str, intent: str) -> None:
    """Routing chose the intent after the RAW text was saved; only an open turn may change it."""
    if intent not in C.INTENTS:
        raise UsageError(f"unknown intent {intent!r}")
    with write_txn(conn):
        cur = conn.execute("UPDATE turns SET intent = ? WHERE id = ? AND state = 'open'", (intent, turn_id))
        if cur.rowcount != 1:
            raise MemoryFencedError("the turn is no longer open")
