"""Damaged, hostile and read-only stores (issue 11): every command on every variant.

For each variant the whole CLI runs in-process (`status`, `list`, `show`, `search`, `export --to`,
`forget`, `new`, `process`, `ask`) and must: give the precise diagnostic and `cause`, never raise
(no traceback), leave `.autopatch-j/` — and whatever a link points at — byte-identical (listing,
modes and hashes, side files included), and then `clear --confirm` recovers to a healthy store
(links and folders moved aside, never deleted or followed) — except where the cause is a
permission problem, which clear must refuse without touching anything."""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from autopatch_tui.core.manager import MemoryManager
from tests.memory._hostile import (
    Build,
    World,
    bypass_index,
    commit_only_in_wal,
    give_to_nobody,
    new_world,
    remove_tree,
    sql,
    sqlite_rollback_file,
    tree_fingerprint,
    unprivileged,
    world_dir,
)
from tests.support.fixtures import raw_connect

GARBAGE = b"\x7fnot a journal at all, just bytes someone left here " * 20


@dataclass(frozen=True)
class Variant:
    build: Build
    cause: str
    says: tuple[str, ...]  # diagnostic fragments
    readable: bool = False  # read_only: read commands work
    watch: tuple[str, ...] = ()  # paths (relative to the world's base) that must stay byte-identical
    clearable: bool = True
    export_rc: int | None = None  # None: 3 for links, non-files and permission problems, else 0
    deep: bool = False  # only the deep check sees it: the first command answers, then finds it


def _link(name: str, target: str) -> Build:
    def build(w: World) -> None:
        path = w.state / name
        if path.exists() or path.is_symlink():
            path.unlink() if not path.is_dir() or path.is_symlink() else shutil.rmtree(path)
        os.symlink(target, path)
    return build


def _mutate(*statements: str) -> Build:
    return lambda w: sql(w.db, *statements)


def _v3(w: World) -> None:
    w.db.unlink()
    sql(w.db, "CREATE TABLE turns (id TEXT PRIMARY KEY, user_text TEXT, provider_error TEXT)",
        "INSERT INTO turns VALUES ('t1', 'hello', 'SECRET-BODY')", "PRAGMA user_version = 3")


def _v0_unknown(w: World) -> None:
    w.db.unlink()
    sql(w.db, "CREATE VIEW first_unknown_view AS SELECT 1 AS one", "CREATE TABLE second_unknown_table (x)")


def _not_sqlite(w: World) -> None:
    w.db.write_bytes(b"this is not a database, just some text\n" * 200)


def _truncated(w: World) -> None:
    w.db.write_bytes(w.db.read_bytes()[:1000])


def _dangling_db_link(w: World) -> None:
    _link("memory.db", str(w.elsewhere / "nowhere.db"))(w)


def _empty_file_link(w: World) -> None:
    (w.elsewhere / "empty.txt").write_bytes(b"")
    _link("memory.db", str(w.elsewhere / "empty.txt"))(w)


def _other_store_link(w: World) -> None:
    _link("memory.db", str(w.other / ".autopatch-j" / "memory.db"))(w)


def _state_dir_link(w: World) -> None:
    shutil.rmtree(w.state)
    os.symlink(w.other / ".autopatch-j", w.state)


def _state_dir_dangling(w: World) -> None:
    shutil.rmtree(w.state)
    os.symlink(w.elsewhere / "no-such-folder", w.state)


def _side_link(suffix: str) -> Build:
    def build(w: World) -> None:
        (w.elsewhere / f"victim{suffix}").write_bytes(b"precious")
        _link(f"memory.db{suffix}", str(w.elsewhere / f"victim{suffix}"))(w)
    return build


def _exports_link(w: World) -> None:
    (w.elsewhere / "exports").mkdir()
    _link("memory-exports", str(w.elsewhere / "exports"))(w)


def _db_folder(w: World) -> None:
    w.db.unlink()
    w.db.mkdir()
    (w.db / "keep.txt").write_text("a folder someone named memory.db")


def _wal_folder(w: World) -> None:
    (w.state / "memory.db-wal").mkdir()


