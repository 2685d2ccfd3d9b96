"""The Textual app: owns the services (manager, settings, clock), turns manager events into
reactive state, hosts the screens, handles worker errors in one place, and flushes Memory on exit."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.reactive import reactive
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from autopatch_tui.core.errors import AutopatchError
from autopatch_tui.core.events import (
    FlushProgress,
    JobFinished,
    MemoryChanged,
    Notice,
    QueueCounts,
)
from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.settings import Settings, save_setting
from autopatch_tui.tui.messages import CoreEvent
from autopatch_tui.tui.resources import style
from autopatch_tui.tui.services import Services

log = logging.getLogger(__name__)

SCREEN_KEYS = {"chat": "f2", "history": "f3", "memory": "f4", "jobs": "f5", "stores": "f6"}
STATE_REFRESH_SECONDS = 0.25  # the status bar's health/thread/job counts follow Memory changes this closely
SCREEN_TITLES = {"chat": "Chat", "history": "History", "memory": "Memory", "jobs": "Jobs", "stores": "Stores"}


def safe_error(error: BaseException | None) -> str:
    """A worker error for people: our typed errors carry safe text; anything else shows its type only."""
    if isinstance(error, AutopatchError):
        return str(error)
    return f"unexpected error ({type(error).__name__}); see the log"


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

    job_counts: reactive[tuple[int, int, int, int]] = reactive((0, 0, 0, 0))
    health: reactive[str] = reactive("healthy")
    active_thread: reactive[str] = reactive("")
    memory_version: reactive[int] = reactive(0)
    job_events: reactive[int] = reactive(0)
    store_generation: reactive[int] = reactive(0)  # +1 when the app reopened on another store

    def __init__(self, services: Services) -> None:
        super().__init__()
        self.services = services
        self._unsubscribe = None
        self._state_refresh_pending = False

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
        self.run_worker(self._refresh_state, thread=True, group="state", exit_on_error=False)
        self.push_screen(self.make_screen("chat"))

    def on_unmount(self) -> None:
        self._detach_manager()
        self.manager.close()

    def _bind_manager(self, manager: MemoryManager) -> None:
        """Follow `manager`: its events become App messages, its health the App's, its worker runs."""
        self._unsubscribe = manager.events.subscribe(lambda e: self.post_message(CoreEvent(e)))
        self.health = "healthy" if manager.healthy else "degraded"
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
        self.call_from_thread(self._apply_state, counts, report.active_thread_id or "")

    def _apply_state(self, counts: tuple[int, int, int, int], thread_id: str) -> None:
        self.job_counts = counts
        self.active_thread = thread_id
        self.health = "healthy" if self.manager.healthy else "degraded"

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
            log.error("worker %s failed: %s", event.worker.name, type(error).__name__)
            self.notify(safe_error(error), title="Error", severity="error", timeout=8, markup=False)

    # --- navigation ---------------------------------------------------------------------
    def make_screen(self, name: str) -> Screen:
        from autopatch_tui.tui.screens.registry import build_screen

        return build_screen(name, self.services)

    async def action_show(self, name: str) -> None:
        """Switch to a screen: chat is the base; every other screen sits alone on top of it. Screens
        are built once and kept (installed), so coming back is instant and keeps their state; they
        follow the App's reactive state while hidden."""
        if name not in SCREEN_KEYS or self.screen.name == name:
            return
        while len(self.screen_stack) > 2:  # Textual's default screen + chat
            await self.pop_screen()
        if name != "chat":
            if not self.is_screen_installed(name):
                self.install_screen(self.make_screen(name), name)
            await self.push_screen(name)

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
        yield from super().get_system_commands(screen)
        yield SystemCommand("Chat", "The conversation (F2)", lambda: self.run_action("show('chat')"))
        yield SystemCommand("Thread history", "Threads and turns (F3)", lambda: self.run_action("show('history')"))
        yield SystemCommand("Memory browser", "Items, revisions, provenance (F4)",
                            lambda: self.run_action("show('memory')"))
        yield SystemCommand("Job diagnostics", "Memory jobs and failures (F5)", lambda: self.run_action("show('jobs')"))
        yield SystemCommand("Find duplicate stores", "Merge-scan project stores (F6)",
                            lambda: self.run_action("show('stores')"))

    # --- exit ---------------------------------------------------------------------------
    async def action_quit_flush(self) -> None:
        from autopatch_tui.tui.screens.exit_flush import ExitFlushScreen

        if isinstance(self.screen, ExitFlushScreen):
            return
        await self.push_screen(ExitFlushScreen(self.services))
