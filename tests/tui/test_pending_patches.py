"""Issue #20 item 4: drafted patches survive. The open audit's drafts are kept in
`.autopatch-j/audit.json` (private, atomic, never through a link, bounded) and come back after a
restart — `/patch apply F1` works in the next session; a draft whose file changed meanwhile is
re-based (a fresh diff) or stale, never applied blindly. `/new`, `/reset` and a new `/audit` with
pending patches ask first (one key, `y`; `n` keeps them and the typed line); ctrl+q asks only when
the patches could not be saved (otherwise they are kept for the next start)."""

from __future__ import annotations

import asyncio
import json
import os
import stat

import pytest

from autopatch_tui.core.repair import drafts_file
from autopatch_tui.tui.screens.confirm import ConfirmScreen
from autopatch_tui.tui.screens.exit_flush import ExitFlushScreen
from tests.support.llm_stub import CapturedRequest, Reply
from tests.tui.test_chat import SIZE, make_app, model_settings, notes, type_and_send, wait_idle
from tests.tui.test_repair_chat import FIXED, OLD, SWALLOW, answers, run_command

SECOND = "def keep(path):\n    try:\n        return open(path).read()\n    except:\n        pass\n"


def proposer(req: CapturedRequest):
    """The model drafts FIXED for whichever finding the request is about."""
    if any(m["role"] == "tool" for m in req.messages):
        return "done"
    finding = "F2" if "F2" in req.messages[-1]["content"] else "F1"
    return Reply(tool_calls=[("propose_patch", json.dumps({"finding_id": finding, "old_text": OLD,
                                                           "new_text": FIXED}))])


@pytest.fixture
def audited(repo, llm_stub):
    """A repository with two findings (a.py F1, b.py F2) and the settings of a model that drafts both."""
    (repo / "a.py").write_text(SWALLOW, encoding="utf-8")
    (repo / "b.py").write_text(SECOND, encoding="utf-8")
    llm_stub.default("chat", proposer)
    llm_stub.default("extraction", {"thread_checkpoint": "audit", "candidates": []})
    return repo, model_settings(llm_stub)


async def start_audit(pilot, app) -> None:
    await type_and_send(pilot, "/audit")
    await wait_idle(pilot, app)
    assert "Pending patches: 2" in answers(app)[-1]


def test_pending_patches_come_back_after_a_restart_and_apply(audited):
    repo, settings = audited

    async def first():
        app = make_app(repo, settings)
        async with app.run_test(size=SIZE) as pilot:
            await start_audit(pilot, app)

    async def second():
        app = make_app(repo, settings)
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            assert any("The open audit of the repository was restored: 2 pending patch(es) (/patch list)." in n
                       for n in notes(app)), notes(app)
            applied = await run_command(pilot, app, "/patch apply F1")
            assert "Applied the patch for F1 to a.py." in applied
            assert (repo / "a.py").read_text(encoding="utf-8").endswith(FIXED)
            assert "F2 b.py:4 S110" in (await run_list(pilot, app))

    asyncio.run(first())
    path = repo / ".autopatch-j" / "audit.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    saved = json.loads(path.read_text(encoding="utf-8"))
    assert [s["status"] for s in saved["states"]] == ["patched", "patched"]
    asyncio.run(second())


async def run_list(pilot, app) -> str:
    await type_and_send(pilot, "/patch list")
    await wait_idle(pilot, app)
    return answers(app)[-1]


def test_a_draft_whose_file_changed_is_rebased_or_stale_never_applied_blindly(audited):
    repo, settings = audited

    async def first():
        app = make_app(repo, settings)
        async with app.run_test(size=SIZE) as pilot:
            await start_audit(pilot, app)

    asyncio.run(first())
    (repo / "a.py").write_text("import os\n" + SWALLOW, encoding="utf-8")  # moved: F1's text is still there once
    (repo / "b.py").write_text(SECOND.replace("        pass\n", "        return None\n"), encoding="utf-8")  # gone

    async def second():
        app = make_app(repo, settings)
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            restored = next(n for n in notes(app) if "was restored" in n)
            assert "1 pending patch(es), 1 stale" in restored
            assert "Re-based on files that changed since the drafts: F1" in restored
            assert "Stale (their text changed): F2" in restored
            await type_and_send(pilot, "/patch show F1")
            await wait_idle(pilot, app)
            assert "@@ -2,5 +2,5 @@" in answers(app)[-1]  # the fresh diff, one line further down
            assert "F2 has no pending patch (it is stale)" in await run_command(pilot, app, "/patch apply F2")
            assert (repo / "b.py").read_text(encoding="utf-8").endswith("        return None\n")
            assert "Applied the patch for F1 to a.py." in await run_command(pilot, app, "/patch apply F1")

    asyncio.run(second())


@pytest.mark.parametrize("command", ["/new", "/reset", "/audit"])
def test_commands_that_drop_pending_patches_ask_first(audited, command):
    repo, settings = audited
    app = make_app(repo, settings)

    async def run():
        async with app.run_test(size=SIZE) as pilot:
            await start_audit(pilot, app)
            await type_and_send(pilot, command)
            await pilot.pause(0.2)
            assert isinstance(app.screen, ConfirmScreen)
            assert "The open audit has 2 pending patch(es)" in app.screen.body_text
            await pilot.press("n")
            await wait_idle(pilot, app)
            assert not isinstance(app.screen, ConfirmScreen)
            assert app.screen.query_one("#prompt").text == command  # the typed line is not lost
            assert app.services.review.pending_patches() == 2
            assert f"Kept the 2 pending patch(es); {command} did not run." in notes(app)[-1]
            app.screen.query_one("#prompt").clear()
            await type_and_send(pilot, command)
            await pilot.pause(0.2)
            await pilot.press("y")
            await wait_idle(pilot, app)
            if command == "/audit":  # a fresh audit of the same files: new drafts, the old ones went
                assert app.services.review.pending_patches() == 2
                assert "its 2 pending patch(es) were not applied" in answers(app)[-1]
            else:
                assert app.services.review.workspace is None
                assert not (repo / ".autopatch-j" / "audit.json").exists()

    asyncio.run(run())