def _fifo(w: World) -> None:
    w.db.unlink()
    os.mkfifo(w.db)


def _state_is_file(w: World) -> None:
    shutil.rmtree(w.state)
    w.state.write_text("not a folder")


def _garbage_journal(w: World) -> None:
    (w.state / "memory.db-journal").write_bytes(GARBAGE)


def _garbage_journal_rollback(w: World) -> None:
    sqlite_rollback_file(w.db)
    (w.state / "memory.db-journal").write_bytes(GARBAGE)


def _two_active_bypassed(w: World) -> None:
    bypass_index(w.db, "threads_one_active", "WHERE status = 'active'", "WHERE status = 'never'",
                 "INSERT INTO threads (id, status, created_at) VALUES ('thr-second', 'active', 1.0)")


def _two_active_dropped(w: World) -> None:
    sql(w.db, "DROP INDEX threads_one_active",
        "INSERT INTO threads (id, status, created_at) VALUES ('thr-second', 'active', 1.0)")


def _check_bypassed(table: str, insert: str) -> Build:
    return lambda w: sql(w.db, "PRAGMA ignore_check_constraints = ON", insert)


def _fk_broken(w: World) -> None:
    sql(w.db, "PRAGMA foreign_keys = OFF",
        "INSERT INTO turns (id, thread_id, sequence, intent, state, user_text, created_at, ended_at)"
        " VALUES ('turn-orphan', 'thr-missing', 1, 'general_chat', 'failed', 'x', 1.0, 2.0)")


def _zero_active(w: World) -> None:
    sql(w.db, "UPDATE threads SET status = 'archived', archived_at = 2.0")


def _chmod(rel: str, mode: int) -> Build:
    def build(w: World) -> None:
        os.chmod(w.repo / rel, mode)
    return build


def _readonly_checkout(w: World) -> None:
    shutil.rmtree(w.state)
    os.chmod(w.repo, 0o555)


def _wal_only(*statements: str, shm: bool) -> Build:
    return lambda w: commit_only_in_wal(w.db, *statements, shm=shm)


def _hard_linked_db(w: World) -> None:
    """`ln /elsewhere/x.db repo/.autopatch-j/memory.db`: the store is another name of a file outside."""
    outside = w.elsewhere / "x.db"
    os.replace(w.db, outside)
    os.link(outside, w.db)


def _hard_linked_side(suffix: str) -> Build:
    def build(w: World) -> None:
        victim = w.elsewhere / f"victim{suffix}"
        victim.write_bytes(b"precious")
        os.link(victim, w.state / f"memory.db{suffix}")
    return build


ITEM_COLUMNS = ("row_id, id, logical_id, revision, status, kind, subject, statement, content, strength, origin,"
                " recall_mode, identity_key, created_at, updated_at")


def _item(row_id: int, logical: str, identity: str = "project|release checklist|") -> str:
    return (f"INSERT INTO memory_items ({ITEM_COLUMNS}) VALUES ({row_id}, 'item-{row_id}', '{logical}', 1, 'active',"
            f" 'project_decision', 'release checklist', 'Run the checklist.', '', 'hard', 'explicit', 'on_match',"
            f" '{identity}', 1.0, 1.0)")


def _two_active_identity_bypassed(w: World) -> None:
    """Two active items of one identity: the second written while the unique index on the identity
    key saw no active row (its WHERE swapped, then put back)."""
    sql(w.db, _item(1, "mem-first"))
    bypass_index(w.db, "memory_items_active_identity", "WHERE status = 'active'", "WHERE status = 'never'",
                 _item(2, "mem-second"))


def _two_active_identity_in_index(w: World) -> None:
    """Two active items of one identity, both in the index: written while the index was not UNIQUE."""
    sql(w.db, _item(1, "mem-first"))
    bypass_index(w.db, "memory_items_active_identity", "CREATE UNIQUE INDEX", "CREATE INDEX", _item(2, "mem-second"))


