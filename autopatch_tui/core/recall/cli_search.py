"""`memory search` outside an agent request: the one deterministic recall the CLI command and the
Memory browser's search box share. A fresh `RecallSession` bound to the active thread and the
intent's policy, exactly as an agent request's `memory_search` would see it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

from autopatch_tui.core.memory import turns as turn_ops
from autopatch_tui.core.recall.query import RecallQuery
from autopatch_tui.core.recall.session import RecallSession

if TYPE_CHECKING:
    from autopatch_tui.core.manager import MemoryManager


def search_memory(manager: MemoryManager, query: str, intent: str = "general_chat",
                  paths: Iterable[str] = ()) -> list[dict[str, str]]:
    """`[{"id", "kind", "subject", "statement", "match_type"}]`, best first (at most 8). Raises
    `RecallLimitError` for a query without searchable terms, `MemoryDegradedError` when degraded."""
    manager.require_readable()  # a read-only store answers searches too
    # a search only reads: a store whose recall index is still in its first layout (or being rebuilt)
    # is searched through `layout_upgrade.reading`; only the app's Memory worker rebuilds it
    conn_factory = manager.store.read_conn
    thread_id = turn_ops.active_thread_id(conn_factory())
    policy = manager.review.policy(intent, thread_id, conn_factory())  # approval mode hides unreviewed items
    session = RecallSession(conn_factory, RecallQuery(intent, "", tuple(paths)), policy)
    try:
        return session.search(query)
    finally:
        session.close()


def held_back_matches(manager: MemoryManager, query: str, shown: Iterable[str], intent: str = "general_chat",
                      paths: Iterable[str] = ()) -> int:
    """In review approval mode: how many items awaiting review also match `query` (they are not
    recalled until kept), among the best matches a search without the review filter finds. 0 in
    `auto` mode."""
    if manager.review.approval != "review":
        return 0
    conn_factory = manager.store.read_conn
    thread_id = turn_ops.active_thread_id(conn_factory())
    policy = replace(manager.review.policy(intent, thread_id, conn_factory()), kept=None)
    session = RecallSession(conn_factory, RecallQuery(intent, "", tuple(paths)), policy)
    try:
        everything = session.search(query)
    finally:
        session.close()
    seen = set(shown)
    return sum(1 for r in everything if r["id"] not in seen)
