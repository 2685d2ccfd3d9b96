"""What a turn's Memory work did, once it has landed: the line(s) the chat shows under the turn
("remembered · preference · Always use type hints", "updated · …", "not remembered · one-off
request"). Read from the store only (no event payload carries content):

- the turn's candidates are those citing its *user* text (`candidate_sources.turn_id`, role user);
  an accepted one leads to the item revision it produced (`item_candidates` → `memory_items`): a
  first revision is "remembered", one that replaced another (a revision, a supersede, a merge) is
  "updated" with the statement it replaced;
- the gate's refusals are the turn's own extraction job's safe verdict (`failure_rule` with no
  failure category: `rule:count` pairs), in words (`refusal_words`);
- the work has landed when that job is terminal and no candidate citing the turn is still pending.

Nothing here is logged: these lines are the user's own content, shown in their own chat only."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass

from autopatch_tui.core.memory.refusal_words import rule_words
from autopatch_tui.core.memory.refusals import parse_verdict
from autopatch_tui.core.memory.review import previous_revisions

TERMINAL = ("succeeded", "succeeded_no_output", "failed")


@dataclass(frozen=True)
class MemoryNote:
    """One line: `outcome` is remembered | updated | not_remembered | failed."""

    outcome: str
    kind: str = ""
    statement: str = ""
    old_statement: str = ""
    reason: str = ""
    count: int = 1
    item_id: str = ""


def turn_notes(conn: sqlite3.Connection, turn_ids: list[str]) -> dict[str, list[MemoryNote]]:
    """For each turn whose Memory work has landed: its notes (possibly none: nothing to say).
    Turns still waiting are left out."""
    if not turn_ids:
        return {}
    ids = json.dumps(list(dict.fromkeys(turn_ids)))
    jobs = {r["turn_id"]: r for r in conn.execute(
        "SELECT turn_id, status, failure_category, failure_rule FROM memory_jobs"
        " WHERE turn_id IN (SELECT value FROM json_each(?))", (ids,))}
    cands: dict[str, list[sqlite3.Row]] = {}
    for r in conn.execute(
            "SELECT DISTINCT s.turn_id AS turn_id, c.id AS id, c.status AS status, c.created_at AS created_at"
            " FROM candidate_sources s JOIN memory_candidates c ON c.id = s.candidate_id"
            " WHERE s.role = 'user' AND s.turn_id IN (SELECT value FROM json_each(?))"
            " ORDER BY c.created_at, c.id", (ids,)):
        cands.setdefault(r["turn_id"], []).append(r)
    out: dict[str, list[MemoryNote]] = {}
    for turn_id in dict.fromkeys(turn_ids):
        job = jobs.get(turn_id)
        mine = cands.get(turn_id, [])
        if job is None or job["status"] not in TERMINAL or any(c["status"] == "pending" for c in mine):
            continue
        out[turn_id] = _notes(conn, job, mine)
    return out


def _notes(conn: sqlite3.Connection, job: sqlite3.Row, cands: list[sqlite3.Row]) -> list[MemoryNote]:
    notes: list[MemoryNote] = []
    seen: set[int] = set()
    for c in cands:
        row = conn.execute("SELECT m.* FROM item_candidates ic JOIN memory_items m ON m.row_id = ic.item_row_id"
                           " WHERE ic.candidate_id = ? ORDER BY m.row_id LIMIT 1", (c["id"],)).fetchone()
        if row is not None:
            if row["row_id"] in seen:
                continue
            seen.add(row["row_id"])
            previous = previous_revisions(conn, row)
            if previous:
                notes.append(MemoryNote("updated", row["kind"], row["statement"], previous[0]["statement"],
                                        item_id=row["logical_id"]))
            else:
                notes.append(MemoryNote("remembered", row["kind"], row["statement"], item_id=row["logical_id"]))
        elif c["status"] == "rejected":
            notes.append(MemoryNote("not_remembered", reason="set aside when merged into Memory"))
        elif c["status"] == "suppressed":
            notes.append(MemoryNote("not_remembered", reason="its Memory job did not finish (F5 shows the jobs)"))
    if job["failure_category"] is None:
        for rule, count in parse_verdict(job["failure_rule"]).items():
            notes.append(MemoryNote("not_remembered", reason=rule_words(rule), count=count))
    elif job["status"] == "failed":
        notes.append(MemoryNote("failed", reason="Memory could not process this turn (F5 shows the job)"))
    return notes
