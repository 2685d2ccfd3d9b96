"""The review inbox of the Memory browser ("To review (N)", contracts §8): the items awaiting review,
oldest first; for the selected one its kind, statement and every source quote inside its turn, and
for a revision what changed against the kept revision (a word diff of the statement, the change of
applicability). Keys act on the list only (no text field here), and no letter writes (issue #20: a
person may be typing here): Enter keeps the highlighted item and moves on, ctrl+k keeps every item
shown and Delete (or ctrl+d) forgets — each after a confirmation —, j opens the source turn, ctrl+t
switches approval mode (to `auto`, which weakens it, after a confirmation). A keep made in another
process (`memory review keep` in a shell) shows within `OUTSIDE_POLL_SECONDS`.

Every manager call runs in a thread worker; a result is applied only while it answers the latest
request (a generation number). Store text is shown as plain `Text`, never markup."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import partial

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, OptionList, Static

from autopatch_tui.core.claims.store import item_doubt
from autopatch_tui.core.errors import AutopatchError, MemoryNotFoundError
from autopatch_tui.core.instructions.promote import forget_note
from autopatch_tui.core.memory.models import ItemDetail
from autopatch_tui.core.memory.review import ReviewEntry
from autopatch_tui.core.memory.review_service import KeptRevision
from autopatch_tui.core.memory.word_diff import paths_change, word_diff
from autopatch_tui.core.terminal_text import one_line as safe_line
from autopatch_tui.core.terminal_text import printable
from autopatch_tui.tui.screens import memory_notices as notices
from autopatch_tui.tui.screens.confirm import ConfirmScreen
from autopatch_tui.tui.screens.memory_list_view import MemoryListView
from autopatch_tui.tui.screens.memory_list import KIND_SHORT, one_line
from autopatch_tui.tui.services import Services
from autopatch_tui.tui.widgets.memory_item_detail import Provenance, SourceList, diff_text, load_provenance
from autopatch_tui.tui.widgets.responsive_table import Col, ResponsiveTable

log = logging.getLogger(__name__)

SHOWN = 200  # items listed at once (the oldest); keep all keeps exactly those shown
OUTSIDE_POLL_SECONDS = 2.0  # how often a shown inbox looks for keeps made by another process (one lstat)
COLUMNS = (Col("kind", "Kind", 10, drop=1), Col("change", "", 7, drop=2), Col("statement", "Statement", 20, flex=1))


@dataclass(frozen=True)
class InboxDetail:
    entry: ReviewEntry
    detail: ItemDetail
    provenance: list[Provenance]
    base: KeptRevision | None
    doubt: str = ""  # what the repository contradicts in it (`claims`), "" when nothing


def approval_text(mode: str, total: int) -> Text:
    t = Text()
    t.append("Approval: ", style="dim")
    t.append(mode, style="bold")
    if mode == "review":
        t.append(" — nothing here is recalled until kept (ctrl+t: switch to auto, asks first)", style="dim")
    else:
        t.append(" — new items are recalled at once (ctrl+t: switch to review)", style="dim")
    if total > SHOWN:
        t.append(f"\nShowing the oldest {SHOWN} of {total}.", style="dim")
    return t


class InboxView(MemoryListView):
    """The "To review" view; posts `Counted` whenever it knows how many items await review."""

    TABLE_ID = "ib-items"
    LOAD_GROUP = "ib-list"

    COMPONENT_CLASSES = {"inbox--deleted", "inbox--added"}
    # No letter writes anything here (issue #20): a word typed on this view keeps, forgets and
    # switches nothing. Enter is the list's own key (priority over the table's select), only while
    # the list has focus; a click on a row never keeps.
    BINDINGS = [
        Binding("enter", "keep", "Keep", id="inbox.keep", priority=True,
                tooltip="keep the highlighted item and move to the next"),
        Binding("ctrl+k", "keep_all", "Keep all", id="inbox.keep_all", tooltip="keep every item shown (asks first)"),
        Binding("delete,ctrl+d", "forget", "Forget", id="inbox.forget", tooltip="forget this item (asks first)"),
        Binding("j", "open_source", "Source turn", id="inbox.source", tooltip="open the turn this item came from"),
        Binding("ctrl+t", "toggle_approval", "Approval", id="inbox.approval",
                tooltip="switch approval mode: to review at once; to auto (new items recalled at once) after a "
                        "confirmation"),
    ]

    class Counted(Message):
        def __init__(self, count: int) -> None:
            super().__init__()
            self.count = count

    def __init__(self, services: Services, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.services = services
        self.entries: list[ReviewEntry] = []
        self.total = 0
        self.current: InboxDetail | None = None
        self._gen = 0
        self._detail_gen = 0

    def compose(self) -> ComposeResult:
        yield Static(Text(""), id="ib-mode", markup=False)
        with Horizontal(id="ib-body"):
            yield ResponsiveTable(id="ib-items", cursor_type="row", zebra_stripes=True)
            with VerticalScroll(id="ib-detail"):
                yield Static(Text(""), id="ib-fields", markup=False)
                yield Static(Text(""), id="ib-change", markup=False)
                yield Static(Text("Where it came from"), id="ib-sources-title", classes="mb-section", markup=False)
                yield SourceList(id="ib-sources")

    def on_mount(self) -> None:
        self.table.set_spec(COLUMNS)
        self.set_interval(OUTSIDE_POLL_SECONDS, self._look_outside)

    def _look_outside(self) -> None:
        """While shown: a keep made by another process announces itself as a Memory change (the
        browser then reloads this view; the status bar follows)."""
        if self.display and self.screen.is_current:
            self._run(self.services.manager.review.notice_outside_keeps, "ib-outside")

    # --- loading --------------------------------------------------------------------------------
    def _load(self, gen: int) -> None:
        review = self.services.manager.review
        try:
            review.remember_marks()  # what is read now is on screen: a later change is news
            entries = review.items(limit=SHOWN)
            total = review.count() if len(entries) >= SHOWN else len(entries)
        except AutopatchError as exc:  # unreadable marks: say so, keep nothing
            self.app.call_from_thread(self._show_problem, gen, str(exc))
            return
        self.app.call_from_thread(self._show, gen, entries, total, review.approval)

    def _show_problem(self, gen: int, problem: str) -> None:
        if gen != self._gen:
            return
        self.entries = []
        self.table.clear()
        self.query_one("#ib-mode", Static).update(Text(problem))
        self._placeholder("Review marks cannot be read; nothing can be kept until the file is moved away.")

    def _show(self, gen: int, entries: list[ReviewEntry], total: int, approval: str) -> None:
        if gen != self._gen:
            return
        previous = self.current.entry.summary.id if self.current is not None else None
        old_index = self.table.cursor_row if self.entries else 0
        self.entries, self.total = entries, total
        self.query_one("#ib-mode", Static).update(approval_text(approval, total))
        table = self.table
        table.clear()
        for e in entries:
            table.add_row(Text(KIND_SHORT.get(e.summary.kind, e.summary.kind)),
                          Text("revised" if e.change == "revised" else "new", style="bold" if e.change == "revised"
                               else ""), one_line(safe_line(e.summary.statement)), key=e.summary.id)
        self.post_message(self.Counted(total))
        if not entries:
            self.current = None
            self._placeholder("Nothing to review. Items Memory forms from your conversations appear here, "
                              "oldest first, until you keep or forget them.")
            self.app.refresh_bindings()
            return
        ids = [e.summary.id for e in entries]
        index = ids.index(previous) if previous in ids else min(old_index, len(ids) - 1)
        table.move_cursor(row=index, animate=False)
        self._select(index)

    def _placeholder(self, text: str) -> None:
        self.query_one("#ib-fields", Static).update(Text(text, style="italic"))
        self.query_one("#ib-change", Static).update(Text(""))
        self.query_one("#ib-sources-title").display = False
        self.query_one("#ib-sources", SourceList).clear_options()
        self.query_one("#ib-sources").display = False

    @on(DataTable.RowHighlighted, "#ib-items")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.cursor_row != event.data_table.cursor_row or not self.entries:
            return
        self._select(event.cursor_row)

    def _select(self, index: int) -> None:
        if not 0 <= index < len(self.entries):
            return
        entry = self.entries[index]
        if self.current is not None and self.current.entry == entry:
            return
        self._detail_gen += 1
        self._run(partial(self._load_detail, self._detail_gen, entry), "ib-detail")

    def _load_detail(self, gen: int, entry: ReviewEntry) -> None:
        mgr = self.services.manager
        try:
            detail = mgr.show_item(entry.summary.id)
            base = mgr.review.base_of(entry.summary.id) if entry.change == "revised" else None
            doubt = item_doubt(mgr.store.read_conn(), mgr.repo, entry.summary.id)
        except MemoryNotFoundError:
            return  # gone meanwhile: the reload that follows drops it
        self.app.call_from_thread(self._show_detail, gen, InboxDetail(entry, detail, load_provenance(
            mgr, detail.sources), base, doubt))

    def _show_detail(self, gen: int, shown: InboxDetail) -> None:
        if gen != self._detail_gen:
            return
        self.current = shown
        d, e = shown.detail, shown.entry
        fields = Text()
        # store text (IDs too) is never raw on the terminal
        fields.append(f"{KIND_SHORT.get(d.kind, d.kind)} · {e.change} · r{e.revision} · {safe_line(d.id)}\n",
                      style="dim")
        fields.append(printable(d.statement), style="bold")
        fields.append(f"\n{safe_line(d.subject)}", style="dim")
        fields.append(" · " + (safe_line(", ".join(d.applies_to_paths)) if d.applies_to_paths else "whole project"),
                      style="dim")
        fields.append(f" · {d.strength}, {d.recall_mode}", style="dim")
        if shown.doubt:
            fields.append(f"\nthe repository disagrees: {safe_line(shown.doubt)}", style="bold")
        self.query_one("#ib-fields", Static).update(fields)
        self.query_one("#ib-change", Static).update(self._change_text(shown))
        sources = self.query_one("#ib-sources", SourceList)
        sources.clear_options()
        sources.show_provenance(shown.provenance)
        self.query_one("#ib-sources-title", Static).update(Text(
            "Where it came from (j opens the turn)" if shown.provenance else "Where it came from: no source "
            "recorded"))
        for wid in ("#ib-sources-title", "#ib-sources"):
            self.query_one(wid).display = True
        self.app.refresh_bindings()

    def _change_text(self, shown: InboxDetail) -> Text:
        base = shown.base
        if base is None:
            return Text("")
        deleted = self.get_component_rich_style("inbox--deleted")
        added = self.get_component_rich_style("inbox--added")
        t = Text()
        which = f"r{base.revision}" if base.summary.id == shown.detail.id else \
            f"{safe_line(base.summary.id)} r{base.revision}"
        t.append(f"\nChanged since the {'kept' if base.was_kept else 'earlier (never kept)'} revision {which}:\n",
                 style="dim")
        t.append_text(diff_text(word_diff(printable(base.summary.statement), printable(shown.detail.statement)),
                                deleted, added))
        change = paths_change(base.summary.applies_to_paths, shown.detail.applies_to_paths)
        if change.changed:
            t.append("\nApplies to: ", style="dim")
            for p in change.removed or (("whole project",) if not base.summary.applies_to_paths else ()):
                t.append(safe_line(p), style=deleted)
                t.append(" ")
            for p in change.added or (("whole project",) if not shown.detail.applies_to_paths else ()):
                t.append(safe_line(p), style=added)
                t.append(" ")
        return t

    # --- actions --------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "keep":  # Enter: the list's key; elsewhere (the sources list) Enter is theirs
            if not self.table.has_focus:
                return False
            return True if self._highlighted_entry() is not None else None
        if action in ("forget", "open_source"):
            return True if self.current is not None and self.entries else None
        if action == "keep_all":
            return True if self.entries else None
        return True

    def _highlighted_entry(self) -> ReviewEntry | None:
        row = self.table.cursor_row
        return self.entries[row] if self.entries and 0 <= row < len(self.entries) else None

    def action_keep(self) -> None:
        entry = self._highlighted_entry()  # the row shown, even before its detail has loaded
        if entry is None:
            return
        item, revision = entry.summary.id, entry.revision

        def work() -> None:
            try:
                self.services.manager.review.keep([item], revisions={item: revision})
            except AutopatchError as exc:
                self.app.call_from_thread(self.app.notify, str(exc), severity="warning", markup=False)
            self.app.call_from_thread(self.reload)

        self._drop_locally(item)
        self._run(work, "ib-write")

    def _drop_locally(self, item: str) -> None:
        """Move on at once (the keep is written in the background; a reload follows)."""
        ids = [e.summary.id for e in self.entries]
        if item not in ids:
            return
        index = ids.index(item)
        self.entries.pop(index)
        self.table.remove_row(item)
        self.total = max(0, self.total - 1)
        self.post_message(self.Counted(self.total))
        self.current = None
        if self.entries:
            index = min(index, len(self.entries) - 1)
            self.table.move_cursor(row=index, animate=False)
            self._select(index)
        else:
            self._placeholder("Nothing to review.")

    def action_keep_all(self) -> None:
        if not self.entries:
            return
        shown = [(e.summary.id, e.revision) for e in self.entries]
        more = f" (the oldest {len(shown)} of {self.total})" if self.total > len(shown) else ""
        body = (f"Keep all {len(shown)} item{'s' if len(shown) != 1 else ''} shown{more}? Each is marked as "
                "reviewed; in approval mode review they are recalled from now on. Forget stays possible later.")
        self.app.push_screen(ConfirmScreen("Keep all items?", body, "Keep all"),
                             callback=partial(self._keep_all_answer, shown))

    def _keep_all_answer(self, shown: list[tuple[str, int]], yes: bool | None) -> None:
        if not yes:
            return

        def work() -> None:
            kept = self.services.manager.review.keep_all(shown=shown)
            self.app.call_from_thread(self.app.notify, f"Kept {len(kept)} item{'s' if len(kept) != 1 else ''}.",
                                      markup=False)
            self.app.call_from_thread(self.reload)

        self._run(work, "ib-write")

    def action_forget(self) -> None:
        shown = self.current
        if shown is None:
            return
        self.app.push_screen(ConfirmScreen("Forget this Memory item?", notices.forget_body(shown.detail), "Forget"),
                             callback=partial(self._forget_answer, shown.detail.id))

    def _forget_answer(self, item: str, yes: bool | None) -> None:
        if not yes:
            return

        def work() -> None:
            logical = self.services.manager.forget(item)
            note = forget_note(self.services.manager.repo, logical)
            self.app.call_from_thread(self.app.notify, f"Forgot {safe_line(logical)}. The raw turns it came from "
                                      "are kept." + (" " + note if note else ""),
                                      markup=False)
            self.app.call_from_thread(self.reload)

        self._drop_locally(item)
        self._run(work, "ib-write")

    def action_open_source(self) -> None:
        shown = self.current
        if shown is None:
            return
        sources = self.query_one("#ib-sources", SourceList)
        index = sources.highlighted if sources.highlighted is not None else 0
        found = [p for p in shown.provenance if p.turn is not None]
        chosen = shown.provenance[index] if index < len(shown.provenance) else None
        if chosen is None or chosen.turn is None:
            chosen = found[0] if found else None
        if chosen is None:
            self.app.notify("The source turn of this item no longer exists.", severity="warning")
            return
        from autopatch_tui.tui.screens.memory_views import open_turn_in_history

        self.app.call_later(open_turn_in_history, self.app, chosen.source.turn_id)

    @on(DataTable.RowSelected, "#ib-items")
    def _row_chosen(self) -> None:  # a click on the highlighted row (Enter keeps: see BINDINGS)
        self.action_open_source()

    @on(OptionList.OptionSelected, "#ib-sources")
    def _source_chosen(self) -> None:
        self.action_open_source()

    def action_toggle_approval(self) -> None:
        """To `review` at once (it only holds more back); to `auto` — every new item recalled before
        anyone read it, in every request from now on — after a confirmation (No has the focus)."""
        if self.services.manager.review.approval == "auto":
            self._switch_approval("review")
            return
        body = ("New items will be recalled at once, before you have kept them — in the chat and in repairs, "
                "from the next request on. config.toml is updated. Items still wait here for review.")
        self.app.push_screen(ConfirmScreen("Turn approval off?", body, "Switch to auto"),
                             callback=self._approval_answer)

    def _approval_answer(self, yes: bool | None) -> None:
        if yes:
            self._switch_approval("auto")

    def _switch_approval(self, mode: str) -> None:
        review = self.services.manager.review

        def work() -> None:
            try:
                env_wins = review.set_approval(mode)
            except (AutopatchError, OSError) as exc:
                self.app.call_from_thread(self.app.notify, f"Approval not switched: {exc}", severity="error",
                                          markup=False)
                return
            text = (f"Approval: {mode}. " + ("An item waiting here is not recalled until you keep it."
                                             if mode == "review" else "New items are recalled at once."))
            if env_wins:
                text += " AUTOPATCH_MEMORY_APPROVAL is set in the environment and wins at the next start."
            self.app.call_from_thread(self.app.notify, text, markup=False)
            self.app.call_from_thread(self.reload)

        self._run(work, "ib-write")
