"""Helpers for the duplicate-store tests (tests/stores) and bench/merge.py: checkouts with their own
Memory store, realistic seeding (turns, items with provenance, pending jobs), services wired to the
stub model, merge-judge verdicts, and order-independent views of a store for comparisons.

Plain functions only; the fixtures live in tests/stores/conftest.py."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autopatch_tui.core.ids import new_id
from autopatch_tui.core.llm.client import LLMClient
from autopatch_tui.core.manager import MemoryManager, build_memory_model
from autopatch_tui.core.memory.item_writes import insert_revision, link_candidates
from autopatch_tui.core.memory.items import ItemFields, bump_data_version
from autopatch_tui.core.memory.sqlite import write_txn
from autopatch_tui.core.settings import Settings
from autopatch_tui.core.stores.service import StoreService
from tests.support.fixtures import make_git_repo

STORE_TABLES = ("threads", "turns", "memory_jobs", "memory_candidates", "candidate_sources", "memory_items",
                "item_candidates", "store_aliases", "audit_events")


# --------------------------------------------------------------------------- checkouts and stores


def checkout(base: Path, name: str, remote: str | None = None, *, git: bool = True) -> Path:
    """A checkout folder: a git repository (with `origin` = `remote` when given) or a plain folder."""
    if git:
        return make_git_repo(base / name, remote=remote)
    path = base / name
    path.mkdir(parents=True, exist_ok=True)
    return path.resolve()


def db_of(where: Path | MemoryManager) -> Path:
    if isinstance(where, MemoryManager):
        return where.paths.db
    return where if where.suffix == ".db" else where / ".autopatch-j" / "memory.db"


def store_files(db: Path) -> list[Path]:
    return [db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")]


def remove_store(db: Path) -> None:
    for p in store_files(db):
        p.unlink(missing_ok=True)


def copy_store_file(src_db: Path, dst_db: Path) -> Path:
    """Copy a closed store (its WAL checkpointed away) to `dst_db`."""
    dst_db.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src_db, dst_db)
    return dst_db


def ro(db: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    conn.row_factory = sqlite3.Row
    return conn


def rows(db: Path, sql: str, args: Sequence[Any] = ()) -> list[dict[str, Any]]:
    conn = ro(db)
    try:
        return [dict(r) for r in conn.execute(sql, tuple(args)).fetchall()]
    finally:
        conn.close()


def scalar(db: Path, sql: str, args: Sequence[Any] = ()) -> Any:
    found = rows(db, sql, args)
    return next(iter(found[0].values())) if found else None


def meta(db: Path) -> dict[str, Any]:
    return rows(db, "SELECT * FROM memory_meta WHERE id = 1")[0]


def name_of(where: Path | MemoryManager) -> str:
    return str(meta(db_of(where))["store_name"])


def counts(db: Path) -> dict[str, int]:
    return {t: int(scalar(db, f"SELECT count(*) FROM {t}")) for t in STORE_TABLES}


def file_digest(db: Path) -> dict[str, str | None]:
    """sha256 of the store file and of its write-ahead log (None when absent or empty). The `-shm`
    side file is SQLite's shared-memory index, which even a read-only reader may create."""
    out: dict[str, str | None] = {}
    for p in store_files(db)[:2]:
        out[p.name] = hashlib.sha256(p.read_bytes()).hexdigest() if p.exists() and p.stat().st_size else None
    return out


def item_set(db: Path) -> set[tuple[Any, ...]]:
    """Every item revision by content and status (independent of row IDs)."""
    return {tuple(r.values()) for r in rows(
        db, "SELECT id, logical_id, revision, status, kind, subject, statement, identity_key, replaced_by"
            " FROM memory_items")}


