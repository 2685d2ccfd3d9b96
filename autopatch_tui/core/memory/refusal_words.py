"""The gate's refusal rules in plain words, for the line a chat turn shows ("not remembered ·
one-off request"). One table for every rule an extraction verdict (`memory_jobs.failure_rule`,
`rule:count` pairs joined by `.`) can name; an unknown rule still reads as words."""

from __future__ import annotations

import re

RULE_WORDS: dict[str, str] = {
    # provenance and validation (extraction_rules.py)
    "current_batch_source": "not said in this turn",
    "one_off_scope": "one-off request",
    "discussion_assistant_source": "only the assistant said it",
    "adopted_needs_assistant_and_user": "a proposal needs both its text and your confirmation",
    "apply_only": "only an apply or an okay",
    "inferred_evidence": "not repeated often enough to learn from",
    # the semantic gate (semantic_gate.py)
    "empty_identity": "nothing to remember",
    "quote_without_word": "no words to cite",
    "discussion_origin": "an open question has to be your own",
    "inferred_counter_example": "you kept the original elsewhere",
    "code_fact": "a fact about the code, not a decision",
    "undecided": "not decided yet",
    "user_question": "a question, not a decision",
    "request_for_info": "a request for information",
    "hedged": "tentative, not a decision",
    "acknowledgement_only": "only an acknowledgement",
    "off_meaning": "the words cited do not say it",
    "assistant_conclusion": "the assistant's conclusion, not yours",
}

_PAIR = re.compile(r"^([a-z0-9_]+):([0-9]+)$")


def rule_words(rule: str) -> str:
    """The plain words of one rule; an unknown rule reads as its name in words."""
    words = RULE_WORDS.get(rule)
    if words is not None:
        return words
    text = " ".join(part for part in re.split(r"[_\-]+", rule) if part)
    return f"refused ({text})" if text else "refused"


def parse_verdict(verdict: str | None) -> list[tuple[str, int]]:
    """`one_off_scope:2.undecided:1` → [("one_off_scope", 2), ("undecided", 1)]; anything that is
    not such a pair is skipped (a damaged store never breaks the chat)."""
    out: list[tuple[str, int]] = []
    for part in (verdict or "").split("."):
        m = _PAIR.match(part)
        if m:
            out.append((m.group(1), int(m.group(2))))
    return out
