"""Intent routing: an explicit intent (slash command, `--intent`) wins; otherwise one short
`classify` call picks an ordinary intent. Without a model nothing is guessed."""

from __future__ import annotations

from autopatch_tui.core import constants as C
from autopatch_tui.core.errors import UsageError
from autopatch_tui.core.llm.client import LLMClient
from autopatch_tui.core.llm.errors import ProviderError

ROUTABLE = C.ORDINARY_INTENTS
CLASSIFY_SYSTEM = (
    "Classify the developer's message. Reply with exactly one word: code_explain when they ask how specific "
    "code in their repository works or what it does; general_chat otherwise."
)
CLASSIFY_AUDIT = (
    "Classify the developer's message. Reply with exactly one word: code_audit when they ask to scan, audit or "
    "find and fix defects in their code; code_explain when they ask how specific code in their repository works "
    "or what it does; general_chat otherwise."
)


def explicit_intent(intent: str | None) -> str | None:
    if intent is None:
        return None
    if intent not in ROUTABLE:
        raise UsageError(f"intent must be one of {', '.join(ROUTABLE)}")
    return intent


def classify(client: LLMClient, model: str, text: str, *, audit: bool = False) -> str:
    """The classifier's choice; `general_chat` when the reply is not a known intent or the call fails.
    `audit`: the caller can run the `code_audit` workflow, so the classifier may choose it."""
    choices = ROUTABLE + (("code_audit",) if audit else ())
    try:
        completion = client.complete(task="classify", model=model, temperature=0, max_tokens=8, messages=[
            {"role": "system", "content": CLASSIFY_AUDIT if audit else CLASSIFY_SYSTEM},
            {"role": "user", "content": text[:4000]}])
    except ProviderError:
        return "general_chat"
    word = (completion.content or "").strip().strip("`'\".").lower()
    return word if word in choices else "general_chat"
