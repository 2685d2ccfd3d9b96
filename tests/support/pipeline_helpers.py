"""Helpers for the Memory pipeline tests (tests/pipeline): settings pointed at the stub server,
scripted reply builders for the extraction / consolidation contracts (contracts §3.1, §3.2),
database inspection, seeding of items and consolidation jobs through the store's own write
functions, and an independent oracle of the extraction validation rules (for property tests).

Everything here is plain functions: the fixtures live in tests/pipeline/conftest.py."""

from __future__ import annotations

import json
import os
import sqlite3
import time
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from autopatch_tui.core import constants as C
from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.memory.item_writes import insert_revision
from autopatch_tui.core.memory.items import ItemFields, bump_data_version
from autopatch_tui.core.memory.sqlite import write_txn
from autopatch_tui.core.memory.turns import TurnHandle
from autopatch_tui.core.pipeline import markers as M
from autopatch_tui.core.pipeline.contracts import CandidateOut
from autopatch_tui.core.pipeline.extraction import insert_candidate
from autopatch_tui.core.pipeline.reading import (
    confirmation_refusal,
    is_open_point,
    read_quote,
)
from autopatch_tui.core.pipeline.semantic_gate import meaning_terms
from autopatch_tui.core.recall.terms import normalize_phrase
from autopatch_tui.core.settings import Settings, load_settings
from tests.support.llm_stub import CapturedRequest, StubLLMServer

ITEM_FIELDS = ("kind", "subject", "statement", "content", "strength", "origin", "recall_mode",
               "applies_to_paths", "aliases", "keywords")
TERMINAL = ("succeeded", "succeeded_no_output", "failed")


# --------------------------------------------------------------------------- settings / managers


def stub_env(stub: StubLLMServer | None, **env: str | float) -> dict[str, str]:
    """The process environment (already isolated by the autouse fixture) plus the stub model."""
    out = dict(os.environ)
    if stub is not None:
        out["AUTOPATCH_LLM_BASE_URL"] = stub.base_url
        out.setdefault("AUTOPATCH_LLM_MODEL", "gpt-4o")
    for k, v in env.items():
        out[k if k.startswith("AUTOPATCH_") else f"AUTOPATCH_{k.upper()}"] = str(v)
    return out


def stub_settings(stub: StubLLMServer | None, *, max_retries: int = 0, timeout: float = 5.0,
                  **env: str | float) -> Settings:
    return load_settings(stub_env(stub, **env), llm_max_retries=max_retries, llm_timeout_seconds=timeout)


def add_turn(mgr: MemoryManager, user: str, assistant: str | None = "ok", *, intent: str = "general_chat",
             scope_paths: Sequence[str] = (), evidence_keys: Sequence[str] = ()) -> TurnHandle:
    """Begin and (unless `assistant` is None) complete one turn."""
    h = mgr.begin_turn(user, intent=intent, scope_paths=scope_paths, evidence_keys=evidence_keys)
    if assistant is not None:
        mgr.complete_turn(h, assistant)
    return h


