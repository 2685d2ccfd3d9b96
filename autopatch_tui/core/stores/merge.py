"""Merge (FR-057) of one project store (SOURCE) into another (TARGET), both SQLite v4 files.

Memory is only added, never lost:
- threads arrive archived (the target keeps its one active thread); a thread ID the target already
  holds with different turns (a store copied from another machine that diverged) arrives under a
  fresh thread ID;
- turns, jobs (a leased job is reset to pending), candidates and sources are upserted by ID, in
  bulk `INSERT … SELECT` statements from the source attached read-only to the target's connection;
  a row both stores hold only moves forward (a turn towards ended, a job to a newer state, a
  candidate on from pending), never back;
- item revisions arrive with their provenance links; an active item whose identity the target
  already holds is linked when identical, and otherwise enters as a pending candidate of a new
  consolidation job for organize — never a second active item of one identity.
The copy runs twice: once, then again inside a write transaction on the source that also marks it
retired, so anything written to the source meanwhile is swept in and later writes fail loudly. Every
step is idempotent (the organize job's ID is derived from the source's name; the reported counts are
what the source holds), so a merge interrupted at any point can simply be run again with the result
of an uninterrupted one."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from autopatch_tui.core.bounded_json import loads_column
from autopatch_tui.core.errors import UsageError
from autopatch_tui.core.memory.item_writes import active_row_by_identity, identity_key, index_terms, unindex
from autopatch_tui.core.memory.items import ItemFields, bump_data_version
from autopatch_tui.core.memory.sqlite import open_readwrite, write_txn

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
    turns: int = 0  # rows written: new, or moved forward
    items: int = 0  # active revisions inserted active
    linked: int = 0  # identical to an active target item: linked to it
    queued: int = 0  # conflicting with an active target item: queued for organize
    changed: int = 0  # target revisions the source retired since


def _thread_map(dst: sqlite3.Connection) -> dict[str, str]:
    """Source thread ID → target thread ID; fresh IDs where a shared thread ID diverged."""
    mapping: dict[str, str] = {}
    for (tid,) in dst.execute("SELECT id FROM src.threads"):
        mapping[tid] = tid
        mine = dst.execute("SELECT origin_store FROM main.threads WHERE id = ?", (tid,)).fetchone()
        if mine is None or mine[0]:
            continue  # new here, or merged before: the same thread
        target_seqs = dict(dst.execute("SELECT sequence, id FROM main.turns WHERE thread_id = ?", (tid,)).fetchall())
        for sid, seq in dst.execute("SELECT id, sequence FROM src.turns WHERE thread_id = ?", (tid,)):
            if seq in target_seqs and target_seqs[seq] != sid:
                mapping[tid] = "thr-" + sid[5:]  # deterministic, so a re-run maps the same way
                break
    return mapping


def _cols(cols: tuple[str, ...], **override: str) -> str:
    return ", ".join(override.get(c, f"x.{c}") for c in cols)


def _set(cols: tuple[str, ...]) -> str:
    return ", ".join(f"{c} = excluded.{c}" for c in cols)


# An existing turn only moves forward: open → interrupted → completed | failed.
TURN_FORWARD = "turns.state = 'open' OR (turns.state = 'interrupted' AND excluded.state IN ('completed', 'failed'))"
TURN_UPDATE = ("state", "assistant_text", "ended_at", "owner", "lease_expires_at", "intent")
JOB_UPDATE = ("status", "attempts", "provider_calls", "lease_owner", "lease_expires_at", "lease_generation",
              "available_at", "updated_at", "completed_at", "no_output_reason", "failure_category", "failure_phase",
              "failure_stage", "failure_rule")
TEMP_DDL = ("CREATE TEMP TABLE IF NOT EXISTS merge_tmap (src_id TEXT PRIMARY KEY, dst_id TEXT NOT NULL)",
            "CREATE TEMP TABLE IF NOT EXISTS merge_jmap (src_id TEXT PRIMARY KEY, dst_id TEXT NOT NULL)")


def attach_source(dst: sqlite3.Connection, source_db: Path) -> None:
    """Attach SOURCE read-only to the target's connection as schema `src` (outside a transaction):
    every copy reads the source through it, in the target transaction's one consistent snapshot."""
    dst.execute("ATTACH DATABASE ? AS src", (f"file:{quote(str(source_db))}?mode=ro",))


