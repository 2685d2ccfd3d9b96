"""The store check runs once per file state (issue 14: opening a store checked it twice, each an
O(size) `quick_check` + CHECK scan + `foreign_key_check`). A reused healthy verdict must never
hide damage: every write changes the file state (ctime included, which no unprivileged process
can set back), and a file changed just before its check is never remembered."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.memory import health
from tests.memory._hostile import sql

SETTLE = health.SETTLED_SECONDS + 0.02


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from autopatch_tui.core.settings import load_settings
    from tests.support.fixtures import make_git_repo

    base = tmp_path_factory.mktemp("memo")
    repo = make_git_repo(base / "project")
    mgr = MemoryManager.open(repo, load_settings({"AUTOPATCH_HOME": str(base / "home")}))
    mgr.close()
    return repo / ".autopatch-j" / "memory.db"


@pytest.fixture
def full_checks(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    seen: list[Path] = []
    real = health._inspect_store

    def counting(path: Path) -> health.Health:
        seen.append(path)
        return real(path)

    monkeypatch.setattr(health, "_inspect_store", counting)
    monkeypatch.setattr(health, "_VERIFIED", {})
    return seen


def _settled_copy(template: Path, tmp_path: Path) -> Path:
    db = tmp_path / "memory.db"
    shutil.copyfile(template, db)
    time.sleep(SETTLE)
    return db


def _flip_page_two(db: Path) -> None:
    page = int.from_bytes(db.read_bytes()[16:18], "big")
    with db.open("r+b") as fh:
        fh.seek(page)
        fh.write(b"\x77" * 12)


DAMAGE: dict[str, Callable[[Path], None]] = {
    "check-bypassed": lambda db: sql(db, "PRAGMA ignore_check_constraints = ON",
                                     "INSERT INTO threads (id, status, created_at) VALUES ('thr-odd', 'bogus', 1.0)"),
    "foreign-key": lambda db: sql(db, "PRAGMA foreign_keys = OFF",
                                  "INSERT INTO turns (id, thread_id, sequence, intent, state, user_text, created_at,"
                                  " ended_at) VALUES ('turn-x', 'thr-missing', 1, 'general_chat', 'failed', 'x', 1, 2)"),
    "zero-active": lambda db: sql(db, "UPDATE threads SET status = 'archived', archived_at = 2.0"),
    "page-bytes-same-size": _flip_page_two,
}


@pytest.mark.parametrize("name", sorted(DAMAGE))
def test_damage_after_a_remembered_verdict_is_found(name: str, template: Path, tmp_path: Path,
                                                     full_checks: list[Path]) -> None:
    db = _settled_copy(template, tmp_path)
    assert health.inspect_store(db).healthy
    assert health.inspect_store(db).healthy and len(full_checks) == 1  # remembered
    before = db.stat()
    DAMAGE[name](db)
    os.utime(db, ns=(before.st_atime_ns, before.st_mtime_ns))  # a careless key (size, mtime) sees no change
    verdict = health.inspect_store(db)
    assert not verdict.healthy and verdict.cause in ("corrupt", "unreadable"), verdict
    assert len(full_checks) == 2


def test_a_file_changed_just_before_its_check_is_never_remembered(template: Path, tmp_path: Path,
                                                                   full_checks: list[Path]) -> None:
    db = tmp_path / "memory.db"
    shutil.copyfile(template, db)  # changed now: a write in the same timestamp tick could keep its state
    assert health.inspect_store(db).healthy and health.inspect_store(db).healthy
    assert len(full_checks) == 2


def test_opening_a_settled_store_checks_it_once(tmp_path: Path, full_checks: list[Path]) -> None:
    from autopatch_tui.core.settings import load_settings
    from tests.support.fixtures import make_git_repo

    repo = make_git_repo(tmp_path / "project")
    settings = load_settings({"AUTOPATCH_HOME": str(tmp_path / "home")})
    MemoryManager.open(repo, settings).close()
    time.sleep(SETTLE)
    full_checks.clear()
    mgr = MemoryManager.open(repo, settings)
    try:
        assert mgr.healthy
    finally:
        mgr.close()
    assert len(full_checks) == 1  # the merge redirect's read and the open share one check


def test_a_linked_store_is_checked_every_time(template: Path, tmp_path: Path, full_checks: list[Path]) -> None:
    """A link's own state does not change when its target is replaced: a linked store (or side
    file) is never remembered, so garbage moved onto the target is found (only the open path
    refuses links; the registry readers check stores by path)."""
    target = _settled_copy(template, tmp_path)
    link = tmp_path / "linked" / "memory.db"
    link.parent.mkdir()
    link.symlink_to(target)
    time.sleep(SETTLE)
    assert health.inspect_store(link).healthy
    garbage = tmp_path / "garbage"
    garbage.write_bytes(b"SQLite format 3\x00" + b"\x00" * 4080)
    os.replace(garbage, target)
    assert not health.inspect_store(link).healthy
    assert len(full_checks) == 2