def state_view(db: Path) -> dict[str, Any]:
    """An order-independent view of everything a merge writes (for retry == uninterrupted checks)."""
    return {
        "meta": {k: v for k, v in meta(db).items() if k not in ("data_version",)},
        "threads": sorted(tuple(r.values()) for r in rows(db, "SELECT id, status, origin_store FROM threads")),
        "turns": sorted(tuple(r.values()) for r in rows(db, "SELECT id, thread_id, sequence, state, user_text,"
                                                          " assistant_text FROM turns")),
        "jobs": sorted(tuple(r.values()) for r in rows(db, "SELECT id, kind, status, thread_id, turn_id"
                                                         " FROM memory_jobs")),
        "candidates": sorted(tuple(r.values()) for r in rows(db, "SELECT id, status, consolidation_job_id,"
                                                               " thread_id, subject, origin_store"
                                                               " FROM memory_candidates")),
        "sources": sorted(tuple(r.values()) for r in rows(db, "SELECT * FROM candidate_sources")),
        "items": sorted(item_set(db)),
        "links": sorted(tuple(r.values()) for r in rows(db, "SELECT m.id, ic.candidate_id FROM item_candidates ic"
                                                          " JOIN memory_items m ON m.row_id = ic.item_row_id")),
        "aliases": [r["alias"] for r in rows(db, "SELECT alias FROM store_aliases ORDER BY alias")],
        "audit": [(r["event"], r["detail"]) for r in rows(db, "SELECT event, detail FROM audit_events ORDER BY id")],
        "counts": counts(db),
    }


def active_identity_dupes(db: Path) -> list[dict[str, Any]]:
    """Identities held by more than one active item (must always be empty)."""
    return rows(db, "SELECT identity_key, count(*) AS n FROM memory_items WHERE status = 'active'"
                    " GROUP BY identity_key HAVING n > 1")


# --------------------------------------------------------------------------- seeding


def used(mgr: MemoryManager) -> MemoryManager:
    """A store someone has used: one completed turn. A store that holds nothing is never registered,
    listed nor proposed by merge-scan (issue 20), so tests that need a known store use it."""
    add_turns(mgr, 1, tag="used")
    return mgr


def add_turns(mgr: MemoryManager, n: int, *, tag: str = "t", complete: bool = True) -> list[str]:
    ids = []
    for i in range(n):
        h = mgr.begin_turn(f"{tag} question {i}: how does the parser handle includes?")
        if complete:
            mgr.complete_turn(h, f"{tag} answer {i}: it follows them one level deep.")
        ids.append(h.turn_id)
    return ids


@dataclass(frozen=True)
class SeededItem:
    logical_id: str
    revision_id: str
    candidate_id: str
    subject: str
    statement: str


def add_item(mgr: MemoryManager, subject: str, statement: str | None = None, *, kind: str = "project_decision",
             turn_id: str | None = None, quote: str | None = None, keywords: Sequence[str] = (),
             paths: Sequence[str] = ()) -> SeededItem:
    """One active item with its provenance, as a committed consolidation leaves it: an accepted
    candidate with one source, the revision (through the store's own `insert_revision`), the link."""
    conn = mgr.store.conn()
    now = mgr.clock.now()
    statement = statement or f"Decision about {subject}."
    thread = conn.execute("SELECT id FROM threads WHERE status = 'active'").fetchone()[0]
    if turn_id is None:
        turn_id = conn.execute("SELECT id FROM turns ORDER BY created_at DESC, rowid DESC LIMIT 1").fetchone()
        turn_id = turn_id[0] if turn_id else "turn-none"
    f = ItemFields(kind=kind, subject=subject, statement=statement, content=statement, strength="hard",
                   origin="explicit", recall_mode="on_match", applies_to_paths=tuple(paths), aliases=(),
                   keywords=tuple(keywords), thread_id=thread if kind == "discussion_context" else None)
    cid = new_id("cand")
    with write_txn(conn):
        conn.execute(
            "INSERT INTO memory_candidates (id, thread_id, status, kind, subject, statement, content, strength,"
            " origin, recall_mode, applies_to_paths, aliases, keywords, created_at)"
            " VALUES (?, ?, 'accepted', ?, ?, ?, ?, 'hard', 'explicit', 'on_match', ?, '[]', ?, ?)",
            (cid, thread, kind, subject, statement, statement, json.dumps(list(paths)), json.dumps(list(keywords)),
             now))
        conn.execute("INSERT INTO candidate_sources (candidate_id, ordinal, turn_id, role, quote)"
                     " VALUES (?, 0, ?, 'user', ?)", (cid, turn_id, quote or f"remember: {subject}"))
        row_id, logical = insert_revision(conn, f, logical_id=None, revision=1, now=now)
        link_candidates(conn, row_id, [cid])
        bump_data_version(conn)
        rev = conn.execute("SELECT id FROM memory_items WHERE row_id = ?", (row_id,)).fetchone()[0]
    return SeededItem(logical, rev, cid, subject, statement)


