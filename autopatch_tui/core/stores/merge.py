"""Merge (FR-057) of one project store (SOURCE) into another (TARGET), both SQLite v4 files.

Memory is only added, never lost:
- threads arrive archived (the target keeps its one active thread); a thread ID the target already
  holds with different turns (a store copied from another machine that diverged) arrives under a
  fresh thread ID;
- turns, jobs (a leased job is reset to pending), candidates and sources are upserted by ID;
- item revisions arrive with their provenance links; an active item whose identity the target
  already holds is linked when identical, and otherwise enters as a pending candidate of a new
  consolidation job for organize — never a second active item of one identity.
The copy runs twice: once, then again inside a write transaction on the source that also marks it
retired, so anything written to the source meanwhile is swept in and later writes fail loudly. Every
step is idempotent, so a merge interrupted at any point can simply be run again."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from autopatch_tui.core.errors import UsageError
from autopatch_tui.core.ids import new_id
from autopatch_tui.core.memory.item_writes import active_row_by_identity, identity_key, index_terms
from autopatch_tui.core.memory.items import ItemFields, bump_data_version
from autopatch_tui.core.memory.sqlite import open_readwrite, read_txn, write_txn

SEMANTIC = ("kind", "subject", "statement", "content", "strength", "origin", "recall_mode", "applies_to_paths",
            "aliases", "keywords")
TURN_COLS = ("id", "thread_id", "sequence", "intent", "state", "user_text", "assistant_text", "scope_paths",
             "evidence_keys", "owner", "lease_expires_at", "created_at", "ended_at")
CAND_COLS = ("id", "job_id", "consolidation_job_id", "thread_id", "status", "kind", "subject", "statement", "content",
             "strength", "origin", "recall_mode", "applies_to_paths", "aliases", "keywords", "origin_store",
             "created_at")
JOB_COLS = ("id", "kind", "status", "thread_id", "turn_id", "parent_job_id", "sequence", "attempts", "provider_calls",
            "lease_owner", "lease_expires_at", "lease_generation", "available_at", "created_at", "updated_at",
            "completed_at", "no_output_reason", "failure_category", "failure_phase", "failure_stage", "failure_rule")


@dataclass
class CopyStats:
    turns: int = 0
    items: int = 0
    linked: int = 0
    queued: int = 0
    organize_jobs: list[str] = field(default_factory=list)


def _upsert(conn: sqlite3.Connection, table: str, cols: tuple[str, ...], row: dict, *, update: tuple[str, ...]) -> bool:
    """Insert, or update `update` columns of the existing row. True when the row is new."""
    exists = conn.execute(f"SELECT 1 FROM {table} WHERE id = ?", (row["id"],)).fetchone() is not None
    if exists:
        if update:
            conn.execute(f"UPDATE {table} SET {', '.join(f'{c} = ?' for c in update)} WHERE id = ?",
                         [row[c] for c in update] + [row["id"]])
        return False
    conn.execute(f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                 [row[c] for c in cols])
    return True


def _thread_map(src: sqlite3.Connection, dst: sqlite3.Connection) -> dict[str, str]:
    """Source thread ID → target thread ID; fresh IDs where a shared thread ID diverged."""
    mapping: dict[str, str] = {}
    for (tid,) in src.execute("SELECT id FROM threads"):
        mapping[tid] = tid
        if dst.execute("SELECT 1 FROM threads WHERE id = ?", (tid,)).fetchone() is None:
            continue
        if dst.execute("SELECT origin_store FROM threads WHERE id = ?", (tid,)).fetchone()[0]:
            continue  # merged before: same thread
        target_seqs = {r[0]: r[1] for r in dst.execute("SELECT sequence, id FROM turns WHERE thread_id = ?", (tid,))}
        for sid, seq in src.execute("SELECT id, sequence FROM turns WHERE thread_id = ?", (tid,)):
            if seq in target_seqs and target_seqs[seq] != sid:
                mapping[tid] = "thr-" + sid[5:]  # deterministic, so a re-run maps the same way
                break
    return mapping


def copy_store(src: sqlite3.Connection, dst: sqlite3.Connection, *, source_name: str, now: float) -> CopyStats:
    """Inside a write txn on `dst` (and a consistent read of `src`): copy everything, idempotently."""
    stats = CopyStats()
    tmap = _thread_map(src, dst)
    for r in src.execute("SELECT * FROM threads ORDER BY created_at, id"):
        row = dict(r)
        row["id"] = tmap[r["id"]]
        row["status"] = "archived"
        row["archived_at"] = r["archived_at"] or now
        row["origin_store"] = r["origin_store"] or source_name
        cols = ("id", "status", "created_at", "archived_at", "checkpoint", "checkpoint_sequence", "origin_store")
        if not _upsert(dst, "threads", cols, row, update=()):
            dst.execute("UPDATE threads SET checkpoint = ?, checkpoint_sequence = ? WHERE id = ?"
                        " AND checkpoint_sequence < ?", (row["checkpoint"], row["checkpoint_sequence"], row["id"],
                                                         row["checkpoint_sequence"]))
    for r in src.execute("SELECT * FROM turns ORDER BY thread_id, sequence"):
        row = dict(r)
        row["thread_id"] = tmap[r["thread_id"]]
        if _upsert(dst, "turns", TURN_COLS, row, update=("state", "assistant_text", "ended_at", "owner",
                                                          "lease_expires_at", "intent")):
            stats.turns += 1
    for r in src.execute("SELECT * FROM memory_jobs ORDER BY rowid"):
        row = dict(r)
        row["thread_id"] = tmap.get(r["thread_id"], r["thread_id"]) if r["thread_id"] else None
        if row["status"] == "leased":  # the source's worker can no longer commit: give it back
            row.update(status="pending", lease_owner=None, lease_expires_at=None, lease_generation=None)
        _upsert(dst, "memory_jobs", JOB_COLS, row, update=("status", "attempts", "provider_calls", "lease_owner",
                                                            "lease_expires_at", "lease_generation", "available_at",
                                                            "updated_at", "completed_at", "no_output_reason",
                                                            "failure_category", "failure_phase", "failure_stage",
                                                            "failure_rule"))
    for r in src.execute("SELECT * FROM memory_candidates ORDER BY created_at, id"):
        row = dict(r)
        row["thread_id"] = tmap.get(r["thread_id"], r["thread_id"]) if r["thread_id"] else None
        row["origin_store"] = r["origin_store"] or source_name
        _upsert(dst, "memory_candidates", CAND_COLS, row, update=("status",))
    dst.executemany(
        "INSERT OR IGNORE INTO candidate_sources (candidate_id, ordinal, turn_id, role, quote) VALUES (?, ?, ?, ?, ?)",
        [tuple(r) for r in src.execute("SELECT candidate_id, ordinal, turn_id, role, quote FROM candidate_sources")],
    )
    _copy_items(src, dst, tmap, source_name=source_name, now=now, stats=stats)
    if stats.items or stats.linked or stats.queued:
        bump_data_version(dst)
    return stats


def _links(src: sqlite3.Connection, row_id: int) -> list[str]:
    return [c for (c,) in src.execute("SELECT candidate_id FROM item_candidates WHERE item_row_id = ?", (row_id,))]


def _copy_items(src: sqlite3.Connection, dst: sqlite3.Connection, tmap: dict[str, str], *, source_name: str,
                now: float, stats: CopyStats) -> None:
    logical_map: dict[str, str] = {}
    organize_job: str | None = None
    for r in src.execute("SELECT * FROM memory_items ORDER BY logical_id, revision"):
        if dst.execute("SELECT 1 FROM memory_items WHERE id = ?", (r["id"],)).fetchone():
            # merged before (or a copied store): keep its status in step with the source
            dst.execute("UPDATE memory_items SET status = ?, replaced_by = ?, updated_at = ? WHERE id = ?"
                        " AND status = 'active' AND ? != 'active'",
                        (r["status"], r["replaced_by"], r["updated_at"], r["id"], r["status"]))
            continue
        logical = logical_map.get(r["logical_id"], r["logical_id"])
        clash = dst.execute("SELECT id FROM memory_items WHERE logical_id = ? AND revision = ?",
                            (logical, r["revision"])).fetchone()
        if clash is not None:  # the chain diverged after a copy: continue it under a fresh logical ID
            logical = logical_map.setdefault(r["logical_id"], "mem-" + r["id"][4:])
        thread_id = tmap.get(r["thread_id"], r["thread_id"]) if r["thread_id"] else None
        status = r["status"]
        holder = active_row_by_identity(dst, _identity(r, thread_id)) if status == "active" else None
        if holder is not None or (status == "active" and dst.execute(
                "SELECT 1 FROM memory_items WHERE logical_id = ? AND status = 'active'", (logical,)).fetchone()):
            if holder is not None and _same_semantics(dst, holder["row_id"], r):
                status = "superseded"
                row_id = _insert_item(dst, r, logical, thread_id, status, holder_rev(dst, holder["row_id"]), now)
                _link(dst, holder["row_id"], _links(src, r["row_id"]))
                _link(dst, row_id, _links(src, r["row_id"]))
                stats.linked += 1
                continue
            if organize_job is None:
                organize_job = _organize_job(dst, now)
                stats.organize_jobs.append(organize_job)
            row_id = _insert_item(dst, r, logical, thread_id, "superseded", None, now)
            _link(dst, row_id, _links(src, r["row_id"]))
            _queue_candidate(src, dst, r, thread_id, organize_job, source_name, now)
            stats.queued += 1
            continue
        row_id = _insert_item(dst, r, logical, thread_id, status, r["replaced_by"], now)
        _link(dst, row_id, _links(src, r["row_id"]))
        if status == "active":
            index_terms(dst, row_id, _fields(r, thread_id))
            stats.items += 1


def holder_rev(dst: sqlite3.Connection, row_id: int) -> str:
    return dst.execute("SELECT id FROM memory_items WHERE row_id = ?", (row_id,)).fetchone()[0]


def _identity(r: sqlite3.Row, thread_id: str | None) -> str:
    return identity_key(r["kind"], r["subject"], json.loads(r["applies_to_paths"]), thread_id)


def _fields(r: sqlite3.Row, thread_id: str | None) -> ItemFields:
    return ItemFields(r["kind"], r["subject"], r["statement"], r["content"], r["strength"], r["origin"],
                      r["recall_mode"], tuple(json.loads(r["applies_to_paths"])), tuple(json.loads(r["aliases"])),
                      tuple(json.loads(r["keywords"])), thread_id)


def _same_semantics(dst: sqlite3.Connection, row_id: int, r: sqlite3.Row) -> bool:
    mine = dst.execute(f"SELECT {', '.join(SEMANTIC)} FROM memory_items WHERE row_id = ?", (row_id,)).fetchone()
    return all(mine[c] == r[c] for c in SEMANTIC)


def _insert_item(dst: sqlite3.Connection, r: sqlite3.Row, logical: str, thread_id: str | None, status: str,
                 replaced_by: str | None, now: float) -> int:
    cur = dst.execute(
        "INSERT INTO memory_items (id, logical_id, revision, status, kind, subject, statement, content, strength,"
        " origin, recall_mode, applies_to_paths, aliases, keywords, thread_id, identity_key, replaced_by,"
        " origin_store, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (r["id"], logical, r["revision"], status, r["kind"], r["subject"], r["statement"], r["content"], r["strength"],
         r["origin"], r["recall_mode"], r["applies_to_paths"], r["aliases"], r["keywords"], thread_id,
         _identity(r, thread_id), replaced_by, r["origin_store"], r["created_at"], now if status != r["status"]
         else r["updated_at"]),
    )
    return int(cur.lastrowid)


def _link(dst: sqlite3.Connection, row_id: int, candidate_ids: list[str]) -> None:
    dst.executemany("INSERT OR IGNORE INTO item_candidates (item_row_id, candidate_id) VALUES (?, ?)",
                    [(row_id, c) for c in candidate_ids])


def _organize_job(dst: sqlite3.Connection, now: float) -> str:
    job = new_id("job")
    dst.execute(
        "INSERT INTO memory_jobs (id, kind, status, available_at, created_at, updated_at)"
        " VALUES (?, 'consolidation', 'pending', ?, ?, ?)", (job, now, now, now))
    return job


def _queue_candidate(src: sqlite3.Connection, dst: sqlite3.Connection, r: sqlite3.Row, thread_id: str | None,
                     job: str, source_name: str, now: float) -> None:
    cid = "cand-" + r["id"][4:]  # deterministic: a re-run does not queue twice
    if dst.execute("SELECT 1 FROM memory_candidates WHERE id = ?", (cid,)).fetchone():
        return
    dst.execute(
        "INSERT INTO memory_candidates (id, consolidation_job_id, thread_id, status, kind, subject, statement, content,"
        " strength, origin, recall_mode, applies_to_paths, aliases, keywords, origin_store, created_at)"
        " VALUES (?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (cid, job, thread_id, r["kind"], r["subject"], r["statement"], r["content"], r["strength"], r["origin"],
         r["recall_mode"], r["applies_to_paths"], r["aliases"], r["keywords"], source_name, now),
    )
    sources = src.execute(
        "SELECT s.turn_id, s.role, s.quote FROM item_candidates ic JOIN candidate_sources s"
        " ON s.candidate_id = ic.candidate_id WHERE ic.item_row_id = ? ORDER BY s.candidate_id, s.ordinal LIMIT 8",
        (r["row_id"],)).fetchall()
    dst.executemany("INSERT INTO candidate_sources (candidate_id, ordinal, turn_id, role, quote) VALUES (?, ?, ?, ?, ?)",
                    [(cid, n, s["turn_id"], s["role"], s["quote"]) for n, s in enumerate(sources)])


@dataclass(frozen=True)
class MergeOutcome:
    target: str
    merged_turns: int
    merged_items: int
    label_moved: bool
    root_moved: bool
    aliases: list[str]
    organize_jobs: list[str]


def merge_files(source_db: Path, target_db: Path, *, now: float, fail_at: str | None = None) -> MergeOutcome:
    """Merge SOURCE into TARGET (both validated healthy v4 files). `fail_at` injects a failure after
    a named step (tests of idempotent retry): "first_copy", "target_commit", "retire"."""
    src = open_readwrite(source_db)
    dst = open_readwrite(target_db)
    try:
        s_meta = src.execute("SELECT * FROM memory_meta WHERE id = 1").fetchone()
        t_meta = dst.execute("SELECT * FROM memory_meta WHERE id = 1").fetchone()
        if s_meta["store_name"] == t_meta["store_name"]:
            raise UsageError("source and target are the same store")
        if t_meta["retired_into"]:
            raise UsageError(f"the target {t_meta['store_name']} is retired (merged into {t_meta['retired_into']})")
        if s_meta["retired_into"] and s_meta["retired_into"] != t_meta["store_name"]:
            raise UsageError(f"the source was already merged into {s_meta['retired_into']}")
        source_name, target_name = s_meta["store_name"], t_meta["store_name"]
        first = CopyStats()
        if not s_meta["retired_into"]:
            with read_txn(src), write_txn(dst):
                first = copy_store(src, dst, source_name=source_name, now=now)
            if fail_at == "first_copy":
                raise RuntimeError("injected failure after the first copy")
        with write_txn(src):  # blocks writers of the source until it is retired
            with write_txn(dst):
                sweep = copy_store(src, dst, source_name=source_name, now=now)
                label_moved = bool(s_meta["label"]) and not t_meta["label"]
                if label_moved:
                    dst.execute("UPDATE memory_meta SET label = ? WHERE id = 1", (s_meta["label"],))
                root_moved = bool(s_meta["root"]) and not t_meta["root"]
                if root_moved:
                    dst.execute("UPDATE memory_meta SET root = ?, remote = coalesce(remote, ?) WHERE id = 1",
                                (s_meta["root"], s_meta["remote"]))
                aliases = [source_name] + [a for (a,) in src.execute("SELECT alias FROM store_aliases")]
                aliases = [a for a in dict.fromkeys(aliases) if a != target_name]
                dst.executemany("INSERT OR IGNORE INTO store_aliases (alias, added_at) VALUES (?, ?)",
                                [(a, now) for a in aliases])
                turns = first.turns + sweep.turns
                items = first.items + first.linked + first.queued + sweep.items + sweep.linked + sweep.queued
                if not dst.execute("SELECT 1 FROM audit_events WHERE event = 'memory_stores_merged'"
                                   " AND json_extract(detail, '$.source') = ?", (source_name,)).fetchone():
                    dst.execute("INSERT INTO audit_events (at, event, detail) VALUES (?, 'memory_stores_merged', ?)",
                                (now, json.dumps({"source": source_name, "target": target_name, "turns": turns,
                                                  "items": items})))
            if fail_at == "target_commit":
                raise RuntimeError("injected failure after the target commit")
            src.execute("UPDATE memory_meta SET retired_into = ?, retired_at = coalesce(retired_at, ?) WHERE id = 1",
                        (target_name, now))
        if fail_at == "retire":
            raise RuntimeError("injected failure after retiring the source")
        return MergeOutcome(target_name, turns, items, label_moved, root_moved, aliases,
                            first.organize_jobs + sweep.organize_jobs)
    finally:
        src.close()
        dst.close()
