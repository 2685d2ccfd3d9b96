"""The chat screen's part of Memory the user steers (issue 31), a mixin of `ChatScreen` (which
provides `services`, `log_view`, `run_worker`, `app`):

- `/remember TEXT`: the line shows as the user's, the request runs in a thread worker
  (`steering.remember`), and its receipt comes under it: what was stored, and one "not remembered"
  line per refused candidate — Enter on such a line keeps it anyway (`steering.keep_refused_key`);
- an ordinary turn's gate refusals come as the same keepable lines (`refusal_lines`);
- "Memory used: N · F4" under an answer; Enter expands it (`memory_used.describe`, in a worker).

Every manager call runs in a thread worker; widgets only post messages."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from textual.widget import Widget

from autopatch_tui.core.errors import AutopatchError
from autopatch_tui.tui.widgets.steer_notes import (
    MemoryUsedNote,
    ReceiptNote,
    RefusedNote,
    receipt_text,
)

if TYPE_CHECKING:
    from autopatch_tui.core.memory.memory_used import UsedItem
    from autopatch_tui.core.memory.refused_store import Refused
    from autopatch_tui.core.memory.steering import Receipt
    from autopatch_tui.core.memory.turn_memory import MemoryNote


def split_refusals(notes: list[MemoryNote], entries: list[Refused]) -> tuple[list[MemoryNote], list[Refused]]:
    """A turn's notes without the gate refusals that a rescue entry stands for (those become
    keepable lines), and the entries. A refusal with no entry (the file could not be written)
    stays a plain note."""
    left: dict[str, int] = {}
    for e in entries:
        left[e.words] = left.get(e.words, 0) + 1
    kept: list[MemoryNote] = []
    for n in notes:
        if n.outcome == "not_remembered" and left.get(n.reason, 0) > 0:
            taken = min(n.count, left[n.reason])
            left[n.reason] -= taken
            if n.count > taken:
                from dataclasses import replace

                kept.append(replace(n, count=n.count - taken))
            continue
        kept.append(n)
    return kept, entries


class SteeringChat:
    # --- /remember ----------------------------------------------------------------------
    async def remember(self, text: str) -> None:
        await self.log_view.add_user(f"/remember {text}")  # type: ignore[attr-defined]
        self.set_busy("remembering…")  # type: ignore[attr-defined]
        self.run_worker(partial(self._remember_work, text), thread=True, group="remember",  # type: ignore[attr-defined]
                        exit_on_error=False)

    def _remember_work(self, text: str) -> None:
        from autopatch_tui.core.memory import steering

        mgr = self.services.manager  # type: ignore[attr-defined]
        try:
            receipt = steering.remember(mgr, text)
        except AutopatchError as exc:
            self.app.call_from_thread(self._remember_failed, str(exc))  # type: ignore[attr-defined]
            return
        entries = steering.refused_of_turn(mgr, receipt.turn_id)
        self.app.call_from_thread(self._show_receipt, receipt, entries)  # type: ignore[attr-defined]

    async def _remember_failed(self, message: str) -> None:
        self.set_busy("")  # type: ignore[attr-defined]
        await self.log_view.add_note(f"not remembered · {message}", level="warning", reveal=True)  # type: ignore[attr-defined]

    async def _show_receipt(self, receipt: Receipt, entries: list[Refused]) -> None:
        self.set_busy("")  # type: ignore[attr-defined]
        log = self.log_view  # type: ignore[attr-defined]
        if receipt.remembered or receipt.waiting:
            await log.mount(ReceiptNote(receipt_text(receipt.remembered, receipt.waiting)))
        shown = {e.words for e in entries}
        for e in entries:
            await log.mount(RefusedNote(e.key, e.words, str(e.candidate.get("statement", ""))))
        for r in receipt.refused:  # a refusal the rescue file does not hold (it could not be written)
            if r.words not in shown:
                await log.mount(RefusedNote(None, r.words))
        if not receipt.remembered and not receipt.refused and not receipt.waiting:
            await log.mount(RefusedNote(None, "nothing in it reads as a preference or a decision"))
        log.follow()

    # --- an ordinary turn's refusals -----------------------------------------------------
    async def refusal_lines(self, entries: list[Refused], after: Widget) -> None:
        anchor = after
        for e in entries:
            note = RefusedNote(e.key, e.words, str(e.candidate.get("statement", "")))
            await self.log_view.mount(note, after=anchor)  # type: ignore[attr-defined]
            anchor = note

    def on_refused_note_keep(self, message: RefusedNote.Keep) -> None:
        note = message.note
        note.show_outcome("keeping…")

        def work() -> None:
            from autopatch_tui.core.memory import steering

            try:
                item = steering.keep_refused_key(self.services.manager, note.key or "")  # type: ignore[attr-defined]
            except AutopatchError as exc:
                self.app.call_from_thread(note.show_outcome, f"not kept: {exc}")  # type: ignore[attr-defined]
                return
            self.app.call_from_thread(note.show_outcome, f"kept anyway · {item.id} (F4 to review)")  # type: ignore[attr-defined]

        self.run_worker(work, thread=True, group="keep-refused", exit_on_error=False)  # type: ignore[attr-defined]

    # --- Memory used -------------------------------------------------------------------
    _used_records: dict = {}  # turn ID -> [UsedItem] of the turns restored at the start (read in a worker)

    def _read_used(self, turns: list) -> dict:
        """(In a worker) the Memory used records of these turns; a file that cannot be read: none."""
        from autopatch_tui.core.memory.memory_used import for_turns

        try:
            return for_turns(self.services.manager.paths, [t.id for t in turns]) if turns else {}  # type: ignore[attr-defined]
        except (OSError, AutopatchError):
            return {}

    async def memory_used_line(self, turn_id: str, items: list[UsedItem], after: Widget) -> None:
        if items and after.is_attached:
            await self.log_view.mount(MemoryUsedNote(turn_id, items), after=after)  # type: ignore[attr-defined]

    def on_memory_used_note_expand(self, message: MemoryUsedNote.Expand) -> None:
        note = message.note

        def work() -> None:
            from autopatch_tui.core.memory.memory_used import describe
            from autopatch_tui.core.memory.sqlite import read_txn

            mgr = self.services.manager  # type: ignore[attr-defined]
            try:
                conn = mgr.store.read_conn()
                with read_txn(conn):
                    details = describe(conn, note.items)
            except AutopatchError:
                return
            self.app.call_from_thread(note.show_details, details)  # type: ignore[attr-defined]

        self.run_worker(work, thread=True, group="memory-used", exit_on_error=False)  # type: ignore[attr-defined]