def _two_active_revisions_bypassed(w: World) -> None:
    """Two active revisions of one logical ID (different identities), hidden from its unique index."""
    sql(w.db, _item(1, "mem-same", "project|one|"))
    bypass_index(w.db, "memory_items_active_logical", "WHERE status = 'active'", "WHERE status = 'never'",
                 _item(2, "mem-same", "project|two|").replace("1, 'active'", "2, 'active'"))


def _index_corrupt_page(w: World) -> None:
    """A bypassed index hiding a second meta-less state: the memory_meta row deleted while the
    catalog stays exact."""
    sql(w.db, "DELETE FROM memory_meta")


S = "supported schema version 4"
VARIANTS: dict[str, Variant] = {
    # the variants of tests/memory/test_degraded.py, now with the whole folder compared
    "v3-file": Variant(_v3, "schema", ("schema version 3", S)),
    "v4-extra-table": Variant(_mutate("CREATE TABLE extra_notes (x TEXT)"), "schema", ("table 'extra_notes'",)),
    "v4-missing-index": Variant(_mutate("DROP INDEX memory_items_updated"), "schema",
                                ("missing index 'memory_items_updated'",)),
    "v4-altered-table": Variant(_mutate("DROP TABLE store_aliases", "CREATE TABLE store_aliases (alias TEXT)"),
                                "schema", ("table 'store_aliases' differs",)),
    "v0-unknown-objects": Variant(_v0_unknown, "schema", ("view 'first_unknown_view'", "found 0")),
    "two-active-index-dropped": Variant(_two_active_dropped, "schema", ("missing index 'threads_one_active'",)),
    "missing-meta-row": Variant(_index_corrupt_page, "corrupt", ("memory_meta singleton is missing",)),
    "not-sqlite": Variant(_not_sqlite, "corrupt", ("not an SQLite database",), export_rc=1),
    "truncated": Variant(_truncated, "corrupt", ("truncated",), export_rc=1),
    "wal-user-version-3": Variant(_mutate("PRAGMA user_version = 3"), "schema", ("schema version 3 is not supported",)),
    "zero-active-threads": Variant(_zero_active, "corrupt", ("exactly one active thread, found 0",)),
    # crafted corruption that passed as healthy
    "second-meta-row": Variant(_check_bypassed("memory_meta", "INSERT INTO memory_meta (id, generation, created_at,"
                                               " store_name) VALUES (2, 1, 1.0, 'intruder')"),
                               "corrupt", ("memory_meta must hold exactly one row (id 1), found 2",)),
    # only a scan sees these: the deep check, after the first command's answer
    "two-active-index-bypassed": Variant(_two_active_bypassed, "corrupt", ("exactly one active thread, found 2",),
                                         deep=True),
    "thread-status-check": Variant(_check_bypassed("threads", "INSERT INTO threads (id, status, created_at)"
                                                   " VALUES ('thr-odd', 'bogus', 1.0)"),
                                   "corrupt", ("CHECK constraint failed in threads",), deep=True),
    "foreign-key-broken": Variant(_fk_broken, "corrupt", ("foreign key check failed", "turns"), deep=True),
    "two-active-identity-bypassed": Variant(_two_active_identity_bypassed, "corrupt",
                                            ("two or more active items share one identity",), deep=True),
    "two-active-identity-in-index": Variant(_two_active_identity_in_index, "corrupt",
                                            ("two or more active items share one identity",), deep=True),
    "two-active-revisions-bypassed": Variant(_two_active_revisions_bypassed, "corrupt",
                                             ("two or more active revisions share one logical ID",), deep=True),
    "garbage-journal-wal": Variant(_garbage_journal, "journal", ("memory.db-journal", "not an SQLite rollback journal")),
    "garbage-journal-rollback": Variant(_garbage_journal_rollback, "journal",
                                        ("memory.db-journal", "not an SQLite rollback journal")),
    # damage committed only in the WAL (issue 24), with and without the `-shm` a live store leaves
    **{f"wal-only-{name}{'-shm' if shm else ''}": Variant(_wal_only(*stmts, shm=shm), cause, says)
       for shm in (False, True)
       for name, stmts, cause, says in (
           ("user-version-5", ("PRAGMA user_version = 5",), "schema", ("schema version 5 is not supported",)),
           ("user-version-3", ("PRAGMA user_version = 3",), "schema", ("schema version 3 is not supported",)),
           ("extra-table", ("CREATE TABLE extra_notes (x TEXT)",), "schema", ("unexpected table 'extra_notes'",)),
           ("missing-table", ("DROP TABLE store_aliases",), "schema", ("missing table 'store_aliases'",)),
           ("no-active-thread", ("UPDATE threads SET status = 'archived', archived_at = 2.0",), "corrupt",
            ("exactly one active thread, found 0",)),
           ("meta-row-deleted", ("DELETE FROM memory_meta",), "corrupt", ("memory_meta singleton is missing",)),
       )},
    # hard links: another name for the store's files is never written (contracts §1)
    "db-hard-link": Variant(_hard_linked_db, "hard_link", ("memory.db has 2 hard links",), watch=("elsewhere",)),
    "wal-hard-link": Variant(_hard_linked_side("-wal"), "hard_link", ("memory.db-wal has 2 hard links",),
                             watch=("elsewhere",)),
    "shm-hard-link": Variant(_hard_linked_side("-shm"), "hard_link", ("memory.db-shm has 2 hard links",),
                             watch=("elsewhere",)),
    # symlinks: never followed, nothing created or written through them
    "db-link-dangling": Variant(_dangling_db_link, "symlink", ("memory.db is a symbolic link",), watch=("elsewhere",)),
    "db-link-empty-file": Variant(_empty_file_link, "symlink", ("memory.db is a symbolic link",), watch=("elsewhere",)),
    "db-link-other-store": Variant(_other_store_link, "symlink", ("memory.db is a symbolic link",),
                                   watch=("other-project/.autopatch-j",)),
    "state-dir-link-other-store": Variant(_state_dir_link, "symlink", (".autopatch-j is a symbolic link",),
                                          watch=("other-project/.autopatch-j",)),
    "state-dir-link-dangling": Variant(_state_dir_dangling, "symlink", (".autopatch-j is a symbolic link",),
                                       watch=("elsewhere",)),
    "wal-link": Variant(_side_link("-wal"), "symlink", ("memory.db-wal is a symbolic link",), watch=("elsewhere",)),
    "shm-link": Variant(_side_link("-shm"), "symlink", ("memory.db-shm is a symbolic link",), watch=("elsewhere",)),
    "journal-link": Variant(_side_link("-journal"), "symlink", ("memory.db-journal is a symbolic link",),
                            watch=("elsewhere",)),
    "summary-link": Variant(_link("memory_summary.md", "/etc/hostname"), "symlink",
                            ("memory_summary.md is a symbolic link",)),
    "exports-link": Variant(_exports_link, "symlink", ("memory-exports is a symbolic link",), watch=("elsewhere",)),
    "gitignore-link": Variant(_link(".gitignore", "/etc/hostname"), "symlink", (".gitignore is a symbolic link",)),
    # things that are not files
    "db-is-a-folder": Variant(_db_folder, "not_a_file", ("memory.db is a folder", "moves it aside")),
    "wal-is-a-folder": Variant(_wal_folder, "not_a_file", ("memory.db-wal is a folder",)),
    "db-is-a-fifo": Variant(_fifo, "not_a_file", ("memory.db is a special file",)),
    "state-dir-is-a-file": Variant(_state_is_file, "not_a_file", (".autopatch-j is not a folder",)),
    # permissions: never "unreadable", never a suggestion to clear
    "db-file-read-only": Variant(_chmod(".autopatch-j/memory.db", 0o444), "read_only",
                                 ("no write permission on", "memory.db"), readable=True, clearable=False),
    "state-dir-read-only": Variant(_chmod(".autopatch-j", 0o555), "read_only",
                                   ("no write and search permission on the folder", ".autopatch-j"), readable=True,
                                   clearable=False),
    "checkout-read-only": Variant(_readonly_checkout, "read_only", ("cannot create", ".autopatch-j"),
                                  clearable=False, export_rc=1),
    "db-file-unreadable": Variant(_chmod(".autopatch-j/memory.db", 0o000), "permission",
                                  ("no read permission on", "memory.db"), clearable=False),
    "state-dir-unsearchable": Variant(_chmod(".autopatch-j", 0o600), "permission",
                                      ("no search permission on the folder", ".autopatch-j"),
                                      clearable=False),
}

