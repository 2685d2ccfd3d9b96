"""A store file with a second name is never written (contracts §1, issue 24 item 2): a write here
would change the other name's file too. `memory clear --confirm` moves the linked file aside like a
symlink — with its `-wal` under the matching name, so the moved file still holds its last commits —
and the other name keeps its content."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.settings import Settings
from tests.memory._hostile import commit_only_in_wal, tree_fingerprint
from tests.support.fixtures import bootstrap_healthy, db_path


def test_clear_moves_a_hard_linked_store_aside_with_its_wal(repo: Path, settings: Settings, tmp_path: Path,
                                                              invoke_cli) -> None:
    db = bootstrap_healthy(repo, settings)
    commit_only_in_wal(db, "INSERT INTO store_aliases (alias, added_at) VALUES ('kept-in-the-wal', 1.0)", shm=False)
    outside = tmp_path / "elsewhere" / "x.db"
    outside.parent.mkdir()
    os.link(db, outside)
    outside_before = tree_fingerprint(outside.parent)

    rc, status, err = invoke_cli("memory", "status", json=True)
    assert rc == 3 and status["cause"] == "hard_link" and "has 2 hard links" in status["diagnostic"], (status, err)
    rc, _, err = invoke_cli("new")
    assert rc == 3 and "hard links" in err
    rc, _, err = invoke_cli("memory", "clear", "--confirm")
    assert rc == 0, err
    moved = [line.split("moved aside (not deleted): ", 1)[1] for line in err.splitlines() if "moved aside" in line]
    [aside] = [Path(m) for m in moved if not m.endswith("-wal")]
    assert sorted(moved) == sorted([str(aside), f"{aside}-wal"]), moved  # the WAL went along, matching name

    assert tree_fingerprint(outside.parent) == outside_before  # the other name: untouched
    assert os.stat(outside).st_ino == os.stat(aside).st_ino
    conn = sqlite3.connect(f"file:{aside}?mode=ro", uri=True)
    try:
        assert conn.execute("SELECT alias FROM store_aliases").fetchall() == [("kept-in-the-wal",)]
    finally:
        conn.close()
    rc, status, _ = invoke_cli("memory", "status", json=True)
    assert status["state"] == "healthy" and os.stat(db).st_nlink == 1


def test_an_empty_hard_linked_file_is_not_made_a_store(repo: Path, settings: Settings, tmp_path: Path) -> None:
    """A zero-length `memory.db` is normally bootstrapped in place; with a second name it must not
    be (the schema would be written into the other file)."""
    outside = tmp_path / "empty.db"
    outside.write_bytes(b"")
    db = db_path(repo)
    db.parent.mkdir(mode=0o700)
    os.link(outside, db)
    mgr = MemoryManager.open(repo, settings)
    try:
        assert not mgr.healthy and mgr.store.health.cause == "hard_link"
    finally:
        mgr.close()
    assert outside.read_bytes() == b""
    assert sorted(p.name for p in db.parent.iterdir()) == ["memory.db"]
