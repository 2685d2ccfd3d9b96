"""Issue #24 item 3: one path check (`core.confine`) for every caller that takes a repository path.
A symlink loop, a chain of links longer than the system follows (ELOOP), a NUL byte, text that is
not a file name and a 4,000-character path each end in the caller's own typed refusal — a tool
error the model reads, a `ScanError` (the audit turn fails, its text kept), a `DraftError`, a
`PatchApplyError`, a usage error (rc 2) of `--path` — never a raw RuntimeError / ValueError / OSError."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from autopatch_tui.core.agent.chat import ChatService
from autopatch_tui.core.agent.scoped_files import scoped_files
from autopatch_tui.core.agent.source_tools import SourceToolError, SourceTools
from autopatch_tui.core.confine import ConfinementError, UnusablePathError, confine, read_confined
from autopatch_tui.core.repair.findings import Finding
from autopatch_tui.core.repair.patching import DraftError, PatchApplyError, apply_draft, make_draft
from autopatch_tui.core.repair.scanner import ScanError, Scanner
from autopatch_tui.core.repair.workflows import RepairService
from tests.repair.conftest import SWALLOW, write
from tests.support.llm_stub import Reply
from tests.support.pipeline_helpers import stub_env

CHAIN = 45  # links: more than Linux follows (40)
LONG = "a" * 4000
DEEP = "d/" * 2040 + "x.py"  # every name short, the whole path over PATH_MAX
HOSTILE = {"loop": "symbolic link loop", "pair_a": "symbolic link loop", "loop/inner.py": "symbolic link loop",
           f"chain{CHAIN}": "symbolic link loop", "nul\x00.py": "NUL byte", LONG: "too long", DEEP: "too long",
           "\ud800.py": "not a valid file name"}
IDS = ["self-loop", "two-link-loop", "inside-a-loop", "eloop-chain", "nul", "4000-chars", "deep-4000", "surrogate"]


@pytest.fixture
def hostile(repo: Path) -> Path:
    """A repository with a self-loop, a two-link loop and a chain of CHAIN links to a real file."""
    write(repo, "pkg/load.py", SWALLOW)
    os.symlink("loop", repo / "loop")
    os.symlink("pair_b", repo / "pair_a")
    os.symlink("pair_a", repo / "pair_b")
    previous = "pkg/load.py"
    for n in range(1, CHAIN + 1):
        os.symlink(previous, repo / f"chain{n}")
        previous = f"chain{n}"
    return repo.resolve()


@pytest.mark.parametrize("rel", list(HOSTILE), ids=IDS)
def test_the_one_check_refuses_each_with_its_typed_error(hostile: Path, rel: str) -> None:
    with pytest.raises(UnusablePathError, match=HOSTILE[rel]):
        confine(hostile, rel)
    with pytest.raises(ConfinementError):
        read_confined(hostile, rel, 1000)
    assert confine(hostile, "chain30").name == "load.py"  # a chain the system follows is fine


@pytest.mark.parametrize("rel", list(HOSTILE), ids=IDS)
def test_source_tools_refuse_with_a_tool_error(hostile: Path, rel: str) -> None:
    tools = SourceTools(hostile)
    for call in (lambda: tools.read_file(rel), lambda: tools.list_files(rel), lambda: tools.search_text("x", rel)):
        with pytest.raises(SourceToolError, match=HOSTILE[rel]):
            call()


def test_the_model_reads_the_refusal_and_the_ask_completes(hostile: Path, chat_mgr, llm_stub) -> None:
    chat = ChatService(chat_mgr)
    llm_stub.script("chat", Reply(tool_calls=[("read_file", json.dumps({"path": rel})) for rel in HOSTILE]
                                  + [("list_files", json.dumps({"path": "loop"})),
                                     ("search_text", json.dumps({"pattern": "x", "path": "pair_a"}))]), "explained")
    result = chat.ask("explain the loop", intent="code_explain")
    assert (result.answer, result.state) == ("explained", "completed")
    tools = [m["content"] for m in llm_stub.requests_for("chat")[-1].messages if m["role"] == "tool"]
    assert len(tools) == len(HOSTILE) + 2
    for text, expected in zip(tools, [*HOSTILE.values(), "symbolic link loop", "symbolic link loop"], strict=True):
        assert text.startswith("error: ") and expected in text, text
        assert str(hostile) not in text  # no absolute path reaches the model


def test_scoped_files_skip_loops_inside_a_folder(hostile: Path) -> None:
    files = scoped_files(hostile, ["."], 50_000)
    assert "pkg/load.py" in files.included  # the loops and the over-long chain are skipped, not fatal


@pytest.mark.parametrize("rel", list(HOSTILE), ids=IDS)
def test_a_scan_of_it_is_a_scan_error(hostile: Path, rel: str) -> None:
    with pytest.raises(ScanError, match=HOSTILE[rel]) as caught:
        Scanner(hostile).scan([rel])
    assert len(str(caught.value)) < 300  # a 4,000-character path is not echoed whole


def test_the_audit_turn_fails_with_the_scan_error_and_keeps_the_text(hostile: Path, repair: RepairService) -> None:
    for rel in ("loop", "pair_a/x.py", f"chain{CHAIN}"):
        with pytest.raises(ScanError, match="symbolic link loop"):
            repair.audit(f"/audit @{rel}", [rel])
    turns = repair.manager.recent_turns(10)
    assert [(t.state, t.user_text) for t in turns] == [
        ("failed", "/audit @loop"), ("failed", "/audit @pair_a/x.py"), ("failed", f"/audit @chain{CHAIN}")]
    assert repair.review.workspace is None


@pytest.mark.parametrize("rel", list(HOSTILE), ids=IDS)
def test_drafting_for_it_is_a_draft_error(hostile: Path, rel: str) -> None:
    finding = Finding("F1", rel, 4, "S110", "swallows", tool="ruff")
    with pytest.raises(DraftError, match=HOSTILE[rel]):
        make_draft(hostile, finding, finding_id="F1", old_text="        pass\n", new_text="        raise\n")


@pytest.mark.parametrize("swap", ["loop", "chain"])
def test_applying_to_a_file_that_became_a_loop_is_a_patch_apply_error(hostile: Path, swap: str) -> None:
    finding = Finding("F1", "pkg/load.py", 4, "S110", "swallows", tool="ruff")
    draft = make_draft(hostile, finding, finding_id="F1", old_text="        pass\n", new_text="        raise\n")
    target = hostile / "pkg" / "load.py"
    target.unlink()
    os.symlink("load.py" if swap == "loop" else f"../chain{CHAIN}", target)
    with pytest.raises(PatchApplyError, match="symbolic link loop"):
        apply_draft(hostile, draft)
    assert os.path.islink(target)  # nothing written through it or over it


def test_the_path_option_refuses_each_as_a_usage_error(hostile: Path, invoke_cli, llm_stub) -> None:
    env = stub_env(llm_stub)
    llm_stub.default("chat", "an answer")
    for rel in HOSTILE:
        for args in (["ask", "what is this?", "--intent", "code_explain"], ["memory", "search", "parser"]):
            rc, _, err = invoke_cli(*args, "--path", rel, env=env)
            assert rc == 2, (rel, rc, err)
            expected = "is not valid UTF-8 text" if "\ud800" in rel else HOSTILE[rel]  # refused earlier
            assert expected in err and "Traceback" not in err, err
            assert len(err.strip().splitlines()) == 1 and len(err) < 400, err
    assert llm_stub.requests_for("chat") == []