COMMANDS = (
    ("memory", "list"), ("memory", "show", "item-x"), ("memory", "search", "release checklist"),
    ("memory", "forget", "item-x"), ("new",), ("memory", "process"), ("ask", "hello"),
)


def _warm_imports(repo: Path) -> None:
    """Every command once on a healthy copy, as this user: the commands import parts lazily, and
    `nobody` (see `_hostile.unprivileged`) may not be able to read the interpreter's own library,
    so whatever a command imports must be loaded before a test runs it unprivileged."""
    import contextlib
    import io

    from autopatch_tui.cli.main import run

    warm = repo.parent / "warm"
    shutil.copytree(repo, warm, symlinks=True)
    for args in (*COMMANDS, ("memory", "status"), ("memory", "export"), ("memory", "clear", "--confirm")):
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            run([*args, "--repo", str(warm)])
    shutil.rmtree(warm)


@pytest.fixture(scope="module")
def template() -> Iterator[Path]:
    """One healthy, closed v4 store file, copied into every world."""
    base = world_dir("apj-template-")
    from tests.support.fixtures import make_git_repo
    from autopatch_tui.core.settings import load_settings
    repo = make_git_repo(base / "tpl")
    old = os.environ.get("AUTOPATCH_HOME")
    os.environ["AUTOPATCH_HOME"] = str(base / "home")
    try:
        MemoryManager(repo, load_settings(), register=False).close()
        _warm_imports(repo)
    finally:
        if old is None:
            os.environ.pop("AUTOPATCH_HOME", None)
        else:
            os.environ["AUTOPATCH_HOME"] = old
    yield repo / ".autopatch-j" / "memory.db"
    remove_tree(base)


