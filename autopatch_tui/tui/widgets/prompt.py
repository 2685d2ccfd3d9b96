"""The prompt: Enter sends, ctrl+j inserts a newline; `/command` and `@path` completion (Tab
accepts the highlighted choice, Up/Down move it, Escape closes it); without a completion open,
Up/Down walk this repository's prompt history (at the first / last line), PageUp/PageDown scroll
the chat and ctrl+end follows it again. Tab never moves focus away (text typed after it would go
elsewhere): without a completion it opens one for the word at the cursor, or does nothing.

Work per key is bounded whatever the prompt holds: the completion token is read from at most
`TOKEN_WINDOW` characters before the cursor, never the whole line (a 100 KB line made every key
copy it), and a line longer than `LONG_LINE` characters turns soft wrapping off until the prompt
is cleared (it scrolls sideways instead): Textual re-wraps and re-divides a wrapped line whole on
every edit and every drawn row, 0.1 s per edit at 100 KB against 0.03 s unwrapped."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.message import Message
from textual.widgets import OptionList, TextArea
from textual.widgets.text_area import Selection
from textual.widgets.option_list import Option

from autopatch_tui.tui.prompt_history import PromptHistory
from autopatch_tui.tui.refused_paste import RefusedPaste
from autopatch_tui.tui.typing import TypedText

MENTION = re.compile(r"(?:^|\s)@([^\s@]+)")
MAX_SUGGESTIONS = 12
TOKEN_WINDOW = 256  # characters before the cursor a completion token may span
LONG_LINE = 2000  # a longer line is shown unwrapped (scrolling sideways) until the prompt is cleared
TOKEN_AT_END = re.compile(r"(?:^|(?<=\s))@[^\s@]*$")  # an @mention being typed (not an e-mail's @)
MAX_PROMPT_CHARS = 256_000  # the prompt's bound: a larger paste is refused (and saved), never cut
KEPT_HINT = "Your line was kept (selected: typing replaces it; Up recalls it)."
PLACEHOLDER = "Ask about this repository · / commands · @ files · F1 keys"


def mentioned_paths(text: str) -> list[str]:
    return list(dict.fromkeys(m.group(1) for m in MENTION.finditer(text)))


class PromptInput(TextArea):
    # over TextArea's ctrl+c (copy): shown in the footer while the prompt holds text; on an empty
    # prompt it is off and ctrl+c does what it did before
    BINDINGS = [Binding("ctrl+c", "clear_prompt", "Clear prompt", id="chat.clear_prompt",
                        tooltip="clear the prompt (Up brings it back)")]

    class Submitted(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    class Typed(Message):
        def __init__(self, token: str) -> None:
            super().__init__()
            self.token = token

    class Accept(Message):
        """Tab on an open completion: insert this choice."""

        def __init__(self, choice: str) -> None:
            super().__init__()
            self.choice = choice

    class ScrollChat(Message):
        """PageUp / PageDown from the prompt: scroll the conversation by a page (0: follow it again)."""

        def __init__(self, pages: int) -> None:
            super().__init__()
            self.pages = pages

    class Hint(Message):
        """A line for the note under the prompt ("" hides it). `while_text`: shown only while the
        prompt holds exactly this text (None: until the next hint or send)."""

        def __init__(self, text: str, *, level: str = "info", while_text: str | None = None) -> None:
            super().__init__()
            self.text = text
            self.level = level
            self.while_text = while_text

    def __init__(self, **kwargs: object) -> None:
        super().__init__(soft_wrap=True, show_line_numbers=False, tab_behavior="focus",  # type: ignore[arg-type]
                         placeholder=PLACEHOLDER, **kwargs)
        self.completion: Suggestions | None = None  # set by the screen that shows both
        self.prompt_history = PromptHistory(None)
        self.refused_home: Path | None = None  # where a refused paste is saved (set by the screen)
        self._recalled: str | None = None  # the history entry shown (edits end the walk)
        self._series: int | None = None  # the keystroke paste the last typed text belonged to
        self._paste_start: tuple[int, int] = (0, 0)  # where the paste being typed began
        self._paste_replaced = ""  # the selection the paste being typed replaced
        self._refused: RefusedPaste | None = None  # the refused paste still arriving

    # --- pastes and the prompt's bound --------------------------------------------------
    def _chars(self) -> int:
        lines = self.document.lines
        return sum(map(len, lines)) + len(lines) - 1

    async def _on_paste(self, event: events.Paste) -> None:
        """A paste, or typed text (`TypedText`, one burst of keys): inserted unless the prompt would
        hold more than MAX_PROMPT_CHARS; then the whole paste is refused and saved."""
        if self.read_only:
            return
        event.stop()
        event.prevent_default()
        text = event.text
        series = event.series if isinstance(event, TypedText) else None
        continues = series is not None and series == self._series
        self._series = series
        self._take_paste(text, series is not None, continues)

    def _take_paste(self, text: str, typed: bool, continues: bool) -> None:
        if continues and self._refused is not None:
            self._refused.add(text)  # the rest of a refused paste goes where its start went
            return
        if self._refused is not None:
            self._refused.close()
            self._refused = None
        if not continues:
            start, end = sorted(self.selection)
            self._paste_start, self._paste_replaced = start, self.get_text_range(start, end)
        selected = 0 if continues else len(self._paste_replaced)
        if self._chars() - selected + len(text) > MAX_PROMPT_CHARS:
            self._refuse(text, continues)
            return
        if result := self._replace_via_keyboard(text, *self.selection):
            self.move_cursor(result.end_location)
        if typed and "\n" in text:
            self.post_message(self.Hint(f"Line breaks kept ({self.document.line_count} lines: pasted or typed fast)."
                                        " Enter sends, ctrl+c clears."))

    def _refuse(self, text: str, continues: bool) -> None:
        """Refuse the paste whole: take out what of it was inserted, save all of it, say where."""
        earlier = ""
        if continues:
            start, here = self._paste_start, self.cursor_location
            earlier = self.get_text_range(start, here)
            self.replace(self._paste_replaced, start, here)
            self.selection = Selection(start, start)
        message = ("Paste refused: the prompt holds at most {:,} characters. Nothing was inserted; "
                   .format(MAX_PROMPT_CHARS))
        try:
            if self.refused_home is None:
                raise OSError("no folder for refused pastes")
            self._refused = RefusedPaste(self.refused_home, earlier + text)
        except OSError:
            self.post_message(self.Hint(message + "it could not be saved: it is still in your clipboard "
                                        "or terminal buffer.", level="warning"))
            return
        self.post_message(self.Hint(message + f"the whole paste is saved in {self._refused.path} "
                                    "(mention that file with @ or attach parts of it).", level="warning"))

    # --- kept and cleared lines ---------------------------------------------------------
    def keep_line(self, text: str) -> None:
        """A line the app gives back (a usage error, a declined confirmation): in the prompt (unless
        the user typed something since), selected with the cursor at its end, in the history."""
        if self.text and self.text != text:
            return
        if self.text != text:
            self.load_text(text)
        self.prompt_history.add(text)
        self.selection = Selection((0, 0), self.document.end)
        self.post_message(self.Hint(KEPT_HINT, while_text=text))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "clear_prompt":
            return bool(self.document.line_count > 1 or self.document.lines[0])
        return super().check_action(action, parameters)

    def action_clear_prompt(self) -> None:
        self.clear_to_history()

    def clear_to_history(self) -> bool:
        """ctrl+c on a non-empty prompt: clear it, keeping the text in the prompt history."""
        text = self.text
        if not text:
            return False
        self.prompt_history.add(text)
        self.clear()
        self.post_message(self.Hint("Cleared; Up brings the text back.", while_text=""))
        return True

    # --- long lines ---------------------------------------------------------------------
    def edit(self, edit):  # type: ignore[no-untyped-def]
        result = super().edit(edit)
        if self.soft_wrap and len(self.document.get_line(result.end_location[0])) > LONG_LINE:
            self.soft_wrap = False
        return result

    def clear(self):  # type: ignore[no-untyped-def]
        result = super().clear()
        self.soft_wrap = True
        return result

    def load_text(self, text: str) -> None:
        super().load_text(text)
        self.soft_wrap = all(len(line) <= LONG_LINE for line in self.document.lines)

    @property
    def showing_history(self) -> bool:
        """The text is a recalled history entry, unedited (no completion pops up over it)."""
        return self.prompt_history.walking and self.text == self._recalled

    def _completion_open(self) -> Suggestions | None:
        box = self.completion
        return box if box is not None and box.display and box.option_count else None

    def show_text(self, text: str) -> None:
        """Replace the whole text (a recalled history entry), the cursor at its end."""
        self._recalled = text
        self.load_text(text)
        self.move_cursor(self.document.end)

    def _walk(self, step: int) -> bool:
        row, _ = self.cursor_location
        if step < 0:
            if row != 0:
                return False
            if self.prompt_history.walking and self.text != self._recalled:
                self.prompt_history.stop()  # the shown entry was edited: start over from the newest
            entry = self.prompt_history.previous(self.text)
        else:
            if row != self.document.line_count - 1 or not self.prompt_history.walking:
                return False
            if self.text != self._recalled:
                self.prompt_history.stop()  # an edited entry is the user's text now: Down never replaces it
                return False
            entry = self.prompt_history.next()
        if entry is not None:
            self.show_text(entry)
        return True

    async def _on_key(self, event: events.Key) -> None:
        key = event.key
        if self._refused is not None:  # a key of its own (Enter, ctrl+c, …): the refused paste is over
            self._refused.close()
            self._refused = None
        self._series = None
        box = self._completion_open()
        handled = True
        if key == "tab" and box is not None:
            index = box.highlighted if box.highlighted is not None else 0
            choice = box.get_option_at_index(index).id
            if choice:
                self.post_message(self.Accept(choice))
        elif key == "tab":  # no completion open: offer one for the word at the cursor; focus stays
            self.post_message(self.Typed(self.current_token()))
        elif key == "escape" and box is not None:
            box.display = False
        elif key in ("up", "down") and box is not None:
            box.action_cursor_up() if key == "up" else box.action_cursor_down()
        elif key in ("up", "down"):
            handled = self._walk(-1 if key == "up" else 1)
        elif key in ("pageup", "pagedown", "ctrl+end"):
            self.post_message(self.ScrollChat({"pageup": -1, "pagedown": 1}.get(key, 0)))
        else:
            handled = False
        if handled:
            event.stop()
            event.prevent_default()
            return
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            text = self.text
            if text.strip():
                self.post_message(self.Submitted(text))
            return
        if event.key == "ctrl+j":
            event.stop()
            event.prevent_default()
            start, end = self.selection
            self._replace_via_keyboard("\n", start, end)
            return
        await super()._on_key(event)

    def current_token(self) -> str:
        """The word being typed at the cursor, for completion: a slash command being typed at the
        start of the prompt (`/memory st`), else an `@path` mention anywhere in the line (after
        `/audit ` too). Reads at most TOKEN_WINDOW characters before the cursor."""
        row, col = self.cursor_location
        line = self.document.get_line(row)
        before = line[max(0, col - TOKEN_WINDOW):col]
        m = TOKEN_AT_END.search(before)
        if m and (m.start() > 0 or col <= TOKEN_WINDOW):
            return m.group(0)
        if row == 0 and col <= TOKEN_WINDOW and before.startswith("/"):
            return before  # `/memory st`: the command words typed so far
        return ""

    def replace_token(self, token: str, replacement: str) -> None:
        row, col = self.cursor_location
        start = (row, col - len(token))
        self.replace(replacement, start, (row, col))


class Suggestions(OptionList):
    """Completion choices under the prompt; hidden when empty."""

    def show(self, items: list[str], describe: Callable[[str], str] | None = None) -> None:
        self.clear_options()
        for item in items[:MAX_SUGGESTIONS]:
            # a path is repository content: plain Text, never markup
            self.add_option(Option(Text(f"{item}  {describe(item)}" if describe else item), id=item))
        self.display = bool(items)
        if items:
            self.highlighted = 0  # Tab in the prompt accepts the highlighted choice
