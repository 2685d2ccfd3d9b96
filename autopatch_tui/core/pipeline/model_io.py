"""One Memory model call: the JSON payload in the last user message, temperature 0, no streaming,
JSON mode when the endpoint allows it, a `max_tokens` bound fit for the task (core.llm.bounds), the
reply parsed as one JSON object and validated against its contract.

A reply cut at its bound (`finish_reason: "length"`) is the failure rule `truncated` — not a
malformed reply. The repair that follows it (its payload's violations name `truncated`) gets a
larger bound when the window allows."""

from __future__ import annotations

from dataclasses import dataclass

from autopatch_tui.core.errors import MemoryContractError
from autopatch_tui.core.llm.bounds import memory_output_bound
from autopatch_tui.core.llm.client import LLMClient
from autopatch_tui.core.llm.json_mode import complete_memory
from autopatch_tui.core.llm.json_reply import dump_json_payload, parse_json_object_reply
from autopatch_tui.core.llm.profiles import ContextProfile
from autopatch_tui.core.llm.tokens import estimate_messages_tokens


@dataclass(frozen=True)
class MemoryModel:
    client: LLMClient
    model: str
    profile: ContextProfile
    output_cap: int | None = None  # AUTOPATCH_MEMORY_MAX_OUTPUT_TOKENS

    @property
    def capacity(self) -> int:
        return self.profile.input_capacity

    @staticmethod
    def messages(system: str, payload: dict) -> list[dict[str, str]]:
        return [{"role": "system", "content": system}, {"role": "user", "content": dump_json_payload(payload)}]

    def measure(self, system: str, payload: dict) -> int:
        return estimate_messages_tokens(self.messages(system, payload))

    @staticmethod
    def measure_text(system: str, payload_json: str) -> int:
        return estimate_messages_tokens([{"role": "system", "content": system}, {"role": "user", "content": payload_json}])

    def max_tokens(self, task: str, messages: list[dict], payload: dict) -> int:
        violations = payload.get("violations") or ()
        after_truncation = task.endswith("_repair") and any(
            isinstance(v, dict) and v.get("rule") == TRUNCATED for v in violations)
        return memory_output_bound(self.profile, task, estimate_messages_tokens(messages),
                                   configured=self.output_cap, after_truncation=after_truncation)

    def call(self, task: str, system: str, payload: dict) -> dict:
        """Raises ProviderError (transport) or MemoryContractError(rule="json_object" | "truncated")."""
        messages = self.messages(system, payload)
        completion = complete_memory(self.client, task=task, model=self.model, messages=messages,
                                     max_tokens=self.max_tokens(task, messages, payload))
        if completion.finish_reason == "length":
            raise MemoryContractError(TRUNCATED, "the reply was cut at its output bound")
        return parse_json_object_reply(completion.content)


TRUNCATED = "truncated"
