"""One ordinary chat turn end to end: RAW user text saved first, intent routed, context built
(checkpoint, Memory Map, history by budget, the message once), the agent run, the shown answer
saved. The request keeps its thread binding even if `/new` runs meanwhile."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from autopatch_tui.core.agent import context as ctx
from autopatch_tui.core.agent.loop import AgentCallbacks, AgentLoop, AgentRun
from autopatch_tui.core.agent.router import classify, explicit_intent
from autopatch_tui.core.agent.scoped_files import footer as scoped_footer
from autopatch_tui.core.agent.scoped_files import scoped_files
from autopatch_tui.core.agent.source_tools import SourceToolError, SourceTools
from autopatch_tui.core.agent.tools import ToolBox
from autopatch_tui.core.errors import (
    ConfigError,
    NoModelError,
)
from autopatch_tui.core.llm.profiles import ContextProfile, resolve_profile
from autopatch_tui.core.llm.tokens import estimate_tokens
from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.memory import turns as turn_ops
from autopatch_tui.core.recall.query import RecallQuery
from autopatch_tui.core.recall.session import RecallSession
from autopatch_tui.core.repair.workspace import ReviewState


FILES_SHARE = 0.6  # of the prompt room left after the system prompt and the message, without tools

NO_MODEL_HELP = (
    "No model is configured. Set AUTOPATCH_LLM_BASE_URL (an OpenAI-compatible endpoint, e.g. "
    "http://127.0.0.1:11434/v1), AUTOPATCH_LLM_MODEL and, if needed, AUTOPATCH_LLM_API_KEY — in the environment "
    "or in config.toml. Memory commands work without a model."
)
# a message the router sends to code_audit while the open audit has pending patches: a new audit
# would replace it without the confirmation /audit asks for, so it is not started
ROUTED_AUDIT_REFUSED = ("No new audit was started: it would drop the open audit's {pending} pending patch(es). Apply "
                        "or discard them first (/patch list), or type /audit, which asks before it drops them.")


@dataclass(frozen=True)
class ChatResult:
    turn_id: str
    thread_id: str
    answer: str
    state: str
    intent: str


class ChatService:
    def __init__(self, manager: MemoryManager, review: ReviewState | None = None) -> None:
        """`review`: the app session's audit state; with it, routing may choose `code_audit`."""
        self.manager = manager
        self.review = review

    def _model(self) -> str:
        if self.manager.client is None:
            raise NoModelError(NO_MODEL_HELP)
        model = self.manager.settings.chat_model
        if not model:
            raise ConfigError("no chat model configured: set AUTOPATCH_LLM_MODEL")
        return model

    def _profile(self) -> tuple[str, ContextProfile]:
        model = self._model()
        settings = self.manager.settings
        return model, resolve_profile(model, context_window=settings.context_window,
                                      max_output_tokens=settings.max_output_tokens)

    def ask(self, text: str, *, intent: str | None = None, scope_paths: Sequence[str] = (),
            callbacks: AgentCallbacks | None = None) -> ChatResult:
        model, profile = self._profile()  # no model or no context profile: nothing is stored
        chosen = explicit_intent(intent)
        mgr = self.manager
        since = self.review.generation if self.review is not None else None  # before the turn begins
        handle = mgr.begin_turn(text, intent=chosen or "general_chat", scope_paths=list(scope_paths))
        with mgr.failing_turn(handle):
            client = mgr.client
            assert client is not None
            if chosen is None:
                chosen = classify(client, model, text, audit=self.review is not None)
                if chosen != handle.intent:
                    turn_ops.set_intent(mgr.store.conn(), handle.turn_id, chosen)
            pending = self.review.pending_patches() if self.review is not None else 0
            if chosen == "code_audit" and pending:  # only /audit asks before it drops them
                answer = ROUTED_AUDIT_REFUSED.format(pending=pending)
            elif chosen == "code_audit" and self.review is not None:
                # imported here: the repair package imports this module
                from autopatch_tui.core.repair.workflows import RepairService

                answer = RepairService(mgr, self.review).audit_turn(handle, text, callbacks=callbacks, since=since)
            else:
                answer = self.respond(handle, chosen, text, model=model, profile=profile, callbacks=callbacks).answer
        mgr.complete_turn(handle, answer)
        return ChatResult(handle.turn_id, handle.thread_id, answer, "completed", chosen)

    def respond(self, handle: turn_ops.TurnHandle, intent: str, text: str, *, model: str, profile: ContextProfile,
                callbacks: AgentCallbacks | None = None, query: RecallQuery | None = None) -> AgentRun:
        """Run the agent for a started turn. Everything is bound to `handle.thread_id` and to the
        intent's immutable policy, whatever `/new` does meanwhile: an ordinary request gets the
        thread's checkpoint and history; a repair request gets neither (its policy has no history),
        and its Map and tools see only path-applicable project preferences and decisions. The
        request's RecallSession is closed when this returns."""
        mgr = self.manager
        client = mgr.client
        if client is None:
            raise NoModelError(NO_MODEL_HELP)
        query = query or RecallQuery(intent, text, handle.scope_paths)
        conn = mgr.store.conn()
        policy = mgr.review.policy(intent, handle.thread_id, conn)  # approval mode, as it is now
        checkpoint = ""
        if policy.include_history:
            row = conn.execute("SELECT checkpoint FROM threads WHERE id = ?", (handle.thread_id,)).fetchone()
            checkpoint = row[0] if row else ""
        system = ctx.system_message(intent, checkpoint)
        session = RecallSession(mgr.store.conn, query, policy)
        try:
            toolbox = ToolBox(session, SourceTools(mgr.repo) if intent == "code_explain" else None)
            cb = callbacks or AgentCallbacks()
            loop = AgentLoop(client, model, profile=profile,
                             first_tool_choice=first_read(mgr.repo, handle.scope_paths, intent))
            if loop.use_tools:
                run = loop.run(self._prompt(handle, system, text, toolbox.schemas, session, profile,
                                            policy.include_history), toolbox, cb)
                if not run.tools_refused:
                    return run
            # without tools (AUTOPATCH_LLM_TOOLS=off, or the server ignores them): code_explain
            # reads the scoped files from the prompt, and the answer says so. They travel in the user
            # turn, ahead of the user's own text: chat templates such as llama.cpp's `gemma` drop
            # system messages, and strict ones refuse two user messages in a row.
            files = None
            if intent == "code_explain":
                room = profile.input_capacity - ctx.fixed_cost(system, text, [])
                files = scoped_files(mgr.repo, list(handle.scope_paths), max(0, int(room * FILES_SHARE)))
            prompt = self._prompt(handle, system, text, [], session, profile, policy.include_history,
                                  extra_tokens=estimate_tokens(files.text) if files else 0)
            if files is not None and files.text:
                prompt[-1] = {"role": "user", "content": files.text + "\n\n---\n\n" + text}
            run = AgentLoop(client, model, profile=profile, use_tools=False).run(prompt, toolbox, cb)
            if files is not None:
                note = scoped_footer(files)
                run.answer += note
                cb.on_delta(note)
            return run
        finally:
            session.close()

    def _prompt(self, handle: turn_ops.TurnHandle, system: dict, text: str, schemas: list[dict],
                session: RecallSession, profile: ContextProfile, include_history: bool,
                extra_tokens: int = 0) -> list[dict]:
        """system prompt + Memory Map (one system message: many local chat templates — Gemma, Mistral —
        accept only one, first) → history by budget → the user message, once."""
        conn = self.manager.store.conn()
        budget = ctx.budget_for(profile, ctx.fixed_cost(system, text, schemas) + extra_tokens)
        session.map_tokens = budget.map_tokens
        memory_map = session.memory_map().render()
        history = (ctx.history_messages(conn, handle.thread_id, handle.sequence, budget.history_tokens)
                   if include_history else [])
        if memory_map:
            system = {"role": "system", "content": system["content"] + "\n\n" + memory_map}
        messages = [system, *history]
        messages.append({"role": "user", "content": text})
        return messages


def first_read(repo: Path, scope_paths: Sequence[str], intent: str) -> dict | None:
    """code_explain with a scoped file must read it: the first step is told to call read_file."""
    if intent != "code_explain":
        return None
    tools = SourceTools(repo)
    for raw in scope_paths:
        try:
            if tools.resolve(raw).is_file():
                return {"type": "function", "function": {"name": "read_file"}}
        except SourceToolError:
            continue
    return None
