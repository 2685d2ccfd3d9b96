"""Memory the user steers (issue 31.1, 31.2; contracts §4, §10): "remember this" with a receipt, and
the one-key rescue of a refused candidate.

- `remember(mgr, text)`: the text is the user's own turn — RAW first (`begin_turn`, stored as the
  user typed it in the app: `/remember TEXT`), so every item keeps an exact quote of a user turn —
  completed at once and marked as an explicit request (the evidence key `remember`, sent with the
  turn in the extraction payload; it has no `:` so it can never bind as scan evidence — the prompt
  itself has no room left within its 8k-model bound, and the turn's text says `/remember`). Its extraction and
  the consolidation it derives run now, under the runner's processing lock, for this turn only;
  the receipt is what they did: the items stored (kept at once: the receipt shows the user what was
  stored), the gate's refusals by rule. The gate still judges the words: a code fact or a secret is
  refused even here. Without a model the turn stays queued and the receipt says so.
- `keep_refused(mgr, n)`: the n-th refused candidate (`refused_store`, newest first) goes through
  consolidation as the user's explicit decision (origin `explicit`, its quotes re-checked against
  the RAW turn), the item is marked kept, and the rescue is recorded (`refused_store.note_kept`):
  the item's history says which rule it was kept over. A `secret` refusal is never kept.

Nothing here is logged beyond IDs and counts."""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from autopatch_tui.core.errors import AutopatchError, MemoryNotFoundError, UsageError
from autopatch_tui.core.events import MemoryChanged
from autopatch_tui.core.ids import new_id
from autopatch_tui.core.memory import refused_store
from autopatch_tui.core.memory.items import summary_from_row
from autopatch_tui.core.memory.models import ItemSummary
from autopatch_tui.core.memory.refusal_words import rule_words
from autopatch_tui.core.memory.refusals import parse_verdict
from autopatch_tui.core.memory.sqlite import read_txn, write_txn

if TYPE_CHECKING:
    from autopatch_tui.core.manager import MemoryManager

REMEMBER_PREFIX = "/remember "
REMEMBER_KEY = "remember"  # the turn's evidence key: an explicit request to remember its text
REMEMBER_ANSWER = "(remember request: Memory processed it)"  # the shown answer of such a turn
MAX_REMEMBER_CHARS = 4000
WAIT_SECONDS = 120.0  # at most this long for another process's worker holding the same job
TERMINAL = ("succeeded", "succeeded_no_output", "failed")


class RescueError(AutopatchError):
    """A refused candidate cannot be kept (gone, a secret, its turn no longer holds the quote)."""


@dataclass(frozen=True)
class Refusal:
    rule: str
    words: str

    def as_json(self) -> dict[str, str]:
        return {"rule": self.rule, "words": self.words}


@dataclass
class Receipt:
    """What `memory remember` answers (contracts §4 `--json`: turn_id, remembered, refused)."""

    turn_id: str
    remembered: list[ItemSummary] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)
    waiting: str | None = None  # why nothing ran yet (no model, the job failed): said, never silent

    def as_json(self) -> dict[str, object]:
        return {"turn_id": self.turn_id, "remembered": [i.model_dump(mode="json") for i in self.remembered],
                "refused": [r.as_json() for r in self.refused]}


def remember_text(text: str) -> str:
    """The RAW user text of a remember request, as typed in the app."""
    body = text.strip()
    if not body:
        raise UsageError("memory remember needs the text to remember")
    if len(body) > MAX_REMEMBER_CHARS:
        raise UsageError(f"the text to remember is longer than {MAX_REMEMBER_CHARS} characters")
    return REMEMBER_PREFIX + body


def is_remember_turn(evidence_keys: list[str] | tuple[str, ...]) -> bool:
    return REMEMBER_KEY in evidence_keys


def _job_row(conn: sqlite3.Connection, job_id: str) -> sqlite3.Row:
    return conn.execute("SELECT * FROM memory_jobs WHERE id = ?", (job_id,)).fetchone()


