"""The services the App owns and hands to every screen by constructor."""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from autopatch_tui.core.clock import Clock, SystemClock
from autopatch_tui.core.errors import AutopatchError
from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.repair.review_state import ReviewState
from autopatch_tui.core.settings import Settings

if TYPE_CHECKING:  # the agent and the repair workflows are imported on the first request, after the first frame
    from autopatch_tui.core.agent.chat import ChatService
    from autopatch_tui.core.repair.workflows import RepairService


@dataclass
class Services:
    manager: MemoryManager
    settings: Settings
    clock: Clock = field(default_factory=SystemClock)
    review: ReviewState = field(default_factory=ReviewState)  # the open audit (/new, /reset end it)
    _no_memory: MemoryManager | None = field(default=None, init=False, repr=False)
    _no_memory_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self) -> None:
        self.review.persist_to(self.manager.repo)  # its drafts are kept in .autopatch-j/ across a restart

    @property
    def work_manager(self) -> MemoryManager:
        """The manager chat and the repair workflows run on: the app's, or — when its store was
        merged into one not reachable here — one without Memory (`core/no_memory.py`), so chat and
        /audit still work."""
        from autopatch_tui.core.no_memory import merged_away, open_without_memory

        if not merged_away(self.manager):
            return self.manager
        with self._no_memory_lock:
            if self._no_memory is None or self._no_memory.closed:
                self._no_memory = open_without_memory(self.manager)
            return self._no_memory

    def close_no_memory(self) -> None:
        """At exit: the session without Memory ends, its temporary store is deleted."""
        with self._no_memory_lock:
            extra, self._no_memory = self._no_memory, None
        if extra is not None:
            from autopatch_tui.core.no_memory import close_without_memory

            close_without_memory(extra)

    def start_session(self) -> str:
        """Once, in a worker after the first frame: sweep what a killed patch write left, and restore
        the saved audit of the active thread. Returns the chat's note about it ("" for none)."""
        from autopatch_tui.core.repair.patch_files import sweep

        sweep(self.manager.repo)
        if not self.manager.healthy:  # the audit's thread cannot be known: its file stays for a later start
            return ""
        try:
            thread_id = self.manager.active_thread_id()
        except (AutopatchError, sqlite3.Error):
            return ""
        return self.review.restore(thread_id)

    @property
    def chat(self) -> ChatService:
        from autopatch_tui.core.agent.chat import ChatService

        return ChatService(self.work_manager, auditor=self.repair)  # routing may hand a turn to the audit

    @property
    def repair(self) -> RepairService:
        from autopatch_tui.core.repair.workflows import RepairService

        return RepairService(self.work_manager, self.review)

    @property
    def model_label(self) -> str:
        if self.manager.client is None:
            return "no model"
        return self.settings.chat_model or "model?"
