"""FR-059's topic merge: after a merge, an imported item that holds no identity conflict but
overlaps one of the target's own items by subject is offered to organize as a *topic candidate*.

A topic candidate mirrors the imported active item X (same fields, a copy of X's provenance quotes,
as a merge's conflict candidate carries) and is linked to X's revision; that link is the only marker
(an ordinary pending candidate is never linked). An operation merging it into a target item may
keep the target's origin (`semantic_gate.allowed_origins`).
Consolidation then lets the model decide, with X (the candidate's identity holder) and the target's
overlapping items in the payload:
- `reject` or `revise X`: X stays (revised);
- `revise Y` / `supersede Y` / `create`: X is merged into the new revision — it is retired
  (`superseded`, `replaced_by` the new revision) and its provenance links move along
  (`consolidation.absorb_linked`).
A failed chunk suppresses the topic candidates and X stays active: nothing imported is lost.

Overlap: the two subjects share at least two terms, or every term of the shorter subject (so
"only in alpha" and "only in beta" do not overlap, "indentation" and "indentation style" do).
At most MAX_TOPIC_CANDIDATES are queued per merge (deterministic IDs: a re-run queues nothing twice)."""

from __future__ import annotations

import sqlite3

from autopatch_tui.core.ids import new_id
from autopatch_tui.core.memory.sqlite import write_txn
from autopatch_tui.core.recall import layout_upgrade, postings
from autopatch_tui.core.recall.terms import phrase_terms
from autopatch_tui.core.stores.merge import copy_item_sources

MAX_TOPIC_CANDIDATES = 96
MAX_SCANNED = 2000  # imported items looked at per merge
ROWS_PER_TERM = 200


def topic_job_id(source_name: str) -> str:
    return "job-topic-" + source_name.rsplit("-", 1)[-1]


def _subject_terms(conn: sqlite3.Connection, row_id: int) -> set[str]:
    """The subject's terms, as the recall index posts them."""
    row = conn.execute("SELECT subject FROM memory_items WHERE row_id = ?", (row_id,)).fetchone()
    return set(phrase_terms(row[0])) if row is not None else set()


def _overlaps(conn: sqlite3.Connection, row_id: int, source_name: str) -> bool:
    mine = _subject_terms(conn, row_id)
    if not mine:
        return False
    shared: dict[int, int] = {}
    subject = postings.FIELD["subject"]
    with layout_upgrade.reading(conn) as index:
        ids = index.ids(conn, sorted(mine))
        for term in sorted(mine):
            if term not in ids:
                continue
            for (other,) in conn.execute(
                    f"SELECT p.item_row_id FROM {index.table} AS p JOIN memory_items m ON m.row_id = p.item_row_id"
                    " WHERE p.term_id = ? AND p.field = ? AND p.item_row_id != ? AND m.status = 'active'"
                    " AND (m.origin_store IS NULL OR m.origin_store != ?) ORDER BY p.item_row_id DESC LIMIT ?",
                    (ids[term], subject, row_id, source_name, ROWS_PER_TERM)):
                shared[other] = shared.get(other, 0) + 1
    for other, n in shared.items():
        if n >= 2 or n >= min(len(mine), len(_subject_terms(conn, other))):
            return True
    return False


def queue_topic_candidates(conn: sqlite3.Connection, source_name: str, *, now: float) -> str | None:
    """Queue the imported items of `source_name` that overlap the target's own items by subject.
    Returns the topic job's ID, or None when nothing overlaps."""
    job = topic_job_id(source_name)
    with write_txn(conn):
        rows = conn.execute(
            "SELECT * FROM memory_items WHERE status = 'active' AND origin_store = ? ORDER BY row_id LIMIT ?",
            (source_name, MAX_SCANNED)).fetchall()
        picked = []
        for r in rows:
            cid = "cand-topic-" + r["id"].split("-", 1)[-1]
            if conn.execute("SELECT 1 FROM memory_candidates WHERE id = ?", (cid,)).fetchone():
                continue
            if _overlaps(conn, r["row_id"], source_name):
                picked.append((cid, r))
            if len(picked) == MAX_TOPIC_CANDIDATES:
                break
        if not picked:
            return None
        existing = conn.execute("SELECT status FROM memory_jobs WHERE id = ?", (job,)).fetchone()
        if existing is not None and existing["status"] != "pending":
            job = new_id("job")  # the first topic job already ran: these candidates get one of their own
        conn.execute("INSERT OR IGNORE INTO memory_jobs (id, kind, status, available_at, created_at, updated_at)"
                     " VALUES (?, 'consolidation', 'pending', ?, ?, ?)", (job, now, now, now))
        for cid, r in picked:
            conn.execute(
                "INSERT INTO memory_candidates (id, consolidation_job_id, thread_id, status, kind, subject, statement,"
                " content, strength, origin, recall_mode, applies_to_paths, aliases, keywords, origin_store,"
                " created_at) VALUES (?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (cid, job, r["thread_id"], r["kind"], r["subject"], r["statement"], r["content"], r["strength"],
                 r["origin"], r["recall_mode"], r["applies_to_paths"], r["aliases"], r["keywords"], source_name, now))
            copy_item_sources(conn, r["row_id"], cid, schema="main")  # before the link: X's own quotes only
            conn.execute("INSERT OR IGNORE INTO item_candidates (item_row_id, candidate_id) VALUES (?, ?)",
                         (r["row_id"], cid))
    return job