def test_a_plain_message_routed_to_an_audit_keeps_the_pending_patches(audited, llm_stub):
    repo, settings = audited
    llm_stub.default("classify", "code_audit")
    app = make_app(repo, settings)

    async def run():
        async with app.run_test(size=SIZE) as pilot:
            await start_audit(pilot, app)
            ws = app.services.review.workspace
            await type_and_send(pilot, "audit the repository again please")
            await wait_idle(pilot, app)
            assert not isinstance(app.screen, ConfirmScreen)
            assert app.services.review.workspace is ws and app.services.review.pending_patches() == 2
            assert answers(app)[-1].startswith("No new audit was started: it would drop the open audit's 2 pending")

    asyncio.run(run())


def test_quit_keeps_saved_patches_without_asking_and_asks_when_they_could_not_be_saved(audited, monkeypatch):
    repo, settings = audited
    app = make_app(repo, settings)

    async def run():
        async with app.run_test(size=SIZE) as pilot:
            await start_audit(pilot, app)

            def refused(repo_path, doc):
                raise drafts_file.DraftsFileError("the open audit's drafts could not be saved (OSError); they are "
                                                  "not kept across a restart")

            monkeypatch.setattr(drafts_file, "save", refused)
            await run_command(pilot, app, "/patch discard F2")  # a change: the save fails now
            assert app.services.review.persist_error
            await pilot.press("ctrl+q")
            await pilot.pause(0.2)
            assert isinstance(app.screen, ConfirmScreen) and "1 pending patch(es) go" in app.screen.body_text
            await pilot.press("n")
            await pilot.pause(0.2)
            assert not isinstance(app.screen, (ConfirmScreen, ExitFlushScreen))
            monkeypatch.undo()
            await run_command(pilot, app, "/patch list")  # nothing changed: still unsaved
            app.services.review.persist_error = ""  # saved again (as after the next successful save)
            await pilot.press("ctrl+q")
            await pilot.pause(0.2)
            assert isinstance(app.screen, ExitFlushScreen)  # saved patches are kept: no question

    asyncio.run(run())


# --- the file itself ---------------------------------------------------------------------------------

def test_the_drafts_file_is_never_read_or_written_through_a_link(repo, tmp_path):
    from autopatch_tui.core.repair.scanner import ScanReport
    from autopatch_tui.core.repair.workspace import AuditWorkspace, ReviewState

    outside = tmp_path / "outside"
    outside.mkdir()
    (repo / ".autopatch-j").mkdir()
    os.symlink(outside / "audit.json", repo / ".autopatch-j" / "audit.json")
    review = ReviewState()
    review.persist_to(repo)
    ws = AuditWorkspace.from_report("scan-1", (), ScanReport(files=1), thread_id="thr-1")
    assert review.start(ws)
    assert not (outside / "audit.json").exists()  # replaced as a link, never written through
    assert not os.path.islink(repo / ".autopatch-j" / "audit.json")
    # a second hard link to the file: not trusted when read back
    os.link(repo / ".autopatch-j" / "audit.json", tmp_path / "second-name.json")
    with pytest.raises(drafts_file.DraftsFileError, match="more than one hard link"):
        drafts_file.load(repo)
    # a link in place of .autopatch-j itself: nothing is read through it
    os.unlink(tmp_path / "second-name.json")
    os.rename(repo / ".autopatch-j", tmp_path / "state")
    os.symlink(tmp_path / "state", repo / ".autopatch-j")
    with pytest.raises(drafts_file.DraftsFileError, match="is a link"):
        drafts_file.load(repo)


def test_a_saved_audit_of_another_thread_or_an_invalid_file_is_not_restored(repo):
    from autopatch_tui.core.repair.scanner import ScanReport
    from autopatch_tui.core.repair.workspace import AuditWorkspace, ReviewState

    review = ReviewState()
    review.persist_to(repo)
    review.start(AuditWorkspace.from_report("scan-1", (), ScanReport(files=1), thread_id="thr-old"))
    later = ReviewState()
    later.persist_to(repo)
    assert later.restore("thr-new") == "" and later.workspace is None
    assert not drafts_file.path_of(repo).exists()  # the audit ended with its thread (e.g. `autopatch-tui new`)
    drafts_file.path_of(repo).write_text('{"format": "autopatch-audit", "version": 1, "states": "x"}')
    assert later.restore("thr-new") == "The saved audit was not read: it is not a valid audit file."
    assert later.workspace is None


def test_an_audit_over_the_size_bound_is_not_kept_and_says_so(repo, monkeypatch):
    from autopatch_tui.core.repair.scanner import ScanReport
    from autopatch_tui.core.repair.workspace import AuditWorkspace, ReviewState

    monkeypatch.setattr(drafts_file, "MAX_BYTES", 200)
    review = ReviewState()
    review.persist_to(repo)
    review.start(AuditWorkspace.from_report("scan-1", ("x" * 300,), ScanReport(files=1), thread_id="t"))
    assert "over 0 MB and are not kept across a restart" in review.persist_error
    assert not drafts_file.path_of(repo).exists()