def add_pending_consolidation(mgr: MemoryManager, subject: str, *, turn_id: str) -> tuple[str, str]:
    """A pending consolidation job with one pending candidate (as an extraction commit leaves it)."""
    conn = mgr.store.conn()
    now = mgr.clock.now()
    thread = conn.execute("SELECT id FROM threads WHERE status = 'active'").fetchone()[0]
    job, cid = new_id("job"), new_id("cand")
    with write_txn(conn):
        conn.execute("INSERT INTO memory_jobs (id, kind, status, thread_id, sequence, available_at, created_at,"
                     " updated_at) VALUES (?, 'consolidation', 'pending', ?, 0, ?, ?, ?)", (job, thread, now, now, now))
        conn.execute(
            "INSERT INTO memory_candidates (id, consolidation_job_id, thread_id, status, kind, subject, statement,"
            " content, strength, origin, recall_mode, created_at)"
            " VALUES (?, ?, ?, 'pending', 'user_preference', ?, ?, ?, 'soft', 'explicit', 'on_match', ?)",
            (cid, job, thread, subject, f"Prefer {subject}.", f"Prefer {subject}.", now))
        conn.execute("INSERT INTO candidate_sources (candidate_id, ordinal, turn_id, role, quote)"
                     " VALUES (?, 0, ?, 'user', ?)", (cid, turn_id, f"I prefer {subject}"))
    return job, cid


def set_label(db: Path, label: str | None) -> None:
    conn = sqlite3.connect(str(db), isolation_level=None, timeout=30)
    try:
        conn.execute("UPDATE memory_meta SET label = ? WHERE id = 1", (label,))
    finally:
        conn.close()


def seed_project(mgr: MemoryManager, *, tag: str, turns: int = 3, subjects: Iterable[str] = ()) -> dict[str, Any]:
    """Two threads of turns (the first archived), items with provenance, a pending consolidation job."""
    first = add_turns(mgr, turns, tag=f"{tag}-old")
    mgr.new_thread(timeout=0)
    second = add_turns(mgr, turns, tag=f"{tag}-new")
    items = [add_item(mgr, s, turn_id=first[0]) for s in subjects]
    job, cand = add_pending_consolidation(mgr, f"{tag} tabs", turn_id=second[-1])
    return {"turns": first + second, "items": items, "job": job, "candidate": cand}


# --------------------------------------------------------------------------- services and the stub model


def service_for(settings: Settings, *, clock: Any = None, model: bool = True) -> StoreService:
    """A StoreService with the Memory model of `settings` (None when it has none, or `model=False`)."""
    memory_model = None
    if model:
        memory_model, _ = build_memory_model(settings, LLMClient.from_settings(settings))
    return StoreService(settings, clock=clock, model=memory_model)


def verdict(same: bool = True, confidence: str = "high", reason: str = "same repository name and subjects") -> dict:
    return {"same_project": same, "confidence": confidence, "reason": reason}


def judge_payload(request: Any) -> dict[str, Any]:
    return json.loads(request.messages[-1]["content"])


def judged_pair(request: Any) -> frozenset[str]:
    p = judge_payload(request)
    return frozenset((p["a"]["store"], p["b"]["store"]))
