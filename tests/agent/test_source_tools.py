"""`code_explain` source tools: confined to the repository; `.autopatch-j/**`, `.git/**`, parent paths,
absolute paths and symlinks that leave the repo are refused; results are bounded."""

from __future__ import annotations

import json
import os

import pytest

from autopatch_tui.core.agent.source_tools import (
    MAX_READ_LINES,
    SourceToolError,
    SourceTools,
)
from tests.support.llm_stub import Reply

from .conftest import chat_requests


@pytest.fixture
def tree(repo, tmp_path):
    (repo / "src").mkdir()
    (repo / "src" / "app.py").write_text("".join(f"line {n}\n" for n in range(1, 1001)), encoding="utf-8")
    (repo / "src" / "util.py").write_text("def helper():\n    return 'NEEDLE'\n", encoding="utf-8")
    (repo / ".autopatch-j").mkdir(exist_ok=True)
    (repo / ".autopatch-j" / "notes.txt").write_text("NEEDLE private", encoding="utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("NEEDLE outside secret", encoding="utf-8")
    os.symlink(outside / "secret.txt", repo / "src" / "leak.txt")
    os.symlink(outside, repo / "linkdir")
    os.symlink(repo / ".autopatch-j" / "notes.txt", repo / "src" / "state_link.txt")
    os.symlink(repo / "src" / "util.py", repo / "src" / "inside_link.py")
    return repo, outside


@pytest.mark.parametrize("path", [
    "../outside/secret.txt", "src/../../outside/secret.txt", "/etc/passwd", ".autopatch-j/notes.txt",
    ".autopatch-j/memory.db", "./.autopatch-j/../.autopatch-j/notes.txt", ".git/config", "src/leak.txt",
    "linkdir/secret.txt", "src/state_link.txt", "", "   ",
])
def test_refused_paths(tree, path) -> None:
    repo, _ = tree
    tools = SourceTools(repo)
    with pytest.raises(SourceToolError):
        tools.read_file(path)


def test_allowed_reads_are_line_numbered_and_bounded(tree) -> None:
    repo, _ = tree
    tools = SourceTools(repo)
    out = tools.read_file("src/app.py", 10, 12)
    assert out.splitlines() == ["src/app.py lines 10-12 of 1000", "10: line 10", "11: line 11", "12: line 12"]
    whole = tools.read_file("src/app.py")
    assert whole.splitlines()[0] == f"src/app.py lines 1-{MAX_READ_LINES} of 1000"
    assert tools.read_file("src/inside_link.py").startswith("src/util.py lines 1-2")  # a link inside: fine
    listing = tools.list_files(".").splitlines()
    assert "src/" in listing and ".autopatch-j/" not in listing and ".git/" not in listing
    hits = tools.search_text("NEEDLE")
    assert hits.splitlines() == ["src/util.py:2:     return 'NEEDLE'"]  # no state dir, no symlinked files
    with pytest.raises(SourceToolError):
        tools.search_text("NEEDLE", "../outside")
    with pytest.raises(SourceToolError):
        tools.list_files("linkdir")


def test_the_agent_gets_refusals_as_tool_results(tree, chat, llm_stub) -> None:
    llm_stub.script("chat", Reply(tool_calls=[
        ("read_file", json.dumps({"path": "../outside/secret.txt"})),
        ("read_file", json.dumps({"path": ".autopatch-j/notes.txt"})),
        ("read_file", json.dumps({"path": "src/leak.txt"})),
        ("read_file", json.dumps({"start_line": 3})),
        ("read_file", json.dumps({"path": "src/util.py", "start_line": 2, "end_line": 2})),
    ]), "explained")
    assert chat.ask("explain util", intent="code_explain").answer == "explained"
    tools = [m["content"] for m in chat_requests(llm_stub)[-1].messages if m["role"] == "tool"]
    assert tools[0] == "error: that path leaves the repository"
    assert tools[1] == "error: .autopatch-j/ is not readable by tools"
    assert tools[2] == "error: that path leaves the repository"
    assert tools[3] == "error: invalid arguments for this tool"
    assert tools[4] == "src/util.py lines 2-2 of 2\n2:     return 'NEEDLE'"
    sent = json.dumps(chat_requests(llm_stub)[-1].messages)
    assert "outside secret" not in sent and "NEEDLE private" not in sent
