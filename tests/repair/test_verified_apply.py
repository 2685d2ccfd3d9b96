"""Verified apply: after `/patch apply` the finding's analyzer re-runs on the changed file and the
outcome — resolved, still present, unverified — is shown and kept in the audit summary; the
file's other pending patches are re-based on the new text or marked stale. And `/audit` on a Java
repository: Semgrep's findings get drafts (a draft that breaks the syntax is refused), one is
applied and Semgrep confirms it."""

from __future__ import annotations

from pathlib import Path

import pytest

from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.repair.analyzers import ruff as ruff_module
from autopatch_tui.core.repair.findings import REVIEW, REVIEW_CHECK_ID, Finding
from autopatch_tui.core.repair.patching import Edit, make_draft
from autopatch_tui.core.repair.workflows import RepairService
from autopatch_tui.core.repair.workspace import (
    APPLIED,
    DISCARDED,
    PATCHED,
    RESOLVED,
    STALE,
    AuditWorkspace,
    ReviewState,
    WorkspaceError,
)
from tests.repair.conftest import fake_tool, write
from tests.repair.helpers import FREE_TEXT, Patcher, first_requests, propose, tool_results, turns, user_message

LOADER = (
    "import hashlib\n"  # 1
    "\n"
    "\n"
    "def load(path, cache={}):\n"  # 4  B006
    "    try:\n"
    "        return open(path).read()\n"
    "    except:\n"  # 7  S110
    "        pass\n"
    "\n"
    "\n"
    "def digest(data):\n"
    "    return hashlib.md5(data)\n"  # 12 S324
)


def audited(manager: MemoryManager) -> tuple[RepairService, AuditWorkspace]:
    review = ReviewState()
    service = RepairService(manager, review)
    service.audit("/audit", [])  # no model: the scan only
    return service, review.require()


def draft(ws: AuditWorkspace, repo: Path, fid: str, old: str, new: str) -> None:
    ws.set_draft(make_draft(repo, ws.get(fid).finding, finding_id=fid, old_text=old, new_text=new))


def test_apply_verifies_rebases_the_files_other_patches_and_marks_broken_ones_stale(repo: Path, manager) -> None:
    write(repo, "a.py", LOADER)
    service, ws = audited(manager)
    assert [(s.finding.id, s.finding.line, s.finding.check_id) for s in ws.findings()] == [
        ("F1", 4, "B006"), ("F2", 7, "S110"), ("F3", 12, "S324")]
    draft(ws, repo, "F1", "def load(path, cache={}):\n",
          "def load(path, cache=None):\n    cache = {} if cache is None else cache\n")  # one line more
    draft(ws, repo, "F2", "cache={}):\n    try:\n        return open(path).read()\n    except:\n        pass\n",
          "cache={}):\n    try:\n        return open(path).read()\n    except OSError:\n        return None\n")
    draft(ws, repo, "F3", "    return hashlib.md5(data)", "    return hashlib.sha256(data)")
    old_f3_diff = ws.get("F3").draft.diff

    assert service.apply("F1") == (
        "Applied the patch for F1 to a.py.\n"
        "Verified: B006 is resolved (ruff).\n"
        "Re-based on the changed file: F3 (/patch show ID).\n"
        "Stale now (their text changed): F2; /patch discard ID, then /audit again.")
    f2, f3 = ws.get("F2"), ws.get("F3")
    assert (f2.status, f2.failure, f2.finding.line) == (STALE, "the file changed when the patch for F1 was applied", 8)
    assert (f3.status, f3.finding.line) == (PATCHED, 13)
    assert f3.draft.diff != old_f3_diff and "@@ -10,4 +10,4 @@" in f3.draft.diff
    assert "-    return hashlib.md5(data)" in f3.draft.diff

    with pytest.raises(WorkspaceError, match="F2 has no pending patch \\(it is stale\\)"):
        service.apply("F2")
    assert service.apply("F3") == "Applied the patch for F3 to a.py.\nVerified: S324 is resolved (ruff)."
    assert service.discard("F2") == "Discarded the patch for F2; a.py is unchanged."
    text = (repo / "a.py").read_text()
    assert "cache = {} if cache is None else cache\n" in text and "hashlib.sha256(data)" in text
    assert "except:\n        pass\n" in text  # the stale patch was never written
    summary = service.summary().splitlines()
    assert summary[1:4] == [
        "- F1 a.py:4 B006 Do not use mutable data structures for argument defaults — patch applied, verified: B006 is "
        "resolved (ruff)",
        "- F2 a.py:8 S110 `try`-`except`-`pass` detected, consider logging the exception — patch discarded",
        "- F3 a.py:13 S324 Probable use of insecure hash functions in `hashlib`: `md5` — patch applied, verified: "
        "S324 is resolved (ruff)",
    ]
    assert [s.status for s in ws.findings()] == [APPLIED, DISCARDED, APPLIED]


def test_a_fix_that_does_not_remove_the_finding_is_still_present_and_another_line_does_not_count(
        repo: Path, manager) -> None:
    write(repo, "a.py", "x = eval('1')\ny = eval('2')\nz = eval('3')\n")
    service, ws = audited(manager)
    draft(ws, repo, "F1", "x = eval('1')\n", "x = int('1')\n")  # F2 at line 2 is the same rule: no matter
    draft(ws, repo, "F3", "z = eval('3')", "z = eval('3')  # reviewed")
    assert service.apply("F1") == ("Applied the patch for F1 to a.py.\nVerified: S307 is resolved (ruff).\n"
                                   "Re-based on the changed file: F3 (/patch show ID).")
    assert service.apply("F3") == ("Applied the patch for F3 to a.py.\n"
                                   "S307 is still present (ruff reports it at a.py:3).")
    assert "— patch applied, S307 is still present (ruff reports it at a.py:3)" in service.summary()


