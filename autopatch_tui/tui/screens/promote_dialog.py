"""The Memory browser's "promote to AGENTS.md" dialog: a confirmation (`ConfirmBase`) whose body is the unified
diff of the change, written only on confirm.

The diff gets the room (the dialog fills a small terminal; its note is two lines, its buttons one
row) and the focus, so the arrow keys, PgUp/PgDn and Home/End scroll it at once. Write is offered
only once the whole diff has been on screen — it fits, or it was scrolled to its end: until then
the Write button is disabled, ctrl+s does nothing and the note says how to get there. Escape
cancels and no letter is bound, so a stray Enter or letter never writes. The diff is plain `Text`
with every control character escaped and long lines folded (it quotes the repository's file and
the user's own words: none of it may be cut off unseen)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Button, Static

from autopatch_tui.core.instructions.promote import PromotePlan
from autopatch_tui.core.instructions.section import visible
from autopatch_tui.tui.screens.confirm import ConfirmBase

DIFF_STYLES = (("+++", "bold"), ("---", "bold"), ("@@", "cyan"), ("+", "green"), ("-", "red"))
NOTE_SEEN = ("Write replaces the file in one step, only if the items and the file still give this diff; text "
             "outside the marked section is kept.")
NOTE_UNSEEN = "Scroll to the end of the diff (↓, PgDn or End) to enable Write. Escape cancels; nothing is written."


def diff_text(diff: str) -> Text:
    """The diff as styled plain text (never markup), control characters escaped."""
    text = Text(overflow="fold")
    for n, line in enumerate(visible(diff).splitlines()):
        style = next((s for prefix, s in DIFF_STYLES if line.startswith(prefix)), "")
        text.append(("\n" if n else "") + line, style=style)  # no empty last row to scroll to
    return text


def title_text(plan: PromotePlan) -> str:
    n = len(plan.promoted)
    what = f"{n} Memory item{'s' if n != 1 else ''}"
    gone = f"; {len(plan.removed)} bullet(s) of items no longer active go" if plan.removed else ""
    kept = f"; Write also keeps {len(plan.new_items)} awaiting review" if plan.new_items else ""
    return visible(f"Promote {what} to {plan.shown}{gone}{kept}")


class PromoteDiff(VerticalScroll, can_focus=True):
    """The diff: focused first, scrolled by the keys."""


class PromoteDialog(ConfirmBase):
    """Dismisses with True (Write / ctrl+s, once the whole diff was shown) or False (Cancel /
    Escape); no letter answers it."""

    CONFIRM_KEY = "ctrl+s"
    FIRST_FOCUS = "#promote-diff"
    BINDINGS = [
        Binding("ctrl+s", "answer(True)", "Write", id="promote.write"),
        Binding("escape", "answer(False)", "Close", id="promote.cancel"),
    ]

    def __init__(self, plan: PromotePlan) -> None:
        super().__init__(title_text(plan), "", visible(f"Write {plan.shown}"), cancel_label="Cancel (esc)",
                         variant="primary", name="promote")
        self.plan = plan
        self.seen = False  # the whole diff has been on screen

    def compose_body(self) -> ComposeResult:
        with PromoteDiff(id="promote-diff"):
            yield Static(diff_text(self.plan.diff), markup=False, id="promote-diff-text")
        yield Static(Text(NOTE_UNSEEN, style="dim"), id="promote-note", markup=False)

    def on_mount(self) -> None:
        self.query_one("#yes", Button).disabled = True
        diff = self.query_one(PromoteDiff)
        self.watch(diff, "scroll_y", lambda _: self._check_seen(), init=False)
        self.call_after_refresh(self._check_seen)

    def on_resize(self) -> None:
        self.call_after_refresh(self._check_seen)

    def _check_seen(self) -> None:
        """Offer Write once the end of the diff has been on screen (it fits, or was scrolled to)."""
        if self.seen:
            return
        diff = self.query_one(PromoteDiff)
        if diff.scroll_y < diff.max_scroll_y or not diff.size.height:
            return
        self.seen = True
        self.query_one("#yes", Button).disabled = False
        self.query_one("#promote-note", Static).update(Text(NOTE_SEEN, style="dim"))
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "answer" and parameters == (True,) and not self.seen:
            return None  # shown, disabled: the diff must be seen first
        return True

    def action_answer(self, answer: bool) -> None:
        if answer and not self.seen:
            return
        super().action_answer(answer)
