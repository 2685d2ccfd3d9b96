"""Issue 28 review: a repository of ~1,300 nested folders. `os.walk` on Python 3.11 recursed once per
level (a `RecursionError` in `memory audit`, `@` completion, the audit's scan, `search_code`, a
scoped ask); every walk is now `core.tree_walk.TreeWalk`: an explicit stack, at most 64 levels
entered, the deeper folders skipped and counted."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from autopatch_tui.core.agent.scoped_files import _candidates
from autopatch_tui.core.agent.source_tools import SourceTools
from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.memory.audit import repository_files
from autopatch_tui.core.repair.scanner import Scanner
from autopatch_tui.core.settings import Settings
from autopatch_tui.core.tree_walk import MAX_WALK_DEPTH, TreeWalk
from autopatch_tui.tui.file_index import FileIndex
from tests.support.memory_factory import add_item

LEVELS = 1_300


def deep_tree(root: Path) -> Path:
    """`root/src/d/d/…` LEVELS deep, a Python file at the top, at depth 10 and at the bottom."""
    (root / "src").mkdir(parents=True, exist_ok=True)
    (root / "src" / "top.py").write_text("x = 1\n")
    here = root / "src"
    for n in range(LEVELS):
        here = here / "d"
        here.mkdir()
        if n == 9:
            (here / "ten.py").write_text("needle = 1\n")
    (here / "bottom.py").write_text("needle = 2\n")
    return here


def remove_deep(root: Path) -> None:
    """Remove `root/src/d/…` bottom-up without recursion (`shutil.rmtree`, pytest's clean-up of old
    temporary folders included, recurses per level on 3.11 too)."""
    chain = [root / "src"]
    while (chain[-1] / "d").is_dir():
        chain.append(chain[-1] / "d")
    for folder in reversed(chain):
        for entry in os.scandir(folder):
            if not entry.is_dir(follow_symlinks=False):
                os.unlink(entry.path)
        os.rmdir(folder)


@pytest.fixture
def deep(tmp_path: Path):
    """`deep(root)` plants the tree; it is removed at the end of the test."""
    planted: list[Path] = []

    def plant(root: Path) -> Path:
        planted.append(root)
        return deep_tree(root)

    yield plant
    for root in planted:
        remove_deep(root)


def test_the_walk_is_os_walk_on_an_ordinary_tree(tmp_path: Path) -> None:
    for rel in ("a/b/c.txt", "a/x.txt", "b/y.txt", "z.txt", "a/b/e/f/g.txt"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "a", target_is_directory=True)  # listed, never entered

    def shape(walk) -> list:
        out = []
        for top, dirs, files in walk:
            dirs[:] = sorted(d for d in dirs if d != "e")  # pruning in place decides what is entered
            out.append((top, list(dirs), sorted(files)))
        return out

    assert shape(TreeWalk(tmp_path)) == shape(os.walk(tmp_path))


def test_a_deep_tree_is_walked_to_the_bound_and_the_rest_counted(tmp_path: Path, deep) -> None:
    deep(tmp_path)
    walk = TreeWalk(tmp_path / "src")
    tops = [top for top, _, _ in walk]
    assert len(tops) == MAX_WALK_DEPTH + 1 and walk.skipped == 1


@pytest.fixture
def deep_repo(repo: Path, deep) -> Path:
    deep(repo)
    return repo


def test_memory_audit_with_a_glob_scoped_item_in_a_deep_tree(deep_repo: Path, settings: Settings, invoke_cli,
                                                            caplog) -> None:
    mgr = MemoryManager.open(deep_repo, settings)
    try:
        add_item(mgr.store.conn(), subject="gen", statement="Generated code lives here.",
                 applies_to_paths=["src/**/gone_*.py"])
    finally:
        mgr.close()
    rc, _, err = invoke_cli("memory", "audit", json=True)
    assert rc == 0 and "Traceback" not in err, err
    (deep_repo / ".git").rename(deep_repo / "not-git")  # no git: the audit walks the folder itself
    with caplog.at_level(logging.INFO, logger="autopatch_tui.core.memory.audit"):
        files = repository_files(deep_repo)
    assert "src/top.py" in files and "src/" + "d/" * 10 + "ten.py" in files
    assert not any(f.endswith("bottom.py") for f in files)
    assert "left out 1 folder(s) nested deeper than 64 levels" in caplog.text


def test_completion_scan_search_and_scope_survive_a_deep_tree(deep_repo: Path) -> None:
    ten = "src/" + "d/" * 10 + "ten.py"
    assert ten in FileIndex(deep_repo).paths()
    assert ten in Scanner(deep_repo).files(["src"])
    tools = SourceTools(deep_repo)
    assert ten in tools.search_text("needle", "src")
    found, refused = _candidates(tools, ["src"])
    assert deep_repo / ten in found and refused == 0
