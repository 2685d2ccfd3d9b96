"""`memory_summary.md`: a human review summary rendered from the DB (contracts §1). It is never
read back by Memory or by any model call; `memory_meta.summary_version` records which
`data_version` it shows, so status can say current / stale / missing."""

from __future__ import annotations

import json
import sqlite3

from autopatch_tui.core.clock import iso_utc
from autopatch_tui.core.memory.sqlite import read_txn, write_txn
from autopatch_tui.core.paths import StorePaths, write_private_text

KIND_TITLES = {
    "user_preference": "User preferences",
    "project_decision": "Project decisions",
    "discussion_context": "Open discussions",
}


def render(conn: sqlite3.Connection, *, now: float) -> tuple[str, int]:
    with read_txn(conn):
        version = conn.execute("SELECT data_version FROM memory_meta WHERE id = 1").fetchone()[0]
        rows = conn.execute(
            "SELECT logical_id, kind, subject, statement, strength, recall_mode, applies_to_paths FROM memory_items"
            " WHERE status = 'active' ORDER BY kind, subject COLLATE NOCASE, logical_id"
        ).fetchall()
    lines = ["# Project Memory — review summary", "",
             f"Rendered {iso_utc(now)} from memory.db (data version {version}). This file is for people: "
             "Memory never reads it back. Use `autopatch-tui memory show ID` for provenance.", ""]
    for kind, title in KIND_TITLES.items():
        items = [r for r in rows if r["kind"] == kind]
        lines.append(f"## {title} ({len(items)})")
        lines.append("")
        for r in items:
            paths = json.loads(r["applies_to_paths"])
            scope = f" — {', '.join(paths)}" if paths else ""
            lines.append(f"- **{r['subject']}**: {r['statement']} ({r['strength']}, {r['recall_mode']}){scope} "
                         f"`{r['logical_id']}`")
        lines.append("")
    return "\n".join(lines), version


def refresh(conn: sqlite3.Connection, paths: StorePaths, *, now: float) -> None:
    """Re-render when the summary is missing or behind the data."""
    row = conn.execute("SELECT data_version, summary_version FROM memory_meta WHERE id = 1").fetchone()
    if row is None or (row["summary_version"] == row["data_version"] and paths.summary.exists()):
        return
    text, version = render(conn, now=now)
    write_private_text(paths.summary, text)
    with write_txn(conn):
        conn.execute("UPDATE memory_meta SET summary_version = ? WHERE id = 1", (version,))
