"""Shapes of the machine contracts (contracts §4, §5): what `--json` prints and what the UI reads.
Field lists are exact. Validated frozen records (`core.contract_shape`), not pydantic models: the
CLI's `memory status` / `list` must not pay for importing pydantic (issue 14)."""

from __future__ import annotations

import dataclasses
from typing import Literal

from autopatch_tui.core.contract_shape import Contract as _Contract
from autopatch_tui.core.contract_shape import contract, exclude


@contract
class ItemSummary(_Contract):
    id: str
    kind: str
    subject: str
    statement: str
    strength: str
    origin: str
    recall_mode: str
    applies_to_paths: list[str]
    updated_at: str


@contract
class RevisionSummary(_Contract):
    revision: int
    status: str
    statement: str
    updated_at: str


@contract
class SourceQuote(_Contract):
    turn_id: str
    role: Literal["user", "assistant"]
    quote: str


@contract
class ItemDetail(ItemSummary):
    status: str
    revision: int
    content: str
    aliases: list[str]
    keywords: list[str]
    thread_id: str | None
    revisions: list[RevisionSummary]
    sources: list[SourceQuote]


@contract
class JobFailure(_Contract):
    """Safe structure only (contracts §6)."""

    job_id: str
    kind: str
    status: str
    category: str
    phase: str
    stage: Literal["primary", "repair"]
    rule: str | None
    provider_calls: int
    attempts: int


@contract
class JobCounts(_Contract):
    pending: int = 0
    leased: int = 0
    retry_wait: int = 0
    failed: int = 0
    succeeded: int = 0
    succeeded_no_output: int = 0


@contract
class SummaryState(_Contract):
    status: Literal["current", "stale", "missing"]
    path: str


@contract
class ReviewCounts(_Contract):
    """contracts §8: active revisions awaiting review (not kept)."""

    new: int = 0


@contract
class StatusReport(_Contract):
    state: Literal["healthy", "degraded"]
    db_path: str
    schema_version: int
    supported_schema_version: int
    diagnostic: str | None
    cause: str | None = None  # degraded: a stable word ("schema", "read_only", "symlink", …)
    generation: int
    active_thread_id: str | None
    threads: int
    turns: int
    active_items: int
    jobs: JobCounts
    failures: list[JobFailure]
    failures_total: int = 0  # all failed/retry_wait jobs with a failure; `failures` may list fewer
    # candidates the gate refused, by rule, over all extraction jobs (contracts §8; most frequent first)
    refusals: dict[str, int] = dataclasses.field(default_factory=dict)
    summary: SummaryState
    review: ReviewCounts = dataclasses.field(default_factory=ReviewCounts)  # contracts §8
    # shown by `memory status` (text); not part of the §5 JSON document
    candidates: dict[str, int] = exclude(default_factory=dict)


@contract
class FlushResult(_Contract):
    completed: int
    pending: int
    timed_out: bool


@contract
class NewThreadResult(_Contract):
    old_thread_id: str
    new_thread_id: str
    flush: FlushResult
