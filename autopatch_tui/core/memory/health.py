"""Validation of an existing memory.db, without modifying it.

A store is healthy only when: it is an SQLite file; `user_version` is 4; its catalog equals exactly
what `schema.DDL` creates (or, for a store written before issue 23, `schema.TERMS_LAYOUT_DDL`: the same
with the recall index in its first layout, see `schema.layout_ddl`); `quick_check`, every table's CHECK constraints (`check_problem`: a
read-only `quick_check` skips them) and `foreign_key_check` pass; `memory_meta` holds exactly its one
row and exactly one thread is active, both counted `NOT INDEXED`. Anything else is degraded with a
`cause`, and the diagnostic says why in safe words (object types and names, versions, counts: never
row content). Nothing here creates or changes a file (`sqlite.untouched_params`)."""

from __future__ import annotations

import os
import re
import sqlite3
import stat
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from autopatch_tui.core.constants import SCHEMA_VERSION
from autopatch_tui.core.memory.schema import (
    DDL,
    RECALL_RULES,
    CatalogEntry,
    expected_catalog,
    layout_ddl,
    read_catalog,
)
from autopatch_tui.core.memory.sqlite import open_readonly
from autopatch_tui.core.terminal_text import plain_os_error

SQLITE_MAGIC = b"SQLite format 3\x00"
SQLITE_HEADER_SIZE = 100


@dataclass(frozen=True)
class Health:
    healthy: bool
    schema_version: int  # found in the file; 0 when unknown
    diagnostic: str | None = None
    empty: bool = False  # a zero-length or object-free, version-0 file: safe to bootstrap
    cause: str | None = None  # degraded: a stable word (contracts §5)
    readable: bool = False  # degraded but intact and readable (cause "read_only"): read commands work


# causes (contracts §5 `cause`); permission problems never suggest `memory clear`
SCHEMA, CORRUPT, UNREADABLE, READ_ONLY, SYMLINK, NOT_A_FILE, JOURNAL, PERMISSION, MERGED = (
    "schema", "corrupt", "unreadable", "read_only", "symlink", "not_a_file", "journal", "permission", "merged")
NO_CLEAR_CAUSES = frozenset({READ_ONLY, PERMISSION, MERGED})


def _degraded(version: int, why: str, cause: str = SCHEMA) -> Health:
    return Health(False, version, f"{why} (supported schema version {SCHEMA_VERSION}, found {version})", cause=cause)


