"""Issue 28 item 7: the b-tree damage diagnostic quotes SQLite's first problem (not its header line
`*** in database main ***`), and a store in rollback-journal mode — one this app never opened for
writing: shipped by a repository, copied — whose damage only the deep check sees is found degraded
with its folder exactly as it was: no switch to WAL, no `-wal`/`-shm`, no `.gitignore`."""

from __future__ import annotations

import sqlite3
import struct
from pathlib import Path

from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.memory.deep_check import first_problem
from autopatch_tui.core.settings import Settings
from tests.memory._hostile import tree_fingerprint
from tests.support.memory_factory import add_item


def _seed(repo: Path, settings: Settings, n: int = 400) -> Path:
    mgr = MemoryManager.open(repo, settings)
    try:
        conn = mgr.store.conn()
        for i in range(n):
            add_item(conn, subject=f"rule number {i}", statement=f"Always apply rule number {i} to module m{i}.",
                     keywords=[f"kw{i}", f"topic{i % 17}"], applies_to_paths=[f"src/m{i}/**"])
        return mgr.paths.db
    finally:
        mgr.close()


def _damage_an_index_leaf(db: Path) -> str:
    """Set an absurd cell count on a leaf page of a multi-page index (a fault the open-time check
    does not read, `quick_check` does). Returns the index's name."""
    conn = sqlite3.connect(db)
    try:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        indexes = conn.execute("SELECT name, rootpage FROM sqlite_master WHERE type = 'index' AND rootpage > 1"
                               " ORDER BY name").fetchall()
    finally:
        conn.close()
    data = bytearray(db.read_bytes())
    for name, root in indexes:
        off = (root - 1) * page_size
        if data[off] != 2:  # an interior index page: it has children
            continue
        pointer = struct.unpack(">H", data[off + 12:off + 14])[0]
        child = struct.unpack(">I", data[off + pointer:off + pointer + 4])[0]
        leaf = (child - 1) * page_size
        if data[leaf] != 10:
            continue
        data[leaf + 3:leaf + 5] = struct.pack(">H", 5000)
        db.write_bytes(bytes(data))
        return name
    raise AssertionError("no multi-page index to damage")


def _to_rollback_journal(db: Path) -> None:
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA journal_mode = DELETE").fetchone()[0] == "delete"
    finally:
        conn.close()


def test_the_first_problem_is_a_problem_not_the_header_line() -> None:
    assert first_problem(["*** in database main ***\nPage 5: btreeInitPage() returns error code 11"]) == \
        "Page 5: btreeInitPage() returns error code 11"
    assert first_problem(["row 3 missing from index x", "wrong # of entries in index x"]) == \
        "row 3 missing from index x"


def test_btree_damage_is_diagnosed_by_its_first_problem(repo: Path, settings: Settings) -> None:
    db = _seed(repo, settings)
    _damage_an_index_leaf(db)
    mgr = MemoryManager.open(repo, settings)
    try:
        verdict = mgr.verify_store()
        assert verdict is not None and not verdict.healthy
        diagnostic = mgr.store.health.diagnostic or ""
        assert "*** in database" not in diagnostic
        assert "first: Page " in diagnostic and "btreeInitPage" in diagnostic, diagnostic
    finally:
        mgr.close()


def test_a_rollback_journal_store_with_hidden_damage_is_left_exactly_as_it_was(repo: Path, settings: Settings,
                                                                               invoke_cli) -> None:
    db = _seed(repo, settings)
    _to_rollback_journal(db)
    (repo / ".autopatch-j" / ".gitignore").unlink()
    _damage_an_index_leaf(db)
    before = tree_fingerprint(repo / ".autopatch-j")
    assert db.read_bytes()[18:20] == b"\x01\x01"
    rc, out, err = invoke_cli("memory", "list", json=True)
    assert rc == 3, err
    assert "integrity check failed" in out["error"]["message"] and "*** in database" not in out["error"]["message"]
    assert tree_fingerprint(repo / ".autopatch-j") == before
    assert db.read_bytes()[18:20] == b"\x01\x01"
    rc, _, _ = invoke_cli("memory", "status", json=True)  # the next command: refused without a write too
    assert rc == 3
    assert tree_fingerprint(repo / ".autopatch-j") == before


def test_an_intact_rollback_journal_store_is_checked_then_switched(repo: Path, settings: Settings,
                                                                   invoke_cli) -> None:
    db = _seed(repo, settings, n=20)
    _to_rollback_journal(db)
    (repo / ".autopatch-j" / ".gitignore").unlink()
    rc, out, err = invoke_cli("memory", "list", json=True)
    assert rc == 0 and len(out["items"]) == 20, err
    assert db.read_bytes()[18:20] == b"\x02\x02"
    assert (repo / ".autopatch-j" / ".gitignore").read_text() == "*\n"


def test_a_wal_store_with_hidden_damage_gets_no_gitignore(repo: Path, settings: Settings, invoke_cli) -> None:
    """The journal-mode header is the repository's to set: a shipped store already in WAL mode, with
    no remembered verdict, has its `.gitignore` written only once the deep check passed."""
    db = _seed(repo, settings)
    assert db.read_bytes()[18:20] == b"\x02\x02"
    (repo / ".autopatch-j" / ".gitignore").unlink()
    _damage_an_index_leaf(db)
    mgr = MemoryManager.open(repo, settings)
    try:
        assert not (repo / ".autopatch-j" / ".gitignore").exists()  # opened: nothing written yet
        verdict = mgr.verify_store()
        assert verdict is not None and not verdict.healthy
    finally:
        mgr.close()
    assert not (repo / ".autopatch-j" / ".gitignore").exists()
    rc, _, _ = invoke_cli("memory", "status", json=True)
    assert not (repo / ".autopatch-j" / ".gitignore").exists()


def test_an_intact_wal_store_gets_its_gitignore_once_checked(repo: Path, settings: Settings) -> None:
    _seed(repo, settings, n=20)
    (repo / ".autopatch-j" / ".gitignore").unlink()
    mgr = MemoryManager.open(repo, settings)
    try:
        if not mgr.store.verified:  # no remembered verdict: written once the check passes
            assert not (repo / ".autopatch-j" / ".gitignore").exists()
            verdict = mgr.verify_store()
            assert verdict is not None and verdict.healthy
        assert (repo / ".autopatch-j" / ".gitignore").read_text() == "*\n"
    finally:
        mgr.close()
