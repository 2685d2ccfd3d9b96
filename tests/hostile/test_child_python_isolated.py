"""Issue 28 item 1: the detached deep check (`check_later`) is a child Python started while the
command's working folder is the repository; it must never import the repository's modules."""

from __future__ import annotations

import os
import time
from pathlib import Path

from autopatch_tui.cli import after_answer, check_later
from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.memory import verdicts
from autopatch_tui.core.memory.verdicts import VerdictMemo, file_state
from tests.hostile._plant import plant_modules
from tests.memory.test_deep_check_flow import _slow_check
from tests.support.fixtures import bootstrap_healthy


def test_the_detached_check_never_imports_the_repositorys_code(repo: Path, settings, monkeypatch,
                                                               tmp_path: Path) -> None:
    marker = tmp_path / "ran-as-the-user"
    plant_modules(repo, marker)
    monkeypatch.chdir(repo)  # a CLI command run inside the repository
    db = bootstrap_healthy(repo, settings)
    time.sleep(verdicts.SETTLED_SECONDS + 0.05)
    mgr = MemoryManager.open(repo, settings)
    try:
        _slow_check(monkeypatch)  # this process runs out of time: the check is handed on
        pid = after_answer.check_after_answer(mgr, timeout=0.2)
        assert pid is not None
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        mgr.close()
    assert not marker.exists()
    known = VerdictMemo(settings.home).lookup(db, file_state(db))
    assert known is not None and known.healthy  # the real check ran (ours, not the planted one)


def test_the_detached_check_runs_with_a_relative_store_path(repo: Path, settings, monkeypatch,
                                                            tmp_path: Path) -> None:
    """The child works in `/`: a path relative to the caller's folder must still name the store."""
    marker = tmp_path / "ran-as-the-user"
    plant_modules(repo, marker)
    db = bootstrap_healthy(repo, settings)
    time.sleep(verdicts.SETTLED_SECONDS + 0.05)
    monkeypatch.chdir(repo)
    pid = check_later.continue_later(Path(".autopatch-j/memory.db"), settings.home)
    assert pid is not None
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert not marker.exists()
    known = VerdictMemo(settings.home).lookup(db, file_state(db))
    assert known is not None and known.healthy


def test_the_command_line_is_isolated() -> None:
    argv = check_later.isolated_argv(Path("/r/.autopatch-j/memory.db"), Path("/h"))
    assert argv[1] == "-I" and "-m" not in argv


def test_no_child_python_of_the_product_runs_without_isolation() -> None:
    """Every place the product starts a Python: `-I` on its command line (a grep, so a new spawn
    without it is caught here)."""
    root = Path(check_later.__file__).resolve().parents[1]
    offenders = []
    for path in root.rglob("*.py"):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if "sys.executable" in line and "[sys.executable" in line and '"-I"' not in line:
                offenders.append(f"{path.relative_to(root)}:{n}")
    assert offenders == []
