"""How much a model can read and write: its context profile.

A small table of well-known model families, matched on the lower-cased model name (the part
after the last "/", so "openai/gpt-4o" and "gpt-4o" agree). `max_output_tokens` is the output
budget reserved for the reply, not necessarily the model's absolute maximum. Explicit settings
(AUTOPATCH_LLM_CONTEXT_WINDOW / AUTOPATCH_LLM_MAX_OUTPUT_TOKENS) always win; a model that is
not in the table needs an explicit window.
"""

from __future__ import annotations

from dataclasses import dataclass

from autopatch_tui.core.errors import ConfigError

SAFETY_MARGIN_FRACTION = 0.05
UNKNOWN_MAX_OUTPUT_TOKENS = 4096


@dataclass(frozen=True)
class ContextProfile:
    model: str
    context_window: int
    max_output_tokens: int
    safety_margin: int

    @property
    def input_capacity(self) -> int:
        """Tokens available for the prompt once the reply budget and the margin are set aside."""
        return self.context_window - self.max_output_tokens - self.safety_margin


@dataclass(frozen=True)
class _Family:
    pattern: str
    match: str  # "prefix" (of the last path segment) or "substring"
    context_window: int
    max_output_tokens: int


# Most specific first: the first match wins.
_FAMILIES: tuple[_Family, ...] = (
    _Family("gpt-5", "substring", 400_000, 128_000),
    _Family("gpt-4.1", "substring", 1_047_576, 32_768),
    _Family("gpt-4o", "substring", 128_000, 16_384),
    _Family("gpt-4-turbo", "substring", 128_000, 4_096),
    _Family("gpt-3.5-turbo", "substring", 16_385, 4_096),
    _Family("o1", "prefix", 200_000, 32_768),
    _Family("o3", "prefix", 200_000, 32_768),
    _Family("o4", "prefix", 200_000, 32_768),
    _Family("deepseek", "substring", 128_000, 8_192),
    _Family("qwen", "substring", 32_768, 8_192),
    _Family("llama-3.1", "substring", 131_072, 4_096),
    _Family("llama3.1", "substring", 131_072, 4_096),
    _Family("llama-3.2", "substring", 131_072, 4_096),
    _Family("llama3.2", "substring", 131_072, 4_096),
    _Family("llama-3.3", "substring", 131_072, 4_096),
    _Family("llama3.3", "substring", 131_072, 4_096),
    _Family("llama-3", "substring", 8_192, 2_048),
    _Family("llama3", "substring", 8_192, 2_048),
    _Family("claude", "substring", 200_000, 8_192),
    _Family("gemini", "substring", 1_048_576, 8_192),
)


def _known_family(model: str) -> _Family | None:
    name = model.strip().lower()
    tail = name.rsplit("/", 1)[-1]
    for family in _FAMILIES:
        if family.match == "prefix":
            if tail.startswith(family.pattern):
                return family
        elif family.pattern in name:
            return family
    return None


def safety_margin_for(context_window: int) -> int:
    """About 5 % of the window (at least 1 token), to absorb estimate error."""
    return max(1, int(context_window * SAFETY_MARGIN_FRACTION))


def resolve_profile(
    model: str,
    *,
    context_window: int | None,
    max_output_tokens: int | None,
) -> ContextProfile:
    """The profile for `model`; explicit values win over the table. Raises ConfigError when the
    window is unknown or the numbers leave no room for a prompt."""
    if context_window is not None and context_window <= 0:
        raise ConfigError("AUTOPATCH_LLM_CONTEXT_WINDOW must be a positive number of tokens")
    if max_output_tokens is not None and max_output_tokens <= 0:
        raise ConfigError("AUTOPATCH_LLM_MAX_OUTPUT_TOKENS must be a positive number of tokens")
    family = _known_family(model)

    if context_window is not None:
        window = context_window
    elif family is not None:
        window = family.context_window
    else:
        raise ConfigError(
            f"the context window of model {model!r} is not known; "
            "set AUTOPATCH_LLM_CONTEXT_WINDOW to its size in tokens"
        )

    if max_output_tokens is not None:
        max_out = max_output_tokens
    elif family is not None and context_window is None:
        max_out = family.max_output_tokens
    else:
        # unknown model, or a known one with a user-chosen window: keep a quarter for the reply
        cap = family.max_output_tokens if family is not None else UNKNOWN_MAX_OUTPUT_TOKENS
        max_out = max(1, min(cap, window // 4))

    if max_out >= window:
        raise ConfigError(
            "AUTOPATCH_LLM_MAX_OUTPUT_TOKENS must be smaller than the context window "
            f"({max_out} >= {window})"
        )
    profile = ContextProfile(
        model=model,
        context_window=window,
        max_output_tokens=max_out,
        safety_margin=safety_margin_for(window),
    )
    if profile.input_capacity <= 0:
        raise ConfigError(
            "the context window leaves no room for a prompt after the output budget and safety "
            f"margin (window {window}, output {max_out}); raise AUTOPATCH_LLM_CONTEXT_WINDOW or "
            "lower AUTOPATCH_LLM_MAX_OUTPUT_TOKENS"
        )
    return profile
