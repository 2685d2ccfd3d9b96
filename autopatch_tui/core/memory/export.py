"""`memory export` (contracts §7): a one-shot JSON snapshot that never overwrites another.

The snapshot is written to a private temp file and published with `os.link`, which fails when the
name exists: concurrent exports in the same second (threads or processes) get `-1`, `-2`, … and no
temp or lock file survives. Only whitelisted columns are exported, so a foreign or damaged file can
never leak a stored model reply or provider error text. Every text column (raw turn text, the
checkpoint, quotes, item fields, the store's label, root and remote) is exported with its secrets
masked (`core.secrets.mask`, contracts §10); the store itself keeps the RAW turn as typed."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from autopatch_tui.core.bounded_json import loads_column
from autopatch_tui.core.clock import iso_utc
from autopatch_tui.core.constants import SCHEMA_VERSION
from autopatch_tui.core.errors import MemoryStoreError, ReadOnlyPathError
from autopatch_tui.core.memory.readonly import open_readonly
from autopatch_tui.core.memory.sqlite import read_txn
from autopatch_tui.core.memory.status import failure_from_row
from autopatch_tui.core.paths import StorePaths, open_dir
from autopatch_tui.core.secrets import mask_value
from autopatch_tui.core.terminal_text import plain_os_error, sqlite_words

EXPORT_FORMAT = "autopatch-memory-export"
MAX_NAME_ATTEMPTS = 10_000

JSON_COLUMNS = {"scope_paths", "evidence_keys", "applies_to_paths", "aliases", "keywords", "detail"}
TIME_COLUMNS = {"created_at", "ended_at", "archived_at", "updated_at", "completed_at", "added_at", "at",
                "retired_at", "available_at", "lease_expires_at"}
SECTIONS: dict[str, tuple[str, tuple[str, ...], str]] = {
    # key: (table, whitelisted columns, order)
    "threads": ("threads", ("id", "status", "created_at", "archived_at", "checkpoint", "checkpoint_sequence",
                            "origin_store"), "created_at, id"),
    "turns": ("turns", ("id", "thread_id", "sequence", "intent", "state", "user_text", "assistant_text",
                        "scope_paths", "evidence_keys", "created_at", "ended_at"), "thread_id, sequence"),
    "jobs": ("memory_jobs", ("id", "kind", "status", "thread_id", "turn_id", "parent_job_id", "attempts",
                             "provider_calls", "no_output_reason", "created_at", "updated_at", "completed_at"),
             "created_at, id"),
    "candidates": ("memory_candidates", ("id", "job_id", "consolidation_job_id", "thread_id", "status", "kind",
                                         "subject", "statement", "content", "strength", "origin", "recall_mode",
                                         "applies_to_paths", "aliases", "keywords", "origin_store", "created_at"),
                   "created_at, id"),
    "candidate_sources": ("candidate_sources", ("candidate_id", "ordinal", "turn_id", "role", "quote"),
                          "candidate_id, ordinal"),
    "items": ("memory_items", ("id", "logical_id", "revision", "kind", "status", "subject", "statement", "content",
                               "strength", "origin", "recall_mode", "applies_to_paths", "aliases", "keywords",
                               "thread_id", "replaced_by", "origin_store", "created_at", "updated_at"),
              "logical_id, revision"),
    "item_candidates": ("item_candidates", ("item_row_id", "candidate_id"), "item_row_id, candidate_id"),
}
META_COLUMNS = ("generation", "created_at", "store_name", "label", "root", "remote", "data_version",
                "retired_into", "retired_at")
# columns whose text may hold what a user typed or a model wrote: exported with secrets masked
TEXT_COLUMNS = {"user_text", "assistant_text", "checkpoint", "subject", "statement", "content", "quote",
                "applies_to_paths", "aliases", "keywords", "scope_paths", "evidence_keys", "label", "root", "remote"}
FAILURE_COLUMNS = ("failure_category", "failure_phase", "failure_stage", "failure_rule")


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")').fetchall()]


def _convert(col: str, value: object) -> object:
    if col in TEXT_COLUMNS:
        return mask_value(_plain(col, value))
    return _plain(col, value)


def _plain(col: str, value: object) -> object:
    if col in JSON_COLUMNS and isinstance(value, str):
        return loads_column(value, None)
    if col in TIME_COLUMNS and isinstance(value, (int, float)):
        return iso_utc(float(value))
    return value


def _section_rows(conn: sqlite3.Connection, key: str) -> Iterator[dict[str, object]]:
    """The section's rows, one at a time (a 100k-item store is never held in memory)."""
    table, wanted, order = SECTIONS[key]
    present = _columns(conn, table)
    if not present:
        return
    cols = [c for c in wanted if c in present]
    extra = [c for c in FAILURE_COLUMNS if key == "jobs" and c in present]
    order_cols = [o.strip() for o in order.split(",") if o.strip() in present]
    order_sql = f" ORDER BY {', '.join(order_cols)}" if order_cols else ""
    for r in conn.execute(f'SELECT * FROM "{table}"{order_sql}'):
        rec = {c: _convert(c, r[c]) for c in cols}
        if key == "jobs":
            failure = None
            if len(extra) == len(FAILURE_COLUMNS):
                failure = failure_from_row(r)
            rec["failure"] = failure.model_dump() if failure is not None else None
        yield rec


def _section(conn: sqlite3.Connection, key: str) -> list[dict[str, object]]:
    return list(_section_rows(conn, key))


