"""The extraction prompt teaches the rules the gate applies (issue 19, deliverable 7), and it still
fits a small local model's window next to a real batch."""

from __future__ import annotations

import pytest

from autopatch_tui.core.llm.profiles import resolve_profile
from autopatch_tui.core.llm.tokens import estimate_tokens
from autopatch_tui.core.pipeline.extraction import REPAIR_SYSTEM, VIOLATION_ALLOWANCE_TOKENS
from autopatch_tui.core.pipeline.prompts import EXTRACTION_SYSTEM, PROMPT_EXAMPLES
from autopatch_tui.core.pipeline.reading import read_quote


@pytest.mark.parametrize("text,quote,outcome", PROMPT_EXAMPLES)
def test_every_example_of_the_prompt_is_judged_as_it_says(text, quote, outcome):
    reading = read_quote(text, quote or text)
    if outcome.startswith("keep"):
        assert reading.refusal() is None, (text, reading)
        assert "hard/always" in outcome, (text, outcome)  # no "kept but lowered" (issue 29)
    else:
        assert reading.refusal() is not None, (text, reading)
    assert f'"{text}" -> {outcome}' in EXTRACTION_SYSTEM


def test_the_prompt_fits_an_8k_local_model_beside_a_four_turn_batch():
    profile = resolve_profile("llama3:8b-instruct", context_window=None, max_output_tokens=None)
    assert profile.context_window == 8192
    prompt = estimate_tokens(REPAIR_SYSTEM)
    room = profile.input_capacity - VIOLATION_ALLOWANCE_TOKENS - prompt
    assert prompt < 1400
    # four ordinary turns of ~600 characters each (user and answer), as JSON, still fit whole
    assert room > 4 * 2 * 600 // 4 + 400
