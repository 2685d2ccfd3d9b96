"""Pydantic models of the Memory model-call contracts (contracts §3.1, §3.2, §3.3).

Field lists are exact: an extra or a missing key is a contract violation (`extra="forbid"`,
strict types). Validation errors are reported by rule name and field path only, never by value."""

from __future__ import annotations

from typing import Annotated, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from autopatch_tui.core import constants as C
from autopatch_tui.core.errors import MemoryContractError

NonBlank = Annotated[str, StringConstraints(min_length=1, max_length=4000)]
Short = Annotated[str, StringConstraints(max_length=400)]
Kind = Literal["user_preference", "project_decision", "discussion_context"]
Strength = Literal["hard", "soft"]
Origin = Literal["explicit", "adopted_proposal", "inferred_repetition"]
RecallMode = Literal["always", "on_match"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, defer_build=True)


class SourceOut(_Strict):
    turn_id: NonBlank
    role: Literal["user", "assistant"]
    quote: NonBlank


class EvidenceOut(_Strict):
    """The model's own reading of the user's quoted words (contracts §3.1, optional)."""

    speaker: Literal["user", "relayed"]
    stance: Literal["asserted", "asked", "hedged", "withdrawn", "ironic"]
    scope: Literal["lasting", "this_task", "conditional"]


class CandidateOut(_Strict):
    kind: Kind
    subject: NonBlank
    statement: NonBlank
    content: Annotated[str, StringConstraints(max_length=4000)]
    strength: Strength
    origin: Origin
    recall_mode: RecallMode
    applies_to_paths: list[Short] = Field(max_length=32)
    aliases: list[Short] = Field(max_length=32)
    keywords: list[Short] = Field(max_length=32)
    sources: list[SourceOut] = Field(min_length=1, max_length=C.MAX_SOURCES_PER_CANDIDATE)
    # the model's reading (optional; None = the gate alone judges): `model_reading.py`
    evidence: EvidenceOut | None = None


class ExtractionOut(_Strict):
    thread_checkpoint: Annotated[str, StringConstraints(max_length=C.MAX_CHECKPOINT_CHARS)]
    candidates: list[CandidateOut] = Field(max_length=C.MAX_CANDIDATES_PER_EXTRACTION)


class OperationOut(_Strict):
    operation: Literal["create", "revise", "supersede", "reject"]
    candidate_ids: list[NonBlank] = Field(min_length=1, max_length=32)
    target_id: NonBlank | None
    kind: Kind | None = None
    subject: NonBlank | None = None
    statement: NonBlank | None = None
    content: Annotated[str, StringConstraints(max_length=4000)] | None = None
    strength: Strength | None = None
    origin: Origin | None = None
    recall_mode: RecallMode | None = None
    applies_to_paths: list[Short] | None = Field(default=None, max_length=32)
    aliases: list[Short] | None = Field(default=None, max_length=32)
    keywords: list[Short] | None = Field(default=None, max_length=32)


M = TypeVar("M", bound=BaseModel)

ITEM_FIELD_NAMES = ("kind", "subject", "statement", "content", "strength", "origin", "recall_mode",
                    "applies_to_paths", "aliases", "keywords")


class ConsolidationOut(_Strict):
    operations: list[OperationOut] = Field(max_length=64)


class MergeVerdictOut(_Strict):
    same_project: bool
    confidence: Literal["high", "medium", "low"]
    reason: Annotated[str, StringConstraints(min_length=1, max_length=1000, pattern=r"\S")]


# JSON can carry NUL (`"\u0000"`), which SQLite cannot keep faithfully (`length()` stops at NUL, so
# a quote starting with it breaks the `length(quote) > 0` CHECK at commit). Lone surrogates are
# already refused by pydantic's strict `str`.
_NUL = "\x00"


def _has_nul(value: object, depth: int = 0) -> bool:
    if isinstance(value, str):
        return _NUL in value
    if depth > 32:
        return False
    if isinstance(value, dict):
        return any(_has_nul(k, depth + 1) or _has_nul(v, depth + 1) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(v, depth + 1) for v in value)
    return False


def validate_reply(model: type[M], data: dict) -> M:
    """Validate a parsed reply against its contract. Raises MemoryContractError(rule="schema")
    naming field paths and error types only."""
    if _has_nul(data):
        raise MemoryContractError("schema", "text with NUL characters")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        where = sorted({".".join(str(p) for p in e["loc"]) + ":" + e["type"] for e in exc.errors()})[:5]
        raise MemoryContractError("schema", "; ".join(where)) from None
