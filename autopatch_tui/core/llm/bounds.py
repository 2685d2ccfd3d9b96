"""How many tokens a reply may take: the `max_tokens` every call sends.

Local servers (llama.cpp, Ollama…) generate until their context fills when no bound is sent, so
every call carries one, always positive and always within the window: the prompt's estimate plus
the bound never exceeds `context_window - safety_margin`.

- chat and agent steps: the profile's output budget, shrunk when the prompt (grown by tool
  results) leaves less room;
- Memory calls: a bound fit for their contract (a merge verdict is short; an extraction may carry
  a checkpoint and 32 candidates), capped by the profile's output budget and by
  `AUTOPATCH_MEMORY_MAX_OUTPUT_TOKENS`;
- the one repair after a truncated Memory reply: twice the bound, when the window allows.
"""

from __future__ import annotations

from autopatch_tui.core.llm.profiles import ContextProfile

MIN_REPLY_TOKENS = 256  # below this a reply is useless; the bound never goes under it (or max_out)
MEMORY_OUTPUT_TOKENS: dict[str, int] = {
    "extraction": 4096,
    "consolidation": 4096,
    "organize": 4096,
    "compaction": 2048,
    "merge_judge": 512,
}
REPAIR_GROWTH = 2


def _room(profile: ContextProfile, prompt_tokens: int) -> int:
    return profile.context_window - profile.safety_margin - max(0, prompt_tokens)


def _floor(profile: ContextProfile) -> int:
    return max(1, min(profile.max_output_tokens, MIN_REPLY_TOKENS))


def chat_output_bound(profile: ContextProfile, prompt_tokens: int) -> int:
    """`max_tokens` of one chat/agent step whose prompt is about `prompt_tokens`."""
    return max(_floor(profile), min(profile.max_output_tokens, _room(profile, prompt_tokens)))


def _base_task(task: str) -> str:
    return task[: -len("_repair")] if task.endswith("_repair") else task


def memory_output_bound(profile: ContextProfile, task: str, prompt_tokens: int, *,
                        configured: int | None = None, after_truncation: bool = False) -> int:
    """`max_tokens` of one Memory call. `configured`: the user's cap (AUTOPATCH_MEMORY_MAX_OUTPUT_TOKENS).
    `after_truncation`: this is the repair of a reply cut at its bound — the bound grows (up to
    REPAIR_GROWTH times) as far as the window allows."""
    base = MEMORY_OUTPUT_TOKENS.get(_base_task(task), MEMORY_OUTPUT_TOKENS["extraction"])
    if configured is not None:
        base = min(base, configured) if _base_task(task) == "merge_judge" else configured
    bound = max(1, min(base, profile.max_output_tokens))
    room = _room(profile, prompt_tokens)
    if after_truncation:
        bound = max(bound, min(bound * REPAIR_GROWTH, room))
    return max(min(bound, _floor(profile)), min(bound, room))
