"""The Audit view of the Memory browser (`memory audit`, contracts §8): the findings — duplicates,
conflicts, stale paths, claims the repository disagrees with — in a list; the selected finding's items side by side below it, one card
each, with forget on any of them. Enter (or Tab) moves from the list to the cards, ←/→ between
cards, Delete (or ctrl+d) forgets the focused card's item after the usual confirmation (no letter: a word
typed here forgets nothing), Escape returns to the list.

The audit and every item read run in thread workers; store text is plain `Text`, never markup."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import DataTable, Static

from autopatch_tui.core.errors import AutopatchError, MemoryNotFoundError
from autopatch_tui.core.instructions.promote import forget_note
from autopatch_tui.core.memory.audit import AuditReport
from autopatch_tui.core.memory.models import ItemDetail
from autopatch_tui.core.terminal_text import one_line as safe_line
from autopatch_tui.core.terminal_text import printable
from autopatch_tui.tui.screens import memory_notices as notices
from autopatch_tui.tui.screens.confirm import ConfirmScreen
from autopatch_tui.tui.screens.memory_list_view import MemoryListView
from autopatch_tui.tui.screens.memory_list import KIND_SHORT, one_line
from autopatch_tui.tui.services import Services
from autopatch_tui.tui.widgets.responsive_table import Col, ResponsiveTable

COLUMNS = (Col("type", "Finding", 10), Col("items", "Items", 5, drop=1), Col("why", "Why", 20, flex=1))


@dataclass(frozen=True)
class Row:
    key: str
    type: str  # duplicate | conflict | stale | disagrees | readers
    ids: tuple[str, ...]
    why: str
    stale: tuple[str, ...] = ()


def finding_rows(report: AuditReport) -> list[Row]:
    rows = [Row(f"dup-{n}", "duplicate", tuple(f.ids), f.why) for n, f in enumerate(report.duplicates)]
    rows += [Row(f"con-{n}", "conflict", tuple(f.ids), f.why) for n, f in enumerate(report.conflicts)]
    rows += [Row(f"sta-{n}", "stale", (s.id,), "no file matches " + ", ".join(s.paths), tuple(s.paths))
             for n, s in enumerate(report.stale_paths)]
    rows += [Row(f"cla-{n}", "disagrees", (c.id,), f"says {c.claim}; {c.evidence}")
             for n, c in enumerate(report.stale_claims)]
    rows += [Row(f"rd-{n}", "readers", (d.id,), "the gate and the model read its source turn differently: "
                 + ", ".join(d.rules)) for n, d in enumerate(report.disagreements)]
    return rows


def readable_why(row: Row) -> str:
    """The why with the items named by their place below (left, right) instead of their long IDs."""
    why = row.why
    if len(row.ids) == 2:
        why = why.replace(row.ids[0], "the left item").replace(row.ids[1], "the right item")
    why = safe_line(why)  # store text (IDs, subjects, paths): never raw on the terminal
    return why


def summary_text(report: AuditReport) -> Text:
    return Text(f"Audit of {report.checked} active item{'s' if report.checked != 1 else ''} (no model): "
                f"{len(report.duplicates)} duplicate group(s), {len(report.conflicts)} conflict(s), "
                f"{len(report.stale_paths)} with stale paths"
                + (f", {len(report.stale_claims)} claim(s) the repository disagrees with" if report.stale_claims else "")
                + (" · the conflict check stopped early: not every conflict is listed" if report.truncated else ""))


def card_text(d: ItemDetail | None, item_id: str, stale: tuple[str, ...]) -> Text:
    t = Text()
    if d is None:
        t.append(f"{safe_line(item_id)}\n", style="dim")
        t.append("This item no longer exists.", style="italic")
        return t
    t.append(f"{KIND_SHORT.get(d.kind, d.kind)} · {safe_line(d.id)}", style="dim")
    if d.status != "active":
        t.append(f" · {d.status}", style="bold")
    t.append("\n")
    t.append(printable(d.statement), style="bold")
    t.append(f"\n\nsubject  {safe_line(d.subject)}\n", style="")
    t.append("paths    ")
    if not d.applies_to_paths:
        t.append("(whole project)")
    for n, p in enumerate(d.applies_to_paths):
        t.append((", " if n else "") + safe_line(p), style="strike" if p in stale else "")
    t.append(f"\nrecall   {d.recall_mode}, {d.strength}, r{d.revision}, {d.updated_at[:10]}")
    return t


class ItemCard(Static, can_focus=True):
    BINDINGS = [Binding("left", "move(-1)", "Previous", id="audit.card_previous", show=False,
                        tooltip="the finding's item to the left"),
                Binding("right", "move(1)", "Next", id="audit.card_next", show=False,
                        tooltip="the finding's item to the right")]

    def __init__(self, item_id: str, detail: ItemDetail | None, stale: tuple[str, ...]) -> None:
        super().__init__(card_text(detail, item_id, stale), markup=False, classes="au-card")
        self.item_id = item_id
        self.detail = detail

    def action_move(self, step: int) -> None:
        cards = list(self.parent.query(ItemCard)) if self.parent is not None else []
        if self in cards:
            cards[(cards.index(self) + step) % len(cards)].focus()


class AuditView(MemoryListView):
    TABLE_ID = "au-findings"
    LOAD_GROUP = "au-run"

    BINDINGS = [
        # not a letter (issue #20): a word typed here forgets nothing
        Binding("delete,ctrl+d", "forget", "Forget", id="audit.forget", tooltip="forget the focused item (asks first)"),
        Binding("escape", "to_list", "Back", id="audit.list", tooltip="from a card to the findings; from the "
                "findings out of the browser"),
    ]

    def __init__(self, services: Services, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.services = services
        self.rows: list[Row] = []
        self._gen = 0
        self._cards_gen = 0
        self._shown: str | None = None

    def compose(self) -> ComposeResult:
        yield Static(Text("Auditing…"), id="au-summary", markup=False)
        yield ResponsiveTable(id="au-findings", cursor_type="row", zebra_stripes=True)
        with VerticalScroll(id="au-cards-scroll", can_focus=False):  # Tab goes to the cards themselves
            yield Horizontal(id="au-cards")

    def on_mount(self) -> None:
        self.table.set_spec(COLUMNS)

    def _load(self, gen: int) -> None:
        try:
            report = self.services.manager.audit()
        except AutopatchError as exc:
            self.app.call_from_thread(self._problem, gen, str(exc))
            return
        self.app.call_from_thread(self._show, gen, report)

    def _problem(self, gen: int, text: str) -> None:
        if gen == self._gen:
            self.query_one("#au-summary", Static).update(Text(text))

    async def _show(self, gen: int, report: AuditReport) -> None:
        if gen != self._gen:
            return
        self.query_one("#au-summary", Static).update(summary_text(report))
        previous = self._shown
        self.rows = finding_rows(report)
        table = self.table
        table.clear()
        for r in self.rows:
            table.add_row(Text(r.type, style="bold" if r.type == "conflict" else ""), Text(str(len(r.ids))),
                          one_line(readable_why(r)), key=r.key)
        if not self.rows:
            self._shown = None
            await self.query_one("#au-cards", Horizontal).remove_children()
            await self.query_one("#au-cards", Horizontal).mount(Static(Text(
                "Nothing found: no duplicates, no conflicts, no stale paths.", style="italic"), markup=False))
            return
        keys = [r.key for r in self.rows]
        index = keys.index(previous) if previous in keys else 0
        table.move_cursor(row=index, animate=False)
        self._select(index, force=True)

    @on(DataTable.RowHighlighted, "#au-findings")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.cursor_row == event.data_table.cursor_row:
            self._select(event.cursor_row)

    def _select(self, index: int, *, force: bool = False) -> None:
        if not 0 <= index < len(self.rows):
            return
        row = self.rows[index]
        if row.key == self._shown and not force:
            return
        self._shown = row.key
        self._cards_gen += 1
        self._run(partial(self._load_cards, self._cards_gen, row), "au-cards")

    def _load_cards(self, gen: int, row: Row) -> None:
        details: list[tuple[str, ItemDetail | None]] = []
        for item_id in row.ids:
            try:
                details.append((item_id, self.services.manager.show_item(item_id)))
            except MemoryNotFoundError:
                details.append((item_id, None))
        self.app.call_from_thread(self._show_cards, gen, row, details)

    async def _show_cards(self, gen: int, row: Row, details: list[tuple[str, ItemDetail | None]]) -> None:
        if gen != self._cards_gen:
            return
        box = self.query_one("#au-cards", Horizontal)
        await box.remove_children()
        await box.mount_all([ItemCard(i, d, row.stale) for i, d in details])
        self.app.refresh_bindings()

    @on(DataTable.RowSelected, "#au-findings")
    def _to_cards(self) -> None:
        cards = list(self.query(ItemCard))
        if cards:
            cards[0].focus()

    def action_to_list(self) -> None:
        """Escape: from a card back to the findings; from the findings, out of the browser."""
        if self.app.focused is self.table:
            self.screen.action_back()  # type: ignore[attr-defined]
        else:
            self.table.focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "forget":
            focused = self.app.focused
            return True if isinstance(focused, ItemCard) and focused.detail is not None \
                and focused.detail.status == "active" else None
        return True

    def action_forget(self) -> None:
        card = self.app.focused
        if not isinstance(card, ItemCard) or card.detail is None or card.detail.status != "active":
            return
        self.app.push_screen(ConfirmScreen("Forget this Memory item?", notices.forget_body(card.detail), "Forget"),
                             callback=partial(self._forget_answer, card.item_id))

    def _forget_answer(self, item: str, yes: bool | None) -> None:
        if not yes:
            return

        def work() -> None:
            logical = self.services.manager.forget(item)
            note = forget_note(self.services.manager.repo, logical)
            self.app.call_from_thread(self.app.notify, f"Forgot {safe_line(logical)}. The raw turns it came from "
                                      "are kept." + (" " + note if note else ""), markup=False)
            self.app.call_from_thread(self.reload)
            self.app.call_from_thread(self.table.focus)

        self._run(work, "au-write")