def copy_store(dst: sqlite3.Connection, *, source_name: str, now: float) -> CopyStats:
    """Inside a write txn on `dst` (the target, with the source attached as `src`): copy everything,
    idempotently. Rows are matched by ID, in bulk statements; a row both stores hold (a second pass,
    or a store copied from the other) only ever moves forward, never back."""
    stats = CopyStats()
    tmap = _thread_map(dst)
    for stmt in TEMP_DDL:
        dst.execute(stmt)
    dst.execute("DELETE FROM temp.merge_tmap")
    dst.executemany("INSERT INTO temp.merge_tmap (src_id, dst_id) VALUES (?, ?)", list(tmap.items()))
    dst.execute(
        "INSERT INTO main.threads (id, status, created_at, archived_at, checkpoint, checkpoint_sequence, origin_store)"
        " SELECT m.dst_id, 'archived', x.created_at, coalesce(x.archived_at, :now), x.checkpoint,"
        " x.checkpoint_sequence, coalesce(x.origin_store, :source) FROM src.threads x"
        " JOIN temp.merge_tmap m ON m.src_id = x.id WHERE true ORDER BY x.created_at, x.id"
        " ON CONFLICT(id) DO UPDATE SET checkpoint = excluded.checkpoint,"
        " checkpoint_sequence = excluded.checkpoint_sequence"
        " WHERE threads.checkpoint_sequence < excluded.checkpoint_sequence",
        {"now": now, "source": source_name})
    before = dst.total_changes
    dst.execute(
        f"INSERT INTO main.turns ({', '.join(TURN_COLS)}) SELECT {_cols(TURN_COLS, thread_id='m.dst_id')}"
        " FROM src.turns x JOIN temp.merge_tmap m ON m.src_id = x.thread_id WHERE true ORDER BY x.thread_id, x.sequence"
        f" ON CONFLICT(id) DO UPDATE SET {_set(TURN_UPDATE)} WHERE {TURN_FORWARD}")
    stats.turns = dst.total_changes - before  # new or moved forward
    # one extraction job per turn: a turn the target already queues under another job ID (a copied
    # store where both sides queued it) keeps the target's job; the source's candidates follow it
    dst.execute("DELETE FROM temp.merge_jmap")
    dst.execute("INSERT INTO temp.merge_jmap (src_id, dst_id) SELECT x.id, d.id FROM src.memory_jobs x"
                " JOIN main.memory_jobs d ON d.turn_id = x.turn_id WHERE x.turn_id IS NOT NULL AND d.id != x.id")
    leased = "x.status = 'leased'"  # the source's worker can no longer commit: give it back
    dst.execute(
        f"INSERT INTO main.memory_jobs ({', '.join(JOB_COLS)}) SELECT "
        + _cols(JOB_COLS, status=f"CASE WHEN {leased} THEN 'pending' ELSE x.status END",
                thread_id="coalesce(m.dst_id, x.thread_id)", parent_job_id="coalesce(pj.dst_id, x.parent_job_id)",
                lease_owner=f"CASE WHEN {leased} THEN NULL ELSE x.lease_owner END",
                lease_expires_at=f"CASE WHEN {leased} THEN NULL ELSE x.lease_expires_at END",
                lease_generation=f"CASE WHEN {leased} THEN NULL ELSE x.lease_generation END")
        + " FROM src.memory_jobs x LEFT JOIN temp.merge_tmap m ON m.src_id = x.thread_id"
          " LEFT JOIN temp.merge_jmap pj ON pj.src_id = x.parent_job_id"
          " WHERE x.id NOT IN (SELECT src_id FROM temp.merge_jmap) ORDER BY x.rowid"
          f" ON CONFLICT(id) DO UPDATE SET {_set(JOB_UPDATE)}"
          " WHERE excluded.updated_at > memory_jobs.updated_at")
    # a candidate's status only moves on from pending (the target may have consolidated it already)
    dst.execute(
        f"INSERT INTO main.memory_candidates ({', '.join(CAND_COLS)}) SELECT "
        + _cols(CAND_COLS, job_id="coalesce(j1.dst_id, x.job_id)",
                consolidation_job_id="coalesce(j2.dst_id, x.consolidation_job_id)",
                thread_id="coalesce(m.dst_id, x.thread_id)", origin_store="coalesce(x.origin_store, :source)")
        + " FROM src.memory_candidates x LEFT JOIN temp.merge_tmap m ON m.src_id = x.thread_id"
          " LEFT JOIN temp.merge_jmap j1 ON j1.src_id = x.job_id"
          " LEFT JOIN temp.merge_jmap j2 ON j2.src_id = x.consolidation_job_id WHERE true ORDER BY x.created_at, x.id"
          " ON CONFLICT(id) DO UPDATE SET status = excluded.status WHERE memory_candidates.status = 'pending'",
        {"source": source_name})
    dst.execute("INSERT OR IGNORE INTO main.candidate_sources (candidate_id, ordinal, turn_id, role, quote)"
                " SELECT candidate_id, ordinal, turn_id, role, quote FROM src.candidate_sources")
    _copy_items(dst, tmap, source_name=source_name, now=now, stats=stats)
    if stats.items or stats.linked or stats.queued or stats.changed:
        bump_data_version(dst)
    return stats


