"""User settings: `$AUTOPATCH_HOME/config.toml` (or the platformdirs config dir), then environment
variables, which win. Every field is validated as by pydantic: the usual input by
`settings_check` without importing pydantic, anything else by the pydantic model in `settings_model`."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, fields
from dataclasses import field as dataclass_field
from pathlib import Path
from typing import Literal


from autopatch_tui.core.constants import (
    APP_NAME,
    DEFAULT_EXTRACTION_MAX_WAIT_SECONDS,
    DEFAULT_HEARTBEAT_SECONDS,
    DEFAULT_LEASE_SECONDS,
)
from autopatch_tui.core.errors import ConfigError
from autopatch_tui.core.paths import write_private_text
from autopatch_tui.core.settings_check import RUFF_CODE, fast_values  # noqa: F401 (RUFF_CODE: re-exported)

ENV_MAP = {
    "AUTOPATCH_LLM_BASE_URL": "llm_base_url",
    "AUTOPATCH_LLM_API_KEY": "llm_api_key",
    "AUTOPATCH_LLM_MODEL": "llm_model",
    "AUTOPATCH_MEMORY_MODEL": "memory_model",
    "AUTOPATCH_LLM_CONTEXT_WINDOW": "context_window",
    "AUTOPATCH_LLM_MAX_OUTPUT_TOKENS": "max_output_tokens",
    "AUTOPATCH_DEBUG": "debug",
    "AUTOPATCH_MEMORY_LEASE_SECONDS": "lease_seconds",
    "AUTOPATCH_MEMORY_HEARTBEAT_SECONDS": "heartbeat_seconds",
    "AUTOPATCH_MEMORY_EXTRACTION_MAX_WAIT_SECONDS": "extraction_max_wait_seconds",
    "AUTOPATCH_LLM_TIMEOUT_SECONDS": "llm_timeout_seconds",  # contracts §2 (they were read from config.toml only)
    "AUTOPATCH_LLM_MAX_RETRIES": "llm_max_retries",
    "AUTOPATCH_LLM_JSON_MODE": "llm_json_mode",
    "AUTOPATCH_LLM_TOOLS": "llm_tools",
    "AUTOPATCH_MEMORY_MAX_OUTPUT_TOKENS": "memory_max_output_tokens",
    "AUTOPATCH_MEMORY_APPROVAL": "memory_approval",  # contracts §8
}



class Secret:
    """A secret string (the API key): never shown by `repr`/`str` (as pydantic's `SecretStr`)."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def get_secret_value(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('**********')"

    def __str__(self) -> str:
        return "**********"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Validated on construction: `settings_check.fast_values` accepts the usual input exactly as the
    pydantic model would; anything else (and every invalid value) goes through the pydantic model in
    `settings_model` (imported only then: a CLI command must not pay for pydantic, issue 14)."""

    home: Path
    config_file: Path | None = None
    llm_base_url: str | None = None
    llm_api_key: Secret | None = None
    llm_model: str | None = None
    memory_model: str | None = None
    context_window: int | None = None  # > 0
    max_output_tokens: int | None = None  # > 0
    debug: bool = False
    lease_seconds: float = DEFAULT_LEASE_SECONDS  # > 0, finite
    heartbeat_seconds: float = DEFAULT_HEARTBEAT_SECONDS  # > 0, finite
    extraction_max_wait_seconds: float = DEFAULT_EXTRACTION_MAX_WAIT_SECONDS  # >= 0, finite
    llm_timeout_seconds: float = 120.0  # > 0, finite
    llm_max_retries: int = 2  # 0..10
    llm_json_mode: Literal["auto", "on", "off"] = "auto"
    llm_tools: Literal["auto", "on", "off"] = "auto"
    # contracts §8: `review` keeps a new Memory item out of recall until the user keeps it
    memory_approval: Literal["auto", "review"] = "auto"
    memory_max_output_tokens: int | None = None  # > 0
    theme: str = "textual-dark"
    keymap: dict[str, str] = dataclass_field(default_factory=dict)
    # /audit: Ruff's rule selection (None: the curated default, docs/repair.md) and the analyzers' time bound
    audit_ruff_select: list[str] | None = None  # each matches RUFF_CODE
    audit_ruff_ignore: list[str] | None = None
    audit_timeout_seconds: float = 120.0  # > 0, <= 3600

    def __post_init__(self) -> None:
        raw = {f: getattr(self, f) for f in FIELDS}
        values = fast_values(raw)
        if values is None:  # unusual or invalid input: pydantic decides (and raises its ValidationError)
            from autopatch_tui.core.settings_model import validated_values

            values = validated_values(raw)
        for name, value in values.items():
            if value is not raw[name]:
                object.__setattr__(self, name, value)

    @property
    def has_model(self) -> bool:
        """No base URL and no key = no model (contracts §2)."""
        return self.llm_base_url is not None or self.llm_api_key is not None

    @property
    def chat_model(self) -> str | None:
        return self.llm_model

    @property
    def effective_memory_model(self) -> str | None:
        return self.memory_model or self.llm_model

    def model_dump(self) -> dict[str, object]:
        """A copy: changing the dump's lists or dicts does not change these settings."""
        out: dict[str, object] = {}
        for f in FIELDS:
            value = getattr(self, f)
            out[f] = value.copy() if isinstance(value, (list, dict)) else value
        return out

    def with_overrides(self, **changes: object) -> Settings:
        data = self.model_dump()
        if self.llm_api_key is not None:
            data["llm_api_key"] = self.llm_api_key.get_secret_value()
        data.update(changes)
        return _validate(data)


FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Settings))
DEFAULTS: dict[str, object] = {f.name: f.default for f in fields(Settings) if f.default is not MISSING}