@pytest.fixture
def world(template: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    w = new_world(template)
    monkeypatch.setenv("AUTOPATCH_HOME", str(w.home))
    try:
        yield w
    finally:
        remove_tree(w.base)


def _snapshot(w: World, variant: Variant) -> dict[str, object]:
    snap: dict[str, object] = {".autopatch-j": tree_fingerprint(w.state)}
    for rel in variant.watch:
        snap[rel] = tree_fingerprint(w.base / rel)
    return snap


@pytest.mark.parametrize("name", list(VARIANTS))
def test_every_command_on_a_damaged_store(name: str, world: World, invoke_cli, tmp_path: Path) -> None:
    variant = VARIANTS[name]
    variant.build(world)
    give_to_nobody(world.base)
    before = _snapshot(world, variant)
    out_dir = world.base / "exports-out"
    out_dir.mkdir()
    give_to_nobody(out_dir)

    def cli(*args: str, json: bool = False):
        with unprivileged():
            rc, out, err = invoke_cli(*args, "--repo", str(world.repo), json=json, cwd=world.base)
        assert "Traceback" not in err, err
        return rc, out, err

    if variant.deep:  # the open-time check passes; `status` runs the deep check before it answers
        rc, status, err = cli("memory", "status", json=True)
        assert rc == 3 and status["state"] == "degraded" and status["error"]["code"] == 3, (status, err)
        assert _snapshot(world, variant) == before  # nothing written, side files gone again
    rc, status, err = cli("memory", "status", json=True)
    assert rc == 3, err  # the report, and the exit code of a degraded store
    assert status["state"] == "degraded" and status["error"]["code"] == 3
    assert status["cause"] == variant.cause, status
    for fragment in variant.says:
        assert fragment in status["diagnostic"], (fragment, status["diagnostic"])
    assert "SECRET-BODY" not in repr(status)
    rc, text, err = cli("memory", "status")
    assert rc == 3 and "degraded" in text and variant.cause in text and "degraded" in err
    if variant.cause in ("read_only", "permission"):
        assert "clear" not in text and "clear" not in status["diagnostic"]

    for args in COMMANDS:
        rc, out, err = cli(*args)
        reads = args[:2] in (("memory", "list"), ("memory", "search"))
        if variant.readable and reads:
            assert rc == 0, (args, rc, err)
        elif variant.readable and args[:2] == ("memory", "show"):
            assert rc == 1 and "item-x" in err, (args, rc, err)  # read fine: no such item
        else:
            assert rc == 3, (args, rc, out, err)
            assert "degraded" in err
            if variant.cause in ("read_only", "permission"):
                assert "clear" not in err, err

    rc, out, err = cli("memory", "export", "--to", str(out_dir / "snap.json"), json=True)
    expected = variant.export_rc if variant.export_rc is not None else (
        3 if variant.cause in ("symlink", "not_a_file", "permission") else 0)
    assert rc == expected, (rc, err)
    if expected:
        assert not (out_dir / "snap.json").exists() and err.startswith("error: ")
    else:
        assert rc == 0, err
        assert out["path"] == str(out_dir / "snap.json") and (out_dir / "snap.json").stat().st_size > 0

    assert _snapshot(world, variant) == before, "a degraded store's folder (or a link's target) was changed"

    rc, out, err = cli("memory", "clear", "--confirm")
    if not variant.clearable:
        assert rc == 3, (rc, err)
        assert "nothing was cleared" in err and "clear --confirm" not in err.replace("nothing was cleared", "")
        assert _snapshot(world, variant) == before
        return
    assert rc == 0, err
    clear_err = err
    rc, status, err = cli("memory", "status", json=True)
    assert rc == 0 and status["state"] == "healthy", status
    for rel in variant.watch:  # clearing never empties, deletes or writes what a link pointed at
        assert tree_fingerprint(world.base / rel) == before[rel]
    if variant.cause in ("symlink", "not_a_file", "hard_link"):  # and says where it went
        moved = [line.split("moved aside (not deleted): ", 1)[1] for line in clear_err.splitlines() if "moved aside" in line]
        assert moved and all(os.path.lexists(p) and ".aside-" in p for p in moved), clear_err
    if name == "db-is-a-folder":
        aside = [p for p in world.state.iterdir() if p.name.startswith("memory.db.aside-")]
        assert len(aside) == 1 and (aside[0] / "keep.txt").read_text() == "a folder someone named memory.db"


# --------------------------------------------------------------------------- focused cases


def test_a_dangling_db_link_creates_nothing_at_its_target(world: World, invoke_cli) -> None:
    target = world.elsewhere / "planted.db"
    _link("memory.db", str(target))(world)
    rc, out, err = invoke_cli("memory", "status", "--repo", str(world.repo), json=True, cwd=world.base)
    assert rc == 3 and out["cause"] == "symlink" and str(world.db) in out["diagnostic"]
    assert not os.path.lexists(target), "a store was created through the link, outside the repository"
    rc, _, err = invoke_cli("memory", "clear", "--confirm", "--repo", str(world.repo), cwd=world.base)
    assert rc == 0, err
    assert "moved aside" in err and not os.path.lexists(target)
    assert world.db.is_file() and not world.db.is_symlink()


def test_clear_through_a_link_to_another_projects_store_keeps_it(world: World, invoke_cli) -> None:
    other_db = world.other / ".autopatch-j" / "memory.db"
    before = tree_fingerprint(other_db.parent)
    _link("memory.db", str(other_db))(world)
    rc, _, err = invoke_cli("memory", "clear", "--confirm", "--repo", str(world.repo), cwd=world.base)
    assert rc == 0, err
    assert tree_fingerprint(other_db.parent) == before
    conn = sqlite3.connect(f"file:{other_db}?mode=ro&immutable=1", uri=True)
    assert conn.execute("SELECT count(*) FROM threads").fetchone()[0] == 1
    conn.close()


def test_new_store_files_are_private_and_git_ignored(tmp_path: Path, settings, monkeypatch) -> None:
    from tests.support.fixtures import make_git_repo
    repo = make_git_repo(tmp_path / "fresh")
    home = tmp_path / "new-home"
    monkeypatch.setenv("AUTOPATCH_HOME", str(home))
    from autopatch_tui.core.settings import load_settings
    MemoryManager(repo, load_settings()).close()
    state = repo / ".autopatch-j"
    assert (state / ".gitignore").read_text() == "*\n"
    assert oct(os.stat(state).st_mode & 0o777) == "0o700"
    for p in (state / "memory.db", state / ".gitignore", home / "registry.db"):
        assert oct(os.stat(p).st_mode & 0o777) == "0o600", p
    assert oct(os.stat(home).st_mode & 0o777) == "0o700"


@pytest.mark.parametrize("name", ["registry.db", "registry.db-wal"])
def test_a_registry_link_is_refused_and_not_written_through(name: str, tmp_path: Path, settings, monkeypatch,
                                                            invoke_cli, repo: Path) -> None:
    home = tmp_path / "linked-home"
    home.mkdir(mode=0o700)
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"")
    os.symlink(victim, home / name)
    monkeypatch.setenv("AUTOPATCH_HOME", str(home))
    rc, out, err = invoke_cli("memory", "stores", json=True)
    assert rc == 1 and f"{name} is a symbolic link" in err and "Traceback" not in err
    assert victim.read_bytes() == b""
    rc, out, err = invoke_cli("memory", "status", json=True)  # the store itself still works
    assert rc == 0 and out["state"] == "healthy"
    assert victim.read_bytes() == b""


