"""One ordinary chat turn end to end: RAW user text saved first, intent routed, context built
(checkpoint, Memory Map, history by budget, the message once), the agent run, the shown answer
saved. The request keeps its thread binding even if `/new` runs meanwhile."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from autopatch_tui.core.agent import context as ctx
from autopatch_tui.core.agent.loop import AgentCallbacks, AgentLoop
from autopatch_tui.core.agent.router import classify, explicit_intent
from autopatch_tui.core.agent.source_tools import SourceTools
from autopatch_tui.core.agent.tools import ToolBox
from autopatch_tui.core.errors import AutopatchError, ConfigError, MemoryStoreError, NoModelError
from autopatch_tui.core.llm.profiles import resolve_profile
from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.memory import turns as turn_ops
from autopatch_tui.core.recall.query import RecallQuery, policy_for
from autopatch_tui.core.recall.session import RecallSession

log = logging.getLogger(__name__)

NO_MODEL_HELP = (
    "No model is configured. Set AUTOPATCH_LLM_BASE_URL (an OpenAI-compatible endpoint, e.g. "
    "http://127.0.0.1:11434/v1), AUTOPATCH_LLM_MODEL and, if needed, AUTOPATCH_LLM_API_KEY — in the environment "
    "or in config.toml. Memory commands work without a model."
)


@dataclass(frozen=True)
class ChatResult:
    turn_id: str
    thread_id: str
    answer: str
    state: str
    intent: str


class ChatService:
    def __init__(self, manager: MemoryManager) -> None:
        self.manager = manager

    def _model(self) -> str:
        if self.manager.client is None:
            raise NoModelError(NO_MODEL_HELP)
        model = self.manager.settings.chat_model
        if not model:
            raise ConfigError("no chat model configured: set AUTOPATCH_LLM_MODEL")
        return model

    def ask(self, text: str, *, intent: str | None = None, scope_paths: Sequence[str] = (),
            callbacks: AgentCallbacks | None = None) -> ChatResult:
        model = self._model()
        settings = self.manager.settings
        profile = resolve_profile(model, context_window=settings.context_window,
                                  max_output_tokens=settings.max_output_tokens)
        chosen = explicit_intent(intent)
        mgr = self.manager
        handle = mgr.begin_turn(text, intent=chosen or "general_chat", scope_paths=list(scope_paths))
        session: RecallSession | None = None
        try:
            client = mgr.client
            assert client is not None
            if chosen is None:
                chosen = classify(client, model, text)
                if chosen != handle.intent:
                    turn_ops.set_intent(mgr.store.conn(), handle.turn_id, chosen)
            conn = mgr.store.conn()
            checkpoint = conn.execute("SELECT checkpoint FROM threads WHERE id = ?", (handle.thread_id,)).fetchone()
            system = ctx.system_message(chosen, checkpoint[0] if checkpoint else "")
            session = RecallSession(mgr.store.conn, RecallQuery(chosen, text, tuple(scope_paths)),
                                    policy_for(chosen, handle.thread_id))
            toolbox = ToolBox(session, SourceTools(mgr.repo) if chosen == "code_explain" else None)
            budget = ctx.budget_for(profile, ctx.fixed_cost(system, text, toolbox.schemas))
            session.map_tokens = budget.map_tokens
            memory_map = session.memory_map().render()
            history = ctx.history_messages(conn, handle.thread_id, handle.sequence, budget.history_tokens)
            messages = [system]
            if memory_map:
                messages.append({"role": "system", "content": memory_map})
            messages += history
            messages.append({"role": "user", "content": text})
            run = AgentLoop(client, model).run(messages, toolbox, callbacks)
        except (AutopatchError, KeyboardInterrupt):
            try:
                mgr.fail_turn(handle)
            except MemoryStoreError as store_exc:  # keep the original error; recovery interrupts the turn
                log.warning("could not mark the turn failed: %s", type(store_exc).__name__)
            raise
        finally:
            if session is not None:
                session.close()
        mgr.complete_turn(handle, run.answer)
        return ChatResult(handle.turn_id, handle.thread_id, run.answer, "completed", chosen)
