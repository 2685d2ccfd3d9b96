"""The services the App owns and hands to every screen by constructor."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from autopatch_tui.core.clock import Clock, SystemClock
from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.repair.workspace import ReviewState
from autopatch_tui.core.settings import Settings

if TYPE_CHECKING:  # the agent and the repair workflows are imported on the first request, after the first frame
    from autopatch_tui.core.agent.chat import ChatService
    from autopatch_tui.core.repair.workflows import RepairService


@dataclass
class Services:
    manager: MemoryManager
    settings: Settings
    clock: Clock = field(default_factory=SystemClock)
    review: ReviewState = field(default_factory=ReviewState)  # the open audit (runtime state; /new, /reset end it)

    @property
    def chat(self) -> ChatService:
        from autopatch_tui.core.agent.chat import ChatService

        return ChatService(self.manager, self.review)

    @property
    def repair(self) -> RepairService:
        from autopatch_tui.core.repair.workflows import RepairService

        return RepairService(self.manager, self.review)

    @property
    def model_label(self) -> str:
        if self.manager.client is None:
            return "no model"
        return self.settings.chat_model or "model?"
