"""Who is speaking and what still stands (issue 29, `core/pipeline/speech.py`): our own sentences
and the look-alike a careless reading gets wrong."""

from __future__ import annotations

import pytest

from autopatch_tui.core.pipeline import speech


@pytest.mark.parametrize("text,quote,expected", [
    ("the Django docs say never put logic in templates, not convinced though", "never put logic in templates", True),
    ("Bob insisted that every handler validates its input", "every handler validates its input", True),
    ("according to the runbook, restart the workers after each deploy", "restart the workers after each deploy", True),
    ("pasted from the incident channel:\n> nobody deploys on fridays\nwhat do you think?", "nobody deploys on fridays",
     True),
    ("```\nWARN: always set a timeout\n```", "always set a timeout", True),
    ("他们组说接口一律用 gRPC", "接口一律用 gRPC", True),
    # endorsed, or the user's own voice: not relayed
    ("the Django docs say never put logic in templates, and we follow that", "never put logic in templates", False),
    ("as the runbook says, restart the workers after each deploy", "restart the workers after each deploy", False),
    ("whatever the linter says, keep lines under 100 chars", "keep lines under 100 chars", False),
    ("make sure the error message says which file failed", "make sure the error message says which file failed",
     False),
    ("I said it before: never put logic in templates", "never put logic in templates", False),
    ("The PR description says which issue it closes.", "The PR description says which issue it closes.", False),
    ("the Rust API guidelines say to prefer iterators over index loops; follow that",
     "to prefer iterators over index loops", False),
])
def test_someone_elses_words(text, quote, expected):
    assert speech.relayed(text, quote) is expected


@pytest.mark.parametrize("text,quote,expected", [
    ("Rename the column to user_id. Hmm, on second thought, leave it", "Rename the column to user_id", True),
    ("cache the tokens in redis — wait, actually no", "cache the tokens in redis", True),
    ("缓存统一放 Redis，算了，不对不对", "缓存统一放 Redis", True),
    ("never mind the flaky test, always run the suite before a PR", "always run the suite before a PR", False),
    ("forget the old loader: configs are read with pydantic", "configs are read with pydantic", False),
    ("use tabs. I take that back — spaces, always", "spaces, always", False),  # the withdrawal precedes it
    ("Always run the linters — actually no exceptions, not even for hotfixes", "Always run the linters", False),
    ("Always run the linters — actually, no.", "Always run the linters", True),
    ("Use tabs in Makefiles, and don't forget that the linter checks it", "Use tabs in Makefiles", False),
    ("Log the timeout and ignore it", "Log the timeout", False),
])
def test_taken_back_in_the_same_message(text, quote, expected):
    assert speech.withdrawn(text, quote) is expected


@pytest.mark.parametrize("later,expected", [
    ("scratch that.", True),
    ("forget what I said earlier", True),
    ("disregard my last message about redis", True),
    ("disregard my last message about the logger", False),  # names another subject
    ("ignore the flaky redis test for now", False),  # a dismissal of a thing, not of what was said
    ("当我没说", True),
])
def test_taken_back_in_the_next_turn(later, expected):
    assert speech.withdraws(later, {"redis", "cache"}) is expected


@pytest.mark.parametrize("text,expected", [
    ("great, a rewrite the week before launch, what could possibly go wrong", True),
    ("yeah right, because that worked so well last time", True),
    ("sure 🙄", True),
    ("sure, let's do it", False),
    ("treat warnings as if they were errors", False),
    ("what could go wrong with the retry logic? it fails on CI", False),
])
def test_irony(text, expected):
    assert speech.ironic(text) is expected