def test_read_only_store_serves_reads(world: World, invoke_cli) -> None:
    """A readable store this user cannot write: its items are listed and searched."""
    from autopatch_tui.core.settings import load_settings
    from tests.support.memory_factory import add_item
    os.environ["AUTOPATCH_HOME"] = str(world.home)
    mgr = MemoryManager(world.repo, load_settings(), register=False)
    try:
        item = add_item(mgr.store.conn(), subject="release checklist", statement="run the release checklist").logical_id
    finally:
        mgr.close()
    os.chmod(world.db, 0o444)
    give_to_nobody(world.base)
    before = tree_fingerprint(world.state)
    with unprivileged():
        rc, out, err = invoke_cli("memory", "list", "--repo", str(world.repo), json=True, cwd=world.base)
        rc2, shown, err2 = invoke_cli("memory", "show", item, "--repo", str(world.repo), json=True, cwd=world.base)
        rc3, found, err3 = invoke_cli("memory", "search", "release checklist", "--repo", str(world.repo), json=True,
                                      cwd=world.base)
        rc4, status, _ = invoke_cli("memory", "status", "--repo", str(world.repo), json=True, cwd=world.base)
    assert rc == 0, err
    assert [i["id"] for i in out["items"]] == [item]
    assert rc2 == 0 and shown["id"] == item, err2
    assert rc3 == 0 and [r["id"] for r in found["results"]] == [item], err3
    assert status["cause"] == "read_only" and status["active_items"] == 1 and status["threads"] >= 1
    assert tree_fingerprint(world.state) == before


