"""Items a loaded instruction file already holds are not repeated in the Memory Map (contracts §9).

An active item counts as held when a promoted section of one of the request's instruction files
has its bullet (keyed by the item's logical ID) *and* that bullet still says the item's current
statement: an item revised since it was promoted, or a bullet edited by hand, is in the Map again.
`memory_search` and `memory_read` are not filtered: an explicit question still finds the item."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping

from autopatch_tui.core.instructions.section import one_line

MAX_IDS = 500  # bullets looked up per request (one query; a section longer than this is not a rule list)


def promoted_rows(conn: sqlite3.Connection, promoted: Mapping[str, str]) -> frozenset[int]:
    """Row IDs of the active items whose current statement is their promoted bullet's (`promoted`:
    item ID -> the statement its bullet holds)."""
    if not promoted:
        return frozenset()
    ids = list(promoted)[:MAX_IDS]
    rows = conn.execute(
        f"SELECT row_id, logical_id, statement FROM memory_items WHERE status = 'active'"
        f" AND logical_id IN ({','.join('?' * len(ids))})", ids).fetchall()
    return frozenset(r["row_id"] for r in rows if one_line(r["statement"]) == promoted[r["logical_id"]])
