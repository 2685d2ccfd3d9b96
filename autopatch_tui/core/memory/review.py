"""The review inbox over one connection (contracts §8): which active revisions are `new` (not kept),
the revision a revised item is compared with, which IDs a `keep` may mark, and which marks are
still worth keeping. (Approval mode recalls only kept revisions: `RecallPolicy.kept`.)

The marks themselves (a set of kept revision IDs) come from `review_marks`; nothing here writes."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass

from autopatch_tui.core.errors import MemoryNotFoundError
from autopatch_tui.core.memory.items import resolve_logical_id, summary_from_row
from autopatch_tui.core.memory.models import ItemSummary
from autopatch_tui.core.terminal_text import one_line

# CROSS JOIN: the marks drive the join (one index lookup each), never a scan of the items per mark
_KEPT_ACTIVE_SQL = ("SELECT m.row_id FROM json_each(?) j CROSS JOIN memory_items m ON m.id = j.value"
                    " WHERE m.status = 'active'")


def kept_json(kept: frozenset[str]) -> str:
    return json.dumps(sorted(kept))


def count_new(conn: sqlite3.Connection, kept: frozenset[str]) -> int:
    """Active revisions not kept: the active count minus the kept ones still active (one index
    lookup per mark, never a scan of the items)."""
    active = conn.execute("SELECT count(*) FROM memory_items WHERE status = 'active'").fetchone()[0]
    if not kept:
        return int(active)
    kept_active = conn.execute(f"SELECT count(*) FROM ({_KEPT_ACTIVE_SQL})", (kept_json(kept),)).fetchone()[0]
    return int(active) - int(kept_active)


@dataclass(frozen=True)
class ReviewEntry:
    """One item awaiting review: its summary, the revision awaiting review and whether it is a first
    revision (`new`) or replaces an earlier one (`revised`)."""

    summary: ItemSummary
    revision: int
    change: str  # "new" | "revised"
    revision_id: str
    row_id: int

    def as_json(self) -> dict[str, object]:
        return {**self.summary.model_dump(), "revision": self.revision, "change": self.change}


def awaiting(conn: sqlite3.Connection, kept: frozenset[str], *, limit: int | None = None,
             offset: int = 0) -> list[ReviewEntry]:
    """Active revisions not kept, oldest first (by creation, then row)."""
    sql = ("SELECT * FROM memory_items WHERE status = 'active'"
           " AND id NOT IN (SELECT value FROM json_each(?)) ORDER BY created_at, row_id")
    args: list[object] = [kept_json(kept)]
    if limit is not None:
        sql += " LIMIT ? OFFSET ?"
        args += [limit, offset]
    return entries_of(conn, conn.execute(sql, args).fetchall())


def entries_of(conn: sqlite3.Connection, rows: list[sqlite3.Row]) -> list[ReviewEntry]:
    """The review entries of these active revision rows (is each new, or does it replace another)."""
    replaced = _replacing(conn, [r["id"] for r in rows if r["revision"] == 1])
    return [ReviewEntry(summary_from_row(r), r["revision"],
                        "revised" if r["revision"] > 1 or r["id"] in replaced else "new", r["id"], r["row_id"])
            for r in rows]


def _replacing(conn: sqlite3.Connection, revision_ids: list[str]) -> set[str]:
    """Which of these revisions replaced another item (a supersede, or an item merged into it)."""
    if not revision_ids:
        return set()
    return {r[0] for r in conn.execute(
        "SELECT DISTINCT replaced_by FROM memory_items WHERE replaced_by IN (SELECT value FROM json_each(?))",
        (json.dumps(revision_ids),))}


def previous_revisions(conn: sqlite3.Connection, row: sqlite3.Row) -> list[sqlite3.Row]:
    """What `row` replaced, newest first: the earlier revisions of its chain, then the items it
    superseded (or absorbed) and their earlier revisions."""
    out = conn.execute("SELECT * FROM memory_items WHERE logical_id = ? AND revision < ? ORDER BY revision DESC",
                       (row["logical_id"], row["revision"])).fetchall()
    for old in conn.execute("SELECT * FROM memory_items WHERE replaced_by = ? AND logical_id != ?"
                            " ORDER BY updated_at DESC, row_id DESC", (row["id"], row["logical_id"])).fetchall():
        out.append(old)
        out += conn.execute("SELECT * FROM memory_items WHERE logical_id = ? AND revision < ? ORDER BY revision DESC",
                            (old["logical_id"], old["revision"])).fetchall()
    return out


def diff_base(conn: sqlite3.Connection, row: sqlite3.Row, kept: frozenset[str]) -> tuple[sqlite3.Row | None, bool]:
    """(the revision a revised item is compared with, whether the user kept it): the newest kept one
    it replaced, else the one it replaced directly; (None, False) for a first revision."""
    previous = previous_revisions(conn, row)
    for old in previous:
        if old["id"] in kept:
            return old, True
    return (previous[0], False) if previous else (None, False)


def active_revision(conn: sqlite3.Connection, item_id: str) -> sqlite3.Row:
    """The active revision of an item named by its ID (or a unique prefix). Unknown or inactive:
    `MemoryNotFoundError`."""
    logical = resolve_logical_id(conn, item_id)
    row = conn.execute("SELECT * FROM memory_items WHERE logical_id = ? AND status = 'active'", (logical,)).fetchone()
    if row is None:
        raise MemoryNotFoundError(f"Memory item {one_line(logical)} is not active (forgotten or superseded); "
                                  "nothing was marked")
    return row


def prune(conn: sqlite3.Connection, kept: frozenset[str]) -> frozenset[str]:
    """The marks worth keeping: every kept active revision, and a kept retired one only while it is
    the newest kept revision of its chain and its successor is not kept itself (the inbox compares a
    revised item with it). Marks of forgotten or unknown revisions go."""
    if not kept:
        return kept
    rows = conn.execute("SELECT m.id, m.logical_id, m.revision, m.status, m.replaced_by FROM json_each(?) j"
                        " CROSS JOIN memory_items m ON m.id = j.value", (kept_json(kept),)).fetchall()
    newest: dict[str, int] = {}
    for r in rows:
        newest[r["logical_id"]] = max(newest.get(r["logical_id"], 0), r["revision"])
    out = set()
    for r in rows:
        if r["status"] == "active":
            out.add(r["id"])
        elif r["status"] == "superseded" and r["revision"] == newest[r["logical_id"]] \
                and r["replaced_by"] not in kept:
            out.add(r["id"])
    return frozenset(out)
