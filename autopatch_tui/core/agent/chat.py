"""One ordinary chat turn end to end: RAW user text saved first, intent routed, the agent run on
the context the request door builds (`request_context`: instruction files, checkpoint, Memory Map,
history by budget, the message once), the shown answer saved. The request keeps its thread binding
even if `/new` runs meanwhile. A turn routed to `code_audit` goes to the `Auditor` the caller hands
in (the repair workflows build on this module, never the other way round)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from autopatch_tui.core.agent import context as ctx
from autopatch_tui.core.agent.loop import AgentCallbacks, AgentLoop, AgentRun
from autopatch_tui.core.agent.request_context import NO_MODEL_HELP, chat_model, open_request
from autopatch_tui.core.agent.router import classify, explicit_intent
from autopatch_tui.core.agent.scoped_files import footer as scoped_footer
from autopatch_tui.core.agent.scoped_files import scoped_files
from autopatch_tui.core.agent.source_tools import SourceToolError, SourceTools
from autopatch_tui.core.agent.tools import ToolBox
from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.memory import turns as turn_ops
from autopatch_tui.core.memory.memory_used import UsedItem
from autopatch_tui.core.memory.memory_used import recent as recent_used
from autopatch_tui.core.recall.query import RecallQuery

__all__ = ["FILES_SHARE", "NO_MODEL_HELP", "ROUTED_AUDIT_REFUSED", "Auditor", "ChatResult", "ChatService",
           "first_read"]

FILES_SHARE = 0.6  # of the prompt room left after the system prompt and the message, without tools

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
    memory_used: tuple[UsedItem, ...] = ()  # the Memory items that reached its requests (issue 31.3)


class Auditor(Protocol):
    """Runs the code audit of a turn that routing already started (the repair workflows)."""

    def audit_generation(self) -> int:
        """The review state's generation now: read before the turn begins (a later /new ends the audit)."""
        ...

    def pending_patches(self) -> int:
        """The open audit's pending patches (a routed audit never drops them: only /audit asks first)."""
        ...

    def audit_turn(self, handle: turn_ops.TurnHandle, text: str, *, callbacks: AgentCallbacks | None = None,
                   since: int | None = None) -> str: ...


class ChatService:
    def __init__(self, manager: MemoryManager, auditor: Auditor | None = None) -> None:
        """`auditor`: with it, routing may choose `code_audit` and hands such a turn to it."""
        self.manager = manager
        self.auditor = auditor

    def ask(self, text: str, *, intent: str | None = None, scope_paths: Sequence[str] = (),
            callbacks: AgentCallbacks | None = None) -> ChatResult:
        model, _ = chat_model(self.manager)  # no model or no context profile: nothing is stored
        chosen = explicit_intent(intent)
        mgr = self.manager
        auditor = self.auditor
        since = auditor.audit_generation() if auditor is not None else None  # before the turn begins
        handle = mgr.begin_turn(text, intent=chosen or "general_chat", scope_paths=list(scope_paths))
        with mgr.failing_turn(handle):
            client = mgr.client
            assert client is not None
            if chosen is None:
                chosen = classify(client, model, text, audit=auditor is not None)
                if chosen != handle.intent:
                    turn_ops.set_intent(mgr.store.conn(), handle.turn_id, chosen)
            pending = auditor.pending_patches() if auditor is not None else 0
            if chosen == "code_audit" and pending:  # only /audit asks before it drops them
                answer = ROUTED_AUDIT_REFUSED.format(pending=pending)
            elif chosen == "code_audit" and auditor is not None:
                answer = auditor.audit_turn(handle, text, callbacks=callbacks, since=since)
            else:
                answer = self.respond(handle, chosen, text, callbacks=callbacks).answer
        mgr.complete_turn(handle, answer)
        used = tuple(recent_used(mgr.paths, handle.turn_id) or ())
        return ChatResult(handle.turn_id, handle.thread_id, answer, "completed", chosen, used)

    def respond(self, handle: turn_ops.TurnHandle, intent: str, text: str, *,
                callbacks: AgentCallbacks | None = None, query: RecallQuery | None = None) -> AgentRun:
        """Run the agent for a started turn. Everything is bound to `handle.thread_id` and to the
        intent's immutable policy, whatever `/new` does meanwhile: an ordinary request gets the
        thread's checkpoint and history; a repair request gets neither (its policy has no history),
        and its Map and tools see only path-applicable project preferences and decisions. The
        request's context (and its RecallSession) ends when this returns."""
        repo = self.manager.repo
        with open_request(self.manager, handle, intent, query or RecallQuery(intent, text, handle.scope_paths)) as req:
            toolbox = ToolBox(req.session, SourceTools(repo) if intent == "code_explain" else None)
            cb = callbacks or AgentCallbacks()
            system = ctx.system_text(intent)
            loop = AgentLoop(req.client, req.model, profile=req.profile,
                             first_tool_choice=first_read(repo, handle.scope_paths, intent))
            if loop.use_tools:
                run = req.run(loop, system, text, toolbox, cb)
                if not run.tools_refused:
                    return run
            # without tools (AUTOPATCH_LLM_TOOLS=off, or the server ignores them): code_explain
            # reads the scoped files from the prompt, and the answer says so. They travel in the user
            # turn, ahead of the user's own text: chat templates such as llama.cpp's `gemma` drop
            # system messages, and strict ones refuse two user messages in a row.
            files = None
            if intent == "code_explain":
                room = req.profile.input_capacity - req.fixed_tokens(system, text, [])
                files = scoped_files(repo, list(handle.scope_paths), max(0, int(room * FILES_SHARE)))
            loop = AgentLoop(req.client, req.model, profile=req.profile, use_tools=False)
            run = req.run(loop, system, text, toolbox, cb, files_text=files.text if files is not None else "")
            if files is not None:
                note = scoped_footer(files)
                run.answer += note
                cb.on_delta(note)
            return run


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