def wait_until(pred: Callable[[], Any], timeout: float = 5.0, interval: float = 0.02) -> Any:
    """Poll `pred` until it returns something truthy; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(interval)


# --------------------------------------------------------------------------- reply builders


def src(turn: TurnHandle | str, role: str, quote: str) -> dict[str, str]:
    tid = turn.turn_id if isinstance(turn, TurnHandle) else turn
    return {"turn_id": tid, "role": role, "quote": quote}


def cand(*sources: dict[str, str], kind: str = "user_preference", subject: str = "indentation style",
         statement: str = "Use four spaces for indentation.", content: str | None = None, strength: str = "soft",
         origin: str = "explicit", recall_mode: str = "on_match", paths: Sequence[str] = (),
         aliases: Sequence[str] = (), keywords: Sequence[str] = ()) -> dict[str, Any]:
    return {"kind": kind, "subject": subject, "statement": statement,
            "content": statement if content is None else content, "strength": strength, "origin": origin,
            "recall_mode": recall_mode, "applies_to_paths": list(paths), "aliases": list(aliases),
            "keywords": list(keywords), "sources": list(sources)}


def ext_reply(*cands: dict[str, Any], checkpoint: str = "Thread checkpoint: goals and agreed points.") -> dict:
    return {"thread_checkpoint": checkpoint, "candidates": list(cands)}


def extract_step(mgr: Any, stub: Any, *cands: dict[str, Any], repair: Any = None) -> Any:
    """Script one extraction reply (and its repair), then give the open extraction jobs one step."""
    stub.script("extraction", ext_reply(*cands))
    if repair is not None:
        stub.script("extraction_repair", repair)
    open_extraction = {j["id"] for j in jobs(mgr, "extraction") if j["status"] == "pending"}
    return mgr.runner.step(force=True, only=open_extraction)


def payload_of(req: CapturedRequest) -> dict[str, Any]:
    """The JSON object sent in the last user message (contracts §3)."""
    msgs = req.messages
    assert msgs and msgs[-1]["role"] == "user"
    return json.loads(msgs[-1]["content"])


def op(operation: str, candidate_ids: Sequence[str], target_id: str | None = None, **fields: Any) -> dict:
    out: dict[str, Any] = {"operation": operation, "candidate_ids": list(candidate_ids), "target_id": target_id}
    out.update(fields)
    return out


def op_from_candidate(operation: str, c: Mapping[str, Any], target_id: str | None = None, **changes: Any) -> dict:
    fields = {k: c[k] for k in ITEM_FIELDS}
    fields.update(changes)
    return op(operation, [c["candidate_id"]], target_id, **fields)


def create_all(req: CapturedRequest) -> dict:
    """A consolidation reply that creates one item per candidate, fields copied."""
    p = payload_of(req)
    return {"operations": [op_from_candidate("create", c) for c in p["candidates"]]}


def consolidate_with(fn: Callable[[dict[str, Any]], list[dict]]) -> Callable[[CapturedRequest], dict]:
    """A consolidation reply computed from the payload: `fn(payload) -> operations`."""
    return lambda req: {"operations": fn(payload_of(req))}


# --------------------------------------------------------------------------- database inspection


def db_of(target: MemoryManager | Path) -> Path:
    if isinstance(target, MemoryManager):
        return target.paths.db
    return target / ".autopatch-j" / "memory.db"


def rows(target: MemoryManager | Path, sql: str, args: Sequence[Any] = ()) -> list[dict[str, Any]]:
    conn = sqlite3.connect(f"file:{db_of(target)}?mode=ro", uri=True, timeout=30)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute(sql, tuple(args)).fetchall()]
    finally:
        conn.close()


def one(target: MemoryManager | Path, sql: str, args: Sequence[Any] = ()) -> Any:
    found = rows(target, sql, args)
    return next(iter(found[0].values())) if found else None


def jobs(target: MemoryManager | Path, kind: str | None = None) -> list[dict[str, Any]]:
    if kind is None:
        return rows(target, "SELECT * FROM memory_jobs ORDER BY rowid")
    return rows(target, "SELECT * FROM memory_jobs WHERE kind = ? ORDER BY rowid", (kind,))


def job_of_turn(target: MemoryManager | Path, turn: TurnHandle) -> dict[str, Any]:
    found = rows(target, "SELECT * FROM memory_jobs WHERE turn_id = ?", (turn.turn_id,))
    assert len(found) == 1
    return found[0]


def candidates(target: MemoryManager | Path, status: str | None = None) -> list[dict[str, Any]]:
    sql = "SELECT * FROM memory_candidates"
    args: tuple[Any, ...] = ()
    if status is not None:
        sql += " WHERE status = ?"
        args = (status,)
    out = rows(target, sql + " ORDER BY created_at, id", args)
    for c in out:
        c["sources"] = rows(target, "SELECT turn_id, role, quote FROM candidate_sources WHERE candidate_id = ?"
                                    " ORDER BY ordinal", (c["id"],))
        for k in ("applies_to_paths", "aliases", "keywords"):
            c[k] = json.loads(c[k])
    return out


def active_items(target: MemoryManager | Path) -> list[dict[str, Any]]:
    out = rows(target, "SELECT * FROM memory_items WHERE status = 'active' ORDER BY row_id")
    for c in out:
        for k in ("applies_to_paths", "aliases", "keywords"):
            c[k] = json.loads(c[k])
    return out


def checkpoint(target: MemoryManager | Path, thread_id: str) -> tuple[str, int]:
    r = rows(target, "SELECT checkpoint, checkpoint_sequence FROM threads WHERE id = ?", (thread_id,))[0]
    return r["checkpoint"], r["checkpoint_sequence"]


def table_counts(target: MemoryManager | Path) -> dict[str, int]:
    tables = ("threads", "turns", "memory_jobs", "memory_candidates", "candidate_sources", "memory_items",
              "item_candidates", "recall_postings", "recall_item_postings")
    return {t: one(target, f"SELECT count(*) FROM {t}") for t in tables}


def db_snapshot(target: MemoryManager | Path) -> str:
    """A content digest of every data table and the meta row (independent of WAL layout)."""
    tables = ("memory_meta", "threads", "turns", "memory_jobs", "memory_candidates", "candidate_sources",
              "memory_items", "item_candidates", "recall_dict", "recall_postings", "recall_item_postings")
    parts = []
    for t in tables:
        parts.append(json.dumps(rows(target, f"SELECT * FROM {t} ORDER BY 1, 2"), sort_keys=True, default=str))
    return "\n".join(parts)


# --------------------------------------------------------------------------- seeding


def seed_item(mgr: MemoryManager, *, subject: str, kind: str = "project_decision", statement: str | None = None,
              strength: str = "hard", origin: str = "explicit", recall_mode: str = "on_match",
              paths: Sequence[str] = (), aliases: Sequence[str] = (), keywords: Sequence[str] = (),
              thread_id: str | None = None) -> str:
    """An active item written through the store's own `insert_revision`. Returns the logical ID."""
    f = ItemFields(kind=kind, subject=subject, statement=statement or f"Decision about {subject}.",
                   content=statement or f"Decision about {subject}.", strength=strength, origin=origin,
                   recall_mode=recall_mode, applies_to_paths=tuple(paths), aliases=tuple(aliases),
                   keywords=tuple(keywords), thread_id=thread_id)
    conn = mgr.store.conn()
    with write_txn(conn):
        _, logical = insert_revision(conn, f, logical_id=None, revision=1, now=mgr.clock.now())
        bump_data_version(conn)
    return logical


