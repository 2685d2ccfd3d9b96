"""Patch drafts (exact search-and-replace bound to one finding), their atomic application, the
repair agent's recording tools, and the in-memory audit workspace and review state."""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path

import pytest

from autopatch_tui.core.agent.source_tools import SourceTools
from autopatch_tui.core.repair import patch_files
from autopatch_tui.core.repair.findings import Finding, PatchDraft
from autopatch_tui.core.repair.patching import (
    MAX_EDIT_CHARS,
    BindingError,
    DraftError,
    PatchApplyError,
    apply_draft,
    make_draft,
)
from autopatch_tui.core.repair.scanner import Scanner
from autopatch_tui.core.repair.tools import MAX_REPORTED, RepairToolBox
from autopatch_tui.core.repair.workspace import (
    APPLIED,
    DISCARDED,
    FAILED,
    OPEN,
    PATCHED,
    AuditWorkspace,
    ReviewState,
    WorkspaceError,
)
from tests.repair.conftest import CLEAN, MUTABLE, SWALLOW, write

F1 = Finding("F1", "pkg/load.py", 4, "S110", "swallows", tool="ruff")


@pytest.fixture
def src(repo: Path) -> Path:
    return write(repo, "pkg/load.py", SWALLOW)


def listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


# --- make_draft -------------------------------------------------------------------------------

def test_a_valid_draft_carries_the_edit_and_its_unified_diff_and_writes_nothing(repo: Path, src: Path) -> None:
    draft = make_draft(repo, F1, finding_id="F1", old_text="    except:\n        pass\n",
                       new_text="    except OSError:\n        return None\n")
    assert (draft.finding_id, draft.path, draft.revision) == ("F1", "pkg/load.py", 1)
    assert draft.diff.startswith("--- a/pkg/load.py\n+++ b/pkg/load.py\n@@ ")
    body = draft.diff.splitlines()
    assert "-    except:" in body and "-        pass" in body
    assert "+    except OSError:" in body and "+        return None" in body
    assert "     try:" in body  # context line
    assert src.read_text(encoding="utf-8") == SWALLOW
    assert make_draft(repo, F1, finding_id="F1", old_text="pass", new_text="raise", revision=3).revision == 3


def test_a_draft_for_another_finding_is_a_binding_error(repo: Path, src: Path) -> None:
    with pytest.raises(BindingError, match="bound to F1, not F2"):
        make_draft(repo, F1, finding_id="F2", old_text="pass", new_text="raise")
    with pytest.raises(BindingError, match="not no finding"):
        make_draft(repo, F1, finding_id="", old_text="pass", new_text="raise")
    with pytest.raises(BindingError):  # the comparison is exact: the workflow normalises model IDs first
        make_draft(repo, F1, finding_id="f1", old_text="pass", new_text="raise")
    assert issubclass(BindingError, DraftError)


