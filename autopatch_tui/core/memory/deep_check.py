"""The deep consistency check of a store: what only reading every row can see.

Run after the open-time check passed (`health.py`), off the start-up path: after the app's first
frame (in the background worker, before its first job) and after a CLI command's answer (bounded).
It reads one snapshot (one read transaction) and checks, in order:

1. SQLite's own `PRAGMA quick_check`: every b-tree page, free list, NOT NULL, row formats. A
   read-only connection skips CHECK constraints in it, so
2. every table's rows are tested against the CHECK expressions of the v4 DDL itself, one scan a
   table (`check_problem`);
3. every foreign key (single-column in v4), one scan a table with the parents in an ephemeral index
   (`PRAGMA foreign_key_check` probes the parent once per row: 7 s of CPU for the 4.9M recall
   terms of a 100k-item store, against 1.5 s);
4. the rows a bypassed unique index hides (`invariant_scan`): the meta rows, the active threads,
   and the active items per identity key and per logical ID, counted on the tables themselves.

Every scan reads the table's own b-tree, never a secondary index that might lack rows: `NOT
INDEXED` for rowid tables, the primary-key b-tree (`INDEXED BY` its autoindex) for WITHOUT ROWID
tables (SQLite picks a covering secondary index for them even under NOT INDEXED).

`DeepCheck` runs it on a connection of its own, can be cancelled from another thread
(`sqlite3.Connection.interrupt`), and remembers the verdict per file state (`verdicts.py`)."""

from __future__ import annotations

import logging
import re
import sqlite3
import threading
import time
from functools import lru_cache

from autopatch_tui.core.memory.schema import DDL, RECALL_RULES, layout_ddl, read_catalog
from autopatch_tui.core.memory.sqlite import is_lock_error
from autopatch_tui.core.memory.verdicts import Verdict, VerdictMemo, file_state, settled

log = logging.getLogger(__name__)

_CHECK = re.compile(r"\bCHECK\s*\(", re.IGNORECASE)
_TABLE = re.compile(r"^\s*CREATE\s+TABLE\s+(\w+)", re.IGNORECASE)
CORRUPT, UNREADABLE = "corrupt", "unreadable"


def _balanced(sql: str, start: int) -> str:
    """The text inside the parenthesis that opens just before `start` (quotes respected)."""
    depth, i, quote = 1, start, None
    while i < len(sql):
        ch = sql[i]
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return sql[start:i]
        i += 1
    raise ValueError("unbalanced CHECK in the schema")


@lru_cache(maxsize=2)
def check_constraints(ddl: tuple[str, ...] = DDL) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Every table's CHECK expressions, taken from the v4 DDL itself (`ddl`: the layout the store's
    catalog was verified to equal before these run, `schema.layout_ddl`)."""
    out = []
    for stmt in ddl:
        table = _TABLE.match(stmt)
        if table:
            exprs = tuple(_balanced(stmt, m.end()) for m in _CHECK.finditer(stmt))
            if exprs:
                out.append((table.group(1), exprs))
    return tuple(out)


def table_rows(conn: sqlite3.Connection, table: str) -> str:
    """A FROM clause that reads `table`'s own b-tree (see the module doc)."""
    for row in conn.execute(f'PRAGMA index_list("{table}")').fetchall():
        if row[3] == "pk" and str(row[1]).startswith("sqlite_autoindex_"):
            without_rowid = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?",
                                         (table,)).fetchone()
            if without_rowid and "WITHOUT ROWID" in str(without_rowid[0]).upper():
                return f'"{table}" INDEXED BY "{row[1]}"'
    return f'"{table}" NOT INDEXED'


def check_problem(conn: sqlite3.Connection, ddl: tuple[str, ...] = DDL) -> str | None:
    """Each table's rows against its CHECK expressions, one scan a table. (A CHECK fails only when
    its expression is false, not NULL: `NOT (NULL)` selects nothing.)"""
    for table, exprs in check_constraints(ddl):
        where = " OR ".join(f"NOT ({e})" for e in exprs)
        bad = conn.execute(f"SELECT count(*) FROM {table_rows(conn, table)} WHERE {where}").fetchone()[0]
        if bad:
            return f"CHECK constraint failed in {table} ({bad} row(s))"
    tables = {t.group(1) for t in map(_TABLE.match, ddl) if t}
    for table, what, sql in RECALL_RULES:  # what no CHECK can state (schema.RECALL_RULES)
        bad = conn.execute(sql).fetchone()[0] if table in tables else 0
        if bad:
            return f"{what} in {table} ({bad})"
    return None


def foreign_key_problem(conn: sqlite3.Connection, tables: list[str]) -> str | None:
    """Every child row's parent exists (NULL children are fine, as in SQLite's own check)."""
    for table in tables:
        for fk in conn.execute(f'PRAGMA foreign_key_list("{table}")').fetchall():
            parent, child_col, parent_col = fk[2], fk[3], fk[4]
            if parent_col is None:  # the parent's primary key
                parent_col = next(r[1] for r in conn.execute(f'PRAGMA table_info("{parent}")') if r[5] == 1)
            # `+` makes SQLite build the parent keys into one ephemeral index first: without it a
            # rowid parent is searched in its table once per child row (8 s instead of 1.5 s of CPU
            # for the 4.9M recall terms of a 100k-item store)
            bad = conn.execute(
                f'SELECT count(*) FROM {table_rows(conn, table)} WHERE "{child_col}" IS NOT NULL'
                f' AND "{child_col}" NOT IN (SELECT +"{parent_col}" FROM "{parent}")').fetchone()[0]
            if bad:
                return f"foreign key check failed ({bad} row(s), first in table '{table}')"
    return None


