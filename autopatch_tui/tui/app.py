"""The Textual app: owns the services (manager, settings, clock), turns manager events into
reactive state, hosts the screens, handles worker errors in one place, and flushes Memory on exit."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import threading
from collections.abc import Iterable
from pathlib import Path

from textual import events
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.reactive import var
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from autopatch_tui.core.agent.prompt_report import PromptReport
from autopatch_tui.core.errors import AutopatchError
from autopatch_tui.core.events import (
    FlushProgress,
    JobFinished,
    MemoryChanged,
    Notice,
    PromptMeasured,
    QueueCounts,
)
from autopatch_tui.core.logs import log_path
from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.pipeline.exit_once import ExitFlush
from autopatch_tui.core.settings import Settings, save_setting
from autopatch_tui.core.terminal_text import escape_controls
from autopatch_tui.tui.key_bursts import KeyBurst
from autopatch_tui.tui.messages import CoreEvent
from autopatch_tui.tui.resources import style
from autopatch_tui.tui.services import Services
from autopatch_tui.tui.typing import TypedText, TypingBuffer, typed_character

log = logging.getLogger(__name__)

SCREEN_KEYS = {"chat": "f2", "history": "f3", "memory": "f4", "jobs": "f5", "stores": "f6"}
HANGUP_EXIT_GRACE_SECONDS = 5.0  # after a hang-up's flush, the app gets this long to end before a hard exit
QUIT_HELP = "Save Memory (a bounded flush of pending jobs), then quit"
STATE_REFRESH_SECONDS = 0.25  # the status bar's health/thread/job counts follow Memory changes this closely
SCREEN_TITLES = {"chat": "Chat", "history": "History", "memory": "Memory", "jobs": "Jobs", "stores": "Stores"}


def safe_error(error: BaseException | None, log_file: Path | None = None) -> str:
    """A worker error for people: our typed errors carry safe text; anything else shows its type only
    and names the log file, where its frames are (with AUTOPATCH_DEBUG)."""
    if isinstance(error, AutopatchError):
        return str(error)
    where = f"see the log at {log_file}" if log_file is not None else "see the log"
    return f"unexpected error ({type(error).__name__}); {where}"


class AutopatchApp(App):
    TITLE = "autopatch-tui"
    # every screen's stylesheet is read once at startup: a screen whose CSS_PATH is already loaded
    # opens without a stylesheet reparse and a restyle of the whole app (Textual's first-open cost)
    CSS_PATH = [style(name) for name in ("app.tcss", "chat.tcss", "history.tcss", "memory_browser.tcss",
                                         "diagnostics.tcss", "stores.tcss", "dialogs.tcss")]
    BINDINGS = [
        *(Binding(key, f"show('{name}')", SCREEN_TITLES[name], id=f"screen.{name}", priority=True)
          for name, key in SCREEN_KEYS.items()),  # priority: the focused prompt (a TextArea) binds f6
        Binding("ctrl+q", "quit_flush", "Quit", id="app.quit", priority=True),
        Binding("f1", "help", "Help", id="app.help", priority=True),
        Binding("question_mark", "help", "Help", id="app.help_question", show=False),  # a text field types "?"
    ]

    # The App's state is `var`, not `reactive`: a reactive on the App repaints the whole screen on
    # every change (App.refresh -> a full compositor update, ~20 ms with a chat log), and a busy
    # worker changes these once or more per job. Screens watch them and refresh only what shows them.
    job_counts: var[tuple[int, int, int, int]] = var((0, 0, 0, 0))
    health: var[str] = var("healthy")
    active_thread: var[str] = var("")
    memory_version: var[int] = var(0)
    job_events: var[int] = var(0)
    store_generation: var[int] = var(0)  # +1 when the app reopened on another store
    last_prompt: var[PromptReport | None] = var(None)  # the last chat/repair request's prompt by part (tokens)
    review_count: var[int] = var(0)  # Memory items awaiting review (contracts §8), for the status bar
    # set by `launch_app` (the real process): after the first frame, `gc.freeze()` the start-up objects
    # (see tui/gc_tuning.py); tests leave it off, so their process-wide GC is untouched
    freeze_gc_after_start = False

    def __init__(self, services: Services) -> None:
        super().__init__()
        self.services = services
        self._unsubscribe = None
        self._state_refresh_pending = False
        self.exit_flush = ExitFlush(lambda: self.manager)  # every exit path flushes through this, once
        self._exiting = False
        self._quit_confirmed = False  # the user agreed to lose pending patches that could not be saved
        self._signals_installed: dict[int, object] = {}  # signal -> the handler it had before
        self.run_finished = threading.Event()  # set once `run()` returned (a hang-up's hard exit waits for it)
        self.ended = threading.Event()  # set once the app unmounted or `run()` returned (SIGTERM's watchdog)
        self.typing = TypingBuffer(self.call_later)  # printable keys of one burst: one insert (tui/typing.py)

    def run(self, *args: object, **kwargs: object):  # type: ignore[override]
        try:
            return super().run(*args, **kwargs)  # type: ignore[arg-type]
        finally:
            self.ended.set()
            self.run_finished.set()

    @classmethod
    def for_repo(cls, repo: str | Path | None, settings: Settings) -> AutopatchApp:
        return cls(Services(MemoryManager.open(repo, settings), settings))

    @property
    def manager(self) -> MemoryManager:
        return self.services.manager

    # --- lifecycle ----------------------------------------------------------------------
    def on_mount(self) -> None:
        settings = self.services.settings
        if settings.theme in self.available_themes:
            self.theme = settings.theme
        if settings.keymap:
            self.set_keymap(settings.keymap)
        self._bind_manager(self.manager)
        self._install_exit_signals()
        self.run_worker(self._refresh_state, thread=True, group="state", exit_on_error=False)
        self.push_screen(self.make_screen("chat"))
        if self.freeze_gc_after_start:
            from autopatch_tui.tui.gc_tuning import freeze_start_up_objects

            self.call_after_refresh(freeze_start_up_objects)

    def on_unmount(self) -> None:
        self.ended.set()
        self._remove_exit_signals()
        self._detach_manager()
        self.manager.close()
        self.services.close_no_memory()

    def _bind_manager(self, manager: MemoryManager) -> None:
        """Follow `manager`: its events become App messages, its health the App's, its worker runs."""
        self._unsubscribe = manager.events.subscribe(lambda e: self.post_message(CoreEvent(e)))
        self.health = "healthy" if manager.healthy else "degraded"
        # The worker starts once a frame is on screen: its first job (importing and building the
        # model SDK, ~0.5 s of CPU) would otherwise hold the GIL while the first frame is drawn.
        self.call_after_refresh(self._start_background, manager)

    def _start_background(self, manager: MemoryManager) -> None:
        # not one this app has since left (a store merge reopened it), nor one an exit already closed
        if manager is self.manager and not self._exiting and not manager.closed:
            manager.start_background()

    def _detach_manager(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def watch_theme(self, theme: str) -> None:
        if self.is_mounted and theme != self.services.settings.theme and self.services.settings.config_file:
            try:
                save_setting(self.services.settings.config_file, "theme", theme)
            except OSError as exc:
                log.warning("theme not saved: %s", type(exc).__name__)

    # --- following a merge of this app's own store --------------------------------------
    def follow_store_merge(self) -> None:
        """This app's store was merged away (FR-057/058): close the manager on the retired store and
        reopen the repository, whose alias redirect now leads to the living holder. Blocking work
        (closing waits for the worker; opening validates the store) runs in a thread worker."""
        self.run_worker(self._reopen_manager, thread=True, group="reopen", exclusive=True, exit_on_error=False)

    def _reopen_manager(self) -> None:
        old = self.manager
        self.call_from_thread(self._detach_manager)
        old.close()
        new = MemoryManager.open(old.repo, self.services.settings)
        self.call_from_thread(self._attach_manager, new)

    def _attach_manager(self, manager: MemoryManager) -> None:
        self.services.manager = manager
        self._bind_manager(manager)
        self.store_generation += 1  # views holding store services rebuild them
        self.memory_version += 1  # every open view reloads from the holder
        self._schedule_state_refresh()
        holder = manager.redirect.holder if manager.redirect is not None else None
        if manager.healthy and holder:
            self.notify(f"This app now uses {holder}, the store its checkout was merged into.",
                        title="Store merged", timeout=10, markup=False)
        else:
            diagnostic = manager.store.health.diagnostic or "unknown"
            self.notify(f"The merged store could not be opened: {diagnostic}.", title="Store merged",
                        severity="error", timeout=12, markup=False)

    # --- state from the manager ---------------------------------------------------------
    def _schedule_state_refresh(self) -> None:
        """One status read per STATE_REFRESH_SECONDS however many Memory changes arrive (a busy
        worker reports one per job): each read is a thread worker and a full status query."""
        if self._state_refresh_pending:
            return
        self._state_refresh_pending = True
        self.set_timer(STATE_REFRESH_SECONDS, self._start_state_refresh)

    def _start_state_refresh(self) -> None:
        self._state_refresh_pending = False
        self.run_worker(self._refresh_state, thread=True, group="state", exit_on_error=False)

    def _refresh_state(self) -> None:
        mgr = self.manager
        if not mgr.healthy:
            self.call_from_thread(setattr, self, "health", "degraded")
            return
        report = mgr.status()
        j = report.jobs
        counts = (j.pending, j.leased, j.retry_wait, j.failed)
        self.call_from_thread(self._apply_state, counts, report.active_thread_id or "", report.review.new)

    def _apply_state(self, counts: tuple[int, int, int, int], thread_id: str, review: int = 0) -> None:
        self.job_counts = counts
        self.active_thread = thread_id
        self.review_count = review
        self.health = "healthy" if self.manager.healthy else "degraded"

    # --- typed text ---------------------------------------------------------------------
    def get_driver_class(self):  # type: ignore[no-untyped-def]
        """The platform's driver, sending printable keys read together as one burst (`tui/key_bursts.py`)."""
        from autopatch_tui.tui.key_bursts import with_key_bursts

        return with_key_bursts(super().get_driver_class())

    async def on_event(self, event: events.Event) -> None:
        """Input events, before bindings: printable keys go to the screen's typing target as one
        insert per burst (`tui/typing.py`); any other input event first delivers what was typed
        before it. Once the app is quitting, typed keys are dropped (a backlog of keystrokes never
        delays the exit)."""
        if isinstance(event, TypedText):
            return  # bubbled back up from the field that inserted it
        if isinstance(event, KeyBurst):
            await self._on_key_burst(event)
            return
        if isinstance(event, events.InputEvent) and not event.is_forwarded:
            if isinstance(event, events.Key) and self._hold_typed(event):
                return
            self.typing.flush()
        await super().on_event(event)

    async def _on_key_burst(self, burst: KeyBurst) -> None:
        """Printable keys the driver read together: their text in one insert where the screen takes
        text; elsewhere each key as if it had come alone (a letter key stays a key)."""
        if self._exiting or not burst.keys:
            return
        choose = getattr(self.screen, "typing_target", None)
        target = choose(burst.keys[0]) if choose is not None else None
        if target is None:
            for key in burst.keys:
                await self.on_event(key)
            return
        if not self.app_focus:
            self.app_focus = True  # as Textual does for a key
        if self.focused is not target:
            self.screen.set_focus(target)
        self.typing.hold(target, burst.text, burst.series)

    def _hold_typed(self, event: events.Key) -> bool:
        character = typed_character(event)
        if character is None:
            return False
        if self._exiting:
            return True
        choose = getattr(self.screen, "typing_target", None)
        target = choose(event) if choose is not None else None
        if target is None:
            return False
        if self.focused is not target:
            self.screen.set_focus(target)  # text typed on the chat screen always reaches the prompt
        self.typing.hold(target, character)
        return True

    def notify(self, message: str, *args: object, **kwargs: object) -> None:  # type: ignore[override]
        """Every notification shows control characters as escapes (it may name a label, a path or a
        store's text)."""
        super().notify(escape_controls(str(message)), *args, **kwargs)  # type: ignore[arg-type]

    def on_core_event(self, message: CoreEvent) -> None:
        event = message.event
        if isinstance(event, QueueCounts):
            self.job_counts = (event.pending, event.leased, event.retry_wait, event.failed)
        elif isinstance(event, JobFinished):
            self.job_events += 1
        elif isinstance(event, MemoryChanged):
            self.memory_version += 1
            self._schedule_state_refresh()
        elif isinstance(event, Notice):
            self.notify(event.text, severity="error" if event.level == "error" else
                        "warning" if event.level == "warning" else "information", markup=False)
        elif isinstance(event, PromptMeasured):
            self.last_prompt = event.report
        elif isinstance(event, FlushProgress):
            screen = self.screen
            if hasattr(screen, "set_busy"):
                screen.set_busy(f"/new: Memory flush {event.done}/{event.total}")

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        self.report_worker_state(event)

    def report_worker_state(self, event: Worker.StateChanged) -> None:
        """The one place worker errors are reported (screens hand their workers' states here)."""
        if event.state == WorkerState.ERROR:
            error = event.worker.error
            log.error("worker %s failed: %s", event.worker.name, type(error).__name__,
                      exc_info=error if isinstance(error, BaseException) else None)
            self.notify(safe_error(error, log_path(self.services.settings.home)), title="Error", severity="error",
                        timeout=8, markup=False)

    # --- navigation ---------------------------------------------------------------------
    def make_screen(self, name: str) -> Screen:
        from autopatch_tui.tui.screens.registry import build_screen

        return build_screen(name, self.services)

    async def action_show(self, name: str) -> None:
        """Switch to a screen: chat is the base; every other screen sits alone on top of it. Screens
        are built once and kept (installed), so coming back is instant and keeps their state; they
        follow the App's reactive state while hidden."""
        if name not in SCREEN_KEYS:
            return
        if self.screen.name == name:  # its key again: a screen with views shows the next one, any
            next_view = getattr(self.screen, "action_next_view", None)  # other goes back to its field
            home = getattr(self.screen, "focus_home", None)  # (chat: the prompt)
            if next_view is not None:
                next_view()
            elif home is not None:
                home()
            return
        while len(self.screen_stack) > 2:  # Textual's default screen + chat
            await self.pop_screen()
        if name != "chat":
            fresh = not self.is_screen_installed(name)
            if fresh:
                self.install_screen(self.make_screen(name), name)
            await self.push_screen(name)
        home = getattr(self.screen, "focus_home", None)
        if home is not None:
            home()  # a screen shown is ready for typing: its field (chat: the prompt), not its list
        if name != "chat":
            opened = getattr(self.screen, "opened", None)
            if not fresh and opened is not None:  # a kept screen is opened again (a new one does on mount)
                opened()

    async def action_help(self) -> None:
        """The current screen's keys, generated from its bindings (F1, or `?` outside text fields)."""
        from autopatch_tui.tui.screens.help import HelpScreen

        screen = self.screen
        if isinstance(screen, HelpScreen):
            return
        title = SCREEN_TITLES.get(screen.name or "", (screen.name or "dialog").capitalize())
        await self.push_screen(HelpScreen(screen, title))

    async def action_show_help_panel(self) -> None:
        """The palette's "Keys": this app's help screen (Textual's panel lists a focused TextArea's keys)."""
        await self.action_help()

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        for command in super().get_system_commands(screen):
            if command.title == "Quit":  # Textual's "Quit the application as soon as possible"
                command = SystemCommand("Quit", QUIT_HELP, command.callback, command.discover)
            yield command
        yield SystemCommand("Chat", "The conversation (F2)", lambda: self.run_action("show('chat')"))
        yield SystemCommand("Thread history", "Threads and turns (F3)", lambda: self.run_action("show('history')"))
        yield SystemCommand("Memory browser", "Items, revisions, provenance (F4)",
                            lambda: self.run_action("show('memory')"))
        yield SystemCommand("Job diagnostics", "Memory jobs and failures (F5)", lambda: self.run_action("show('jobs')"))
        yield SystemCommand("Find duplicate stores", "Merge-scan project stores now (F6, then d)",
                            self._find_duplicate_stores)

    async def _find_duplicate_stores(self) -> None:
        """The palette's "Find duplicate stores": the store list, with the scan started on it."""
        await self.action_show("stores")
        scan = getattr(self.screen, "action_scan", None)
        if scan is not None:
            scan()

    # --- exit ---------------------------------------------------------------------------
    async def action_quit(self) -> None:
        """Textual's own quit (the command palette's built-in "Quit") exits through the flush too."""
        await self.action_quit_flush("quit")

    async def action_quit_flush(self, reason: str = "ctrl+q") -> None:
        """Every interactive exit: show the flush, then exit. A second request while one runs is ignored."""
        from autopatch_tui.tui.screens.exit_flush import ExitFlushScreen

        if self._exiting or self.exit_flush.started or isinstance(self.screen, ExitFlushScreen):
            return
        review = self.services.review
        pending = review.pending_patches()
        if pending and review.persist_error and reason in ("ctrl+q", "quit", "/quit") and not self._quit_confirmed:
            await self._confirm_losing_patches(pending, review.persist_error, reason)
            return
        self._exiting = True
        log.info("exit requested: %s", reason)
        await self.push_screen(ExitFlushScreen(self.services, flush=self.exit_flush, reason=reason))

    async def _confirm_losing_patches(self, pending: int, why: str, reason: str) -> None:
        """Quitting keeps pending patches (they are saved in .autopatch-j/): ask first only when they
        could not be saved, so they would go (one key, `y`)."""
        from autopatch_tui.tui.screens.confirm import ConfirmScreen

        async def answered(yes: bool | None) -> None:
            if yes:
                self._quit_confirmed = True
                await self.action_quit_flush(reason)

        body = (f"{why[0].upper()}{why[1:]}: the open audit's {pending} pending patch(es) go when the app quits."
                "\n\ny: quit · n or Escape: stay")
        await self.push_screen(ConfirmScreen("Quit and lose the pending patches?", body, "Quit"), answered)

    def _install_exit_signals(self) -> None:
        """SIGTERM exits like ctrl+q; SIGHUP (the terminal is gone) flushes without drawing anything
        (`tui/exit_signals.py`: how they reach the app, and the watchdog that bounds its exit)."""
        from autopatch_tui.tui import exit_signals

        self._signals_installed = exit_signals.install(self)

    def _remove_exit_signals(self) -> None:
        from autopatch_tui.tui import exit_signals

        exit_signals.remove(self._signals_installed)
        self._signals_installed = {}

    def _on_exit_signal(self, signum: int) -> None:
        name = signal.Signals(signum).name
        if signum == getattr(signal, "SIGHUP", None):
            self.hangup_exit(name)
            return
        # runs on the loop at once: typed keys still queued are dropped from now on, so the exit
        # screen comes after a backlog of keystrokes at the cost of reading them only
        self.typing.drop()
        if not self._exiting and not self.exit_flush.started:
            self._exiting = True
            self.call_later(self._quit_on_signal, name)

    async def _quit_on_signal(self, reason: str) -> None:
        self._exiting = False  # `action_quit_flush` sets it again and shows the flush
        await self.action_quit_flush(reason)

    def hangup_exit(self, reason: str) -> threading.Thread:
        """The terminal hung up: drawing could block on the dead terminal, so the flush runs in a
        plain thread, then the manager closes and the app is asked to exit; if it has not ended
        within HANGUP_EXIT_GRACE_SECONDS, the process exits hard (Memory is already safe)."""
        self._exiting = True
        loop = asyncio.get_running_loop()
        signum = getattr(signal, reason, None)

        def work() -> None:
            if self.exit_flush.run(reason) is None:
                self.exit_flush.wait(self.exit_flush.limit)
            self.manager.close()
            try:
                loop.call_soon_threadsafe(self.exit)
            except RuntimeError as exc:  # the app already ended and its loop closed: nothing to ask
                log.debug("%s: the app's loop is gone (%s)", reason, type(exc).__name__)
            if not self.run_finished.wait(HANGUP_EXIT_GRACE_SECONDS) and signum is not None:
                log.info("%s: the app did not end after the flush; exiting hard", reason)
                logging.shutdown()
                os._exit(128 + int(signum))

        thread = threading.Thread(target=work, name="hangup-exit", daemon=True)
        thread.start()
        return thread