def test_failures_total_counts_what_the_list_leaves_out(manager) -> None:
    from autopatch_tui.core.memory.status import MAX_LISTED_FAILURES
    conn = manager.store.conn()
    thread = manager.active_thread_id()
    total = MAX_LISTED_FAILURES + 28
    conn.execute("BEGIN IMMEDIATE")
    for n in range(total):
        conn.execute(
            "INSERT INTO memory_jobs (id, kind, status, thread_id, attempts, provider_calls, available_at, created_at,"
            " updated_at, completed_at, failure_category, failure_phase, failure_stage) VALUES (?, 'consolidation',"
            " 'failed', ?, 1, 1, ?, ?, ?, ?, 'rate_limit', 'provider', 'primary')",
            (f"job-{n:03d}", thread, float(n), float(n), float(n), float(n)))
    conn.execute("COMMIT")
    report = manager.status()
    assert len(report.failures) == MAX_LISTED_FAILURES
    assert report.failures_total == total
    from autopatch_tui.core.memory.render import render_status
    assert any(f"({total} in all)" in line for line in render_status(report))


def test_export_to_never_overwrites_and_accepts_a_folder(tmp_path: Path, invoke_cli, repo: Path) -> None:
    taken = tmp_path / "taken.json"
    taken.write_text("keep me")
    rc, _, err = invoke_cli("memory", "export", "--to", str(taken))
    assert rc == 1 and "never overwrites" in err and taken.read_text() == "keep me"
    folder = tmp_path / "out"
    folder.mkdir()
    rc, out, err = invoke_cli("memory", "export", "--to", str(folder), json=True)
    assert rc == 0, err
    written = Path(out["path"])
    assert written.parent == folder and written.name.startswith("memory-") and oct(written.stat().st_mode & 0o777) == "0o600"
    assert not (repo / ".autopatch-j" / "memory-exports").exists()


