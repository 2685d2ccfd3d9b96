"""Thread history: active and archived threads with dates and turn counts, a thread's turns loaded
lazily a page at a time, a search across every turn, export of a thread as Markdown, and
`show_turn` to jump to one turn (the memory browser's provenance quotes use it).

Every manager call runs in a thread worker; results come back through `call_from_thread` and are
applied only when still current (a generation counter drops stale pages). Turn text is user and
model content: it is always a plain `Text`, never markup."""

from __future__ import annotations

from functools import partial
from typing import Literal

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.timer import Timer
from textual.widgets import DataTable, Input, Markdown, Static
from textual.worker import Worker, WorkerState

from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.memory.history import ThreadInfo, TurnInfo
from autopatch_tui.tui.messages import OpenTurnInHistory
from autopatch_tui.tui.resources import style
from autopatch_tui.tui.screens import history_paging as paging
from autopatch_tui.tui.screens import history_text
from autopatch_tui.tui.screens.base import AppScreen
from autopatch_tui.tui.services import Services
from autopatch_tui.tui.widgets.footer import AppFooter
from autopatch_tui.tui.widgets.search_box import SearchBox
from autopatch_tui.tui.widgets.history_tables import ThreadTable, TurnTable
from autopatch_tui.tui.widgets.turn_detail import TurnDetail

PAGE_SIZE = 100
SEARCH_LIMIT = 200
SEARCH_DELAY = 0.3  # seconds of quiet typing before a search runs
RELOAD_DELAY = 0.3  # coalesces bursts of Memory changes
NEAR_END = 5  # rows from the end of the window that trigger the next page

PANES = ("#search", "#threads-title", "#threads", "#turns-title", "#turns", "#detail")
WORKER_GROUPS = ("history-threads", "history-turns", "history-more", "history-export")


