"""The AutoPatch-J corpus (cases.json, README.md): AutoPatch-J's own Memory cases in the independent
format, loaded and scored by `tests/quality_independent/loader.py` (nothing of it is copied here)."""

from __future__ import annotations

from pathlib import Path

from tests.quality_independent import loader as independent
from tests.quality_independent.loader import IndependentCase, Malformed, score

CASES_JSON = Path(__file__).with_name("cases.json")
WRITER = "apj"
# the pinned source: xLabel/AutoPatch-J at this commit (README.md lists the files and their blobs)
SOURCE_REPO = "xLabel/AutoPatch-J"
SOURCE_COMMIT = "04b18a1fa873a9adc4178b29acca896f2bab7ee9"
# the 16 case ids of AutoPatch-J's tests/fixtures/memory_quality_v3.json (its own coverage list,
# tests/test_memory_quality_corpus.py); each must be the source of at least one case here
FIXTURE_IDS = (
    "explicit-output-preference", "implicit-style-is-not-preference", "explicit-project-decision",
    "assistant-proposal-user-confirmation", "code-fact-is-not-long-term-memory",
    "assistant-only-claim-is-not-decision", "decision-supersedes-old-decision",
    "discussion-does-not-cross-new-thread", "forget-suppresses-derived-memory", "unrelated-query-has-no-hit",
    "english-explicit-preference", "english-temporary-is-not-preference", "english-explicit-project-decision",
    "english-code-fact-is-not-memory", "english-undecided-is-not-decision",
    "english-assistant-proposal-user-confirmation",
)


def load(path: Path = CASES_JSON) -> tuple[list[IndependentCase], list[Malformed]]:
    """The well-formed cases and the malformed ones, exactly as the independent loader reads them."""
    return independent.load(path)


__all__ = ["CASES_JSON", "FIXTURE_IDS", "SOURCE_COMMIT", "SOURCE_REPO", "WRITER", "load", "score"]
