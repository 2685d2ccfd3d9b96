"""A read-only look at a store sees exactly what a read-write connection will read, and changes
nothing in its folder (issue 24, item 1).

For every layout of side files a real folder can have — none; a `-wal` and `-shm` left by a crash or
a copy; a `-wal` without `-shm` (a backup); an empty `-wal`; a rollback-journal header with a `-wal`;
a live writer in another connection — `readonly.open_readonly` is compared with what a plain
read-write connection reads from an identical copy of the folder: user_version, the catalog and the
rows. The folder it read stays byte-identical, and a private copy it needed is gone once it closes."""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from autopatch_tui.core.memory import readonly
from autopatch_tui.core.memory.health import inspect_store
from tests.memory._hostile import commit_only_in_wal, tree_fingerprint
from tests.support.fixtures import raw_connect


def _view(conn: sqlite3.Connection) -> tuple[object, ...]:
    return (conn.execute("PRAGMA user_version").fetchone()[0],
            tuple(tuple(r) for r in conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name")),
            tuple(tuple(r) for r in conn.execute("SELECT * FROM notes ORDER BY rowid")))


def _store(folder: Path) -> Path:
    folder.mkdir()
    db = folder / "memory.db"
    conn = raw_connect(db)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE notes (body TEXT)")
    conn.execute("INSERT INTO notes VALUES ('in the file')")
    conn.close()
    return db


def _wal_and_shm(db: Path) -> None:
    commit_wal(db, shm=True)


def commit_wal(db: Path, *, shm: bool) -> None:
    """A copy taken while a connection had committed into the WAL only (no checkpoint)."""
    scratch = Path(tempfile.mkdtemp())
    shutil.copyfile(db, scratch / "memory.db")
    conn = raw_connect(scratch / "memory.db")
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute("INSERT INTO notes VALUES ('only in the WAL')")
    conn.execute("PRAGMA user_version = 5")
    conn.execute("CREATE TABLE later (x)")
    for suffix in ("", "-wal", *(("-shm",) if shm else ())):
        shutil.copyfile(scratch / f"memory.db{suffix}", db.with_name(f"memory.db{suffix}"))
    conn.close()
    shutil.rmtree(scratch)


def _wal_only_no_shm(db: Path) -> None:
    commit_wal(db, shm=False)


def _empty_wal(db: Path) -> None:
    db.with_name("memory.db-wal").write_bytes(b"")


def _stale_shm_no_wal(db: Path) -> None:
    db.with_name("memory.db-shm").write_bytes(os.urandom(32768))


def _garbage_shm(db: Path) -> None:
    commit_wal(db, shm=True)
    db.with_name("memory.db-shm").write_bytes(os.urandom(32768))


def _rollback_header_with_wal(db: Path) -> None:
    """SQLite reads a `-wal` beside the file whatever the header's journal mode says."""
    commit_wal(db, shm=False)
    with db.open("r+b") as fh:
        fh.seek(18)
        fh.write(b"\x01\x01")


def _rollback_file(db: Path) -> None:
    conn = raw_connect(db)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()


LAYOUTS: dict[str, tuple[Callable[[Path], None], str]] = {
    "no-side-files": (lambda db: None, readonly.IMMUTABLE),
    "wal-and-shm": (_wal_and_shm, readonly.READONLY_SHM),
    "wal-without-shm": (_wal_only_no_shm, readonly.COPY_ASIDE),
    "empty-wal": (_empty_wal, readonly.IMMUTABLE),
    "stale-shm-without-wal": (_stale_shm_no_wal, readonly.IMMUTABLE),
    "wal-and-garbage-shm": (_garbage_shm, readonly.READONLY_SHM),
    "rollback-header-with-wal": (_rollback_header_with_wal, readonly.COPY_ASIDE),
    "rollback-file": (_rollback_file, readonly.LOCKING),
}


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_the_check_reads_what_the_connection_will_and_writes_nothing(name: str, tmp_path: Path) -> None:
    build, plan = LAYOUTS[name]
    db = _store(tmp_path / "store")
    build(db)
    twin = tmp_path / "twin"
    shutil.copytree(db.parent, twin)
    before = tree_fingerprint(db.parent)
    temp_before = set(os.listdir(tempfile.gettempdir()))

    assert readonly.read_plan(db) == plan
    conn = readonly.open_readonly(db)
    try:
        seen = _view(conn)
    finally:
        conn.close()
    rw = sqlite3.connect(twin / "memory.db")  # the connection the app would open
    try:
        assert seen == _view(rw)
    finally:
        rw.close()
    assert tree_fingerprint(db.parent) == before, "the read-only look changed the folder"
    leftovers = {n for n in set(os.listdir(tempfile.gettempdir())) - temp_before if n.startswith("autopatch-check-")}
    assert not leftovers, leftovers


def test_a_live_writer_is_read_as_it_commits(tmp_path: Path) -> None:
    """With a peer holding the store open, the check reads the peer's index and its latest commit."""
    db = _store(tmp_path / "store")
    writer = raw_connect(db)
    try:
        writer.execute("INSERT INTO notes VALUES ('committed by a live peer')")
        writer.execute("PRAGMA user_version = 7")
        assert readonly.read_plan(db) == readonly.READONLY_SHM
        conn = readonly.open_readonly(db)
        try:
            version, _, rows = _view(conn)
        finally:
            conn.close()
        assert version == 7 and rows[-1] == ("committed by a live peer",)
    finally:
        writer.close()


def test_a_hot_journal_beside_a_wal_file_is_refused(tmp_path: Path) -> None:
    """A rollback journal a read-write connection would replay into the file (a WAL file's too, so
    no read-only look can see what it will read): the store is degraded (cause `journal`), and
    nothing is written or created."""
    db = _store(tmp_path / "store")
    head = db.read_bytes()[:512]
    db.with_name("memory.db-journal").write_bytes(readonly.JOURNAL_MAGIC + b"\x00\x00\x00\x01" + head)
    before = tree_fingerprint(db.parent)
    assert readonly.read_plan(db) == readonly.LOCKING
    health = inspect_store(db)
    assert not health.healthy and health.cause == "journal" and "memory.db-journal" in (health.diagnostic or "")
    assert tree_fingerprint(db.parent) == before


def test_a_private_copy_is_removed_even_when_the_connection_is_only_dropped(tmp_path: Path) -> None:
    import gc

    db = _store(tmp_path / "store")
    commit_wal(db, shm=False)
    temp_before = set(os.listdir(tempfile.gettempdir()))
    conn = readonly.open_readonly(db)
    made = {n for n in set(os.listdir(tempfile.gettempdir())) - temp_before if n.startswith("autopatch-check-")}
    assert len(made) == 1
    folder = Path(tempfile.gettempdir()) / made.pop()
    assert oct(folder.stat().st_mode & 0o777) == "0o700"
    assert {oct(p.stat().st_mode & 0o777) for p in folder.iterdir() if not p.name.endswith("-shm")} == {"0o600"}
    del conn
    gc.collect()
    assert not folder.exists()
