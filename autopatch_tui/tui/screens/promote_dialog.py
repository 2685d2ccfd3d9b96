"""The Memory browser's "promote to AGENTS.md" dialog: the unified diff of the change, written only on
confirm. Cancel has the focus first and Escape cancels, so a stray Enter or letter never writes;
writing takes the Write button or ctrl+s (a key no text field types). The diff is plain `Text` with
every control character escaped: it quotes the repository's file and the user's own words."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Static

from autopatch_tui.core.instructions.promote import PromotePlan
from autopatch_tui.core.instructions.section import visible
from autopatch_tui.tui.resources import style
from autopatch_tui.tui.screens.base import AppModalScreen

DIFF_STYLES = (("+++", "bold"), ("---", "bold"), ("@@", "cyan"), ("+", "green"), ("-", "red"))


def diff_text(diff: str) -> Text:
    """The diff as styled plain text (never markup), control characters escaped."""
    text = Text(no_wrap=True, overflow="ellipsis")
    for line in visible(diff).splitlines():
        style = next((s for prefix, s in DIFF_STYLES if line.startswith(prefix)), "")
        text.append(line + "\n", style=style)
    return text


def title_text(plan: PromotePlan) -> str:
    n = len(plan.promoted)
    what = f"{n} Memory item{'s' if n != 1 else ''}"
    gone = f"; {len(plan.removed)} bullet(s) of items no longer active go" if plan.removed else ""
    return visible(f"Promote {what} to {plan.shown}{gone}")


class PromoteDialog(AppModalScreen):
    """Dismisses with True (Write / ctrl+s) or False (Cancel / Escape)."""

    CSS_PATH = style("dialogs.tcss")
    BINDINGS = [
        Binding("ctrl+s", "answer(True)", "Write", id="promote.write"),
        Binding("escape", "answer(False)", "Close", id="promote.cancel"),
    ]

    def __init__(self, plan: PromotePlan) -> None:
        super().__init__(name="promote", classes="promote")
        self.plan = plan

    def compose(self) -> ComposeResult:
        plan = self.plan
        with Vertical(id="dialog"):
            yield Static(Text(title_text(plan)), id="title", markup=False)
            with VerticalScroll(id="promote-diff"):
                yield Static(diff_text(plan.diff), markup=False)
            yield Static(Text("Nothing is written until you choose Write. The file is replaced in one step; text "
                              "outside the marked section is kept as it is.", style="dim"),
                         id="promote-note", markup=False)
            with Horizontal(classes="buttons"):
                yield Button(Text("Cancel (esc)"), id="cancel", variant="default")
                yield Button(Text(visible(f"Write {plan.shown} (ctrl+s)")), id="write", variant="primary")

    def on_mount(self) -> None:
        self.query_one("#cancel", Button).focus()

    @on(Button.Pressed, "#write")
    def _write(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(True)

    @on(Button.Pressed, "#cancel")
    def _cancel(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(False)

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)
