"""`patch_explain` and `patch_revise` on a pending patch: what each turn saves, the three completed
outcomes of a revision (revised, no draft, refused), and the failures (model error, a workspace
change during the request, nothing to explain or revise)."""

from __future__ import annotations

from pathlib import Path

import pytest

from autopatch_tui.core.llm.errors import ProviderError
from autopatch_tui.core.agent.request_context import AUTHORITY
from autopatch_tui.core.repair import prompts
from autopatch_tui.core.repair.workspace import (
    DISCARDED,
    FAILED,
    PATCHED,
    WorkspaceError,
)
from tests.repair.conftest import MUTABLE, SWALLOW, write
from tests.repair.helpers import (
    FIX_MARK,
    FREE_TEXT,
    Patcher,
    assert_stable_summary,
    finding_of,
    line_fix,
    mode,
    propose,
    tool_names,
    tool_results,
    turns,
    user_message,
)
from tests.support.llm_stub import Reply

REVISED = "  # revised: narrower"


@pytest.fixture
def audited(repo: Path, repair, review, llm_stub):
    """An audit of src/a.py (F1) and src/b.py (F2), both with a pending patch (revision 1)."""
    write(repo, "src/a.py", SWALLOW)
    write(repo, "src/b.py", MUTABLE)
    llm_stub.default("chat", Patcher(repo))
    repair.audit("/audit @src", ["src"])
    ws = review.workspace
    assert [s.status for s in ws.findings()] == [PATCHED, PATCHED]
    return ws


def last_turn(repo: Path) -> dict:
    return turns(repo)[-1]


# --- patch_explain ----------------------------------------------------------------------------

def test_explain_saves_the_models_answer(repo: Path, repair, audited, llm_stub) -> None:
    explanation = "**What**: the bare `except` hid every error.\n\n**Risk**: none."
    llm_stub.default("chat", Patcher(repo, explanation=explanation))
    draft = audited.get("F1").draft
    text = "/patch explain f1 Why is this   safe?"
    result = repair.explain("f1", "Why is this   safe?", text)
    assert (result.answer, result.intent, result.state) == (explanation, "patch_explain", "completed")
    row = last_turn(repo)
    assert (row["state"], row["intent"], row["user_text"], row["assistant_text"]) == (
        "completed", "patch_explain", text, explanation)
    assert row["evidence_keys"] == [audited.evidence_key("F1")] and row["scope_paths"] == ["src/a.py"]
    request = llm_stub.requests_for("chat")[-1]
    assert mode(request) == "explain" and not {"propose_patch", "report_finding"} & tool_names(request)
    assert request.messages[0]["content"] == prompts.EXPLAIN_SYSTEM + "\n" + AUTHORITY
    assert user_message(request) == (f"Finding F1: S110 at src/a.py:4 — {audited.get('F1').finding.message}\n"
                                     f"Pending patch (revision 1):\n```diff\n{draft.diff}```\n"
                                     "The developer asks:\nWhy is this   safe?")
    assert audited.get("F1").draft is draft and audited.get("F1").status == PATCHED  # explaining changes nothing


def test_an_empty_explanation_fails_the_turn(repo: Path, repair, audited, llm_stub) -> None:
    llm_stub.default("chat", Patcher(repo, explanation=" \n "))
    with pytest.raises(WorkspaceError, match="empty explanation"):
        repair.explain("F1", "", "/patch explain F1")
    row = last_turn(repo)
    assert (row["state"], row["intent"], row["user_text"], row["assistant_text"]) == (
        "failed", "patch_explain", "/patch explain F1", None)
    assert "Explain this patch." in user_message(llm_stub.requests_for("chat")[-1])  # the default question


