"""The OpenAI function-calling loop: bounded steps, a guard against repeated identical tool
calls, the final answer streamed to the caller. Tool traces live only in this request's message
list; they are never persisted."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from autopatch_tui.core.agent.tools import ToolBox
from autopatch_tui.core.llm.client import Completion, LLMClient

MAX_STEPS = 8
MAX_REPEATS = 2


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


def _canonical(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments or "{}"), sort_keys=True)
    except ValueError:
        return arguments


class AgentLoop:
    def __init__(self, client: LLMClient, model: str, *, max_steps: int = MAX_STEPS) -> None:
        self.client = client
        self.model = model
        self.max_steps = max_steps

    def _stream(self, messages: list[dict], tools: list[dict] | None, cb: AgentCallbacks) -> Completion:
        return self.client.stream(task="chat", model=self.model, messages=messages, tools=tools, on_delta=cb.on_delta)

    def run(self, messages: list[dict], toolbox: ToolBox, cb: AgentCallbacks | None = None) -> AgentRun:
        cb = cb or AgentCallbacks()
        seen: dict[tuple[str, str], int] = {}
        run = AgentRun("", 0)
        force_final = False
        while run.steps < self.max_steps and not force_final:
            run.steps += 1
            completion = self._stream(messages, toolbox.schemas, cb)
            if not completion.tool_calls:
                run.answer = completion.content or ""
                return run
            cb.on_reset()
            messages.append({"role": "assistant", "content": completion.content, "tool_calls": [
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
        # out of steps (or looping): one last answer without tools
        run.steps += 1
        messages.append({"role": "system", "content": "Answer the user now without further tool calls."})
        completion = self._stream(messages, None, cb)
        run.answer = completion.content or ""
        return run