def _links(dst: sqlite3.Connection, row_id: int) -> list[str]:
    """The candidate IDs linked to the source's item revision `row_id`."""
    return [c for (c,) in dst.execute("SELECT candidate_id FROM src.item_candidates WHERE item_row_id = ?",
                                      (row_id,))]


def _copy_items(dst: sqlite3.Connection, tmap: dict[str, str], *, source_name: str, now: float,
                stats: CopyStats) -> None:
    logical_map: dict[str, str] = {}
    organize_job: str | None = None
    present = {r["id"]: r for r in dst.execute(  # revisions the target holds already (a second pass, a copy)
        "SELECT m.id, m.row_id, m.status FROM main.memory_items m JOIN src.memory_items x ON x.id = m.id")}
    for r in dst.execute("SELECT * FROM src.memory_items ORDER BY logical_id, revision").fetchall():
        mine = present.get(r["id"])
        if mine is not None:
            # merged before (or a copied store): an active revision the source retired since leaves recall
            if mine["status"] == "active" and r["status"] != "active":
                dst.execute("UPDATE memory_items SET status = ?, replaced_by = ?, updated_at = ? WHERE row_id = ?",
                            (r["status"], r["replaced_by"], r["updated_at"], mine["row_id"]))
                unindex(dst, mine["row_id"])
                stats.changed += 1
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
                row_id = _insert_item(dst, r, logical, thread_id, status, holder_rev(dst, holder["row_id"]), now,
                                      source_name)
                _link(dst, holder["row_id"], _links(dst, r["row_id"]))
                _link(dst, row_id, _links(dst, r["row_id"]))
                stats.linked += 1
                continue
            if organize_job is None:
                organize_job = _organize_job(dst, source_name, now)
            row_id = _insert_item(dst, r, logical, thread_id, "superseded", None, now, source_name)
            _link(dst, row_id, _links(dst, r["row_id"]))
            _queue_candidate(dst, r, thread_id, organize_job, source_name, now)
            stats.queued += 1
            continue
        row_id = _insert_item(dst, r, logical, thread_id, status, r["replaced_by"], now, source_name)
        _link(dst, row_id, _links(dst, r["row_id"]))
        if status == "active":
            index_terms(dst, row_id, _fields(r, thread_id))
            stats.items += 1


