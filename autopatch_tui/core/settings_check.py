"""The fast path of settings validation, without pydantic (issue 14: a CLI command must not pay for
importing it). `fast_values` accepts only input in a plain, canonical form, for which it returns
exactly what the pydantic model (`settings_model.SettingsModel`) returns; for anything else — an
unusual form pydantic would coerce (`" 5"`, `"1e3"`, `True` for a number), an unknown field, or any
invalid value — it returns None and the caller asks the model, so errors and coercions stay
pydantic's. `tests/cli/test_settings_fast_path.py` checks the two agree."""

from __future__ import annotations

import math
import re
from pathlib import Path

RUFF_CODE = r"^(ALL|[A-Z]{1,8}[0-9]{0,4})$"  # a Ruff rule code or prefix: "S", "B006", "BLE001", "ALL"
_RUFF = re.compile(RUFF_CODE)
_DIGITS = re.compile(r"[0-9]{1,18}")
_DECIMAL = re.compile(r"[0-9]{1,15}(?:\.[0-9]{1,15})?")

# field -> (kind, bounds): bounds as (low, low_inclusive, high) with None for "no bound"
_NUMBERS: dict[str, tuple[str, float | None, bool, float | None]] = {
    "context_window": ("int?", 0, False, None),
    "max_output_tokens": ("int?", 0, False, None),
    "memory_max_output_tokens": ("int?", 0, False, None),
    "llm_max_retries": ("int", 0, True, 10),
    "lease_seconds": ("float", 0, False, None),
    "heartbeat_seconds": ("float", 0, False, None),
    "extraction_max_wait_seconds": ("float", 0, True, None),
    "llm_timeout_seconds": ("float", 0, False, None),
    "audit_timeout_seconds": ("float", 0, False, 3600),
}
_STRIPPED = ("llm_base_url", "llm_model", "memory_model")  # blank -> None, else stripped
_MODES = {"llm_json_mode": ("auto", "on", "off"), "llm_tools": ("auto", "on", "off"),
          "memory_approval": ("auto", "review")}  # case-folded, stripped
_RUFF_LISTS = ("audit_ruff_select", "audit_ruff_ignore")


class _Defer(Exception):
    """Not a plain, valid value: the pydantic model decides."""


def _number(value: object, kind: str, low: float | None, low_inclusive: bool, high: float | None) -> object:
    if value is None and kind.endswith("?"):
        return None
    if kind.startswith("int"):
        if type(value) is int:
            number: float = value
        elif type(value) is str and _DIGITS.fullmatch(value):
            number = int(value)
        else:
            raise _Defer
    elif type(value) in (int, float):
        try:
            number = float(value)  # type: ignore[arg-type]
        except OverflowError:  # an int too large for a float: pydantic words the error
            raise _Defer from None
    elif type(value) is str and _DECIMAL.fullmatch(value):
        number = float(value)
    else:
        raise _Defer
    if type(number) is float and not math.isfinite(number):
        raise _Defer
    if low is not None and (number < low or (number == low and not low_inclusive)):
        raise _Defer
    if high is not None and number > high:
        raise _Defer
    return number


def _value(name: str, value: object) -> object:
    if name in _NUMBERS:
        return _number(value, *_NUMBERS[name])
    if name in _STRIPPED:
        if value is None:
            return None
        if type(value) is not str:
            raise _Defer
        return value.strip() or None
    if name == "llm_api_key":
        from autopatch_tui.core.settings import Secret

        if value is None or type(value) is Secret:
            return value
        if type(value) is not str:
            raise _Defer
        return Secret(value) if value.strip() else None
    if name in _MODES:
        if type(value) is not str or value.strip().lower() not in _MODES[name]:
            raise _Defer
        return value.strip().lower()
    if name in _RUFF_LISTS:
        if value is None:
            return None
        if type(value) is not list or not all(type(v) is str and _RUFF.fullmatch(v) for v in value):
            raise _Defer
        return list(value)
    if name == "home" or name == "config_file":
        if isinstance(value, Path) or (value is None and name == "config_file"):
            return value
        raise _Defer
    if name == "debug":
        if type(value) is not bool:
            raise _Defer
        return value
    if name == "theme":
        if type(value) is not str:
            raise _Defer
        return value
    if name == "keymap":
        if type(value) is not dict or not all(type(k) is str and type(v) is str for k, v in value.items()):
            raise _Defer
        return dict(value)
    raise _Defer  # a field this module does not know: the model decides


def fast_values(data: dict[str, object]) -> dict[str, object] | None:
    """Every given field validated as the model would, or None when the model must decide.
    Missing fields are left out (the dataclass defaults apply; `home` is required)."""
    if "home" not in data:
        return None
    try:
        return {name: _value(name, value) for name, value in data.items()}
    except _Defer:
        return None
