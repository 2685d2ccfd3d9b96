"""The services the App owns and hands to every screen by constructor."""

from __future__ import annotations

from dataclasses import dataclass, field

from autopatch_tui.core.agent.chat import ChatService
from autopatch_tui.core.clock import Clock, SystemClock
from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.repair.workflows import RepairService
from autopatch_tui.core.repair.workspace import ReviewState
from autopatch_tui.core.settings import Settings


@dataclass
class Services:
    manager: MemoryManager
    settings: Settings
    clock: Clock = field(default_factory=SystemClock)
    review: ReviewState = field(default_factory=ReviewState)  # the open audit (runtime state; /new, /reset end it)

    @property
    def chat(self) -> ChatService:
        return ChatService(self.manager, auditor=self.repair)  # routing may hand a turn to the audit

    @property
    def repair(self) -> RepairService:
        return RepairService(self.manager, self.review)

    @property
    def model_label(self) -> str:
        if self.manager.client is None:
            return "no model"
        return self.settings.chat_model or "model?"
