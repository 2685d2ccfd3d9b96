"""Issue 28 item 2: git never runs a command the repository configures. Every git call of the
product goes through `core.safe_git.run_git`; a repository whose `.git/config` names a command for
each hostile key gets none of them run — through `memory audit` (a glob scope lists the files with
git) and through the helper for the git commands that would run the rest."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from autopatch_tui.core import safe_git
from autopatch_tui.core.memory import audit
from autopatch_tui.core.safe_git import GitError, run_git
from tests.support.fixtures import git_env
from tests.support.memory_factory import add_item

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "-c", "core.hooksPath=/dev/null",
                    *args], check=True, capture_output=True, env=git_env(repo.parent))


def _script(folder: Path, name: str, marker: Path) -> Path:
    """An executable that touches `marker` (and passes its input through, as a filter would)."""
    path = folder / name
    path.write_text(f"#!/bin/sh\ntouch '{marker}'\ncat\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def committed(repo: Path) -> Path:
    (repo / "src").mkdir()
    (repo / "src" / "a.py").write_text("x = 1\n")
    (repo / ".gitattributes").write_text("*.py filter=evil diff=evil merge=evil\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "start")
    return repo


HOSTILE_KEYS = [
    ("core.fsmonitor", "{script}"),
    ("core.hooksPath", "{folder}"),
    ("diff.external", "{script}"),
    ("diff.evil.textconv", "{script}"),
    ("diff.evil.command", "{script}"),
    ("filter.evil.clean", "{script}"),
    ("filter.evil.smudge", "{script}"),
    ("filter.evil.process", "{script}"),
    ("merge.evil.driver", "{script}"),
    ("core.pager", "{script}"),
    ("pager.ls-files", "{script}"),
    ("core.editor", "{script}"),
]


def _arm(repo: Path, tmp_path: Path, key: str, value: str) -> Path:
    marker = tmp_path / "ran"
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    script = _script(tmp_path, "evil.sh", marker)
    for hook in ("pre-commit", "post-index-change", "fsmonitor-watchman", "post-checkout", "reference-transaction"):
        shutil.copy(script, hooks / hook)
    _git(repo, "config", key, value.format(script=script, folder=hooks))
    return marker


@pytest.mark.parametrize(("key", "value"), HOSTILE_KEYS)
def test_memory_audit_runs_none_of_the_repositorys_commands(committed: Path, tmp_path: Path, manager, key: str,
                                                           value: str) -> None:
    marker = _arm(committed, tmp_path, key, value)
    add_item(manager.store.conn(), kind="project_decision", subject="py files", statement="Type every function.",
             applies_to_paths=("src/*.py", "lib/**/*.rs"))
    report = manager.audit()
    assert [s.paths for s in report.stale_paths] == [["lib/**/*.rs"]]  # the listing worked: src/*.py matched
    assert not marker.exists()


@pytest.mark.parametrize(("key", "value"), HOSTILE_KEYS)
def test_git_commands_that_would_run_them_run_none(committed: Path, tmp_path: Path, key: str, value: str) -> None:
    marker = _arm(committed, tmp_path, key, value)
    (committed / "src" / "a.py").write_text("x = 2\n")  # a change: status hashes it, diff shows it
    os.utime(committed / "src" / "a.py", (1, 1))
    run_git(committed, ["status", "--porcelain"])
    run_git(committed, ["diff"])
    run_git(committed, ["diff", "HEAD", "--", "src/a.py"])
    run_git(committed, ["add", "src/a.py"])
    run_git(committed, ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "two"])
    run_git(committed, ["checkout", "-q", "HEAD~1", "--", "src/a.py"])
    run_git(committed, ["log", "-p", "-1"])
    assert not marker.exists()


def test_the_hostile_keys_do_run_without_the_helper(committed: Path, tmp_path: Path) -> None:
    """The fixtures are armed: plain git runs the configured fsmonitor (what the product did)."""
    marker = _arm(committed, tmp_path, "core.fsmonitor", "{script}")
    subprocess.run(["git", "-C", str(committed), "ls-files"], capture_output=True, env=git_env(committed.parent),
                   check=False)
    assert marker.exists()


def test_a_driver_git_cannot_be_told_to_skip_refuses_the_call(committed: Path, tmp_path: Path) -> None:
    (committed / ".git" / "config").open("a").write('[filter "a=b"]\n\tclean = /bin/false\n')
    with pytest.raises(GitError, match="driver"):
        run_git(committed, ["status"])


def test_a_repository_git_refuses_is_walked_instead(committed: Path, monkeypatch) -> None:
    """A repository git will not use (another user's: dubious ownership) gives a plain sentence,
    and the audit lists the files by walking the folder."""
    real = safe_git._run

    def refusing(argv, timeout):
        if "ls-files" in argv:
            return 128, b"", (b"fatal: detected dubious ownership in repository at '/x'\n"
                              b"To add an exception for this directory, call: git config --global --add safe.directory")
        return real(argv, timeout)

    monkeypatch.setattr(safe_git, "_run", refusing)
    with pytest.raises(GitError) as caught:
        run_git(committed, ["ls-files"])
    assert str(caught.value) == "git refuses this repository (it belongs to another user)"
    assert "src/a.py" in audit.repository_files(committed)


def test_no_git_on_path_is_a_sentence(committed: Path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(GitError, match="not installed"):
        run_git(committed, ["ls-files"])
    assert "src/a.py" in audit.repository_files(committed)


def test_the_callers_git_variables_do_not_reach_git(committed: Path, tmp_path: Path, monkeypatch) -> None:
    marker = tmp_path / "ran"
    script = _script(tmp_path, "ext.sh", marker)
    monkeypatch.setenv("GIT_EXTERNAL_DIFF", str(script))
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "elsewhere"))
    (committed / "src" / "a.py").write_text("x = 3\n")
    assert b"x = 3" in run_git(committed, ["diff"])
    assert not marker.exists()


def test_every_git_of_the_product_goes_through_the_helper() -> None:
    root = Path(safe_git.__file__).resolve().parents[1]
    offenders = [f"{p.relative_to(root)}" for p in root.rglob("*.py")
                 if p.name != "safe_git.py" and ('"git"' in p.read_text() or "'git'" in p.read_text())]
    assert offenders == []


def test_the_memory_audit_command_runs_no_fsmonitor(committed: Path, tmp_path: Path, manager, invoke_cli) -> None:
    marker = _arm(committed, tmp_path, "core.fsmonitor", "{script}")
    add_item(manager.store.conn(), kind="project_decision", subject="py files", statement="Type every function.",
             applies_to_paths=("src/**/*.py",))
    manager.close()
    code, out, err = invoke_cli("memory", "audit", json=True)
    assert code == 0, err
    assert out["stale_paths"] == []
    assert not marker.exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the repository to another user")
def test_another_users_repository_is_a_sentence_and_the_audit_walks(committed: Path, monkeypatch) -> None:
    """No user `safe.directory` applies in the helper: git really refuses, and nothing breaks."""
    from tests.memory._hostile import NOBODY, give_to_nobody

    monkeypatch.delenv("SUDO_UID", raising=False)
    give_to_nobody(committed)
    assert os.stat(committed).st_uid == NOBODY
    with pytest.raises(GitError) as caught:
        run_git(committed, ["ls-files"])
    assert str(caught.value) == "git refuses this repository (it belongs to another user)"
    files = audit.repository_files(committed)
    assert "src/a.py" in files and not any(f.startswith(".git/") for f in files)


def test_core_worktree_in_the_repositorys_config_does_not_redirect_git(committed: Path, tmp_path: Path) -> None:
    """`core.worktree` in `.git/config` would make `ls-files` (the audit's file list) describe
    another folder — any folder the user can read; every call takes the repository as its work tree."""
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "secret").mkdir(parents=True)
    (elsewhere / "secret" / "keys.txt").write_text("x\n")
    (committed / "src" / "new.py").write_text("y = 2\n")  # untracked, in the repository
    _git(committed, "config", "core.worktree", str(elsewhere))
    files = audit.repository_files(committed)
    assert "secret/keys.txt" not in files
    assert {"src/a.py", "src/new.py", ".gitattributes"} <= set(files), files
    listed = run_git(committed, ["ls-files", "-z", "--others", "--exclude-standard"]).decode().split("\0")
    assert "src/new.py" in listed and "secret/keys.txt" not in listed