def run_jobs(mgr: MemoryManager, job_ids: list[str], *, deadline: float) -> None:
    """Process exactly these jobs and the consolidation they derive, now. A job another worker of
    this or another process holds is waited for (until `deadline`)."""
    runner = mgr.runner
    conn = mgr.store.conn()
    todo = list(job_ids)
    while todo and time.monotonic() < deadline and runner.enabled:
        outcome = runner.step(force=True, only=todo)
        with read_txn(conn):
            rows = {j: _job_row(conn, j) for j in todo}
            children = [r[0] for r in conn.execute(
                "SELECT id FROM memory_jobs WHERE kind = 'consolidation' AND parent_job_id IN"
                " (SELECT value FROM json_each(?)) AND status NOT IN ('succeeded', 'succeeded_no_output', 'failed')",
                (_json(todo),))]
        todo = [j for j, r in rows.items() if r is not None and r["status"] not in TERMINAL]
        todo += [c for c in children if c not in todo]
        if outcome is None and todo:
            time.sleep(0.05)  # held elsewhere (the app's worker): it finishes under the same lock


def _json(ids: list[str]) -> str:
    import json

    return json.dumps(ids)


def _items_of_turn(conn: sqlite3.Connection, turn_id: str) -> list[sqlite3.Row]:
    return conn.execute(
        "SELECT DISTINCT m.* FROM candidate_sources s JOIN item_candidates ic ON ic.candidate_id = s.candidate_id"
        " JOIN memory_items m ON m.row_id = ic.item_row_id WHERE s.turn_id = ? AND s.role = 'user'"
        " AND m.status = 'active' ORDER BY m.row_id", (turn_id,)).fetchall()


def remember(mgr: MemoryManager, text: str, *, timeout: float = WAIT_SECONDS) -> Receipt:
    """`/remember TEXT`, `memory remember TEXT`: see the module's docstring."""
    user_text = remember_text(text)
    mgr.require_healthy()
    handle = mgr.begin_turn(user_text, evidence_keys=[REMEMBER_KEY])
    mgr.complete_turn(handle, REMEMBER_ANSWER)
    receipt = Receipt(handle.turn_id)
    conn = mgr.store.conn()
    job = conn.execute("SELECT id FROM memory_jobs WHERE turn_id = ?", (handle.turn_id,)).fetchone()[0]
    if not mgr.has_model:
        receipt.waiting = (f"no Memory model ({mgr.model_problem or 'not configured'}); the request is kept as "
                           "a turn and processed when a model is available")
        return receipt
    run_jobs(mgr, [job], deadline=time.monotonic() + timeout)
    with read_txn(conn):
        row = _job_row(conn, job)
        items = _items_of_turn(conn, handle.turn_id)
    if row["status"] not in TERMINAL:
        receipt.waiting = "Memory has not processed it yet; it stays queued (`memory status` shows the job)"
    elif row["status"] == "failed":
        receipt.waiting = "Memory could not process it (`memory status` shows the job's failure)"
    if row["failure_category"] is None:
        for rule, count in parse_verdict(row["failure_rule"]).items():
            receipt.refused += [Refusal(rule, rule_words(rule))] * count
    receipt.remembered = [summary_from_row(r) for r in items]
    if items:
        try:
            mgr.review.keep([r["logical_id"] for r in items])
        except (OSError, AutopatchError) as exc:  # the item is stored; only its mark is missing
            receipt.waiting = f"stored, but not marked kept: {exc}"
    mgr.events.emit(MemoryChanged("remember"))
    return receipt


# --------------------------------------------------------------------------- rescue


def refused(mgr: MemoryManager) -> list[refused_store.Refused]:
    mgr.require_readable()
    return refused_store.listing(mgr.paths, mgr.store.read_conn())


def _find(mgr: MemoryManager, n: int) -> refused_store.Refused:
    entries = refused(mgr)
    if n < 1 or n > len(entries):
        raise MemoryNotFoundError(f"no refused candidate number {n} (`memory refused` lists {len(entries)})")
    return entries[n - 1]


def _check_quotes(conn: sqlite3.Connection, entry: refused_store.Refused) -> None:
    sources = entry.candidate.get("sources") or []
    if not sources:
        raise RescueError("this refused candidate has no quoted words to keep")
    for s in sources:
        col = "user_text" if s.get("role") == "user" else "assistant_text"
        row = conn.execute(f"SELECT {col} FROM turns WHERE id = ?", (s.get("turn_id"),)).fetchone()
        if row is None or not s.get("quote") or s["quote"] not in (row[0] or ""):
            raise RescueError("the turn it quotes no longer holds its words; nothing was kept")