class HistoryScreen(AppScreen):
    """Opens (and comes back) with focus in the search field: typing searches. The letter keys
    move through the turns only once the list has focus (↓ from the field); writing an export
    needs ctrl+s."""

    CSS_PATH = style("history.tcss")
    AUTO_FOCUS = "#search"
    FIELD = "#search"
    BINDINGS = [
        Binding("escape", "back", "Back", id="history.back"),
        Binding("slash", "focus_search", "Search", id="history.search"),
        Binding("m", "more", "More turns", id="history.more"),
        Binding("b", "earlier", "Earlier turns", id="history.earlier"),
        Binding("ctrl+s", "export", "Export thread", id="history.export"),
    ]

    def __init__(self, services: Services) -> None:
        super().__init__(name="history")
        self.services = services
        self.threads: dict[str, ThreadInfo] = {}
        self.thread_id: str | None = None  # the thread whose turns are (being) shown
        self.turns: list[TurnInfo] = []  # the loaded window of that thread
        self.window_start = 0  # offset of the window's first turn in the thread
        self.results: list[TurnInfo] = []  # search results
        self.search_text = ""
        self.mode: Literal["thread", "search"] = "thread"
        self.degraded: str | None = None
        self._gen = 0
        self._load_gen = -1  # the generation a page load was asked for; any newer view cancels it
        self._jump_target: str | None = None
        self._search_timer: Timer | None = None
        self._reload_timer: Timer | None = None

    @property
    def manager(self) -> MemoryManager:
        return self.services.manager

    @property
    def _loading(self) -> bool:
        """A page of the current view is on its way (a newer view makes an older load stale)."""
        return self._load_gen == self._gen

    @_loading.setter
    def _loading(self, value: bool) -> None:
        self._load_gen = self._gen if value else -1

    # --- layout -------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield SearchBox(placeholder="Search every turn (type to filter; / to focus, ↓ to the results, Esc to clear)",
                        id="search")
        yield Static(Text("Threads"), id="threads-title", classes="pane-title")
        yield ThreadTable(id="threads", cursor_type="row", zebra_stripes=True)
        yield Static(Text(""), id="turns-title", classes="pane-title")
        yield TurnTable(id="turns", cursor_type="row", zebra_stripes=True)
        with TurnDetail(id="detail"):
            yield Static(Text(""), id="detail-text", markup=False)
            yield Markdown("", id="detail-answer")
        yield Static(Text(""), id="notice", markup=False)
        yield AppFooter()

    @property
    def threads_table(self) -> ThreadTable:
        return self.query_one("#threads", ThreadTable)

    @property
    def turns_table(self) -> TurnTable:
        return self.query_one("#turns", TurnTable)

    def on_mount(self) -> None:
        self.threads_table.add_thread_columns()
        self.turns_table.set_turn_columns("thread")
        self.query_one("#notice").display = False
        self.watch(self.app, "memory_version", self._memory_changed, init=False)
        self.watch(self.turns_table, "scroll_y", self._turns_scrolled, init=False)
        if not self.manager.readable:  # a read-only store is browsed like a healthy one
            self._show_degraded()
            return
        self._work(self._fetch_threads, "history-threads")

    def _work(self, fn: object, group: str) -> Worker:
        return self.run_worker(fn, thread=True, group=group, exit_on_error=False)  # type: ignore[arg-type]

    # --- degraded -----------------------------------------------------------------------
    def _show_degraded(self) -> None:
        diag = self.manager.store.health.diagnostic or "unknown"
        self.degraded = diag
        notice = self.query_one("#notice", Static)
        notice.update(history_text.degraded_notice_text(diag))
        notice.display = True
        self._show_panes(False)
        self.threads_table.clear()
        self.turns_table.clear()
        self.threads = {}
        self.turns = []
        self.thread_id = None
        self.query_one("#turns-title", Static).update(Text(""))
        self._show_detail(None)
        self.refresh_bindings()

    def _hide_degraded(self) -> None:
        self.degraded = None
        self.query_one("#notice").display = False
        self._show_panes(True)

    def _show_panes(self, visible: bool) -> None:
        for selector in PANES:
            self.query_one(selector).display = visible

    # --- threads ------------------------------------------------------------------------
    def _fetch_threads(self) -> None:
        threads = self.manager.threads()
        self.app.call_from_thread(self._apply_threads, threads)

    def _apply_threads(self, threads: list[ThreadInfo]) -> None:
        self.threads = {t.id: t for t in threads}
        table = self.threads_table
        table.show_threads(threads)
        self.query_one("#threads-title", Static).update(Text(f"Threads ({len(threads)})", style="bold"))
        if self.thread_id is not None and self.thread_id not in self.threads:
            self.thread_id = None  # gone (Memory was cleared)
        if self.thread_id is not None:
            table.move_cursor(row=table.get_row_index(self.thread_id), animate=False)
            self._update_title()
        elif threads and self._jump_target is None:
            self.open_thread(threads[0].id)

    @on(DataTable.RowHighlighted, "#threads")
    def _thread_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.cursor_row != event.data_table.cursor_row:
            return  # stale: the cursor moved again (or the table was rebuilt)
        key = event.row_key.value
        if key is None or key == self.thread_id or self._jump_target is not None:
            return
        self.open_thread(key)

    @on(DataTable.RowSelected, "#threads")
    def _thread_selected(self, event: DataTable.RowSelected) -> None:
        key = event.row_key.value
        if key is not None and key != self.thread_id:
            self.open_thread(key)
        self.turns_table.focus()

    def open_thread(self, thread_id: str) -> None:
        """Show a thread's first page of turns."""
        self._leave_search(render=False)
        self.thread_id = thread_id
        self._gen += 1
        self._loading = True
        self.turns = []
        self.window_start = 0
        self.turns_table.clear()
        self._show_detail(None)
        self._update_title()
        self._work(partial(self._fetch_page, self._gen, thread_id, 0, "replace", None), "history-turns")

    # --- pages of turns -----------------------------------------------------------------
    @property
    def total(self) -> int:
        info = self.threads.get(self.thread_id or "")
        return info.turns if info else len(self.turns)

    @property
    def has_more(self) -> bool:
        return self.window_start + len(self.turns) < self.total

    def _fetch_page(self, gen: int, thread_id: str, offset: int, how: str, focus: str | None,
                    limit: int = PAGE_SIZE) -> None:
        turns = paging.read_turns(self.manager, thread_id, offset, limit)
        self.app.call_from_thread(self._apply_page, gen, thread_id, offset, turns, how, focus)

    def _apply_page(self, gen: int, thread_id: str, offset: int, turns: list[TurnInfo], how: str,
                    focus: str | None) -> None:
        if gen != self._gen or thread_id != self.thread_id:
            return
        self._loading = False
        self.turns, self.window_start = paging.merge_page(self.turns, self.window_start, turns, offset, how)
        if self.mode == "thread":
            if how == "append":
                self.turns_table.add_turn_rows(self.turns[self.turns_table.row_count:])
            elif how == "prepend":
                self._render_turns(self.turns, focus or self.turns_table.cursor_key())
            else:
                self._render_turns(self.turns, focus)
        self._update_title()
        self.refresh_bindings()

    def action_more(self) -> None:
        self._load_more()

    def _load_more(self) -> bool:
        if self.mode != "thread" or self.thread_id is None or self._loading or not self.has_more:
            return False
        self._loading = True
        offset = self.window_start + len(self.turns)
        self._work(partial(self._fetch_page, self._gen, self.thread_id, offset, "append", None), "history-more")
        return True

    def action_earlier(self) -> None:
        self._load_earlier()

    def _load_earlier(self) -> bool:
        if self.mode != "thread" or self.thread_id is None or self._loading or self.window_start <= 0:
            return False
        self._loading = True
        offset = max(0, self.window_start - PAGE_SIZE)
        self._work(partial(self._fetch_page, self._gen, self.thread_id, offset, "prepend", None,
                           self.window_start - offset), "history-more")
        return True

    def _turns_scrolled(self, scroll_y: float) -> None:
        table = self.turns_table
        if self.mode == "thread" and table.max_scroll_y > 0 and scroll_y >= table.max_scroll_y - 1:
            self._load_more()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "more":
            return self.mode == "thread" and self.has_more
        if action == "earlier":
            return self.mode == "thread" and self.window_start > 0
        if action == "export":
            return self.thread_id is not None and self.degraded is None
        return True

    # --- rendering ----------------------------------------------------------------------
    def _render_turns(self, turns: list[TurnInfo], focus: str | None, *, with_thread: bool = False) -> None:
        row = self.turns_table.show_turns(turns, focus, with_thread=with_thread)
        if row is not None:
            self.call_after_refresh(self.turns_table.center_row, row)
        self._show_detail(turns[row] if row is not None else turns[0] if turns else None)

    def _show_detail(self, turn: TurnInfo | None) -> None:
        empty = history_text.empty_detail_text(self.mode, self._loading, self.thread_id)
        self.query_one("#detail", TurnDetail).show(turn, empty)

    def _update_title(self) -> None:
        if self.mode == "search":
            text = history_text.search_title_text(self.search_text, len(self.results), SEARCH_LIMIT)
        else:
            info = self.threads.get(self.thread_id or "")
            text = Text("") if info is None else history_text.thread_title_text(
                info, self.window_start, len(self.turns), self.has_more)
        self.query_one("#turns-title", Static).update(text)

    @on(DataTable.RowHighlighted, "#turns")
    def _turn_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.cursor_row != event.data_table.cursor_row:
            return
        rows = self.results if self.mode == "search" else self.turns
        key = event.row_key.value
        turn = next((t for t in rows if t.id == key), None)
        if turn is not None:
            self._show_detail(turn)
        if self.mode == "thread":
            if event.cursor_row >= event.data_table.row_count - NEAR_END:
                self._load_more()
            elif event.cursor_row == 0:
                self._load_earlier()

    @on(DataTable.RowSelected, "#turns")
    def _turn_selected(self, event: DataTable.RowSelected) -> None:
        if self.mode == "search" and event.row_key.value is not None:
            self.show_turn(event.row_key.value)

    # --- search -------------------------------------------------------------------------
    @on(Input.Changed, "#search")
    def _search_changed(self, event: Input.Changed) -> None:
        if self._search_timer is not None:
            self._search_timer.stop()
            self._search_timer = None
        text = event.value.strip()
        if not text:
            if self.mode == "search":
                self._leave_search(render=True)
            return
        if self.degraded is not None:
            return
        self._search_timer = self.set_timer(SEARCH_DELAY, partial(self._run_search, text))

    @on(Input.Submitted, "#search")
    def _search_submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if text and self.degraded is None:
            if self._search_timer is not None:
                self._search_timer.stop()
                self._search_timer = None
            self._run_search(text)
        # the field keeps focus (typing on never fires a letter key); Down moves to the results

    @on(SearchBox.ToResults, "#search")
    def _to_results(self) -> None:
        self.turns_table.focus()

    def _run_search(self, text: str) -> None:
        self._search_timer = None
        self._gen += 1
        self._work(partial(self._fetch_search, self._gen, text), "history-turns")

    def _fetch_search(self, gen: int, text: str) -> None:
        results = self.manager.search_turns(text, limit=SEARCH_LIMIT)
        self.app.call_from_thread(self._apply_search, gen, text, results)

    def _apply_search(self, gen: int, text: str, results: list[TurnInfo]) -> None:
        if gen != self._gen:
            return
        if self.mode != "search":
            self.mode = "search"
            self.turns_table.set_turn_columns("search")
        self.search_text = text
        self.results = results
        self._render_turns(results, None, with_thread=True)
        self._update_title()
        self.refresh_bindings()

    def _leave_search(self, *, render: bool) -> None:
        search = self.query_one("#search", Input)
        was_search = self.mode == "search"
        self.mode = "thread"
        self.results = []
        self.search_text = ""
        if search.value:
            search.value = ""  # its Changed message finds mode == "thread" and does nothing
        if was_search:
            self._gen += 1  # a search still running is stale now
            self._loading = False
            self.turns_table.set_turn_columns("thread")
            if render and self.thread_id is not None and not self.turns:
                self.open_thread(self.thread_id)  # its first page was dropped by the search
            elif render:
                self._render_turns(self.turns, None)
            self._update_title()
            self.refresh_bindings()

    def action_focus_search(self) -> None:
        self.query_one("#search", Input).focus()

    def clear_field(self) -> bool:
        """Escape's first step: leave the search (its text and its results), focus stays in the field."""
        search = self.query_one("#search", Input)
        if not search.value and self.mode != "search":
            return False
        self._leave_search(render=True)
        search.focus()
        return True

    # --- jump to a turn -----------------------------------------------------------------
    def show_turn(self, turn_id: str) -> None:
        """Select the turn's thread and highlight and scroll to the turn (loads the page around it)."""
        if self.degraded is not None:
            self.notify("Memory is degraded: the thread history is unavailable.", severity="warning")
            return
        self._jump_target = turn_id
        self._gen += 1
        self._work(partial(self._fetch_jump, self._gen, turn_id), "history-turns")

    def on_open_turn_in_history(self, message: OpenTurnInHistory) -> None:
        message.stop()
        self.show_turn(message.turn_id)

    def _fetch_jump(self, gen: int, turn_id: str) -> None:
        info, offset, turns = paging.find_turn_page(self.manager, turn_id, PAGE_SIZE)
        threads = self.manager.threads()
        self.app.call_from_thread(self._apply_jump, gen, info, offset, turns, threads)

    def _apply_jump(self, gen: int, info: TurnInfo, offset: int, turns: list[TurnInfo],
                    threads: list[ThreadInfo]) -> None:
        if gen != self._gen:
            return
        self._jump_target = None
        self._leave_search(render=False)
        self._gen += 1
        self.thread_id = info.thread_id
        self._apply_threads(threads)
        self.turns = list(turns)
        self.window_start = offset
        self._loading = False
        self._render_turns(self.turns, info.id)
        self._update_title()
        self.refresh_bindings()
        self.turns_table.focus()

    # --- export -------------------------------------------------------------------------
    def action_export(self) -> None:
        if self.thread_id is None or self.degraded is not None:
            return
        thread_id = self.thread_id
        self.notify(f"Exporting thread {thread_id}…", markup=False)
        self._work(partial(self._export, thread_id), "history-export")

    def _export(self, thread_id: str) -> None:
        path = self.manager.export_thread_markdown(thread_id)
        self.app.notify(f"Thread exported as Markdown to {path}", title="Export", markup=False, timeout=10)

    # --- live reload --------------------------------------------------------------------
    def _memory_changed(self, _version: int) -> None:
        if self._reload_timer is not None:
            self._reload_timer.stop()
        self._reload_timer = self.set_timer(RELOAD_DELAY, self._reload)

    def _reload(self) -> None:
        self._reload_timer = None
        if not self.manager.readable:
            self._show_degraded()
            return
        if self.degraded is not None:
            self._hide_degraded()
        if self.mode == "search":
            self._work(self._fetch_threads, "history-threads")
            self._run_search(self.search_text)
            return
        at_end = not self.has_more
        count = len(self.turns) + (PAGE_SIZE if at_end else 0)
        self._gen += 1
        self._work(partial(self._fetch_reload, self._gen, self.thread_id, self.window_start, max(count, PAGE_SIZE)),
                   "history-threads")

    def _fetch_reload(self, gen: int, thread_id: str | None, offset: int, count: int) -> None:
        threads, turns = paging.read_threads_and_window(self.manager, thread_id, offset, count)
        self.app.call_from_thread(self._apply_reload, gen, thread_id, offset, threads, turns)

    def _apply_reload(self, gen: int, thread_id: str | None, offset: int, threads: list[ThreadInfo],
                      turns: list[TurnInfo] | None) -> None:
        stale = gen != self._gen or thread_id != self.thread_id or self.mode != "thread"
        if not stale and turns is not None:
            self.turns = turns
            self.window_start = offset
            self._loading = False
        self._apply_threads(threads)
        if not stale and turns is not None:
            self._render_turns(self.turns, self.turns_table.cursor_key())
            self._update_title()
            self.refresh_bindings()

    # --- worker outcome -----------------------------------------------------------------
    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        # the App reports the error; the screen only leaves its loading state
        if event.worker.group in WORKER_GROUPS and event.state in (WorkerState.ERROR, WorkerState.CANCELLED):
            self._loading = False
            if event.worker.group == "history-turns":
                self._jump_target = None
