"""The `code_audit` workflow end to end against the scripted model: RAW text saved first, the
stable summary saved last (== the answer), evidence keys, scan failures, the zero-finding review,
batches and `/audit next`, model failures, the no-model audit, the local patch actions, routing by
`classify`, repair isolation and `/new` during a request."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

import pytest

from autopatch_tui.core.agent.chat import ChatService
from autopatch_tui.core.agent.router import CLASSIFY_AUDIT, CLASSIFY_SYSTEM
from autopatch_tui.core.errors import NoModelError
from autopatch_tui.core.llm.errors import ProviderError
from autopatch_tui.core.memory.sqlite import write_txn
from autopatch_tui.core.agent.request_context import AUTHORITY
from autopatch_tui.core.repair import prompts
from autopatch_tui.core.repair.findings import REVIEW, REVIEW_CHECK_ID
from autopatch_tui.core.repair.patching import PatchApplyError, make_draft
from autopatch_tui.core.repair.scanner import ScanError
from autopatch_tui.core.repair.workflows import (
    AUDIT_BATCH,
    RepairService,
    normalized_scope,
)
from autopatch_tui.core.repair.workspace import (
    APPLIED,
    FAILED,
    OPEN,
    PATCHED,
    ReviewState,
    WorkspaceError,
)
from tests.repair.conftest import CLEAN, MESSAGES, MUTABLE, SWALLOW, write
from tests.repair.helpers import (
    FIX_MARK,
    Patcher,
    assert_stable_summary,
    finding_of,
    first_requests,
    in_thread,
    mode,
    propose,
    tool_results,
    turns,
    user_message,
)
from tests.support.llm_stub import Reply
from tests.support.recall_seed import active_thread, add_turn, seed_item

# --- the audit turn ---------------------------------------------------------------------------

def test_audit_saves_the_raw_text_first_then_exactly_its_summary(repo: Path, repair, review, llm_stub) -> None:
    write(repo, "src/a.py", SWALLOW)
    write(repo, "src/b.py", MUTABLE)
    release = threading.Event()
    patcher = Patcher(repo)

    def reply(request):
        spec = patcher(request)
        if not tool_results(request) and finding_of(request)[0] == "F1":
            spec.wait_event = release  # the model "thinks" until the test has looked at the store
        return spec

    llm_stub.default("chat", reply)
    text = "Audit [bold]src[/bold] please  \n(keep it minimal)"
    worker, box = in_thread(lambda: repair.audit(text, ["src/", " src "]))
    try:
        assert llm_stub.wait_for_requests(1, task="chat", timeout=15)
        (during,) = turns(repo)
        ws = review.workspace
        assert ws is not None
        assert (during["state"], during["intent"], during["user_text"], during["assistant_text"]) == (
            "open", "code_audit", text, None)
        assert during["scope_paths"] == ["src"]
        assert during["evidence_keys"] == [f"{ws.scan_id}:F1", f"{ws.scan_id}:F2"]
    finally:
        release.set()
        worker.join(30)
    assert not worker.is_alive() and "error" not in box, box.get("error")
    result = box["result"]
    (row,) = turns(repo)
    assert (row["id"], row["thread_id"]) == (result.turn_id, result.thread_id)
    assert (row["state"], row["intent"], row["user_text"]) == ("completed", "code_audit", text)
    assert row["assistant_text"] == result.answer and result.state == "completed" and result.intent == "code_audit"
    assert row["evidence_keys"] == [f"{ws.scan_id}:F1", f"{ws.scan_id}:F2"]
    assert re.fullmatch(r"scan-[0-9A-HJKMNP-TV-Z]{26}", ws.scan_id)  # one audit's ID: `<scan>:<F id>` splits
    assert result.answer.splitlines() == [
        "Code audit of src (2 file(s): 2 Python): 2 finding(s) from ruff.",
        f"- F1 src/a.py:4 S110 {MESSAGES['S110']} — patch pending review",
        f"- F2 src/b.py:1 B006 {MESSAGES['B006']} — patch pending review",
        "Pending patches: 2 · failed: 0 · remaining: 0",
        "Next: /patch show ID, /patch apply ID, /patch explain ID, /patch revise ID TEXT.",
    ]
    assert_stable_summary(result.answer)
    # the drafts are in the workspace; nothing was written to the files
    assert ws.get("F1").draft.new_text == "    except:" + FIX_MARK
    assert (repo / "src" / "a.py").read_text() == SWALLOW
    first = first_requests(llm_stub)
    assert [finding_of(r)[0] for r in first] == ["F1", "F2"]
    assert [m["role"] for m in first[0].messages] == ["system", "user"]  # nothing in Memory: no Map
    assert first[0].messages[0]["content"] == prompts.PATCH_SYSTEM + "\n" + AUTHORITY
    assert user_message(first[0]).startswith(f"Finding F1: S110 at src/a.py:4 — {MESSAGES['S110']}")
    assert text in user_message(first[0])  # the developer's request reaches the model as typed


def test_scan_failure_fails_the_turn_and_keeps_the_user_text(repo: Path, repair, review, llm_stub) -> None:
    write(repo, "src/a.py", SWALLOW)
    llm_stub.default("chat", Patcher(repo))
    earlier = repair.audit("first audit", ["src"])
    ws = review.workspace
    with pytest.raises(ScanError, match="leaves the repository"):
        repair.audit("/audit @../elsewhere", ["../elsewhere"])
    first, failed = turns(repo)
    assert first["assistant_text"] == earlier.answer
    assert (failed["state"], failed["intent"], failed["user_text"], failed["assistant_text"]) == (
        "failed", "code_audit", "/audit @../elsewhere", None)
    assert failed["evidence_keys"] == [] and failed["scope_paths"] == ["../elsewhere"]
    assert review.workspace is ws  # no workspace was made: the earlier audit stays open
    # "/" is the filesystem root, not the repository: refused, never widened to the whole repository
    with pytest.raises(ScanError, match="absolute paths are refused"):
        repair.audit("/audit @/", ["/"])
    assert turns(repo)[-1]["state"] == "failed" and turns(repo)[-1]["scope_paths"] == ["/"]
    assert review.workspace is ws
    assert len(llm_stub.requests_for("chat")) == 2  # only the first audit's F1 run


@pytest.mark.parametrize(("given", "scope"), [
    (["src/", " src ", "./src"], ("src", "./src")),
    (["", "  ", "a//", "pkg/mod.py"], ("a", "pkg/mod.py")),
    (["./", "."], (".",)),
    (["/", "//"], ("/", "//")),
])
def test_scope_normalisation(given: list[str], scope: tuple[str, ...]) -> None:
    assert normalized_scope(given) == scope


def test_zero_findings_run_a_review_whose_findings_get_patches(repo: Path, repair, review, llm_stub) -> None:
    write(repo, "pkg/clean.py", CLEAN)
    write(repo, "other.py", CLEAN)  # a Python file outside the audited scope
    llm_stub.default("chat", Patcher(repo, reports=[("pkg/clean.py", 2, "doubles where  it should\n square"),
                                                    ("other.py", 1, "not reviewed"),
                                                    ("pkg/clean.py", 9, "no such line")]))
    result = repair.audit("/audit @pkg", ["pkg"])

    review_requests = [r for r in llm_stub.requests_for("chat") if mode(r) == "review"]
    assert len(review_requests) == 2
    assert review_requests[0].messages[0]["content"] == prompts.REVIEW_SYSTEM + "\n" + AUTHORITY
    assert user_message(review_requests[0]).startswith("Files to review:\n- pkg/clean.py\n")
    assert "other.py" not in user_message(review_requests[0])
    assert tool_results(review_requests[1]) == ["reported pkg/clean.py:2",
                                                "error: other.py is not one of the reviewed files",
                                                "error: line 9 is outside 1..3"]
    ws = review.workspace
    assert ws.reviewed
    (state,) = ws.findings()
    f = state.finding
    assert (f.id, f.path, f.line, f.check_id, f.message, f.origin) == (
        "F1", "pkg/clean.py", 2, REVIEW_CHECK_ID, "doubles where it should square", REVIEW)
    assert state.status == PATCHED and state.draft.old_text == "    return 2 * x"
    patch_requests = [r for r in first_requests(llm_stub) if mode(r) == "patch"]
    assert [finding_of(r) for r in patch_requests] == [("F1", "pkg/clean.py", 2)]
    assert result.answer.splitlines()[:3] == [
        "Code audit of pkg (1 file(s): 1 Python): 0 finding(s) from ruff.",
        "Second review of the zero-finding scan: 1 finding(s) reported.",
        "- F1 pkg/clean.py:2 APJ-REVIEW doubles where it should square — patch pending review",
    ]
    assert "REVIEW-FREE-TEXT" not in result.answer
    assert_stable_summary(result.answer)
    (row,) = turns(repo)
    assert row["state"] == "completed" and row["assistant_text"] == result.answer
    assert row["evidence_keys"] == [f"{ws.scan_id}:F1"]


def test_zero_findings_and_a_review_that_reports_nothing(repo: Path, repair, review, llm_stub) -> None:
    write(repo, "clean.py", CLEAN)
    llm_stub.default("chat", Patcher(repo))
    result = repair.audit("/audit", [])
    assert len(llm_stub.requests_for("chat")) == 1 and mode(llm_stub.requests_for("chat")[0]) == "review"
    assert result.answer.splitlines() == [
        "Code audit of the repository (1 file(s): 1 Python): 0 finding(s) from ruff.",
        "Second review of the zero-finding scan: no issues found.",
        "Pending patches: 0 · failed: 0 · remaining: 0",
    ]
    assert "REVIEW-FREE-TEXT" not in result.answer
    ws = review.workspace
    assert ws.reviewed and ws.findings() == []
    (row,) = turns(repo)
    assert (row["state"], row["assistant_text"], row["evidence_keys"]) == ("completed", result.answer, [])


def test_a_transient_error_of_the_review_is_a_result_and_an_auth_error_fails_the_turn(
        repo: Path, repair, review, llm_stub) -> None:
    write(repo, "clean.py", CLEAN)
    llm_stub.script("chat", Reply(status=503), Reply(status=401))
    result = repair.audit("/audit", [])
    assert ("Second review of the zero-finding scan failed: model error (transient_provider); run /audit again "
            "to retry.") in result.answer.splitlines()
    assert not review.workspace.reviewed
    with pytest.raises(ProviderError):
        repair.audit("/audit again", [])
    assert [(r["state"], r["user_text"]) for r in turns(repo)] == [("completed", "/audit"), ("failed", "/audit again")]


def test_a_new_audit_says_when_it_replaced_pending_patches(repo: Path, repair, review, llm_stub) -> None:
    write(repo, "a.py", SWALLOW)
    write(repo, "b.py", MUTABLE)
    llm_stub.default("chat", Patcher(repo))
    first = repair.audit("/audit", [])
    assert "replaced the previous one" not in first.answer
    repair.discard("F1")  # one of the two patches is closed; one stays pending
    second = repair.audit("/audit again", [])
    assert "This audit replaced the previous one; its 1 pending patch(es) were not applied." in second.answer
    assert review.workspace is not None and review.workspace.get("F1").status == PATCHED
    third = repair.audit("/audit once more", ["a.py"])
    assert "its 2 pending patch(es) were not applied" in third.answer


def test_the_review_request_lists_a_bounded_number_of_files(repo: Path) -> None:
    paths = [f"pkg/m{n:03}.py" for n in range(prompts.MAX_REVIEW_FILES + 7)]
    text = prompts.review_request(paths, "")
    assert f"- {paths[prompts.MAX_REVIEW_FILES - 1]}" in text and f"- {paths[prompts.MAX_REVIEW_FILES]}" not in text
    assert text.endswith("- … and 7 more source files in the same scope")


def test_the_review_request_is_bounded_in_text_too_however_long_the_names() -> None:
    paths = [f"pkg/{'deep_folder_name/' * 11}m{n:03}.py" for n in range(prompts.MAX_REVIEW_FILES)]  # ~200 chars
    text = prompts.review_request(paths, "")
    assert len(text) <= prompts.MAX_REVIEW_LIST_CHARS + 200
    listed = [line for line in text.splitlines() if line.startswith("- pkg/")]
    assert listed and len(listed) < len(paths)  # some listed, the rest counted
    assert text.endswith(f"- … and {len(paths) - len(listed)} more source files in the same scope")


def test_an_unexpected_exception_marks_the_turn_failed_and_propagates(repo: Path, repair, llm_stub,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    write(repo, "a.py", SWALLOW)

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a bug in the workflow")

    monkeypatch.setattr(type(repair), "_batch", broken)
    with pytest.raises(RuntimeError, match="a bug in the workflow"):
        repair.audit("/audit", [])
    (row,) = turns(repo)
    assert (row["state"], row["user_text"]) == ("failed", "/audit")


def test_a_batch_of_five_then_audit_next_drafts_the_rest(repo: Path, repair, review, llm_stub) -> None:
    n = AUDIT_BATCH + 2
    write(repo, "gen.py", "".join(f"v{i} = eval('{i}')\n" for i in range(1, n + 1)))
    llm_stub.default("chat", Patcher(repo))
    first = repair.audit("/audit", [])
    ws = review.workspace
    keys = [ws.evidence_key(f"F{i}") for i in range(1, n + 1)]
    assert [finding_of(r)[0] for r in first_requests(llm_stub)] == [f"F{i}" for i in range(1, AUDIT_BATCH + 1)]
    assert [s.status for s in ws.findings()] == [PATCHED] * AUDIT_BATCH + [OPEN] * 2
    assert "Pending patches: 5 · failed: 0 · remaining: 2" in first.answer
    assert first.answer.endswith("/audit next drafts the next batch.")
    assert "- F6 gen.py:6 S307" in first.answer and first.answer.count("not processed yet") == 2

    nxt = repair.audit_next("/audit next")
    assert [s.status for s in ws.findings()] == [PATCHED] * n
    assert [finding_of(r)[0] for r in first_requests(llm_stub)][AUDIT_BATCH:] == ["F6", "F7"]
    assert "Pending patches: 7 · failed: 0 · remaining: 0" in nxt.answer and "/audit next" not in nxt.answer
    assert_stable_summary(nxt.answer)
    one, two = turns(repo)
    assert one["evidence_keys"] == keys[:AUDIT_BATCH] and one["assistant_text"] == first.answer
    assert (two["state"], two["intent"], two["user_text"], two["assistant_text"]) == (
        "completed", "code_audit", "/audit next", nxt.answer)
    assert two["evidence_keys"] == keys[AUDIT_BATCH:] and two["thread_id"] == one["thread_id"]

    with pytest.raises(WorkspaceError, match="already processed"):
        repair.audit_next("/audit next")
    assert len(turns(repo)) == 2


def test_refused_and_missing_proposals_fail_their_finding(repo: Path, repair, review, llm_stub) -> None:
    write(repo, "a.py", SWALLOW)
    write(repo, "b.py", MUTABLE)
    write(repo, "c.py", "x = eval('1')\n")
    llm_stub.default("chat", Patcher(repo, special={
        "F1": propose("F2", "bucket=[]", "bucket=None"),  # a valid edit — of another finding
        "F2": "MODEL-SAYS: a false positive",  # no propose_patch at all
    }))
    result = repair.audit("/audit", [])
    ws = review.workspace
    assert [(s.finding.id, s.status, s.failure) for s in ws.findings()] == [
        ("F1", FAILED, "draft refused: this draft is bound to F1, not F2"),
        ("F2", FAILED, "no patch was proposed"),
        ("F3", PATCHED, ""),
    ]
    assert ws.get("F1").draft is None and ws.get("F2").draft is None
    assert "- F1 a.py:4 S110" in result.answer and "— failed: draft refused: this draft is bound to F1" \
        in result.answer
    assert "MODEL-SAYS" not in result.answer
    assert "Pending patches: 1 · failed: 2 · remaining: 0" in result.answer
    assert (repo / "b.py").read_text() == MUTABLE


def test_a_proposal_the_tool_refused_is_reported_as_refused_not_as_none(repo: Path, repair, review,
                                                                         llm_stub) -> None:
    """The model called propose_patch, the check refused it (its old text is not in the file) and the
    model did not try again: the finding says why, never "no patch was proposed" (issue 30 item 14)."""
    write(repo, "a.py", SWALLOW)
    llm_stub.default("chat", Patcher(repo, special={"F1": propose("F1", "text that is not in a.py", "x")}))
    result = repair.audit("/audit", [])
    [state] = review.workspace.findings()
    assert state.status == FAILED and state.failure.startswith("draft refused: ")
    assert "no patch was proposed" not in result.answer and "draft refused" in result.answer


@pytest.mark.parametrize(("status", "category"), [(503, "transient_provider"), (429, "rate_limit")])
def test_a_retryable_model_error_fails_only_that_finding(repo: Path, repair, review, llm_stub,
                                                         status: int, category: str) -> None:
    write(repo, "a.py", SWALLOW)
    write(repo, "b.py", MUTABLE)
    llm_stub.default("chat", Patcher(repo, special={"F1": Reply(status=status)}))
    result = repair.audit("/audit", [])
    ws = review.workspace
    assert (ws.get("F1").status, ws.get("F1").failure) == (FAILED, f"model error ({category})")
    assert ws.get("F2").status == PATCHED
    assert [finding_of(r)[0] for r in first_requests(llm_stub)] == ["F1", "F2"]  # F1 was not retried
    assert f"- F1 a.py:4 S110 {MESSAGES['S110']} — failed: model error ({category})" in result.answer
    assert "Pending patches: 1 · failed: 1 · remaining: 0" in result.answer
    (row,) = turns(repo)
    assert (row["state"], row["assistant_text"]) == ("completed", result.answer)


def test_an_auth_error_fails_the_turn(repo: Path, repair, review, llm_stub) -> None:
    write(repo, "a.py", SWALLOW)
    write(repo, "b.py", MUTABLE)
    write(repo, "c.py", "x = eval('1')\n")
    llm_stub.default("chat", Patcher(repo, special={"F2": Reply(status=401)}))
    with pytest.raises(ProviderError) as info:
        repair.audit("/audit all", [])
    assert info.value.category == "auth"
    ws = review.workspace
    assert [s.status for s in ws.findings()] == [PATCHED, OPEN, OPEN]  # the batch stopped at F2
    assert [finding_of(r)[0] for r in first_requests(llm_stub)] == ["F1", "F2"]
    (row,) = turns(repo)
    assert (row["state"], row["user_text"], row["assistant_text"]) == ("failed", "/audit all", None)
    assert row["evidence_keys"] == [ws.evidence_key(f) for f in ("F1", "F2", "F3")]


# --- without a model ---------------------------------------------------------------------------

def test_without_a_model_the_audit_scans_and_drafting_is_refused_before_storing(repo: Path, manager) -> None:
    write(repo, "a.py", SWALLOW)
    write(repo, "b.py", MUTABLE)
    assert manager.client is None
    review = ReviewState()
    service = RepairService(manager, review)
    result = service.audit("/audit", [])
    assert result.answer.splitlines() == [
        "Code audit of the repository (2 file(s): 2 Python): 2 finding(s) from ruff.",
        f"- F1 a.py:4 S110 {MESSAGES['S110']} — not processed yet",
        f"- F2 b.py:1 B006 {MESSAGES['B006']} — not processed yet",
        "Pending patches: 0 · failed: 0 · remaining: 2",
        "No model is configured, so no patches were drafted; the findings stay open.",
    ]
    (row,) = turns(repo)
    assert (row["state"], row["intent"], row["assistant_text"]) == ("completed", "code_audit", result.answer)
    ws = review.require()
    assert service.summary() == result.answer
    with pytest.raises(NoModelError):
        service.audit_next("/audit next")
    # a pending patch (drafted by hand here) cannot be explained or revised without a model either
    ws.set_draft(make_draft(repo, ws.get("F1").finding, finding_id="F1", old_text="pass", new_text="raise"))
    with pytest.raises(NoModelError):
        service.explain("F1", "why?", "/patch explain F1 why?")
    with pytest.raises(NoModelError):
        service.revise("F1", "smaller", "/patch revise F1 smaller")
    assert len(turns(repo)) == 1
    assert ws.get("F1").status == PATCHED
    # local actions need no model; Ruff re-checks the file: the try-except-pass is gone
    assert service.apply("F1") == "Applied the patch for F1 to a.py.\nVerified: S110 is resolved (ruff)."
    assert "        raise\n" in (repo / "a.py").read_text()


# --- local patch actions ----------------------------------------------------------------------

def test_show_apply_and_discard_act_locally_without_a_turn(repo: Path, repair, review, llm_stub) -> None:
    write(repo, "a.py", SWALLOW)
    write(repo, "b.py", MUTABLE)
    write(repo, "c.py", "x = eval('1')\n")
    llm_stub.default("chat", Patcher(repo, special={"F3": "no patch"}))
    repair.audit("/audit", [])
    stored = len(turns(repo))
    draft = review.workspace.get("F1").draft
    assert repair.show("f1") == f"Patch for F1 (revision 1, patch pending review) in a.py:\n\n```diff\n{draft.diff}```"
    # the scripted fix only appends a comment: Ruff still reports the finding at its line
    assert repair.apply("F1") == ("Applied the patch for F1 to a.py.\n"
                                  "S110 is still present (ruff reports it at a.py:4).")
    assert (repo / "a.py").read_text() == SWALLOW.replace("    except:\n", "    except:" + FIX_MARK + "\n")
    assert "(revision 1, patch applied)" in repair.show("F1")
    for action in (repair.apply, repair.discard):
        with pytest.raises(WorkspaceError, match="F1 has no pending patch \\(it is applied\\)"):
            action("F1")
    with pytest.raises(WorkspaceError, match="F3 has no patch \\(failed\\)"):
        repair.show("F3")
    # b.py changed since its patch was drafted: apply refuses, the file and the patch stay as they were
    changed = MUTABLE.replace("def add(", "def add_item(")
    (repo / "b.py").write_text(changed)
    with pytest.raises(PatchApplyError, match="changed since the patch was drafted"):
        repair.apply("F2")
    assert (repo / "b.py").read_text() == changed and review.workspace.get("F2").status == PATCHED
    assert repair.discard("F2") == "Discarded the patch for F2; b.py is unchanged."
    assert (repo / "b.py").read_text() == changed
    summary = repair.summary()
    assert "— patch applied" in summary.splitlines()[1] and "— patch discarded" in summary.splitlines()[2]
    assert "Pending patches: 0 · failed: 1 · remaining: 0" in summary
    assert [s.status for s in review.workspace.findings()] == [APPLIED, "discarded", FAILED]
    assert len(turns(repo)) == stored


# --- routing ----------------------------------------------------------------------------------

def test_classify_routes_to_the_audit_when_there_is_a_review_state(repo: Path, chat_mgr, review,
                                                                   llm_stub) -> None:
    write(repo, "src/a.py", SWALLOW)
    llm_stub.default("classify", "code_audit")
    llm_stub.default("chat", Patcher(repo))
    result = ChatService(chat_mgr, auditor=RepairService(chat_mgr, review)).ask("please find and fix bugs in src", scope_paths=["src/"])
    (classify,) = llm_stub.requests_for("classify")
    assert classify.messages[0]["content"] == CLASSIFY_AUDIT
    ws = review.workspace
    assert ws is not None and ws.scope == ("src",)
    assert result.intent == "code_audit"
    assert result.answer.startswith("Code audit of src (1 file(s): 1 Python): 1 finding(s) from ruff.")
    assert_stable_summary(result.answer)
    (row,) = turns(repo)
    assert (row["state"], row["intent"], row["user_text"], row["assistant_text"]) == (
        "completed", "code_audit", "please find and fix bugs in src", result.answer)
    assert row["evidence_keys"] == [ws.evidence_key("F1")] and row["scope_paths"] == ["src/"]
    assert ws.get("F1").status == PATCHED


def test_without_a_review_state_code_audit_is_not_a_choice(repo: Path, chat_mgr, llm_stub) -> None:
    write(repo, "src/a.py", SWALLOW)
    llm_stub.default("classify", "code_audit")
    llm_stub.default("chat", "ORDINARY-ANSWER")
    result = ChatService(chat_mgr).ask("please find and fix bugs in src", scope_paths=["src"])
    assert llm_stub.requests_for("classify")[0].messages[0]["content"] == CLASSIFY_SYSTEM
    assert (result.intent, result.answer) == ("general_chat", "ORDINARY-ANSWER")
    (row,) = turns(repo)
    assert (row["intent"], row["assistant_text"]) == ("general_chat", "ORDINARY-ANSWER")
    (request,) = llm_stub.requests_for("chat")
    assert "propose_patch" not in json.dumps(request.body["tools"])


def test_a_plain_message_routed_to_an_audit_never_drops_pending_patches(repo: Path, chat_mgr, review,
                                                                         llm_stub) -> None:
    """Review of r24, finding 7: only /audit asks before it replaces an audit with pending patches;
    a plain message the router sends to code_audit must not replace it without asking."""
    write(repo, "src/a.py", SWALLOW)
    llm_stub.default("classify", "code_audit")
    llm_stub.default("chat", Patcher(repo))
    chat = ChatService(chat_mgr, auditor=RepairService(chat_mgr, review))
    chat.ask("please find and fix bugs in src", scope_paths=["src/"])
    ws = review.workspace
    assert ws is not None and ws.count(PATCHED) == 1
    drafted = len(llm_stub.requests_for("chat"))
    result = chat.ask("now audit the whole repository for bugs")
    assert review.workspace is ws and ws.count(PATCHED) == 1  # the open audit and its patch are kept
    assert len(llm_stub.requests_for("chat")) == drafted  # nothing was scanned or drafted
    assert result.intent == "code_audit" and result.answer == (
        "No new audit was started: it would drop the open audit's 1 pending patch(es). Apply or discard them "
        "first (/patch list), or type /audit, which asks before it drops them.")
    assert turns(repo)[-1]["assistant_text"] == result.answer
    review.require().close_patch("F1", "discarded")  # nothing pending: the route audits again
    chat.ask("now audit the whole repository for bugs")
    assert review.workspace is not ws


# --- /new during a request --------------------------------------------------------------------

def test_new_during_an_audit_keeps_the_request_on_its_thread_and_workspace(repo: Path, chat_mgr, repair, review,
                                                                           llm_stub) -> None:
    write(repo, "a.py", SWALLOW)
    old_thread = active_thread(chat_mgr.store.conn())
    release = threading.Event()
    patcher = Patcher(repo)

    def reply(request):
        spec = patcher(request)
        if not tool_results(request):
            spec.wait_event = release
        return spec

    llm_stub.default("chat", reply)
    worker, box = in_thread(lambda: repair.audit("audit a.py", ["a.py"]))
    try:
        assert llm_stub.wait_for_requests(1, task="chat", timeout=15)
        ws = review.workspace
        assert ws is not None
        # /new from another control flow while the model is working
        new_thread = chat_mgr.new_thread(timeout=10).new_thread_id
        assert review.end() is True
    finally:
        release.set()
        worker.join(30)
    assert not worker.is_alive() and "error" not in box, box.get("error")
    result = box["result"]
    assert result.thread_id == old_thread != new_thread
    assert active_thread(chat_mgr.store.conn()) == new_thread
    (row,) = turns(repo)
    assert (row["thread_id"], row["state"], row["assistant_text"]) == (old_thread, "completed", result.answer)
    assert f"- F1 a.py:4 S110 {MESSAGES['S110']} — patch pending review" in result.answer
    assert ws.get("F1").status == PATCHED  # the request kept drafting in its own workspace
    assert review.workspace is None  # … which /new ended for the session
    with pytest.raises(WorkspaceError, match="no audit is open"):
        repair.show("F1")


def test_new_while_routing_an_audit_leaves_the_new_thread_without_it(repo: Path, chat_mgr, review,
                                                                     llm_stub) -> None:
    write(repo, "a.py", SWALLOW)
    old_thread = active_thread(chat_mgr.store.conn())
    new_threads: list[str] = []

    def classify(request):
        review.end()  # /new runs after the RAW turn was saved, before the audit starts
        new_threads.append(chat_mgr.new_thread(timeout=10).new_thread_id)
        return "code_audit"

    llm_stub.default("classify", classify)
    llm_stub.default("chat", Patcher(repo))
    result = ChatService(chat_mgr, auditor=RepairService(chat_mgr, review)).ask("audit a.py please")
    assert result.thread_id == old_thread and result.intent == "code_audit"
    assert "- F1 a.py:4 S110" in result.answer
    (row,) = turns(repo)
    assert (row["thread_id"], row["state"], row["assistant_text"]) == (old_thread, "completed", result.answer)
    assert review.workspace is None  # the old thread's audit does not become the new thread's


def test_end_of_the_review_during_the_scan_keeps_the_audit_out_of_the_session(repo: Path, repair, review,
                                                                               llm_stub) -> None:
    write(repo, "a.py", SWALLOW)
    llm_stub.default("chat", Patcher(repo))

    def progress(text: str) -> None:
        if text.startswith("scanning"):
            review.end()  # /reset (or /new) while the scan runs

    result = repair.audit("/audit", [], progress=progress)
    assert "patch pending review" in result.answer
    assert review.workspace is None
    (row,) = turns(repo)
    assert (row["state"], row["assistant_text"]) == ("completed", result.answer)
    repair.audit("/audit", [])  # a later audit is the session's again
    assert review.workspace is not None


# --- isolation ---------------------------------------------------------------------------------

def test_repair_requests_carry_no_history_or_discussion_only_applicable_preferences(
        repo: Path, chat_mgr, repair, review, llm_stub) -> None:
    conn = chat_mgr.store.conn()
    add_turn(chat_mgr, "RAW-ORDINARY: how should we handle logging?", "RAW-ANSWER: with the shared logger")
    with write_txn(conn):
        conn.execute("UPDATE threads SET checkpoint = 'CKPT-SECRET' WHERE status = 'active'")
    talk = seed_item(conn, kind="discussion_context", subject="logging debate", strength="soft",
                     statement="DISCUSSION-TEXT: still open", keywords=["logging"])
    pref = seed_item(conn, kind="user_preference", subject="logging helper", keywords=["logging"],
                     statement="PREF-TEXT: log through the shared helper", applies_to_paths=["src"])
    elsewhere = seed_item(conn, kind="user_preference", subject="docs logging wording", keywords=["logging"],
                          statement="ELSEWHERE-TEXT", applies_to_paths=["docs"])
    write(repo, "src/a.py", SWALLOW)
    write(repo, "src/pure.py", CLEAN)
    llm_stub.default("chat", Patcher(repo, explanation="EXPLAINED-LOGGING"))

    audit = repair.audit("AUDIT-RAW-7: fix the logging in src", ["src/a.py"])
    repair.explain("F1", "how does logging change?", "/patch explain F1 how does logging change?")
    repair.revise("F1", "keep the logging minimal", "/patch revise F1 keep the logging minimal")
    repair.audit("audit the logging of pure.py", ["src/pure.py"])  # zero findings: a review request

    requests = llm_stub.requests_for("chat")
    assert {mode(r) for r in requests} == {"patch", "explain", "review"}
    for request in requests:
        sent = json.dumps(request.messages, ensure_ascii=False)
        for leaked in ("RAW-ORDINARY", "RAW-ANSWER", "CKPT-SECRET", "DISCUSSION-TEXT", "ELSEWHERE-TEXT",
                       talk.logical_id, elsewhere.logical_id):
            assert leaked not in sent, (leaked, mode(request))
    later = [r for r in requests if "AUDIT-RAW-7" not in user_message(r)]
    assert len(later) == len(requests) - 2  # only the audit's own F1 run carries its RAW text
    for request in later:  # nothing of an earlier repair turn reaches a later one
        sent = json.dumps(request.messages, ensure_ascii=False)
        assert "AUDIT-RAW-7" not in sent and audit.answer.splitlines()[0] not in sent
        assert "EXPLAINED-LOGGING" not in sent
    for request in first_requests(llm_stub):
        roles = [m["role"] for m in request.messages]
        assert roles == ["system", "user"], roles  # prompt with the Memory Map (one system message), the request
        assert pref.logical_id in request.messages[0]["content"].partition("Project Memory Map")[2]