@pytest.mark.parametrize(("old", "new", "message"), [
    ("", "x", "non-empty"),
    ("  \n ", "x", "non-empty"),
    (None, "x", "non-empty"),
    ("pass", None, "new_text must be a string"),
    ("pass", "pass", "nothing would change"),
    ("pass" * (MAX_EDIT_CHARS // 4 + 1), "x", f"limited to {MAX_EDIT_CHARS}"),
    ("pass", "x" * (MAX_EDIT_CHARS + 1), f"limited to {MAX_EDIT_CHARS}"),
    ("except ValueError:", "except:", "occurs 0 times"),
    ("    ", "\t", "non-empty"),
    ("re", "RE", "occurs 2 times"),  # "return", "read"
], ids=["empty", "blank", "none", "new-none", "equal", "old-too-long", "new-too-long", "absent", "spaces",
        "ambiguous"])
def test_invalid_drafts_are_refused(repo: Path, src: Path, old: object, new: object, message: str) -> None:
    with pytest.raises(DraftError, match=message):
        make_draft(repo, F1, finding_id="F1", old_text=old, new_text=new)  # type: ignore[arg-type]


def test_a_draft_needs_a_readable_file_inside_the_repository(repo: Path, tmp_path: Path) -> None:
    write(tmp_path, "outside.py", SWALLOW)
    (repo / "bin.py").write_bytes(b"x = '\xff'\n")
    (repo / "folder.py").mkdir()
    cases = {"../outside.py": "leaves the repository", "gone.py": "not a file", "folder.py": "not a file",
             "bin.py": "cannot be read as UTF-8", ".git/config": ".git/ is not readable"}
    for path, message in cases.items():
        f = Finding("F1", path, 1, "S307", "m")
        with pytest.raises(DraftError, match=message):
            make_draft(repo, f, finding_id="F1", old_text="x", new_text="y")


def test_the_diff_marks_a_last_line_without_line_end(repo: Path) -> None:
    write(repo, "pkg/load.py", "a = 1\nb = eval(x)")
    draft = make_draft(repo, F1, finding_id="F1", old_text="eval(x)", new_text="int(x)")
    assert draft.diff.endswith("-b = eval(x)\n\\ No newline at end of file\n"
                               "+b = int(x)\n\\ No newline at end of file\n")


# --- apply_draft ------------------------------------------------------------------------------

def test_apply_replaces_the_file_atomically_and_keeps_its_mode(repo: Path, src: Path) -> None:
    os.chmod(src, 0o751)
    before = src.stat()
    draft = make_draft(repo, F1, finding_id="F1", old_text="        pass\n", new_text="        return None\n")
    apply_draft(repo, draft)
    after = src.stat()
    assert src.read_text(encoding="utf-8") == SWALLOW.replace("        pass\n", "        return None\n")
    assert stat.S_IMODE(after.st_mode) == 0o751
    assert after.st_ino != before.st_ino  # a new file replaced the old one (os.replace), not an in-place write
    assert listing(src.parent) == ["load.py"]  # no temporary file left behind


def test_apply_refuses_a_changed_file_and_leaves_it_untouched(repo: Path, src: Path) -> None:
    draft = make_draft(repo, F1, finding_id="F1", old_text="        pass\n", new_text="        raise\n")
    for changed in (SWALLOW.replace("pass", "log()"),  # the old text is gone
                    SWALLOW + "\n# later:\n        pass\n"):  # the old text now occurs twice
        src.write_text(changed, encoding="utf-8")
        os.utime(src, ns=(1_000_000_000, 1_000_000_000))
        with pytest.raises(PatchApplyError, match="changed since the patch was drafted"):
            apply_draft(repo, draft)
        assert src.read_text(encoding="utf-8") == changed
        assert src.stat().st_mtime_ns == 1_000_000_000
        assert listing(src.parent) == ["load.py"]
    src.unlink()
    with pytest.raises(PatchApplyError, match="not a file"):
        apply_draft(repo, draft)
    assert listing(src.parent) == []


def test_a_failed_write_leaves_the_file_untouched_and_no_temporary(repo: Path, src: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    draft = make_draft(repo, F1, finding_id="F1", old_text="        pass\n", new_text="        raise\n")

    def broken_replace(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(patch_files.os, "replace", broken_replace)
    with pytest.raises(PatchApplyError, match=r"^cannot write pkg/load.py \(no space left on the device\); the file "
                                              r"is unchanged$"):
        apply_draft(repo, draft)
    assert src.read_text(encoding="utf-8") == SWALLOW
    assert listing(src.parent) == ["load.py"]
    assert listing(repo / ".autopatch-j" / "tmp") == []


def test_crlf_files_keep_their_line_ends(repo: Path) -> None:
    path = repo / "pkg" / "load.py"
    path.parent.mkdir(parents=True)
    path.write_bytes(SWALLOW.replace("\n", "\r\n").encode())
    # the model reads files with "\n" line ends; a multi-line edit is matched in its CRLF form
    draft = make_draft(repo, F1, finding_id="F1", old_text="    except:\n        pass\n",
                       new_text="    except OSError:\n        return None\n")
    assert "\r" not in draft.diff and "+    except OSError:\n" in draft.diff
    apply_draft(repo, draft)
    assert path.read_bytes() == (b"def load(path):\r\n    try:\r\n        return open(path).read()\r\n"
                                 b"    except OSError:\r\n        return None\r\n")
    # a single-line edit leaves every line end as it was
    apply_draft(repo, make_draft(repo, F1, finding_id="F1", old_text="OSError", new_text="(OSError, ValueError)"))
    assert path.read_bytes().count(b"\r\n") == 5 and b"(OSError, ValueError):\r\n" in path.read_bytes()


# --- the repair agent's recording tools -------------------------------------------------------

def workspace(repo: Path, scope: tuple[str, ...] = ()) -> AuditWorkspace:
    return AuditWorkspace.from_report("scan_t", scope, Scanner(repo).scan(scope))


def test_propose_patch_records_a_checked_proposal(repo: Path) -> None:
    write(repo, "a.py", SWALLOW)
    write(repo, "b.py", MUTABLE)
    ws = workspace(repo)
    box = RepairToolBox(None, SourceTools(repo), workspace=ws, mode="patch")  # type: ignore[arg-type]
    assert {s["function"]["name"] for s in box.schemas} >= {"propose_patch", "read_file", "memory_search"}
    assert "report_finding" not in {s["function"]["name"] for s in box.schemas}

    def call(**args: object) -> str:
        return box.call("propose_patch", json.dumps(args))

    assert call(finding_id="F9", old_text="pass", new_text="raise") == "error: no finding F9 in this audit"
    assert call(finding_id="F1", old_text="absent", new_text="x").startswith("error: old_text occurs 0 times")
    assert call(finding_id="F1", old_text=1, new_text="x").startswith("error: old_text and new_text must be")
    assert call(finding_id="F1").startswith("error: invalid arguments")
    assert box.proposal is None
    assert call(finding_id=" f1 ", old_text="pass", new_text="raise").startswith("draft recorded for F1")
    assert (box.proposal.finding_id, box.proposal.old_text, box.proposal.new_text) == ("F1", "pass", "raise")
    # the tool only records: the workspace and the file are unchanged
    assert ws.get("F1").status == OPEN and (repo / "a.py").read_text() == SWALLOW
    # report_finding is not a tool of patch mode
    assert box.call("report_finding", json.dumps({"path": "a.py", "line": 1, "message": "m"})).startswith(
        "error: unknown tool")


def test_report_finding_accepts_only_reviewed_files_and_real_lines(repo: Path, tmp_path: Path) -> None:
    write(repo, "pkg/clean.py", CLEAN)
    write(repo, "other.py", CLEAN)
    write(tmp_path, "outside.py", CLEAN)
    ws = AuditWorkspace.from_report("scan_t", ("pkg",), Scanner(repo).scan(["pkg"]))
    box = RepairToolBox(None, SourceTools(repo), workspace=ws, mode="review",  # type: ignore[arg-type]
                        review_paths=("pkg/clean.py",))

    def report(path: str, line: object, message: str = "returns the wrong value") -> str:
        return box.call("report_finding", json.dumps({"path": path, "line": line, "message": message}))

    assert report("other.py", 1) == "error: other.py is not one of the reviewed files"
    assert report("../outside.py", 1) == "error: that path leaves the repository"
    assert report("pkg/clean.py", 0) == "error: line 0 is outside 1..3"
    assert report("pkg/clean.py", 4) == "error: line 4 is outside 1..3"
    assert report("pkg/clean.py", 2, " \n ") == "error: a message is required"
    assert box.reported == []
    assert report("./pkg/../pkg/clean.py", 2, "  wrong\n   factor  ") == "reported pkg/clean.py:2"
    assert report("pkg/clean.py", 2, "again") == "already reported pkg/clean.py:2"
    assert [(r.path, r.line, r.message) for r in box.reported] == [("pkg/clean.py", 2, "wrong factor")]
    assert len(report("pkg/clean.py", 1, "x" * 1000)) and len(box.reported[-1].message) == 300
    assert "propose_patch" not in {s["function"]["name"] for s in box.schemas}


def test_report_finding_is_bounded(repo: Path) -> None:
    write(repo, "pkg/long.py", "x = 1\n" * (MAX_REPORTED + 2))
    ws = AuditWorkspace.from_report("scan_t", ("pkg",), Scanner(repo).scan(["pkg"]))
    box = RepairToolBox(None, SourceTools(repo), workspace=ws, mode="review",  # type: ignore[arg-type]
                        review_paths=("pkg/long.py",))
    results = [box.call("report_finding", json.dumps({"path": "pkg/long.py", "line": n, "message": "m"}))
               for n in range(1, MAX_REPORTED + 2)]
    assert results[:MAX_REPORTED] == [f"reported pkg/long.py:{n}" for n in range(1, MAX_REPORTED + 1)]
    assert results[-1] == f"error: at most {MAX_REPORTED} findings can be reported"
    assert len(box.reported) == MAX_REPORTED


# --- workspace and review state ---------------------------------------------------------------

def test_workspace_states_move_open_to_patched_or_failed_then_applied_or_discarded(repo: Path) -> None:
    write(repo, "a.py", SWALLOW + MUTABLE + "eval('1')\n")
    ws = workspace(repo)
    assert [s.finding.id for s in ws.findings()] == ["F1", "F2", "F3"]
    assert ws.evidence_key("F2") == "scan_t:F2"
    assert ws.get(" f2 ").finding.id == "F2"
    with pytest.raises(WorkspaceError, match="no finding F7"):
        ws.get("F7")
    d1 = PatchDraft("F1", "a.py", "pass", "raise", "diff")
    ws.set_draft(d1)
    ws.set_failed("F2", "no patch was proposed")
    assert [f.id for f in ws.open_findings()] == ["F3"]
    assert (ws.count(OPEN), ws.count(PATCHED), ws.count(FAILED)) == (1, 1, 1)
    assert ws.pending_patch("F1").draft is d1
    for fid, status in (("F2", "failed"), ("F3", "open")):
        with pytest.raises(WorkspaceError, match=f"{fid} has no pending patch \\(it is {status}\\)"):
            ws.pending_patch(fid)
    d2 = PatchDraft("F1", "a.py", "pass", "return", "diff2", revision=2)
    ws.replace_draft(d2)
    assert ws.get("F1").draft is d2 and ws.get("F1").status == PATCHED
    written: list[PatchDraft] = []
    with pytest.raises(RuntimeError):  # an action that fails keeps the patch pending
        ws.close_patch("F1", APPLIED, action=lambda d: (_ for _ in ()).throw(RuntimeError("io")))
    assert ws.get("F1").status == PATCHED
    ws.close_patch("F1", APPLIED, action=written.append)
    assert written == [d2] and ws.get("F1").status == APPLIED
    with pytest.raises(WorkspaceError, match="it is applied"):
        ws.close_patch("F1", DISCARDED)
    with pytest.raises(WorkspaceError, match="it is applied"):  # a revision never resurrects a closed patch
        ws.replace_draft(PatchDraft("F1", "a.py", "pass", "x", "d", revision=3))
    assert ws.get("F1").draft is d2


def test_review_state_holds_one_audit_and_end_closes_it(repo: Path) -> None:
    write(repo, "a.py", SWALLOW)
    review = ReviewState()
    with pytest.raises(WorkspaceError, match="no audit is open"):
        review.require()
    assert review.end() is False
    first, second = workspace(repo), workspace(repo)
    since = review.generation
    assert review.start(first, since=since) and review.require() is first
    assert review.start(second) and review.workspace is second  # a new audit replaces the old one
    assert review.end() is True and review.workspace is None
    # a request that began before the end (/new, /reset) cannot make its workspace current
    assert review.start(first, since=since) is False and review.workspace is None
    assert review.start(first, still_current=lambda: False) is False and review.workspace is None
    assert review.start(first, since=review.generation, still_current=lambda: True) is True