def seed_consolidation(mgr: MemoryManager, cands: Iterable[dict[str, Any]], *, thread_id: str | None = None) -> tuple[str, list[str]]:
    """A pending consolidation job with pending candidates (as an extraction commit leaves them).
    `cands` are contract candidate dicts (see `cand`). Returns (job_id, candidate_ids)."""
    from autopatch_tui.core.ids import new_id

    conn = mgr.store.conn()
    now = mgr.clock.now()
    if thread_id is None:
        thread_id = conn.execute("SELECT id FROM threads WHERE status = 'active'").fetchone()[0]
    job = new_id("job")
    ids = []
    with write_txn(conn):
        conn.execute(
            "INSERT INTO memory_jobs (id, kind, status, thread_id, sequence, available_at, created_at, updated_at)"
            " VALUES (?, 'consolidation', 'pending', ?, 0, ?, ?, ?)", (job, thread_id, now, now, now))
        for c in cands:
            ids.append(insert_candidate(conn, CandidateOut.model_validate(c), job_id=None, consolidation_job_id=job,
                                        thread_id=thread_id, now=now))
    return job, ids


# --------------------------------------------------------------------------- rule oracle


class Turn:
    """A turn as the oracle sees it (RAW text from SQLite, what was sent from the payload)."""

    def __init__(self, row: Mapping[str, Any]) -> None:
        self.id = row["id"]
        self.sequence = row["sequence"]
        self.intent = row["intent"]
        self.user = row["user_text"]
        self.assistant = row["assistant_text"] or ""
        self.scope_paths = json.loads(row["scope_paths"])
        self.evidence_keys = json.loads(row["evidence_keys"])

    def text(self, role: str) -> str:
        return self.user if role == "user" else self.assistant


