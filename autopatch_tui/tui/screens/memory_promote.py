"""The Memory browser's "promote to AGENTS.md": space marks items in the list (● before the subject),
p promotes the marked items (or the highlighted one). The plan (the diff) is made in a thread worker
and shown in `PromoteDialog`; only its Write writes, again in a worker, and only while the items
and the file still give the diff that was shown (`core.instructions.promote.write_confirmed`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.text import Text

from autopatch_tui.core.errors import AutopatchError
from autopatch_tui.core.instructions.promote import PromotePlan, PromoteResult, plan_promotion, write_confirmed
from autopatch_tui.core.instructions.section import visible
from autopatch_tui.tui.screens.memory_list import Row, one_line
from autopatch_tui.tui.screens.promote_dialog import PromoteDialog

if TYPE_CHECKING:
    from autopatch_tui.tui.screens.memory_browser import MemoryBrowserScreen

MARK = "● "


class PromoteFlow:
    def __init__(self, screen: MemoryBrowserScreen) -> None:
        self.screen = screen
        self.marked: list[str] = []  # logical IDs, in the order they were marked

    def subject_cell(self, row: Row) -> Text:
        return one_line((MARK if row.id in self.marked else "") + row.subject)

    def show_marks(self, rows: list[Row]) -> None:
        """Put the marks on the rows just listed (a reload keeps the marks of the items still shown)."""
        table = self.screen.table
        for row in rows:
            if row.id in self.marked:
                table.set_cell(row.id, "subject", self.subject_cell(row))

    def summary(self) -> str:
        n = len(self.marked)
        return f" · {n} marked (p shows the diff that promotes them)" if n else ""

    def toggle(self, row: Row) -> None:
        if row.id in self.marked:
            self.marked.remove(row.id)
        else:
            self.marked.append(row.id)
        self.screen.table.set_cell(row.id, "subject", self.subject_cell(row))

    def start(self, highlighted: str | None) -> None:
        """Plan the promotion of the marked items (else the highlighted one) and show its diff."""
        ids = list(self.marked) or ([highlighted] if highlighted else [])
        if not ids:
            self.screen.notify("Highlight an item (or mark some with space) to promote it.", severity="warning")
            return
        manager = self.screen.services.manager
        self._in_worker(lambda: plan_promotion(manager, ids), self._show, "Not promoted", "mb-promote")

    def _in_worker(self, fn: Callable[[], object], done: Callable[[Any], None], title: str, group: str) -> None:
        """Run `fn` in a thread worker; its result goes to `done` on the UI thread, a typed refusal to a
        warning (anything else to the App's one worker-error handler)."""
        screen = self.screen

        def work() -> None:
            try:
                result = fn()
            except AutopatchError as exc:
                screen.app.call_from_thread(screen.notify, visible(str(exc)), title=title, severity="warning",
                                            markup=False)
                return
            screen.app.call_from_thread(done, result)

        screen.run_worker(work, thread=True, group=group, exit_on_error=False)

    def _show(self, plan: PromotePlan) -> None:
        if not plan.changed:
            self.screen.notify(visible(f"{plan.shown} already holds these items as they are; nothing to write."),
                               markup=False)
            return
        self.screen.app.push_screen(PromoteDialog(plan), callback=lambda yes: self._answer(plan, yes))

    def _answer(self, plan: PromotePlan, yes: bool | None) -> None:
        if not yes:
            return
        manager = self.screen.services.manager
        self._in_worker(lambda: write_confirmed(manager, plan), self._written, "Not written", "mb-write")

    def _written(self, result: PromoteResult) -> None:
        plan = result.plan
        n = len(plan.promoted)
        kept = f" Kept {len(result.kept)} that awaited review: the diff was their review." if result.kept else ""
        problem = f" {result.keep_problem}" if result.keep_problem else ""
        self.screen.notify(visible(f"Promoted {n} item{'s' if n != 1 else ''} to {plan.shown}.{kept}{problem}"),
                           title="Promote", markup=False, severity="warning" if problem else "information")
        marked = [r for r in self.screen.rows if r.id in self.marked]
        self.marked.clear()
        for row in marked:
            self.screen.table.set_cell(row.id, "subject", self.subject_cell(row))
        self.screen.refresh_summary()
