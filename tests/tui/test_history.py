"""The thread history screen (issue 5 §3): active and archived threads with dates and turn counts,
a thread's turns with intent and state, lazy pages so 10k turns open fast, search across turns,
Markdown export, the jump to one turn, markup-looking text shown literally, live reload, the
degraded store, and snapshots (empty, populated, degraded) at 120×40 with fixed data and theme."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rich.text import Text
from textual.pilot import Pilot
from textual.widgets import DataTable, Input

from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.settings import Settings
from autopatch_tui.tui.app import AutopatchApp
from autopatch_tui.tui.messages import OpenTurnInHistory
from autopatch_tui.tui.screens.chat import ChatScreen
from autopatch_tui.tui.screens.history import PAGE_SIZE, HistoryScreen
from autopatch_tui.tui.services import Services
from tests.support.fixtures import bootstrap_healthy, raw_connect
from tests.support.tui_wait import poll as hs_poll, settle as hs_wait  # noqa: E402
from tests.support.tui_text import plain, screen_text
from tests.tui.layouts import with_sizes

pytestmark = pytest.mark.anyio

SIZE = (120, 40)
T0 = 1_800_000_000.0  # 2027-01-15T08:00:00Z
ACTIVE = "thr-01HISTACTIVE0000000000000"
ARCHIVED = "thr-01HISTARCHIVED00000000000"
MARKUP = "[bold red]x[/]"


# --------------------------------------------------------------------------- data


def hs_turn_id(thread: str, seq: int) -> str:
    return f"turn-{'act' if thread == ACTIVE else 'arc'}-{seq:06d}"


def hs_seed(repo: Path, settings: Settings, threads: dict[str, list[tuple[str, str, str, str | None]]]) -> Path:
    """A healthy store whose active thread is ACTIVE, plus the ARCHIVED thread when given, with
    turns `(intent, state, user_text, assistant_text)` inserted by direct SQL in one transaction."""
    db = bootstrap_healthy(repo, settings)
    conn = raw_connect(db)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("UPDATE threads SET id = ?, created_at = ? WHERE status = 'active'", (ACTIVE, T0 + 86_400))
        if ARCHIVED in threads:
            conn.execute("INSERT INTO threads (id, status, created_at, archived_at) VALUES (?, 'archived', ?, ?)",
                         (ARCHIVED, T0, T0 + 86_000))
        for thread, turns in threads.items():
            base = T0 if thread == ARCHIVED else T0 + 86_400
            conn.executemany(
                "INSERT INTO turns (id, thread_id, sequence, intent, state, user_text, assistant_text, created_at,"
                " ended_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(hs_turn_id(thread, n), thread, n, intent, state, user, answer, base + n, base + n + 0.5)
                 for n, (intent, state, user, answer) in enumerate(turns, start=1)],
            )
        conn.execute("COMMIT")
    finally:
        conn.close()
    return db


def many_turns(n: int, word: str = "turn") -> list[tuple[str, str, str, str | None]]:
    return [("general_chat", "completed", f"{word} number {i}", f"answer {i}") for i in range(1, n + 1)]


SMALL = {
    ACTIVE: [
        ("general_chat", "completed", "How do I run the tests?", "Run `make test` from the repository root."),
        ("code_explain", "failed", "Explain parser.py please", None),
        ("code_audit", "interrupted", f"Audit this {MARKUP} snippet", None),
    ],
    ARCHIVED: [
        ("general_chat", "completed", "We use tabs in the parser module.", "Noted: tabs in parser/."),
        ("patch_explain", "completed", "What does the needle patch change?", "It fixes the needle lookup."),
    ],
}


def hs_app(repo: Path, settings: Settings) -> AutopatchApp:
    return AutopatchApp(Services(MemoryManager.open(repo, settings), settings))


# --------------------------------------------------------------------------- pilot helpers




async def open_history(pilot: Pilot) -> HistoryScreen:
    await hs_wait(pilot)
    await pilot.press("f3")
    screen = pilot.app.screen
    assert isinstance(screen, HistoryScreen)
    await hs_wait(pilot, lambda: screen.thread_id is not None and not screen._loading
                  and screen.turns_table.row_count == len(screen.turns))
    return screen


def cells(table: DataTable, row: int) -> list[str]:
    return [c.plain if isinstance(c, Text) else str(c) for c in table.get_row_at(row)]


def answer_of(screen: HistoryScreen) -> str:
    """The assistant's answer as the detail pane's Markdown shows it (its source)."""
    from textual.widgets import Markdown

    return screen.query_one("#detail-answer", Markdown).source


def column(table: DataTable, key: str) -> list[str]:
    return [c.plain if isinstance(c, Text) else str(c) for c in table.get_column(key)]


def row_keys(table: DataTable) -> list[str]:
    return [str(k.value) for k in table.rows]


def cursor_key(table: DataTable) -> str:
    return str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)




# --------------------------------------------------------------------------- threads and turns


async def test_threads_list_shows_active_and_archived_with_dates_and_counts(repo: Path, settings: Settings) -> None:
    hs_seed(repo, settings, SMALL)
    app = hs_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_history(pilot)
        table = screen.threads_table
        assert row_keys(table) == [ACTIVE, ARCHIVED]
        active, archived = cells(table, 0), cells(table, 1)
        assert active[0] == ACTIVE and "active" in active[1] and active[-1] == "3"
        assert active[2] == "2027-01-16 08:00" and active[3] == ""
        assert archived[0] == ARCHIVED and "archived" in archived[1] and archived[-1] == "2"
        assert archived[2] == "2027-01-15 08:00" and archived[3] == "2027-01-16 07:53"
        assert plain(screen, "#threads-title") == "Threads (2)"


async def test_selecting_a_thread_shows_its_turns_with_intent_and_state(repo: Path, settings: Settings) -> None:
    hs_seed(repo, settings, SMALL)
    app = hs_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_history(pilot)
        turns = screen.turns_table
        assert screen.thread_id == ACTIVE  # the active thread opens first
        assert column(turns, "seq") == ["1", "2", "3"]
        assert column(turns, "intent") == ["general_chat", "code_explain", "code_audit"]
        assert column(turns, "state") == ["✓ completed", "✗ failed", "⊘ interrupted"]
        assert column(turns, "text")[0] == "How do I run the tests?"
        assert "Thread " + ACTIVE in plain(screen, "#turns-title")
        # the other thread: move the threads cursor (highlight selects)
        screen.threads_table.focus()
        await pilot.press("down")
        await hs_wait(pilot, lambda: screen.thread_id == ARCHIVED and row_keys(turns)[0] == hs_turn_id(ARCHIVED, 1))
        assert column(turns, "intent") == ["general_chat", "patch_explain"]
        assert column(turns, "state") == ["✓ completed", "✓ completed"]
        assert "archived" in plain(screen, "#turns-title")
        # the detail pane shows the highlighted turn in full
        await pilot.press("enter")  # focus moves to the turns
        await pilot.press("down")
        await hs_wait(pilot, lambda: "needle patch" in plain(screen, "#detail-text"))
        assert "It fixes the needle lookup." in answer_of(screen)


async def test_ten_thousand_turns_open_with_one_page_and_load_more_on_demand(repo: Path, settings: Settings) -> None:
    hs_seed(repo, settings, {ACTIVE: many_turns(10_000)})
    app = hs_app(repo, settings)
    fetched: list[int] = []
    original = app.manager.thread_turns

    def spy(thread_id: str, *, offset: int = 0, limit: int = 100) -> list[Any]:
        rows = original(thread_id, offset=offset, limit=limit)
        fetched.append(len(rows))
        return rows

    app.manager.thread_turns = spy  # type: ignore[method-assign]
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_history(pilot)
        turns = screen.turns_table
        assert turns.row_count == PAGE_SIZE == len(screen.turns)
        assert sum(fetched) == PAGE_SIZE  # one page read from the store, not 10k rows
        assert screen.has_more and "showing 1–100" in plain(screen, "#turns-title")
        # the "more" binding
        turns.focus()
        await pilot.press("m")
        await hs_wait(pilot, lambda: turns.row_count == 2 * PAGE_SIZE)
        assert column(turns, "seq")[-1] == "200"
        # moving the cursor to the end of the window loads the next page
        await pilot.press("ctrl+end")
        await hs_wait(pilot, lambda: turns.row_count == 3 * PAGE_SIZE)
        # scrolling to the bottom loads the next page too
        turns.scroll_end(animate=False)
        await hs_wait(pilot, lambda: turns.row_count == 4 * PAGE_SIZE)
        assert row_keys(turns)[-1] == hs_turn_id(ACTIVE, 400)
        assert len(set(row_keys(turns))) == 4 * PAGE_SIZE
        assert sum(fetched) == 4 * PAGE_SIZE


async def test_search_filters_across_turns_and_enter_jumps_to_the_thread(repo: Path, settings: Settings) -> None:
    hs_seed(repo, settings, {ACTIVE: many_turns(300), ARCHIVED: many_turns(50, word="needle") + SMALL[ARCHIVED]})
    app = hs_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_history(pilot)
        assert isinstance(app.focused, Input)  # the history opens in its search field: typing searches
        await pilot.press(*"needle")
        await hs_wait(pilot, lambda: screen.mode == "search" and screen.turns_table.row_count == 51)
        assert all("needle" in t.lower() for t in column(screen.turns_table, "text"))
        assert "51 matching turn(s)" in plain(screen, "#turns-title")
        # narrowing the filter as one types
        screen.query_one("#search", Input).insert_text_at_cursor(" number 4")
        await hs_wait(pilot, lambda: screen.turns_table.row_count == 11)  # 4, 40..49
        # Enter on a result opens it in its thread, highlighted
        table = screen.turns_table
        table.focus()
        target = row_keys(table)[0]
        await pilot.press("enter")
        await hs_wait(pilot, lambda: screen.mode == "thread" and screen.thread_id == ARCHIVED
                      and cursor_key(screen.turns_table) == target)
        assert screen.query_one("#search", Input).value == ""
        assert cursor_key(screen.threads_table) == ARCHIVED


async def test_escape_clears_the_search_then_goes_back_to_chat(repo: Path, settings: Settings) -> None:
    hs_seed(repo, settings, SMALL)
    app = hs_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_history(pilot)
        await pilot.press(*"needle")
        await hs_wait(pilot, lambda: screen.mode == "search" and screen.turns_table.row_count == 1)
        await pilot.press("escape")
        await hs_wait(pilot, lambda: screen.mode == "thread" and screen.turns_table.row_count == 3)
        assert screen.query_one("#search", Input).value == ""
        assert app.focused is screen.query_one("#search", Input)  # focus stays in the field
        await pilot.press("escape")
        await hs_wait(pilot, lambda: isinstance(app.screen, ChatScreen))


async def test_export_writes_the_thread_as_markdown(repo: Path, settings: Settings) -> None:
    hs_seed(repo, settings, SMALL)
    app = hs_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_history(pilot)
        exports = app.manager.paths.exports_dir
        await pilot.press("ctrl+s")  # a write needs a key that is not text
        await hs_wait(pilot, lambda: exports.is_dir() and list(exports.glob(f"thread-{ACTIVE}-*.md")))
        text = next(exports.glob(f"thread-{ACTIVE}-*.md")).read_text("utf-8")
        assert text.startswith(f"# Thread {ACTIVE}")
        assert "How do I run the tests?" in text and "Run `make test` from the repository root." in text
        assert f"Audit this {MARKUP} snippet" in text and "(interrupted" in text
        await hs_wait(pilot, lambda: any("exported as Markdown" in n.message for n in app._notifications))
        assert screen.thread_id == ACTIVE


async def test_show_turn_selects_the_thread_and_highlights_the_turn(repo: Path, settings: Settings) -> None:
    hs_seed(repo, settings, {ACTIVE: many_turns(5), ARCHIVED: many_turns(10_000)})
    app = hs_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_history(pilot)
        assert screen.thread_id == ACTIVE
        target = hs_turn_id(ARCHIVED, 7_345)
        screen.show_turn(target)
        await hs_wait(pilot, lambda: screen.thread_id == ARCHIVED and screen.turns_table.row_count > 0
                      and cursor_key(screen.turns_table) == target)
        table = screen.turns_table
        assert table.row_count <= 2 * PAGE_SIZE  # only the page around it, not 7k rows
        assert cursor_key(screen.threads_table) == ARCHIVED
        assert "turn number 7345" in plain(screen, "#detail-text")
        assert app.focused is table
        await hs_wait(pilot)
        row = table.cursor_row
        assert table.scroll_y <= row <= table.scroll_y + table.scrollable_content_region.height  # visible
        # earlier turns load on demand before the window
        assert screen.window_start > 0
        await pilot.press("b")
        await hs_wait(pilot, lambda: table.row_count == 2 * PAGE_SIZE)
        assert cursor_key(table) == target  # the highlight stays on the same turn
        # the message the memory browser can post
        other = hs_turn_id(ACTIVE, 4)
        screen.post_message(OpenTurnInHistory(other))
        await hs_wait(pilot, lambda: screen.thread_id == ACTIVE and cursor_key(screen.turns_table) == other)


async def test_show_turn_right_after_the_screen_opens(repo: Path, settings: Settings) -> None:
    """The memory browser pushes the screen and calls show_turn at once: the jump wins over the
    default selection of the first thread."""
    hs_seed(repo, settings, {ACTIVE: many_turns(5), ARCHIVED: many_turns(300)})
    app = hs_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await hs_wait(pilot)
        await app.run_action("show('history')")
        screen = app.screen
        assert isinstance(screen, HistoryScreen)
        target = hs_turn_id(ARCHIVED, 250)
        screen.show_turn(target)
        await hs_wait(pilot, lambda: screen.turns_table.row_count > 0 and cursor_key(screen.turns_table) == target)
        await hs_wait(pilot)
        assert screen.thread_id == ARCHIVED and cursor_key(screen.threads_table) == ARCHIVED


async def test_show_turn_of_a_missing_turn_reports_the_error_once(repo: Path, settings: Settings) -> None:
    hs_seed(repo, settings, SMALL)
    app = hs_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_history(pilot)
        screen.show_turn("turn-does-not-exist")
        await hs_poll(pilot, lambda: any(n.severity == "error" for n in app._notifications))
        await hs_poll(pilot, lambda: screen._jump_target is None)
        errors = [n for n in app._notifications if n.severity == "error"]
        assert len(errors) == 1 and "turn-does-not-exist" in errors[0].message
        assert screen._jump_target is None and screen.thread_id == ACTIVE
        assert screen.turns_table.row_count == 3  # the view is unchanged and still works
        screen.show_turn(hs_turn_id(ARCHIVED, 2))
        await hs_poll(pilot, lambda: screen.thread_id == ARCHIVED
                      and cursor_key(screen.turns_table) == hs_turn_id(ARCHIVED, 2))


async def test_markup_looking_text_is_shown_literally(repo: Path, settings: Settings) -> None:
    hs_seed(repo, settings, {ACTIVE: [("general_chat", "completed", MARKUP, f"answer with {MARKUP} too")]})
    app = hs_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_history(pilot)
        await hs_wait(pilot)
        assert column(screen.turns_table, "text") == [MARKUP]
        assert plain(screen, "#detail-text").count(MARKUP) == 1 and MARKUP in answer_of(screen)
        shown = screen_text(app)
        assert MARKUP in shown and f"answer with {MARKUP} too" in shown


async def test_new_turns_appear_live(repo: Path, settings: Settings) -> None:
    hs_seed(repo, settings, {ACTIVE: many_turns(2)})
    app = hs_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_history(pilot)
        assert screen.turns_table.row_count == 2
        mgr = app.manager
        handle = mgr.begin_turn("a brand new question")
        mgr.complete_turn(handle, "a brand new answer")  # MemoryChanged → App.memory_version
        await hs_wait(pilot, lambda: screen.turns_table.row_count == 3)
        assert column(screen.turns_table, "text")[-1] == "a brand new question"
        assert cells(screen.threads_table, 0)[-1] == "3"


async def test_degraded_store_shows_the_diagnostic(repo: Path, settings: Settings) -> None:
    db = bootstrap_healthy(repo, settings)
    conn = raw_connect(db)
    conn.execute("UPDATE threads SET status = 'archived', archived_at = 2.0")
    conn.close()
    app = hs_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await hs_wait(pilot)
        await pilot.press("f3")
        await hs_wait(pilot)
        screen = app.screen
        assert isinstance(screen, HistoryScreen)
        assert screen.degraded and "expected exactly one active thread" in plain(screen, "#notice")
        assert screen.threads_table.row_count == 0
        await pilot.press("ctrl+s")  # nothing to export; no worker error
        await hs_wait(pilot)
        assert not any(n.severity == "error" for n in app._notifications)


# --------------------------------------------------------------------------- snapshots


def _snapshot_app(repo: Path, settings: Settings, state: str) -> AutopatchApp:
    if state == "empty":
        hs_seed(repo, settings, {})
    elif state == "populated":
        hs_seed(repo, settings, {ACTIVE: SMALL[ACTIVE] + many_turns(30), ARCHIVED: SMALL[ARCHIVED]})
    else:
        db = bootstrap_healthy(repo, settings)
        conn = raw_connect(db)
        conn.execute("UPDATE threads SET status = 'archived', archived_at = 2.0")
        conn.close()
    return hs_app(repo, settings)


@with_sizes(["empty", "populated", "degraded"], "populated", SIZE)
def test_history_snapshot(state: str, size: tuple[int, int], repo: Path, settings: Settings,
                          snap_compare: Any) -> None:
    app = _snapshot_app(repo, settings, state)

    async def run_before(pilot: Pilot) -> None:
        pilot.app.theme = "textual-dark"
        await hs_wait(pilot)
        await pilot.press("f3")
        screen = pilot.app.screen
        assert isinstance(screen, HistoryScreen)
        await hs_wait(pilot, lambda: state == "degraded" or (not screen._loading and screen.thread_id is not None))
        for box in screen.query(Input):
            box.cursor_blink = False  # the search field has focus: a blinking cursor would depend on timing
        if state == "populated":
            screen.turns_table.focus()
            await pilot.press("down", "down")
        await hs_wait(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


def test_every_history_binding_has_an_id() -> None:
    ids = [b.id for b in HistoryScreen.BINDINGS]  # type: ignore[union-attr]
    assert ids == ["history.back", "history.search", "history.more", "history.earlier", "history.export"]


async def test_the_detail_renders_the_assistants_markdown(repo: Path, settings: Settings) -> None:
    """Issue 15: History showed assistant Markdown raw (`## Answer`)."""
    from textual.widgets._markdown import MarkdownH2

    hs_seed(repo, settings, {ACTIVE: [("general_chat", "completed", "how?", "## Answer\n\nRun **make test**.")]})
    app = hs_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_history(pilot)
        await hs_wait(pilot, lambda: answer_of(screen))
        await hs_wait(pilot)
        shown = screen_text(app)
        assert "Answer" in shown and "## Answer" not in shown and "**make test**" not in shown
        assert [str(h.content if hasattr(h, "content") else h) for h in screen.query(MarkdownH2)]


async def test_the_search_keeps_focus_after_enter_and_down_moves_to_the_results(repo: Path,
                                                                                settings: Settings) -> None:
    """Issue 15: Enter in a search box moved focus away, so typing on fired letter keys (`e` exported)."""
    hs_seed(repo, settings, SMALL)
    app = hs_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_history(pilot)
        box = screen.query_one("#search", Input)
        await pilot.press(*"needle", "enter")
        await hs_wait(pilot, lambda: screen.mode == "search")
        assert app.focused is box
        await pilot.press(*" e m b")
        await hs_wait(pilot)
        assert box.value == "needle e m b"
        exports = app.manager.paths.exports_dir
        assert not exports.exists() or not list(exports.iterdir()), "no export was written"
        await pilot.press("down")
        assert app.focused is screen.turns_table