def _header(conn: sqlite3.Connection, *, repo: str, now: float) -> dict[str, object]:
    meta: dict[str, object] = {}
    if _columns(conn, "memory_meta"):
        row = conn.execute("SELECT * FROM memory_meta LIMIT 1").fetchone()
        if row is not None:
            meta = {c: _convert(c, row[c]) for c in META_COLUMNS if c in row.keys()}
    meta["found_schema_version"] = int(conn.execute("PRAGMA user_version").fetchone()[0])
    return {"format": EXPORT_FORMAT, "schema_version": SCHEMA_VERSION, "exported_at": iso_utc(now),
            "repo": repo, "meta": meta}


def build_snapshot(conn: sqlite3.Connection, *, repo: str, now: float) -> dict[str, object]:
    """The whole snapshot as one value (tests and small stores; `write_snapshot` streams it)."""
    with read_txn(conn):
        snapshot = _header(conn, repo=repo, now=now)
        for key in SECTIONS:
            snapshot[key] = _section(conn, key)
    return snapshot


Progress = Callable[[int, int], None]  # (rows written, rows in all) — called every PROGRESS_EVERY rows
PROGRESS_EVERY = 2000


def _row_count(conn: sqlite3.Connection, key: str) -> int:
    table = SECTIONS[key][0]
    return int(conn.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]) if _columns(conn, table) else 0


def write_snapshot(conn: sqlite3.Connection, out: BinaryIO, *, repo: str, now: float,
                   progress: Progress | None = None) -> None:
    """The snapshot written to `out` row by row inside one read snapshot: memory stays flat at any
    store size. The same JSON value `build_snapshot` returns (one row per line)."""
    def put(text: str) -> None:
        out.write(text.encode("utf-8"))

    with read_txn(conn):
        total = sum(_row_count(conn, key) for key in SECTIONS) if progress is not None else 0
        head = json.dumps(_header(conn, repo=repo, now=now), ensure_ascii=False)
        put(head[:-1])  # the header's members, then the sections
        done = 0
        for key in SECTIONS:
            put(f", {json.dumps(key)}: [")
            for n, row in enumerate(_section_rows(conn, key)):
                put(("," if n else "") + "\n" + json.dumps(row, ensure_ascii=False))
                done += 1
                if progress is not None and done % PROGRESS_EVERY == 0:
                    progress(done, total)
            put("]")
        put("}\n")
        if progress is not None:
            progress(done, total)


def _publish(tmp: str, dfd: int, exports_dir: Path, stamp: str) -> Path:
    for n in range(MAX_NAME_ATTEMPTS):
        name = f"memory-{stamp}.json" if n == 0 else f"memory-{stamp}-{n}.json"
        try:
            os.link(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd, follow_symlinks=False)
        except FileExistsError:
            continue
        return exports_dir / name
    raise MemoryStoreError("cannot find a free export file name")


def _write_new_file(path: Path, write: Callable[[BinaryIO], None]) -> Path:
    """`export --to FILE`: a new private file; an existing one is never overwritten."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except FileExistsError:
        raise MemoryStoreError(f"{path} exists; an export never overwrites a file") from None
    except OSError as exc:
        raise MemoryStoreError(f"cannot write {path}: {plain_os_error(exc)}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return path


def write_export(paths: StorePaths, *, repo: str, now: float, conn: sqlite3.Connection | None = None,
                 to: Path | None = None, progress: Progress | None = None) -> Path:
    """Write the snapshot (streamed: `write_snapshot`) and return its path. `conn` None reads
    through a read-only connection (used for degraded stores whose file is still readable). `to`: a
    new file there, or a new `memory-<stamp>.json` in that folder, instead of
    `.autopatch-j/memory-exports/`. `progress(done, total)` follows the rows written."""
    own = conn is None
    if conn is None:
        if not os.path.isfile(paths.db):
            raise MemoryStoreError("there is no Memory database to export")
        conn = open_readonly(paths.db)
    reader = conn

    def write(fh: BinaryIO) -> None:
        try:
            write_snapshot(reader, fh, repo=repo, now=now, progress=progress)
        except sqlite3.DatabaseError as exc:
            raise MemoryStoreError(f"the Memory database is not readable for export: {sqlite_words(exc)}") from exc

    try:
        if to is not None and not to.is_dir():
            return _write_new_file(to, write)
        exports_dir = to if to is not None else paths.exports_dir
        try:
            return _write_in_folder(paths, exports_dir, write, now=now, own_folder=to is None)
        except (OSError, ValueError) as exc:  # our typed errors (read-only, links) are not OSErrors
            raise MemoryStoreError(f"cannot write an export into {exports_dir}: {plain_os_error(exc)}") from None
    finally:
        if own:
            conn.close()


def _write_in_folder(paths: StorePaths, exports_dir: Path, write: Callable[[BinaryIO], None], *, now: float,
                     own_folder: bool) -> Path:
    """A new `memory-<stamp>[-N].json` in `exports_dir` (written aside, then linked into place)."""
    to = None if own_folder else exports_dir
    dfd = open_dir(exports_dir, exports_dir, create=False) if to is not None else open_dir(
        paths.repo, paths.exports_dir, create=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    tmp = f".export-{os.getpid()}-{os.urandom(6).hex()}.tmp"
    try:
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600,
                         dir_fd=dfd)
        except PermissionError:
            raise ReadOnlyPathError(f"cannot write an export: no write permission on {exports_dir}; "
                                    "`memory export --to PATH` writes it elsewhere", exports_dir) from None
        try:
            with os.fdopen(fd, "wb") as fh:
                write(fh)
                fh.flush()
                os.fsync(fh.fileno())
            return _publish(tmp, dfd, exports_dir, stamp)
        finally:
            try:
                os.unlink(tmp, dir_fd=dfd)
            except FileNotFoundError:
                pass
    finally:
        os.close(dfd)
