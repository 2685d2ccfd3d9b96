"""An item's place in its supersession chain, for the detail views: the items it replaced (a
supersede starts a new logical ID; a merge of topics folds one item into another) with their dates
and statements, the item that replaced it, and — for an item that is no longer active — a sentence
saying so (such an item is never in the Memory Map or a search)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field

from autopatch_tui.core.clock import iso_utc
from autopatch_tui.core.memory.items import resolve_logical_id


@dataclass(frozen=True)
class ChainLink:
    id: str  # logical ID
    revision: int
    status: str
    statement: str
    updated_at: str


@dataclass(frozen=True)
class ItemHistory:
    replaced: list[ChainLink] = field(default_factory=list)  # older items this one replaced, newest first
    replaced_by: ChainLink | None = None
    state_note: str = ""  # empty for an active item


def _link(row: sqlite3.Row) -> ChainLink:
    return ChainLink(row["logical_id"], row["revision"], row["status"], row["statement"], iso_utc(row["updated_at"]))


def item_history(conn: sqlite3.Connection, item_id: str) -> ItemHistory:
    logical = resolve_logical_id(conn, item_id)
    revs = conn.execute("SELECT * FROM memory_items WHERE logical_id = ? ORDER BY revision", (logical,)).fetchall()
    latest = revs[-1]
    replaced: list[ChainLink] = []
    seen = {logical}
    frontier = [r["id"] for r in revs]
    while frontier and len(replaced) < 32:  # items whose chain ended in one of these revisions
        rows = conn.execute(
            f"SELECT * FROM memory_items WHERE replaced_by IN ({','.join('?' * len(frontier))})"
            " ORDER BY updated_at DESC, row_id DESC", frontier).fetchall()
        frontier = []
        for r in rows:
            if r["logical_id"] in seen:
                continue
            seen.add(r["logical_id"])
            replaced.append(_link(r))
            frontier += [x[0] for x in conn.execute("SELECT id FROM memory_items WHERE logical_id = ?",
                                                   (r["logical_id"],))]
    successor = None
    if latest["replaced_by"]:
        row = conn.execute("SELECT * FROM memory_items WHERE id = ?", (latest["replaced_by"],)).fetchone()
        if row is not None and row["logical_id"] != logical:
            successor = _link(row)
    note = ""
    when = iso_utc(latest["updated_at"])[:10]
    if latest["status"] == "forgotten":
        note = f"Forgotten on {when}: never recalled any more; the raw turns it came from are kept."
    elif latest["status"] == "superseded":
        by = f" by {successor.id}" if successor is not None else ""
        note = f"Superseded{by} on {when}: never recalled any more."
    return ItemHistory(replaced, successor, note)