def test_explain_and_revise_need_a_pending_patch_and_store_nothing_otherwise(repo: Path, repair, review,
                                                                             llm_stub) -> None:
    for action in (repair.explain, repair.revise):
        with pytest.raises(WorkspaceError, match="no audit is open"):
            action("F1", "?", "/patch x F1")
    write(repo, "a.py", SWALLOW)
    write(repo, "b.py", MUTABLE)
    llm_stub.default("chat", Patcher(repo, special={"F1": "MODEL: not a real problem"}))
    repair.audit("/audit", [])
    repair.discard("F2")
    stored, requests = len(turns(repo)), len(llm_stub.requests)
    for fid, message in (("F1", "F1 has no pending patch \\(it is failed\\)"),
                         ("F2", "F2 has no pending patch \\(it is discarded\\)"),
                         ("F9", "no finding F9 in this audit")):
        for action in (repair.explain, repair.revise):
            with pytest.raises(WorkspaceError, match=message):
                action(fid, "?", f"/patch x {fid}")
    assert len(turns(repo)) == stored and len(llm_stub.requests) == requests


# --- patch_revise: completed outcomes ---------------------------------------------------------

def test_revise_replaces_the_pending_patch_with_the_next_revision(repo: Path, repair, audited, llm_stub) -> None:
    old, _ = line_fix(repo, "src/a.py", 4)
    llm_stub.default("chat", Patcher(repo, special={"F1": propose("f1", old, old + REVISED)}))
    text = "/patch revise F1 make it narrower"
    result = repair.revise("F1", "make it narrower", text)
    draft = audited.get("F1").draft
    assert (draft.revision, draft.new_text, audited.get("F1").status) == (2, old + REVISED, PATCHED)
    assert "+    except:" + REVISED in draft.diff
    assert result.answer == f"Patch for F1 revised (revision 2) in src/a.py:\n\n```diff\n{draft.diff}```"
    assert_stable_summary(result.answer)
    row = last_turn(repo)
    assert (row["state"], row["intent"], row["user_text"], row["assistant_text"]) == (
        "completed", "patch_revise", text, result.answer)
    assert row["evidence_keys"] == [audited.evidence_key("F1")] and row["scope_paths"] == ["src/a.py"]
    first = [r for r in llm_stub.requests_for("chat") if not tool_results(r)][-1]
    assert first.messages[0]["content"] == prompts.REVISE_SYSTEM + "\n" + AUTHORITY and "propose_patch" in tool_names(first)
    assert "Pending patch (revision 1)" in user_message(first)
    assert user_message(first).endswith("The developer wants this revision:\nmake it narrower")
    # the revision is what show, the summary and apply use
    assert "(revision 2, patch pending review)" in repair.show("F1")
    assert "— patch pending review (revision 2)" in repair.summary()
    repair.apply("F1")
    assert (repo / "src" / "a.py").read_text() == SWALLOW.replace("    except:\n", "    except:" + REVISED + "\n")
    # a second revision of another patch counts from its own revision
    old_b, _ = line_fix(repo, "src/b.py", 1)
    llm_stub.default("chat", Patcher(repo, special={"F2": propose("F2", old_b, old_b + "  # v2")}))
    assert "revised (revision 2)" in repair.revise("F2", "again", "/patch revise F2 again").answer


def test_revise_without_a_proposal_keeps_the_patch(repo: Path, repair, audited, llm_stub) -> None:
    before = audited.get("F1").draft
    llm_stub.default("chat", Patcher(repo, special={"F1": "MODEL-PROSE: the current patch is already right"}))
    result = repair.revise("F1", "is it right?", "/patch revise F1 is it right?")
    assert result.answer == "No revised draft was produced for F1; the pending patch is unchanged."
    assert audited.get("F1").draft is before
    row = last_turn(repo)
    assert (row["state"], row["intent"], row["assistant_text"]) == ("completed", "patch_revise", result.answer)


