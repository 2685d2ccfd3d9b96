"""The OpenAI function-calling loop: bounded steps, a guard against repeated identical tool
calls, the final answer streamed to the caller. Tool traces live only in this request's message
list; they are never persisted.

Every step sends `max_tokens` (the profile's output budget, shrunk to what the grown prompt leaves
of the window). The assistant message that carries tool calls has `content: ""` (strict servers
refuse `null`). An answer cut at the bound (`finish_reason: "length"`) says so under the answer.
`first_tool_choice` forces the first step's tool (code_explain with scoped files must read them);
in `AUTOPATCH_LLM_TOOLS=auto` a server that ignores the forced call, or refuses a request with
tools, is remembered and the run ends with `tools_refused` so the caller can go on without tools."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from autopatch_tui.core.agent.tool_mode import learn_tools_unusable, refuses_tools, tools_usable
from autopatch_tui.core.agent.tool_mode import require_tools as require_tools_fn
from autopatch_tui.core.agent.tools import ToolBox
from autopatch_tui.core.llm.endpoint import ENDPOINTS
from autopatch_tui.core.llm.bounds import chat_output_bound
from autopatch_tui.core.llm.client import Completion, LLMClient, Usage
from autopatch_tui.core.llm.errors import ProviderError
from autopatch_tui.core.llm.profiles import UNKNOWN_MAX_OUTPUT_TOKENS, ContextProfile, safety_margin_for
from autopatch_tui.core.llm.tokens import estimate_messages_tokens, estimate_tokens

MAX_STEPS = 8
MAX_REPEATS = 2
ANSWER_NOW = "Answer the user now without further tool calls."
TRUNCATED_NOTE = "\n\n---\n*The answer was cut off at its output limit ({limit} tokens).*"
# without a profile (a caller that has none): a bound all the same
_FALLBACK_PROFILE = ContextProfile("", 8 * UNKNOWN_MAX_OUTPUT_TOKENS, UNKNOWN_MAX_OUTPUT_TOKENS,
                                   safety_margin_for(8 * UNKNOWN_MAX_OUTPUT_TOKENS))


def _noop_delta(_: str) -> None:
    return None


def _noop() -> None:
    return None


@dataclass
class AgentCallbacks:
    on_delta: Callable[[str], None] = _noop_delta
    on_reset: Callable[[], None] = _noop  # streamed text so far was not the final answer
    on_tool: Callable[[str], None] = _noop_delta


@dataclass
class AgentRun:
    answer: str
    steps: int
    tool_calls: list[str] = field(default_factory=list)
    truncated: bool = False  # the answer reached its max_tokens bound (the note is in `answer`)
    tools_refused: bool = False  # auto mode: the server ignored or refused tools; nothing was answered


def _canonical(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments or "{}"), sort_keys=True)
    except (ValueError, RecursionError):
        return arguments


class AgentLoop:
    def __init__(self, client: LLMClient, model: str, *, max_steps: int = MAX_STEPS,
                 profile: ContextProfile | None = None, require_tools: bool = False,
                 use_tools: bool | None = None, first_tool_choice: dict | None = None) -> None:
        """`require_tools`: the workflow cannot work without tool calls (ToolsRequiredError).
        `use_tools`: send the toolbox's schemas (default: per AUTOPATCH_LLM_TOOLS and the endpoint)."""
        self.client = client
        self.model = model
        self.max_steps = max_steps
        self.profile = profile or _FALLBACK_PROFILE
        self.require_tools = require_tools
        if require_tools:
            require_tools_fn(client, model)
        self.use_tools = tools_usable(client, model) if use_tools is None else use_tools
        self.first_tool_choice = first_tool_choice
        self._last_bound = 0
        # the last call, for the request's prompt report: how many of the messages it sent, with
        # which tool schemas, and the server's usage of it (None when the server reported none)
        self.calls = 0
        self.sent_messages = 0
        self.sent_tools: list[dict] | None = None
        self.usage: Usage | None = None

    def _bound(self, messages: list[dict], tools: list[dict] | None) -> int:
        prompt = estimate_messages_tokens(messages) + sum(estimate_tokens(str(t)) for t in tools or ())
        return chat_output_bound(self.profile, prompt)

    def _stream(self, messages: list[dict], tools: list[dict] | None, cb: AgentCallbacks,
                tool_choice: dict | None = None) -> Completion:
        self._last_bound = self._bound(messages, tools)
        self.calls += 1
        self.sent_messages, self.sent_tools, self.usage = len(messages), tools, None
        client = self.client
        usage = not ENDPOINTS.stream_usage_rejected(client.base_url, self.model)
        try:
            completion = client.stream(task="chat", model=self.model, messages=messages, tools=tools,
                                       on_delta=cb.on_delta, max_tokens=self._last_bound, tool_choice=tool_choice,
                                       include_usage=usage)
        except ProviderError as exc:
            if not (usage and exc.names_any("stream_options", "include_usage")):
                raise
            # a strict server that refuses the usage request: remembered, and asked again without it
            ENDPOINTS.reject_stream_usage(client.base_url, self.model)
            completion = client.stream(task="chat", model=self.model, messages=messages, tools=tools,
                                       on_delta=cb.on_delta, max_tokens=self._last_bound, tool_choice=tool_choice)
        self.usage = completion.usage
        return completion

    def _finish(self, run: AgentRun, completion: Completion, cb: AgentCallbacks) -> AgentRun:
        run.answer = completion.content or ""
        if completion.finish_reason == "length":
            note = TRUNCATED_NOTE.format(limit=self._last_bound)
            run.truncated = True
            run.answer += note
            cb.on_delta(note)
        return run

    def _refused(self, run: AgentRun) -> AgentRun:
        """The endpoint does not do tools (only seen in auto mode): remembered; the caller goes on without them."""
        learn_tools_unusable(self.client, self.model)
        if self.require_tools:
            require_tools_fn(self.client, self.model)  # raises ToolsRequiredError
        run.tools_refused = True
        return run

    def run(self, messages: list[dict], toolbox: ToolBox, cb: AgentCallbacks | None = None) -> AgentRun:
        cb = cb or AgentCallbacks()
        seen: dict[tuple[str, str], int] = {}
        run = AgentRun("", 0)
        force_final = not self.use_tools
        auto = self.client.tools_mode == "auto"
        while run.steps < self.max_steps and not force_final:
            run.steps += 1
            choice = self.first_tool_choice if run.steps == 1 else None
            try:
                completion = self._stream(messages, toolbox.schemas, cb, choice)
            except ProviderError as exc:
                if auto and refuses_tools(exc, any(m.get("role") == "tool" for m in messages)):
                    cb.on_reset()
                    return self._refused(run)
                raise
            if not completion.tool_calls:
                if choice is not None and auto:  # told to call a tool, answered without: tools are ignored
                    cb.on_reset()
                    return self._refused(run)
                return self._finish(run, completion, cb)
            cb.on_reset()
            messages.append({"role": "assistant", "content": completion.content or "", "tool_calls": [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in completion.tool_calls]})
            for call in completion.tool_calls:
                key = (call.name, _canonical(call.arguments))
                seen[key] = seen.get(key, 0) + 1
                if seen[key] > 1:
                    result = "error: this identical tool call was already made; use its earlier result"
                    if seen[key] > MAX_REPEATS:
                        force_final = True
                else:
                    result = toolbox.call(call.name, call.arguments)
                run.tool_calls.append(call.name)
                cb.on_tool(call.name)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
        if not self.use_tools:  # no tools at all: the one step is the answer
            run.steps += 1
            return self._finish(run, self._stream(messages, None, cb), cb)
        # out of steps (or looping): one last answer without tools
        run.steps += 1
        messages.append({"role": "system", "content": ANSWER_NOW})
        return self._finish(run, self._stream(messages, None, cb), cb)
