"""The one confinement check (core/confine.py) behind every source tool and the scanner's scope:
`.git` / `.autopatch-j` refused at ANY depth, symlinks leaving the repository refused; and a
model-chosen regex bounded in wall-clock time (issue 11)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from autopatch_tui.core.agent.source_tools import SourceToolError, SourceTools
from autopatch_tui.core.confine import ConfinementError, confine
from autopatch_tui.core.repair.scanner import ScanError, Scanner

CREDENTIAL = "https://deploy:TOKEN-SECRET-42@git.example.org/vendor/sub.git"


@pytest.fixture
def nested(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    sub = repo / "vendor" / "sub"
    (sub / ".git").mkdir(parents=True)
    (sub / ".git" / "config").write_text(f'[remote "origin"]\n\turl = {CREDENTIAL}\n')
    (sub / "lib.py").write_text("def fine():\n    return 1\n")
    (sub / "sub2" / ".autopatch-j").mkdir(parents=True)
    (sub / "sub2" / ".autopatch-j" / "memory_summary.md").write_text("TOKEN-SECRET-42 in a nested store\n")
    (repo / "worktree").mkdir()
    (repo / "worktree" / ".git").write_text("gitdir: /elsewhere/TOKEN-SECRET-42\n")  # a .git FILE
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "creds.txt").write_text("TOKEN-SECRET-42 outside\n")
    os.symlink(outside, repo / "vendor" / "out_link")
    os.symlink(sub / ".git", repo / "docs_link")  # inside the repo, but into a nested .git
    (repo / "pattern.txt").write_text("a" * 28 + "!\n" + "plain line\n")
    return repo.resolve()


@pytest.mark.parametrize("rel", [
    "vendor/sub/.git/config", "vendor/sub/.git", "vendor/sub/sub2/.autopatch-j/memory_summary.md",
    "worktree/.git", "vendor/SUB/../sub/.GIT/config", "docs_link/config", "docs_link", "vendor/out_link/creds.txt",
    "vendor/out_link",
])
def test_nested_git_and_state_folders_and_escaping_links_are_refused_by_every_tool(nested: Path, rel: str) -> None:
    tools = SourceTools(nested)
    with pytest.raises(ConfinementError):
        confine(nested, rel)
    with pytest.raises(SourceToolError):
        tools.read_file(rel)
    with pytest.raises(SourceToolError):
        tools.search_text("TOKEN", path=rel)
    with pytest.raises(SourceToolError):
        tools.list_files(rel)
    with pytest.raises(ScanError):
        Scanner(nested).files([rel])


def test_walkers_never_show_refused_or_escaping_entries(nested: Path) -> None:
    tools = SourceTools(nested)
    assert "TOKEN-SECRET-42" not in tools.search_text("TOKEN-SECRET-42")
    assert tools.search_text("TOKEN-SECRET-42", path="vendor") == "no matches"
    listing = tools.list_files("vendor/sub").splitlines()
    assert ".git/" not in listing and "lib.py" in listing
    assert "out_link/" not in tools.list_files("vendor").splitlines()
    assert "docs_link/" not in tools.list_files(".").splitlines()
    assert "sub2/" in listing and ".autopatch-j/" not in tools.list_files("vendor/sub/sub2")
    assert "vendor/sub/lib.py" in Scanner(nested).files(["vendor"])


@pytest.mark.parametrize("pattern", ["(a+)+$", "(a|aa)+$", "(a*)*b", "((a+)+)+c", "(.*a){12}x"])
def test_catastrophic_patterns_stop_within_the_budget(nested: Path, pattern: str) -> None:
    tools = SourceTools(nested)
    started = time.monotonic()
    result = tools.search_text(pattern, path="pattern.txt", budget=0.3)
    elapsed = time.monotonic() - started
    assert elapsed < 1.0, (pattern, elapsed)
    assert result == "no matches" or "time budget" in result, result


def test_a_stopped_search_says_so_and_keeps_its_hits(nested: Path) -> None:
    (nested / "many.txt").write_text("hit one\n" + "a" * 40 + "!\n")
    result = SourceTools(nested).search_text("hit|(a|aa)+$", path="many.txt", budget=0.2)
    lines = result.splitlines()
    assert lines[0].startswith("many.txt:1: hit one")
    assert "stopped" in lines[-1] and "time budget of 0.2 s" in lines[-1]


def test_a_plain_search_still_finds_text_and_invalid_regex_is_literal(nested: Path) -> None:
    tools = SourceTools(nested)
    assert tools.search_text("plain line") == "pattern.txt:2: plain line"
    assert tools.search_text("def fine(", path="vendor") == "vendor/sub/lib.py:1: def fine():"
