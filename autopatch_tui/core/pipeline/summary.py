"""`memory_summary.md`: a human review summary rendered from the DB (contracts §1). It is never
read back by Memory or by any model call; `memory_meta.summary_version` records which
`data_version` it shows, so status can say current / stale / missing."""

from __future__ import annotations

import sqlite3

from autopatch_tui.core.clock import iso_utc
from autopatch_tui.core.memory.sqlite import read_txn, write_txn
from autopatch_tui.core.paths import StorePaths, write_private_text
from autopatch_tui.core.recall.matching import applies_entries

KIND_TITLES = {
    "user_preference": "User preferences",
    "project_decision": "Project decisions",
    "discussion_context": "Open discussions",
}


MAX_ITEMS_PER_KIND = 500  # the summary is for people; `memory list` has everything


_ROW_COLUMNS = "logical_id, kind, subject, statement, strength, recall_mode, applies_to_paths"


def item_line(r: sqlite3.Row) -> str:
    """One item's line (a function of the revision row alone: a revision is never edited in place)."""
    paths = [p if p is not None else "(not a path)" for p in applies_entries(r["applies_to_paths"])]
    scope = f" — {', '.join(paths)}" if paths else ""
    return f"- **{r['subject']}**: {r['statement']} ({r['strength']}, {r['recall_mode']}){scope} `{r['logical_id']}`"


def display_key(r: sqlite3.Row) -> tuple[str, str]:
    return (r["subject"].casefold(), r["logical_id"])


def assemble(version: int, now: float, counts: dict[str, int], lines: dict[str, list[str]]) -> str:
    """The summary text: `lines[kind]` are a section's item lines, already in display order."""
    out = ["# Project Memory — review summary", "",
           f"Rendered {iso_utc(now)} from memory.db (data version {version}). This file is for people: "
           "Memory never reads it back. Use `autopatch-tui memory show ID` for provenance.", ""]
    for kind, title in KIND_TITLES.items():
        items = lines.get(kind, [])
        total = counts.get(kind, 0)
        out.append(f"## {title} ({total})")
        out.append("")
        out += items
        if total > len(items):
            out.append(f"- … and {total - len(items)} more (the most recently updated are listed); "
                       "`autopatch-tui memory list` shows all")
        out.append("")
    return "\n".join(out)


def render(conn: sqlite3.Connection, *, now: float) -> tuple[str, int]:
    """A full render from the database (the reference the incremental refresh must equal)."""
    with read_txn(conn):
        version = conn.execute("SELECT data_version FROM memory_meta WHERE id = 1").fetchone()[0]
        counts = dict(conn.execute(
            "SELECT kind, count(*) FROM memory_items WHERE status = 'active' GROUP BY kind").fetchall())
        rows = []
        for kind in KIND_TITLES:
            rows += conn.execute(
                f"SELECT {_ROW_COLUMNS} FROM memory_items"
                " WHERE status = 'active' AND kind = ? ORDER BY updated_at DESC, row_id DESC LIMIT ?",
                (kind, MAX_ITEMS_PER_KIND)).fetchall()
    lines = {kind: [item_line(r) for r in sorted((r for r in rows if r["kind"] == kind), key=display_key)]
             for kind in KIND_TITLES}
    return assemble(version, now, counts, lines), version


def needs_refresh(conn: sqlite3.Connection, paths: StorePaths) -> bool:
    """Whether `refresh` would re-render: the summary is missing or behind the data."""
    row = conn.execute("SELECT data_version, summary_version FROM memory_meta WHERE id = 1").fetchone()
    return row is not None and not (row["summary_version"] == row["data_version"] and paths.summary.exists())


def refresh(conn: sqlite3.Connection, paths: StorePaths, *, now: float) -> None:
    """Re-render when the summary is missing or behind the data."""
    if not needs_refresh(conn, paths):
        return
    from autopatch_tui.core.pipeline import summary_state  # it builds on this module's line and layout

    text, version = summary_state.render(conn, now=now)  # incremental where the change journal allows
    write_private_text(paths.summary, text, root=paths.repo)  # no link below the repository is followed
    with write_txn(conn):
        conn.execute("UPDATE memory_meta SET summary_version = ? WHERE id = 1", (version,))
