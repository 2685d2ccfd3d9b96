"""User settings: `$AUTOPATCH_HOME/config.toml` (or the platformdirs config dir), then environment
variables, which win. Every field is validated by pydantic."""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Literal

import platformdirs
from pydantic import BaseModel, ConfigDict, Field, SecretStr, StringConstraints, ValidationError, field_validator

from autopatch_tui.core.constants import (
    APP_NAME,
    DEFAULT_EXTRACTION_MAX_WAIT_SECONDS,
    DEFAULT_HEARTBEAT_SECONDS,
    DEFAULT_LEASE_SECONDS,
)
from autopatch_tui.core.errors import ConfigError
from autopatch_tui.core.paths import write_private_text

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
}


RUFF_CODE = r"^(ALL|[A-Z]{1,8}[0-9]{0,4})$"  # a Ruff rule code or prefix: "S", "B006", "BLE001", "ALL"


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    home: Path
    config_file: Path | None = None
    llm_base_url: str | None = None
    llm_api_key: SecretStr | None = None
    llm_model: str | None = None
    memory_model: str | None = None
    context_window: int | None = Field(default=None, gt=0)
    max_output_tokens: int | None = Field(default=None, gt=0)
    debug: bool = False
    lease_seconds: float = Field(default=DEFAULT_LEASE_SECONDS, gt=0, allow_inf_nan=False)
    heartbeat_seconds: float = Field(default=DEFAULT_HEARTBEAT_SECONDS, gt=0, allow_inf_nan=False)
    extraction_max_wait_seconds: float = Field(default=DEFAULT_EXTRACTION_MAX_WAIT_SECONDS, ge=0, allow_inf_nan=False)
    llm_timeout_seconds: float = Field(default=120.0, gt=0, allow_inf_nan=False)
    llm_max_retries: int = Field(default=2, ge=0, le=10)
    llm_json_mode: Literal["auto", "on", "off"] = "auto"
    llm_tools: Literal["auto", "on", "off"] = "auto"
    memory_max_output_tokens: int | None = Field(default=None, gt=0)
    theme: str = "textual-dark"
    keymap: dict[str, str] = Field(default_factory=dict)
    # /audit: Ruff's rule selection (None: the curated default, docs/repair.md) and the analyzers' time bound
    audit_ruff_select: list[Annotated[str, StringConstraints(pattern=RUFF_CODE)]] | None = None
    audit_ruff_ignore: list[Annotated[str, StringConstraints(pattern=RUFF_CODE)]] | None = None
    audit_timeout_seconds: float = Field(default=120.0, gt=0, le=3600)

    @field_validator("llm_base_url", "llm_model", "memory_model", mode="before")
    @classmethod
    def _blank_is_none(cls, value: object) -> object:
        if isinstance(value, str) and not value.strip():
            return None
        return value.strip() if isinstance(value, str) else value

    @field_validator("llm_json_mode", "llm_tools", mode="before")
    @classmethod
    def _mode_lower(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("llm_api_key", mode="before")
    @classmethod
    def _blank_key_is_none(cls, value: object) -> object:
        if isinstance(value, str) and not value.strip():
            return None
        return value

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

    def with_overrides(self, **changes: object) -> Settings:
        data = self.model_dump()
        if self.llm_api_key is not None:
            data["llm_api_key"] = self.llm_api_key.get_secret_value()
        data.update(changes)
        return Settings.model_validate(data)


def default_home(env: Mapping[str, str]) -> Path:
    raw = env.get("AUTOPATCH_HOME")
    if raw:
        return Path(raw).expanduser()
    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def config_path(env: Mapping[str, str], home: Path) -> Path:
    if env.get("AUTOPATCH_HOME"):
        return home / "config.toml"
    return Path(platformdirs.user_config_dir(APP_NAME, appauthor=False)) / "config.toml"


def toml_error_text(path: Path, exc: tomllib.TOMLDecodeError) -> str:
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


def _read_toml(path: Path) -> dict[str, object]:
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(toml_error_text(path, exc)) from None
    except OSError as exc:
        raise ConfigError(f"cannot read settings file {path}: {type(exc).__name__}") from exc
    allowed = set(Settings.model_fields) - {"home", "config_file"}
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
                if Settings.model_fields[field].default is not None:
                    continue  # a blank variable leaves a setting with a default (e.g. a timeout) alone
                value = None
            data[field] = value
    data.update(overrides)
    data["home"] = home
    data["config_file"] = cfg
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        fields = sorted({".".join(str(p) for p in err["loc"]) for err in exc.errors()})
        raise ConfigError(f"invalid setting(s): {', '.join(fields)}") from None


def save_setting(path: Path, key: str, value: str) -> None:
    """Set one string setting in config.toml, keeping every other line as it is."""
    if key not in Settings.model_fields:
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
