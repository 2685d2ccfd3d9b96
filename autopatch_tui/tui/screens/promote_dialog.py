"""The Memory browser's "promote to AGENTS.md" dialog: a confirmation (`ConfirmBase`) whose body is the unified
diff of the change, written only on confirm. Cancel has the focus first and Escape cancels, so a
stray Enter or letter never writes (no letter is bound); writing takes the Write button or ctrl+s
(a key no text field types). The diff is plain `Text` with
every control character escaped: it quotes the repository's file and the user's own words."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from autopatch_tui.core.instructions.promote import PromotePlan
from autopatch_tui.core.instructions.section import visible
from autopatch_tui.tui.screens.confirm import ConfirmBase

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


class PromoteDialog(ConfirmBase):
    """Dismisses with True (Write / ctrl+s) or False (Cancel / Escape); no letter answers it."""

    CONFIRM_KEY = "ctrl+s"
    BINDINGS = [
        Binding("ctrl+s", "answer(True)", "Write", id="promote.write"),
        Binding("escape", "answer(False)", "Close", id="promote.cancel"),
    ]

    def __init__(self, plan: PromotePlan) -> None:
        super().__init__(title_text(plan), "", visible(f"Write {plan.shown}"), cancel_label="Cancel (esc)",
                         variant="primary", name="promote")
        self.plan = plan

    def compose_body(self) -> ComposeResult:
        with VerticalScroll(id="promote-diff"):
            yield Static(diff_text(self.plan.diff), markup=False)
        yield Static(Text("Nothing is written until you choose Write, and then only if the items and the file "
                          "still give this diff. The file is replaced in one step; text outside the marked "
                          "section, and lines in it that promote did not write, are kept as they are.",
                          style="dim"),
                     id="promote-note", markup=False)
