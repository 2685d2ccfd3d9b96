"""Issue 28 review: a PATH with an empty or relative entry (`PATH=:/usr/bin`, `bin:…`) names the
working folder, and analyzers run in the repository — its own `./semgrep` would run as the user.
Tools are looked up, and their children look tools up, over the absolute PATH entries only."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from autopatch_tui.core.repair.analyzers import semgrep as semgrep_module
from autopatch_tui.core.repair.analyzers.base import (
    AnalyzerError,
    limited,
    run_tool,
    tool_env,
)
from autopatch_tui.core.tool_path import absolute_path


def plant_tool(folder: Path, name: str, marker: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    tool = folder / name
    tool.write_text(f"#!/bin/sh\ntouch {marker}\n")
    tool.chmod(0o755)


@pytest.fixture
def hostile_path(repo: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The working folder is the repository; PATH starts with an empty and a relative entry."""
    monkeypatch.chdir(repo)
    monkeypatch.setenv("PATH", os.pathsep.join(["", "bin", os.environ.get("PATH", os.defpath)]))
    return repo


def test_the_repositorys_semgrep_is_never_found(hostile_path: Path, tmp_path: Path, monkeypatch) -> None:
    marker = tmp_path / "ran"
    plant_tool(hostile_path, "semgrep", marker)
    plant_tool(hostile_path / "bin", "semgrep", marker)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "elsewhere" / "python"))  # none beside it
    found = semgrep_module.find_semgrep()
    assert found is None or (os.path.isabs(found) and not found.startswith(str(hostile_path))), found


def test_limited_and_the_childs_path_skip_relative_entries(hostile_path: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    plant_tool(hostile_path, "probe-tool", marker)
    plant_tool(hostile_path / "bin", "probe-tool", marker)
    env = tool_env()
    assert env["PATH"] == absolute_path(os.environ["PATH"]) and all(os.path.isabs(p) for p in env["PATH"].split(":"))
    with pytest.raises(FileNotFoundError):
        limited(["probe-tool"], 1 << 30, {"PATH": os.environ["PATH"]})
    for memory_limit in (None, 1 << 30):  # found by Popen (the child's PATH) or by `limited`
        with pytest.raises(AnalyzerError, match="not installed"):
            run_tool("probe", ["probe-tool"], cwd=hostile_path, timeout=10, memory_limit=memory_limit)
    assert not marker.exists()


def test_absolute_entries_are_kept_in_order() -> None:
    assert absolute_path(":/usr/bin:.:bin:/bin:") == "/usr/bin:/bin"
    assert absolute_path("") == ""