def oracle_violations(c: Mapping[str, Any], *, turns: Mapping[str, Turn], batch: set[str],
                      sent: Mapping[tuple[str, str], Sequence[str]]) -> list[str]:
    """Independent re-statement of the rules every committed candidate must satisfy. `c` is a
    committed candidate row (with `sources`). Returns the broken rules (empty = valid)."""
    bad: list[str] = []
    sources = c["sources"]
    if not 1 <= len(sources) <= C.MAX_SOURCES_PER_CANDIDATE:
        bad.append("source_count")
    for s in sources:
        t = turns.get(s["turn_id"])
        if t is None:
            bad.append("unknown_turn")
            continue
        if not s["quote"] or s["quote"] not in t.text(s["role"]):
            bad.append("quote_not_in_raw")
        if not any(s["quote"] in seg for seg in sent.get((s["turn_id"], s["role"]), ())):
            bad.append("quote_not_sent")
    if bad:
        return bad
    # the semantic gate's shape rules (issue 9): an identity and a proof need a word
    if not normalize_phrase(c["subject"]) or not normalize_phrase(c["statement"]):
        bad.append("empty_identity")
    if any(not any(unicodedata.category(ch)[0] in "LN" for ch in unicodedata.normalize("NFKC", s["quote"]))
           for s in sources):
        bad.append("quote_without_word")
    if c["kind"] == "discussion_context" and c["origin"] != "explicit":
        bad.append("discussion_origin")
    if bad:
        return bad
    user = [s for s in sources if s["role"] == "user"]
    if c["origin"] == "inferred_repetition":
        src_turns = {s["turn_id"] for s in user}
        if c["kind"] != "user_preference":
            bad.append("inferred_kind")
        if (c["strength"], c["recall_mode"]) != ("soft", "on_match"):
            bad.append("inferred_strength")
        if len(src_turns) < 3:
            bad.append("inferred_three_turns")
        if len({p for tid in src_turns for p in turns[tid].scope_paths}) < 2:
            bad.append("inferred_two_paths")
        keys = [set(turns[tid].evidence_keys) for tid in src_turns]
        if not _perfect_matching(keys):
            bad.append("inferred_evidence_binding")
        return bad
    batch_user = [s for s in user if s["turn_id"] in batch]
    if not batch_user:
        return ["no_current_user_source"]
    if c["kind"] == "discussion_context":
        if any(s["role"] == "assistant" for s in sources):
            bad.append("discussion_assistant")
        if M.has_code_fact(" ".join((c["subject"], c["statement"], c["content"]))):
            bad.append("discussion_code_fact")
        if (c["strength"], c["recall_mode"]) != ("soft", "on_match"):
            bad.append("discussion_strength")
        if not any(is_open_point(turns[s["turn_id"]].user, s["quote"]) for s in batch_user):
            bad.append("discussion_not_open")
        return bad
    if all(M.is_apply_only(turns[s["turn_id"]].user) for s in batch_user):
        bad.append("apply_only")
    if (c["strength"], c["recall_mode"]) not in (("hard", "always"), ("soft", "on_match")):
        bad.append("standing_not_from_evidence")
    meaning = meaning_terms(c["subject"], c["statement"], c["content"], json.loads(c["aliases"]),
                            json.loads(c["keywords"]))
    readings = [read_quote(turns[s["turn_id"]].user, s["quote"], repair=turns[s["turn_id"]].intent in C.REPAIR_INTENTS,
                           meaning=meaning) for s in batch_user]
    if c["origin"] == "adopted_proposal":
        last = max(turns[s["turn_id"]].sequence for s in batch_user)
        proposals = [s for s in sources if s["role"] == "assistant" and turns[s["turn_id"]].sequence < last]
        if not proposals:
            bad.append("adopted_without_proposal")
        if all(confirmation_refusal(turns[s["turn_id"]].user) for s in batch_user):
            bad.append("adoption_not_confirmed")
        offered = [read_quote(turns[s["turn_id"]].assistant, s["quote"], meaning=meaning) for s in proposals]
        if any(r.local for r in offered):
            bad.append("adopted_local_proposal")
        lasting = any(r.lasting for r in offered + readings)
    else:
        # the user's own clause is the evidence: no quote read as a directive, commitment or
        # preference (a one-off, a fact, a hedge, a question …) keeps nothing
        if all(r.refusal() is not None for r in readings):
            bad.append("no_evidence")
        lasting = any(r.lasting for r in readings if r.refusal() is None)
    if c["strength"] == "hard" and not lasting:
        bad.append("hard_not_lasting")
    return bad


def _perfect_matching(key_sets: list[set[str]]) -> bool:
    """Can every source turn get its own distinct evidence key (`scan:finding`)?"""
    match: dict[str, int] = {}

    def assign(i: int, seen: set[str]) -> bool:
        for k in sorted(key_sets[i]):
            scan, sep, finding = k.partition(":")
            if not (sep and scan.strip() and finding.strip()) or k in seen:
                continue
            seen.add(k)
            if k not in match or assign(match[k], seen):
                match[k] = i
                return True
        return False

    return all(assign(i, set()) for i in range(len(key_sets)))


def revise_holders(req: CapturedRequest) -> dict:
    """A correct consolidation/organize reply: each candidate revises the related item of its
    identity (kind, subject case-folded, paths) when the payload offers it, else it is created."""
    def identity(x: Mapping[str, Any]) -> tuple[Any, ...]:
        return (x["kind"], str(x["subject"]).casefold(), tuple(x["applies_to_paths"]))

    p = payload_of(req)
    by_identity = {identity(r): r for r in p["related_items"]}
    ops = []
    for c in p["candidates"]:
        holder = by_identity.get(identity(c))
        ops.append(op_from_candidate("revise", c, target_id=holder["id"]) if holder else op_from_candidate("create", c))
    return {"operations": ops}
