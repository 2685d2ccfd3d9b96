"""The Memory browser, three views (F4 again, or the tabs, switch): "To review (N)" — the review inbox
(`memory_inbox.py`), where it opens while N > 0 —, "Items" — items filtered by kind and status, the
deterministic recall of `memory search` with, apart and labelled, the items that merely contain the
typed words, an item's full detail with its revision and supersession chain and every provenance
quote shown inside its source turn (jump to it in the history), forget, export — and "Audit"
(`memory_audit.py`). A degraded store shows its diagnostic and `clear --confirm` behind a
confirmation dialog instead.

Every manager call runs in a thread worker; results come back through `call_from_thread` and are
applied only when they still answer the latest request (a generation number per pane). User and
model text is shown as plain `Text`, never parsed as markup."""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, ContentSwitcher, DataTable, Input, OptionList, Select, Static, Tab, Tabs

from autopatch_tui.core.errors import MemoryNotFoundError
from autopatch_tui.core.instructions.promote import forget_note
from autopatch_tui.core.instructions.section import visible
from autopatch_tui.core.memory.models import ItemDetail
from autopatch_tui.core.recall.cli_search import search_memory
from autopatch_tui.core.recall.session import RecallLimitError
from autopatch_tui.core.terminal_text import one_line as safe_line
from autopatch_tui.tui.resources import style
from autopatch_tui.tui.screens import memory_list
from autopatch_tui.tui.screens import memory_notices as notices
from autopatch_tui.tui.screens.base import AppScreen
from autopatch_tui.tui.screens.confirm import ConfirmScreen
from autopatch_tui.tui.screens.memory_audit import AuditView
from autopatch_tui.tui.screens.memory_inbox import InboxView
from autopatch_tui.tui.screens.memory_refused import RefusedView
from autopatch_tui.tui.screens.memory_views import BrowserViews, open_turn_in_history
from autopatch_tui.tui.screens.memory_list import KIND_OPTIONS, STATUS_OPTIONS, WORDS_KEY, Row
from autopatch_tui.tui.screens.memory_promote import PromoteFlow
from autopatch_tui.tui.services import Services
from autopatch_tui.tui.widgets.footer import AppFooter
from autopatch_tui.tui.widgets.responsive_table import Col, ResponsiveTable
from autopatch_tui.tui.widgets.search_box import SearchBox
from autopatch_tui.tui.widgets.memory_item_detail import (
    Provenance,
    SourceList,
    fields_text,
    history_text,
    load_provenance,
    locate_quote,
    quote_in_turn,
    revisions_text,
)

__all__ = ["PAGE", "SEARCH_INTENT", "MemoryBrowserScreen", "SourceList", "locate_quote", "open_turn_in_history",
           "quote_in_turn"]

log = logging.getLogger(__name__)

PAGE = 100
"""Items loaded per page (two screens at 200x50; as the history's page); the next page loads when the
cursor reaches the last row. The first open builds one page of table rows (issue 14)."""
SEARCH_INTENT = "general_chat"
"""The intent of the browser's search: the default of `memory search`."""