def _validate(data: dict[str, object]) -> Settings:
    """`Settings` from raw data; pydantic's ValidationError for an unknown field or a bad value."""
    if set(data) - set(FIELDS) or "home" not in data:
        from autopatch_tui.core.settings_model import validated_values

        data = validated_values(data)  # raises
    return Settings(**data)  # type: ignore[arg-type]


def default_home(env: Mapping[str, str]) -> Path:
    raw = env.get("AUTOPATCH_HOME")
    if raw:
        return Path(raw).expanduser()
    import platformdirs  # only without AUTOPATCH_HOME (5 ms of a CLI command otherwise)

    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def config_path(env: Mapping[str, str], home: Path) -> Path:
    if env.get("AUTOPATCH_HOME"):
        return home / "config.toml"
    import platformdirs

    return Path(platformdirs.user_config_dir(APP_NAME, appauthor=False)) / "config.toml"


def toml_error_text(path: Path, exc: ValueError) -> str:
    """`config.toml line 3, column 8: invalid value`. Only the parser's own fixed wording and the
    position are used (a settings file may hold an API key; the parser's messages never quote it)."""
    message = str(exc)
    found = re.search(r"^(.*?)\s*\(at line (\d+), column (\d+)\)\s*$", message)
    at_end = re.search(r"^(.*?)\s*\(at end of document\)\s*$", message)
    match = found or at_end
    what = (match.group(1).strip().rstrip(".") if match else "") or "invalid TOML"
    what = what[:1].lower() + what[1:]
    if found is not None:
        return f"settings file {path} line {found.group(2)}, column {found.group(3)}: {what}"
    if at_end is not None:
        return f"settings file {path} at its end: {what}"
    return f"cannot read settings file {path}: invalid TOML"


MAX_SETTINGS_BYTES = 1 << 20


def _read_toml(path: Path) -> dict[str, object]:
    from autopatch_tui.core.bounded_json import JsonFileError, read_bytes

    try:  # a regular file, bounded, never blocking (a FIFO there would hang every command)
        raw = read_bytes(path, max_bytes=MAX_SETTINGS_BYTES, follow_links=True)  # a dotfiles link is fine
    except JsonFileError as exc:
        raise ConfigError(f"cannot read settings file {path}: it {exc.why}") from None
    if raw is None:
        return {}
    try:
        import tomllib  # only when there is a settings file to read

        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"cannot read settings file {path}: not UTF-8 text") from None
    except ValueError as exc:  # tomllib.TOMLDecodeError
        raise ConfigError(toml_error_text(path, exc)) from None
    except RecursionError:  # arrays nested thousands deep: tomllib recurses
        raise ConfigError(f"cannot read settings file {path}: nested too deeply") from None
    allowed = set(FIELDS) - {"home", "config_file"}
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ConfigError(f"unknown setting(s) in {path}: {', '.join(unknown)}")
    return data


def load_settings(env: Mapping[str, str] | None = None, **overrides: object) -> Settings:
    """Build settings from the config file and the environment (environment wins)."""
    env = os.environ if env is None else env
    home = default_home(env)
    cfg = config_path(env, home)
    data: dict[str, object] = _read_toml(cfg)
    for var, field in ENV_MAP.items():
        if var in env:
            value: object = env[var]
            if field == "debug":
                value = str(value).strip().lower() in ("1", "true", "yes", "on")
            elif isinstance(value, str) and not value.strip():
                if DEFAULTS.get(field) is not None:
                    continue  # a blank variable leaves a setting with a default (e.g. a timeout) alone
                value = None
            data[field] = value
    data.update(overrides)
    data["home"] = home
    data["config_file"] = cfg
    values = fast_values(data) if set(data) <= set(FIELDS) else None
    if values is None:  # unusual or invalid input: pydantic decides, and names the invalid fields
        from autopatch_tui.core.settings_model import config_error_values

        values = config_error_values(data)
    return Settings(**values)  # type: ignore[arg-type]


def save_setting(path: Path, key: str, value: str) -> None:
    """Set one string setting in config.toml, keeping every other line as it is."""
    if key not in FIELDS:
        raise ConfigError(f"unknown setting {key}")
    line = f"{key} = {json.dumps(value, ensure_ascii=False)}\n"
    try:
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    except FileNotFoundError:
        lines = []
    out, done = [], False
    for existing in lines:
        if not done and existing.split("=", 1)[0].strip() == key and not existing.lstrip().startswith("["):
            out.append(line)
            done = True
        else:
            out.append(existing)
    if not done:
        first_table = next((n for n, x in enumerate(out) if x.lstrip().startswith("[")), len(out))
        out.insert(first_table, line)
    write_private_text(path, "".join(out))