def _header_problem(path: Path) -> str | None:
    try:
        with path.open("rb") as fh:
            head = fh.read(SQLITE_HEADER_SIZE)
    except OSError as exc:
        return f"cannot read the database file: {plain_os_error(exc)}"
    if len(head) < SQLITE_HEADER_SIZE:
        return "the database file is truncated (shorter than an SQLite header)"
    if not head.startswith(SQLITE_MAGIC):
        return "the file is not an SQLite database"
    page_size = int.from_bytes(head[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    size = path.stat().st_size
    if page_size < 512 or page_size & (page_size - 1):
        return "the database header is corrupt (invalid page size)"
    if size % page_size:
        return "the database file is truncated (not a whole number of pages)"
    return None


def _catalog_difference(found: list[CatalogEntry]) -> str | None:
    expected = list(expected_catalog(layout_ddl(found)))
    exp_by_name = {e[1]: e for e in expected}
    found_by_name = {f[1]: f for f in found}
    for f in found:
        e = exp_by_name.get(f[1])
        if e is None:
            return f"unexpected {f[0]} '{f[1]}' in the schema"
        if e != f:
            return f"{f[0]} '{f[1]}' differs from schema v{SCHEMA_VERSION}"
    for e in expected:
        if e[1] not in found_by_name:
            return f"missing {e[0]} '{e[1]}'"
    return None


def _inspect_conn(conn: sqlite3.Connection) -> Health:
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    catalog = read_catalog(conn)
    if version != SCHEMA_VERSION:
        if version == 0 and not catalog:
            return Health(False, 0, None, empty=True)
        if version == 0:
            known = set(expected_catalog(layout_ddl(catalog)))
            first = next((c for c in catalog if c not in known), catalog[0])
            return _degraded(0, f"unversioned database with unknown {first[0]} '{first[1]}'")
        return _degraded(version, f"schema version {version} is not supported")
    diff = _catalog_difference(catalog)
    if diff:
        return _degraded(version, diff)
    problems = [str(r[0]) for r in conn.execute("PRAGMA quick_check").fetchall()]
    if problems != ["ok"]:  # covers CHECK and NOT NULL constraints of every table, and the b-trees
        first = problems[0].splitlines()[0][:120]
        return _degraded(version, f"integrity check failed ({len(problems)} problem(s), first: {first})", CORRUPT)
    problem = check_problem(conn, layout_ddl(catalog))
    if problem:
        return _degraded(version, f"integrity check failed ({problem})", CORRUPT)
    fk = conn.execute("PRAGMA foreign_key_check").fetchall()
    if fk:
        return _degraded(version, f"foreign key check failed ({len(fk)} row(s), first in table '{fk[0][0]}')",
                         CORRUPT)
    problem = invariant_problem(conn)
    if problem:
        return _degraded(version, problem, CORRUPT)
    return Health(True, version)


def invariant_problem(conn: sqlite3.Connection) -> str | None:
    """The singleton and one-active-thread rules, counted on the tables themselves (`NOT INDEXED`):
    a damaged or bypassed index (quick_check does not compare indexes with their tables) must not
    hide a second meta row or a second active thread."""
    metas = conn.execute("SELECT count(*), sum(id = 1) FROM memory_meta NOT INDEXED").fetchone()
    if metas[0] == 0 or not metas[1]:
        return "the memory_meta singleton is missing"
    if metas[0] != 1:
        return f"memory_meta must hold exactly one row (id 1), found {metas[0]}"
    active = conn.execute("SELECT count(*) FROM threads NOT INDEXED WHERE status = 'active'").fetchone()[0]
    if active != 1:
        return f"expected exactly one active thread, found {active}"
    return None


# healthy verdicts of this process, by file state (see `_file_state`); a few stores at most
_VERIFIED: dict[str, tuple[object, ...]] = {}
_VERIFIED_MAX = 8
# a verdict is kept only for a file last changed this long before its check began: any later write
# then gets a newer ctime (the kernel's timestamp tick is far shorter), so the state cannot repeat
SETTLED_SECONDS = 0.05


def _file_state(path: Path) -> tuple[object, ...] | None:
    """What identifies the bytes of `path` and its side files without reading them: device, inode,
    mode, owner, size, mtime and ctime of `memory.db`, `-wal` and `-journal` (None when missing).
    Content cannot change without changing ctime, which no unprivileged process can set."""
    out: list[object] = []
    for suffix in ("", "-wal", "-journal"):
        try:
            st = os.lstat(f"{path}{suffix}")
        except FileNotFoundError:
            out.append(None)
            continue
        except OSError:
            return None
        if stat.S_ISLNK(st.st_mode) or st.st_ctime_ns % 1_000_000 == 0:
            # a link: its target can change without changing this; whole-millisecond ctimes: a
            # file system with coarse timestamps, where a rewrite can repeat the state
            return None
        out.append((st.st_dev, st.st_ino, st.st_mode, st.st_uid, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    return tuple(out)


def _settled(state: tuple[object, ...], started: float) -> bool:
    ctimes = [entry[6] for entry in state if entry is not None]  # type: ignore[index]
    return bool(ctimes) and max(ctimes) < (started - SETTLED_SECONDS) * 1e9  # type: ignore[operator]


def inspect_store(path: Path) -> Health:
    """Validate `path` without creating or changing any file in its folder (see
    `sqlite.untouched_params`). A missing or zero-length file reports `empty=True`.

    Opening a store checks it more than once in one process (the merge redirect reads it, then the
    store opens it): a healthy verdict is reused while the files are in exactly the state that was
    checked (`_file_state`: any write changes it), so the full check — `quick_check`, every CHECK,
    `foreign_key_check`, O(size of the store) — runs once per state, as strict as before."""
    key = os.path.abspath(path)
    started = time.time()
    state = _file_state(path)
    if state is not None and _VERIFIED.get(key) == state:
        return Health(True, SCHEMA_VERSION)
    health = _inspect_store(path)
    if health.healthy and state is not None and _settled(state, started) and _file_state(path) == state:
        if len(_VERIFIED) >= _VERIFIED_MAX:
            _VERIFIED.clear()
        _VERIFIED[key] = state
    else:
        _VERIFIED.pop(key, None)
    return health


def _inspect_store(path: Path) -> Health:
    try:
        st = path.stat()
    except FileNotFoundError:
        return Health(False, 0, None, empty=True)
    except PermissionError:
        return Health(False, 0, f"cannot read {path}: no search permission on the folder {path.parent}",
                      cause=PERMISSION)
    if st.st_size == 0:
        return Health(False, 0, None, empty=True)
    problem = _header_problem(path)
    if problem:
        cause = PERMISSION if "PermissionError" in problem else CORRUPT
        if cause == PERMISSION:
            problem = f"cannot read {path}: no read permission"
        return Health(False, 0, f"{problem} (supported schema version {SCHEMA_VERSION}, found unknown)", cause=cause)
    try:
        conn = open_readonly(path)
    except sqlite3.Error as exc:
        if "readonly" in str(exc).lower():  # a valid hot journal SQLite must roll back first
            return Health(False, 0, f"memory.db-journal holds an interrupted write that was never rolled back "
                                    f"(supported schema version {SCHEMA_VERSION}); the files are left as they are",
                          cause=JOURNAL)
        return Health(False, 0, f"the database is unreadable: {_safe_sqlite_message(exc)} "
                                f"(supported schema version {SCHEMA_VERSION})", cause=UNREADABLE)
    try:
        return _inspect_conn(conn)
    except sqlite3.DatabaseError as exc:
        return Health(False, 0, f"the database is unreadable: {_safe_sqlite_message(exc)} "
                                f"(supported schema version {SCHEMA_VERSION})", cause=UNREADABLE)
    finally:
        conn.close()


_CHECK = re.compile(r"\bCHECK\s*\(", re.IGNORECASE)
_TABLE = re.compile(r"^\s*CREATE\s+TABLE\s+(\w+)", re.IGNORECASE)


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
    """Every table's CHECK expressions, taken from the v4 DDL itself (the catalog is verified to
    equal it before these run)."""
    out = []
    for stmt in ddl:
        table = _TABLE.match(stmt)
        if table:
            exprs = tuple(_balanced(stmt, m.end()) for m in _CHECK.finditer(stmt))
            if exprs:
                out.append((table.group(1), exprs))
    return tuple(out)


def check_problem(conn: sqlite3.Connection, ddl: tuple[str, ...] = DDL) -> str | None:
    """SQLite's `quick_check` verifies CHECK constraints only on a writable connection; the store is
    inspected read-only, so each table's rows are tested against its CHECKs here, one scan a table.
    (A CHECK fails only when its expression is false, not NULL: `NOT (NULL)` selects nothing.) Then
    the recall index's rules across rows (`schema.RECALL_RULES`), for the tables `ddl` holds."""
    for table, exprs in check_constraints(ddl):
        where = " OR ".join(f"NOT ({e})" for e in exprs)
        bad = conn.execute(f'SELECT count(*) FROM "{table}" NOT INDEXED WHERE {where}').fetchone()[0]
        if bad:
            return f"CHECK constraint failed in {table} ({bad} row(s))"
    tables = {t.group(1) for t in map(_TABLE.match, ddl) if t}
    for table, what, sql in RECALL_RULES:  # what no CHECK can state (schema.RECALL_RULES)
        bad = conn.execute(sql).fetchone()[0] if table in tables else 0
        if bad:
            return f"{what} in {table} ({bad})"
    return None


def check_runtime_invariants(conn: sqlite3.Connection) -> str | None:
    """Cheap run-time check on a live connection: version, catalog, meta, one active thread.
    Returns a diagnostic, or None when the store still holds its invariants."""
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if version != SCHEMA_VERSION:
        return f"schema version changed to {version} at run time (supported {SCHEMA_VERSION})"
    diff = _catalog_difference(read_catalog(conn))
    if diff:
        return diff
    return invariant_problem(conn)


def _safe_sqlite_message(exc: sqlite3.Error) -> str:
    """SQLite's own messages name conditions, not data; keep them short anyway."""
    return str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