def test_when_the_analyzer_cannot_run_the_apply_is_kept_and_unverified(repo: Path, manager, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    write(repo, "a.py", "x = eval('1')\n")
    service, ws = audited(manager)
    draft(ws, repo, "F1", "eval('1')", "int('1')")
    broken = fake_tool(tmp_path, "ruff", "echo 'ruff: boom' >&2\nexit 2")
    monkeypatch.setattr(ruff_module, "find_ruff", lambda: broken)
    assert service.apply("F1") == ("Applied the patch for F1 to a.py.\n"
                                   "Unverified (ruff failed (exit 2): ruff: boom).")
    assert (repo / "a.py").read_text() == "x = int('1')\n"
    assert ws.get("F1").status == APPLIED and "patch applied, unverified (ruff failed" in service.summary()


def test_a_finding_the_review_reported_is_applied_unverified(repo: Path, manager) -> None:
    write(repo, "a.py", "def double(x):\n    return 3 * x\n")
    service, ws = audited(manager)
    ws.add_findings([Finding("F1", "a.py", 2, REVIEW_CHECK_ID, "triples", REVIEW)])
    draft(ws, repo, "F1", "3 * x", "2 * x")
    assert service.apply("F1") == ("Applied the patch for F1 to a.py.\n"
                                   "Unverified (no analyzer checks a finding the review reported).")


# --- Java, end to end with the model ------------------------------------------------------------

TOKENS = """\
import java.security.MessageDigest;
import java.util.Random;

class Tokens {
    byte[] digest(byte[] data) throws Exception {
        return MessageDigest.getInstance("MD5").digest(data);
    }

    int roll() {
        return new Random().nextInt(6);
    }
}
"""


def test_a_java_audit_drafts_semgrep_findings_and_the_apply_is_verified_by_semgrep(repo: Path, repair, review,
                                                                                  llm_stub) -> None:
    write(repo, "src/Tokens.java", TOKENS)
    llm_stub.default("chat", Patcher(repo, special={
        "F1": propose("F1", '"MD5"', '"SHA-256"'),
        "F2": propose("F2", "new Random().nextInt(6);", "new Random().nextInt(6)"),  # drops the `;`
    }))
    result = repair.audit("/audit @src", ["src"])
    ws = review.require()
    assert result.answer.splitlines()[:3] == [
        "Code audit of src (1 file(s): 1 Java): 2 finding(s) from semgrep.",
        f"- F1 src/Tokens.java:6 java.weak-md5 {ws.get('F1').finding.message} — patch pending review",
        f"- F2 src/Tokens.java:10 java.insecure-random {ws.get('F2').finding.message} — failed: draft refused: "
        "the patched src/Tokens.java would not parse (line 10: missing ;); keep the code valid",  # issue 30 item 14
    ]
    first = first_requests(llm_stub)
    assert user_message(first[0]).startswith("Finding F1: java.weak-md5 at src/Tokens.java:6 — MD5 is a broken hash")
    assert "Reported by semgrep; rule documentation: https://cwe.mitre.org/data/definitions/328.html." in \
        user_message(first[0])
    refused = [r for r in llm_stub.requests_for("chat") if tool_results(r) and "F2" in user_message(r)]
    assert refused and tool_results(refused[0])[0].startswith(
        "error: the patched src/Tokens.java would not parse (line 10: missing ;)")
    assert FREE_TEXT not in result.answer
    (row,) = turns(repo)
    assert row["evidence_keys"] == [ws.evidence_key("F1"), ws.evidence_key("F2")]  # Memory's evidence, as before

    assert repair.apply("F1") == ("Applied the patch for F1 to src/Tokens.java.\n"
                                  "Verified: java.weak-md5 is resolved (semgrep).")
    assert 'MessageDigest.getInstance("SHA-256")' in (repo / "src" / "Tokens.java").read_text()
    assert ws.get("F1").verification == RESOLVED
    assert "— patch applied, verified: java.weak-md5 is resolved (semgrep)" in repair.summary()


@pytest.mark.parametrize(("old", "new", "moves", "span"), [
    # replaced lines 2-3 by one line: line 1 stays, 2-3 were inside, 4 → 3
    ("b\nc\n", "x\n", {1: 1, 2: None, 3: None, 4: 3}, [2]),
    # a text inside one line grows to three lines: the lines after move down by two
    ("b", "b1\nb2\nb3", {1: 1, 2: None, 3: 5}, [2, 3, 4]),
    # whole lines deleted: nothing of the new text is left on a line of its own
    ("b\nc\n", "", {1: 1, 2: None, 3: None, 4: 2}, [2]),
])
def test_an_edit_maps_the_lines_of_the_file_before_to_the_file_after(old: str, new: str, moves: dict,
                                                                     span: list) -> None:
    before = "a\nb\nc\nd\n"
    edit = Edit.of(before, before.index(old), old, new)
    assert {line: edit.moved(line) for line in moves} == moves
    assert list(edit.new_span) == span
    after = before.replace(old, new, 1).split("\n")
    for line, moved in moves.items():  # a line outside the edit really is at its new place
        if moved is not None:
            assert after[moved - 1] == before.split("\n")[line - 1]
