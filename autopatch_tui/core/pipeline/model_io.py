"""One Memory model call: the JSON payload in the last user message, temperature 0, no streaming,
the reply parsed as one JSON object and validated against its contract."""

from __future__ import annotations

from dataclasses import dataclass

from autopatch_tui.core.llm.client import LLMClient
from autopatch_tui.core.llm.json_reply import dump_json_payload, parse_json_object_reply
from autopatch_tui.core.llm.profiles import ContextProfile
from autopatch_tui.core.llm.tokens import estimate_messages_tokens


@dataclass(frozen=True)
class MemoryModel:
    client: LLMClient
    model: str
    profile: ContextProfile

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

    def call(self, task: str, system: str, payload: dict) -> dict:
        """Raises ProviderError (transport) or MemoryContractError(rule="json_object")."""
        completion = self.client.complete(task=task, model=self.model, messages=self.messages(system, payload),
                                          temperature=0)
        return parse_json_object_reply(completion.content)
