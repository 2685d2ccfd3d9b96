"""`consolidation.related_items`: the candidate's identity holder first, then items sharing
subject/alias/keyword/check-ID terms — most shared first, newest first — each term reading only its
newest MAX_ROWS_PER_TERM index rows, and only active items."""

from __future__ import annotations

import pytest

from autopatch_tui.core.memory.sqlite import write_txn
from autopatch_tui.core.pipeline import consolidation
from autopatch_tui.core.pipeline.consolidation import Candidate, related_items
from tests.support.recall_seed import seed_item


def candidate(subject: str, *, keywords: tuple[str, ...] = (), aliases: tuple[str, ...] = ()) -> Candidate:
    return Candidate("cand-1", None, {"kind": "project_decision", "subject": subject, "statement": "s",
                                      "content": "", "strength": "hard", "origin": "explicit",
                                      "recall_mode": "on_match", "applies_to_paths": [], "aliases": list(aliases),
                                      "keywords": list(keywords)}, [])


def subjects(rows) -> list[str]:
    return [r["subject"] for r in rows]


def test_holder_first_then_most_shared_then_newest(manager) -> None:
    conn = manager.store.conn()
    for subject in ("retry policy",  # shares "retry" only (older)
                    "retry budget",  # shares "retry" only (newer)
                    "retry backoff jitter",  # shares "retry" and "backoff"
                    "cache sizing"):  # shares nothing
        seed_item(conn, subject=subject, statement=f"About {subject}.")
    holder = seed_item(conn, subject="network backoff", statement="The candidate's identity holder.")
    rows = related_items(conn, [candidate("network backoff", keywords=("retry",))])
    assert subjects(rows) == ["network backoff", "retry backoff jitter", "retry budget", "retry policy"]
    assert rows[0]["logical_id"] == holder.logical_id
    assert related_items(conn, [candidate("network backoff", keywords=("retry",))], limit=2) == rows[:2]


def test_each_term_reads_only_its_newest_rows_and_only_active_items_return(manager,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    conn = manager.store.conn()
    alpha, beta, gamma = (seed_item(conn, subject=f"parser {n}", statement=f"Parser {n}.")
                          for n in ("alpha", "beta", "gamma"))
    monkeypatch.setattr(consolidation, "MAX_ROWS_PER_TERM", 2)
    assert subjects(related_items(conn, [candidate("parser")])) == ["parser gamma", "parser beta"]
    manager.forget(gamma.logical_id)  # its index rows go with it: the older item comes into reach
    assert subjects(related_items(conn, [candidate("parser")])) == ["parser beta", "parser alpha"]
    with write_txn(conn):  # a row that is not active is never returned, even if index rows remain
        conn.execute("UPDATE memory_items SET status = 'superseded' WHERE row_id = ?", (beta.row_id,))
    assert subjects(related_items(conn, [candidate("parser")])) == ["parser alpha"]
    assert alpha.logical_id == related_items(conn, [candidate("parser")])[0]["logical_id"]
