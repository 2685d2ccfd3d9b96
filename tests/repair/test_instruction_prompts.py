"""Instruction files in repair requests, over the stub (contracts §9): every repair workflow builds
its prompt through the request door — the cascade down to the finding's file, in order, marked as the
project's instructions, after the order of authority and ahead of the Memory Map, in the one system
message; nothing of it in the stored turn; absent when confined out."""

from __future__ import annotations

from pathlib import Path

from autopatch_tui.core.agent.request_context import AUTHORITY, INSTRUCTION_SHARE
from autopatch_tui.core.instructions import files as inst
from autopatch_tui.core.llm.profiles import resolve_profile
from autopatch_tui.core.llm.tokens import estimate_tokens
from autopatch_tui.core.repair.workflows import RepairService
from autopatch_tui.core.repair.workspace import ReviewState
from tests.agent.conftest import MODEL
from tests.repair.conftest import CLEAN, SWALLOW, write
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


def test_a_review_of_many_folders_keeps_the_instructions_within_their_bound(repo: Path, open_manager, llm_stub,
                                                                            monkeypatch) -> None:
    # a zero-finding review scopes every scanned file: hundreds of folders, each with its AGENTS.md,
    # under a small model's window (the token share binds before the 32 KiB)
    inst.clear_cache()
    monkeypatch.setenv("AUTOPATCH_LLM_CONTEXT_WINDOW", "16384")
    repair = RepairService(open_manager(repo), ReviewState())
    write(repo, "AGENTS.md", "ROOT-RULE: run make check before proposing a patch.")
    for i in range(150):
        folder = "n" * 150 + f"{i:03d}"
        write(repo, f"{folder}/AGENTS.md", f"rule {i}\n" + "x" * 600)
        write(repo, f"{folder}/m.py", CLEAN)
    llm_stub.default("chat", Patcher(repo))
    repair.audit("/audit", [])
    capacity = resolve_profile(MODEL, context_window=16384, max_output_tokens=None).input_capacity
    requests = llm_stub.requests_for("chat")
    assert requests
    for request in requests:
        system = system_of(request)
        start = system.index("Project instructions:")
        end = system.find("\n\nProject Memory Map", start)
        block = system[start:] if end < 0 else system[start:end]
        assert len(block.encode("utf-8")) <= inst.MAX_BYTES
        assert estimate_tokens(block) <= int(capacity * INSTRUCTION_SHARE)
        assert "instruction file(s) were left out for the bound" in block
