"""The gate's refusal rules in plain words, for the line a chat turn shows ("not remembered ·
one-off request"): one table for every rule an extraction verdict can name (the words of the table
"Every rule an extraction refusal can carry" in docs/memory.md), and a readable fallback for a rule
it does not know. Reading a verdict is `refusals.parse_verdict`."""

from __future__ import annotations

import re

RULE_WORDS: dict[str, str] = {
    "secret": "it contains a secret (a key, a token or a password)",
    "one_off_scope": "one-off request",
    "withdrawn": "you took it back",
    "relayed": "someone else's words, not yours",
    "ironic": "said ironically",
    "code_fact": "a fact about the code, not a decision",
    "hedged": "a maybe, not a decision",
    "undecided": "still an open point",
    "user_question": "a question, or a one-time request",
    "request_for_info": "a request for information",
    "acknowledgement_only": "only an acknowledgement",
    "no_directive": "not an instruction, a decision or a preference",
    "off_meaning": "the quoted words do not say this",
    "assistant_conclusion": "only the assistant concluded it",
    "not_confirmed": "the reply did not accept the proposal",
    "not_a_proposal": "the assistant asked or reported; it proposed nothing",
    "discussion_not_open": "not an open question you raised",
    "discussion_origin": "a discussion rests on your own words only",
    "discussion_assistant_source": "a discussion rests on your own words only",
    "cjk_decision_needs_english_alias": "a Chinese decision without an English search phrase for its action",
    "alias_adds": "its English search phrase adds something you did not say",
    "current_batch_source": "none of your words from this turn support it",
    "apply_only": "you only applied a patch",
    "adopted_needs_assistant_and_user": "an adoption needs the proposal and your reply",
    "inferred_evidence": "a repeated correction without enough evidence",
    "inferred_counter_example": "a repeated correction you contradicted later",
    "empty_identity": "no subject, statement or quoted words",
    "quote_without_word": "no subject, statement or quoted words",
    "model_reading": "read as someone else's words, a question, a maybe, taken back, irony or for this task only",
}


def rule_words(rule: str) -> str:
    """The plain words of one rule; an unknown rule reads as its name in words."""
    words = RULE_WORDS.get(rule)
    if words is not None:
        return words
    text = " ".join(part for part in re.split(r"[_\-]+", rule) if part)
    return f"refused ({text})" if text else "refused"
