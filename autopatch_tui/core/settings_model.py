"""The pydantic model behind `Settings` (settings.py): the reference validation, used for any
input `settings_check.fast_values` does not accept (unusual forms such as `" 5"` or `"1e3"`, and
every invalid value, so that errors and coercions stay pydantic's). Imported only then."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    StringConstraints,
    ValidationError,
    field_validator,
)

from autopatch_tui.core.constants import (
    DEFAULT_EXTRACTION_MAX_WAIT_SECONDS,
    DEFAULT_HEARTBEAT_SECONDS,
    DEFAULT_LEASE_SECONDS,
)
from autopatch_tui.core.errors import ConfigError
from autopatch_tui.core.settings_check import RUFF_CODE


class SettingsModel(BaseModel):
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
    memory_approval: Literal["auto", "review"] = "auto"
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

    @field_validator("llm_json_mode", "llm_tools", "memory_approval", mode="before")
    @classmethod
    def _mode_lower(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("llm_api_key", mode="before")
    @classmethod
    def _blank_key_is_none(cls, value: object) -> object:
        if isinstance(value, str) and not value.strip():
            return None
        return value


def _plain(data: dict[str, object]) -> dict[str, object]:
    """Input for the model: a `Secret` key as its text (the model wraps it again)."""
    key = data.get("llm_api_key")
    if key is not None and hasattr(key, "get_secret_value") and not isinstance(key, SecretStr):
        return {**data, "llm_api_key": key.get_secret_value()}
    return data


def validated_values(data: dict[str, object]) -> dict[str, object]:
    """The validated field values (raises pydantic's `ValidationError`)."""
    from autopatch_tui.core.settings import Secret

    model = SettingsModel.model_validate(_plain(data))
    values = {name: getattr(model, name) for name in SettingsModel.model_fields}
    if isinstance(values["llm_api_key"], SecretStr):
        values["llm_api_key"] = Secret(values["llm_api_key"].get_secret_value())
    return values


def config_error_values(data: dict[str, object]) -> dict[str, object]:
    """`validated_values`, with a `ConfigError` naming the invalid fields (never their values)."""
    try:
        return validated_values(data)
    except ValidationError as exc:
        fields = sorted({".".join(str(p) for p in err["loc"]) for err in exc.errors()})
        raise ConfigError(f"invalid setting(s): {', '.join(fields)}") from None
