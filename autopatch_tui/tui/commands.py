"""Slash commands inside the app. Everything that touches SQLite runs in a thread worker; the
result comes back as a plain-text note (never markup)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from autopatch_tui.core.agent.prompt_report import context_lines
from autopatch_tui.core.errors import AutopatchError
from autopatch_tui.core.events import FlushProgress
from autopatch_tui.core.instructions.section import visible
from autopatch_tui.core.memory.render import render_item, render_item_line, render_status
from autopatch_tui.core.repair.patch_files import sweep
from autopatch_tui.tui import flush_text, slash
from autopatch_tui.tui.messages import WorkflowProgress
from autopatch_tui.tui.screens.confirm import ConfirmScreen
from autopatch_tui.tui.services import Services
from autopatch_tui.tui.widgets.prompt import PromptInput, mentioned_paths

if TYPE_CHECKING:
    from autopatch_tui.tui.screens.chat import ChatScreen

RESET_NOTE = ("Project working state and caches were reset. Memory was kept (memory.db, exports and terminal "
              "history are untouched); `/memory clear --confirm` deletes Memory.")
AUDIT_CLOSED = "The open audit was closed; its pending patches were not applied."
DROP_TITLES = {"new": "Start a new thread?", "reset": "Reset the working state?", "audit": "Start a new audit?"}


def drop_body(pending: int, command: str) -> str:
    return (f"The open audit has {pending} pending patch(es). {command} closes it: the {pending} patch(es) go, "
            "not applied, and do not come back.\n\ny: go on · n or Escape: keep them (your line stays in the prompt)")


class CommandRunner:
    def __init__(self, screen: ChatScreen, services: Services) -> None:
        self.screen = screen
        self.services = services

    def _in_thread(self, fn: Callable[[], str], *, level: str = "info", group: str = "command",
                   after: Callable[[], object] | None = None, markdown: bool = False) -> None:
        """Run `fn` in a thread worker and show its text as a note (or as Markdown, for diffs). A
        refused action (a typed error) becomes a warning note; anything else goes to the App's
        one worker-error handler. The output always comes into view (the chat follows to it)."""
        screen = self.screen

        def work() -> None:
            try:
                text = fn()
            except AutopatchError as exc:  # a refused command answers in the chat, as its output would
                screen.app.call_from_thread(screen.log_view.add_note, str(exc), level="warning", reveal=True)
                return
            if after is not None:
                screen.app.call_from_thread(after)
            if markdown:
                screen.app.call_from_thread(screen.log_view.add_assistant, text, reveal=True)
            else:
                screen.app.call_from_thread(screen.log_view.add_note, text, level=level, reveal=True)

        screen.run_worker(work, thread=True, group=group, exit_on_error=False)

    async def confirm_dropping(self, command: str, line: str, proceed: Callable[[], Awaitable[None] | None]) -> None:
        """Run `proceed` at once when the open audit has no pending patch; otherwise only after the
        user confirms (one key, `y`) that they go. On `n` / Escape the line goes back into the prompt."""
        pending = self.services.review.pending_patches()
        if not pending:
            await _maybe_await(proceed())
            return
        screen = self.screen

        async def answered(yes: bool | None) -> None:
            if yes:
                await _maybe_await(proceed())
                return
            screen.query_one(PromptInput).keep_line(line)
            await screen.log_view.add_note(f"Kept the {pending} pending patch(es); {command} did not run.",
                                           reveal=True)

        screen.app.push_screen(ConfirmScreen(DROP_TITLES[command.split()[0].lstrip("/")],
                                             drop_body(pending, command), "Go on"), answered)

    async def run(self, cmd: slash.SlashCommand, line: str = "") -> None:
        if cmd.name in ("new", "reset") or (cmd.name == "audit" and cmd.args != ("next",)):
            await self.confirm_dropping(f"/{cmd.name}", line or f"/{cmd.name}", lambda: self._run(cmd))
            return
        await self._run(cmd)

    async def _run(self, cmd: slash.SlashCommand) -> None:
        screen = self.screen
        app = screen.app
        if cmd.name == "help":
            await screen.log_view.add_note(slash.help_text(), reveal=True)
        elif cmd.name == "quit":
            await app.run_action("quit_flush('/quit')")
        elif cmd.name in ("history", "browse", "jobs", "stores"):
            target = "memory" if cmd.name == "browse" else cmd.name
            await app.run_action(f"show('{target}')")
        elif cmd.name == "reset":
            closed = self.services.review.end()
            sweep(self.services.manager.repo)  # what a killed patch write left in .autopatch-j/tmp/
            await screen.reset_view()
            await screen.log_view.add_note(RESET_NOTE + (" " + AUDIT_CLOSED if closed else ""), reveal=True)
        elif cmd.name == "context":
            lines = context_lines(getattr(app, "last_prompt", None))
            await screen.log_view.add_note(visible("\n".join(lines)), reveal=True)
        elif cmd.name == "new":
            self._new()
        elif cmd.name == "memory":
            self._memory(cmd.args)
        elif cmd.name == "remember":
            await screen.remember(cmd.rest)
        elif cmd.name == "audit":
            await self._audit(cmd)
        elif cmd.name == "patch":
            await self._patch(cmd)

    # --- repair workflows ---------------------------------------------------------------
    def _progress(self, text: str) -> None:
        self.screen.check_cancelled()  # Escape: the workflow stops at its next step
        self.screen.post_message(WorkflowProgress(text))

    async def _audit(self, cmd: slash.SlashCommand) -> None:
        repair = self.services.repair
        text = "/audit " + (cmd.rest or " ".join(cmd.args))
        if cmd.args == ("next",):
            await self.screen.start_turn(text.strip(), lambda cb: repair.audit_next(
                text.strip(), progress=self._progress, callbacks=cb))
            return
        paths = mentioned_paths(cmd.rest)
        await self.screen.start_turn(text.strip(), lambda cb: repair.audit(
            text.strip(), paths, progress=self._progress, callbacks=cb), needs_model=False)

    async def _patch(self, cmd: slash.SlashCommand) -> None:
        repair = self.services.repair
        sub = cmd.args[0]
        if sub in ("explain", "revise"):
            finding = cmd.args[1]
            text = f"/patch {sub} {finding}" + (f" {cmd.rest}" if cmd.rest else "")
            if sub == "explain":
                work = lambda cb: repair.explain(finding, cmd.rest, text, callbacks=cb)  # noqa: E731
            else:
                work = lambda cb: repair.revise(finding, cmd.rest, text, callbacks=cb)  # noqa: E731
            await self.screen.start_turn(text, work)
            return
        actions = {"list": lambda: repair.summary(), "show": lambda: repair.show(cmd.args[1]),
                   "apply": lambda: repair.apply(cmd.args[1]), "discard": lambda: repair.discard(cmd.args[1])}
        self._in_thread(actions[sub], group="patch", markdown=sub in ("list", "show"))

    def _export(self, to: Path | None) -> Path:
        """`/memory export` in the worker thread: the snapshot streams, its rows shown as it goes."""
        screen = self.screen
        try:
            return self.services.manager.export(to=to, progress=_export_progress(screen))
        finally:
            screen.app.call_from_thread(screen.set_busy, "")

    def _new(self) -> None:
        mgr = self.services.manager
        screen = self.screen
        screen.set_busy("/new: flushing the old thread's Memory jobs…")

        review = self.services.review

        def work() -> str:
            closed = review.end()  # /new ends the review state first; a running request keeps its own
            captured = flush_text.open_jobs(mgr)
            result = mgr.new_thread()
            closed = review.end() or closed  # an audit begun during the flush ran on the old thread
            f = result.flush
            outcome = flush_text.flush_report(flush_text.outcomes(mgr, captured), f.pending)
            text = f"New thread {result.new_thread_id}. Memory flush of the old thread: {outcome}"
            if f.timed_out:
                text += " The flush timed out: the remaining jobs stay queued and finish in the background."
            if closed:
                text += " " + AUDIT_CLOSED
            return text

        async def after() -> None:
            await screen.reset_view()
            screen.set_busy("")

        self._in_thread(work, after=after)

    def _memory(self, args: tuple[str, ...]) -> None:
        mgr = self.services.manager
        sub = args[0]
        if sub == "status":
            self._in_thread(lambda: "\n".join(render_status(mgr.status())))
        elif sub == "list":
            kind = args[1] if len(args) > 1 else None
            self._in_thread(lambda: "\n".join(render_item_line(i) for i in mgr.list_items(kind=kind))
                            or "No active Memory items.")
        elif sub == "show":
            self._in_thread(lambda: "\n".join(render_item(mgr.show_item(args[1]))))
        elif sub == "forget":
            self._in_thread(lambda: _forgot(mgr, args[1]))
        elif sub == "export":
            to = export_target(mgr.repo, args[2]) if len(args) == 3 else None
            self._in_thread(lambda: f"Memory exported to {self._export(to)}")
        elif sub == "clear":
            if "--confirm" not in args:
                self._in_thread(lambda: "`/memory clear` deletes all Memory data; repeat with --confirm.",
                                level="warning")
                return
            self._in_thread(lambda: f"Memory cleared; new empty thread {mgr.clear(confirm=True)}. Exports were kept.",
                            after=self.screen.reset_view)


def _export_progress(screen: object) -> Callable[[int, int], None]:
    """The busy line of a running export, at most a few times a second (from the worker thread)."""
    last = [0.0]

    def show(done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] >= 0.25 or done >= total:
            last[0] = now
            screen.app.call_from_thread(screen.set_busy, f"Exporting Memory: {done:,} of {total:,} rows…")  # type: ignore[attr-defined]
    return show


def export_target(repo: Path, raw: str) -> Path:
    """`/memory export --to PATH`: as the CLI's `--to`; a relative path is taken from the repository
    root (as `@path` mentions are)."""
    path = Path(raw).expanduser()
    return path if path.is_absolute() else repo / path


async def _maybe_await(value: Awaitable[None] | None) -> None:
    if value is not None:
        await value


def flush_label(event: FlushProgress) -> str:
    return f"/new: Memory flush {event.done}/{event.total}" + (" (timed out)" if event.timed_out else "")


def _forgot(mgr, item_id: str) -> str:  # type: ignore[no-untyped-def]
    """`/memory forget ID`'s answer: what went, and whether a promoted bullet of it remains."""
    from autopatch_tui.core.instructions.promote import forget_note

    logical = mgr.forget(item_id)
    note = forget_note(mgr.repo, logical)
    return f"Forgot {logical}. The raw turns it came from are kept." + (f"\n{note}" if note else "")
