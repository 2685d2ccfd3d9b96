"""The services the App owns and hands to every screen by constructor."""

from __future__ import annotations

import sqlite3
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

    def __post_init__(self) -> None:
        self.review.persist_to(self.manager.repo)  # its drafts are kept in .autopatch-j/ across a restart

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

        return ChatService(self.manager, auditor=self.repair)  # routing may hand a turn to the audit

    @property
    def repair(self) -> RepairService:
        from autopatch_tui.core.repair.workflows import RepairService

        return RepairService(self.manager, self.review)

    @property
    def model_label(self) -> str:
        if self.manager.client is None:
            return "no model"
        return self.settings.chat_model or "model?"