def test_a_link_planted_between_the_check_and_the_open_is_refused(world: World, monkeypatch) -> None:
    """The race the preflight alone cannot close: SQLite must be found to have opened exactly the
    checked file, or the connection is closed unused."""
    from autopatch_tui.core.errors import SymlinkRefusedError
    from autopatch_tui.core.memory import store_files
    from autopatch_tui.core.paths import StorePaths

    other_db = world.other / ".autopatch-j" / "memory.db"
    before = tree_fingerprint(other_db.parent)
    real_open = store_files.open_readwrite

    def swap_then_open(path, **kw):
        os.replace(world.db, world.elsewhere / "moved.db")
        os.symlink(other_db, world.db)
        return real_open(path, **kw)

    monkeypatch.setattr(store_files, "open_readwrite", swap_then_open)
    with pytest.raises(SymlinkRefusedError) as caught:
        store_files.open_verified(StorePaths(world.repo))
    assert "memory.db is a symbolic link" in str(caught.value)
    assert tree_fingerprint(other_db.parent) == before


def test_read_only_store_serves_every_browsing_read_and_refuses_every_write(world: World) -> None:
    """What the Memory and History screens call works on a read-only store; every write is a typed
    refusal naming the permission (never an SQLite 'readonly database' traceback), clear included."""
    from autopatch_tui.core.errors import MemoryDegradedError
    from autopatch_tui.core.settings import load_settings
    from tests.support.memory_factory import add_item

    os.environ["AUTOPATCH_HOME"] = str(world.home)
    mgr = MemoryManager(world.repo, load_settings(), register=False)
    try:
        handle = mgr.begin_turn("how do we release?")
        mgr.complete_turn(handle, "with the checklist")
        item = add_item(mgr.store.conn(), subject="release checklist", statement="run it").logical_id
    finally:
        mgr.close()
    os.chmod(world.state, 0o555)
    give_to_nobody(world.base)
    before = tree_fingerprint(world.state)
    with unprivileged():
        mgr = MemoryManager(world.repo, load_settings(), register=False)
        try:
            assert not mgr.healthy and mgr.readable
            thread = mgr.active_thread_id()
            assert [t.id for t in mgr.threads()] == [thread]
            assert [t.id for t in mgr.thread_turns(thread)] == [handle.turn_id]
            assert [t.id for t in mgr.recent_turns()] == [handle.turn_id]
            assert [t.id for t in mgr.search_turns("release")] == [handle.turn_id]
            assert mgr.turn_info(handle.turn_id).id == handle.turn_id
            assert mgr.show_item(item).id == item
            writes = (lambda: mgr.begin_turn("x"), lambda: mgr.forget(item), lambda: mgr.new_thread(timeout=0.1),
                      lambda: mgr.clear(confirm=True), lambda: mgr.export_thread_markdown(thread))
            for write in writes:
                with pytest.raises(MemoryDegradedError) as caught:
                    write()
                assert caught.value.cause == "read_only" and ".autopatch-j" in caught.value.diagnostic
        finally:
            mgr.close()
    assert tree_fingerprint(world.state) == before