def holder_rev(dst: sqlite3.Connection, row_id: int) -> str:
    return dst.execute("SELECT id FROM memory_items WHERE row_id = ?", (row_id,)).fetchone()[0]


def _identity(r: sqlite3.Row, thread_id: str | None) -> str:
    return identity_key(r["kind"], r["subject"], loads_column(r["applies_to_paths"], []), thread_id)


def _fields(r: sqlite3.Row, thread_id: str | None) -> ItemFields:
    return ItemFields(r["kind"], r["subject"], r["statement"], r["content"], r["strength"], r["origin"],
                      r["recall_mode"], tuple(loads_column(r["applies_to_paths"], [])), tuple(loads_column(r["aliases"], [])),
                      tuple(loads_column(r["keywords"], [])), thread_id)


def _same_semantics(dst: sqlite3.Connection, row_id: int, r: sqlite3.Row) -> bool:
    mine = dst.execute(f"SELECT {', '.join(SEMANTIC)} FROM memory_items WHERE row_id = ?", (row_id,)).fetchone()
    return all(mine[c] == r[c] for c in SEMANTIC)


def _insert_item(dst: sqlite3.Connection, r: sqlite3.Row, logical: str, thread_id: str | None, status: str,
                 replaced_by: str | None, now: float, source_name: str) -> int:
    cur = dst.execute(
        "INSERT INTO memory_items (id, logical_id, revision, status, kind, subject, statement, content, strength,"
        " origin, recall_mode, applies_to_paths, aliases, keywords, thread_id, identity_key, replaced_by,"
        " origin_store, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (r["id"], logical, r["revision"], status, r["kind"], r["subject"], r["statement"], r["content"], r["strength"],
         r["origin"], r["recall_mode"], r["applies_to_paths"], r["aliases"], r["keywords"], thread_id,
         _identity(r, thread_id), replaced_by, r["origin_store"] or source_name, r["created_at"],
         now if status != r["status"] else r["updated_at"]),
    )
    return int(cur.lastrowid)


def _link(dst: sqlite3.Connection, row_id: int, candidate_ids: list[str]) -> None:
    dst.executemany("INSERT OR IGNORE INTO item_candidates (item_row_id, candidate_id) VALUES (?, ?)",
                    [(row_id, c) for c in candidate_ids])


def organize_job_id(source_name: str) -> str:
    """The consolidation job that holds the candidates a merge of `source_name` queued for organize.
    Deterministic, so a re-run (or the retry of an interrupted merge) finds the same job."""
    return "job-" + source_name.rsplit("-", 1)[-1]


def _organize_job(dst: sqlite3.Connection, source_name: str, now: float) -> str:
    job = organize_job_id(source_name)
    dst.execute(
        "INSERT OR IGNORE INTO memory_jobs (id, kind, status, available_at, created_at, updated_at)"
        " VALUES (?, 'consolidation', 'pending', ?, ?, ?)", (job, now, now, now))
    return job


def _queue_candidate(dst: sqlite3.Connection, r: sqlite3.Row, thread_id: str | None, job: str, source_name: str,
                     now: float) -> None:
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
    copy_item_sources(dst, r["row_id"], cid, schema="src")


