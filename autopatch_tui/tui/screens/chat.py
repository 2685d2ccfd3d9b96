"""The chat screen (home): the active thread's recent turns, the prompt, streaming answers,
slash commands and `@path` mentions."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Protocol

from textual import on
from textual.app import ComposeResult
from textual.widgets import OptionList
from textual.widgets._markdown import MarkdownStream
from textual.worker import Worker, WorkerState

from autopatch_tui.core.agent.chat import NO_MODEL_HELP
from autopatch_tui.core.agent.loop import AgentCallbacks
from autopatch_tui.core.errors import AutopatchError
from autopatch_tui.core.memory.history import TurnInfo
from autopatch_tui.tui import slash
from autopatch_tui.tui.commands import CommandRunner
from autopatch_tui.tui.file_index import FileIndex
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
from autopatch_tui.tui.services import Services
from autopatch_tui.tui.widgets.chat_log import AssistantMessage, ChatLog
from autopatch_tui.tui.widgets.footer import AppFooter
from autopatch_tui.tui.widgets.prompt import PromptInput, Suggestions, mentioned_paths
from autopatch_tui.tui.widgets.status_bar import StatusBar


class TurnResult(Protocol):
    @property
    def answer(self) -> str: ...

    @property
    def turn_id(self) -> str: ...

    @property
    def intent(self) -> str: ...


RECENT_TURNS = 12  # each shown answer is a Markdown widget: keep the first frame interactive


class ChatScreen(AppScreen):
    CSS_PATH = style("chat.tcss")

    def __init__(self, services: Services) -> None:
        super().__init__(name="chat")
        self.services = services
        self.files = FileIndex(services.manager.repo)
        self.commands = CommandRunner(self, services)
        self._answer: AssistantMessage | None = None
        self._stream: MarkdownStream | None = None
        self.busy = False

    def compose(self) -> ComposeResult:
        yield ChatLog(id="log")
        yield Suggestions(id="suggestions")
        yield PromptInput(id="prompt")
        yield StatusBar(id="status")
        yield AppFooter()

    @property
    def log_view(self) -> ChatLog:
        return self.query_one(ChatLog)

    async def on_mount(self) -> None:
        self.query_one(Suggestions).display = False
        self.query_one(PromptInput).focus()
        status = self.query_one(StatusBar)
        status.model_label = self.services.model_label
        self.watch(self.app, "job_counts", self._show_counts)
        self.watch(self.app, "health", self._show_health)
        self.watch(self.app, "active_thread", self._show_thread)
        if self.services.manager.client is None:
            await self.log_view.add_note(NO_MODEL_HELP, level="warning")
        if self.services.manager.healthy:
            self.run_worker(self._load_recent, thread=True, group="load", exit_on_error=False)
        else:
            diag = self.services.manager.store.health.diagnostic or "unknown"
            await self.log_view.add_note(f"Memory is degraded: {diag}. Open the Memory browser (F4) to export or "
                                         "clear it.", level="error")

    # --- live state ---------------------------------------------------------------------
    def _show_counts(self, counts: tuple[int, int, int, int]) -> None:
        status = self.query_one(StatusBar)
        status.pending, status.failed = counts[0] + counts[1] + counts[2], counts[3]

    def _show_health(self, health: str) -> None:
        self.query_one(StatusBar).health = health

    def _show_thread(self, thread_id: str) -> None:
        self.query_one(StatusBar).thread_id = thread_id

    def set_busy(self, text: str) -> None:
        self.query_one(StatusBar).busy = text

    # --- history at start ---------------------------------------------------------------
    def _load_recent(self) -> None:
        turns = self.services.manager.recent_turns(RECENT_TURNS)
        self.app.call_from_thread(self._show_recent, turns)

    async def _show_recent(self, turns: list[TurnInfo]) -> None:
        for t in turns:
            await self.log_view.add_user(t.user_text)
            if t.assistant_text:
                await self.log_view.add_assistant(t.assistant_text)
            elif t.state != "completed":
                await self.log_view.add_note(f"(turn {t.state})", level="warning")

    # --- prompt -------------------------------------------------------------------------
    @on(PromptInput.Submitted)
    async def _submitted(self, event: PromptInput.Submitted) -> None:
        prompt = self.query_one(PromptInput)
        text = event.text
        prompt.clear()
        self.query_one(Suggestions).display = False
        if slash.is_slash(text):
            try:
                command = slash.parse(text)
            except slash.SlashError as exc:
                await self.log_view.add_note(str(exc), level="warning")
                return
            if command.name in ("explain", "chat"):
                await self.send(command.rest, "code_explain" if command.name == "explain" else "general_chat")
                return
            await self.commands.run(command)
            return
        await self.send(text, None)

    @on(PromptInput.Changed)
    def _typed(self, event: PromptInput.Changed) -> None:
        prompt = self.query_one(PromptInput)
        token = prompt.current_token()
        box = self.query_one(Suggestions)
        if token.startswith("/"):
            box.show(slash.completions(token), lambda c: slash.COMMANDS[c])
        elif token.startswith("@") and len(token) > 1:
            box.show(["@" + p for p in self.files.complete(token[1:])])
        else:
            box.display = False

    @on(OptionList.OptionSelected, "#suggestions")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        prompt = self.query_one(PromptInput)
        token = prompt.current_token()
        if event.option.id:
            prompt.replace_token(token, event.option.id + " ")
        self.query_one(Suggestions).display = False
        prompt.focus()

    # --- a chat turn --------------------------------------------------------------------
    async def send(self, text: str, intent: str | None) -> None:
        paths = mentioned_paths(text)
        await self.start_turn(text, lambda cb: self.services.chat.ask(text, intent=intent, scope_paths=paths,
                                                                      callbacks=cb))

    async def start_turn(self, text: str, work: Callable[[AgentCallbacks], TurnResult], *,
                         needs_model: bool = True) -> None:
        """Show the user's text, then run one turn (`work`) in a thread worker; its answer streams in
        and is finally replaced by exactly the text the turn saved."""
        if self.busy:
            self.notify("A request is still running.", severity="warning")
            return
        await self.log_view.add_user(text)
        if needs_model and self.services.manager.client is None:
            await self.log_view.add_note(NO_MODEL_HELP, level="warning")
            return
        self.busy = True
        self.set_busy("thinking…")
        self._answer, self._stream = await self.log_view.start_answer()
        self.run_worker(partial(self._run_turn, work), thread=True, group="chat", exit_on_error=False)

    def _run_turn(self, work: Callable[[AgentCallbacks], TurnResult]) -> None:
        post: Callable = self.post_message
        callbacks = AgentCallbacks(on_delta=lambda d: post(StreamDelta(d)), on_reset=lambda: post(StreamReset()),
                                   on_tool=lambda name: post(ToolUsed(name)))
        try:
            result = work(callbacks)
        except AutopatchError as exc:
            post(TurnFailed(str(exc), saved=exc.turn_id is not None))
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
        self.set_busy(f"using {message.name}…")

    def on_workflow_progress(self, message: WorkflowProgress) -> None:
        self.set_busy(message.text)

    async def _end_stream(self) -> None:
        if self._stream is not None:
            await self._stream.stop()
            self._stream = None

    async def on_turn_done(self, message: TurnDone) -> None:
        await self._end_stream()
        if self._answer is not None:
            await self._answer.update(message.answer)  # exactly what was saved
        self._finish()

    async def on_turn_failed(self, message: TurnFailed) -> None:
        await self._end_stream()
        if self._answer is not None:
            await self._answer.remove()
            self._answer = None
        if message.saved:
            await self.log_view.add_note(f"The request failed: {message.error}. Your message was saved.",
                                         level="error")
        else:
            await self.log_view.add_note(f"Not sent: {message.error}. Nothing was stored.", level="warning")
        self._finish()

    def _finish(self) -> None:
        self.busy = False
        self.set_busy("")

    async def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        # the App reports the error; the screen only leaves its busy state
        if event.worker.group == "chat" and event.state in (WorkerState.ERROR, WorkerState.CANCELLED):
            await self._end_stream()
            self._finish()

    async def reset_view(self) -> None:
        await self.log_view.clear()
        self.files.clear()
