"""Existing non-v4 or incomplete stores are degraded and never modified
("拒绝既有非 v4 database", "拒绝含未知对象的未标版本 database").

Every variant is checked byte-identical (sha256 of memory.db, and header bytes 18-19, the journal-mode
bytes) after: opening a MemoryManager, asking its status, `memory status --json` (exit 0, degraded),
and `memory list` (exit 3)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from autopatch_tui.core.errors import MemoryDegradedError
from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.memory import schema
from autopatch_tui.core.settings import Settings
from tests.support.fixtures import (bootstrap_healthy, db_path, file_fingerprint, is_error_doc, raw_connect, scalar,
                                    write_old_store)


@dataclass(frozen=True)
class Variant:
    build: Callable[[Path, Settings], None]
    found_version: int | None  # None: the version cannot be read (not an SQLite file)
    diagnostic_has: tuple[str, ...] = ()


def _fresh_sqlite(repo: Path) -> sqlite3.Connection:
    db = db_path(repo)
    db.parent.mkdir(mode=0o700, exist_ok=True)
    return raw_connect(db)


def _v3_file(repo: Path, settings: Settings) -> None:
    write_old_store(repo, "CREATE TABLE turns (id TEXT PRIMARY KEY, user_text TEXT, provider_error TEXT)",
                    "INSERT INTO turns VALUES ('t1', 'hello', 'SECRET-BODY')")


def _mutate_healthy(*statements: str) -> Callable[[Path, Settings], None]:
    def build(repo: Path, settings: Settings) -> None:
        db = bootstrap_healthy(repo, settings)
        conn = raw_connect(db)
        for stmt in statements:
            conn.execute(stmt)
        conn.close()

    return build


def _unversioned_unknown(repo: Path, settings: Settings) -> None:
    conn = _fresh_sqlite(repo)
    conn.execute("CREATE VIEW first_unknown_view AS SELECT 1 AS one")
    conn.execute("CREATE TABLE second_unknown_table (x)")
    conn.execute("CREATE INDEX third_unknown_index ON second_unknown_table(x)")
    conn.close()


def _two_active_threads(repo: Path, settings: Settings) -> None:
    _mutate_healthy(
        "DROP INDEX threads_one_active",
        "INSERT INTO threads (id, status, created_at) VALUES ('thr-second', 'active', 1.0)",
    )(repo, settings)


def _not_sqlite(repo: Path, settings: Settings) -> None:
    db = db_path(repo)
    db.parent.mkdir(mode=0o700, exist_ok=True)
    db.write_bytes(b"this is not a database, just some text that happens to be here\n" * 200)


def _truncated(repo: Path, settings: Settings) -> None:
    db = bootstrap_healthy(repo, settings)
    head = db.read_bytes()[:1000]
    db.write_bytes(head)


def _wal_user_version_3(repo: Path, settings: Settings) -> None:
    db = bootstrap_healthy(repo, settings)
    conn = raw_connect(db)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.execute("PRAGMA user_version = 3")
    conn.close()


ALTERED_STORE_ALIASES = (
    "CREATE TABLE store_aliases (\n    alias TEXT PRIMARY KEY,\n    added_at REAL NOT NULL,\n    note TEXT\n)"
    " WITHOUT ROWID"
)

VARIANTS: dict[str, Variant] = {
    "v3-file": Variant(_v3_file, 3, ("schema version 3",)),
    "v4-extra-table": Variant(_mutate_healthy("CREATE TABLE extra_notes (x TEXT)"), 4,
                              ("table", "extra_notes")),
    "v4-missing-index": Variant(_mutate_healthy("DROP INDEX memory_items_updated"), 4,
                                ("index", "memory_items_updated")),
    "v4-altered-table": Variant(_mutate_healthy("DROP TABLE store_aliases", ALTERED_STORE_ALIASES), 4,
                                ("table", "store_aliases")),
    "v0-unknown-objects": Variant(_unversioned_unknown, 0, ("view", "first_unknown_view")),
    "two-active-threads": Variant(_two_active_threads, 4, ()),
    "missing-meta-row": Variant(_mutate_healthy("DELETE FROM memory_meta"), 4, ("memory_meta",)),
    "not-sqlite": Variant(_not_sqlite, None, ("not an SQLite database",)),
    "truncated": Variant(_truncated, None, ("truncated",)),
    "wal-user-version-3": Variant(_wal_user_version_3, 3, ("schema version 3",)),
}


@pytest.mark.parametrize("name", list(VARIANTS))
def test_degraded_store_is_reported_and_left_byte_identical(name: str, repo: Path, settings: Settings,
                                                            invoke_cli) -> None:
    variant = VARIANTS[name]
    variant.build(repo, settings)
    db = db_path(repo)
    before = file_fingerprint(db)
    size_before = db.stat().st_size

    mgr = MemoryManager.open(repo, settings)
    try:
        assert not mgr.healthy
        report = mgr.status()
        assert report.state == "degraded"
        assert report.supported_schema_version == 4
        assert report.active_thread_id is None
        diag = report.diagnostic
        assert diag
        with pytest.raises(MemoryDegradedError):
            mgr.list_items()
        with pytest.raises(MemoryDegradedError):
            mgr.begin_turn("must not be stored")
        with pytest.raises(MemoryDegradedError):
            mgr.new_thread()
    finally:
        mgr.close()

    assert "supported schema version 4" in diag
    if variant.found_version is not None:
        assert report.schema_version == variant.found_version
        assert f"found {variant.found_version}" in diag
    else:
        assert report.schema_version == 0
    for fragment in variant.diagnostic_has:
        assert fragment in diag, (fragment, diag)
    if name == "v0-unknown-objects":  # the FIRST unknown object only
        assert "second_unknown_table" not in diag and "third_unknown_index" not in diag
    assert "SECRET-BODY" not in diag and "hello" not in diag

    rc, out, err = invoke_cli("memory", "status", json=True)
    assert rc == 3, err  # the report, and exit 3 like every command that needs a healthy store
    assert out["state"] == "degraded" and out["error"] == {"code": 3, "message": f"Memory is degraded: {diag}"}
    assert out["diagnostic"] == diag
    assert out["schema_version"] == report.schema_version

    rc, out, err = invoke_cli("memory", "list", json=True)
    assert rc == 3, (rc, out, err)
    assert is_error_doc(out, 3)  # the one JSON document is the error's; its line goes to stderr too
    assert "degraded" in err.lower()

    assert file_fingerprint(db) == before, "a degraded memory.db was modified"
    assert db.stat().st_size == size_before


def test_degraded_v3_store_through_the_real_cli_process(repo: Path, settings: Settings, run_cli) -> None:
    _v3_file(repo, settings)
    db = db_path(repo)
    before = file_fingerprint(db)
    assert before[1] == b"\x01\x01"  # rollback-journal file; must not be switched to WAL
    rc, out, err = run_cli("memory", "status", json=True)
    assert rc == 3, err
    assert (out["state"], out["schema_version"], out["supported_schema_version"]) == ("degraded", 3, 4)
    assert "found 3" in out["diagnostic"] and "SECRET-BODY" not in repr(out)
    rc, out, err = run_cli("memory", "list")
    assert rc == 3, err
    assert out == "" and "found 3" in err
    assert file_fingerprint(db) == before
    assert not db.with_name("memory.db-wal").exists()


def test_zero_active_threads_is_degraded_and_not_repaired(repo: Path, settings: Settings) -> None:
    """Catalog intact, but the only thread was archived: degraded by the one-active-thread rule, and
    opening (with its startup recovery) must not invent an active thread."""
    db = bootstrap_healthy(repo, settings)
    conn = raw_connect(db)
    conn.execute("UPDATE threads SET status = 'archived', archived_at = 2.0")
    conn.close()
    before = file_fingerprint(db)
    mgr = MemoryManager.open(repo, settings)
    try:
        report = mgr.status()
        assert report.state == "degraded"
        assert "exactly one active thread" in (report.diagnostic or "")
        assert "found 0" in (report.diagnostic or "")
    finally:
        mgr.close()
    assert scalar(db, "SELECT count(*) FROM threads WHERE status = 'active'") == 0
    assert file_fingerprint(db) == before


def test_v0_diagnostic_names_the_first_unknown_object_not_a_known_one(repo: Path, settings: Settings) -> None:
    """An unversioned file whose first object is an exact v4 object, followed by a foreign one."""
    conn = _fresh_sqlite(repo)
    conn.execute(schema.DDL[0])  # memory_meta, exactly as v4 creates it
    conn.execute("CREATE TABLE legacy_facts (id INTEGER PRIMARY KEY, body TEXT)")
    conn.close()
    before = file_fingerprint(db_path(repo))
    mgr = MemoryManager.open(repo, settings)
    try:
        report = mgr.status()
    finally:
        mgr.close()
    assert file_fingerprint(db_path(repo)) == before
    diag = report.diagnostic or ""
    assert report.state == "degraded" and "found 0" in diag
    assert "table 'legacy_facts'" in diag
    assert "memory_meta" not in diag


def test_zero_length_db_is_not_degraded(repo: Path, settings: Settings, invoke_cli) -> None:
    db = db_path(repo)
    db.parent.mkdir(mode=0o700)
    db.touch()
    rc, out, err = invoke_cli("memory", "status", json=True)
    assert rc == 0, err
    assert out["state"] == "healthy" and out["schema_version"] == 4
    assert out["active_thread_id"]
    assert scalar(db, "PRAGMA user_version") == 4