def copy_item_sources(conn: sqlite3.Connection, item_row_id: int, candidate_id: str, *, schema: str) -> None:
    """Give the candidate `candidate_id` (in main) the provenance quotes of item revision `item_row_id`
    of `schema` ("src": the attached source; "main": an item already imported): the gate's origin
    rules judge a candidate by its own quotes (an adopted proposal needs the user's and the assistant's)."""
    if schema not in ("src", "main"):
        raise ValueError(f"unknown schema {schema!r}")
    sources = conn.execute(
        f"SELECT s.turn_id, s.role, s.quote FROM {schema}.item_candidates ic JOIN {schema}.candidate_sources s"
        " ON s.candidate_id = ic.candidate_id WHERE ic.item_row_id = ? ORDER BY s.candidate_id, s.ordinal LIMIT 8",
        (item_row_id,)).fetchall()
    conn.executemany("INSERT INTO candidate_sources (candidate_id, ordinal, turn_id, role, quote) VALUES (?, ?, ?, ?, ?)",
                     [(candidate_id, n, s["turn_id"], s["role"], s["quote"]) for n, s in enumerate(sources)])


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
        attach_source(dst, source_db)
        if not s_meta["retired_into"]:
            with write_txn(dst):
                copy_store(dst, source_name=source_name, now=now)
            if fail_at == "first_copy":
                raise RuntimeError("injected failure after the first copy")
        with write_txn(src):  # blocks writers of the source until it is retired
            with write_txn(dst):
                # checked again under both write locks: another merge may have retired one meanwhile
                t_now = dst.execute("SELECT retired_into FROM memory_meta WHERE id = 1").fetchone()[0]
                s_now = src.execute("SELECT retired_into FROM memory_meta WHERE id = 1").fetchone()[0]
                if t_now:
                    raise UsageError(f"the target {target_name} was merged into {t_now} meanwhile")
                if s_now and s_now != target_name:
                    raise UsageError(f"the source {source_name} was merged into {s_now} meanwhile")
                copy_store(dst, source_name=source_name, now=now)
                label_moved = bool(s_meta["label"]) and not t_meta["label"]
                if label_moved:
                    dst.execute("UPDATE memory_meta SET label = ? WHERE id = 1", (s_meta["label"],))
                root_moved = bool(s_meta["root"]) and not t_meta["root"]
                if root_moved:
                    dst.execute("UPDATE memory_meta SET root = ?, remote = coalesce(remote, ?) WHERE id = 1",
                                (s_meta["root"], s_meta["remote"]))
                aliases = [source_name] + [a for (a,) in src.execute("SELECT alias FROM store_aliases ORDER BY alias")]
                aliases = [a for a in dict.fromkeys(aliases) if a != target_name]
                dst.executemany("INSERT OR IGNORE INTO store_aliases (alias, added_at) VALUES (?, ?)",
                                [(a, now) for a in aliases])
                # what the source holds, all of which the target now holds: the same figures whether the
                # merge ran at once or was interrupted and run again
                turns = src.execute("SELECT count(*) FROM turns").fetchone()[0]
                items = src.execute("SELECT count(*) FROM memory_items WHERE status = 'active'").fetchone()[0]
                if not dst.execute("SELECT 1 FROM audit_events WHERE event = 'memory_stores_merged'"
                                   " AND json_extract(detail, '$.source') = ?", (source_name,)).fetchone():
                    dst.execute("INSERT INTO audit_events (at, event, detail) VALUES (?, 'memory_stores_merged', ?)",
                                (now, json.dumps({"source": source_name, "target": target_name, "turns": turns,
                                                  "items": items})))
                organize = [j for (j,) in dst.execute(
                    "SELECT DISTINCT consolidation_job_id FROM memory_candidates WHERE consolidation_job_id = ?"
                    " AND status = 'pending'", (organize_job_id(source_name),))]
            if fail_at == "target_commit":
                raise RuntimeError("injected failure after the target commit")
            src.execute("UPDATE memory_meta SET retired_into = ?, retired_at = coalesce(retired_at, ?) WHERE id = 1",
                        (target_name, now))
        if fail_at == "retire":
            raise RuntimeError("injected failure after retiring the source")
        return MergeOutcome(target_name, turns, items, label_moved, root_moved, aliases, organize)
    finally:
        src.close()
        dst.close()
