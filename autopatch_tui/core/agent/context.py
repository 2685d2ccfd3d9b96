"""Pieces of a request's prompt within the model's context budget: the ordinary intents' system
prompts, the budget split between the Memory Map and the history, the history itself. The prompt is
assembled by the one door, `request_context` (system prompt, order of authority, instruction files,
checkpoint, Memory Map → recent history by token budget → the current user message, verbatim,
exactly once). Nothing here is ever persisted."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from autopatch_tui.core import constants as C
from autopatch_tui.core.errors import AutopatchError
from autopatch_tui.core.llm.profiles import ContextProfile
from autopatch_tui.core.llm.tokens import estimate_messages_tokens, estimate_tokens

SYSTEM_PROMPTS = {
    "general_chat": "You are a code assistant talking with a developer about their repository.",
    "code_explain": "You are a code assistant explaining code in the developer's repository. Read the source "
                    "with the tools before you explain it; cite file paths and line numbers.",
}
COMMON_RULES = "Use memory_search and memory_read when earlier decisions or preferences may matter. Answer in Markdown."
HISTORY_SHARE = 0.5
MAP_SHARE = 0.1
MAX_MAP_TOKENS = 2000
MAX_HISTORY_TURNS_SCANNED = 200


class ContextOverflowError(AutopatchError):
    """The current user message alone does not fit the model's context."""


@dataclass(frozen=True)
class Budget:
    map_tokens: int
    history_tokens: int


def budget_for(profile: ContextProfile, fixed_tokens: int) -> Budget:
    room = profile.input_capacity - fixed_tokens
    if room <= 0:
        raise ContextOverflowError("the message is too long for the model's context window")
    map_tokens = min(MAX_MAP_TOKENS, int(room * MAP_SHARE))
    return Budget(map_tokens, int((room - map_tokens) * HISTORY_SHARE))


def history_messages(conn: sqlite3.Connection, thread_id: str, before_sequence: int, budget_tokens: int) -> list[dict]:
    """Recent completed ordinary turns of the bound thread, newest first until the budget is spent,
    returned oldest first."""
    marks = ",".join("?" * len(C.ORDINARY_INTENTS))
    rows = conn.execute(
        f"SELECT user_text, assistant_text FROM turns WHERE thread_id = ? AND sequence < ? AND state = 'completed'"
        f" AND intent IN ({marks}) ORDER BY sequence DESC LIMIT ?",
        (thread_id, before_sequence, *C.ORDINARY_INTENTS, MAX_HISTORY_TURNS_SCANNED),
    ).fetchall()
    picked: list[dict] = []
    used = 0
    for r in rows:
        pair = [{"role": "user", "content": r["user_text"]}, {"role": "assistant", "content": r["assistant_text"] or ""}]
        cost = estimate_messages_tokens(pair)
        if used + cost > budget_tokens:
            break
        used += cost
        picked[:0] = pair
    return picked


def system_text(intent: str) -> str:
    """An ordinary intent's system prompt (the door adds the order of authority and the rest)."""
    return SYSTEM_PROMPTS.get(intent, SYSTEM_PROMPTS["general_chat"]) + "\n" + COMMON_RULES


def fixed_cost(system: dict, user_text: str, tools: list[dict]) -> int:
    return estimate_messages_tokens([system, {"role": "user", "content": user_text}]) + sum(
        estimate_tokens(str(t)) for t in tools)
