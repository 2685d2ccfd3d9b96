"""The chat screen (home): the active thread's recent turns, the prompt, streaming answers,
slash commands and `@path` mentions.

Text typed anywhere on this screen reaches the prompt (`typing_target`; the App routes printable
keys, `tui/typing.py`), so no letter fires an action here: cancelling is Escape, resending a
failed turn is Enter on its focused note (Shift+Tab) or `/retry`. F2 puts focus back in the
prompt. The conversation follows new output unless the user scrolled away (`ChatLog`); sending
anything follows it again, and a marker says when new output is below."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Protocol

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widget import Widget
from textual.widgets import OptionList
from textual.worker import Worker, WorkerState

from autopatch_tui.core.agent.prompt_report import PromptReport, context_label, instructions_label, not_read
from autopatch_tui.core.agent.texts import NO_MODEL_HELP
from autopatch_tui.core.errors import AutopatchError
from autopatch_tui.core.instructions.section import visible
from autopatch_tui.tui import slash
from autopatch_tui.tui.chat_text import BUSY_KEEPS_TEXT, CANCELLED_NOTE, RESEND_HINT, UNEXPECTED_NOTE, WELCOME
from autopatch_tui.tui.file_index import FileIndex
from autopatch_tui.tui.prompt_history import PromptHistory, history_file
from autopatch_tui.tui.turn_control import RequestCancelled, TurnControl, tool_step
from autopatch_tui.tui.messages import (
    StreamDelta,
    StreamReset,
    ToolUsed,
    TurnDone,
    TurnFailed,
    WorkflowProgress,
)
from autopatch_tui.tui.resources import style
from autopatch_tui.tui.screens.base import AppScreen
from autopatch_tui.tui.screens.chat_steering import SteeringChat, split_refusals
from autopatch_tui.tui.services import Services
from autopatch_tui.tui.widgets.chat_log import ChatLog, FailedTurnNote, NoteMessage, UserMessage
from autopatch_tui.tui.widgets.footer import AppFooter
from autopatch_tui.tui.widgets.prompt import PromptInput, Suggestions, mentioned_paths
from autopatch_tui.tui.widgets.prompt_hint import PromptHint
from autopatch_tui.tui.widgets.status_bar import StatusBar

if TYPE_CHECKING:  # imported where first used, after the first frame (issue 23)
    from textual.widgets.markdown import MarkdownStream

    from autopatch_tui.core.agent.loop import AgentCallbacks
    from autopatch_tui.core.memory.history import TurnInfo
    from autopatch_tui.core.memory.turn_memory import MemoryNote
    from autopatch_tui.tui.commands import CommandRunner
    from autopatch_tui.tui.widgets.assistant_message import AssistantMessage


class TurnResult(Protocol):
    @property
    def answer(self) -> str: ...

    @property
    def turn_id(self) -> str: ...

    @property
    def intent(self) -> str: ...


RECENT_TURNS = 12  # read at start; the newest that fill a screen are drawn first, the rest when scrolled to
OLDER_PAGE = 8  # turns drawn at a time when the view is scrolled to the top
MEMORY_CHECK_SECONDS = 0.3  # Memory notes: one look per burst of Memory events
TURN_COMMANDS = ("explain", "chat", "audit", "retry")  # slash commands that start a chat turn



def starts_turn(command: slash.SlashCommand | None) -> bool:
    """Does this prompt line start a chat turn (None: plain text)? Only one runs at a time."""
    if command is None:
        return True
    return command.name in TURN_COMMANDS or (command.name == "patch" and command.args[:1] in (("explain",),
                                                                                             ("revise",)))


class ChatScreen(SteeringChat, AppScreen):
    CSS_PATH = style("chat.tcss")
    AUTO_FOCUS = "#prompt"  # the first focus is the prompt (not the log, then the prompt)
    BINDINGS = [
        Binding("escape", "cancel_request", "Cancel request", id="chat.cancel",
                tooltip="cancel the running request at once (the turn ends failed; its text is kept)"),
        Binding("ctrl+c", "clear_prompt", "Clear prompt", id="chat.clear_prompt",
                tooltip="clear the prompt (Up brings it back)"),
    ]

    def __init__(self, services: Services) -> None:
        super().__init__(name="chat")
        self.services = services
        self.files = FileIndex(services.manager.repo)
        self._commands: CommandRunner | None = None  # built with the first slash command
        self._answer: AssistantMessage | None = None
        self._stream: MarkdownStream | None = None
        self.busy = False
        self.control: TurnControl | None = None
        self.failed_line: str | None = None  # the newest failed turn's text (Enter on its note, `/retry`)
        self._line = ""  # the prompt line being handled
        self._turn_line = ""  # the line of the running turn
        self._steps: list[str] = []
        self._steps_note: NoteMessage | None = None
        self._completion_due = False
        self._prompt: PromptInput | None = None
        self._memory_watch: dict[str, Widget] = {}  # turn ID -> the widget its Memory note goes under
        self._memory_check_due = False
        self._prompt_empty = True
        self._older: list[TurnInfo] = []  # read, not yet drawn (older than the first drawn turn)
        self._oldest_sequence: int | None = None  # the oldest turn drawn or read; None: nothing restored
        self._restored_top: Widget | None = None  # the oldest restored entry: older turns go above it
        self._thread_id = ""
        self._loading_older = False
        self._startup_entries = 0
        self._started_at = 0.0

    @property
    def commands(self) -> CommandRunner:
        if self._commands is None:
            from autopatch_tui.tui.commands import CommandRunner

            self._commands = CommandRunner(self, self.services)
        return self._commands

    def compose(self) -> ComposeResult:
        yield ChatLog(id="log")
        yield Suggestions(id="suggestions")
        yield PromptInput(id="prompt")
        yield PromptHint(id="prompt-hint")
        yield StatusBar(id="status")
        yield AppFooter()

    @property
    def log_view(self) -> ChatLog:
        return self.query_one(ChatLog)

    # --- typing and focus ---------------------------------------------------------------
    def typing_target(self, event: events.Key) -> PromptInput | None:
        """Every printable key typed on this screen goes to the prompt, whatever has focus."""
        prompt = self._prompt
        if prompt is None:
            prompt = self._prompt = self.query_one(PromptInput)  # asked once per key: no query each time
        return prompt if prompt.display else None

    def focus_home(self) -> None:
        self.query_one(PromptInput).focus()

    async def on_mount(self) -> None:
        self.query_one(Suggestions).display = False
        prompt = self.query_one(PromptInput)
        prompt.completion = self.query_one(Suggestions)
        prompt.prompt_history = PromptHistory(history_file(self.services.settings.home, self.services.manager.repo))
        prompt.refused_home = self.services.settings.home
        prompt.focus()
        status = self.query_one(StatusBar)
        status.model_label = self.services.model_label
        self.watch(self.app, "job_counts", self._show_counts)
        self.watch(self.app, "health", self._show_health)
        self.watch(self.app, "active_thread", self._show_thread)
        self.watch(self.app, "last_prompt", self._show_prompt)
        self.watch(self.app, "review_count", self._show_review)
        self.watch(self.app, "memory_version", self._memory_moved, init=False)
        self.watch(self.app, "job_events", self._memory_moved, init=False)
        if self.services.manager.client is None:
            await self.log_view.add_note(NO_MODEL_HELP, level="warning")
        self._startup_entries = len(self.log_view.entries())  # the notes above: before the restored turns
        self._started_at = self.services.manager.clock.now()  # later turns are this session's: shown live
        if self.services.manager.healthy:
            self.run_worker(self._load_recent, thread=True, group="load", exit_on_error=False)
        else:
            from autopatch_tui.core.no_memory import NO_MEMORY_NOTE, merged_away

            diag = self.services.manager.store.health.diagnostic or "unknown"
            if merged_away(self.services.manager):  # chat still works, on a store of its own
                await self.log_view.add_note(f"{diag}. {NO_MEMORY_NOTE}", level="warning")
            else:
                await self.log_view.add_note(f"Memory is degraded: {diag}. Open the Memory browser (F4) to export "
                                             "or clear it.", level="error")
            self.run_worker(self._start_session, thread=True, group="session", exit_on_error=False)

    # --- live state ---------------------------------------------------------------------
    def _show_counts(self, counts: tuple[int, int, int, int]) -> None:
        status = self.query_one(StatusBar)
        status.pending, status.failed = counts[0] + counts[1] + counts[2], counts[3]

    def _show_health(self, health: str) -> None:
        self.query_one(StatusBar).health = health

    def _show_thread(self, thread_id: str) -> None:
        self.query_one(StatusBar).thread_id = thread_id

    def _show_prompt(self, report: PromptReport | None) -> None:
        status = self.query_one(StatusBar)
        status.context = context_label(report)
        status.instructions = (visible(instructions_label(report.instruction_files, not_read(report)))
                               if report is not None else "")

    def _show_review(self, count: int) -> None:
        self.query_one(StatusBar).to_review = count

    def set_busy(self, text: str) -> None:
        self.query_one(StatusBar).busy = text

    # --- history at start ---------------------------------------------------------------
    def _start_session(self) -> None:
        """The saved audit comes back (its pending patches), and a killed patch write's leftover goes."""
        note = self.services.start_session()
        if note:
            self.app.call_from_thread(self.log_view.add_note, note)

    def _load_recent(self) -> None:
        from autopatch_tui.core.clock import iso_utc

        started = iso_utc(self._started_at)
        turns = [t for t in self.services.manager.recent_turns(RECENT_TURNS) if t.created_at <= started]
        self._used_records = self._read_used(turns)  # issue 31.3: what reached each answer (IDs)
        if any(t.assistant_text for t in turns):  # the Markdown widget's import here, not on the main thread
            import autopatch_tui.tui.widgets.assistant_message  # noqa: F401
        self.app.call_from_thread(self._show_recent, turns)
        self._start_session()  # its note comes under the turns it continues

    def _screenful(self, turns: list[TurnInfo]) -> int:
        """How many of the newest `turns` fill the conversation's height (an estimate from their
        text: a turn is at least four rows), at least one."""
        size = self.log_view.size
        width, height = max(20, size.width - 12), max(10, size.height or 30)
        rows, count = 0, 0
        for t in reversed(turns):
            for text in (t.user_text, t.assistant_text):
                rows += 2 + sum(1 + len(line) // width for line in text.splitlines()[:200])
            count += 1
            if rows >= height:
                break
        return max(1, count)

    async def _show_recent(self, turns: list[TurnInfo]) -> None:
        """The thread's last screenful first, above whatever was sent or shown meanwhile (nothing is
        wiped); older turns are drawn when the view is scrolled to the top (`_show_older`)."""
        log_view = self.log_view
        live = log_view.entries()[self._startup_entries:]  # sent or shown since the start: stays below
        before = live[0] if live else None
        if not turns and self.services.manager.healthy:
            await log_view.mount_history([NoteMessage(WELCOME)], before=before)
        if turns:
            first = len(turns) - self._screenful(turns)
            self._older = turns[:first]
            self._oldest_sequence = turns[0].sequence
            self._thread_id = turns[-1].thread_id
            log_view.has_older = bool(self._older) or len(turns) == RECENT_TURNS
            await self._mount_turns(turns[first:], before=before)
        self.refresh_bindings()
        self._memory_moved(0)
        self.call_after_refresh(self._fill_view)

    async def _mount_turns(self, turns: list[TurnInfo], *, before: Widget | None) -> None:
        from autopatch_tui.tui.widgets.chat_log import AssistantMessage

        widgets: list[Widget] = []
        for t in turns:
            user = UserMessage(t.user_text)
            widgets.append(user)
            anchor: Widget = user
            if t.assistant_text:
                anchor = AssistantMessage(t.assistant_text)
            elif t.state == "failed":
                if self.failed_line is None or before is None:
                    self.failed_line = t.user_text
                anchor = FailedTurnNote(f"(turn failed) {RESEND_HINT}", t.user_text)
            elif t.state != "completed":
                anchor = NoteMessage(f"(turn {t.state})", level="warning")
            if anchor is not user:
                widgets.append(anchor)
            used = self._used_records.get(t.id)
            if used:
                from autopatch_tui.tui.widgets.steer_notes import MemoryUsedNote

                widgets.append(MemoryUsedNote(t.id, used))
            self._memory_watch[t.id] = anchor
        if widgets:
            await self.log_view.mount_history(widgets, before=before)
            self._restored_top = widgets[0]

    def _fill_view(self) -> None:
        """Older turns until the view can scroll (a short screenful would never reach `NeedOlder`)."""
        log_view = self.log_view
        if log_view.has_older and log_view.max_scroll_y <= 0:
            self.post_message(ChatLog.NeedOlder())

    @on(ChatLog.NeedOlder)
    async def _need_older(self) -> None:
        if self._loading_older or not self.log_view.has_older:
            return
        if self._older:
            page, self._older = self._older[-OLDER_PAGE:], self._older[:-OLDER_PAGE]
            await self._show_older(page)
            return
        if self._oldest_sequence is None:
            return
        self._loading_older = True
        self.run_worker(partial(self._load_older, self._thread_id, self._oldest_sequence), thread=True,
                        group="older", exit_on_error=False)

    def _load_older(self, thread_id: str, sequence: int) -> None:
        turns = self.services.manager.turns_before(thread_id, sequence, OLDER_PAGE)
        self.app.call_from_thread(self._older_loaded, turns)

    async def _older_loaded(self, turns: list[TurnInfo]) -> None:
        self._loading_older = False
        if turns:
            self._oldest_sequence = turns[0].sequence
        self.log_view.has_older = len(turns) == OLDER_PAGE
        await self._show_older(turns)

    async def _show_older(self, turns: list[TurnInfo]) -> None:
        top = self._restored_top if self._restored_top is not None and self._restored_top.is_attached else None
        await self._mount_turns(turns, before=top if top is not None else self.log_view.first_entry())
        self._memory_moved(0)
        self.call_after_refresh(self._fill_view)

    # --- what each turn's Memory work did -----------------------------------------------
    def _memory_moved(self, _value: int) -> None:
        """Memory or a job moved on: look again (at most every MEMORY_CHECK_SECONDS) at the turns
        whose Memory work has not landed yet."""
        if self._memory_check_due or not self._memory_watch:
            return
        self._memory_check_due = True
        self.set_timer(MEMORY_CHECK_SECONDS, self._check_memory)

    def _check_memory(self) -> None:
        self._memory_check_due = False
        ids = list(self._memory_watch)
        if ids and self.services.manager.readable:
            self.run_worker(partial(self._load_memory_notes, ids), thread=True, group="memory-notes",
                            exit_on_error=False)

    def _load_memory_notes(self, turn_ids: list[str]) -> None:
        from autopatch_tui.core.memory import steering

        mgr = self.services.manager
        landed = mgr.turn_memory(turn_ids)
        if landed:
            refused: dict = {}
            try:
                for e in steering.refused(mgr) if any(landed.values()) else []:
                    if e.turn_id in landed:
                        refused.setdefault(e.turn_id, []).append(e)
            except (OSError, AutopatchError):
                refused = {}
            self.app.call_from_thread(self._show_memory_notes, landed, refused)

    async def _show_memory_notes(self, landed: dict[str, list[MemoryNote]], refused: dict | None = None) -> None:
        for turn_id, notes in landed.items():
            anchor = self._memory_watch.pop(turn_id, None)
            if anchor is None or not anchor.is_attached:
                continue
            notes, entries = split_refusals(notes, (refused or {}).get(turn_id, []))
            if entries:  # each refused candidate: a line Enter keeps anyway (issue 31.2)
                await self.refusal_lines(entries, anchor)
            if notes:
                await self.log_view.add_memory_note(turn_id, notes, after=anchor)

    # --- prompt -------------------------------------------------------------------------
    @on(PromptInput.Submitted)
    async def _submitted(self, event: PromptInput.Submitted) -> None:
        prompt = self.query_one(PromptInput)
        text = event.text
        parsed, command = await self._parse_line(text)
        if not parsed:
            prompt.keep_line(text)  # the line stays, selected, to be corrected or replaced
            return
        if self.busy and starts_turn(command):
            self.notify(BUSY_KEEPS_TEXT, severity="warning", markup=False)
            return  # nothing is lost: the text stays in the prompt
        prompt.prompt_history.add(text)
        prompt.clear()
        self.query_one(PromptHint).hide()
        self.query_one(Suggestions).display = False
        self.log_view.follow()  # what you send, and its answer or output, is in view
        await self.submit_line(text, command)

    async def _parse_line(self, text: str) -> tuple[bool, slash.SlashCommand | None]:
        """(parsed, command): a slash line's command, None for plain text; a bad one is a warning note."""
        if not slash.is_slash(text):
            return True, None
        try:
            return True, slash.parse(text)
        except slash.SlashError as exc:  # it answers the line just sent: in view even if scrolled away
            await self.log_view.add_note(str(exc), level="warning", reveal=True)
            return False, None

    async def submit_line(self, text: str, command: slash.SlashCommand | None) -> None:
        """Run one prompt line (typed, or resent by retry)."""
        self._line = text
        if command is not None:
            if command.name == "retry":
                await self.action_retry()
                return
            if command.name in ("explain", "chat"):
                await self.send(command.rest, "code_explain" if command.name == "explain" else "general_chat")
                return
            await self.commands.run(command, text)
            return
        await self.send(text, None)

    @on(PromptInput.Hint)
    def _hint(self, event: PromptInput.Hint) -> None:
        self.query_one(PromptHint).show(event.text, level=event.level, while_text=event.while_text)

    @on(PromptInput.Changed)
    def _typed(self, event: PromptInput.Changed) -> None:
        """The completion follows the text once per refresh, however many edits came in between
        (a burst of keys is one edit already; this bounds the rest)."""
        prompt = event.text_area
        hint = self.query_one(PromptHint)
        if hint.while_text is not None and prompt.text != hint.while_text:
            hint.hide()  # the kept line was replaced or edited: the note is no longer about it
        empty = not prompt.document.lines[0] and prompt.document.line_count == 1
        if empty != self._prompt_empty:
            self._prompt_empty = empty
            self.refresh_bindings()  # ctrl+c "Clear prompt" in the footer while there is text
        if not self._completion_due:
            self._completion_due = True
            self.call_after_refresh(self._update_completion)

    @on(PromptInput.Typed)
    def _tab_without_completion(self) -> None:
        self._update_completion()

    def _update_completion(self) -> None:
        self._completion_due = False
        prompt = self.query_one(PromptInput)
        token = prompt.current_token()
        box = self.query_one(Suggestions)
        if prompt.showing_history:
            box.display = False
        elif token.startswith("/"):
            box.show(slash.completions(token), lambda c: slash.COMMANDS[c])
        elif token.startswith("@") and len(token) > 1:
            box.show(["@" + p for p in self.files.complete(token[1:])])
        else:
            box.display = False

    @on(OptionList.OptionSelected, "#suggestions")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        if event.option.id:
            self._accept(event.option.id)

    @on(PromptInput.Accept)
    def _accepted(self, event: PromptInput.Accept) -> None:
        self._accept(event.choice)

    def _accept(self, choice: str) -> None:
        prompt = self.query_one(PromptInput)
        # a folder stays open for its files (the completion follows the edit); anything else ends its word
        prompt.replace_token(prompt.current_token(), choice if choice.endswith("/") else choice + " ")
        self.query_one(Suggestions).display = False
        prompt.focus()

    @on(PromptInput.ScrollChat)
    def _scroll_chat(self, event: PromptInput.ScrollChat) -> None:
        log_view = self.log_view
        if event.pages < 0:
            log_view.scroll_page_up(animate=False)
        elif event.pages > 0:
            log_view.scroll_page_down(animate=False)
        else:
            log_view.follow()

    # --- cancel and retry ---------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel_request":
            return self.busy
        if action == "retry":
            return self.failed_line is not None and not self.busy
        if action == "clear_prompt":
            return not self._prompt_empty
        return True

    def action_clear_prompt(self) -> None:
        """ctrl+c where the prompt has no focus (the log, a failed turn's note): as in the prompt."""
        self.query_one(PromptInput).clear_to_history()

    def action_cancel_request(self) -> None:
        if not self.busy or self.control is None or self.control.cancelled:
            return
        self.control.cancel()
        self.set_busy("cancelling…")

    async def action_retry(self) -> None:
        focused = self.focused
        line = focused.line if isinstance(focused, FailedTurnNote) else self.failed_line
        if line is None:
            await self.log_view.add_note("There is no failed turn to send again.", level="warning", reveal=True)
            return
        if self.busy:
            self.notify(BUSY_KEEPS_TEXT, severity="warning", markup=False)
            return
        self.query_one(PromptInput).focus()
        parsed, command = await self._parse_line(line)
        if parsed:
            await self.submit_line(line, command)

    # --- a chat turn --------------------------------------------------------------------
    async def send(self, text: str, intent: str | None) -> None:
        paths = mentioned_paths(text)
        await self.start_turn(text, lambda cb: self.services.chat.ask(text, intent=intent, scope_paths=paths,
                                                                      callbacks=cb))

    async def start_turn(self, text: str, work: Callable[[AgentCallbacks], TurnResult], *,
                         needs_model: bool = True) -> None:
        """Show the user's text, then run one turn (`work`) in a thread worker; its answer streams in
        and is finally replaced by exactly the text the turn saved."""
        if self.busy:  # a line that raced past the prompt's check: it goes back into the prompt
            self.query_one(PromptInput).keep_line(self._line or text)
            self._line = ""
            self.notify(BUSY_KEEPS_TEXT, severity="warning", markup=False)
            return
        self.busy = True  # before the first await: a second Enter meanwhile keeps its text
        await self.log_view.add_user(text)
        if needs_model and self.services.manager.client is None:
            self.busy = False
            await self.log_view.add_note(NO_MODEL_HELP, level="warning")
            return
        self.control = control = TurnControl()
        self._turn_line = self._line or text
        self._line = ""
        self._steps = []
        self._steps_note = await self.log_view.add_note("thinking…", level="step")
        self.set_busy("thinking…")
        self._answer, self._stream = await self.log_view.start_answer()
        self.refresh_bindings()
        self.run_worker(partial(self._run_turn, work, control), thread=True, group="chat", exit_on_error=False)

    def check_cancelled(self) -> None:
        """On the worker thread (workflow steps): raise when the running request was cancelled."""
        if self.control is not None:
            self.control.check()

    def _run_turn(self, work: Callable[[AgentCallbacks], TurnResult], control: TurnControl) -> None:
        post: Callable = self.post_message

        def delta(d: str) -> None:
            control.check()
            post(StreamDelta(d))

        def reset() -> None:
            control.check()
            post(StreamReset())

        def tool(name: str) -> None:
            control.check()
            post(ToolUsed(name))

        from autopatch_tui.core.agent.loop import AgentCallbacks
        from autopatch_tui.core.llm.reach import unreachable_text

        callbacks = AgentCallbacks(on_delta=delta, on_reset=reset, on_tool=tool)
        try:
            with control.scope.active():  # Escape abandons the model request at once (core/llm/abort.py)
                result = work(callbacks)
        except RequestCancelled as exc:
            post(TurnFailed(str(exc), saved=exc.turn_id is not None, cancelled=True))
            return
        except AutopatchError as exc:
            text = unreachable_text(exc, self.services.settings.llm_base_url) or str(exc)
            post(TurnFailed(text, saved=exc.turn_id is not None))
            return
        post(TurnDone(result.answer, result.turn_id, result.intent))

    async def on_stream_delta(self, message: StreamDelta) -> None:
        if self._stream is not None:
            await self._stream.write(message.text)

    async def on_stream_reset(self, message: StreamReset) -> None:
        await self._end_stream()
        if self._answer is not None:
            await self._answer.remove()
        self._answer, self._stream = await self.log_view.start_answer()

    def on_tool_used(self, message: ToolUsed) -> None:
        self._add_step(tool_step(message.name))

    def on_workflow_progress(self, message: WorkflowProgress) -> None:
        self._add_step(message.text.rstrip("…"))

    def _add_step(self, step: str) -> None:
        """A live step of the running turn: in the status bar and on the turn's steps line."""
        if self.control is not None and self.control.cancelled:
            return
        self.set_busy(f"{step}…")
        if not self._steps or self._steps[-1] != step:
            self._steps.append(step)
        if self._steps_note is not None:
            self._steps_note.update(Text(" → ".join(["thinking", *self._steps]) + "…"))

    async def _end_steps(self) -> None:
        """The steps line stays (as a record) when the turn took steps; otherwise it goes."""
        note, self._steps_note = self._steps_note, None
        if note is None:
            return
        if self._steps:
            note.update(Text("steps: " + ", ".join(self._steps)))
        else:
            await note.remove()

    async def _end_stream(self) -> None:
        if self._stream is not None:
            await self._stream.stop()
            self._stream = None

    async def on_turn_done(self, message: TurnDone) -> None:
        await self._end_stream()
        await self._end_steps()
        if self._answer is not None:
            await self._answer.update(message.answer)  # exactly what was saved
            from autopatch_tui.core.memory.memory_used import recent

            used = recent(self.services.manager.paths, message.turn_id)  # this process's record: no file read
            if used:
                await self.memory_used_line(message.turn_id, used, self._answer)
            self._memory_watch[message.turn_id] = self._answer  # its Memory note comes once the work lands
            self._memory_moved(0)
        self._finish()

    async def on_turn_failed(self, message: TurnFailed) -> None:
        await self._end_stream()
        await self._end_steps()
        if self._answer is not None:
            await self._answer.remove()
            self._answer = None
        if message.saved:
            self.failed_line = self._turn_line
            text = (CANCELLED_NOTE if message.cancelled else
                    f"The request failed: {message.error}. Your message was saved. {RESEND_HINT}")
            await self.log_view.add_failed(text, self._turn_line)
        else:
            await self.log_view.add_note(f"Not sent: {message.error}. Nothing was stored.", level="warning")
        self._finish()

    def _finish(self) -> None:
        self.busy = False
        self.control = None
        self.set_busy("")
        self.refresh_bindings()

    async def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        # the App reports the error; the screen leaves its busy state and keeps the user's line
        if event.worker.group == "chat" and event.state in (WorkerState.ERROR, WorkerState.CANCELLED):
            await self._end_stream()
            await self._end_steps()
            if self._answer is not None:
                await self._answer.remove()
                self._answer = None
            if event.state == WorkerState.ERROR and self._turn_line:
                self.failed_line = self._turn_line  # the prompt was cleared at submit: nothing typed is lost
                await self.log_view.add_failed(UNEXPECTED_NOTE, self._turn_line)
            self._finish()

    async def reset_view(self) -> None:
        self._memory_watch.clear()
        self._older, self._oldest_sequence, self._restored_top = [], None, None
        self.log_view.has_older = False
        await self.log_view.clear()
        self.files.clear()
        self.failed_line = None  # a new view: `r` / `/retry` do not resend a turn that is no longer shown
        self.refresh_bindings()