class MemoryBrowserScreen(BrowserViews, AppScreen):
    """The Items view opens (and comes back) with focus in the search field; the list's letter keys
    work once the list has focus (↓ from the field). Escape clears the search first, then goes back."""

    CSS_PATH = style("memory_browser.tcss")
    FIELD = "#mb-search"
    AUTO_FOCUS = FIELD  # the first focus, not Tabs' then the field's: one footer for the first open
    BINDINGS = [
        Binding("escape", "back", "Back", id="memory.back"),
        Binding("slash", "focus_search", "Search", id="memory.search"),
        Binding("k", "cycle_kind", "Kind", id="memory.kind"),
        Binding("s", "cycle_status", "Status", id="memory.status"),
        Binding("f", "forget", "Forget", id="memory.forget"),
        Binding("j", "jump", "Jump", id="memory.jump"),
        Binding("ctrl+s", "export", "Export", id="memory.export"),
        Binding("c", "clear", "Clear Memory", id="memory.clear"),
        Binding("r", "reload", "Reload", id="memory.reload", show=False),
        Binding("D", "duplicates", "Duplicates", id="memory.duplicates"),
        Binding("space", "toggle_mark", "Mark", id="memory.mark", show=False),  # F1 lists it; a focused Select binds space
        Binding("p", "promote", "Promote", id="memory.promote"),
    ]

    def __init__(self, services: Services) -> None:
        super().__init__(name="memory")
        self.services = services
        self.view = "items"
        self.review_count = 0
        self.kind = "all"
        self.status = "active"
        self.query_text = ""
        self.healthy: bool | None = None  # None until the first load answered
        self.rows: list[Row] = []
        self.more = False
        self.selected: str | None = None
        self.detail: ItemDetail | None = None
        self.provenance: list[Provenance] = []
        self._list_gen = 0
        self._detail_gen = 0
        self._loading_more = False
        self.promote = PromoteFlow(self)  # space marks, p promotes (memory_promote.py)
        self._problem = ""
        self._history: dict = {}  # item ID -> its supersession history, loaded with the detail
        self._rescues: dict = {}  # item ID -> the rules it was kept over (`refused_store.KeptOver`)

    # --- layout -------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Tabs(Tab("To review", id="view-inbox"), Tab("Items", id="view-items"), Tab("Audit", id="view-audit"),
                   Tab("Not remembered", id="view-refused"), active="view-items", id="mb-views")
        with ContentSwitcher(initial="mb-browser", id="mb-switch"):
            yield from self._items_view()
            yield InboxView(self.services, id="mb-inbox")
            yield AuditView(self.services, id="mb-audit")
            yield RefusedView(self.services, id="mb-refused")
        yield AppFooter()  # the degraded view is mounted only when a store is degraded (`_degraded_view`)

    def _items_view(self) -> ComposeResult:
        with Vertical(id="mb-browser"):
            with Horizontal(id="mb-toolbar"):
                yield Select(KIND_OPTIONS, value="all", allow_blank=False, compact=True, id="mb-kind")
                yield Select(STATUS_OPTIONS, value="active", allow_blank=False, compact=True, id="mb-status")
                yield SearchBox(placeholder="search Memory (as `memory search`) — Enter searches, ↓ results",
                                compact=True, id="mb-search")
            yield Static(Text(""), id="mb-summary", markup=False)
            with Horizontal(id="mb-body"):
                yield ResponsiveTable(id="mb-items", cursor_type="row", zebra_stripes=True)
                with VerticalScroll(id="mb-detail"):
                    yield Static(Text(""), id="mb-fields", markup=False)
                    yield Static(Text("Revisions"), id="mb-revisions-title", classes="mb-section", markup=False)
                    yield Static(Text(""), id="mb-revisions", markup=False)
                    yield Static(Text(""), id="mb-history", markup=False)
                    yield Static(Text("Provenance"), id="mb-sources-title", classes="mb-section", markup=False)
                    yield SourceList(id="mb-sources")

    @staticmethod
    def _degraded_widgets() -> Vertical:
        return Vertical(
            Static(Text("Memory is degraded"), id="mb-degraded-title", markup=False),
            Static(Text(""), id="mb-diagnostic", markup=False),
            Horizontal(Button(Text("Export snapshot (ctrl+s)"), id="mb-export"),
                       Button(Text("Clear Memory… (c)"), id="mb-clear", variant="error"), classes="buttons"),
            id="mb-degraded")

    def _degraded_view(self) -> Vertical | None:
        found = self.query("#mb-degraded")
        return found.first(Vertical) if found else None

    def on_mount(self) -> None:
        self._show_detail_placeholder("")
        self._set_columns(memory_list.LIST_COLUMNS)
        self.query_one("#mb-search", Input).focus()
        self.watch(self.app, "memory_version", self._memory_changed, init=False)
        self.reload()
        self.opened()

    @property
    def table(self) -> ResponsiveTable:
        return self.query_one("#mb-items", ResponsiveTable)

    @property
    def sources(self) -> SourceList:
        return self.query_one("#mb-sources", SourceList)

    def _set_columns(self, columns: tuple[Col, ...]) -> None:
        self.table.set_spec(columns)

    # --- loading ------------------------------------------------------------------------
    def _memory_changed(self, _version: int) -> None:
        self.reload()
        if self.view == "inbox":
            self.query_one(InboxView).reload()
        elif self.view == "audit":
            self.query_one(AuditView).reload()
        elif self.view == "refused":
            self.query_one(RefusedView).reload()

    def reload(self) -> None:
        """Reload the list (or re-run the search) and the selected item's detail."""
        self._list_gen += 1
        self._loading_more = False
        self._run(partial(self._load_list, self._list_gen, self.kind, self.status, self.query_text, 0), "mb-list")

    def _run(self, fn: Callable[[], None], group: str) -> None:
        self.run_worker(fn, thread=True, group=group, exit_on_error=False)

    def _load_list(self, gen: int, kind: str, status: str, query: str, offset: int) -> None:
        mgr = self.services.manager
        if not mgr.readable:  # a read-only store is browsed like a healthy one
            health = mgr.store.health
            self.app.call_from_thread(self._show_degraded, gen, health.diagnostic or "Memory is degraded",
                                      health.schema_version)
            return
        if query:
            problem = ""
            try:
                found = search_memory(mgr, query, SEARCH_INTENT)
            except RecallLimitError as exc:
                found, problem = [], str(exc)
            rows = [Row(r["id"], r["kind"], r["subject"], r["statement"], r["match_type"]) for r in found]
            recalled = {r.id for r in rows}
            words = [Row(i.id, i.kind, i.subject, i.statement, "words") for i in mgr.items_containing(query)
                     if i.id not in recalled]
            if words:  # apart and labelled: what merely contains the typed words
                rows += [memory_list.words_label(query), *words]
            self.app.call_from_thread(self._show_rows, gen, rows, False, False, problem)
            return
        items = mgr.list_items(kind=None if kind == "all" else kind, status=status, limit=PAGE + 1, offset=offset)
        rows = [Row(i.id, i.kind, i.subject, i.statement) for i in items[:PAGE]]
        first = None
        if offset == 0 and rows:  # the detail the list will select, in the same trip: one update, one layout
            ids = [r.id for r in rows]
            target = self.selected if self.selected in ids else ids[0]
            try:
                first = (target, *self._detail_payload(target))
            except Exception as exc:  # the list still shows; selecting the row loads (and reports) it
                log.warning("first item detail not loaded with the list: %s", type(exc).__name__)
        self.app.call_from_thread(self._show_rows, gen, rows, len(items) > PAGE, offset > 0, "", first)

    async def _show_degraded(self, gen: int, diagnostic: str, schema_version: int | None) -> None:
        if gen != self._list_gen:
            return
        view = self._degraded_view()
        if view is None:  # built on first need: a healthy store's first open never pays for it
            view = self._degraded_widgets()
            await self.mount(view, before=self.query_one(AppFooter))
            if gen != self._list_gen:
                view.display = False
                return
        self.healthy = False
        self.query_one("#mb-switch").display = False
        self.query_one("#mb-views").display = False
        view.display = True
        from autopatch_tui.core.no_memory import merged_away

        away = merged_away(self.services.manager)  # nothing to export or clear here: the fix is elsewhere
        text = notices.degraded_text(diagnostic, schema_version, self.services.manager.paths, merged_away=away)
        self.query_one("#mb-degraded-title", Static).update(
            Text("Memory is not available here" if away else "Memory is degraded"))
        self.query_one("#mb-degraded .buttons").display = not away
        self.query_one("#mb-diagnostic", Static).update(text)
        if not away:
            self.query_one("#mb-clear", Button).focus()
        self.refresh_bindings()

    def _show_rows(self, gen: int, rows: list[Row], more: bool, append: bool, problem: str,
                   first: tuple[str, ItemDetail | None, list[Provenance]] | None = None) -> None:
        if gen != self._list_gen:
            return
        was_degraded = self.healthy is False
        self.healthy = True
        if was_degraded or not self.query_one("#mb-switch").display:
            view = self._degraded_view()
            if view is not None:
                view.display = False
            self.query_one("#mb-switch").display = True
            self.query_one("#mb-views").display = True
            self.show_view(self.view)
        self._loading_more = False
        table = self.table
        if not append:
            self._set_columns(memory_list.SEARCH_COLUMNS if self.query_text else memory_list.LIST_COLUMNS)
            self.rows = []
        for row in rows:
            table.add_row(*memory_list.row_cells(row, with_match=bool(self.query_text)), key=row.id)
        self.rows += rows
        self.promote.show_marks(rows)
        self.more = more
        self._show_summary(problem)
        if append:
            return
        ids = [r.id for r in self.rows if r.id != WORDS_KEY]
        if not ids:
            self.selected = None
            self._clear_detail()
            self._show_detail_placeholder(memory_list.empty_text(self.query_text, problem, self.kind, self.status))
            self.refresh_bindings()
            return
        target = self.selected if self.selected in ids else ids[0]
        table.move_cursor(row=[r.id for r in self.rows].index(target), animate=False)
        if first is not None and first[0] == target:  # loaded with the list
            self.selected = target
            self._detail_gen += 1
            self._show_detail(self._detail_gen, first[1], first[2])
            return
        self.select_item(target, force=True)

    def _show_summary(self, problem: str) -> None:
        self._problem = problem
        ids = [r.id for r in self.rows]
        words_at = ids.index(WORDS_KEY) if WORDS_KEY in ids else None
        text = memory_list.summary_text(self.query_text, problem, len(self.rows), self.more, self.kind, self.status,
                                        words_at)
        self.query_one("#mb-summary", Static).update(text + self.promote.summary())

    def refresh_summary(self) -> None:
        self._show_summary(self._problem)

    def _load_more(self) -> None:
        if not self.more or self._loading_more or self.query_text:
            return
        self._loading_more = True
        self._run(partial(self._load_list, self._list_gen, self.kind, self.status, "", len(self.rows)), "mb-list")

    # --- selection and detail -----------------------------------------------------------
    @on(DataTable.RowHighlighted, "#mb-items")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key is None or event.row_key.value is None:
            return
        if event.cursor_row != event.data_table.cursor_row:
            return  # stale: the cursor moved on (a reload refills the table, then moves to the selection)
        if event.row_key.value == WORDS_KEY:  # the label between recall and the word matches
            return
        self.select_item(str(event.row_key.value))
        if event.cursor_row >= len(self.rows) - 1:
            self._load_more()

    def select_item(self, item_id: str, *, force: bool = False) -> None:
        if item_id == self.selected and not force:
            return
        self.selected = item_id
        self._detail_gen += 1
        self._run(partial(self._load_detail, self._detail_gen, item_id), "mb-detail")

    def _load_detail(self, gen: int, item_id: str) -> None:
        self.app.call_from_thread(self._show_detail, gen, *self._detail_payload(item_id))

    def _detail_payload(self, item_id: str) -> tuple[ItemDetail | None, list[Provenance]]:
        """(In a worker) the item's detail and its provenance, or (None, []) when it is gone."""
        mgr = self.services.manager
        try:
            detail = mgr.show_item(item_id)
            self._history[item_id] = mgr.item_history(item_id)
            from autopatch_tui.core.memory.steering import kept_over

            self._rescues[item_id] = kept_over(mgr, detail.id)
        except MemoryNotFoundError:
            return None, []
        return detail, load_provenance(mgr, detail.sources)

    def _clear_detail(self) -> None:
        self.detail = None
        self.provenance = []
        self.sources.clear_options()

    def _show_detail_placeholder(self, text: str) -> None:
        self.query_one("#mb-fields", Static).update(Text(text, style="italic"))
        for wid in ("#mb-revisions-title", "#mb-revisions", "#mb-history", "#mb-sources-title", "#mb-sources"):
            self.query_one(wid).display = False

    def _show_detail(self, gen: int, detail: ItemDetail | None, provenance: list[Provenance]) -> None:
        if gen != self._detail_gen:
            return
        self._clear_detail()
        if detail is None:
            self._show_detail_placeholder("This item no longer exists.")
            self.refresh_bindings()
            return
        self.detail = detail
        self.provenance = provenance
        self.query_one("#mb-fields", Static).update(fields_text(detail))
        self.query_one("#mb-revisions", Static).update(revisions_text(detail))
        history = self._history.pop(detail.id, None)
        shown = history_text(history) if history is not None else Text("")
        for k in self._rescues.pop(detail.id, []):  # issue 31.2: kept over a refusal, by the user's decision
            shown.append(f"\nKept over rule: {k.words} ({safe_line(k.rule)}), your decision "
                         f"(turn {safe_line(k.turn_id)})", style="bold")
        self.query_one("#mb-history", Static).update(shown)
        self.sources.show_provenance(provenance)
        for wid in ("#mb-revisions-title", "#mb-revisions", "#mb-history", "#mb-sources-title", "#mb-sources"):
            self.query_one(wid).display = True
        self.query_one("#mb-sources-title", Static).update(
            Text(f"Provenance ({len(provenance)} quote{'s' if len(provenance) != 1 else ''}; j jumps to the turn)"
                 if provenance else "Provenance: none recorded"))
        self.refresh_bindings()

    # --- filters and search -------------------------------------------------------------
    @on(Select.Changed, "#mb-kind")
    def _kind_changed(self, event: Select.Changed) -> None:
        value = str(event.value)
        if value != self.kind:
            self.kind = value
            self._leave_search()
            self.reload()

    @on(Select.Changed, "#mb-status")
    def _status_changed(self, event: Select.Changed) -> None:
        value = str(event.value)
        if value != self.status:
            self.status = value
            self._leave_search()
            self.reload()

    def _leave_search(self) -> None:
        if self.query_text:
            self.query_text = ""
            self.query_one("#mb-search", Input).value = ""

    @on(Input.Submitted, "#mb-search")
    def _search(self, event: Input.Submitted) -> None:
        self.query_text = event.value.strip()
        self.selected = None
        self.reload()  # the field keeps focus: typing on never fires a letter key of this screen

    @on(SearchBox.ToResults, "#mb-search")
    def _to_results(self) -> None:
        self.table.focus()

    def action_focus_search(self) -> None:
        self.query_one("#mb-search", Input).focus()

    def _cycle(self, select_id: str, options: list[tuple[str, str]]) -> None:
        select: Select[str] = self.query_one(select_id, Select)
        values = [v for _, v in options]
        current = values.index(select.value) if select.value in values else -1
        select.value = values[(current + 1) % len(values)]

    def action_cycle_kind(self) -> None:
        self._cycle("#mb-kind", KIND_OPTIONS)

    def action_cycle_status(self) -> None:
        self._cycle("#mb-status", STATUS_OPTIONS)

    def action_reload(self) -> None:
        self.reload()

    # --- bindings availability ----------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Textual 8: False hides a binding, None shows it disabled."""
        browsing = ("focus_search", "cycle_kind", "cycle_status", "forget", "jump", "toggle_mark", "promote")
        if action in browsing and (self.healthy is False or self.view != "items"):
            return False
        if action in ("clear", "export") and self.healthy is False:
            from autopatch_tui.core.no_memory import merged_away  # merged away: nothing here to export or clear

            return not merged_away(self.services.manager)
        if action == "clear":
            return False
        if action == "forget":
            return True if self.detail is not None and self.detail.status == "active" else None
        if action in ("toggle_mark", "promote"):  # active items only (a search lists active items)
            return True if self.status == "active" or self.query_text else None
        if action == "jump":
            return True if any(p.turn is not None for p in self.provenance) else None
        return True

    # --- actions ------------------------------------------------------------------------
    def action_forget(self) -> None:
        d = self.detail
        if d is None or d.status != "active":
            return
        self.app.push_screen(ConfirmScreen("Forget this Memory item?", notices.forget_body(d), "Forget"),
                             callback=partial(self._forget_answer, d.id))

    def _forget_answer(self, item_id: str, yes: bool | None) -> None:
        if not yes:
            return

        def work() -> None:
            logical = self.services.manager.forget(item_id)
            note = forget_note(self.services.manager.repo, logical)
            self.app.call_from_thread(self._forgotten, logical, note)

        self._run(work, "mb-write")

    def _forgotten(self, logical: str, note: str = "") -> None:
        self.notify(visible(f"Forgot {logical}. The raw turns it came from are kept." + (" " + note if note else "")),
                    markup=False, timeout=15 if note else 5)
        self.reload()

    def action_toggle_mark(self) -> None:
        row = next((r for r in self.rows if r.id == self.selected), None)
        if row is None:
            return
        self.promote.toggle(row)
        self.refresh_summary()

    def action_promote(self) -> None:
        self.promote.start(self.selected if self.detail is not None and self.detail.status == "active" else None)

    def action_export(self) -> None:
        def work() -> None:
            path = self.services.manager.export()
            self.app.call_from_thread(self.notify, f"Memory exported to {path}", title="Export", markup=False)

        self._run(work, "mb-write")

    def action_clear(self) -> None:
        if self.healthy is not False:
            return
        self.app.push_screen(ConfirmScreen("Clear all Memory?", notices.CLEAR_BODY, "Clear"),
                             callback=self._clear_answer)

    def _clear_answer(self, yes: bool | None) -> None:
        if not yes:
            return

        def work() -> None:
            mgr = self.services.manager
            thread_id = mgr.clear(confirm=True)
            mgr.start_background()
            self.app.call_from_thread(self._cleared, thread_id)

        self._run(work, "mb-write")

    def _cleared(self, thread_id: str) -> None:
        self.notify(f"Memory cleared; new empty thread {thread_id}. Exports were kept.", markup=False)
        self.selected = None
        self.reload()

    def action_jump(self) -> None:
        if not self.provenance:
            return
        index = self.sources.highlighted if self.sources.highlighted is not None else 0
        chosen = self.provenance[index]
        if chosen.turn is None:
            chosen = next((p for p in self.provenance if p.turn is not None), chosen)
        if chosen.turn is None:
            self.notify("The source turn of this quote no longer exists.", severity="warning")
            return
        self.app.call_later(open_turn_in_history, self.app, chosen.source.turn_id)

    @on(OptionList.OptionSelected, "#mb-sources")
    def _source_chosen(self, event: OptionList.OptionSelected) -> None:
        self.action_jump()

    # --- degraded-view buttons ----------------------------------------------------------
    @on(Button.Pressed, "#mb-export")
    def _export_pressed(self) -> None:
        self.action_export()

    @on(Button.Pressed, "#mb-clear")
    def _clear_pressed(self) -> None:
        self.action_clear()
