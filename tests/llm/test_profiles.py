from __future__ import annotations

import pytest

from autopatch_tui.core.errors import ConfigError
from autopatch_tui.core.llm.profiles import ContextProfile, resolve_profile


def test_known_model_uses_table():
    p = resolve_profile("gpt-4o", context_window=None, max_output_tokens=None)
    assert (p.context_window, p.max_output_tokens, p.safety_margin) == (128_000, 16_384, 6_400)
    assert p.input_capacity == 128_000 - 16_384 - 6_400
    assert p.model == "gpt-4o"


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("GPT-4o-mini", 128_000),
        ("openai/gpt-4o-2024-08-06", 128_000),
        ("gpt-4.1-nano", 1_047_576),
        ("gpt-5-mini", 400_000),
        ("o3-mini", 200_000),
        ("openai/o4-mini", 200_000),
        ("deepseek-chat", 128_000),
        ("qwen2.5-coder:32b", 32_768),
        ("llama3.1:8b", 131_072),
        ("meta-llama/Llama-3-8B-Instruct", 8_192),
        ("claude-3-5-sonnet-latest", 200_000),
    ],
)
def test_families_match_case_insensitively(model, window):
    p = resolve_profile(model, context_window=None, max_output_tokens=None)
    assert p.context_window == window
    assert 0 < p.input_capacity < window


@pytest.mark.parametrize("model", ["my-local-model", "foo-o3", "mistral-7b"])
def test_unknown_model_needs_explicit_window(model):
    with pytest.raises(ConfigError, match="AUTOPATCH_LLM_CONTEXT_WINDOW"):
        resolve_profile(model, context_window=None, max_output_tokens=None)


def test_unknown_model_with_window_gets_default_output_budget():
    small = resolve_profile("my-local-model", context_window=8_000, max_output_tokens=None)
    assert small.max_output_tokens == 2_000  # window // 4
    assert small.safety_margin == 400
    assert small.input_capacity == 8_000 - 2_000 - 400
    large = resolve_profile("my-local-model", context_window=100_000, max_output_tokens=None)
    assert large.max_output_tokens == 4_096


def test_explicit_values_win_over_table():
    p = resolve_profile("gpt-4o", context_window=32_000, max_output_tokens=1_000)
    assert p == ContextProfile("gpt-4o", 32_000, 1_000, 1_600)
    # a smaller explicit window for a known model also shrinks the reply budget to fit
    q = resolve_profile("gpt-4o", context_window=8_192, max_output_tokens=None)
    assert q.max_output_tokens == 2_048
    r = resolve_profile("gpt-4o", context_window=None, max_output_tokens=500)
    assert (r.context_window, r.max_output_tokens) == (128_000, 500)


@pytest.mark.parametrize(
    ("window", "max_out"),
    [(4_096, 4_096), (4_096, 10_000), (1_000, 990)],
)
def test_output_budget_must_leave_room(window, max_out):
    with pytest.raises(ConfigError, match="AUTOPATCH_LLM_MAX_OUTPUT_TOKENS"):
        resolve_profile("my-local-model", context_window=window, max_output_tokens=max_out)


def test_nonpositive_values_rejected():
    with pytest.raises(ConfigError):
        resolve_profile("gpt-4o", context_window=0, max_output_tokens=None)
    with pytest.raises(ConfigError):
        resolve_profile("gpt-4o", context_window=None, max_output_tokens=-5)
