"""Settings are validated without pydantic for the usual input (`core.settings_check`, issue 14);
the fast path must give exactly what the pydantic model gives, or defer to it. An adversarial
table per field: canonical forms (the fast path must take them, or the CLI pays for pydantic again)
and every odd form pydantic coerces or refuses (the fast path must defer or agree)."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

from autopatch_tui.core.errors import ConfigError
from autopatch_tui.core.settings import (
    DEFAULTS,
    FIELDS,
    Secret,
    Settings,
    load_settings,
)
from autopatch_tui.core.settings_check import fast_values
from autopatch_tui.core.settings_model import SettingsModel, validated_values

HOME = Path("/nonexistent-home")
NUMBERS = ["5", "0", "-1", "00012", " 5", "5 ", "+5", "5.0", "5.5", ".5", "1e3", "1_000", "inf", "nan", "0x10", "",
           "٥", "3601", "3600", "10", "11", 5, 0, -3, 5.0, 5.5, 0.0, 3600, 3600.5, 10, 11, True, False, None,
           float("inf"), float("nan"), 10**30, 10**400, "9" * 25, [5], {"a": 1}]
TEXTS = ["x", "  x ", "", "   ", "http://127.0.0.1:1/v1", "ÄÖ", 5, None, True, b"x", ["x"]]
CASES: dict[str, list[object]] = {
    **{f: NUMBERS for f in ("context_window", "max_output_tokens", "memory_max_output_tokens", "llm_max_retries",
                            "lease_seconds", "heartbeat_seconds", "extraction_max_wait_seconds",
                            "llm_timeout_seconds", "audit_timeout_seconds")},
    **{f: TEXTS for f in ("llm_base_url", "llm_model", "memory_model", "llm_api_key", "theme")},
    **{f: ["auto", "on", "off", " ON ", "Off", "yes", "", 1, None, True] for f in ("llm_json_mode", "llm_tools")},
    "memory_approval": ["auto", "review", " Review ", "REVIEW", "on", "off", "", 1, None, True, ["review"]],
    "debug": [True, False, 1, 0, "true", "1", None, "yes"],
    "keymap": [{}, {"ctrl+k": "history"}, {"a": 1}, {1: "a"}, [], None, "x"],
    **{f: [None, [], ["S"], ["ALL", "B006", "BLE001"], ["s"], ["S", 1], ["B0066x"], ["B006\n"], ["ALL\n"], "S", [None], ("S",)]
       for f in ("audit_ruff_select", "audit_ruff_ignore")},
    "config_file": [None, Path("/x/config.toml"), "/x/config.toml"],
}


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def _reference(data: dict[str, object]) -> dict[str, object] | str:
    try:
        return validated_values(data)
    except Exception as exc:  # noqa: BLE001 - the reference refused: the fast path must defer
        return type(exc).__name__


@pytest.mark.parametrize("name", sorted(CASES))
def test_fast_path_agrees_with_the_pydantic_model_or_defers(name: str) -> None:
    deferred = taken = 0
    for value in CASES[name]:
        data = {"home": HOME, name: value}
        fast = fast_values(data)
        ref = _reference(data)
        if fast is None:
            deferred += 1
            continue
        taken += 1
        assert isinstance(ref, dict), f"{name}={value!r}: the fast path took a value pydantic refuses ({ref})"
        assert _same(fast[name], ref[name]), f"{name}={value!r}: fast {fast[name]!r} != pydantic {ref[name]!r}"
    assert taken and deferred, f"{name}: the table must exercise both paths"


def test_the_usual_input_never_needs_the_model() -> None:
    env_like = {"home": HOME, "config_file": HOME / "config.toml", "llm_base_url": "http://127.0.0.1:11434/v1",
                "llm_api_key": "sk-x", "llm_model": "gpt-4o", "context_window": "128000", "lease_seconds": "0.5",
                "heartbeat_seconds": "2", "extraction_max_wait_seconds": "0", "llm_max_retries": "0",
                "llm_json_mode": "off", "memory_approval": "review", "debug": True, "theme": "nord", "keymap": {"f9": "help"},
                "audit_ruff_select": ["S", "B"], "audit_timeout_seconds": 30}
    fast = fast_values(env_like)
    assert fast is not None
    ref = validated_values(env_like)
    assert {k: fast[k] for k in env_like} == {k: ref[k] for k in env_like}


def test_the_dataclass_and_the_model_have_the_same_fields_and_defaults() -> None:
    assert FIELDS == tuple(SettingsModel.model_fields)
    model_defaults = {n: f.get_default(call_default_factory=True) for n, f in SettingsModel.model_fields.items()
                      if not f.is_required()}
    ours = {f.name: (f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default)
            for f in dataclasses.fields(Settings) if f.name != "home"}
    assert ours == model_defaults
    assert set(DEFAULTS) <= set(ours)


def test_invalid_values_still_name_the_field_and_never_the_value(tmp_path: Path) -> None:
    env = {"AUTOPATCH_HOME": str(tmp_path), "AUTOPATCH_LLM_CONTEXT_WINDOW": "-5",
           "AUTOPATCH_MEMORY_LEASE_SECONDS": "sk-SECRET"}
    with pytest.raises(ConfigError) as info:
        load_settings(env)
    assert str(info.value) == "invalid setting(s): context_window, lease_seconds"
    assert "SECRET" not in str(info.value)


def test_unusual_forms_are_coerced_as_pydantic_does(tmp_path: Path) -> None:
    s = load_settings({"AUTOPATCH_HOME": str(tmp_path), "AUTOPATCH_LLM_CONTEXT_WINDOW": " 1_000 ",
                       "AUTOPATCH_LLM_TIMEOUT_SECONDS": "1e1"})
    assert (s.context_window, s.llm_timeout_seconds) == (1000, 10.0)


def test_direct_construction_validates_and_wraps_the_key(tmp_path: Path) -> None:
    s = Settings(home=tmp_path, llm_api_key="sk-direct", llm_model="  m ")
    assert isinstance(s.llm_api_key, Secret) and s.llm_api_key.get_secret_value() == "sk-direct"
    assert s.llm_model == "m" and "sk-direct" not in repr(s) and "sk-direct" not in str(s)
    with pytest.raises(Exception, match="validation error"):
        Settings(home=tmp_path, llm_max_retries=11)
    with pytest.raises(Exception, match="validation error"):
        s.with_overrides(no_such_setting=1)
    assert s.with_overrides(theme="nord").llm_api_key == s.llm_api_key
