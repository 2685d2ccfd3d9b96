"""The open-time check of an existing memory.db: what is checked before a store is used, without
modifying anything, in time independent of the store's size.

A store is healthy at open when: it is an SQLite file (header, page size, whole pages) that no
other name links to (link count 1, side files too: cause `hard_link`); read exactly as the
read-write connection will read it — its `-wal` included, a hot `-journal` refused (cause
`journal`) (`readonly.read_plan`) — its `user_version` is 4; its catalog equals
exactly what `schema.DDL` creates; `memory_meta` holds its one row (id 1); and one thread is
active, found through the unique partial index `threads_one_active`. Each of these reads a few
pages (O(1) or O(log N)); nothing scans a table. (The catalog may also be exactly that of a store
written before issue 23, with the recall index in its first layout: `schema.layout_ddl`.)

What only a scan can see — SQLite's `quick_check`, every CHECK constraint, the foreign keys, and
rows a bypassed unique index hides (a second active thread, two active items of one identity) — is
the deep check (`deep_check.py`), which runs after the first frame or after a command's answer.
Anything else is degraded with a `cause`, and the diagnostic says why in safe words (object types
and names, versions, counts: never row content)."""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from autopatch_tui.core.constants import DB_SIDE_SUFFIXES, SCHEMA_VERSION
from autopatch_tui.core.memory.readonly import open_readonly
from autopatch_tui.core.memory.schema import CatalogEntry, expected_catalog, layout_ddl, read_catalog
from autopatch_tui.core.memory.sqlite import side_file
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
    read: object = None  # what `inspect_store(..., then=...)` read through the checking connection


# causes (contracts §5 `cause`); permission problems never suggest `memory clear`
SCHEMA, CORRUPT, UNREADABLE, READ_ONLY, SYMLINK, NOT_A_FILE, JOURNAL, PERMISSION, MERGED, HARD_LINK = (
    "schema", "corrupt", "unreadable", "read_only", "symlink", "not_a_file", "journal", "permission", "merged",
    "hard_link")
NO_CLEAR_CAUSES = frozenset({READ_ONLY, PERMISSION, MERGED})
HOT_JOURNAL_TEXT = ("memory.db-journal holds an interrupted write that was never rolled back "
                    f"(supported schema version {SCHEMA_VERSION}); the files are left as they are")


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


def open_time_problem(conn: sqlite3.Connection) -> Health:
    """Version, exact catalog, the meta singleton and the active thread, read through `conn`."""
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
    problem = invariant_problem(conn)
    if problem:
        return _degraded(version, problem, CORRUPT)
    return Health(True, version)


MAX_COUNTED_META = 100


def invariant_problem(conn: sqlite3.Connection) -> str | None:
    """The singleton and one-active-thread rules, each in a few page reads: the meta rows by rowid
    (`memory_meta.id` is the rowid, so no index is involved; at most MAX_COUNTED_META + 1 are
    counted), the active thread through its unique partial index. A second active thread that a
    bypassed index hides is the deep check's (`deep_check.invariant_scan`)."""
    metas = len(conn.execute("SELECT 1 FROM memory_meta LIMIT ?", (MAX_COUNTED_META + 1,)).fetchall())
    singleton = conn.execute("SELECT count(*) FROM memory_meta WHERE id = 1").fetchone()[0]
    if metas == 0 or not singleton:
        return "the memory_meta singleton is missing"
    if metas != 1:
        found = str(metas) if metas <= MAX_COUNTED_META else f"more than {MAX_COUNTED_META}"
        return f"memory_meta must hold exactly one row (id 1), found {found}"
    active = conn.execute("SELECT count(*) FROM (SELECT 1 FROM threads INDEXED BY threads_one_active"
                          " WHERE status = 'active' LIMIT 2)").fetchone()[0]
    if active != 1:
        return f"expected exactly one active thread, found {active}"
    return None


def hard_link_problem(db: Path) -> str | None:
    """A store file (or side file) that another name links to: every write here would change it."""
    for suffix in ("", *DB_SIDE_SUFFIXES):
        path = side_file(db, suffix)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
            return (f"{path} has {st.st_nlink} hard links: the same file has another name, which every write "
                    "here would change too; Memory never writes a file with more than one link; `memory clear "
                    "--confirm` moves it aside (the other names keep their content) and starts a clean store")
    return None


def inspect_store(path: Path, then: Callable[[sqlite3.Connection], object] | None = None) -> Health:
    """The open-time check of `path` (see the module doc), creating or changing no file in its
    folder. A missing or zero-length file reports `empty=True`. `then`, when the store is healthy,
    reads more through the same connection (its result is `Health.read`)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return Health(False, 0, None, empty=True)
    except PermissionError:
        return Health(False, 0, f"cannot read {path}: no search permission on the folder {path.parent}",
                      cause=PERMISSION)
    linked = hard_link_problem(path)
    if linked:  # before anything else: even an empty file with another name is never written
        return Health(False, 0, linked, cause=HARD_LINK)
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
    except (sqlite3.Error, OSError) as exc:
        return _unreadable(exc)
    try:
        health = open_time_problem(conn)
        if health.healthy and then is not None:
            health = replace(health, read=then(conn))
        return health
    except sqlite3.DatabaseError as exc:
        return _unreadable(exc)
    finally:
        conn.close()


def _unreadable(exc: BaseException) -> Health:
    if isinstance(exc, sqlite3.Error) and "readonly" in str(exc).lower():  # a hot journal SQLite must roll back
        return Health(False, 0, HOT_JOURNAL_TEXT, cause=JOURNAL)
    text = _safe_sqlite_message(exc) if isinstance(exc, sqlite3.Error) else type(exc).__name__
    return Health(False, 0, f"the database is unreadable: {text} (supported schema version {SCHEMA_VERSION})",
                  cause=UNREADABLE)


def check_runtime_invariants(conn: sqlite3.Connection) -> str | None:
    """The open-time check again on a live connection (status, the heartbeat, before a repair
    call): version, catalog, meta, one active thread. Returns a diagnostic, or None."""
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
