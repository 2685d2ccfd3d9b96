"""Consolidation: pending candidates + the related active registry → create / revise / supersede /
reject, applied as one transaction.

The related registry sent to the model is bounded for display, but every identity check runs
against the complete active set through the unique `identity_key` index. Any illegal operation
(unknown target, duplicate identity, an inferred item overriding an explicit one) raises
MemoryContractError and rolls the whole operation set back."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from functools import cache

from autopatch_tui.core.bounded_json import loads_column
from autopatch_tui.core.constants import PROJECT_KINDS
from autopatch_tui.core.errors import MemoryContractError
from autopatch_tui.core.ids import new_id
from autopatch_tui.core.memory import change_journal, jobs
from autopatch_tui.core.memory.item_writes import (
    active_row_by_identity,
    dedupe_phrases,
    identity_key,
    insert_revision,
    link_candidates,
    retire_revision,
)
from autopatch_tui.core.memory.items import ItemFields, bump_data_version
from autopatch_tui.core.memory.sqlite import write_txn
from autopatch_tui.core.memory.status import SAFE_RULE
from autopatch_tui.core.pipeline.contracts import (
    ITEM_FIELD_NAMES,
    ConsolidationOut,
    OperationOut,
)
from autopatch_tui.core.pipeline.secret_gate import SECRET_RULE, operation_has_secret
from autopatch_tui.core.pipeline.semantic_gate import allowed_origins, check_operation
from autopatch_tui.core.recall import layout_upgrade, postings
from autopatch_tui.core.recall.phrase_index import PHRASE_FIELDS
from autopatch_tui.core.recall.terms import phrase_terms

MAX_RELATED_ITEMS = 24
CHUNK_CANDIDATES = 24  # candidates per consolidation call; a larger job is split into chunk jobs
MAX_ROWS_PER_TERM = 200
MAX_RELATED_TERMS = 64


@dataclass
class Candidate:
    id: str
    thread_id: str | None
    fields: dict[str, object]
    sources: list[dict[str, str]]
    linked: bool = False  # a topic candidate: linked to an imported active item (`stores.topic_merge`)

    def payload(self) -> dict[str, object]:
        return {"candidate_id": self.id, **self.fields, "thread_id": self.thread_id, "sources": self.sources}


def _loads(text: str) -> list[str]:
    value = loads_column(text, [])  # a store column: json_valid only, maybe nested past what Python parses
    return list(value) if isinstance(value, list) else []


def load_candidates(conn: sqlite3.Connection, job_id: str) -> list[Candidate]:
    rows = conn.execute(
        "SELECT * FROM memory_candidates WHERE consolidation_job_id = ? AND status = 'pending' ORDER BY created_at, id",
        (job_id,),
    ).fetchall()
    out = []
    for r in rows:
        fields = {k: r[k] for k in ITEM_FIELD_NAMES}
        for k in ("applies_to_paths", "aliases", "keywords"):
            fields[k] = _loads(r[k])
        sources = [{"turn_id": s["turn_id"], "role": s["role"], "quote": s["quote"]} for s in conn.execute(
            "SELECT turn_id, role, quote FROM candidate_sources WHERE candidate_id = ? ORDER BY ordinal", (r["id"],))]
        # CROSS JOIN keeps the candidate's own rows the outer loop (the planner would otherwise walk every
        # active item through the status index: 24 ms per candidate at 100k items, 0.04 ms this way)
        linked = conn.execute("SELECT 1 FROM item_candidates ic CROSS JOIN memory_items m ON m.row_id = ic.item_row_id"
                              " WHERE ic.candidate_id = ? AND m.status = 'active'", (r["id"],)).fetchone()
        out.append(Candidate(r["id"], r["thread_id"], fields, sources, linked is not None))
    return out


def related_items(conn: sqlite3.Connection, cands: list[Candidate], limit: int = MAX_RELATED_ITEMS) -> list[sqlite3.Row]:
    """Active items related to the candidates: first each candidate's own identity holder (one
    unique-index lookup, so a restatement can always be revised) — every holder, whatever their
    number — then items sharing subject, alias or keyword terms, most shared first, newest first,
    while the total stays within `limit`. Indexed lookups only: each term reads at most
    MAX_ROWS_PER_TERM index rows."""
    holders, shared = related_parts(conn, cands, limit)
    return holders + shared


def related_parts(conn: sqlite3.Connection, cands: list[Candidate],
                  limit: int = MAX_RELATED_ITEMS) -> tuple[list[sqlite3.Row], list[sqlite3.Row]]:
    """(every candidate's identity holder, the items sharing terms that fit within `limit` after them)."""
    holders: list[int] = []
    for c in cands:
        kind = str(c.fields["kind"])
        key = identity_key(kind, str(c.fields["subject"]), list(c.fields["applies_to_paths"]),  # type: ignore[arg-type]
                           c.thread_id if kind == "discussion_context" else None)
        row = active_row_by_identity(conn, key)
        if row is not None and row["row_id"] not in holders:
            holders.append(row["row_id"])
    terms: list[str] = []
    for c in cands:
        for phrase in [c.fields["subject"], *c.fields["aliases"], *c.fields["keywords"]]:  # type: ignore[misc]
            terms.extend(t for t in phrase_terms(str(phrase)) if t not in terms)
    room = max(0, limit - len(holders))
    shared = [r for r in _shared_term_items(conn, terms[:MAX_RELATED_TERMS], room + len(holders))
              if r not in holders][:room] if room else []
    return _rows(conn, holders), _rows(conn, shared)


def _rows(conn: sqlite3.Connection, row_ids: list[int]) -> list[sqlite3.Row]:
    if not row_ids:
        return []
    rows = conn.execute(  # `+status`: look the rows up by row_id, never walk the status index
        f"SELECT * FROM memory_items WHERE row_id IN ({','.join('?' * len(row_ids))}) AND +status = 'active'", row_ids
    ).fetchall()
    order = {r: n for n, r in enumerate(row_ids)}
    return sorted(rows, key=lambda r: order[r["row_id"]])


def split_off(conn: sqlite3.Connection, lease: jobs.Lease, cands: list[Candidate], *, now: float) -> str:
    """Inside no transaction: move `cands` (pending candidates of the leased job) into a new pending
    consolidation job of the same thread and parent — a chunk that succeeds or fails on its own.
    Returns the new job's ID."""
    job = lease.job_ids[0]
    new = new_id("job")
    with write_txn(conn):
        jobs.assert_lease(conn, lease)
        conn.execute(
            "INSERT INTO memory_jobs (id, kind, status, thread_id, parent_job_id, sequence, available_at, created_at,"
            " updated_at) SELECT ?, 'consolidation', 'pending', thread_id, parent_job_id, sequence, ?, ?, ?"
            " FROM memory_jobs WHERE id = ?", (new, now, now, now, job))
        conn.executemany("UPDATE memory_candidates SET consolidation_job_id = ? WHERE id = ? AND status = 'pending'"
                         " AND consolidation_job_id = ?", [(new, c.id, job) for c in cands])
    return new


def _shared_term_items(conn: sqlite3.Connection, terms: list[str], limit: int) -> list[int]:
    """Items sharing phrase terms with the candidates, most shared first, newest first. Each term
    reads at most MAX_ROWS_PER_TERM index rows (its newest phrase postings); the counting, ordering and
    limit run inside SQLite in one statement (one per number of terms, so the statement cache keeps it)."""
    if not terms:
        return []
    with layout_upgrade.reading(conn) as index:
        ids = index.ids(conn, terms)
        found = [ids[t] for t in terms if t in ids]
        if not found:
            return []
        args: list[object] = []
        for term_id in found:
            args += [term_id, MAX_ROWS_PER_TERM]
        return [row[0] for row in conn.execute(_shared_sql(index.table, len(found)), [*args, limit])]


@cache
def _shared_sql(table: str, count: int) -> str:
    """A term's phrase postings, newest first: its newest MAX_ROWS_PER_TERM (item, field, phrase) rows
    over the phrase fields (never the term's content postings, which a common word has thousands of),
    as one compound SELECT whose ORDER BY matches the primary key read backwards in each field's range:
    SQLite merges the field ranges and stops after `{cap}` rows (a subquery per field, each sorted and
    limited on its own, read up to `{cap}` rows per field and sorted them again: twice the CPU at 100k
    items). `{term}`, `{cap}`: the parameters of the term ID and the cap."""
    fields = [code for name, code in postings.FIELD.items() if name in PHRASE_FIELDS]
    per_field = " UNION ALL ".join(
        f"SELECT item_row_id AS item, field, phrase FROM {table} WHERE term_id = {{term}} AND field = {f}"
        for f in fields)
    arm = f"SELECT item FROM ({per_field} ORDER BY 1 DESC, 2 DESC, 3 DESC LIMIT {{cap}})"
    arms = " UNION ALL ".join(arm.format(term=f"?{2 * n + 1}", cap=f"?{2 * n + 2}") for n in range(count))
    return f"SELECT item FROM ({arms}) GROUP BY item ORDER BY count(*) DESC, item DESC LIMIT ?{2 * count + 1}"


def related_payload(row: sqlite3.Row) -> dict[str, object]:
    data: dict[str, object] = {"id": row["logical_id"], "revision": row["revision"]}
    for k in ITEM_FIELD_NAMES:
        data[k] = _loads(row[k]) if k in ("applies_to_paths", "aliases", "keywords") else row[k]
    return data


def check_operations(out: ConsolidationOut, cands: list[Candidate], related: list[sqlite3.Row]) -> None:
    """Structural rules checkable against the payload. Raises MemoryContractError."""
    cand_ids = {c.id for c in cands}
    by_id = {c.id: c for c in cands}
    seen: list[str] = []
    related_by_id = {r["logical_id"]: r for r in related}
    related_ids = set(related_by_id)
    for op in out.operations:
        for cid in op.candidate_ids:
            if cid not in cand_ids:
                raise MemoryContractError("unknown_candidate")
            seen.append(cid)
        if op.operation in ("create", "reject"):
            if op.target_id is not None:
                raise MemoryContractError("target_not_null")
        elif op.target_id not in related_ids:
            raise MemoryContractError("unknown_target")
        if op.operation != "reject" and any(getattr(op, k) is None for k in ITEM_FIELD_NAMES):
            raise MemoryContractError("missing_item_fields")
        if operation_has_secret(op):  # the model wrote a secret into an item: never stored (contracts §10)
            raise MemoryContractError(SECRET_RULE)
        if op.operation != "reject":
            _check_escalation(op, [by_id[c] for c in op.candidate_ids], related_by_id.get(op.target_id))
    if sorted(seen) != sorted(cand_ids):
        raise MemoryContractError("candidate_coverage")


def _check_escalation(op: OperationOut, used: list[Candidate], merged_into: sqlite3.Row | None) -> None:
    """The validated candidates bound what an operation may write: consolidation may not turn an
    inferred candidate into an explicit item, a discussion into a preference or decision, or a
    non-lasting candidate into a `hard` / `always` item (unless the target it revises already was).
    `merged_into`: the related item the operation revises or supersedes (whose origin a topic merge may keep)."""
    target = merged_into if op.operation == "revise" else None
    origins = allowed_origins(used, merged_into)
    if op.origin != "inferred_repetition" and origins == {"inferred_repetition"}:
        raise MemoryContractError("origin_escalation")
    check_operation(op, used, merged_into)
    if op.origin == "inferred_repetition" and (op.strength, op.recall_mode) != ("soft", "on_match"):
        raise MemoryContractError("inferred_not_soft")
    if op.kind in PROJECT_KINDS and not any(c.fields["kind"] in PROJECT_KINDS for c in used):
        raise MemoryContractError("kind_escalation")
    for field, strong in (("strength", "hard"), ("recall_mode", "always")):
        if getattr(op, field) == strong and not any(c.fields[field] == strong for c in used) and (
                target is None or target[field] != strong):
            raise MemoryContractError(f"{field}_escalation")


def _fields(op: OperationOut, cands: dict[str, Candidate], target: sqlite3.Row | None) -> ItemFields:
    used = [cands[c] for c in op.candidate_ids]
    kept_aliases = _loads(target["aliases"]) if target is not None else []
    kept_keywords = _loads(target["keywords"]) if target is not None else []
    thread_id = next((c.thread_id for c in used if c.thread_id), None) if op.kind == "discussion_context" else None
    if op.kind == "discussion_context" and target is not None and target["thread_id"]:
        thread_id = target["thread_id"]
    return ItemFields(
        kind=op.kind, subject=op.subject, statement=op.statement, content=op.content or "", strength=op.strength,
        origin=op.origin, recall_mode=op.recall_mode,
        applies_to_paths=tuple(dict.fromkeys(op.applies_to_paths or [])),
        aliases=dedupe_phrases(op.aliases or [], *(c.fields["aliases"] for c in used), kept_aliases),
        keywords=dedupe_phrases(op.keywords or [], *(c.fields["keywords"] for c in used), kept_keywords),
        thread_id=thread_id,
    )


def apply_operations(conn: sqlite3.Connection, out: ConsolidationOut, cands: list[Candidate], *, now: float) -> int:
    """Inside a write txn. Returns the number of items created or revised."""
    by_id = {c.id: c for c in cands}
    changed = 0
    for op in out.operations:
        if op.operation == "reject":
            conn.executemany("UPDATE memory_candidates SET status = 'rejected' WHERE id = ?",
                             [(c,) for c in op.candidate_ids])
            continue
        target = None
        if op.target_id is not None:
            target = conn.execute(
                "SELECT * FROM memory_items WHERE logical_id = ? AND status = 'active'", (op.target_id,)
            ).fetchone()
            if target is None:
                raise MemoryContractError("unknown_target")
            if target["origin"] != "inferred_repetition" and op.origin == "inferred_repetition":
                raise MemoryContractError("inferred_overrides_explicit")
        if op.kind == "discussion_context" and not any(by_id[c].thread_id for c in op.candidate_ids) and target is None:
            raise MemoryContractError("discussion_without_thread")
        fields = _fields(op, by_id, target)
        absorbed = absorb_linked(conn, op.candidate_ids, keep=target["row_id"] if target is not None else None,
                                 now=now)
        if op.operation == "create":
            row_id, _ = insert_revision(conn, fields, logical_id=None, revision=1, now=now)
        elif op.operation == "revise":
            retire_revision(conn, target["row_id"], status="superseded", replaced_by=None, now=now)
            row_id, _ = insert_revision(conn, fields, logical_id=target["logical_id"],
                                        revision=target["revision"] + 1, now=now)
        else:  # supersede: a new item replaces the target's chain
            retire_revision(conn, target["row_id"], status="superseded", replaced_by=None, now=now)
            row_id, _ = insert_revision(conn, fields, logical_id=None, revision=1, now=now)
        if target is not None or absorbed:
            new_rev = conn.execute("SELECT id FROM memory_items WHERE row_id = ?", (row_id,)).fetchone()[0]
            for old in ([target["row_id"]] if target is not None else []) + absorbed:
                conn.execute("UPDATE memory_items SET replaced_by = ? WHERE row_id = ?", (new_rev, old))
            for old in absorbed:  # the merged item's provenance moves along
                conn.execute("INSERT OR IGNORE INTO item_candidates (item_row_id, candidate_id)"
                             " SELECT ?, candidate_id FROM item_candidates WHERE item_row_id = ?", (row_id, old))
        link_candidates(conn, row_id, op.candidate_ids)
        changed += 1
    if changed:
        bump_data_version(conn)
    return changed


def absorb_linked(conn: sqlite3.Connection, candidate_ids: list[str], *, keep: int | None, now: float) -> list[int]:
    """Inside a write txn: a pending candidate linked to an active item is a topic candidate (see
    `stores.topic_merge`). When its operation writes another item, that item is merged into it:
    retired here (its `replaced_by` is set by the caller). Returns the retired row IDs."""
    if not candidate_ids:
        return []
    rows = [r[0] for r in conn.execute(
        f"SELECT DISTINCT m.row_id FROM item_candidates ic JOIN memory_items m ON m.row_id = ic.item_row_id"
        f" JOIN memory_candidates c ON c.id = ic.candidate_id WHERE c.status = 'pending' AND m.status = 'active'"
        f" AND ic.candidate_id IN ({','.join('?' * len(candidate_ids))})", tuple(candidate_ids))]
    absorbed = [r for r in rows if r != keep]
    for r in absorbed:
        retire_revision(conn, r, status="superseded", replaced_by=None, now=now)
    return absorbed


def commit(conn: sqlite3.Connection, lease: jobs.Lease, out: ConsolidationOut, cands: list[Candidate], *,
           provider_calls: int, now: float, refused: str | None = None) -> int:
    """One transaction: operations + job state. Raises MemoryContractError (rolled back).
    `refused`: the rule that refused the primary reply when this is the repair's result; it stays
    on the job as its safe verdict (`rule:1`, no failure category), like an extraction's."""
    with change_journal.tracked(conn), write_txn(conn):  # its retirements feed the incremental summary
        jobs.assert_lease(conn, lease)
        changed = apply_operations(conn, out, cands, now=now)
        jobs.mark_done(conn, lease, status="succeeded" if changed else "succeeded_no_output",
                       reason=None if changed else "all_rejected", provider_calls=provider_calls, now=now)
        if refused and SAFE_RULE.fullmatch(f"{refused}:1"):
            conn.execute("UPDATE memory_jobs SET failure_rule = ? WHERE id = ?", (f"{refused}:1", lease.job_ids[0]))
    return changed


def commit_no_output(conn: sqlite3.Connection, lease: jobs.Lease, *, reason: str, now: float,
                     suppress: bool) -> None:
    """No provider call: capacity exceeded (candidates suppressed) or nothing left to consolidate."""
    with write_txn(conn):
        jobs.assert_lease(conn, lease)
        if suppress:
            conn.execute("UPDATE memory_candidates SET status = 'suppressed' WHERE consolidation_job_id = ?"
                         " AND status = 'pending'", (lease.job_ids[0],))
        jobs.mark_done(conn, lease, status="succeeded_no_output", reason=reason, provider_calls=0, now=now)
