"""Instruction files in repair requests, over the stub (contracts §9): every repair workflow builds
its prompt through the request door — the cascade down to the finding's file, in order, marked as the
project's instructions, after the order of authority and ahead of the Memory Map, in the one system
message; nothing of it in the stored turn; absent when confined out."""

from __future__ import annotations

from pathlib import Path

from autopatch_tui.core.agent.request_context import AUTHORITY
from autopatch_tui.core.instructions import files as inst
from tests.repair.conftest import SWALLOW, write
from tests.repair.helpers import Patcher, mode, turns
from tests.support.recall_seed import seed_item


def system_of(request) -> str:
    (system,) = [m["content"] for m in request.messages if m["role"] == "system"]
    return system


def test_every_repair_request_carries_the_cascade_ahead_of_the_map(repo: Path, chat_mgr, repair, llm_stub) -> None:
    inst.clear_cache()
    write(repo, "AGENTS.md", "ROOT-RULE: never swallow exceptions silently.")
    write(repo, "src/AGENTS.md", "SRC-RULE: log with the module logger.")
    write(repo, "docs/AGENTS.md", "DOCS-RULE: not on the way to src/a.py")
    write(repo, "src/a.py", SWALLOW)
    pref = seed_item(chat_mgr.store.conn(), kind="user_preference", subject="logging",
                     statement="Log exceptions with logger.exception.", recall_mode="always")
    llm_stub.default("chat", Patcher(repo))
    audit = repair.audit("fix src", ["src"])
    repair.explain("F1", "why?", "/patch explain F1 why?")
    requests = llm_stub.requests_for("chat")
    assert {mode(r) for r in requests} == {"patch", "explain"}
    for request in requests:
        system = system_of(request)
        marks = [AUTHORITY, 'file="AGENTS.md"', "ROOT-RULE", 'file="src/AGENTS.md"', "SRC-RULE",
                 "Project Memory Map", pref.logical_id]
        at = [system.find(m) for m in marks]
        assert -1 not in at and at == sorted(at), (mode(request), list(zip(marks, at, strict=True)))
        assert "DOCS-RULE" not in system
    stored = " ".join(f"{r['user_text']} {r['assistant_text']}" for r in turns(repo))
    assert "ROOT-RULE" not in stored and "SRC-RULE" not in stored and audit.answer in stored


def test_a_link_out_of_the_repository_never_reaches_a_repair_prompt(repo: Path, tmp_path: Path, repair,
                                                                    llm_stub) -> None:
    inst.clear_cache()
    outside = tmp_path / "elsewhere"
    write(outside, "AGENTS.md", "OUTSIDE-RULE")
    write(repo, "src/a.py", SWALLOW)
    (repo / "src" / "AGENTS.md").symlink_to(outside / "AGENTS.md")
    (repo / "AGENTS.md").symlink_to(repo / ".git" / "config")
    llm_stub.default("chat", Patcher(repo))
    repair.audit("fix src", ["src"])
    for request in llm_stub.requests_for("chat"):
        system = system_of(request)
        assert "OUTSIDE-RULE" not in system and "[core]" not in system and "Project instructions" not in system
        assert AUTHORITY in system