def invariant_scan(conn: sqlite3.Connection) -> str | None:
    """The rules unique indexes keep, counted on the tables: a bypassed index (its rows written
    while its definition was swapped, then put back: the catalog is exact again and `quick_check`
    does not compare an index with its table) must not hide a second meta row, a second active
    thread, or two active items of one identity or one logical ID."""
    metas = conn.execute("SELECT count(*) FROM memory_meta NOT INDEXED").fetchone()[0]
    if metas != 1:
        return f"memory_meta must hold exactly one row (id 1), found {metas}"
    active = conn.execute("SELECT count(*) FROM threads NOT INDEXED WHERE status = 'active'").fetchone()[0]
    if active != 1:
        return f"expected exactly one active thread, found {active}"
    same_identity, same_logical = conn.execute(
        "SELECT count(*) - count(DISTINCT identity_key), count(*) - count(DISTINCT logical_id)"
        " FROM memory_items NOT INDEXED WHERE status = 'active'").fetchone()
    if same_identity:
        return f"two or more active items share one identity ({same_identity} more than one per identity key)"
    if same_logical:
        return f"two or more active revisions share one logical ID ({same_logical} more than one per ID)"
    return None


_DATABASE_HEADER = re.compile(r"^\*\*\* in database \S+ \*\*\*$")


def first_problem(problems: list[str]) -> str:
    """SQLite's first problem line (a row of a b-tree fault starts with the header line `*** in
    database main ***`, which names no problem), at most 120 characters."""
    for row in problems:
        for line in row.splitlines():
            line = line.strip()
            if line and not _DATABASE_HEADER.match(line):
                return line[:120]
    return (problems[0].strip() if problems else "")[:120]


def deep_problem(conn: sqlite3.Connection) -> tuple[str, str] | None:
    """(cause, diagnostic) of the first fault found in `conn`'s snapshot, or None."""
    problems = [str(r[0]) for r in conn.execute("PRAGMA quick_check").fetchall()]
    if problems != ["ok"]:
        return CORRUPT, f"integrity check failed ({len(problems)} problem(s), first: {first_problem(problems)})"
    catalog = read_catalog(conn)
    problem = check_problem(conn, layout_ddl(catalog))
    if problem:
        return CORRUPT, f"integrity check failed ({problem})"
    problem = foreign_key_problem(conn, [entry[1] for entry in catalog if entry[0] == "table"]) or invariant_scan(conn)
    return (CORRUPT, problem) if problem else None


class DeepCheck:
    """One run of the deep check of one store file, through a connection `connect()` opens
    (read-only, on the verified file); cancellable from another thread (then it gives no verdict);
    its verdict remembered in `memo` for the file state it read."""

    def __init__(self, db, connect, memo: VerdictMemo) -> None:
        self.db = db
        self._connect = connect
        self.memo = memo
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._cancelled = False

    def run(self, timeout: float | None = None) -> Verdict | None:
        """The verdict (remembered or found now), or None when cancelled or out of time."""
        started = time.time()
        state = file_state(self.db)
        known = self.memo.lookup(self.db, state)
        if known is not None:
            return known
        timer = None
        try:
            conn = self._connect()
        except sqlite3.Error as exc:
            return Verdict(False, UNREADABLE, f"the database is unreadable: {_short(exc)}")
        with self._lock:
            if self._cancelled:
                conn.close()
                return None
            self._conn = conn
        if timeout is not None:
            timer = threading.Timer(timeout, self.cancel)
            timer.daemon = True
            timer.start()
        try:
            conn.execute("BEGIN")
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # the snapshot starts here
            same = file_state(self.db) == state
            found = deep_problem(conn)
        except sqlite3.DatabaseError as exc:
            if self._cancelled or is_lock_error(exc):  # stopped, or a lock held too long: no verdict
                log.info("deep store check ended without a verdict (%s)", type(exc).__name__)
                return None
            found = (UNREADABLE if isinstance(exc, sqlite3.OperationalError) else CORRUPT,
                     f"integrity check failed (SQLite: {_short(exc)})")
        finally:
            if timer is not None:
                timer.cancel()
            with self._lock:
                self._conn = None
            conn.close()
        verdict = Verdict(True) if found is None else Verdict(False, found[0], found[1])
        # a healthy verdict only for a settled state (a write in the same timestamp tick could
        # repeat it); a fault also for a fresh one: a later write in that tick would not mend it
        keep = state is not None and same and (not verdict.healthy or settled(state, started))
        if keep:
            self.memo.remember(self.db, state, verdict)
        log.info("deep store check: %s in %.2f s (%s)", "healthy" if verdict.healthy else verdict.cause,
                 time.time() - started, "remembered" if keep else "not remembered")
        return verdict

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            if self._conn is not None:
                self._conn.interrupt()


def _short(exc: sqlite3.Error) -> str:
    return str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
