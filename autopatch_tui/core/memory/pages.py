"""Pages of the item listings (`memory list` and `memory review` with `--limit N --after CURSOR`,
issue 33) and the whole listing as a stream (`--json` without `--limit`: constant memory at any
store size).

A cursor is a key of the last entry shown, never a position, so a page is stable under concurrent
writes — an entry that exists before and after is shown exactly once:
- `memory list` pages go by logical ID, newest created first (IDs are ULIDs). A revision keeps its
  logical ID, so an item revised between two pages neither moves ahead of the cursor (lost) nor
  behind it (shown twice), as it would in the unpaged order, most recently *updated* first. The
  cursor is the last item's ID.
- `memory review` pages go by the revision's row, oldest written first (the unpaged order is by
  creation time, the same but for items a merge brought in with older times; no index has the
  creation time): a revision made meanwhile is written after every cursor and comes on a later
  page, while the one it replaced leaves the inbox. The cursor is `r` and the last row's number.
Both read inside one snapshot (the caller's read transaction) and use an index for the first row:
the first page of a 100k-item store costs about what an empty store's does."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass

from autopatch_tui.core import constants as C
from autopatch_tui.core.errors import UsageError
from autopatch_tui.core.ids import id_problem

MAX_LIMIT = 10_000
DEFAULT_HUMAN_PAGE = 50  # what `memory list` / `memory review` show without --limit


@dataclass(frozen=True)
class Page:
    """The rows of one page, the cursor of the next one (None: this is the last) and how many
    entries come after this page."""

    rows: list[sqlite3.Row]
    next: str | None
    more: int


def check_limit(limit: int) -> int:
    if not 1 <= limit <= MAX_LIMIT:
        raise UsageError(f"--limit is a number from 1 to {MAX_LIMIT}")
    return limit


def _check_kind(kind: str | None) -> None:
    if kind is not None and kind not in C.ITEM_KINDS:
        raise UsageError(f"unknown kind {kind!r}; expected one of {', '.join(C.ITEM_KINDS)}")


def item_page(conn: sqlite3.Connection, *, limit: int, after: str | None = None,
              kind: str | None = None) -> Page:
    """Active items by logical ID, newest created first, after the item ID `after`."""
    _check_kind(kind)
    if after is not None and id_problem(after):
        raise UsageError("--after takes the cursor a previous page printed")
    where, args = "status = 'active'", []
    if kind is not None:
        where += " AND kind = ?"
        args.append(kind)
    if after is not None:
        where += " AND logical_id < ?"
        args.append(after)
    rows = conn.execute(f"SELECT * FROM memory_items WHERE {where} ORDER BY logical_id DESC LIMIT ?",
                        [*args, limit + 1]).fetchall()
    if len(rows) <= limit:
        return Page(rows, None, 0)
    rows = rows[:limit]
    last = rows[-1]["logical_id"]
    more = conn.execute(f"SELECT count(*) FROM memory_items WHERE {where} AND logical_id < ?",
                        [*args, last]).fetchone()[0]
    return Page(rows, last, int(more))


def _review_after(cursor: str) -> int:
    row = cursor[1:]
    if not cursor.startswith("r") or not row.isascii() or not row.isdigit() or len(row) > 18:
        raise UsageError("--after takes the cursor a previous page printed")
    return int(row)


def review_page(conn: sqlite3.Connection, kept_json: str, *, limit: int, after: str | None = None,
                count_more: bool = True) -> Page:
    """Active revisions not kept (`kept_json`: the kept revision IDs as a JSON array), oldest
    written first, after the cursor `after`; `more` is counted only with `count_more` (a scan)."""
    where = "status = 'active' AND id NOT IN (SELECT value FROM json_each(?))"
    args: list[object] = [kept_json]
    if after is not None:
        where += " AND row_id > ?"
        args.append(_review_after(after))
    rows = conn.execute(f"SELECT * FROM memory_items WHERE {where} ORDER BY row_id LIMIT ?",
                        [*args, limit + 1]).fetchall()
    if len(rows) <= limit:
        return Page(rows, None, 0)
    rows = rows[:limit]
    last = rows[-1]["row_id"]
    more = conn.execute(f"SELECT count(*) FROM memory_items WHERE {where} AND row_id > ?",
                        [*args, last]).fetchone()[0] if count_more else 0
    return Page(rows, f"r{last}", int(more))


def all_items(conn: sqlite3.Connection, *, kind: str | None = None) -> Iterator[sqlite3.Row]:
    """Every active item in the unpaged order (most recently updated first), read row by row."""
    _check_kind(kind)
    sql, args = "SELECT * FROM memory_items WHERE status = 'active'", []
    if kind is not None:
        sql += " AND kind = ?"
        args.append(kind)
    yield from conn.execute(sql + " ORDER BY updated_at DESC, row_id DESC", args)