def test_revise_refuses_a_draft_bound_to_another_finding(repo: Path, repair, audited, llm_stub) -> None:
    f1, f2 = audited.get("F1").draft, audited.get("F2").draft
    old_b, _ = line_fix(repo, "src/b.py", 1)
    # a proposal that is valid — for F2, which exists in this audit
    llm_stub.default("chat", Patcher(repo, special={"F1": propose("F2", old_b, old_b + "  # hijack")}))
    result = repair.revise("F1", "fix it", "/patch revise F1 fix it")
    assert tool_results(llm_stub.requests_for("chat")[-1])[0].startswith("draft recorded for F2")
    assert result.answer == ("The revised draft was refused (binding: this draft is bound to F1, not F2); "
                             "the pending patch for F1 is unchanged.")
    assert audited.get("F1").draft is f1 and audited.get("F2").draft is f2
    assert [s.status for s in audited.findings()] == [PATCHED, PATCHED]
    row = last_turn(repo)
    assert (row["state"], row["intent"], row["assistant_text"]) == ("completed", "patch_revise", result.answer)
    assert FREE_TEXT not in result.answer


def test_revise_refuses_a_draft_the_file_no_longer_matches(repo: Path, repair, audited, llm_stub) -> None:
    before = audited.get("F1").draft
    old, _ = line_fix(repo, "src/a.py", 4)

    def reply(request):
        if tool_results(request):  # after the proposal was recorded, the developer edits the file
            (repo / "src" / "a.py").write_text(SWALLOW.replace("    except:", "    except Exception:"))
            return FREE_TEXT
        return propose(finding_of(request)[0], old, old + REVISED)

    llm_stub.default("chat", reply)
    result = repair.revise("F1", "narrower", "/patch revise F1 narrower")
    assert result.answer == ("The revised draft was refused (old_text occurs 0 times in src/a.py; it must occur "
                             "exactly once); the pending patch for F1 is unchanged.")
    assert audited.get("F1").draft is before
    assert last_turn(repo)["state"] == "completed"


# --- patch_revise: failures -------------------------------------------------------------------

@pytest.mark.parametrize("status", [401, 503])
def test_a_model_error_fails_the_revise_turn(repo: Path, repair, audited, llm_stub, status: int) -> None:
    before = audited.get("F1").draft
    llm_stub.default("chat", Reply(status=status))
    with pytest.raises(ProviderError):
        repair.revise("F1", "narrower", "/patch revise F1 narrower")
    row = last_turn(repo)
    assert (row["state"], row["intent"], row["user_text"], row["assistant_text"]) == (
        "failed", "patch_revise", "/patch revise F1 narrower", None)
    assert audited.get("F1").draft is before and audited.get("F1").status == PATCHED


def test_a_patch_closed_during_the_revision_fails_the_turn_and_stays_closed(repo: Path, repair, audited,
                                                                            llm_stub) -> None:
    before = audited.get("F1").draft
    old, _ = line_fix(repo, "src/a.py", 4)

    def reply(request):
        if tool_results(request):
            repair.discard("F1")  # the developer discards the patch while the revision runs
            return FREE_TEXT
        return propose("F1", old, old + REVISED)

    llm_stub.default("chat", reply)
    with pytest.raises(WorkspaceError, match="F1 has no pending patch \\(it is discarded\\)"):
        repair.revise("F1", "narrower", "/patch revise F1 narrower")
    assert audited.get("F1").status == DISCARDED and audited.get("F1").draft is before  # not resurrected
    row = last_turn(repo)
    assert (row["state"], row["assistant_text"]) == ("failed", None)
    assert (repo / "src" / "a.py").read_text() == SWALLOW


def test_revise_and_explain_keep_working_on_their_workspace_after_the_audit_failed_a_finding(
        repo: Path, repair, review, llm_stub) -> None:
    """A failed finding of the batch does not block the others' follow-ups."""
    write(repo, "a.py", SWALLOW)
    write(repo, "b.py", MUTABLE)
    llm_stub.default("chat", Patcher(repo, special={"F1": Reply(status=503)}))
    repair.audit("/audit", [])
    ws = review.workspace
    assert (ws.get("F1").status, ws.get("F2").status) == (FAILED, PATCHED)
    llm_stub.default("chat", Patcher(repo, explanation="F2 EXPLAINED"))
    assert repair.explain("F2", "why?", "/patch explain F2 why?").answer == "F2 EXPLAINED"
    assert ws.get("F2").draft.new_text.endswith(FIX_MARK)
