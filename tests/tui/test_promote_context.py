"""Promote to AGENTS.md from the Memory browser (space marks, p shows the diff in a dialog, only Write
or ctrl+s writes; no letter writes), and what the model saw: the status bar's context use and
instruction files, `/context` by part — pilot tests over the stub, and snapshots of the promote
dialog and of `/context`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from autopatch_tui.core.agent.prompt_report import PromptPart, PromptReport
from autopatch_tui.core.instructions import files as inst
from autopatch_tui.core.instructions import section
from autopatch_tui.core.instructions.promote import PromotePlan
from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.settings import Settings
from autopatch_tui.tui.app import AutopatchApp
from autopatch_tui.tui.screens.confirm import ConfirmBase
from autopatch_tui.tui.screens.promote_dialog import PromoteDialog
from autopatch_tui.tui.services import Services
from autopatch_tui.tui.widgets.status_bar import StatusBar
from tests.support.fixtures import FakeClock
from tests.support.llm_stub import Reply
from tests.support.recall_seed import revise_item
from tests.tui.test_chat import make_app, model_settings, notes, type_and_send, wait_idle
from tests.tui.test_chat_snapshots import deterministic  # noqa: F401  (fixture: fixed IDs and time)
from tests.tui.test_memory_browser import (  # noqa: F401  (fixtures)
    SIZE,
    T0,
    choose,
    mb_app,
    mb_clock,
    mb_manager,
    mb_populate,
    open_browser,
    row_ids,
    settle,
)

pytestmark = pytest.mark.anyio


async def until(pilot: Pilot, check, timeout: float = 20.0) -> None:
    for _ in range(int(timeout / 0.05)):
        if check():
            return
        await pilot.pause(0.05)
    raise AssertionError("condition not reached")


async def test_mark_then_promote_shows_the_diff_and_writes_only_on_write(
        repo: Path, mb_manager: MemoryManager, mb_clock: FakeClock, settings: Settings) -> None:  # noqa: F811
    mb_populate(mb_manager, mb_clock)
    agents = repo / "AGENTS.md"
    agents.write_text("# Team\n\nHand-written rule.\n", "utf-8")
    app = mb_app(mb_manager, settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_browser(pilot)
        await choose(pilot, screen, "mem-02CACHE")
        await pilot.press("space")
        await choose(pilot, screen, "mem-01PREFTABS")
        await pilot.press("space")
        assert screen.promote.marked == ["mem-02CACHE", "mem-01PREFTABS"]
        assert "2 marked" in str(screen.query_one("#mb-summary").render())
        await pilot.press("p")
        await until(pilot, lambda: isinstance(app.screen, PromoteDialog))
        dialog = app.screen
        assert dialog.plan.promoted == ("mem-02CACHE", "mem-01PREFTABS")
        assert "+- The cache lives in Redis with a 5 minute TTL. <!-- memory:mem-02CACHE -->" in dialog.plan.diff
        # letters and Enter on the focused diff never write (nor answer); Enter on the focused Cancel closes
        assert app.focused is dialog.query_one("#promote-diff")
        await pilot.press(*"yes please", "enter")
        await settle(pilot)
        assert agents.read_text("utf-8") == "# Team\n\nHand-written rule.\n"
        assert app.screen is dialog
        dialog.query_one("#no").focus()
        await pilot.press("enter")
        await settle(pilot)
        assert not isinstance(app.screen, PromoteDialog)

        await pilot.press("p")
        await until(pilot, lambda: isinstance(app.screen, PromoteDialog))
        await pilot.press("escape")
        await settle(pilot)
        assert agents.read_text("utf-8") == "# Team\n\nHand-written rule.\n"

        await pilot.press("p")
        await until(pilot, lambda: isinstance(app.screen, PromoteDialog))
        await pilot.press("ctrl+s")
        await settle(pilot)
        text = agents.read_text("utf-8")
        assert text.startswith("# Team\n\nHand-written rule.\n\n" + section.BEGIN)
        assert [b.item_id for b in section.section_bullets(text)] == ["mem-02CACHE", "mem-01PREFTABS"]
        assert screen.promote.marked == []
        assert any("Promoted 2 items to AGENTS.md" in n for n in app.notified)
        # nothing new to write: a note, no dialog
        await choose(pilot, screen, "mem-02CACHE")
        await pilot.press("p")
        await settle(pilot)
        assert not isinstance(app.screen, PromoteDialog)
        assert any("already holds" in n for n in app.notified)
        # forgetting a promoted item says its bullet remains, and how to remove it (issue 28 item 6)
        await choose(pilot, screen, "mem-02CACHE")
        await pilot.press("f")
        await until(pilot, lambda: isinstance(app.screen, ConfirmBase))
        await pilot.press("y")
        await until(pilot, lambda: any(n.startswith("Forgot mem-02CACHE") for n in app.notified))
        said = next(n for n in app.notified if n.startswith("Forgot mem-02CACHE"))
        assert "bullet in AGENTS.md remains" in said and "--prune" in said
        assert "mem-02CACHE" in section.promoted_statements(agents.read_text("utf-8"))  # never edited unasked


async def test_write_makes_the_plan_again_and_never_writes_a_diff_that_is_no_longer_true(
        repo: Path, mb_manager: MemoryManager, mb_clock: FakeClock, settings: Settings) -> None:  # noqa: F811
    mb_populate(mb_manager, mb_clock)
    agents = repo / "AGENTS.md"
    app = mb_app(mb_manager, settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_browser(pilot)
        await choose(pilot, screen, "mem-02CACHE")
        await pilot.press("p")
        await until(pilot, lambda: isinstance(app.screen, PromoteDialog))
        assert isinstance(app.screen, ConfirmBase)  # the one confirmation dialog, with the diff as its body
        # revised while the dialog is open (a background consolidation, another window)
        revise_item(mb_manager.store.conn(), "mem-02CACHE", subject="cache backend",
                    statement="The cache lives in Memcached.")
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert not agents.exists()
        assert any("changed since the diff was shown" in n for n in app.notified)
        # the new diff, then forgotten before Write
        await pilot.press("p")
        await until(pilot, lambda: isinstance(app.screen, PromoteDialog))
        assert "Memcached" in app.screen.plan.diff
        mb_manager.forget("mem-02CACHE")
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert not agents.exists() and any("only active items" in n for n in app.notified)


async def test_p_typed_in_the_search_field_is_text_not_a_promotion(
        repo: Path, mb_manager: MemoryManager, mb_clock: FakeClock, settings: Settings) -> None:  # noqa: F811
    mb_populate(mb_manager, mb_clock)
    app = mb_app(mb_manager, settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_browser(pilot)
        if app.focused is not screen.query_one("#mb-search", Input):  # the Items view opens in it (issue 20)
            await pilot.press("slash")
        await pilot.press(*"pep space", "space")
        await settle(pilot)
        assert screen.query_one("#mb-search", Input).value == "pep space "
        assert not isinstance(app.screen, PromoteDialog) and screen.promote.marked == []
        assert not (repo / "AGENTS.md").exists()


def test_the_status_bar_and_context_follow_a_real_request(repo: Path, llm_stub) -> None:
    inst.clear_cache()
    (repo / "AGENTS.md").write_text("ROOT rules for the model\n", "utf-8")
    (repo / "src").mkdir()
    (repo / "src" / "AGENTS.md").write_text("SRC rules\n", "utf-8")
    (repo / "src" / "a.py").write_text("x = 1\n", "utf-8")
    llm_stub.default("classify", "general_chat")
    llm_stub.default("chat", Reply(content="An answer.", usage=(40_960, 100)))
    app = make_app(repo, model_settings(llm_stub))

    async def run() -> None:
        async with app.run_test(size=(120, 36)) as pilot:
            await wait_idle(pilot, app)
            await type_and_send(pilot, "what does @src/a.py do?")
            await wait_idle(pilot, app)
            await until(pilot, lambda: app.last_prompt is not None and app.last_prompt.ended)
            await pilot.pause()
            status = app.screen.query_one(StatusBar)
            assert (status.context, status.instructions) == ("ctx 32% of 128k", "AGENTS.md ×2")
            assert "ctx 32% of 128k · AGENTS.md ×2" in str(status.render())
            await type_and_send(pilot, "/context")
            await wait_idle(pilot, app)
            shown = notes(app)[-1]
            assert "AGENTS.md" in shown and "src/AGENTS.md" in shown and "40,960 prompt + 100 reply" in shown
            assert "ROOT rules" not in shown  # paths and figures, never a part's text
            await type_and_send(pilot, "/context please")
            await wait_idle(pilot, app)
            assert "/context takes no arguments" in notes(app)[-1]

    import asyncio

    asyncio.run(run())


# --------------------------------------------------------------------------- snapshots

PLAN = PromotePlan(
    path=Path("/repo/AGENTS.md"), shown="AGENTS.md", old_text="# Team\n\nRun the linters.\n",
    new_text="".join(line + "\n" for line in (
        "# Team", "", "Run the linters.", "", section.BEGIN, section.HEADING, "",
        "- Run `make check` before proposing a patch. <!-- memory:mem-01CHECK -->",
        "  > “please always run make check before a patch” — 2026-11-03",
        "- Keep \x1b[31mescapes\x1b[0m visible. <!-- memory:mem-02ESC -->",
        "  > “[bold]not markup[/bold]” — 2026-11-04", section.END)),
    promoted=("mem-01CHECK", "mem-02ESC"), removed=(), stamp=(1, 2, 3, 4), mode=0o644)


def _plain_app(repo: Path, settings: Settings) -> AutopatchApp:
    clock = FakeClock(T0)
    return AutopatchApp(Services(MemoryManager.open(repo, settings, clock=clock), settings, clock=clock))


def test_promote_dialog_snapshot(repo: Path, settings: Settings, snap_compare: Any, deterministic) -> None:  # noqa: F811
    async def run_before(pilot: Pilot) -> None:
        pilot.app.theme = "textual-dark"
        await settle(pilot)
        await pilot.app.push_screen(PromoteDialog(PLAN))
        await settle(pilot)

    assert snap_compare(_plain_app(repo, settings), terminal_size=(100, 40), run_before=run_before)


REPORT = PromptReport(
    intent="code_explain", window=32_768, max_output=8_192, steps=3, ended=True,
    parts=(PromptPart("system", "system prompt", 312), PromptPart("instructions", "AGENTS.md", 1_204),
           PromptPart("instructions", "src/net/AGENTS.md", 88), PromptPart("memory_map", "Memory Map (7 items)", 402),
           PromptPart("history", "history (4 turns)", 3_100), PromptPart("message", "current message", 42),
           PromptPart("tool_schemas", "tool schemas", 610), PromptPart("tool_results", "tool calls and results (5)",
                                                                        6_400),
           PromptPart("framing", "message framing", 61)),
    estimated_tokens=12_219, instruction_files=("AGENTS.md", "src/net/AGENTS.md"), map_items=7,
    server_prompt_tokens=12_345, server_completion_tokens=210)


def test_context_snapshot(repo: Path, settings: Settings, snap_compare: Any, deterministic) -> None:  # noqa: F811
    async def run_before(pilot: Pilot) -> None:
        pilot.app.theme = "textual-dark"
        await settle(pilot)
        pilot.app.last_prompt = REPORT
        prompt = pilot.app.screen.query_one("#prompt")
        prompt.cursor_blink = False
        prompt.insert("/context")
        await pilot.press("enter")
        await settle(pilot)

    assert snap_compare(_plain_app(repo, settings), terminal_size=(110, 34), run_before=run_before)


# --------------------------------------------------------------------------- 80×24 (issue 30 item 7)

LONG_PLAN = PromotePlan(
    path=Path("/repo/AGENTS.md"), shown="AGENTS.md", old_text=None,
    new_text="".join(line + "\n" for line in (
        section.BEGIN, section.HEADING, "",
        *(x for n in range(12) for x in (
            f"- Rule {n:02d}: keep this in mind whenever a patch touches the module. <!-- memory:mem-{n:02d}RULE -->",
            f"  > “a long quote of the user that runs past the edge of an eighty column terminal, number {n:02d}”"
            " — 2026-11-03")),
        section.END)),
    promoted=tuple(f"mem-{n:02d}RULE" for n in range(12)), removed=(), stamp=None, mode=None)


def test_promote_dialog_80x24_snapshot(repo: Path, settings: Settings, snap_compare: Any,
                                       deterministic) -> None:  # noqa: F811
    async def run_before(pilot: Pilot) -> None:
        pilot.app.theme = "textual-dark"
        await settle(pilot)
        await pilot.app.push_screen(PromoteDialog(LONG_PLAN))
        await settle(pilot)

    assert snap_compare(_plain_app(repo, settings), terminal_size=(80, 24), run_before=run_before)


def test_at_80x24_the_diff_has_the_room_and_write_waits_for_its_end(repo: Path, settings: Settings) -> None:
    from textual.widgets import Button

    from autopatch_tui.tui.screens.promote_dialog import PromoteDiff

    app = _plain_app(repo, settings)
    answers: list[bool | None] = []

    async def run() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            await app.push_screen(PromoteDialog(LONG_PLAN), callback=answers.append)
            await settle(pilot)
            dialog = app.screen
            diff = dialog.query_one(PromoteDiff)
            assert app.focused is diff  # the diff has the focus: the keys scroll it
            assert diff.content_region.height >= 12  # most of the screen, not one row
            write = dialog.query_one("#yes", Button)
            assert write.disabled and not dialog.seen
            await pilot.press("ctrl+s", "enter")  # not yet: nothing answered
            await settle(pilot)
            assert answers == [] and app.screen is dialog
            await pilot.press("pagedown")
            await settle(pilot)
            assert write.disabled  # part way is not the whole diff
            await pilot.press("end")
            await settle(pilot)
            assert diff.scroll_y == diff.max_scroll_y > 0
            assert not write.disabled and dialog.seen
            await pilot.press("ctrl+s")
            await settle(pilot)
            assert answers == [True]

    import asyncio

    asyncio.run(run())


def test_the_status_bar_and_context_name_a_file_that_is_there_but_not_read(repo: Path, llm_stub) -> None:
    """Issue 30 item 6: a root CLAUDE.md beside an AGENTS.md is not read; a file left out for the
    bound is not read either. Both are named, and /context says why."""
    inst.clear_cache()
    (repo / "AGENTS.md").write_text("ROOT rules for the model\n", "utf-8")
    (repo / "CLAUDE.md").write_text("The team's Claude rules\n", "utf-8")
    llm_stub.default("classify", "general_chat")
    llm_stub.default("chat", Reply(content="An answer.", usage=(4_096, 10)))
    app = make_app(repo, model_settings(llm_stub))

    async def run() -> None:
        async with app.run_test(size=(120, 36)) as pilot:
            await wait_idle(pilot, app)
            await type_and_send(pilot, "hello")
            await wait_idle(pilot, app)
            await until(pilot, lambda: app.last_prompt is not None and app.last_prompt.ended)
            await pilot.pause()
            status = app.screen.query_one(StatusBar)
            assert status.instructions == "AGENTS.md · CLAUDE.md not read"
            await type_and_send(pilot, "/context")
            await wait_idle(pilot, app)
            shown = notes(app)[-1]
            assert "Not read: CLAUDE.md (the root's AGENTS.md is read instead" in shown

    import asyncio

    asyncio.run(run())


def test_context_names_the_files_left_out_for_the_bound() -> None:
    from autopatch_tui.core.agent.prompt_report import (
        context_lines,
        instructions_label,
        not_read,
    )

    report = PromptReport(intent="general_chat", window=32_768, max_output=8_192, parts=(), estimated_tokens=10,
                          instruction_files=("AGENTS.md",), instructions_cut=True,
                          instructions_left_out=("pkg/AGENTS.md", "pkg/sub/AGENTS.md"), ended=True)
    lines = context_lines(report)
    assert "Not read: pkg/AGENTS.md (left out for the bound on instruction files)." in lines
    assert instructions_label(report.instruction_files, not_read(report)) == "AGENTS.md · 2 not read (/context)"


def test_the_dialog_title_says_write_also_keeps_items_awaiting_review() -> None:
    from dataclasses import replace

    from autopatch_tui.tui.screens.promote_dialog import title_text

    assert "keeps" not in title_text(PLAN)
    waiting = replace(PLAN, new_items=(("mem-02ESC", 1),))
    assert title_text(waiting) == "Promote 2 Memory items to AGENTS.md; Write also keeps 1 awaiting review"


async def test_promote_from_the_browser_in_review_mode_keeps_the_item(
        repo: Path, mb_manager: MemoryManager, mb_clock: FakeClock, settings: Settings) -> None:  # noqa: F811
    """Issue 28 item 6: promoting an item nobody kept keeps it — the diff is the review — so it is
    never in every request through AGENTS.md while the inbox still calls it new."""
    mb_populate(mb_manager, mb_clock)
    mb_manager.review.set_approval("review", persist=False)
    assert mb_manager.review.review_state(["mem-02CACHE"]) == {"mem-02CACHE": "new"}
    app = mb_app(mb_manager, settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_browser(pilot)
        await choose(pilot, screen, "mem-02CACHE")
        await pilot.press("p")
        await until(pilot, lambda: isinstance(app.screen, PromoteDialog))
        assert "Write also keeps 1 awaiting review" in app.screen.title_text
        await pilot.press("ctrl+s")
        await until(pilot, lambda: any("Promoted 1 item" in n for n in app.notified))
        said = next(n for n in app.notified if "Promoted 1 item" in n)
        assert "Kept 1 that awaited review" in said
        assert mb_manager.review.review_state(["mem-02CACHE"]) == {"mem-02CACHE": "kept"}
        assert "mem-02CACHE" in section.promoted_statements((repo / "AGENTS.md").read_text("utf-8"))


def test_the_diff_has_no_empty_last_row_to_scroll_to() -> None:
    """A diff that exactly fits its box offers Write at once (tried in tmux at 80×24: a trailing
    empty row made the box scroll by one and kept Write disabled over a diff shown whole)."""
    from autopatch_tui.tui.screens.promote_dialog import diff_text

    assert diff_text("--- a\n+++ b\n+x\n").plain == "--- a\n+++ b\n+x"