def keep_refused(mgr: MemoryManager, n: int, *, timeout: float = WAIT_SECONDS) -> ItemSummary:
    """`memory refused keep N`: see the module's docstring. Raises RescueError / MemoryNotFoundError."""
    mgr.require_healthy()
    return _keep(mgr, _find(mgr, n), timeout)


def keep_refused_key(mgr: MemoryManager, key: str, *, timeout: float = WAIT_SECONDS) -> ItemSummary:
    """The same for the entry `key` (the app's lists: a number shifts when a candidate is refused meanwhile)."""
    mgr.require_healthy()
    entry = next((e for e in refused(mgr) if e.key == key), None)
    if entry is None:
        raise MemoryNotFoundError("that refused candidate is no longer in the list (kept, or pushed out)")
    return _keep(mgr, entry, timeout)


def refused_of_turn(mgr: MemoryManager, turn_id: str) -> list[refused_store.Refused]:
    try:
        return [e for e in refused(mgr) if e.turn_id == turn_id]
    except (OSError, AutopatchError):
        return []


def _keep(mgr: MemoryManager, entry: refused_store.Refused, timeout: float) -> ItemSummary:
    from autopatch_tui.core.pipeline.contracts import CandidateOut
    from autopatch_tui.core.pipeline.extraction import insert_candidate

    if entry.rule == refused_store.SECRET_RULE or entry.candidate.get("masked"):
        raise RescueError("a candidate holding a secret is never kept")
    if not mgr.has_model:
        raise RescueError(f"keeping it needs the Memory model for consolidation ({mgr.model_problem or 'none'}); "
                          "it stays in the refused list")
    conn = mgr.store.conn()
    fields = {**{k: entry.candidate.get(k) for k in refused_store.CAND_FIELDS}, "origin": "explicit",
              "sources": entry.candidate.get("sources")}
    # the gate's pairing (it never adjusted a refused candidate): hard + always, or soft + on_match
    fields["strength"] = "hard" if fields.get("recall_mode") == "always" else "soft"
    try:
        cand = CandidateOut.model_validate(fields)
    except ValueError:
        raise RescueError("this refused candidate is not well formed; nothing was kept") from None
    now = mgr.clock.now()
    with write_txn(conn):
        _check_quotes(conn, entry)
        turn = conn.execute("SELECT t.thread_id, t.sequence, j.id FROM turns t LEFT JOIN memory_jobs j ON j.turn_id"
                            " = t.id WHERE t.id = ?", (entry.turn_id,)).fetchone()
        thread_id, sequence, parent = (turn[0], turn[1], turn[2]) if turn else (None, 0, None)
        cjob = new_id("job")
        conn.execute("INSERT INTO memory_jobs (id, kind, status, thread_id, parent_job_id, sequence, available_at,"
                     " created_at, updated_at) VALUES (?, 'consolidation', 'pending', ?, ?, ?, ?, ?, ?)",
                     (cjob, thread_id, parent, sequence, now, now, now))
        cid = insert_candidate(conn, cand, job_id=parent, consolidation_job_id=cjob, thread_id=thread_id, now=now)
    run_jobs(mgr, [cjob], deadline=time.monotonic() + timeout)
    with read_txn(conn):
        row = conn.execute("SELECT m.* FROM item_candidates ic JOIN memory_items m ON m.row_id = ic.item_row_id"
                           " WHERE ic.candidate_id = ? AND m.status = 'active'", (cid,)).fetchone()
        job = _job_row(conn, cjob)
    if row is None:
        if job["status"] not in TERMINAL:
            raise RescueError("Memory has not consolidated it yet; it is queued (`memory status` shows the job)")
        raise RescueError("consolidation set it aside (it failed or duplicated another item); it stays in the "
                          "refused list")
    mgr.review.keep([row["logical_id"]])
    refused_store.note_kept(mgr.paths, conn, refused_store.KeptOver(row["logical_id"], row["id"], entry.rule,
                                                                    entry.turn_id, now), key=entry.key)
    mgr.events.emit(MemoryChanged("rescue"))
    return summary_from_row(row)


def kept_over(mgr: MemoryManager, logical_id: str) -> list[refused_store.KeptOver]:
    """The rescues recorded for an item (its history line "kept over rule …")."""
    try:
        return refused_store.kept_over(mgr.paths, mgr.store.read_conn(), logical_id)
    except (OSError, AutopatchError):
        return []
