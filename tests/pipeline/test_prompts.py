"""The extraction prompt teaches the rules the gate applies (issue 19, deliverable 7), and it still
fits a small local model's window next to a real batch."""

from __future__ import annotations

import pytest

from autopatch_tui.core.llm.profiles import resolve_profile
from autopatch_tui.core.llm.tokens import estimate_tokens
from autopatch_tui.core.pipeline.extraction import REPAIR_SYSTEM, VIOLATION_ALLOWANCE_TOKENS
from autopatch_tui.core.pipeline.prompts import EVIDENCE_EXAMPLES, EXTRACTION_SYSTEM, PROMPT_EXAMPLES, _evidence_line
from autopatch_tui.core.pipeline.reading import read_quote
from tests.support.pipeline_helpers import add_turn, cand, candidates, extract_step, job_of_turn, src


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
    # 1,400 before the `evidence` reading (issue 29): its field and six examples cost ~300 more
    assert prompt < 1800
    # four ordinary turns of ~600 characters each (user and answer), as JSON, still fit whole
    assert room > 4 * 2 * 600 // 4 + 400


@pytest.mark.parametrize("text,quote,evidence,outcome", EVIDENCE_EXAMPLES)
def test_every_evidence_example_is_judged_as_it_says_by_both_readers(pipe, llm_stub, text, quote, evidence, outcome):
    """Each evidence example goes through the extraction validation (the gate, then the model's
    reading) with the evidence the prompt shows: the outcome the prompt teaches is the product's."""
    assert _evidence_line(text, quote, evidence, outcome) in EXTRACTION_SYSTEM
    t = add_turn(pipe, text, "OK.")
    c = {**cand(src(t, "user", quote or text), subject="the example", statement=quote or text,
                aliases=["example rule"]), "evidence": evidence}
    extract_step(pipe, llm_stub, c)
    kept = candidates(pipe, "pending")
    if outcome.startswith("keep"):
        assert [k["subject"] for k in kept] == ["the example"], job_of_turn(pipe, t)["failure_rule"]
        standing = "hard/always" if (kept[0]["strength"], kept[0]["recall_mode"]) == ("hard", "always") else "other"
        assert standing == ("hard/always" if "hard/always" in outcome else "other")
    else:
        assert kept == [] and job_of_turn(pipe, t)["failure_rule"]
