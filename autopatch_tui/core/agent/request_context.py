"""The one door for a request's context: chat (`general_chat`, `code_explain`) and every repair
workflow (`code_audit`, `zero_finding_review`, `patch_explain`, `patch_revise`) build their prompt
here, under the request's immutable recall policy.

    with open_request(manager, handle, intent, query) as req:
        loop = AgentLoop(req.client, req.model, profile=req.profile)
        run = req.run(loop, system_text, user_text, toolbox, callbacks)

One system message (local chat templates such as Gemma's and Mistral's accept only one, first):
the intent's prompt, the order of authority (the user's current message, then the instruction
files, then Memory), the instruction files (`core.instructions.files`, bounded to 32 KiB and to
`INSTRUCTION_SHARE` of the model's input capacity), the thread checkpoint (ordinary requests), then
the Memory Map (without the items a loaded instruction file already holds). Then the thread's
recent history (ordinary requests only, by token budget), then the user message, once. Nothing
here is persisted: the turn stores only the user's RAW text and the shown answer, so neither the
instruction files nor the Map ever become a Memory source.

Each request reports its prompt by part (`prompt_report`, tokens only) through the manager's
events, once when it is sent and once when it ends (with the server's usage, when reported)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from autopatch_tui.core.agent import context as ctx
from autopatch_tui.core.agent import prompt_report as pr
from autopatch_tui.core.agent.loop import AgentCallbacks, AgentLoop, AgentRun
from autopatch_tui.core.agent.texts import NO_MODEL_HELP
from autopatch_tui.core.agent.tools import ToolBox
from autopatch_tui.core.claims.store import map_doubts
from autopatch_tui.core.errors import AutopatchError, ConfigError, NoModelError
from autopatch_tui.core.events import PromptMeasured
from autopatch_tui.core.instructions.files import Instructions, load_instructions
from autopatch_tui.core.llm.client import LLMClient
from autopatch_tui.core.llm.profiles import ContextProfile, resolve_profile
from autopatch_tui.core.llm.tokens import REPLY_PRIMING_TOKENS, estimate_messages_tokens, estimate_tokens
from autopatch_tui.core.memory import turns as turn_ops
from autopatch_tui.core.memory.memory_used import UsedItem, merge, record
from autopatch_tui.core.recall.promoted import MAX_IDS as MAX_PROMOTED_IDS
from autopatch_tui.core.recall.promoted import promoted_rows
from autopatch_tui.core.recall.query import RecallQuery
from autopatch_tui.core.recall.session import RecallSession

if TYPE_CHECKING:
    from autopatch_tui.core.manager import MemoryManager

log = logging.getLogger(__name__)
AUTHORITY = (
    "Order of authority: the user's current message comes first, then the project's instruction files "
    "(AGENTS.md), then Memory; when they disagree, follow the one that comes first. Facts about code come from "
    "the current source, never from Memory."
)
INSTRUCTION_SHARE = 0.25  # of the model's input capacity, at most, for the instruction files


def chat_model(manager: MemoryManager) -> tuple[str, ContextProfile]:
    """The chat model and its context profile; `NoModelError` / `ConfigError` when there is none
    (checked before a turn is stored: a request that cannot be sent leaves nothing behind)."""
    if manager.client is None:
        raise NoModelError(NO_MODEL_HELP)
    model = manager.settings.chat_model
    if not model:
        raise ConfigError("no chat model configured: set AUTOPATCH_LLM_MODEL")
    settings = manager.settings
    return model, resolve_profile(model, context_window=settings.context_window,
                                  max_output_tokens=settings.max_output_tokens)


class RequestContext:
    """One request's context: model, profile, policy, recall session, instruction files."""

    def __init__(self, manager: MemoryManager, handle: turn_ops.TurnHandle, intent: str,
                 query: RecallQuery) -> None:
        self.model, self.profile = chat_model(manager)
        client = manager.client
        if client is None:  # settings changed under us: as chat_model says
            raise NoModelError(NO_MODEL_HELP)
        self.client: LLMClient = client
        self.manager = manager
        self.handle = handle
        self.intent = intent
        self.query = query
        # the intent's immutable policy, with what approval mode hides now (contracts §8)
        self.policy = manager.review.policy(intent, handle.thread_id, manager.store.conn())
        self.session = RecallSession(manager.store.conn, query, self.policy)
        self.instructions = Instructions()
        self._head: tuple[str, dict] | None = None  # (system text, the system message before the Map)
        self._parts: list[pr.PromptPart] = []
        self._map_items = 0
        self._checkpoint_tokens = 0

    # --- the prompt ---------------------------------------------------------------------
    def _system_head(self, system_text: str) -> dict:
        """The system message up to the Map: the intent's prompt, the order of authority, the
        instruction files, the checkpoint (ordinary requests only)."""
        if self._head is not None and self._head[0] == system_text:
            return self._head[1]
        self.instructions = load_instructions(self.manager.repo, self.query.paths,
                                              max_tokens=int(self.profile.input_capacity * INSTRUCTION_SHARE))
        text = system_text + "\n" + AUTHORITY
        block = self.instructions.render()
        if block:
            text += "\n\n" + block
        if self.policy.include_history:
            row = self.manager.store.conn().execute("SELECT checkpoint FROM threads WHERE id = ?",
                                                    (self.handle.thread_id,)).fetchone()
            if row and row[0]:
                checkpoint = "\n\nThread checkpoint (summary of this conversation so far):\n" + row[0]
                self._checkpoint_tokens = estimate_tokens(checkpoint)
                text += checkpoint
        head = {"role": "system", "content": text}
        self._head = (system_text, head)
        return head

    def fixed_tokens(self, system_text: str, user_text: str, schemas: list[dict]) -> int:
        """The prompt's cost before the Map and the history: system message, user message, tools."""
        return ctx.fixed_cost(self._system_head(system_text), user_text, schemas)

    def prompt(self, system_text: str, user_text: str, *, schemas: list[dict], files_text: str = "") -> list[dict]:
        """system (prompt, authority, instruction files, checkpoint, Map) → history by budget (ordinary
        requests) → the user message, once. `files_text`: scoped files put ahead of the user's text
        (code_explain without tools), in the same user message."""
        head = self._system_head(system_text)
        user = files_text + "\n\n---\n\n" + user_text if files_text else user_text
        budget = ctx.budget_for(self.profile, ctx.fixed_cost(head, user, schemas))
        session = self.session
        session.map_tokens = budget.map_tokens
        promoted = self.instructions.promoted()
        session.map_leaves = promoted_rows(self.manager.store.conn(), promoted)
        self._promoted_used(session.map_leaves)
        session.expose(list(promoted)[:MAX_PROMOTED_IDS])  # the model sees these IDs in the files: it may read them
        memory_map = session.memory_map()
        # the items whose claims the repository contradicts say so (cached by the manifests' stat)
        memory_map.doubts = map_doubts(self.manager.store.conn(), self.manager.repo,
                                       [m.row for m in memory_map.standing + memory_map.relevant])
        rendered = memory_map.render()
        history = (ctx.history_messages(self.manager.store.conn(), self.handle.thread_id, self.handle.sequence,
                                        budget.history_tokens) if self.policy.include_history else [])
        system = {"role": "system", "content": head["content"] + ("\n\n" + rendered if rendered else "")}
        self._map_items = len(memory_map.ids)
        self._parts = self._layout(head["content"], rendered, history, user_text, files_text)
        return [system, *history, {"role": "user", "content": user}]

    def _layout(self, head: str, rendered_map: str, history: list[dict], user_text: str,
                files_text: str) -> list[pr.PromptPart]:
        files = self.instructions.file_tokens()
        in_files = sum(t for _, t in files)
        system = max(0, estimate_tokens(head) - in_files - self._checkpoint_tokens)
        parts = [pr.PromptPart(pr.SYSTEM, "system prompt", system)]
        parts += [pr.PromptPart(pr.INSTRUCTIONS, path, tokens) for path, tokens in files]
        if self._checkpoint_tokens:
            parts.append(pr.PromptPart(pr.CHECKPOINT, "thread checkpoint", self._checkpoint_tokens))
        if rendered_map:
            n = self._map_items
            parts.append(pr.PromptPart(pr.MEMORY_MAP, f"Memory Map ({n} item{'s' if n != 1 else ''})",
                                       estimate_tokens(rendered_map)))
        if history:
            turns = len(history) // 2
            parts.append(pr.PromptPart(pr.HISTORY, f"history ({turns} turn{'s' if turns != 1 else ''})",
                                       estimate_messages_tokens(history) - REPLY_PRIMING_TOKENS))
        if files_text:
            parts.append(pr.PromptPart(pr.FILES, "scoped files", estimate_tokens(files_text)))
        parts.append(pr.PromptPart(pr.MESSAGE, "current message", estimate_tokens(user_text)))
        return parts

    # --- running it ---------------------------------------------------------------------
    def run(self, loop: AgentLoop, system_text: str, user_text: str, toolbox: ToolBox,
            callbacks: AgentCallbacks | None = None, *, files_text: str = "") -> AgentRun:
        """Build the prompt (with the toolbox's schemas when the loop sends tools), run the agent
        loop on it, and report the prompt by part when it is sent and when the request ends
        (failed or cancelled requests too: the report then holds what was last sent)."""
        schemas = toolbox.schemas if loop.use_tools else []
        messages = self.prompt(system_text, user_text, schemas=schemas, files_text=files_text)
        prompt_len = len(messages)
        self._report(messages, prompt_len, schemas, loop, None, ended=False)
        run: AgentRun | None = None
        try:
            run = loop.run(messages, toolbox, callbacks)
            return run
        finally:
            self._report(messages, prompt_len, schemas, loop, run, ended=True)

    def _report(self, messages: list[dict], prompt_len: int, schemas: list[dict], loop: AgentLoop,
                run: AgentRun | None, *, ended: bool) -> None:
        """The last call's prompt by part (before any call: the prompt about to be sent)."""
        sent = messages[: loop.sent_messages] if loop.calls else messages[:prompt_len]
        tools = loop.sent_tools if loop.calls else schemas
        parts = list(self._parts)
        schema_tokens = sum(estimate_tokens(str(t)) for t in tools or ())
        if schema_tokens:
            parts.append(pr.PromptPart(pr.TOOL_SCHEMAS, "tool schemas", schema_tokens))
        trace = sent[prompt_len:]  # the tool calls and results of earlier steps (and a final "answer now")
        if trace:
            results = sum(1 for m in trace if m.get("role") == "tool")
            parts.append(pr.PromptPart(pr.TOOL_RESULTS, f"tool calls and results ({results})",
                                       estimate_messages_tokens(trace) - REPLY_PRIMING_TOKENS))
        total = estimate_messages_tokens(sent) + schema_tokens
        framing = total - sum(p.tokens for p in parts)
        if framing > 0:
            parts.append(pr.PromptPart(pr.FRAMING, "message framing", framing))
        usage = loop.usage if ended else None
        report = pr.PromptReport(
            intent=self.intent, window=self.profile.context_window, max_output=self.profile.max_output_tokens,
            parts=tuple(parts), estimated_tokens=total, instruction_files=self.instructions.paths,
            instructions_cut=self.instructions.cut, instructions_skipped=self.instructions.skipped,
            instructions_left_out=self.instructions.left_out,
            map_items=self._map_items, steps=loop.calls, ended=ended,
            server_prompt_tokens=usage.prompt_tokens if usage else None,
            server_completion_tokens=usage.completion_tokens if usage else None,
            reply_tokens=estimate_tokens(run.answer) if run is not None else 0)
        self.manager.events.emit(PromptMeasured(report))

    def _promoted_used(self, leaves: frozenset[int]) -> None:
        """Items the Map leaves out because a loaded instruction file holds their bullet reached the
        request through that file: standing, `via` its path (issue 31.3)."""
        if not leaves:
            return
        from autopatch_tui.core.instructions.section import promoted_statements

        rows = self.manager.store.conn().execute(
            f"SELECT logical_id, id FROM memory_items WHERE row_id IN ({','.join('?' * len(leaves))})",
            sorted(leaves)).fetchall()
        holders = [(f.path, promoted_statements(f.text)) for f in self.instructions.files]
        for r in rows:
            via = next((path for path, held in holders if r["logical_id"] in held), "AGENTS.md")
            self.session.used.append((r["logical_id"], r["id"], "standing", str(via)))

    def memory_used(self) -> list[UsedItem]:
        """The items that reached this request so far, one entry each (`memory_used.merge`), with
        their revision numbers (one lookup by revision ID, the unique index)."""
        used = self.session.used
        if not used:
            return []
        revs = list({u[1] for u in used})
        number = dict(self.manager.store.conn().execute(
            "SELECT id, revision FROM memory_items WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps(revs),)).fetchall())
        return merge([UsedItem(lid, number[rev], how, via) for lid, rev, how, via in used if rev in number])

    def close(self) -> None:
        """Record what reached the request (IDs only, `memory_used`), then end its recall session."""
        try:
            record(self.manager.paths, self.handle.turn_id, self.memory_used())
        except (OSError, AutopatchError) as exc:  # the answer stands; only its History line is missing
            log.warning("memory used not recorded: %s", type(exc).__name__)
        self.session.close()


@contextmanager
def open_request(manager: MemoryManager, handle: turn_ops.TurnHandle, intent: str,
                 query: RecallQuery) -> Iterator[RequestContext]:
    """The context of one request of a started turn, bound to `handle.thread_id` and to the
    intent's policy whatever `/new` does meanwhile; its recall session is closed on the way out."""
    req = RequestContext(manager, handle, intent, query)
    try:
        yield req
    finally:
        req.close()
